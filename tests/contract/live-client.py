"""python-socketio on Floor's `/live`, as a Python client connects: over websocket-client, which
offers no WebSocket extension, so every frame comes plain. Joins one tournament and prints a JSON
line per event, as live-client.mjs does: the join's ack with the extension negotiated, then each
`state` with its version, its decoded size and the bytes that came over TCP for it. Ends when its
standard input closes. Run by tests/api/live_clients.rs.

    python3 live-client.py <base url> <access token> <tournament id>
"""

import json
import sys

import socketio
import websocket._core

# The bytes read from the connection so far. websocket-client reads every byte of a WebSocket
# through its module's `recv(sock, bufsize)`; counting there is the TCP count live-client.mjs
# reads from Node's socket (websocket-client is pinned in .ci/run, so the name holds).
read = 0
_recv = websocket._core.recv


def _counted(sock, bufsize):
    global read
    data = _recv(sock, bufsize)
    read += len(data)
    return data


websocket._core.recv = _counted

base, token, tournament_id = sys.argv[1:4]
mark = 0


def say(line):
    print(json.dumps(line), flush=True)


client = socketio.Client(reconnection=False)


@client.on("state", namespace="/live")
def on_state(state):
    global mark
    now = read
    decoded = len(json.dumps(state, ensure_ascii=False, separators=(",", ":")).encode())
    say({"event": "state", "version": state.get("version"), "decoded": decoded, "wire": now - mark})
    mark = now


@client.on("disconnect", namespace="/live")
def on_disconnect(reason=None):
    say({"event": "disconnect", "reason": str(reason)})


try:
    client.connect(base, transports=["websocket"], namespaces=["/live"], auth={"token": token}, wait_timeout=15)
except socketio.exceptions.ConnectionError as err:
    say({"event": "connect_error", "message": str(err)})
    sys.exit(1)

ack = client.call("join", {"tournamentId": tournament_id}, namespace="/live", timeout=15)
mark = read
# The handshake's answer as websocket-client kept it (its header names in lower case).
headers = client.eio.ws.getheaders() or {}
say({
    "event": "joined",
    "ok": ack.get("ok"),
    "version": (ack.get("state") or {}).get("version"),
    "extensions": headers.get("sec-websocket-extensions", ""),
    "params": None,
})
sys.stdin.read()
client.disconnect()
