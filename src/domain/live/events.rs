//! The `/live` protocol as types: what a client emits, what its `join` is answered with, and
//! what the server emits to a tournament's room. socketioxide routes by event name, so every
//! event keeps its wire name beside its payload, and the socket handlers match on these
//! enums: an event added here without a handler does not compile. The payloads derive their
//! JSON Schemas from the same types, and `asyncapi.yaml` is built from them (`super::asyncapi`).

use std::fmt;

use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use utoipa::openapi::schema::{Object, ObjectBuilder, Type};
use utoipa::openapi::{RefOr, Schema};
use utoipa::{PartialSchema, ToSchema};
use uuid::Uuid;

use floor_actors::live::LiveState;

use super::json::StampedAt;
use super::patch::{self, PatchOperation, json_len_within};
use crate::infra::error::{AppError, ErrorCode, FieldProblem};
use crate::infra::input;
use crate::infra::objects_only::ObjectsOnly;

/// The events a client emits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ClientEvent {
    /// `{tournamentId}`: enter the tournament's room; acked with a [`JoinAck`].
    Join,
    /// `{tournamentId}`: leave the room; no ack.
    Leave,
    /// `{token}`: a fresh access token for this socket before its token runs out; acked
    /// with an [`AuthAck`].
    Auth,
}

impl ClientEvent {
    pub const ALL: [Self; 3] = [Self::Join, Self::Leave, Self::Auth];

    /// The event's name on the wire.
    pub const fn name(self) -> &'static str {
        match self {
            Self::Join => "join",
            Self::Leave => "leave",
            Self::Auth => "auth",
        }
    }
}

/// The handshake's `auth`: an access token, as an HTTP request's `Authorization: Bearer`.
#[derive(Debug, Deserialize, ToSchema)]
pub struct Handshake {
    /// The `accessToken` of `POST /auth/otp/verify` or `POST /auth/refresh`.
    pub token: String,
}

/// The refusal of a connection: the client's `connect_error` carries `{message: <code>}`,
/// since socketioxide sends the error's display text as the message.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ConnectRefused {
    /// A missing, bad or expired token, or a banned account.
    Unauthorized,
    /// The account or the client's address holds as many live sockets as a node allows.
    RateLimited,
    /// The token is valid but its account could not be read (the database out of reach or
    /// slow): nothing is known against the client, which connects again in a few seconds.
    Unavailable,
}

impl ConnectRefused {
    pub const ALL: [Self; 3] = [Self::Unauthorized, Self::RateLimited, Self::Unavailable];

    /// The refusal of a handshake whose token could not be taken for its account's: what the
    /// token says against the client (`UNAUTHORIZED`, and the app signs in again), or a failure
    /// of the node's, which says nothing of the token (`SERVICE_UNAVAILABLE`).
    pub fn of(err: AppError) -> Self {
        match err.code() {
            ErrorCode::ServiceUnavailable | ErrorCode::InternalError => Self::Unavailable,
            _ => Self::Unauthorized,
        }
    }

    /// The message of the refusal, exactly: the contract's error code.
    pub const fn message(self) -> &'static str {
        match self {
            Self::Unauthorized => "UNAUTHORIZED",
            Self::RateLimited => "RATE_LIMITED",
            Self::Unavailable => "SERVICE_UNAVAILABLE",
        }
    }
}

impl fmt::Display for ConnectRefused {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.message())
    }
}

impl std::error::Error for ConnectRefused {}

/// Written by hand: socketioxide, not serde, makes the payload, from the display text above.
impl PartialSchema for ConnectRefused {
    fn schema() -> RefOr<Schema> {
        let message = ObjectBuilder::new().schema_type(Type::String).enum_values(Some(Self::ALL.map(Self::message)));
        ObjectBuilder::new()
            .description(Some("A refused handshake: `connect_error` with exactly one of these messages."))
            .property("message", message)
            .required("message")
            .into()
    }
}

impl ToSchema for ConnectRefused {
    fn name() -> std::borrow::Cow<'static, str> {
        "ConnectError".into()
    }
}

/// The ack of `auth`: `{ok: true, expiresAt}` (when the new token runs out) or
/// `{ok: false, error: {code, message}}`, the socket keeping its old token's end.
#[derive(Debug, Serialize, ToSchema)]
#[serde(untagged)]
pub enum AuthAck {
    Renewed {
        #[schema(schema_with = always_true)]
        ok: bool,
        #[serde(rename = "expiresAt")]
        expires_at: chrono::DateTime<chrono::Utc>,
    },
    Refused {
        #[schema(schema_with = always_false)]
        ok: bool,
        error: AckError,
    },
}

