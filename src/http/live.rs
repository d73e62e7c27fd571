//! The live game day over HTTP: the public LiveState, and the club's commands (start, clock,
//! eliminations, undo, reorder, reseat, confirmation), each run by the tournament's actor;
//! beyond the specification, a table-break proposal and a batch of moves.

use std::collections::HashMap;
use std::time::Instant;

use axum::extract::State;
use axum::http::header::{CACHE_CONTROL, CONTENT_ENCODING, CONTENT_TYPE, ETAG, IF_NONE_MATCH, VARY};
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use chrono::{DateTime, Utc};
use floor_actors::live::{Command, LiveState, Order, Outcome, Seat, Timed};
use floor_actors::rules::balance::Move;
use floor_actors::rules::clock::Direction;
use floor_actors::rules::table_break::{self, TableBreak};
use floor_entities::enums::TournamentStatus;
use floor_entities::tournaments;
use sea_orm::EntityTrait;
use serde::{Deserialize, Serialize};
use tracing::Instrument as _;
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;
use uuid::Uuid;

use super::extract::{AuthUser, Json, Path, TournamentAccess, authorize_in_club, club};
use super::views::ItemList;
use super::{cached, etag, idempotency};
use crate::domain::tournaments::results::{ResultView, tournament_results};
use crate::http::state::AppState;
use crate::infra::error::{AppError, AppResult, ErrorBody, ErrorCode, ErrorDetails};

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(get_live_state))
        .routes(routes!(start_tournament))
        .routes(routes!(pause_clock))
        .routes(routes!(resume_clock))
        .routes(routes!(change_level))
        .routes(routes!(eliminate_player))
        .routes(routes!(undo_elimination))
        .routes(routes!(reorder_eliminations))
        .routes(routes!(reseat_player))
        .routes(routes!(propose_table_break))
        .routes(routes!(reseat_batch))
        .routes(routes!(confirm_results))
}

/// The LiveState as of now: `serverTime` is the moment of the answer.
pub(super) fn current(state: &LiveState) -> LiveState {
    LiveState { server_time: Utc::now(), ..state.clone() }
}

/// The weak validator of a LiveState: its version names every change.
fn etag(state: &LiveState) -> String {
    format!("W/\"{}-{}\"", state.tournament_id, state.version)
}

/// The newest version of `tournament_id` an `If-None-Match` names by its [`etag()`]: what the
/// client has seen, which its read must not go back from.
fn seen_in(headers: &HeaderMap, tournament_id: Uuid) -> Option<i64> {
    let sent = headers.get(IF_NONE_MATCH)?.to_str().ok()?;
    sent.split(',')
        .filter_map(|tag| {
            let opaque = tag.trim().trim_start_matches("W/").strip_prefix('"')?.strip_suffix('"')?;
            let (id, version) = opaque.rsplit_once('-')?;
            (id.parse::<Uuid>().ok()? == tournament_id).then(|| version.parse::<i64>().ok()).flatten()
        })
        .max()
}

/// The live picture of a tournament, for anyone: clock, tables, eliminations. Read from
/// the tournament's actor, never from the database, and serialised once per change (each
/// answer stamps its own `serverTime`); `If-None-Match` with the last `ETag` gives `304`
/// while nothing changed. Never older than the version that tag names: a node that cannot
/// catch up with it within half a second (its database out of reach) answers `503`, to be
/// asked again.
#[utoipa::path(get, path = "/tournaments/{id}/live", tag = "live",
    params(("id" = Uuid, Path)),
    responses(
        (status = 200, body = LiveState, headers(("ETag" = String))),
        (status = 304, description = "nothing changed since the `If-None-Match` tag"),
        (status = 404, description = "NOT_FOUND", body = ErrorBody),
        (status = 503, description = "SERVICE_UNAVAILABLE: this node has not caught up with the version the `If-None-Match` tag names", body = ErrorBody),
    ))]
