//! `asyncapi.yaml`: the Socket.IO namespace `/live` as an AsyncAPI 3.0 document, built from
//! the protocol's types (`events.rs`) as `openapi.yaml` is built from the handlers. Each client
//! and server event is described in an exhaustive `match`, so an event added to the protocol
//! does not compile until it is described here, and each payload's schema is its type's
//! `ToSchema`, the derive that writes `openapi.yaml`'s schemas (LiveState is the same in both).
//!
//! The document describes the server: a `receive` operation is what a client emits, a `send`
//! one what a client hears.

use std::collections::BTreeMap;

use floor_actors::live::LiveState;
use serde::Serialize;
use utoipa::ToSchema;
use utoipa::openapi::{RefOr, Schema};

use super::events::{
    AnnouncementMade, AuthAck, ClientEvent, ClockUpdate, ConnectRefused, Handshake, JoinAck, LevelStarted, RoomRequest,
    ServerEventKind, SessionExpired, StatePatch,
};
use super::socket::{ENGINE_IO_PATH, NAMESPACE};
use crate::infra::schema_formats;

/// The AsyncAPI version the document is written in.
const ASYNCAPI: &str = "3.0.0";
/// The one channel: the namespace.
const CHANNEL: &str = "live";
/// The security scheme of the handshake.
const ACCESS_TOKEN: &str = "accessToken";
/// The key of `join`'s ack among the messages (it has no event name of its own).
const JOIN_ACK: &str = "joinAck";
/// The key of `auth`'s ack among the messages.
const AUTH_ACK: &str = "authAck";
/// The key of the refused handshake's message: the name socket.io clients hear it by.
const CONNECT_ERROR: &str = "connect_error";

/// An AsyncAPI 3.0 document, as `floor asyncapi` prints it.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct AsyncApi {
    asyncapi: &'static str,
    info: Info,
    default_content_type: &'static str,
    servers: BTreeMap<&'static str, Server>,
    channels: BTreeMap<&'static str, Channel>,
    operations: BTreeMap<&'static str, Operation>,
    components: Components,
}

impl AsyncApi {
    pub fn to_yaml(&self) -> Result<String, yaml_serde::Error> {
        yaml_serde::to_string(self)
    }
}

#[derive(Serialize)]
struct Info {
    title: &'static str,
    version: &'static str,
    description: &'static str,
}

#[derive(Serialize)]
struct Server {
    host: &'static str,
    protocol: &'static str,
    pathname: &'static str,
    title: &'static str,
    description: &'static str,
    variables: BTreeMap<&'static str, Variable>,
    security: Vec<Ref>,
}

#[derive(Serialize)]
struct Variable {
    default: &'static str,
    description: &'static str,
    examples: Vec<&'static str>,
}

#[derive(Serialize)]
struct Channel {
    address: &'static str,
    title: &'static str,
    description: &'static str,
    servers: Vec<Ref>,
    messages: BTreeMap<&'static str, Ref>,
}

#[derive(Serialize)]
struct Operation {
    action: Action,
    channel: Ref,
    title: &'static str,
    summary: &'static str,
    description: &'static str,
    messages: Vec<Ref>,
    #[serde(skip_serializing_if = "Option::is_none")]
    reply: Option<Reply>,
}

/// What the server does with the operation's messages.
#[derive(Clone, Copy, Serialize)]
#[serde(rename_all = "lowercase")]
enum Action {
    /// The server sends it: a client listens with `socket.on(name, …)`.
    Send,
    /// The server receives it: a client emits it.
    Receive,
}

#[derive(Serialize)]
struct Reply {
    channel: Ref,
    messages: Vec<Ref>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Components {
    schemas: BTreeMap<String, RefOr<Schema>>,
    messages: BTreeMap<&'static str, Message>,
    security_schemes: BTreeMap<&'static str, SecurityScheme>,
}

#[derive(Serialize)]
struct Message {
    /// The event's name on the wire, where the message is an event.
    #[serde(skip_serializing_if = "Option::is_none")]
    name: Option<&'static str>,
    title: &'static str,
    summary: &'static str,
    payload: Ref,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct SecurityScheme {
    #[serde(rename = "type")]
    kind: &'static str,
    scheme: &'static str,
    bearer_format: &'static str,
    description: &'static str,
    /// The schema of the handshake's `auth`, which AsyncAPI has no field for.
    #[serde(rename = "x-socketio-auth")]
    socketio_auth: Ref,
}

/// A JSON reference inside the document.
#[derive(Serialize)]
struct Ref {
    #[serde(rename = "$ref")]
    to: String,
}

impl Ref {
    fn to(path: impl Into<String>) -> Self {
        Self { to: path.into() }
    }