impl AuthAck {
    pub fn renewed(expires_at: chrono::DateTime<chrono::Utc>) -> Self {
        Self::Renewed { ok: true, expires_at }
    }

    pub fn refused(code: ErrorCode, message: impl Into<String>) -> Self {
        Self::Refused { ok: false, error: AckError { code, message: message.into() } }
    }
}

/// The payload of `expired`, sent to one socket whose access token ran out before it was
/// renewed with `auth`; the server closes the socket right after.
#[derive(Debug, Serialize, ToSchema)]
pub struct SessionExpired {
    /// Always `UNAUTHORIZED`.
    pub code: ErrorCode,
    /// For developers, in English.
    pub message: String,
}

/// The payload of `join` and `leave`.
#[derive(Clone, Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct RoomRequest {
    pub tournament_id: Uuid,
    /// On `join`: changes come small instead of as the full `state`: `clock` for a change of
    /// the clock alone, `patch` for any other (the `state` when nothing smaller can be sent).
    /// Absent means false; `leave` ignores it.
    #[serde(default)]
    pub compact: bool,
    /// On `join`: the version of the LiveState the client holds (joining again after a
    /// reconnect). The ack may then carry the `patch` from it instead of the whole state, and
    /// never carries an older state: a node that cannot catch up with it within half a second
    /// (its database out of reach) refuses `SERVICE_UNAVAILABLE`, to be asked again. `leave`
    /// ignores it.
    #[serde(default)]
    pub version: Option<i64>,
}

impl RoomRequest {
    /// The request in a `join` or `leave` payload: an object, as the contract says (serde alone
    /// would also read `[id, false]` as one). Anything else is the problem of the field it is
    /// about (`tournamentId`, `version`, `compact`), or of the `payload` as a whole, in the
    /// words of an HTTP `VALIDATION_ERROR`.
    pub fn read(payload: serde_json::Value) -> Result<Self, FieldProblem> {
        serde_path_to_error::deserialize(ObjectsOnly(payload)).map_err(|err| {
            let problem = input::field_problem(PAYLOAD, &err.path().to_string(), &err.inner().to_string());
            if problem.field == PAYLOAD { Self::unreadable() } else { problem }
        })
    }

    /// The problem of a payload that is no request at all (not an object, or none).
    pub fn unreadable() -> FieldProblem {
        FieldProblem::new(PAYLOAD, "must be an object: {tournamentId, compact?, version?}")
    }
}

/// How a problem with a `join` or `leave` payload as a whole names it.
const PAYLOAD: &str = "payload";

/// The ack of `join`: `{ok: true, state}`, `{ok: true, patch}` (only to a join that said the
/// `version` it holds) or `{ok: false, error: {code, message}}`. The schema of `ok` admits one
/// value in each, so a generated client tells a refusal by it, and the two others by their
/// field. The state and the patch come as JSON made once for every socket that joins, with the
/// moment of the answer written in at each.
#[derive(Debug, Serialize, ToSchema)]
#[serde(untagged)]
pub enum JoinAck<'a> {
    /// In the room: the LiveState as of the join (`serverTime` the moment of the answer).
    Joined {
        #[schema(schema_with = always_true)]
        ok: bool,
        #[schema(value_type = LiveState)]
        state: StampedAt<'a>,
    },
    /// In the room, having said the version it holds: the `patch` from that version to the
    /// LiveState as of the join (its last operation sets `serverTime` to the moment of the
    /// answer; it is the only one when the client is current). Sent instead of `state` when
    /// this node kept the state of that version and the patch is smaller.
    Patched {
        #[schema(schema_with = always_true)]
        ok: bool,
        #[schema(value_type = StatePatch)]
        patch: JoinPatchAt<'a>,
    },
    /// Not in the room: `NOT_FOUND` for an unknown tournament, `VALIDATION_ERROR` for a
    /// payload that is not `{tournamentId, compact?, version?}`, its message naming the field.
    Refused {
        #[schema(schema_with = always_false)]
        ok: bool,
        error: AckError,
    },
}

fn literal(value: bool) -> Object {
    ObjectBuilder::new().schema_type(Type::Boolean).enum_values(Some([value])).build()
}

fn always_true() -> Object {
    literal(true)
}

fn always_false() -> Object {
    literal(false)
}

