// Many official socket.io-client 4.x watchers on Floor's `/live`, as the apps connect: each its
// own Manager (`forceNew`), with socket.io-client's own reconnection (doubling, randomization 0.5,
// see below), half over WebSocket alone and half starting with long-polling. Each joins one
// tournament and keeps the last version it heard (from the join's ack or a `state`). A watcher
// refused with a `connect_error` that socket.io-client does not retry (a namespace refusal, such
// as "Invalid namespace") is "stranded": `socket.active` is false, it stays dark for good, as an
// app does until the player restarts it. Run by tests/api/drain.rs.
//
//   node drain-watchers.mjs <origin> <access token> <tournament id> <watchers> [<first delay ms>]
//
// The first reconnection waits <first delay ms> (socket.io-client's default 1000, randomized by
// half either way), doubling up to five times it: a short one packs the reconnections of a few
// hundred watchers into a drain as thousands of phones pack them into a longer one.
//
// Each line on standard input asks for a report, printed as one JSON line:
//   {"watchers", "joined", "stranded", "versions": [last version of each, null if none yet],
//    "errors": {connect_error message: count}}
// Ends when its standard input closes.
import { createInterface } from "node:readline";
import { io } from "socket.io-client";

const [origin, token, tournamentId, count, delay = "1000"] = process.argv.slice(2);
const reconnectionDelay = Number(delay);
const watchers = [];
const errors = new Map();

for (let n = 0; n < Number(count); n += 1) {
  const watcher = { version: null, joined: false, stranded: false };
  const transports = n % 2 === 0 ? ["websocket"] : ["polling", "websocket"];
  const socket = io(`${origin}/live`, {
    auth: { token },
    transports,
    forceNew: true,
    reconnectionDelay,
    reconnectionDelayMax: 5 * reconnectionDelay,
  });
  const heard = (version) => {
    if (typeof version === "number" && (watcher.version === null || version > watcher.version)) {
      watcher.version = version;
    }
  };
  socket.on("connect", () => {
    socket.emit("join", { tournamentId }, (ack) => {
      watcher.joined = Boolean(ack?.ok);
      heard(ack?.state?.version);
    });
  });
  socket.on("state", (state) => heard(state?.version));
  socket.on("disconnect", () => {
    watcher.joined = false;
  });
  socket.on("connect_error", (err) => {
    errors.set(err.message, (errors.get(err.message) ?? 0) + 1);
    // socket.io-client retries a failed transport itself; a refusal by the server it does not.
    if (!socket.active) watcher.stranded = true;
  });
  watchers.push({ watcher, socket });
}

const report = () => ({
  watchers: watchers.length,
  joined: watchers.filter(({ watcher }) => watcher.joined).length,
  stranded: watchers.filter(({ watcher }) => watcher.stranded).length,
  versions: watchers.map(({ watcher }) => watcher.version),
  errors: Object.fromEntries(errors),
});

const lines = createInterface({ input: process.stdin });
lines.on("line", () => process.stdout.write(`${JSON.stringify(report())}\n`));
lines.on("close", () => {
  for (const { socket } of watchers) socket.close();
  process.exit(0);
});