    fn channel() -> Self {
        Self::to(format!("#/channels/{CHANNEL}"))
    }

    /// A message as an operation names it: through the channel that carries it.
    fn channel_message(key: &str) -> Self {
        Self::to(format!("#/channels/{CHANNEL}/messages/{key}"))
    }
}

/// What an operation says, beside its action and messages.
struct Texts {
    title: &'static str,
    summary: &'static str,
    description: &'static str,
}

/// The document as it is being put together: every schema, message and operation once.
#[derive(Default)]
struct Builder {
    schemas: BTreeMap<String, RefOr<Schema>>,
    messages: BTreeMap<&'static str, Message>,
    operations: BTreeMap<&'static str, Operation>,
}

impl Builder {
    /// Adds `T`'s schema and every schema it refers to; the reference to it.
    fn schema<T: ToSchema>(&mut self) -> Ref {
        let name = T::name().into_owned();
        let mut referred = Vec::new();
        T::schemas(&mut referred);
        self.schemas.extend(referred);
        self.schemas.insert(name.clone(), T::schema());
        Ref::to(format!("#/components/schemas/{name}"))
    }

    /// Adds a message whose payload is `T`.
    fn message<T: ToSchema>(
        &mut self,
        key: &'static str,
        name: Option<&'static str>,
        title: &'static str,
        summary: &'static str,
    ) {
        let payload = self.schema::<T>();
        self.messages.insert(key, Message { name, title, summary, payload });
    }

    /// Adds an operation on the one channel, carrying the message `key`.
    fn operation(&mut self, key: &'static str, action: Action, texts: Texts, reply: Option<&'static str>) {
        let Texts { title, summary, description } = texts;
        let reply =
            reply.map(|message| Reply { channel: Ref::channel(), messages: vec![Ref::channel_message(message)] });
        let messages = vec![Ref::channel_message(key)];
        self.operations
            .insert(key, Operation { action, channel: Ref::channel(), title, summary, description, messages, reply });
    }

    /// Describes what a client emits.
    fn client_event(&mut self, event: ClientEvent) {
        let name = event.name();
        match event {
            ClientEvent::Join => {
                self.message::<RoomRequest>(name, Some(name), "Join a tournament's room", "`{tournamentId, compact?}`");
                self.message::<JoinAck>(
                    JOIN_ACK,
                    None,
                    "The ack of join",
                    "`{ok: true, state: LiveState}` or `{ok: false, error: {code, message}}`",
                );
                let texts = Texts {
                    title: "Join",
                    summary: "Enter a tournament's room and get its LiveState in the ack.",
                    description: "Emit with an ack callback. The socket enters the room `tournament:<id>`, or with \
                                  `compact: true` the compact room `tournament:<id>:compact` (which hears each \
                                  change small: `clock` for a change of the clock alone, `patch` for any other, and \
                                  `state` only when nothing smaller can be sent), and the ack carries the \
                                  LiveState as of the join. A compact client that missed a change (it hears a \
                                  `clock` or `patch` whose `version - 1` is newer than the version it holds) emits \
                                  `join` again and takes the full state from the ack. The socket is in the room \
                                  before the state is read, so a change in between may arrive as an event before \
                                  the ack: keep the highest `version`. A refused join (`NOT_FOUND`: no such \
                                  tournament; `VALIDATION_ERROR`: a payload that is not `{tournamentId, compact?, \
                                  version?}`, the message naming the field) leaves the socket outside. \
                                  Joining another tournament keeps the rooms already joined.",
                };
                self.operation(name, Action::Receive, texts, Some(JOIN_ACK));
            }
            ClientEvent::Leave => {
                self.message::<RoomRequest>(name, Some(name), "Leave a tournament's room", "`{tournamentId}`");
                let texts = Texts {
                    title: "Leave",
                    summary: "Leave a tournament's rooms, plain and compact; no ack.",
                    description: "`compact` is ignored: the socket leaves both rooms of the tournament. There is no \
                                  ack, and leaving a room the socket is not in changes nothing.",
                };
                self.operation(name, Action::Receive, texts, None);
            }
            ClientEvent::Auth => {
                self.message::<Handshake>(name, Some(name), "Renew the socket's access token", "`{token}`");
                self.message::<AuthAck>(
                    AUTH_ACK,
                    None,
                    "The ack of auth",
                    "`{ok: true, expiresAt}` or `{ok: false, error: {code, message}}`",
                );
                let texts = Texts {
                    title: "Auth",
                    summary: "Hand the socket a fresh access token before its token runs out.",
                    description: "A socket lives as long as the access token it connected with (15 minutes): at \
                                  its `exp` the server sends `expired` and closes the socket. Before then, refresh \
                                  the token (`POST /api/v1/auth/refresh`) and emit `auth` with the new one, with an \
                                  ack callback: `{ok: true, expiresAt}` moves the socket's end to the new token's, \
                                  rooms and all. A token that is invalid, expired, of another account, or of a \
                                  banned one is refused (`{ok: false, error}` with `UNAUTHORIZED`, or `FORBIDDEN` \
                                  for another account) and the socket keeps its old end.",
                };
                self.operation(name, Action::Receive, texts, Some(AUTH_ACK));
            }
        }
    }