/// Why a `join` was refused, in the shape of the HTTP errors.
#[derive(Debug, Serialize, ToSchema)]
pub struct AckError {
    code: ErrorCode,
    /// For developers, in English.
    message: String,
}

impl<'a> JoinAck<'a> {
    pub fn joined(state: StampedAt<'a>) -> Self {
        Self::Joined { ok: true, state }
    }

    pub fn patched(patch: JoinPatchAt<'a>) -> Self {
        Self::Patched { ok: true, patch }
    }

    pub fn refused(code: ErrorCode, message: impl Into<String>) -> Self {
        Self::Refused { ok: false, error: AckError { code, message: message.into() } }
    }
}

/// The events the server emits to a tournament's room; each serialises as its payload.
#[derive(Debug, Serialize)]
#[serde(untagged)]
pub enum ServerEvent<'a> {
    /// The full LiveState after a change.
    State(&'a LiveState),
    /// To compact watchers, after a change that touched only the clock.
    Clock(ClockUpdate<'a>),
    /// To compact watchers, after any other change: what it changed in the LiveState.
    Patch(StatePatch),
    /// To every watcher, after the state, when a level or a break began.
    Level(LevelStarted),
    /// To every watcher: the club announced something.
    Announcement(AnnouncementMade),
    /// To one socket: its access token ran out; the socket is closed next.
    Expired(SessionExpired),
}

impl<'a> ServerEvent<'a> {
    /// What the compact room hears of the change to `after`, given `before`, the state sent
    /// before it (none when this node sent none, or it was another tournament's): `clock` for
    /// a change of the clock alone, `patch` for any other when that is fewer bytes, and
    /// otherwise, or when `after` is not exactly the next version, the state itself.
    pub fn compact(before: Option<&LiveState>, after: &'a LiveState) -> Self {
        let Some(before) = before else { return Self::State(after) };
        if let Some(clock) = ClockUpdate::between(before, after) {
            return Self::Clock(clock);
        }
        StatePatch::between(before, after).map_or(Self::State(after), Self::Patch)
    }

    /// Which event this is.
    pub const fn kind(&self) -> ServerEventKind {
        match self {
            Self::State(_) => ServerEventKind::State,
            Self::Clock(_) => ServerEventKind::Clock,
            Self::Patch(_) => ServerEventKind::Patch,
            Self::Level(_) => ServerEventKind::Level,
            Self::Announcement(_) => ServerEventKind::Announcement,
            Self::Expired(_) => ServerEventKind::Expired,
        }
    }

    /// The event's name on the wire.
    pub const fn name(&self) -> &'static str {
        self.kind().name()
    }
}

/// The events the server emits, without their payloads: what the contract lists (and
/// `asyncapi.yaml` describes, one message each).
#[derive(Clone, Copy, Debug, PartialEq, Eq, strum::VariantArray)]
pub enum ServerEventKind {
    State,
    Clock,
    Patch,
    Level,
    Announcement,
    Expired,
}

impl ServerEventKind {
    /// Every server event, derived so that none can be missing.
    pub const ALL: &[Self] = <Self as strum::VariantArray>::VARIANTS;

    /// The event's name on the wire.
    pub const fn name(self) -> &'static str {
        match self {
            Self::State => "state",
            Self::Clock => "clock",
            Self::Patch => "patch",
            Self::Level => "level",
            Self::Announcement => "announcement",
            Self::Expired => "expired",
        }
    }
}

/// The payload of `clock`: what a clock press changes, with the version it makes, so a
/// client holding the state before it knows it missed nothing.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ClockUpdate<'a> {
    tournament_id: Uuid,
    version: i64,
    server_time: chrono::DateTime<chrono::Utc>,
    clock: ClockTimes<'a>,
    status: floor_entities::enums::TournamentStatus,
}

/// The clock's position: LiveState's `clock` without its `levels`.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ClockTimes<'a> {
    current_level_idx: usize,
    /// When the current segment started (paused time excluded); null before start.
    #[schema(value_type = Option<chrono::DateTime<chrono::Utc>>, required = true)]
    level_started_at: &'a Option<chrono::DateTime<chrono::Utc>>,
    /// Set while the clock is paused; null while it runs.
    #[schema(value_type = Option<chrono::DateTime<chrono::Utc>>, required = true)]
    paused_at: &'a Option<chrono::DateTime<chrono::Utc>>,
}

