//! The tournament actors' store: the live game read from and written to the database
//! through sea-orm, one transaction per change, each guarded by the tournament's
//! `live_version` so a change decided on a stale game is never written.

use std::collections::HashMap;

use chrono::{DateTime, Utc};
use floor_actors::error::{LiveError, LiveResult};
use floor_actors::live::{Change, Game, LiveStore, Persisted, Player, Seat};
use floor_actors::rules::clock::Clock;
use floor_actors::rules::seating::{seat_players, table_count};
use floor_actors::rules::structure::Segment;
use floor_entities::enums::{RegistrationStatus, StrikeReason, TournamentStatus};
use floor_entities::{blind_templates, guest_players, registrations, table_seats, tournaments, users};
use sea_orm::sea_query::Expr;
use sea_orm::{
    ColumnTrait, ConnectionTrait, DatabaseConnection, EntityTrait, QueryFilter, QueryOrder, QuerySelect, Set,
};
use serde_json::json;
use uuid::Uuid;

use crate::db::{self, find_where_in};
use crate::error::{AppError, AppResult, ErrorCode, OnUniqueViolation};
use crate::notifications::Notifier;
use crate::{audit, strikes, tournaments as tournament_rows};

/// What a player without a name is called on the tables.
const UNNAMED_PLAYER: &str = "Игрок";

/// The database behind every tournament actor.
#[derive(Clone)]
pub struct SeaOrmStore {
    pub db: DatabaseConnection,
    pub notifier: Notifier,
}

impl LiveStore for SeaOrmStore {
    async fn load(&self, tournament_id: Uuid) -> LiveResult<Option<Game>> {
        load_game(&self.db, tournament_id).await.map_err(AppError::into_live)
    }

    async fn version(&self, tournament_id: Uuid) -> LiveResult<Option<i64>> {
        let version: Option<i64> = tournaments::Entity::find_by_id(tournament_id)
            .select_only()
            .column(tournaments::Column::LiveVersion)
            .into_tuple()
            .one(&self.db)
            .await
            .map_err(|err| LiveError::Internal(err.into()))?;
        Ok(version)
    }

    async fn persist(&self, game: &Game, change: &Change, by: Option<Uuid>) -> LiveResult<Persisted> {
        persist_change(&self.db, game, change, by).await.map_err(AppError::into_live)
    }

    async fn start(&self, tournament_id: Uuid, by: Uuid, now: DateTime<Utc>) -> LiveResult<()> {
        start_tournament(&self.db, tournament_id, by, now).await.map_err(AppError::into_live)
    }

    async fn confirm(&self, tournament_id: Uuid, by: Uuid, now: DateTime<Utc>) -> LiveResult<()> {
        let awarded =
            super::results::confirm_results(&self.db, tournament_id, by, now).await.map_err(AppError::into_live)?;
        super::results::announce_results(&self.db, &self.notifier, tournament_id, awarded);
        Ok(())
    }
}