    /// Describes what the server emits to a tournament's rooms: its message, then its operation.
    fn server_event(&mut self, event: ServerEventKind) {
        self.server_message(event);
        self.operation(event.name(), Action::Send, server_event_texts(event), None);
    }

    /// The message of what the server emits: its payload's schema and its short description.
    fn server_message(&mut self, event: ServerEventKind) {
        let name = event.name();
        match event {
            ServerEventKind::State => {
                self.message::<LiveState>(name, Some(name), "The LiveState", "The full picture after a change.");
            }
            ServerEventKind::Clock => {
                self.message::<ClockUpdate>(name, Some(name), "A change of the clock", "What a clock press changed.");
            }
            ServerEventKind::Patch => {
                self.message::<StatePatch>(
                    name,
                    Some(name),
                    "What a change changed",
                    "JSON Patch operations from the state of `fromVersion` to that of `version`.",
                );
            }
            ServerEventKind::Level => {
                self.message::<LevelStarted>(name, Some(name), "A level or a break began", "Which segment began.");
            }
            ServerEventKind::Announcement => {
                self.message::<AnnouncementMade>(
                    name,
                    Some(name),
                    "An announcement",
                    "What the club said to the room, and when.",
                );
            }
            ServerEventKind::Expired => {
                self.message::<SessionExpired>(
                    name,
                    Some(name),
                    "The socket's token ran out",
                    "`{code: \"UNAUTHORIZED\", message}`; the socket closes next.",
                );
            }
        }
    }