async fn get_live_state(State(app): State<AppState>, Path(id): Path<Uuid>, headers: HeaderMap) -> AppResult<Response> {
    // An unknown id is answered before any actor may start for it.
    if !app.known_tournaments.exists(id).await? {
        return Err(AppError::not_found("tournament"));
    }
    let snapshot = app.live.snapshot_since(id, seen_in(&headers, id)).await?;
    let tag = etag(&snapshot);
    let tag_header = HeaderValue::from_str(&tag).map_err(|err| AppError::Internal(err.into()))?;
    let cache = [(CACHE_CONTROL, HeaderValue::from_static("no-cache")), (ETAG, tag_header)];
    if etag::unchanged(&headers, &tag) {
        return Ok((StatusCode::NOT_MODIFIED, cache).into_response());
    }
    let json = [(CONTENT_TYPE, HeaderValue::from_static("application/json"))];
    let vary = [(VARY, HeaderValue::from_static("accept-encoding"))];
    let internal = |err: serde_json::Error| AppError::Internal(err.into());
    if cached::takes_gzip(&headers) {
        // Compressed once per change, not per answer (the API's compression leaves an answer
        // that already has its encoding as it is).
        let body = app.live_json.render_gzip(&snapshot, Utc::now()).map_err(internal)?;
        let gzip = [(CONTENT_ENCODING, HeaderValue::from_static("gzip"))];
        return Ok((cache, json, vary, gzip, body).into_response());
    }
    let body = app.live_json.render(&snapshot, Utc::now()).map_err(internal)?;
    Ok((cache, json, vary, body).into_response())
}

/// Runs one command through the tournament's actor and answers its LiveState.
async fn run(
    app: &AppState,
    tournament_id: Uuid,
    user: &AuthUser,
    command: impl Into<Timed>,
) -> AppResult<Json<LiveState>> {
    let outcome = command_actor(app, tournament_id, Order::One(command.into()), user.id()).await?;
    Ok(Json(current(&outcome.state)))
}

/// Hands `order` to the tournament's actor, counted and timed in the metrics by its name
/// and outcome (`ok` or the contract code it was refused with). A single command carries the
/// request's `Idempotency-Key`, if any; its answer may then be the record of an earlier
/// sending, a refusal as it was. A queue's answers are its commands' own, each told in its
/// result: a refusal kept for one of them is never the whole request's. A command in conflict
/// with one applied meanwhile is answered with the state now, to show the organizer what
/// happened.
///
/// The command runs detached from the request: a caller that hangs up changes nothing of a
/// command under way, whose key, kept with it, answers the next sending.
pub(super) async fn command_actor(app: &AppState, tournament_id: Uuid, order: Order, by: Uuid) -> AppResult<Outcome> {
    let order = match order {
        Order::One(timed) if timed.key.is_none() => Order::One(timed.keyed(idempotency::sent_key())),
        order => order,
    };
    let single = matches!(order, Order::One(_));
    let name = order.name();
    let started = Instant::now();
    let live = app.live.clone();
    let detached = tokio::spawn(async move { live.command(tournament_id, order, by).await }.in_current_span());
    let outcome = detached
        .await
        .map_err(|err| AppError::Internal(anyhow::anyhow!("a live command's task failed: {err}")))
        .and_then(|outcome| outcome.map_err(AppError::from))
        .and_then(|outcome| if single { replayed_refusal(outcome) } else { Ok(outcome) });
    let label = outcome.as_ref().map_or_else(|err| err.code().as_str(), |_| "ok");
    app.metrics.live_command(name, label, started.elapsed());
    match outcome {
        // The refusal is what is known: the state it carries is a courtesy, left out when it
        // cannot be read now rather than turning a sure refusal into an unknown.
        Err(AppError::Api { code: ErrorCode::ConflictingChange, message, .. }) => {
            let details = app
                .live
                .snapshot(tournament_id)
                .await
                .ok()
                .map(|state| ErrorDetails::State { state: Box::new(current(&state)) });
            Err(AppError::Api { code: ErrorCode::ConflictingChange, message, details })
        }
        outcome => outcome,
    }
}

