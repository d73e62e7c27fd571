// The official socket.io-client on Floor's `/live`, as a JavaScript app connects: over its
// Node WebSocket (`ws`, which offers permessage-deflate as browsers do). Joins one tournament
// and prints a JSON line per event: the join's ack with the extension negotiated, then each
// `state` with its version, its decoded size and the bytes that came over TCP for it. Ends when
// its standard input closes. Run by tests/api/live_clients.rs.
//
//   node live-client.mjs <base url> <access token> <tournament id>
import { io } from "socket.io-client";

const [base, token, tournamentId] = process.argv.slice(2);
const say = (line) => process.stdout.write(`${JSON.stringify(line)}\n`);
const socket = io(`${base}/live`, { auth: { token }, transports: ["websocket"], reconnection: false });
const tcp = () => socket.io.engine.transport.ws._socket;
let read = 0;

socket.on("connect", () => {
  const ws = socket.io.engine.transport.ws;
  // `extensions` names what the handshake agreed; the agreed parameters are ws's own.
  const deflate = ws._extensions["permessage-deflate"];
  socket.emit("join", { tournamentId }, (ack) => {
    read = tcp().bytesRead;
    say({
      event: "joined",
      ok: ack.ok,
      version: ack.state?.version,
      extensions: ws.extensions,
      params: deflate ? deflate.params : null,
    });
  });
});
socket.on("state", (state) => {
  const now = tcp().bytesRead;
  say({ event: "state", version: state.version, decoded: Buffer.byteLength(JSON.stringify(state)), wire: now - read });
  read = now;
});
socket.on("connect_error", (err) => say({ event: "connect_error", message: err.message }));
socket.on("disconnect", (reason) => say({ event: "disconnect", reason }));
process.stdin.resume();
process.stdin.on("end", () => {
  socket.close();
  process.exit(0);
});