impl<'a> ClockUpdate<'a> {
    /// The `clock` event for `after`, when the change from `before` to it touched only the
    /// clock's position (level, start, pause) and made exactly the next version; `None` when
    /// the full state must go.
    pub fn between(before: &LiveState, after: &'a LiveState) -> Option<Self> {
        let only_the_clock = after.version == before.version + 1
            && after.tournament_id == before.tournament_id
            && after.status == before.status
            && after.clock.levels == before.clock.levels
            && after.remaining == before.remaining
            && after.entrants == before.entrants
            && after.chips_in_play == before.chips_in_play
            && after.avg_stack == before.avg_stack
            && after.tables == before.tables
            && after.eliminations == before.eliminations;
        only_the_clock.then_some(Self {
            tournament_id: after.tournament_id,
            version: after.version,
            server_time: after.server_time,
            clock: ClockTimes {
                current_level_idx: after.clock.current_level_idx,
                level_started_at: &after.clock.level_started_at,
                paused_at: &after.clock.paused_at,
            },
            status: after.status,
        })
    }
}

/// The payload of `patch`: the operations that turn the LiveState of `fromVersion` into the
/// LiveState of `version`, so a client holding the first builds the second without receiving
/// it whole.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct StatePatch {
    tournament_id: Uuid,
    /// The version of the state the operations apply to: in a `patch` event always
    /// `version - 1`; in a `join`'s ack the version the client said it holds.
    from_version: i64,
    version: i64,
    /// JSON Patch (RFC 6902) operations, in order, on the LiveState as JSON: applied to the
    /// state of `fromVersion` they give exactly the state of `version`, `serverTime` included
    /// (in a `join`'s ack the last operation sets it to the moment of the answer).
    ops: Vec<PatchOperation>,
}

impl StatePatch {
    /// The `patch` event from `before` to `after`, when `after` is exactly the next version
    /// of the same tournament and the event is fewer bytes than `after` whole; `None` when
    /// the full state must go.
    pub fn between(before: &LiveState, after: &LiveState) -> Option<Self> {
        if after.version != before.version + 1 {
            return None;
        }
        Self::across(before, after)
    }

    /// The patch from `before` to `after`, the same state or a later one of the same
    /// tournament, when it is fewer bytes than `after` whole; `None` when the full state must
    /// go.
    pub fn across(before: &LiveState, after: &LiveState) -> Option<Self> {
        if after.version < before.version || after.tournament_id != before.tournament_id {
            return None;
        }
        let (old, new) = match (serde_json::to_value(before), serde_json::to_value(after)) {
            (Ok(old), Ok(new)) => (old, new),
            (Err(err), _) | (_, Err(err)) => {
                tracing::warn!(tournament_id = %after.tournament_id, error = %err, "could not turn a LiveState into JSON");
                return None;
            }
        };
        let patch = Self {
            tournament_id: after.tournament_id,
            from_version: before.version,
            version: after.version,
            ops: patch::diff(&old, &new),
        };
        let size = json_len_within(&patch, usize::MAX)?;
        // The state is written out only as far as the patch's size.
        json_len_within(after, size).is_none().then_some(patch)
    }
}

/// The path of the LiveState's `serverTime`.
const SERVER_TIME_PATH: &str = "/serverTime";

/// The patch of a `join`'s ack, made once for every socket that joins holding the same
/// version: [`StatePatch::across`] with its operations kept as JSON, but for any on
/// `serverTime`, which each answer sets by a last operation to its own moment ([`Self::at`]),
/// as the state whole is acked ([`super::json::Stamped`]).
pub struct JoinPatch {
    tournament_id: Uuid,
    from_version: i64,
    version: i64,
    ops: Vec<Box<RawValue>>,
}

impl JoinPatch {
    /// The patch from `before` to `after`, when [`StatePatch::across`] makes one.
    pub fn across(before: &LiveState, after: &LiveState) -> serde_json::Result<Option<Self>> {
        let Some(patch) = StatePatch::across(before, after) else { return Ok(None) };
        let ops = patch
            .ops
            .iter()
            .filter(|op| {
                let (PatchOperation::Add { path, .. }
                | PatchOperation::Remove { path }
                | PatchOperation::Replace { path, .. }) = op;
                path != SERVER_TIME_PATH
            })
            .map(serde_json::value::to_raw_value)
            .collect::<serde_json::Result<_>>()?;
        Ok(Some(Self {
            tournament_id: patch.tournament_id,
            from_version: patch.from_version,
            version: patch.version,
            ops,
        }))
    }

