//! The workload: clients over two nodes, each making its operations one after another and
//! recording each with its outcome. Game clients press the live commands of a running
//! tournament (with a key, resent until the answer is known; without one, sent once; queued in
//! `POST …/replay`), read its LiveState and join its room; desk clients register and cancel
//! players. Every live command carries an `occurredAt` of its own (a millisecond no other
//! command has), so the audit record of its effect names it.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use reqwest::Method;
use serde_json::{Value, json};
use uuid::Uuid;

use super::model::{AFTER_THE_RUN, Op, Outcome, Record, Sending, Told};
use crate::watcher::{Target, Transport, join};

/// How long a request may take when no client is cutting: past it, the outcome is unknown.
const PATIENCE: Duration = Duration::from_secs(6);
/// While clients cut, a request is cut this long after it was sent, at most.
const CUT_WITHIN_MS: u64 = 400;
/// How often a command with a key is sent before its outcome is left to the end of the run.
const SENDINGS: usize = 6;

/// What the clients share with the run: the nodes, the nemesis now, the counts and the stop.
/// How far behind now a command's `occurredAt` is stamped ([`Shared::stamp`]).
const STAMP_BEHIND_MS: i64 = 1000;
/// The least a command's `occurredAt` is behind now ([`Shared::stamp`]).
const STAMP_BEHIND_AT_LEAST_MS: i64 = 500;

pub struct Shared {
    /// `http://127.0.0.1:port` of each node.
    pub nodes: Vec<String>,
    pub http: reqwest::Client,
    pub began: Instant,
    /// The nemesis at work (`none` when healthy).
    pub nemesis: Mutex<String>,
    /// Whether clients cut their requests at random moments now (the client nemesis).
    pub cutting: AtomicBool,
    pub stop: AtomicBool,
    /// Operations recorded so far.
    pub operations: AtomicUsize,
    last_stamp: Mutex<i64>,
}

impl Shared {
    pub fn new(nodes: Vec<String>, http: reqwest::Client) -> Self {
        Self {
            nodes,
            http,
            began: Instant::now(),
            nemesis: Mutex::new("none".to_owned()),
            cutting: AtomicBool::new(false),
            stop: AtomicBool::new(false),
            operations: AtomicUsize::new(0),
            last_stamp: Mutex::new(0),
        }
    }

    pub(super) fn ms(&self) -> u64 {
        u64::try_from(self.began.elapsed().as_millis()).unwrap_or(u64::MAX)
    }

    fn nemesis(&self) -> String {
        self.nemesis.lock().unwrap_or_else(PoisonError::into_inner).clone()
    }

    /// A moment for a command's `occurredAt`: a second ago, or a millisecond after the last one
    /// handed out, so no two commands share one. In the past, because a node takes a moment
    /// ahead of its clock as its now (`applied_as_of`): a stamp a few milliseconds ahead of a
    /// node would be written as another command's moment, and the two could not be told apart.
    /// Never closer to now than [`STAMP_BEHIND_AT_LEAST_MS`]: clients asking faster than one
    /// command a millisecond (a release build does) wait for the clock rather than run ahead
    /// of it.
    async fn stamp(&self) -> i64 {
        loop {
            let now = chrono::Utc::now().timestamp_millis();
            {
                let mut last = self.last_stamp.lock().unwrap_or_else(PoisonError::into_inner);
                let next = (now - STAMP_BEHIND_MS).max(*last + 1);
                if next <= now - STAMP_BEHIND_AT_LEAST_MS {
                    *last = next;
                    return next;
                }
            }
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
    }

    fn node(&self) -> usize {
        rand::random_range(0..self.nodes.len())
    }
}

/// A running tournament the game clients press.
#[derive(Clone)]
pub struct Game {
    pub id: Uuid,
    pub registrations: Vec<Uuid>,
}

/// A signed-in player of the desk clients.
#[derive(Clone)]
pub struct Player {
    pub user: Uuid,
    pub token: String,
}

/// A command with a key whose outcome is still unknown: sent again after the run.
pub struct Pending {
    /// The records it decides (a queue's commands, in order; or one command).
    pub records: Vec<usize>,
    pub path: String,
    pub body: Value,
    /// The header's key of a live command; `None` for a queue (its keys are in the body).
    pub key: Option<String>,
}

/// What one client recorded.
#[derive(Default)]
pub struct Recorded {
    pub records: Vec<Record>,
    pub pending: Vec<Pending>,
    /// The newest version of each tournament the client has been answered: what it says it
    /// has seen when it reads or joins, as an app does (its tag, its join's `version`).
    seen: HashMap<Uuid, i64>,
}

impl Recorded {
    fn keep(&mut self, record: Record) {
        if let (Some(version), Some(tournament), Outcome::Ok) =
            (record.version, record.op.tournament(), &record.outcome)
        {
            let seen = self.seen.entry(tournament).or_insert(version);
            *seen = (*seen).max(version);
        }
        self.records.push(record);
    }

