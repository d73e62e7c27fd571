//! A tournament's start, in one transaction: the roster fixed, the players seated and told,
//! the no-shows struck, the clock set going.

use std::collections::HashMap;

use chrono::{DateTime, Utc};
use floor_actors::live::Seat;
use floor_actors::rules::seating::{seat_players, table_count};
use floor_entities::enums::{RegistrationSource, RegistrationStatus, StrikeReason, TournamentStatus};
use floor_entities::{blind_templates, registrations, table_seats, tournaments};
use sea_orm::sea_query::Expr;
use sea_orm::{ColumnTrait, ConnectionTrait, DatabaseTransaction, EntityTrait, QueryFilter, QueryOrder, Set};
use serde_json::json;
use uuid::Uuid;

use super::live_version::advance_live_version;
use crate::domain::notifications::{Journaled, Notifier};
use crate::domain::tournaments::{display_title, lock, notices};
use crate::domain::{audit, strikes};
use crate::infra::db;
use crate::infra::error::{AppError, AppResult, ErrorCode};

/// Starts a tournament, in one transaction (the actor calls it, then publishes): the
/// checked-in players are shuffled and seated, everyone still `registered` becomes `no_show`
/// with a strike, the waitlist is closed, chips in play and the clock are set, and the
/// tournament moves to `running`. Each seated player with an account is told their seat
/// (`tournament.seated`): journaled in `tx`, whose caller commits it and then pushes what this
/// returns.
pub async fn start(
    tx: &DatabaseTransaction,
    notifier: &Notifier,
    tournament_id: Uuid,
    by: Uuid,
    now: DateTime<Utc>,
) -> AppResult<Vec<Journaled>> {
    let tournament = lock_to_start(tx, tournament_id).await?;
    let checked_in = checked_in_players(tx, tournament_id).await?;
    let template = blind_templates::Entity::find_by_id(tournament.blind_template_id)
        .one(tx)
        .await?
        .ok_or_else(|| AppError::Internal(anyhow::anyhow!("tournament {tournament_id} lost its blind template")))?;
    let told = seat_and_tell(tx, notifier, tournament_id, &checked_in, now).await?;
    let no_shows = strike_no_shows(tx, tournament_id, now).await?;
    // The roster is fixed from here: nobody waits for a seat any more.
    let closed_waitlist =
        set_status(tx, tournament_id, RegistrationStatus::Waitlist, RegistrationStatus::Cancelled, now).await?;
    let players = i64::try_from(checked_in.len()).unwrap_or(i64::MAX);
    set_running(tx, &tournament, &template, players, now).await?;
    audit::record(
        tx,
        Some(by),
        "tournament.start",
        ("tournament", tournament_id.to_string()),
        json!({
            "players": players,
            "tables": table_count(checked_in.len()),
            "noShows": no_shows,
            "waitlistClosed": closed_waitlist,
        }),
    )
    .await?;
    Ok(told)
}

/// Locks the tournament for its start, which only a tournament in registration may take.
async fn lock_to_start(tx: &DatabaseTransaction, tournament_id: Uuid) -> AppResult<tournaments::Model> {
    let tournament = lock(tx, tournament_id).await?;
    match tournament.status {
        TournamentStatus::Registration => Ok(tournament),
        TournamentStatus::Running | TournamentStatus::Finished => Err(already_started()),
        TournamentStatus::Cancelled | TournamentStatus::Announced => {
            Err(AppError::new(ErrorCode::InvalidStatus, "only a tournament in registration can start"))
        }
    }
}

/// The checked-in registrations, oldest first: at least two, or the tournament cannot start.
async fn checked_in_players(tx: &DatabaseTransaction, tournament_id: Uuid) -> AppResult<Vec<registrations::Model>> {
    let checked_in = registrations::Entity::find()
        .filter(registrations::Column::TournamentId.eq(tournament_id))
        .filter(registrations::Column::Status.eq(RegistrationStatus::CheckedIn))
        .order_by_asc(registrations::Column::CreatedAt)
        .order_by_asc(registrations::Column::Id)
        .all(tx)
        .await?;
    if checked_in.len() < 2 {
        return Err(AppError::new(ErrorCode::NotEnoughPlayers, "at least two checked-in players are needed to start"));
    }
    Ok(checked_in)
}