/// A single command answered by the record of an earlier sending: marked so, and a refusal
/// kept then is the error now.
fn replayed_refusal(outcome: Outcome) -> AppResult<Outcome> {
    if !outcome.replayed() {
        return Ok(outcome);
    }
    idempotency::mark_replayed();
    match outcome.answers.first().and_then(|answer| answer.recorded.error()) {
        Some(err) => Err(err.into()),
        None => Ok(outcome),
    }
}

/// When a command made offline happened (see "Commands made offline" in the contract).
#[derive(Default, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub(super) struct WhenMade {
    /// RFC 3339: the organizer device's clock corrected by the server time it last saw. The
    /// command is applied as of that moment; at most 5 s ahead, at most 6 hours old, and not
    /// before a command already applied to the tournament (`409 CONFLICTING_CHANGE`).
    pub(super) occurred_at: Option<DateTime<Utc>>,
}

impl WhenMade {
    /// `command`, made when the optional body says.
    fn of(body: Option<Json<WhenMade>>, command: Command) -> Timed {
        Timed::at(command, body.and_then(|Json(body)| body.occurred_at))
    }
}

/// Starts the tournament in one operation: the checked-in players are shuffled and seated
/// (9 a table), the players still `registered` become no-shows with a strike, the waitlist
/// closes, chips in play are counted and the clock starts at the first segment.
#[utoipa::path(post, path = "/tournaments/{id}/start", tag = "live", security(("bearer" = [])),
    extensions(("x-idempotency-key" = json!(true))),
    params(("id" = Uuid, Path)),
    responses(
        (status = 200, body = LiveState),
        (status = 401, description = "UNAUTHORIZED", body = ErrorBody),
        (status = 403, description = "FORBIDDEN: not an owner or td of the club", body = ErrorBody),
        (status = 404, description = "NOT_FOUND", body = ErrorBody),
        (status = 409, description = "NOT_ENOUGH_PLAYERS (fewer than 2 checked in), TOURNAMENT_ALREADY_STARTED, INVALID_STATUS (cancelled)", body = ErrorBody),
    ))]
async fn start_tournament(
    State(app): State<AppState>,
    access: TournamentAccess<club::Staff>,
) -> AppResult<Json<LiveState>> {
    run(&app, access.tournament.id, &access.user, Command::Start).await
}

/// Pauses the clock; pausing a paused clock changes nothing (same version). With
/// `occurredAt`, paused as of that moment (the level then running, `pausedAt` then).
#[utoipa::path(post, path = "/tournaments/{id}/pause", tag = "live", security(("bearer" = [])),
    extensions(("x-idempotency-key" = json!(true))),
    params(("id" = Uuid, Path)),
    request_body = Option<WhenMade>,
    responses(
        (status = 200, body = LiveState),
        (status = 400, description = "VALIDATION_ERROR: a field that does not match its schema, or `occurredAt` more than 5 s ahead or more than 6 hours old", body = ErrorBody),
        (status = 401, description = "UNAUTHORIZED", body = ErrorBody),
        (status = 403, description = "FORBIDDEN", body = ErrorBody),
        (status = 404, description = "NOT_FOUND", body = ErrorBody),
        (status = 409, description = "TOURNAMENT_NOT_RUNNING, CONFLICTING_CHANGE (`occurredAt` before a command already applied; `details.state` is the state now)", body = ErrorBody),
    ))]
async fn pause_clock(
    State(app): State<AppState>,
    access: TournamentAccess<club::Staff>,
    body: Option<Json<WhenMade>>,
) -> AppResult<Json<LiveState>> {
    run(&app, access.tournament.id, &access.user, WhenMade::of(body, Command::Pause)).await
}