/// The game as stored. Before start the clock's levels are the template's.
pub async fn load_game(conn: &impl ConnectionTrait, tournament_id: Uuid) -> AppResult<Option<Game>> {
    let Some(tournament) = tournaments::Entity::find_by_id(tournament_id).one(conn).await? else { return Ok(None) };
    let levels_json = match tournament.clock_levels.clone() {
        Some(levels) => levels,
        None => blind_templates::Entity::find_by_id(tournament.blind_template_id)
            .one(conn)
            .await?
            .map_or(serde_json::Value::Array(Vec::new()), |template| template.levels),
    };
    let levels: Vec<Segment> = serde_json::from_value(levels_json).map_err(|err| {
        AppError::Internal(anyhow::anyhow!("tournament {tournament_id} has unreadable levels: {err}"))
    })?;
    let seats = table_seats::Entity::find()
        .filter(table_seats::Column::TournamentId.eq(tournament_id))
        .order_by_asc(table_seats::Column::TableNo)
        .order_by_asc(table_seats::Column::SeatNo)
        .all(conn)
        .await?;
    let registration_ids: Vec<Uuid> = seats.iter().map(|seat| seat.registration_id).collect();
    let registrations: HashMap<Uuid, registrations::Model> =
        find_where_in::<registrations::Entity, _>(conn, registrations::Column::Id, &registration_ids)
            .await?
            .into_iter()
            .map(|registration| (registration.id, registration))
            .collect();
    let names = player_names(conn, registrations.values()).await?;
    let players = seats
        .iter()
        .filter_map(|seat| {
            let registration = registrations.get(&seat.registration_id)?;
            Some(Player {
                registration_id: registration.id,
                name: names.get(&registration.id).cloned().unwrap_or_else(|| UNNAMED_PLAYER.to_owned()),
                seat: Seat { table_no: seat.table_no, seat_no: seat.seat_no },
                eliminated_at: registration.eliminated_at,
                created_at: registration.created_at,
            })
        })
        .collect();
    let clock = tournament.level_started_at.map(|level_started_at| Clock {
        current_level_idx: usize::try_from(tournament.current_level_idx).unwrap_or_default(),
        level_started_at,
        paused_at: tournament.paused_at,
    });
    Ok(Some(Game {
        tournament_id,
        status: tournament.status,
        version: tournament.live_version,
        clock,
        levels,
        chips_in_play: tournament.chips_in_play,
        players,
    }))
}

/// The name each registration is shown under: the nickname when set, else the name; a
/// guest's walk-in name. Never a phone.
pub async fn player_names<'a>(
    conn: &impl ConnectionTrait,
    registrations: impl Iterator<Item = &'a registrations::Model>,
) -> AppResult<HashMap<Uuid, String>> {
    let registrations: Vec<&registrations::Model> = registrations.collect();
    let user_ids: Vec<Uuid> = registrations.iter().filter_map(|r| r.user_id).collect();
    let guest_ids: Vec<Uuid> = registrations.iter().filter_map(|r| r.guest_id).collect();
    let users: HashMap<Uuid, String> = find_where_in::<users::Entity, _>(conn, users::Column::Id, &user_ids)
        .await?
        .into_iter()
        .filter_map(|user| Some((user.id, user.nickname.filter(|n| !n.is_empty()).or(user.name)?)))
        .collect();
    let guests: HashMap<Uuid, String> =
        find_where_in::<guest_players::Entity, _>(conn, guest_players::Column::Id, &guest_ids)
            .await?
            .into_iter()
            .map(|guest| (guest.id, guest.name))
            .collect();
    Ok(registrations
        .into_iter()
        .filter_map(|r| {
            let name = match (r.user_id, r.guest_id) {
                (Some(user_id), _) => users.get(&user_id),
                (None, Some(guest_id)) => guests.get(&guest_id),
                (None, None) => None,
            };
            Some((r.id, name?.clone()))
        })
        .collect())
}