    fn seen(&self, tournament: Uuid) -> Option<i64> {
        self.seen.get(&tournament).copied()
    }
}

/// How one request ended.
enum Answer {
    Status(u16, Value),
    Lost(String),
}

impl Answer {
    /// The outcome it tells; `unsure`: an earlier sending of the same key ended unknown, so a
    /// `503` says nothing of that one.
    fn outcome(&self, unsure: bool) -> Outcome {
        match self {
            Self::Status(status, _) if (200..300).contains(status) => Outcome::Ok,
            Self::Status(503, _) if unsure => Outcome::Unknown("503 after an unknown sending".to_owned()),
            Self::Status(status, body) if (400..500).contains(status) || *status == 503 => {
                Outcome::Refused(body["error"]["code"].as_str().unwrap_or("?").to_owned())
            }
            Self::Status(status, _) => Outcome::Unknown(status.to_string()),
            Self::Lost(why) => Outcome::Unknown(why.clone()),
        }
    }

    fn body(&self) -> Option<&Value> {
        match self {
            Self::Status(_, body) => Some(body),
            Self::Lost(_) => None,
        }
    }
}

/// The version a LiveState answer carries (a clock command's, or an elimination's `state`).
fn version(body: &Value) -> Option<i64> {
    body["version"].as_i64().or_else(|| body["state"]["version"].as_i64())
}

/// A request to `node` by the holder of `token`.
fn request(shared: &Shared, node: usize, method: Method, path: &str, token: &str) -> reqwest::RequestBuilder {
    shared.http.request(method, format!("{}/api/v1{path}", shared.nodes[node])).bearer_auth(token)
}

/// A command's `POST` of `body` to `node`, with its `Idempotency-Key` if it has one.
fn command_request(
    shared: &Shared,
    node: usize,
    path: &str,
    token: &str,
    key: Option<&str>,
    body: &Value,
) -> reqwest::RequestBuilder {
    let asked = request(shared, node, Method::POST, path, token).json(body);
    match key {
        Some(key) => asked.header("idempotency-key", key),
        None => asked,
    }
}

/// Sends `request`, cut at a random moment while the clients cut.
async fn send(shared: &Shared, request: reqwest::RequestBuilder) -> Answer {
    let limit = if shared.cutting.load(Ordering::Relaxed) {
        Duration::from_millis(rand::random_range(1..CUT_WITHIN_MS))
    } else {
        PATIENCE
    };
    let sent = async {
        let response = request.send().await.map_err(|err| short(&err))?;
        let status = response.status().as_u16();
        let bytes = response.bytes().await.map_err(|err| short(&err))?;
        Ok::<_, String>((status, serde_json::from_slice(&bytes).unwrap_or(Value::Null)))
    };
    match tokio::time::timeout(limit, sent).await {
        Ok(Ok((status, body))) => Answer::Status(status, body),
        Ok(Err(why)) => Answer::Lost(why),
        Err(_) => Answer::Lost("cut".to_owned()),
    }
}

fn short(err: &reqwest::Error) -> String {
    if err.is_timeout() {
        "timeout".to_owned()
    } else if err.is_connect() {
        "connect".to_owned()
    } else {
        "transport".to_owned()
    }
}

/// A client's record in the making.
struct Making<'a> {
    shared: &'a Shared,
    client: usize,
    invoked_ms: u64,
    nemesis: String,
}

impl<'a> Making<'a> {
    fn begin(shared: &'a Shared, client: usize) -> Self {
        Self { shared, client, invoked_ms: shared.ms(), nemesis: shared.nemesis() }
    }

    fn end(
        &self,
        op: Op,
        outcome: Outcome,
        first: Option<Outcome>,
        version: Option<i64>,
        sendings: Vec<Sending>,
    ) -> Record {
        self.shared.operations.fetch_add(1, Ordering::Relaxed);
        let first = first.filter(|first| *first != outcome);
        Record {
            client: self.client,
            op,
            invoked_ms: self.invoked_ms,
            completed_ms: self.shared.ms(),
            outcome,
            first,
            version,
            told: None,
            nemesis: self.nemesis.clone(),
            sendings,
        }
    }
}