/// Resumes the clock (paused time does not count); resuming a running clock changes nothing.
/// With `occurredAt`, resumed as of that moment, and run on to now.
#[utoipa::path(post, path = "/tournaments/{id}/resume", tag = "live", security(("bearer" = [])),
    extensions(("x-idempotency-key" = json!(true))),
    params(("id" = Uuid, Path)),
    request_body = Option<WhenMade>,
    responses(
        (status = 200, body = LiveState),
        (status = 400, description = "VALIDATION_ERROR: a field that does not match its schema, or `occurredAt` more than 5 s ahead or more than 6 hours old", body = ErrorBody),
        (status = 401, description = "UNAUTHORIZED", body = ErrorBody),
        (status = 403, description = "FORBIDDEN", body = ErrorBody),
        (status = 404, description = "NOT_FOUND", body = ErrorBody),
        (status = 409, description = "TOURNAMENT_NOT_RUNNING, CONFLICTING_CHANGE (`occurredAt` before a command already applied; `details.state` is the state now)", body = ErrorBody),
    ))]
async fn resume_clock(
    State(app): State<AppState>,
    access: TournamentAccess<club::Staff>,
    body: Option<Json<WhenMade>>,
) -> AppResult<Json<LiveState>> {
    run(&app, access.tournament.id, &access.user, WhenMade::of(body, Command::Resume)).await
}

#[derive(Clone, Copy, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
enum LevelDirection {
    Next,
    Prev,
}

#[derive(Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub(super) struct LevelChange {
    direction: LevelDirection,
    /// When it happened, if made offline (see `pause`).
    occurred_at: Option<DateTime<Utc>>,
}

impl LevelChange {
    pub(super) fn command(&self) -> Command {
        Command::Level(match self.direction {
            LevelDirection::Next => Direction::Next,
            LevelDirection::Prev => Direction::Prev,
        })
    }
}

/// Moves the clock exactly one segment. While paused it stays paused and the new segment
/// starts at the moment of the pause.
#[utoipa::path(post, path = "/tournaments/{id}/level", tag = "live", security(("bearer" = [])),
    extensions(("x-idempotency-key" = json!(true))),
    params(("id" = Uuid, Path)),
    request_body = LevelChange,
    responses(
        (status = 200, body = LiveState),
        (status = 400, description = "VALIDATION_ERROR", body = ErrorBody),
        (status = 401, description = "UNAUTHORIZED", body = ErrorBody),
        (status = 403, description = "FORBIDDEN", body = ErrorBody),
        (status = 404, description = "NOT_FOUND", body = ErrorBody),
        (status = 409, description = "INVALID_LEVEL (no segment that way), TOURNAMENT_NOT_RUNNING, CONFLICTING_CHANGE (`occurredAt` before a command already applied; `details.state` is the state now)", body = ErrorBody),
    ))]
async fn change_level(
    State(app): State<AppState>,
    access: TournamentAccess<club::Staff>,
    Json(body): Json<LevelChange>,
) -> AppResult<Json<LiveState>> {
    let timed = Timed::at(body.command(), body.occurred_at);
    run(&app, access.tournament.id, &access.user, timed).await
}

#[derive(Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
struct EliminationRequest {
    tournament_id: Uuid,
    registration_id: Uuid,
    /// When it happened, if made offline: the elimination is stamped then, and keeps its
    /// place in the order of arrival.
    occurred_at: Option<DateTime<Utc>>,
}

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
struct EliminationRecord {
    registration_id: Uuid,
    /// Players still in before this elimination.
    place: i32,
    eliminated_at: DateTime<Utc>,
}

/// An elimination with the hint for balancing the tables.
#[derive(Serialize, ToSchema)]
struct EliminationOutcome {
    elimination: EliminationRecord,
    /// `null`, `{kind: "move", moves: [m]}` or `{kind: "finalTable", moves: [m, …]}` with
    /// `m = {registrationId, fromTable, fromSeat, toTable, toSeat}`. Nobody is moved.
    #[schema(value_type = Option<Object>)]
    balance: Option<floor_actors::rules::balance::BalanceHint<Uuid>>,
    state: LiveState,
}