/// Writes one change of a running game in one transaction, if the stored version is still
/// the game's: the version check is what makes a stale decision harmless.
async fn persist_change(
    db: &DatabaseConnection,
    game: &Game,
    change: &Change,
    by: Option<Uuid>,
) -> AppResult<Persisted> {
    let tx = db::begin_write(db).await?;
    let now = Utc::now();
    let mut guarded = tournaments::Entity::update_many()
        .col_expr(tournaments::Column::LiveVersion, Expr::value(game.version + 1))
        .col_expr(tournaments::Column::UpdatedAt, Expr::value(now));
    if let Change::Clock { clock, .. } = change {
        guarded = guarded
            .col_expr(
                tournaments::Column::CurrentLevelIdx,
                Expr::value(i32::try_from(clock.current_level_idx).unwrap_or(i32::MAX)),
            )
            .col_expr(tournaments::Column::LevelStartedAt, Expr::value(clock.level_started_at))
            .col_expr(tournaments::Column::PausedAt, Expr::value(clock.paused_at));
    }
    let written = guarded
        .filter(tournaments::Column::Id.eq(game.tournament_id))
        .filter(tournaments::Column::LiveVersion.eq(game.version))
        .filter(tournaments::Column::Status.eq(TournamentStatus::Running))
        .exec(&tx)
        .await?;
    if written.rows_affected == 0 {
        return Ok(Persisted::Stale);
    }
    let details = match change {
        Change::Clock { clock, .. } => json!({
            "currentLevelIdx": clock.current_level_idx,
            "levelStartedAt": clock.level_started_at,
            "pausedAt": clock.paused_at,
        }),
        Change::Eliminate { registration_id, eliminated_at, place } => {
            set_eliminated_at(&tx, *registration_id, Some(*eliminated_at), now).await?;
            set_seat(&tx, *registration_id, None, false, now).await?;
            json!({"registrationId": registration_id, "place": place, "eliminatedAt": eliminated_at})
        }
        Change::Undo { registration_id, seat } => {
            set_eliminated_at(&tx, *registration_id, None, now).await?;
            set_seat(&tx, *registration_id, Some(*seat), true, now).await?;
            json!({"registrationId": registration_id, "tableNo": seat.table_no, "seatNo": seat.seat_no})
        }
        Change::Reorder { stamps } => {
            for (registration_id, stamp) in stamps {
                set_eliminated_at(&tx, *registration_id, Some(*stamp), now).await?;
            }
            json!({"registrationIds": stamps.iter().map(|(id, _)| id).collect::<Vec<_>>()})
        }
        Change::Reseat { registration_id, seat } => {
            set_seat(&tx, *registration_id, Some(*seat), true, now).await?;
            json!({"registrationId": registration_id, "tableNo": seat.table_no, "seatNo": seat.seat_no})
        }
    };
    audit::record(&tx, by, change.audit_action(), ("tournament", game.tournament_id.to_string()), details).await?;
    tx.commit().await?;
    Ok(Persisted::Written)
}

async fn set_eliminated_at(
    conn: &impl ConnectionTrait,
    registration_id: Uuid,
    at: Option<DateTime<Utc>>,
    now: DateTime<Utc>,
) -> AppResult<()> {
    registrations::Entity::update_many()
        .col_expr(registrations::Column::EliminatedAt, Expr::value(at))
        .col_expr(registrations::Column::UpdatedAt, Expr::value(now))
        .filter(registrations::Column::Id.eq(registration_id))
        .exec(conn)
        .await?;
    Ok(())
}

/// Moves (when `seat` is given) and activates or frees a player's seat row.
async fn set_seat(
    conn: &impl ConnectionTrait,
    registration_id: Uuid,
    seat: Option<Seat>,
    active: bool,
    now: DateTime<Utc>,
) -> AppResult<()> {
    let mut update = table_seats::Entity::update_many()
        .col_expr(table_seats::Column::Active, Expr::value(active))
        .col_expr(table_seats::Column::UpdatedAt, Expr::value(now));
    if let Some(seat) = seat {
        update = update
            .col_expr(table_seats::Column::TableNo, Expr::value(seat.table_no))
            .col_expr(table_seats::Column::SeatNo, Expr::value(seat.seat_no));
    }
    update
        .filter(table_seats::Column::RegistrationId.eq(registration_id))
        .exec(conn)
        .await
        .on_unique_violation(ErrorCode::SeatTaken, "another player sits there")?;
    Ok(())
}

