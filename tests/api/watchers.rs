//! A real Socket.IO client on namespace `/live`, as the apps connect: `Watcher` collects
//! what the server sends so a test can wait for it.

use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use futures::FutureExt;
use rust_socketio::asynchronous::{Client, ClientBuilder};
use rust_socketio::{Payload, TransportType};
use serde_json::{Value, json};
use tokio::sync::{mpsc, oneshot};
use uuid::Uuid;

use crate::helpers::TestApp;

/// How long a test waits for something the server should send.
const PATIENCE: Duration = Duration::from_secs(15);

/// One TLS set-up for every test client. rust_engineio builds an HTTP client for each
/// long-polling connection, twice, and without one handed in each loads the system's
/// certificates through OpenSSL: about 96 ms of CPU apiece in the test build (2026-11-26),
/// synchronously on the runtime's thread. Sixty clients connecting at once then spent 11 s
/// before their connect packets left, past the server's 10 s connect timeout in a full CI run.
/// Handed this one, each client clones it. The URLs are plain `http`, so nothing is verified.
fn shared_tls() -> native_tls::TlsConnector {
    static TLS: OnceLock<native_tls::TlsConnector> = OnceLock::new();
    TLS.get_or_init(|| native_tls::TlsConnector::new().expect("the system's TLS set-up")).clone()
}

/// What a watcher saw, in order.
#[derive(Debug)]
pub enum Seen {
    Connected,
    /// An `error` event (a refused namespace connection carries its message).
    Error(String),
    /// A `state` broadcast.
    State(Value),
    /// A `clock` broadcast (to compact watchers).
    Clock(Value),
    /// A `patch` broadcast (to compact watchers).
    Patch(Value),
    /// A `level` event: a level or a break began.
    Level(Value),
    /// An `announcement` of the club.
    Announcement(Value),
    /// `expired`: the socket's token ran out.
    Expired(Value),
    /// The connection was closed (by the server, or the transport dropped).
    Closed,
}

pub struct Watcher {
    pub client: Client,
    seen: mpsc::UnboundedReceiver<Seen>,
}

fn first_value(payload: Payload) -> Value {
    match payload {
        Payload::Text(mut values) if !values.is_empty() => values.swap_remove(0),
        #[allow(deprecated)]
        Payload::String(text) => Value::String(text),
        _ => Value::Null,
    }
}

impl TestApp {
    /// Opens a connection to `/live` with `auth: {token}` (no auth at all for `None`).
    pub async fn watch(&self, token: Option<&str>, transport: TransportType) -> Watcher {
        self.watch_at(&self.base, token, transport).await
    }

    /// [`Self::watch`] through another origin (a load balancer in front of this node).
    pub async fn watch_at(&self, origin: &str, token: Option<&str>, transport: TransportType) -> Watcher {
        let (sender, seen) = mpsc::unbounded_channel();
        let (on_state, on_clock, on_patch, on_connect) =
            (sender.clone(), sender.clone(), sender.clone(), sender.clone());
        let (on_level, on_announcement) = (sender.clone(), sender.clone());
        let (on_error, on_expired, on_close) = (sender.clone(), sender.clone(), sender);
        let mut builder = ClientBuilder::new(origin.to_owned())
            .namespace("/live")
            .transport_type(transport)
            .reconnect(false)
            .tls_config(shared_tls())
            .on("state", move |payload, _| {
                let _ = on_state.send(Seen::State(first_value(payload)));
                async {}.boxed()
            })
            .on("clock", move |payload, _| {
                let _ = on_clock.send(Seen::Clock(first_value(payload)));
                async {}.boxed()
            })
            .on("patch", move |payload, _| {
                let _ = on_patch.send(Seen::Patch(first_value(payload)));
                async {}.boxed()
            })
            .on("level", move |payload, _| {
                let _ = on_level.send(Seen::Level(first_value(payload)));
                async {}.boxed()
            })
            .on("announcement", move |payload, _| {
                let _ = on_announcement.send(Seen::Announcement(first_value(payload)));
                async {}.boxed()
            })
            .on("open", move |_, _| {
                let _ = on_connect.send(Seen::Connected);
                async {}.boxed()
            })
            .on("expired", move |payload, _| {
                let _ = on_expired.send(Seen::Expired(first_value(payload)));
                async {}.boxed()
            })
            .on("error", move |payload, _| {
                let _ = on_error.send(Seen::Error(first_value(payload).to_string()));
                async {}.boxed()
            })
            .on("close", move |_, _| {
                let _ = on_close.send(Seen::Closed);
                async {}.boxed()
            });
        if let Some(token) = token {
            builder = builder.auth(json!({"token": token}));
        }
        let client = builder.connect().await.expect("the Socket.IO client connects");
        Watcher { client, seen }
    }