/// Records that a player is out: place = players still in before it. The answer carries
/// the balance hint; the server moves nobody.
#[utoipa::path(post, path = "/eliminations", tag = "live", security(("bearer" = [])),
    extensions(("x-idempotency-key" = json!(true))),
    request_body = EliminationRequest,
    responses(
        (status = 200, body = EliminationOutcome),
        (status = 400, description = "VALIDATION_ERROR", body = ErrorBody),
        (status = 401, description = "UNAUTHORIZED", body = ErrorBody),
        (status = 403, description = "FORBIDDEN", body = ErrorBody),
        (status = 404, description = "NOT_FOUND: no such tournament, or no seated player with this registration", body = ErrorBody),
        (status = 409, description = "ALREADY_ELIMINATED, INVALID_STATUS (the last player in), TOURNAMENT_NOT_RUNNING, CONFLICTING_CHANGE (`occurredAt` before a command already applied; `details.state` is the state now)", body = ErrorBody),
    ))]
async fn eliminate_player(
    State(app): State<AppState>,
    user: AuthUser,
    Json(body): Json<EliminationRequest>,
) -> AppResult<Json<EliminationOutcome>> {
    let tournament = tournaments::Entity::find_by_id(body.tournament_id)
        .one(&app.db)
        .await?
        .ok_or_else(|| AppError::not_found("tournament"))?;
    authorize_in_club::<club::Staff>(&app, &user, tournament.organizer_id).await?;
    let timed = Timed::at(Command::Eliminate(body.registration_id), body.occurred_at);
    let outcome = command_actor(&app, tournament.id, Order::One(timed), user.id()).await?;
    let elimination = match outcome.elimination {
        Some((elimination, balance)) => Some((
            EliminationRecord {
                registration_id: elimination.registration_id,
                place: elimination.place,
                eliminated_at: elimination.eliminated_at,
            },
            balance,
        )),
        // A replay whose record names no elimination (kept by an older version): the
        // elimination as the state shows it.
        None => outcome.state.eliminations.iter().find(|out| out.registration_id == body.registration_id).map(|out| {
            let record = EliminationRecord {
                registration_id: out.registration_id,
                place: out.place,
                eliminated_at: out.eliminated_at,
            };
            (record, None)
        }),
    };
    let (elimination, balance) =
        elimination.ok_or_else(|| AppError::Internal(anyhow::anyhow!("an elimination answered without its record")))?;
    Ok(Json(EliminationOutcome { elimination, balance, state: current(&outcome.state) }))
}

/// Cancels the last elimination: the player returns to the old seat, or when it is taken
/// to the first free seat of the same table, else of the lowest-numbered table with room.
#[utoipa::path(post, path = "/tournaments/{id}/eliminations/undo", tag = "live", security(("bearer" = [])),
    extensions(("x-idempotency-key" = json!(true))),
    params(("id" = Uuid, Path)),
    request_body = Option<WhenMade>,
    responses(
        (status = 200, body = LiveState),
        (status = 400, description = "VALIDATION_ERROR: a field that does not match its schema, or `occurredAt` more than 5 s ahead or more than 6 hours old", body = ErrorBody),
        (status = 401, description = "UNAUTHORIZED", body = ErrorBody),
        (status = 403, description = "FORBIDDEN", body = ErrorBody),
        (status = 404, description = "NOT_FOUND", body = ErrorBody),
        (status = 409, description = "NOTHING_TO_UNDO, TOURNAMENT_NOT_RUNNING, CONFLICTING_CHANGE (`occurredAt` before a command already applied; `details.state` is the state now)", body = ErrorBody),
    ))]
async fn undo_elimination(
    State(app): State<AppState>,
    access: TournamentAccess<club::Staff>,
    body: Option<Json<WhenMade>>,
) -> AppResult<Json<LiveState>> {
    run(&app, access.tournament.id, &access.user, WhenMade::of(body, Command::Undo)).await
}