    /// Describes the refused handshake, which a socket.io client hears as `connect_error`.
    fn refused_handshake(&mut self) {
        self.message::<ConnectRefused>(
            CONNECT_ERROR,
            Some(CONNECT_ERROR),
            "The handshake was refused",
            "`{message: \"UNAUTHORIZED\"}` or `{message: \"RATE_LIMITED\"}`",
        );
        let texts = Texts {
            title: "Connection refused",
            summary: "A handshake without a valid access token, or past a cap of live sockets, is refused.",
            description: "A missing, bad or expired token, or a banned account: the namespace connection is \
                          refused, and the client's `connect_error` carries `message` exactly `UNAUTHORIZED`; \
                          refresh the token (`POST /api/v1/auth/refresh`) and connect again. An account that \
                          holds `MAX_LIVE_SOCKETS_PER_ACCOUNT` sockets on the node, or a client address that \
                          holds `MAX_LIVE_SOCKETS_PER_ADDRESS` (both set per deployment), is refused with \
                          `message` exactly `RATE_LIMITED`: close a socket, or wait, and connect again.",
        };
        self.operation(CONNECT_ERROR, Action::Send, texts, None);
    }
}

/// How the contract tells what the server emits: when, to whom, and what a client does with it.
fn server_event_texts(event: ServerEventKind) -> Texts {
    match event {
        ServerEventKind::State => Texts {
            title: "State",
            summary: "The full LiveState, to the tournament's room after every change.",
            description: "Sent once per change to the room `tournament:<id>`. The compact room gets it only \
                          when the change cannot go smaller as `clock` or `patch`: the node that made the \
                          change had sent no state of the tournament before it, or another version came in \
                          between, or the patch would be larger than the state. `version` grows by one with \
                          every change: keep the state of the highest.",
        },
        ServerEventKind::Clock => Texts {
            title: "Clock",
            summary: "To compact watchers, instead of `state`, when only the clock changed.",
            description: "Sent to the compact room `tournament:<id>:compact` for a change that touched only \
                          the clock's position (the next or previous level, by a press or because a segment \
                          ran out, a pause or a resume) and made exactly the next `version`: a client \
                          holding the state of `version - 1` applies it to that state (the fields it \
                          carries replace theirs: `serverTime`, `status` and the clock's position); one \
                          holding `version` or later drops it; any other missed a change, emits `join` \
                          again and takes the full state from the ack.",
        },
        ServerEventKind::Patch => Texts {
            title: "Patch",
            summary: "To compact watchers, instead of `state`, for any change but one of the clock alone.",
            description: "Sent to the compact room `tournament:<id>:compact` for a change that touched \
                          more than the clock and made exactly the next `version` (`fromVersion` is \
                          `version - 1`), when it is fewer bytes than the state: an elimination in a \
                          LiveState of 470 players is about 600 bytes instead of 65 KB. `ops` are JSON \
                          Patch (RFC 6902) operations, `add`, `remove` and `replace`, on the LiveState as \
                          JSON. A client whose state has `version == fromVersion` applies `ops` to it in \
                          order and holds exactly the state of `version`, `serverTime` included; one \
                          holding `version` or later drops it; any other (it missed a change), or one \
                          whose patch does not apply, emits `join` again and takes the full state from \
                          the ack.",
        },
        ServerEventKind::Level => Texts {
            title: "Level",
            summary: "To every watcher, after the state, when a level or a break began.",
            description: "Sent to both rooms of the tournament when a segment began, by a press or because \
                          the previous one ran out, after the `state` (or `clock`, or `patch`) of the same \
                          `version`: the cue for a sound, without comparing states.",
        },
        ServerEventKind::Announcement => Texts {
            title: "Announcement",
            summary: "To every watcher: the club's announcement.",
            description: "Sent to both rooms of the tournament when the club announces something \
                          (`POST /api/v1/tournaments/{id}/announcements`); the players also get it as a push.",
        },
        ServerEventKind::Expired => Texts {
            title: "Expired",
            summary: "To one socket: its access token ran out without an `auth`; it is closed next.",
            description: "Sent within a few seconds after the `exp` of the socket's access token when no \
                          `auth` renewed it, then the server closes the socket. Refresh the token and \
                          connect again (joining the rooms again), or renew it with `auth` before it runs \
                          out to keep the socket.",
        },
    }
}

const DESCRIPTION: &str = "The live game day over Socket.IO: a signed-in client joins a tournament's room and \
hears every change of its LiveState (the same LiveState as `GET /api/v1/tournaments/{id}/live` of openapi.yaml).

Socket.IO (protocol 5, as the socket.io 3 and 4 clients speak it) at the bare origin of the HTTP API, on the same port: namespace `/live`, path \
`/socket.io`, over WebSocket or HTTP long-polling, e.g. `io(origin + \"/live\", {auth: {token}})`. The handshake \
carries the access token as `auth: {token}`; without a valid one the connection is refused with `connect_error`, \
`message` exactly `UNAUTHORIZED`. Then `join` a tournament (acked with its state) and listen for `state` (or, on \
`join` with `compact: true`, `clock` for a change of the clock alone and `patch`, JSON Patch operations, for any \
other), `level` and `announcement`. A socket lives as long as its access token: renew it with `auth` before it \
runs out, or hear `expired` and connect again.

A message is at most 100,000 bytes on every transport (the `maxPayload` of the Engine.IO handshake); over \
WebSocket a longer one closes the connection with code 1009. `join` is limited per socket (a burst of 20, then \
2 a second; past it the ack is `RATE_LIMITED`).

Over WebSocket, a client that offers permessage-deflate (RFC 7692; browsers and socket.io-client's `ws` do) \
gets every message of 1 KiB or more compressed. The server answers `permessage-deflate; \
server_no_context_takeover; client_no_context_takeover`: each message is compressed on its own both ways, so a \
client keeps no window between messages. A compressed message from a client is held to the same 100,000 bytes \
once inflated (1009 past it).

A queue of commands an organizer's app made offline (`POST /api/v1/tournaments/{id}/replay`) is applied in one \
turn of the tournament: a room hears one `state` (or one `patch`) for the whole queue, with its final version. \
Every LiveState carries `serverTime`: an app corrects its device's clock by it to stamp the `occurredAt` of the \
commands it makes while offline. In a `join`'s ack it is the moment of the answer (the state's, or set by the last \
operation of the `patch`), however long ago the state was made; in `state`, `clock` and `patch` events, the moment \
of the change.

Every payload is JSON with camelCase fields; times are RFC 3339 UTC strings.";

const SERVER_DESCRIPTION: &str = "The HTTP API's own origin (the same host and port as `/api/v1`); Engine.IO \
requests arrive under `/socket.io`. Behind TLS the scheme is `wss`/`https`.";

/// The `/live` protocol as an AsyncAPI 3.0 document: what `floor asyncapi` prints and `/docs`
/// serves.
pub fn asyncapi() -> AsyncApi {
    let mut builder = Builder::default();
    for event in ClientEvent::ALL {
        builder.client_event(event);
    }
    for event in ServerEventKind::ALL {
        builder.server_event(*event);
    }
    builder.refused_handshake();
    let handshake = builder.schema::<Handshake>();
    let Builder { schemas, messages, operations } = builder;
    let schemas = schema_formats::with_patterns(schemas);

    let server = |protocol, title, transport| Server {
        host: "{host}",
        protocol,
        pathname: ENGINE_IO_PATH,
        title,
        description: transport,
        variables: BTreeMap::from([(
            "host",
            Variable { default: "localhost:8080", description: SERVER_DESCRIPTION, examples: vec!["localhost:8080"] },
        )]),
        security: vec![Ref::to(format!("#/components/securitySchemes/{ACCESS_TOKEN}"))],
    };
    let servers = BTreeMap::from([
        ("websocket", server("ws", "WebSocket", "Socket.IO over WebSocket (`transports: [\"websocket\"]`).")),
        (
            "polling",
            server(
                "http",
                "HTTP long-polling",
                "Socket.IO over HTTP long-polling, the socket.io client's first transport before it upgrades.",
            ),
        ),
    ]);
    let channel = Channel {
        address: NAMESPACE,
        title: "The namespace /live",
        description: "A tournament's watchers are the sockets in its room `tournament:<id>` (or \
                      `tournament:<id>:compact`), entered by `join`.",
        servers: servers.keys().map(|key| Ref::to(format!("#/servers/{key}"))).collect(),
        messages: messages.keys().map(|key| (*key, Ref::to(format!("#/components/messages/{key}")))).collect(),
    };
    let access_token = SecurityScheme {
        kind: "http",
        scheme: "bearer",
        bearer_format: "JWT",
        description: "The `accessToken` of `POST /api/v1/auth/otp/verify` (or `/auth/refresh`), sent in the \
                      Socket.IO handshake as `auth: {token}` (the schema `Handshake`), not in a header.",
        socketio_auth: handshake,
    };
    AsyncApi {
        asyncapi: ASYNCAPI,
        info: Info { title: "Floor live", version: env!("CARGO_PKG_VERSION"), description: DESCRIPTION },
        default_content_type: "application/json",
        servers,
        channels: BTreeMap::from([(CHANNEL, channel)]),
        operations,
        components: Components { schemas, messages, security_schemes: BTreeMap::from([(ACCESS_TOKEN, access_token)]) },
    }
}

#[cfg(test)]
mod tests {
    use serde_json::Value;