    /// A watcher that is connected (the namespace accepted it).
    pub async fn watcher(&self, token: &str) -> Watcher {
        let mut watcher = self.watch(Some(token), TransportType::Websocket).await;
        watcher.connected().await.expect("the namespace accepts a valid token");
        watcher
    }
}

impl Watcher {
    async fn next(&mut self) -> Option<Seen> {
        tokio::time::timeout(PATIENCE, self.seen.recv()).await.ok().flatten()
    }

    /// Waits for the namespace's answer: `Ok` when accepted, the error text when refused.
    pub async fn connected(&mut self) -> Result<(), String> {
        loop {
            match self.next().await {
                Some(Seen::Connected) => return Ok(()),
                Some(Seen::Error(text)) => return Err(text),
                Some(
                    Seen::State(_)
                    | Seen::Clock(_)
                    | Seen::Patch(_)
                    | Seen::Level(_)
                    | Seen::Announcement(_)
                    | Seen::Expired(_),
                ) => {
                    continue;
                }
                Some(Seen::Closed) | None => return Err("no answer".to_owned()),
            }
        }
    }

    /// Emits `join` and returns the ack.
    pub async fn join(&self, tournament_id: Uuid) -> Value {
        self.join_with(json!({"tournamentId": tournament_id})).await
    }

    /// Emits `join` with any payload and returns the ack.
    pub async fn join_with(&self, payload: Value) -> Value {
        self.ask("join", payload).await
    }

    /// Emits `event` with `payload` and an ack callback, and returns the ack.
    pub async fn ask(&self, event: &str, payload: Value) -> Value {
        let (sender, receiver) = oneshot::channel();
        let sender = Arc::new(Mutex::new(Some(sender)));
        self.client
            .emit_with_ack(event, payload, PATIENCE, move |payload, _| {
                if let Some(sender) = sender.lock().ok().and_then(|mut slot| slot.take()) {
                    // An ack's arguments arrive as one list.
                    let ack = match first_value(payload) {
                        Value::Array(mut arguments) if arguments.len() == 1 => arguments.swap_remove(0),
                        other => other,
                    };
                    let _ = sender.send(ack);
                }
                async {}.boxed()
            })
            .await
            .expect("the event is sent");
        tokio::time::timeout(PATIENCE, receiver).await.expect("acked in time").expect("an ack")
    }

    pub async fn leave(&self, tournament_id: Uuid) {
        self.client.emit("leave", json!({"tournamentId": tournament_id})).await.expect("leave is sent");
    }

    /// The next broadcast, `state`, `clock` or `patch`, with its event name.
    pub async fn next_update(&mut self) -> (&'static str, Value) {
        loop {
            match self.next().await {
                Some(Seen::State(state)) => return ("state", state),
                Some(Seen::Clock(clock)) => return ("clock", clock),
                Some(Seen::Patch(patch)) => return ("patch", patch),
                Some(_) => continue,
                None => panic!("no broadcast arrived"),
            }
        }
    }