#[derive(Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
struct ReorderRequest {
    /// Two or more eliminated players, first = eliminated earliest.
    #[schema(min_items = 2)]
    registration_ids: Vec<Uuid>,
}

/// Hands the listed players' elimination times, sorted, out in the given order (first =
/// eliminated earliest); the set of places stays the same.
#[utoipa::path(post, path = "/tournaments/{id}/eliminations/reorder", tag = "live", security(("bearer" = [])),
    extensions(("x-idempotency-key" = json!(true))),
    params(("id" = Uuid, Path)),
    request_body = ReorderRequest,
    responses(
        (status = 200, body = LiveState),
        (status = 400, description = "VALIDATION_ERROR: fewer than two ids, or one twice", body = ErrorBody),
        (status = 401, description = "UNAUTHORIZED", body = ErrorBody),
        (status = 403, description = "FORBIDDEN", body = ErrorBody),
        (status = 404, description = "NOT_FOUND", body = ErrorBody),
        (status = 409, description = "INVALID_STATUS (a player still in), TOURNAMENT_NOT_RUNNING", body = ErrorBody),
    ))]
async fn reorder_eliminations(
    State(app): State<AppState>,
    access: TournamentAccess<club::Staff>,
    Json(body): Json<ReorderRequest>,
) -> AppResult<Json<LiveState>> {
    run(&app, access.tournament.id, &access.user, Command::Reorder(body.registration_ids)).await
}

#[derive(Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub(super) struct ReseatRequest {
    registration_id: Uuid,
    /// 1 up to the tables the tournament has.
    #[schema(minimum = 1)]
    table_no: i32,
    /// 1 to 9.
    #[schema(minimum = 1, maximum = 9)]
    seat_no: i32,
    /// When it happened, if made offline (see `pause`).
    occurred_at: Option<DateTime<Utc>>,
}

impl ReseatRequest {
    pub(super) fn command(&self) -> Command {
        Command::Reseat(self.registration_id, Seat { table_no: self.table_no, seat_no: self.seat_no })
    }
}

// The seats' `maximum` in the schemas above and below is a literal: it must stay the rule's.
const _: () = assert!(floor_actors::rules::seating::SEATS_PER_TABLE == 9);

/// Moves a player still in to a free seat (the club's own balancing).
#[utoipa::path(post, path = "/tournaments/{id}/reseat", tag = "live", security(("bearer" = [])),
    extensions(("x-idempotency-key" = json!(true))),
    params(("id" = Uuid, Path)),
    request_body = ReseatRequest,
    responses(
        (status = 200, body = LiveState),
        (status = 400, description = "VALIDATION_ERROR: no such table or seat", body = ErrorBody),
        (status = 401, description = "UNAUTHORIZED", body = ErrorBody),
        (status = 403, description = "FORBIDDEN", body = ErrorBody),
        (status = 404, description = "NOT_FOUND", body = ErrorBody),
        (status = 409, description = "SEAT_TAKEN, ALREADY_ELIMINATED, TOURNAMENT_NOT_RUNNING, CONFLICTING_CHANGE (`occurredAt` before a command already applied; `details.state` is the state now)", body = ErrorBody),
    ))]
async fn reseat_player(
    State(app): State<AppState>,
    access: TournamentAccess<club::Staff>,
    Json(body): Json<ReseatRequest>,
) -> AppResult<Json<LiveState>> {
    let timed = Timed::at(body.command(), body.occurred_at);
    run(&app, access.tournament.id, &access.user, timed).await
}

/// One move of a player, with the names the floor calls people by.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
struct ProposedMove {
    registration_id: Uuid,
    name: String,
    from_table: i32,
    from_seat: i32,
    to_table: i32,
    to_seat: i32,
}