    /// The patch as of `now`: what an answer sends.
    pub fn at(&self, now: chrono::DateTime<chrono::Utc>) -> JoinPatchAt<'_> {
        JoinPatchAt {
            tournament_id: self.tournament_id,
            from_version: self.from_version,
            version: self.version,
            ops: OpsAt { ops: &self.ops, now },
        }
    }

    /// The bytes of JSON kept.
    pub fn bytes(&self) -> usize {
        // The ids and versions, and a comma beside each operation.
        100 + self.ops.iter().map(|op| op.get().len() + 1).sum::<usize>()
    }
}

/// A [`JoinPatch`] as of one answer's moment, serialised as the [`StatePatch`] it is.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct JoinPatchAt<'a> {
    tournament_id: Uuid,
    from_version: i64,
    version: i64,
    ops: OpsAt<'a>,
}

/// The operations kept, then the one that sets `serverTime`.
#[derive(Debug)]
struct OpsAt<'a> {
    ops: &'a [Box<RawValue>],
    now: chrono::DateTime<chrono::Utc>,
}

impl Serialize for OpsAt<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeSeq;
        /// `{"op": "replace", "path": "/serverTime", "value": now}`, as a [`PatchOperation`] writes it.
        #[derive(Serialize)]
        struct SetTime<'a> {
            op: &'static str,
            path: &'static str,
            value: &'a chrono::DateTime<chrono::Utc>,
        }
        let mut seq = serializer.serialize_seq(Some(self.ops.len() + 1))?;
        for op in self.ops {
            seq.serialize_element(op)?;
        }
        seq.serialize_element(&SetTime { op: "replace", path: SERVER_TIME_PATH, value: &self.now })?;
        seq.end()
    }
}

/// The payload of `level`: a level or a break began (by a press or because the previous one
/// ran out), so a screen or an app plays its sound without comparing states.
#[derive(Debug, PartialEq, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct LevelStarted {
    tournament_id: Uuid,
    version: i64,
    current_level_idx: usize,
    kind: SegmentKind,
    /// When the segment began: the `clock.levelStartedAt` of the state of the same `version`.
    #[schema(required = true)]
    started_at: Option<chrono::DateTime<chrono::Utc>>,
}

/// What began: a level of blinds or a break (the `kind` of the clock's segments).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum SegmentKind {
    Level,
    Break,
}

impl LevelStarted {
    /// The `level` event of `state`, whose change began its current segment.
    pub fn of(state: &LiveState) -> Self {
        let kind = match state.clock.levels.get(state.clock.current_level_idx) {
            Some(floor_actors::rules::structure::Segment::Break { .. }) => SegmentKind::Break,
            _ => SegmentKind::Level,
        };
        Self {
            tournament_id: state.tournament_id,
            version: state.version,
            current_level_idx: state.clock.current_level_idx,
            kind,
            started_at: state.clock.level_started_at,
        }
    }
}

/// The payload of `announcement`: what the club said to the room, and when.
#[derive(Clone, Debug, PartialEq, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct AnnouncementMade {
    pub tournament_id: Uuid,
    /// As the club sent it, trimmed: 1 to 280 characters.
    #[schema(min_length = 1, max_length = 280)]
    pub text: String,
    pub created_at: chrono::DateTime<chrono::Utc>,
}

/// The room of one tournament's watchers.
pub fn room(tournament_id: Uuid) -> String {
    format!("tournament:{tournament_id}")
}

/// The room of one tournament's compact watchers (see [`ServerEvent::compact`]).
pub fn compact_room(tournament_id: Uuid) -> String {
    format!("tournament:{tournament_id}:compact")
}

/// The tournament whose room (plain or compact) `name` is.
pub fn tournament_of_room(name: &str) -> Option<Uuid> {
    let rest = name.strip_prefix("tournament:")?;
    rest.strip_suffix(":compact").unwrap_or(rest).parse().ok()
}

/// The room of one account's sockets (joined at connect, never by a client's `join`), so a
/// ban reaches every connection of the account on every node.
pub fn user_room(user_id: Uuid) -> String {
    format!("user:{user_id}")
}