/// Shuffles the `checked_in` players onto their seats and journals, for each with an account,
/// the notice of their seat: the notices to push once committed.
async fn seat_and_tell(
    tx: &DatabaseTransaction,
    notifier: &Notifier,
    tournament_id: Uuid,
    checked_in: &[registrations::Model],
    now: DateTime<Utc>,
) -> AppResult<Vec<Journaled>> {
    let players: Vec<Uuid> = checked_in.iter().map(|registration| registration.id).collect();
    let seating = seat_players(&players, &mut rand::rng());
    let seats: Vec<table_seats::ActiveModel> = seating
        .iter()
        .map(|assignment| table_seats::ActiveModel {
            id: Set(Uuid::now_v7()),
            tournament_id: Set(tournament_id),
            registration_id: Set(assignment.player),
            table_no: Set(assignment.table_no),
            seat_no: Set(assignment.seat_no),
            active: Set(true),
            created_at: Set(now),
            updated_at: Set(now),
        })
        .collect();
    db::insert_chunked(tx, seats).await?;
    let accounts: HashMap<Uuid, Uuid> =
        checked_in.iter().filter_map(|registration| Some((registration.id, registration.user_id?))).collect();
    let title = display_title(tx, tournament_id).await?;
    let mut told = Vec::new();
    for assignment in &seating {
        if let Some(&user_id) = accounts.get(&assignment.player) {
            let seat = Seat { table_no: assignment.table_no, seat_no: assignment.seat_no };
            let notice = notices::seated(tournament_id, &title, user_id, assignment.player, seat);
            told.push(notifier.journal(tx, notice).await?);
        }
    }
    Ok(told)
}

/// Makes everyone still `registered` a no-show, striking those who registered themselves;
/// returns how many they were.
async fn strike_no_shows(tx: &DatabaseTransaction, tournament_id: Uuid, now: DateTime<Utc>) -> AppResult<usize> {
    // In player order, as every transaction that locks several profiles takes them.
    let no_shows = registrations::Entity::find()
        .filter(registrations::Column::TournamentId.eq(tournament_id))
        .filter(registrations::Column::Status.eq(RegistrationStatus::Registered))
        .order_by_asc(registrations::Column::UserId)
        .all(tx)
        .await?;
    set_status(tx, tournament_id, RegistrationStatus::Registered, RegistrationStatus::NoShow, now).await?;
    for registration in &no_shows {
        // A person is struck only for a place they asked for themselves: a walk-in left
        // `registered` (by data older than walk-ins being cancelled when taken back) is not theirs.
        if let (Some(user_id), RegistrationSource::App) = (registration.user_id, registration.source) {
            strikes::issue(tx, user_id, tournament_id, registration.id, StrikeReason::NoShow, now).await?;
        }
    }
    Ok(no_shows.len())
}

/// Moves the tournament to `running` with its clock at the first level and the chips of
/// `players` in play, on the picture the start was decided on; another start got there first
/// when that picture has moved on.
async fn set_running(
    tx: &DatabaseTransaction,
    tournament: &tournaments::Model,
    template: &blind_templates::Model,
    players: i64,
    now: DateTime<Utc>,
) -> AppResult<()> {
    let running = tournaments::Entity::update_many()
        .col_expr(tournaments::Column::Status, Expr::value(TournamentStatus::Running))
        .col_expr(tournaments::Column::StartedAt, Expr::value(now))
        .col_expr(tournaments::Column::ClockLevels, Expr::value(template.levels.clone()))
        .col_expr(tournaments::Column::CurrentLevelIdx, Expr::value(0))
        .col_expr(tournaments::Column::LevelStartedAt, Expr::value(now))
        .col_expr(tournaments::Column::LastCommandAt, Expr::value(now))
        .col_expr(tournaments::Column::PausedAt, Expr::value(Option::<DateTime<Utc>>::None))
        .col_expr(tournaments::Column::ChipsInPlay, Expr::value(template.starting_stack.saturating_mul(players)));
    let decided_on = (tournament.live_version, TournamentStatus::Registration);
    if !advance_live_version(tx, tournament.id, decided_on, running, now).await? {
        return Err(already_started());
    }
    Ok(())
}

/// The refusal of a start that another start (or the status) got ahead of.
fn already_started() -> AppError {
    AppError::new(ErrorCode::TournamentAlreadyStarted, "the tournament has already started")
}

/// Moves every registration of the tournament in `from` to `to`; returns how many moved.
async fn set_status(
    conn: &impl ConnectionTrait,
    tournament_id: Uuid,
    from: RegistrationStatus,
    to: RegistrationStatus,
    now: DateTime<Utc>,
) -> AppResult<u64> {
    let mut update = registrations::Entity::update_many()
        .col_expr(registrations::Column::Status, Expr::value(to))
        .col_expr(registrations::Column::UpdatedAt, Expr::value(now));
    if to == RegistrationStatus::Cancelled {
        update = update.col_expr(registrations::Column::CancelledAt, Expr::value(now));
    }
    let moved = update
        .filter(registrations::Column::TournamentId.eq(tournament_id))
        .filter(registrations::Column::Status.eq(from))
        .exec(conn)
        .await?;
    Ok(moved.rows_affected)
}