/// Which table to break, and where its players go.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
struct TableBreakProposal {
    /// `break`: break `tableNo` with `moves`; `oneTable`: nothing to break; `noRoom`: the
    /// other tables lack free seats for the smallest table's players (`tableNo`, no moves).
    #[schema(pattern = "^(break|oneTable|noRoom)$")]
    kind: &'static str,
    table_no: Option<i32>,
    /// In the broken table's seat order; send them to `reseat-batch` as they are, or changed.
    moves: Vec<ProposedMove>,
    /// The LiveState version the proposal was made on.
    version: i64,
}

/// Proposes which table to break (the one with the fewest players, ties to the highest
/// number) and where each of its players goes (the then-emptiest other table, ties to the
/// lowest number, its lowest free seat). Moves nobody; the balance hint after an elimination
/// stays as the specification defines it.
#[utoipa::path(get, path = "/tournaments/{id}/table-break", tags = ["live", "extension"], security(("bearer" = [])),
    params(("id" = Uuid, Path)),
    responses(
        (status = 200, body = TableBreakProposal),
        (status = 401, description = "UNAUTHORIZED", body = ErrorBody),
        (status = 403, description = "FORBIDDEN: not an owner or td of the club", body = ErrorBody),
        (status = 404, description = "NOT_FOUND", body = ErrorBody),
        (status = 409, description = "TOURNAMENT_NOT_RUNNING", body = ErrorBody),
    ))]
async fn propose_table_break(
    State(app): State<AppState>,
    access: TournamentAccess<club::Staff>,
) -> AppResult<Json<TableBreakProposal>> {
    let snapshot = app.live.snapshot(access.tournament.id).await?;
    if snapshot.status != TournamentStatus::Running {
        return Err(AppError::new(ErrorCode::TournamentNotRunning, "the tournament is not running"));
    }
    let names: HashMap<Uuid, &str> = snapshot
        .tables
        .iter()
        .flat_map(|table| table.seats.iter().map(|seat| (seat.registration_id, seat.name.as_str())))
        .collect();
    let named = |moves: Vec<Move<Uuid>>| {
        moves
            .into_iter()
            .map(|m| ProposedMove {
                registration_id: m.registration_id,
                name: names.get(&m.registration_id).copied().unwrap_or_default().to_owned(),
                from_table: m.from_table,
                from_seat: m.from_seat,
                to_table: m.to_table,
                to_seat: m.to_seat,
            })
            .collect()
    };
    let (kind, table_no, moves) = match table_break::propose_table_break(&snapshot.seated()) {
        TableBreak::Break { table_no, moves } => ("break", Some(table_no), named(moves)),
        TableBreak::OneTable => ("oneTable", None, Vec::new()),
        TableBreak::NoRoom { table_no, .. } => ("noRoom", Some(table_no), Vec::new()),
    };
    Ok(Json(TableBreakProposal { kind, table_no, moves, version: snapshot.version }))
}

#[derive(Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
struct BatchMove {
    registration_id: Uuid,
    /// 1 up to the tables the tournament has.
    #[schema(minimum = 1)]
    to_table: i32,
    /// 1 to 9.
    #[schema(minimum = 1, maximum = 9)]
    to_seat: i32,
}

#[derive(Deserialize, ToSchema)]
struct ReseatBatchRequest {
    /// 1 to 100 moves; each player and each destination once (two players may swap).
    #[schema(min_items = 1, max_items = 100)]
    moves: Vec<BatchMove>,
}

/// The most moves one batch may carry: more than any table break needs.
const MAX_BATCH_MOVES: usize = 100;