    use super::*;

    /// Every `$ref` string anywhere under `value`.
    fn references(value: &Value, found: &mut Vec<String>) {
        match value {
            Value::Object(map) => {
                for (key, inner) in map {
                    match inner {
                        Value::String(to) if key == "$ref" => found.push(to.clone()),
                        _ => references(inner, found),
                    }
                }
            }
            Value::Array(items) => items.iter().for_each(|item| references(item, found)),
            _ => {}
        }
    }

    #[test]
    fn every_reference_resolves_inside_the_document() {
        let doc = serde_json::to_value(asyncapi()).expect("the document serialises");
        let mut found = Vec::new();
        references(&doc, &mut found);
        assert!(found.len() > 20, "the document refers to its parts: {found:?}");
        for to in found {
            let pointer = to.strip_prefix('#').unwrap_or_else(|| panic!("{to} is inside the document"));
            assert!(doc.pointer(pointer).is_some(), "{to} resolves");
        }
    }

    #[test]
    fn the_document_renders_as_yaml_in_a_stable_order() {
        let yaml = asyncapi().to_yaml().expect("renders");
        assert!(yaml.starts_with("asyncapi: 3.0.0\n"), "{}", &yaml[..40.min(yaml.len())]);
        assert_eq!(yaml, asyncapi().to_yaml().expect("renders"));
    }
}