#[cfg(test)]
pub(crate) mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_refused_join_carries_the_contract_code_and_no_state() {
        let ack = serde_json::to_value(JoinAck::refused(ErrorCode::NotFound, "tournament not found")).expect("json");
        assert_eq!(ack, json!({"ok": false, "error": {"code": "NOT_FOUND", "message": "tournament not found"}}));
    }

    #[test]
    fn a_request_names_its_tournament_in_camel_case() {
        let id = Uuid::now_v7();
        let request = RoomRequest::read(json!({"tournamentId": id})).expect("parses");
        assert_eq!(request.tournament_id, id);
        let missing = RoomRequest::read(json!({"tournament_id": id})).expect_err("refused");
        assert_eq!(missing, FieldProblem::new("tournamentId", "is required"));
        let malformed = RoomRequest::read(json!({"tournamentId": "42"})).expect_err("refused");
        assert_eq!(malformed, FieldProblem::new("tournamentId", "must be a UUID"));
    }

    #[test]
    fn a_request_is_an_object_not_its_fields_in_a_list() {
        let id = Uuid::now_v7();
        assert!(serde_json::from_value::<RoomRequest>(json!([id, true])).is_ok(), "serde alone reads it");
        assert_eq!(RoomRequest::read(json!([id, true])).expect_err("refused"), RoomRequest::unreadable());
        assert_eq!(RoomRequest::read(json!(id)).expect_err("refused"), RoomRequest::unreadable());
    }

    /// A running tournament's LiveState at `version`: 10 players at no table, the clock at
    /// its first level, running.
    pub(crate) fn state(version: i64) -> LiveState {
        use floor_actors::live::state::ClockView;
        LiveState {
            tournament_id: Uuid::nil(),
            version,
            status: floor_entities::enums::TournamentStatus::Running,
            server_time: chrono::Utc::now(),
            clock: ClockView { current_level_idx: 0, level_started_at: None, paused_at: None, levels: Vec::new() },
            remaining: 10,
            entrants: 10,
            chips_in_play: 100_000,
            avg_stack: 10_000,
            tables: Vec::new(),
            eliminations: Vec::new(),
        }
    }

    #[test]
    fn a_change_of_the_clock_alone_is_a_clock_event_and_anything_else_the_state() {
        let before = state(7);
        let mut paused = state(8);
        paused.clock.paused_at = Some(chrono::Utc::now());
        let update = ClockUpdate::between(&before, &paused).expect("only the clock moved");
        let wire = serde_json::to_value(&update).expect("json");
        assert_eq!(wire["version"], 8);
        assert_eq!(wire["status"], "running");
        assert!(wire["clock"]["pausedAt"].is_string());
        assert_eq!(wire["clock"].as_object().map(|clock| clock.len()), Some(3), "no levels: {wire}");

        let mut eliminated = state(8);
        eliminated.remaining = 9;
        assert!(ClockUpdate::between(&before, &eliminated).is_none());
        let mut finished = state(8);
        finished.status = floor_entities::enums::TournamentStatus::Finished;
        assert!(ClockUpdate::between(&before, &finished).is_none());
        assert!(ClockUpdate::between(&before, &state(9)).is_none(), "a version was skipped: the state goes");
        assert!(ClockUpdate::between(&before, &state(7)).is_none());
    }

    /// What the compact room hears of the change from `before` to `after`: its name and JSON.
    fn compact_event(before: Option<&LiveState>, after: &LiveState) -> (&'static str, serde_json::Value) {
        let event = ServerEvent::compact(before, after);
        (event.name(), serde_json::to_value(&event).expect("json"))
    }

    fn seat(seat_no: i32, n: u128) -> floor_actors::live::state::SeatView {
        floor_actors::live::state::SeatView {
            seat_no,
            registration_id: Uuid::from_u128(n),
            name: format!("Player number {n} of the evening"),
        }
    }

    /// A running state of two full tables.
    fn seated(version: i64) -> LiveState {
        use floor_actors::live::state::TableView;
        let mut state = state(version);
        state.tables = (1..=2)
            .map(|table_no| TableView {
                table_no,
                seats: (1..=9).map(|seat_no| seat(seat_no, (table_no * 10 + seat_no) as u128)).collect(),
            })
            .collect();
        state
    }

    #[test]
    fn compact_watchers_hear_a_patch_for_a_change_beyond_the_clock() {
        use floor_actors::live::state::EliminationView;
        let before = seated(7);
        let mut after = seated(8);
        after.server_time = before.server_time + chrono::TimeDelta::seconds(5);
        let out = after.tables[1].seats.remove(3);
        after.eliminations.insert(
            0,
            EliminationView {
                registration_id: out.registration_id,
                name: out.name,
                place: 18,
                eliminated_at: after.server_time,
            },
        );
        after.remaining = 17;
        let (name, wire) = compact_event(Some(&before), &after);
        assert_eq!(name, "patch");
        assert_eq!(wire["tournamentId"], Uuid::nil().to_string());
        assert_eq!((wire["fromVersion"].clone(), wire["version"].clone()), (json!(7), json!(8)));
        let ops: json_patch::Patch = serde_json::from_value(wire["ops"].clone()).expect("JSON Patch operations");
        let mut applied = serde_json::to_value(&before).expect("json");
        json_patch::patch(&mut applied, &ops).expect("the operations apply");
        assert_eq!(applied, serde_json::to_value(&after).expect("json"), "exactly the new state");
        let paths: Vec<&str> =
            wire["ops"].as_array().expect("ops").iter().filter_map(|op| op["path"].as_str()).collect();
        assert_eq!(paths, ["/eliminations/0", "/remaining", "/serverTime", "/tables/1/seats/3", "/version"]);
        let state_bytes = serde_json::to_string(&after).expect("json").len();
        assert!(wire.to_string().len() * 3 < state_bytes, "{wire} against {state_bytes} bytes");
    }

    #[test]
    fn compact_watchers_hear_the_state_when_nothing_smaller_can_go() {
        let before = seated(7);
        let mut after = seated(8);
        after.remaining = 17;
        assert_eq!(compact_event(None, &after).0, "state", "no state sent before");
        assert_eq!(compact_event(Some(&seated(6)), &after).0, "state", "a version came in between");
        assert_eq!(compact_event(Some(&after.clone()), &after).0, "state", "the same version again");
        let mut other = seated(7);
        other.tournament_id = Uuid::from_u128(1);
        assert_eq!(compact_event(Some(&other), &after).0, "state", "another tournament's");
        // Everyone moved: the operations would outweigh the state.
        let mut shuffled = seated(8);
        for table in &mut shuffled.tables {
            for seat in &mut table.seats {
                seat.registration_id = Uuid::from_u128(seat.registration_id.as_u128() + 100);
                seat.name = format!("Someone else at seat {}", seat.seat_no);
            }
        }
        shuffled.status = floor_entities::enums::TournamentStatus::Finished;
        shuffled.remaining = 1;
        let (name, wire) = compact_event(Some(&before), &shuffled);
        assert_eq!(name, "state");
        assert_eq!(wire, serde_json::to_value(&shuffled).expect("json"));
        // A change of the clock alone is still `clock`.
        let mut paused = seated(8);
        paused.clock.paused_at = Some(paused.server_time);
        assert_eq!(compact_event(Some(&before), &paused).0, "clock");
    }

    #[test]
    fn a_level_event_names_the_segment_that_began() {
        use floor_actors::rules::structure::Segment;
        let mut after = state(8);
        after.clock.levels = vec![
            Segment::Level { duration_min: 20, small_blind: 1, big_blind: 2, ante: None, note: None },
            Segment::Break { duration_min: 10, note: None },
        ];
        after.clock.current_level_idx = 1;
        after.clock.level_started_at = Some(after.server_time);
        let wire = serde_json::to_value(ServerEvent::Level(LevelStarted::of(&after))).expect("json");
        assert_eq!(
            wire,
            json!({"tournamentId": Uuid::nil(), "version": 8, "currentLevelIdx": 1, "kind": "break",
                   "startedAt": after.server_time})
        );
        after.clock.current_level_idx = 0;
        assert_eq!(LevelStarted::of(&after).kind, SegmentKind::Level);
    }

    #[test]
    fn compact_is_off_unless_asked() {
        let id = Uuid::now_v7();
        let plain = RoomRequest::read(json!({"tournamentId": id})).expect("parses");
        assert!(!plain.compact);
        let compact = RoomRequest::read(json!({"tournamentId": id, "compact": true})).expect("parses");
        assert!(compact.compact);
    }

    #[test]
    fn a_join_is_acked_with_ok_and_the_state_or_the_patch_as_of_the_answer() {
        let current = state(3);
        let now = current.server_time + chrono::TimeDelta::minutes(20);
        let stamped = crate::domain::live::json::Stamped::of(&current).expect("json");
        let ack = serde_json::to_value(JoinAck::joined(stamped.at(now))).expect("json");
        let as_of_now = LiveState { server_time: now, ..current.clone() };
        assert_eq!(ack, json!({"ok": true, "state": serde_json::to_value(&as_of_now).expect("json")}));
        let patch = JoinPatch::across(&current, &current).expect("json").expect("a patch from the same state");
        let ack = serde_json::to_value(JoinAck::patched(patch.at(now))).expect("json");
        let id = current.tournament_id;
        let set_time = json!({"op": "replace", "path": "/serverTime", "value": now});
        assert_eq!(
            ack,
            json!({"ok": true, "patch": {"tournamentId": id, "fromVersion": 3, "version": 3, "ops": [set_time]}})
        );
    }

    #[test]
    fn a_join_patch_turns_the_state_held_into_the_current_one_as_of_the_answer() {
        let before = seated(7);
        let mut after = seated(9);
        after.server_time = before.server_time + chrono::TimeDelta::seconds(5);
        after.tables[1].seats.remove(3);
        after.remaining = 17;
        let patch = JoinPatch::across(&before, &after).expect("json").expect("smaller than the state");
        let now = after.server_time + chrono::TimeDelta::minutes(20);
        let wire = serde_json::to_value(patch.at(now)).expect("json");
        assert_eq!((wire["fromVersion"].clone(), wire["version"].clone()), (json!(7), json!(9)));
        let ops: json_patch::Patch = serde_json::from_value(wire["ops"].clone()).expect("JSON Patch operations");
        let mut applied = serde_json::to_value(&before).expect("json");
        json_patch::patch(&mut applied, &ops).expect("the operations apply");
        let as_of_now = LiveState { server_time: now, ..after.clone() };
        assert_eq!(applied, serde_json::to_value(&as_of_now).expect("json"), "the current state, as of the answer");
        let times = wire["ops"].as_array().expect("ops").iter().filter(|op| op["path"] == "/serverTime").count();
        assert_eq!(times, 1, "the time is set once, last: {wire}");
        assert!(patch.bytes() >= wire.to_string().len() - 80, "{} bytes kept", patch.bytes());
    }

    #[test]
    fn a_join_may_say_the_version_it_holds() {
        let id = Uuid::now_v7();
        let again = RoomRequest::read(json!({"tournamentId": id, "compact": true, "version": 41})).expect("parses");
        assert_eq!(again.version, Some(41));
        assert_eq!(RoomRequest::read(json!({"tournamentId": id})).expect("parses").version, None);
        for version in [json!("41"), json!(4.5), json!([41])] {
            let refused =
                RoomRequest::read(json!({"tournamentId": id, "version": version})).expect_err("a number or nothing");
            assert_eq!(refused.field, "version", "{refused:?}");
            assert!(refused.problem.starts_with("must be a whole number"), "{refused:?}");
        }
        let compact = RoomRequest::read(json!({"tournamentId": id, "compact": "yes"})).expect_err("a boolean");
        assert_eq!(compact, FieldProblem::new("compact", "must be true or false"));
    }

    #[test]
    fn a_patch_across_versions_goes_forward_within_one_tournament() {
        assert!(StatePatch::across(&state(4), &state(3)).is_none(), "never backwards");
        assert!(StatePatch::between(&state(3), &state(5)).is_none(), "an event follows the version before");
        let mut other = state(5);
        other.tournament_id = Uuid::now_v7();
        assert!(StatePatch::across(&state(3), &other).is_none(), "another tournament");
    }

    #[test]
    fn event_names_are_the_contracts() {
        assert_eq!(ClientEvent::ALL.map(ClientEvent::name), ["join", "leave", "auth"]);
        let server: Vec<&str> = ServerEventKind::ALL.iter().map(|kind| kind.name()).collect();
        assert_eq!(server, ["state", "clock", "patch", "level", "announcement", "expired"]);
        assert_eq!(ConnectRefused::Unauthorized.to_string(), "UNAUTHORIZED");
        assert_eq!(ConnectRefused::RateLimited.to_string(), "RATE_LIMITED");
        assert_eq!(room(Uuid::nil()), "tournament:00000000-0000-0000-0000-000000000000");
        assert_eq!(compact_room(Uuid::nil()), "tournament:00000000-0000-0000-0000-000000000000:compact");
        let id = Uuid::new_v4();
        assert_eq!(tournament_of_room(&room(id)), Some(id));
        assert_eq!(tournament_of_room(&compact_room(id)), Some(id));
        assert_eq!(tournament_of_room(&user_room(id)), None);
        assert_eq!(tournament_of_room("tournament:nonsense"), None);
        assert_eq!(user_room(Uuid::nil()), "user:00000000-0000-0000-0000-000000000000");
    }
}