/// One request on its way: to which node, since when, under which nemesis.
struct Going {
    node: usize,
    invoked_ms: u64,
    nemesis: String,
}

impl Going {
    /// A request to a node picked at random, under the nemesis at work now.
    fn new(shared: &Shared) -> Self {
        Self::under(shared, shared.nemesis())
    }

    fn under(shared: &Shared, nemesis: String) -> Self {
        Self { node: shared.node(), invoked_ms: shared.ms(), nemesis }
    }

    fn ended(&self, shared: &Shared, outcome: Outcome) -> Sending {
        Sending {
            node: self.node,
            invoked_ms: self.invoked_ms,
            completed_ms: shared.ms(),
            nemesis: self.nemesis.clone(),
            outcome,
        }
    }
}

/// A live command: its name, route and body (without `occurredAt`).
fn command(game: &Game) -> (&'static str, String, Value) {
    let id = game.id;
    match rand::random_range(0..10) {
        0..=2 => ("pause", format!("/tournaments/{id}/pause"), json!({})),
        3..=5 => ("resume", format!("/tournaments/{id}/resume"), json!({})),
        6..=8 => {
            let direction = if rand::random::<bool>() { "next" } else { "prev" };
            ("level", format!("/tournaments/{id}/level"), json!({ "direction": direction }))
        }
        _ => {
            let player = game.registrations[rand::random_range(0..game.registrations.len())];
            ("eliminate", "/eliminations".to_owned(), json!({ "tournamentId": id, "registrationId": player }))
        }
    }
}

