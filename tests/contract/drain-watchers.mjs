// Many official socket.io-client 4.x watchers on Floor's `/live`, as the apps connect: each its
// own Manager (`forceNew`), with socket.io-client's own reconnection (doubling, randomization 0.5,
// see below), half over WebSocket alone and half starting with long-polling. Each joins one
// tournament and keeps the last version it heard (from the join's ack or a change). A watcher
// that socket.io-client gives up on is "stranded": refused with a `connect_error` it does not
// retry (a namespace refusal, such as "Invalid namespace"), or disconnected from the namespace by
// the server ("io server disconnect"); `socket.active` is false, it stays dark for good, as an
// app does until the player restarts it. Run by tests/api/drain.rs and tests/api/rolling.rs
// (through tests/api/official_watchers.rs) and by floor-bench rolling (bench/src/rolling/official.rs).
//
//   node drain-watchers.mjs <origin> <access token> <tournament id> <watchers> [<first delay ms>
//                           [<deflate: yes | no> [<join: full | compact>]]]
//
// The first reconnection waits <first delay ms> (socket.io-client's default 1000, randomized by
// half either way), doubling up to five times it: a short one packs the reconnections of a few
// hundred watchers into a drain as thousands of phones pack them into a longer one. With
// <deflate> "no" the WebSockets offer no permessage-deflate: the server then sends each state
// plain, and this one process does not inflate every state for every watcher (of 2,000, a third
// of a core), as phones each do their own. With <join> "compact" each joins compact (a press of
// the clock comes as a small `clock`, another change as a `patch`), as floor-bench rolling
// --compact has its own watchers join.
//
// Each line on standard input asks for a report, printed as one JSON line:
//   {"watchers", "joined", "stranded", "versions": [last version of each, null if none yet],
//    "errors": {connect_error message: count}, "disconnects": {reason: count},
//    "failedJoins": {error code: count}, "lagMaxMs", "rejoinMaxMs"}
// where, since the report before, "lagMaxMs" is the longest this process's event loop was held
// (a loaded box delays every watcher in it by as much: the rig's part of a figure, not the
// server's), and "rejoinMaxMs" the longest from a watcher's disconnect to the ack of its next
// join (null: none rejoined).
// Ends when its standard input closes.
import { monitorEventLoopDelay, performance } from "node:perf_hooks";
import { createInterface } from "node:readline";
import { io } from "socket.io-client";

const [origin, token, tournamentId, watcherCount, delay = "1000", deflate = "yes", join = "full"] =
  process.argv.slice(2);
const joining = join === "compact" ? { tournamentId, compact: true } : { tournamentId };
const reconnectionDelay = Number(delay);
const watchers = [];
const errors = new Map();
const disconnects = new Map();
const failedJoins = new Map();
const count = (counts, key) => counts.set(key, (counts.get(key) ?? 0) + 1);
const loop = monitorEventLoopDelay({ resolution: 10 });
loop.enable();
let rejoinMaxMs = null;

for (let n = 0; n < Number(watcherCount); n += 1) {
  const watcher = { version: null, joined: false, stranded: false, disconnectedAt: null };
  const transports = n % 2 === 0 ? ["websocket"] : ["polling", "websocket"];
  const socket = io(`${origin}/live`, {
    auth: { token },
    transports,
    forceNew: true,
    reconnectionDelay,
    reconnectionDelayMax: 5 * reconnectionDelay,
    perMessageDeflate: deflate === "yes" ? { threshold: 1024 } : false,
  });
  const heard = (version) => {
    if (typeof version === "number" && (watcher.version === null || version > watcher.version)) {
      watcher.version = version;
    }
  };
  socket.on("connect", () => {
    socket.emit("join", joining, (ack) => {
      watcher.joined = Boolean(ack?.ok);
      if (!watcher.joined) count(failedJoins, ack?.error?.code ?? "no ack");
      if (watcher.joined && watcher.disconnectedAt !== null) {
        rejoinMaxMs = Math.max(rejoinMaxMs ?? 0, performance.now() - watcher.disconnectedAt);
        watcher.disconnectedAt = null;
      }
      heard(ack?.state?.version);
    });
  });
  for (const change of ["state", "clock", "patch"]) socket.on(change, (event) => heard(event?.version));
  socket.on("disconnect", (reason) => {
    watcher.joined = false;
    watcher.disconnectedAt ??= performance.now();
    count(disconnects, reason);
    // "io server disconnect": socket.io-client does not reconnect (a transport's close it does).
    if (!socket.active) watcher.stranded = true;
  });
  socket.on("connect_error", (err) => {
    count(errors, err.message);
    // socket.io-client retries a failed transport itself; a refusal by the server it does not.
    if (!socket.active) watcher.stranded = true;
  });
  watchers.push({ watcher, socket });
}

const report = () => {
  const figures = {
    watchers: watchers.length,
    joined: watchers.filter(({ watcher }) => watcher.joined).length,
    stranded: watchers.filter(({ watcher }) => watcher.stranded).length,
    versions: watchers.map(({ watcher }) => watcher.version),
    errors: Object.fromEntries(errors),
    disconnects: Object.fromEntries(disconnects),
    failedJoins: Object.fromEntries(failedJoins),
    lagMaxMs: loop.max / 1e6,
    rejoinMaxMs,
  };
  loop.reset();
  rejoinMaxMs = null;
  return figures;
};

const lines = createInterface({ input: process.stdin });
lines.on("line", () => process.stdout.write(`${JSON.stringify(report())}\n`));
lines.on("close", () => {
  for (const { socket } of watchers) socket.close();
  process.exit(0);
});