/// Start, in one transaction: the checked-in players are shuffled and seated, everyone
/// still `registered` becomes `no_show` with a strike, the waitlist is closed, chips in play
/// and the clock are set, and the tournament moves to `running` by a guarded update.
async fn start_tournament(db: &DatabaseConnection, tournament_id: Uuid, by: Uuid, now: DateTime<Utc>) -> AppResult<()> {
    let tx = db::begin_write(db).await?;
    let tournament = tournament_rows::lock(&tx, tournament_id).await?;
    match tournament.status {
        TournamentStatus::Registration => {}
        TournamentStatus::Running | TournamentStatus::Finished => {
            return Err(AppError::new(ErrorCode::TournamentAlreadyStarted, "the tournament has already started"));
        }
        TournamentStatus::Cancelled | TournamentStatus::Announced => {
            return Err(AppError::new(ErrorCode::InvalidStatus, "only a tournament in registration can start"));
        }
    }
    let checked_in: Vec<Uuid> = registrations::Entity::find()
        .filter(registrations::Column::TournamentId.eq(tournament_id))
        .filter(registrations::Column::Status.eq(RegistrationStatus::CheckedIn))
        .order_by_asc(registrations::Column::CreatedAt)
        .order_by_asc(registrations::Column::Id)
        .all(&tx)
        .await?
        .into_iter()
        .map(|registration| registration.id)
        .collect();
    if checked_in.len() < 2 {
        return Err(AppError::new(ErrorCode::NotEnoughPlayers, "at least two checked-in players are needed to start"));
    }
    let template = blind_templates::Entity::find_by_id(tournament.blind_template_id)
        .one(&tx)
        .await?
        .ok_or_else(|| AppError::Internal(anyhow::anyhow!("tournament {tournament_id} lost its blind template")))?;

    let seating = seat_players(&checked_in, &mut rand::rng());
    let seats = seating.iter().map(|assignment| table_seats::ActiveModel {
        id: Set(Uuid::now_v7()),
        tournament_id: Set(tournament_id),
        registration_id: Set(assignment.player),
        table_no: Set(assignment.table_no),
        seat_no: Set(assignment.seat_no),
        active: Set(true),
        created_at: Set(now),
        updated_at: Set(now),
    });
    table_seats::Entity::insert_many(seats).exec_without_returning(&tx).await?;

    // In player order, as every transaction that locks several profiles takes them.
    let no_shows = registrations::Entity::find()
        .filter(registrations::Column::TournamentId.eq(tournament_id))
        .filter(registrations::Column::Status.eq(RegistrationStatus::Registered))
        .order_by_asc(registrations::Column::UserId)
        .all(&tx)
        .await?;
    set_status(&tx, tournament_id, RegistrationStatus::Registered, RegistrationStatus::NoShow, now).await?;
    for registration in &no_shows {
        if let Some(user_id) = registration.user_id {
            strikes::issue(&tx, user_id, tournament_id, registration.id, StrikeReason::NoShow, now).await?;
        }
    }
    // The roster is fixed from here: nobody waits for a seat any more.
    let closed_waitlist =
        set_status(&tx, tournament_id, RegistrationStatus::Waitlist, RegistrationStatus::Cancelled, now).await?;

    let players = i64::try_from(checked_in.len()).unwrap_or(i64::MAX);
    let started = tournaments::Entity::update_many()
        .col_expr(tournaments::Column::Status, Expr::value(TournamentStatus::Running))
        .col_expr(tournaments::Column::StartedAt, Expr::value(now))
        .col_expr(tournaments::Column::ClockLevels, Expr::value(template.levels.clone()))
        .col_expr(tournaments::Column::CurrentLevelIdx, Expr::value(0))
        .col_expr(tournaments::Column::LevelStartedAt, Expr::value(now))
        .col_expr(tournaments::Column::PausedAt, Expr::value(Option::<DateTime<Utc>>::None))
        .col_expr(tournaments::Column::ChipsInPlay, Expr::value(template.starting_stack.saturating_mul(players)))
        .col_expr(tournaments::Column::LiveVersion, Expr::value(tournament.live_version + 1))
        .col_expr(tournaments::Column::UpdatedAt, Expr::value(now))
        .filter(tournaments::Column::Id.eq(tournament_id))
        .filter(tournaments::Column::Status.eq(TournamentStatus::Registration))
        .exec(&tx)
        .await?;
    if started.rows_affected == 0 {
        return Err(AppError::new(ErrorCode::TournamentAlreadyStarted, "the tournament has already started"));
    }
    audit::record(
        &tx,
        Some(by),
        "tournament.start",
        ("tournament", tournament_id.to_string()),
        json!({
            "players": players,
            "tables": table_count(checked_in.len()),
            "noShows": no_shows.len(),
            "waitlistClosed": closed_waitlist,
        }),
    )
    .await?;
    tx.commit().await?;
    Ok(())
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