fn rfc3339(stamp: i64) -> String {
    chrono::DateTime::from_timestamp_millis(stamp)
        .unwrap_or_default()
        .to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

/// A game client: until the run stops, one operation after another on `game`.
pub async fn play(shared: Arc<Shared>, client: usize, game: Game, token: String) -> Recorded {
    let mut recorded = Recorded::default();
    while !shared.stop.load(Ordering::Relaxed) {
        match rand::random_range(0..10) {
            0..=3 => live(&shared, client, &game, &token, true, &mut recorded).await,
            4..=5 => live(&shared, client, &game, &token, false, &mut recorded).await,
            6..=7 => queue(&shared, client, &game, &token, &mut recorded).await,
            8 => read(&shared, client, &game, &mut recorded).await,
            _ => watch(&shared, client, &game, &token, &mut recorded).await,
        }
    }
    recorded
}

/// A live command, with a key (sent again until its outcome is known, `SENDINGS` times at
/// most) or without (sent once).
async fn live(shared: &Shared, client: usize, game: &Game, token: &str, keyed: bool, recorded: &mut Recorded) {
    let making = Making::begin(shared, client);
    let (name, path, mut body) = command(game);
    let stamp = shared.stamp().await;
    body["occurredAt"] = json!(rfc3339(stamp));
    let key = keyed.then(|| Uuid::new_v4().to_string());
    let op = Op::Live { tournament: game.id, command: name.to_owned(), stamp, key: key.clone(), queued: false };
    let mut first = None;
    let mut unsure = false;
    let mut sendings = Vec::new();
    for _ in 0..if keyed { SENDINGS } else { 1 } {
        let going = Going::new(shared);
        let asked = command_request(shared, going.node, &path, token, key.as_deref(), &body);
        let answer = send(shared, asked).await;
        let outcome = answer.outcome(unsure);
        sendings.push(going.ended(shared, outcome.clone()));
        first.get_or_insert_with(|| outcome.clone());
        if !matches!(outcome, Outcome::Unknown(_)) {
            let version = answer.body().and_then(version).filter(|_| outcome == Outcome::Ok);
            recorded.keep(making.end(op, outcome, first, version, sendings));
            return;
        }
        unsure = true;
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let index = recorded.records.len();
    recorded.keep(making.end(op, Outcome::Unknown("unresolved".to_owned()), first, None, sendings));
    if let Some(key) = key {
        recorded.pending.push(Pending { records: vec![index], path, body, key: Some(key) });
    }
}

/// Two or three commands queued, sent in one `POST …/replay` (again until the answer is known).
async fn queue(shared: &Shared, client: usize, game: &Game, token: &str, recorded: &mut Recorded) {
    let making = Making::begin(shared, client);
    let mut ops = Vec::new();
    let mut commands = Vec::new();
    for _ in 0..rand::random_range(2..=3) {
        let (name, _, mut body) = command(game);
        if let Some(body) = body.as_object_mut() {
            body.remove("tournamentId");
        }
        let stamp = shared.stamp().await;
        let key = Uuid::new_v4().to_string();
        commands.push(json!({ "command": name, "body": body, "occurredAt": rfc3339(stamp), "idempotencyKey": key }));
        ops.push(Op::Live { tournament: game.id, command: name.to_owned(), stamp, key: Some(key), queued: true });
    }
    let path = format!("/tournaments/{}/replay", game.id);
    let body = json!({ "commands": commands });
    let mut firsts: Option<Vec<Outcome>> = None;
    let mut unsure = false;
    // Each command's sendings: its queue's, with what each told of it.
    let mut sendings = vec![Vec::new(); ops.len()];
    for _ in 0..SENDINGS {
        let going = Going::new(shared);
        let answer = send(shared, request(shared, going.node, Method::POST, &path, token).json(&body)).await;
        let outcomes = queued_outcomes(&answer, ops.len(), unsure);
        for (of, outcome) in sendings.iter_mut().zip(&outcomes) {
            of.push(going.ended(shared, outcome.clone()));
        }
        firsts.get_or_insert_with(|| outcomes.clone());
        if !outcomes.iter().any(|outcome| matches!(outcome, Outcome::Unknown(_))) {
            let version = answer.body().and_then(|body| body["state"]["version"].as_i64());
            let firsts = firsts.unwrap_or_default();
            for (((op, outcome), first), sendings) in ops.into_iter().zip(outcomes).zip(firsts).zip(sendings) {
                let seen = version.filter(|_| outcome == Outcome::Ok);
                recorded.keep(making.end(op, outcome, Some(first), seen, sendings));
            }
            return;
        }
        unsure = true;
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let first = recorded.records.len();
    let firsts = firsts.unwrap_or_default();
    for ((op, was), sendings) in ops.into_iter().zip(firsts).zip(sendings) {
        recorded.keep(making.end(op, Outcome::Unknown("unresolved".to_owned()), Some(was), None, sendings));
    }
    let records = (first..recorded.records.len()).collect();
    recorded.pending.push(Pending { records, path, body, key: None });
}

/// Each queued command's outcome in a replay's answer (all unknown, or all refused, when the
/// queue as a whole was).
fn queued_outcomes(answer: &Answer, commands: usize, unsure: bool) -> Vec<Outcome> {
    let whole = answer.outcome(unsure);
    let Some(results) = answer.body().and_then(|body| body["results"].as_array()).filter(|_| whole == Outcome::Ok)
    else {
        return vec![whole; commands];
    };
    let mut outcomes: Vec<Outcome> = results
        .iter()
        .map(|result| match (result["outcome"].as_str(), result["error"]["code"].as_str()) {
            (Some("applied"), _) | (Some("replayed"), None) => Outcome::Ok,
            (Some("refused" | "replayed"), Some(code)) => Outcome::Refused(code.to_owned()),
            _ => Outcome::Unknown(format!("an answer of no outcome: {result}")),
        })
        .collect();
    outcomes.resize(commands, Outcome::Unknown("missing from the answer".to_owned()));
    outcomes
}

/// Whether a read or join says the version its client has seen, as an app holding a state
/// does: three in four. The others are a first load's, promised less ([`super::check::unsaid_behind`]).
fn says_what_it_has_seen() -> bool {
    rand::random_range(0..4) > 0
}

/// `GET …/live` on a node, with the tag of the newest version the client has seen: `304`
/// says that one is still the newest.
async fn read(shared: &Shared, client: usize, game: &Game, recorded: &mut Recorded) {
    let making = Making::begin(shared, client);
    let going = Going::under(shared, making.nemesis.clone());
    let seen = recorded.seen(game.id).filter(|_| says_what_it_has_seen());
    let tag = seen.map(|seen| format!("W/\"{}-{seen}\"", game.id));
    let path = format!("/tournaments/{}/live", game.id);
    let mut asked = request(shared, going.node, Method::GET, &path, "");
    if let Some(tag) = tag {
        asked = asked.header("if-none-match", tag);
    }
    let answer = send(shared, asked).await;
    let (outcome, version) = match &answer {
        Answer::Status(304, _) => (Outcome::Ok, seen),
        answer => {
            let outcome = answer.outcome(false);
            let version = answer.body().and_then(version).filter(|_| outcome == Outcome::Ok);
            (outcome, version)
        }
    };
    let sendings = vec![going.ended(shared, outcome.clone())];
    recorded.keep(making.end(Op::Read { tournament: game.id, seen }, outcome, None, version, sendings));
}

/// A Socket.IO join of the tournament's room on a node: the ack's version.
async fn watch(shared: &Shared, client: usize, game: &Game, token: &str, recorded: &mut Recorded) {
    let making = Making::begin(shared, client);
    let going = Going::under(shared, making.nemesis.clone());
    let base = &shared.nodes[going.node];
    let addr = base.trim_start_matches("http://").parse().unwrap_or_else(|_| ([127, 0, 0, 1], 0).into());
    let target = Target {
        addr,
        base: base.clone(),
        transport: Transport::WebSocket,
        http: shared.http.clone(),
        token: token.to_owned(),
        tournament_id: game.id.to_string(),
        compact: false,
        deflate: false,
    };
    let seen = recorded.seen(game.id).filter(|_| says_what_it_has_seen());
    let (outcome, version) = match tokio::time::timeout(PATIENCE, join(&target, seen)).await {
        Ok(Ok((_link, acked))) => (Outcome::Ok, Some(acked.version)),
        Ok(Err(why)) => (Outcome::Unknown(why), None),
        Err(_) => (Outcome::Unknown("join: timeout".to_owned()), None),
    };
    let sendings = vec![going.ended(shared, outcome.clone())];
    recorded.keep(making.end(Op::Join { tournament: game.id, seen }, outcome, None, version, sendings));
}

/// A desk client: its players each register once in `rush` (a tournament nobody leaves, whose
/// waitlist places are checked), one every few operations, and meanwhile register and cancel
/// at random in `churn`. A cut request is made again, as its own operation.
pub async fn desk(shared: Arc<Shared>, client: usize, players: Vec<Player>, rush: Uuid, churn: Uuid) -> Recorded {
    let mut recorded = Recorded::default();
    let mut rushed = 0;
    let mut n = 0usize;
    while !shared.stop.load(Ordering::Relaxed) {
        n += 1;
        let (tournament, player, register) = if n.is_multiple_of(3) && rushed < players.len() {
            rushed += 1;
            (rush, &players[rushed - 1], true)
        } else {
            (churn, &players[rand::random_range(0..players.len())], rand::random::<bool>())
        };
        loop {
            let making = Making::begin(&shared, client);
            let (path, op) = if register {
                (format!("/tournaments/{tournament}/register"), Op::Register { tournament, user: player.user })
            } else {
                (format!("/tournaments/{tournament}/cancel-registration"), Op::Cancel { tournament, user: player.user })
            };
            let going = Going::under(&shared, making.nemesis.clone());
            let answer = send(&shared, request(&shared, going.node, Method::POST, &path, &player.token)).await;
            let outcome = answer.outcome(false);
            let sendings = vec![going.ended(&shared, outcome.clone())];
            let mut record = making.end(op, outcome.clone(), None, None, sendings);
            if outcome == Outcome::Ok
                && let Some(body) = answer.body()
            {
                record.told = Some(Told {
                    registration: body["id"].as_str().and_then(|id| id.parse().ok()).unwrap_or_default(),
                    status: body["status"].as_str().unwrap_or("?").to_owned(),
                    position: body["waitlistPosition"].as_i64(),
                });
            }
            recorded.keep(record);
            if !matches!(outcome, Outcome::Unknown(_)) || shared.stop.load(Ordering::Relaxed) {
                break;
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }
    recorded
}

/// Sends each pending command again, on a healed cluster, until its outcome is known (or
/// `rounds` sendings have not told it); the records it decides are updated.
pub async fn resolve(shared: &Shared, token: &str, pending: Vec<Pending>, records: &mut [Record], rounds: usize) {
    for pending in pending {
        for _ in 0..rounds {
            let going = Going::under(shared, AFTER_THE_RUN.to_owned());
            let asked =
                command_request(shared, going.node, &pending.path, token, pending.key.as_deref(), &pending.body);
            let answer = send(shared, asked).await;
            let outcomes = if pending.key.is_some() {
                vec![answer.outcome(true)]
            } else {
                queued_outcomes(&answer, pending.records.len(), true)
            };
            for (index, outcome) in pending.records.iter().zip(&outcomes) {
                records[*index].sendings.push(going.ended(shared, outcome.clone()));
            }
            if outcomes.iter().any(|outcome| matches!(outcome, Outcome::Unknown(_))) {
                tokio::time::sleep(Duration::from_millis(500)).await;
                continue;
            }
            for (index, outcome) in pending.records.iter().zip(outcomes) {
                records[*index].outcome = outcome;
            }
            break;
        }
    }
}