/// Applies several moves in one actor command: all of them or none, one LiveState version,
/// one audit record; each moved player with an account is told where to go (`seat.moved`).
#[utoipa::path(post, path = "/tournaments/{id}/reseat-batch", tags = ["live", "extension"], security(("bearer" = [])),
    extensions(("x-idempotency-key" = json!(true))),
    params(("id" = Uuid, Path)),
    request_body = ReseatBatchRequest,
    responses(
        (status = 200, body = LiveState),
        (status = 400, description = "VALIDATION_ERROR: no moves, too many, a player or a seat twice, no such table or seat", body = ErrorBody),
        (status = 401, description = "UNAUTHORIZED", body = ErrorBody),
        (status = 403, description = "FORBIDDEN", body = ErrorBody),
        (status = 404, description = "NOT_FOUND: no such tournament, or no seated player with a registration", body = ErrorBody),
        (status = 409, description = "SEAT_TAKEN (by a player who stays), ALREADY_ELIMINATED, TOURNAMENT_NOT_RUNNING", body = ErrorBody),
    ))]
async fn reseat_batch(
    State(app): State<AppState>,
    access: TournamentAccess<club::Staff>,
    Json(body): Json<ReseatBatchRequest>,
) -> AppResult<Json<LiveState>> {
    if body.moves.len() > MAX_BATCH_MOVES {
        return Err(AppError::invalid_field("moves", format!("at most {MAX_BATCH_MOVES} moves")));
    }
    let moves = body
        .moves
        .into_iter()
        .map(|m| (m.registration_id, Seat { table_no: m.to_table, seat_no: m.to_seat }))
        .collect();
    run(&app, access.tournament.id, &access.user, Command::ReseatBatch(moves)).await
}

/// Confirms the results when at most one player is still in: places, season points, xp,
/// level and skill for every participant with an account, a win for the winner, a push
/// `tournament.results` to each, status `finished`. Only the first caller awards.
#[utoipa::path(post, path = "/tournaments/{id}/confirm-results", tag = "live", security(("bearer" = [])),
    extensions(("x-idempotency-key" = json!(true))),
    params(("id" = Uuid, Path)),
    responses(
        (status = 200, body = ItemList<ResultView>, description = "the protocol, by place"),
        (status = 401, description = "UNAUTHORIZED", body = ErrorBody),
        (status = 403, description = "FORBIDDEN", body = ErrorBody),
        (status = 404, description = "NOT_FOUND", body = ErrorBody),
        (status = 409, description = "RESULTS_ALREADY_CONFIRMED, INVALID_STATUS (more than one player in), TOURNAMENT_NOT_RUNNING", body = ErrorBody),
    ))]
async fn confirm_results(
    State(app): State<AppState>,
    access: TournamentAccess<club::Staff>,
) -> AppResult<Json<ItemList<ResultView>>> {
    command_actor(&app, access.tournament.id, Command::ConfirmResults.into(), access.user.id()).await?;
    Ok(Json(ItemList { items: tournament_results(&app.db, access.tournament.id).await? }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn asking(if_none_match: &str) -> HeaderMap {
        let mut headers = HeaderMap::new();
        headers.insert(IF_NONE_MATCH, HeaderValue::from_str(if_none_match).expect("a header"));
        headers
    }

    #[test]
    fn the_version_seen_is_read_from_the_tournament_s_own_tags() {
        let (ours, theirs) = (Uuid::new_v4(), Uuid::new_v4());
        assert_eq!(seen_in(&asking(&format!("W/\"{ours}-41\"")), ours), Some(41));
        assert_eq!(seen_in(&asking(&format!("\"{ours}-7\"")), ours), Some(7), "a strong tag too");
        let several = format!("W/\"{ours}-3\", W/\"{theirs}-99\" , W/\"{ours}-12\"");
        assert_eq!(seen_in(&asking(&several), ours), Some(12), "the newest of ours, not another tournament's");
    }

    #[test]
    fn a_tag_not_of_ours_says_nothing_seen() {
        let ours = Uuid::new_v4();
        for sent in ["*", "W/\"abc\"", "W/\"nonsense-5\"", &format!("W/\"{ours}-x\""), &format!("W/{ours}-5")] {
            assert_eq!(seen_in(&asking(sent), ours), None, "{sent}");
        }
        assert_eq!(seen_in(&HeaderMap::new(), ours), None);
    }
}