    /// As a compact client does: takes the next broadcast into `held`, the state it holds
    /// (a `state` replaces it; a `clock` or a `patch` must follow its version and is applied),
    /// and returns the event's name and its JSON.
    /// An event of a version it holds already is dropped, as a client does: the socket joins
    /// the room before its ack's state is read, so a change in flight comes both ways.
    pub async fn follow(&mut self, held: &mut Value) -> (&'static str, Value) {
        let held_version = held["version"].as_i64().expect("the state held has a version");
        let (name, update) = loop {
            let (name, update) = self.next_update().await;
            if update["version"].as_i64().is_some_and(|version| version > held_version) {
                break (name, update);
            }
        };
        match name {
            "state" => *held = update.clone(),
            "clock" => {
                assert_eq!(update["version"].as_i64(), Some(held_version + 1), "a clock follows the state held");
                for key in ["version", "serverTime", "status"] {
                    held[key] = update[key].clone();
                }
                for key in ["currentLevelIdx", "levelStartedAt", "pausedAt"] {
                    held["clock"][key] = update["clock"][key].clone();
                }
            }
            _ => {
                assert_eq!(update["fromVersion"].as_i64(), Some(held_version), "a patch follows the state held");
                assert_eq!(update["version"].as_i64(), Some(held_version + 1));
                let ops: json_patch::Patch =
                    serde_json::from_value(update["ops"].clone()).expect("the ops are JSON Patch operations");
                json_patch::patch(held, &ops).unwrap_or_else(|err| panic!("{err}: {update}"));
            }
        }
        (name, update)
    }

    /// The next `level` event.
    pub async fn next_level(&mut self) -> Value {
        loop {
            match self.next().await {
                Some(Seen::Level(level)) => return level,
                Some(_) => continue,
                None => panic!("no level event arrived"),
            }
        }
    }

    /// The next `announcement` event.
    pub async fn next_announcement(&mut self) -> Value {
        loop {
            match self.next().await {
                Some(Seen::Announcement(said)) => return said,
                Some(_) => continue,
                None => panic!("no announcement arrived"),
            }
        }
    }

    /// The next `state` broadcast.
    pub async fn next_state(&mut self) -> Value {
        loop {
            match self.next().await {
                Some(Seen::State(state)) => return state,
                Some(_) => continue,
                None => panic!("no state broadcast arrived"),
            }
        }
    }

    /// Every `state` broadcast until one with `version`, in the order they came.
    pub async fn states_until(&mut self, version: i64) -> Vec<Value> {
        let mut states = Vec::new();
        loop {
            let state = self.next_state().await;
            let reached = state["version"].as_i64().is_some_and(|seen| seen >= version);
            states.push(state);
            if reached {
                return states;
            }
        }
    }

    /// Whether a `state` arrives within `wait`.
    pub async fn hears_within(&mut self, wait: Duration) -> Option<Value> {
        match tokio::time::timeout(wait, self.seen.recv()).await {
            Ok(Some(Seen::State(state))) => Some(state),
            _ => None,
        }
    }

    /// The `expired` event, when it arrives within `wait`.
    pub async fn expired_within(&mut self, wait: Duration) -> Option<Value> {
        let waiting = async {
            while let Some(seen) = self.seen.recv().await {
                if let Seen::Expired(said) = seen {
                    return Some(said);
                }
            }
            None
        };
        tokio::time::timeout(wait, waiting).await.ok().flatten()
    }

    /// Whether the server closes the connection within `wait` (whatever else arrives first).
    pub async fn closed_within(&mut self, wait: Duration) -> bool {
        let waiting = async {
            while let Some(seen) = self.seen.recv().await {
                if matches!(seen, Seen::Closed) {
                    return true;
                }
            }
            true
        };
        tokio::time::timeout(wait, waiting).await.unwrap_or(false)
    }

    pub async fn close(self) {
        let _ = self.client.disconnect().await;
    }
}
