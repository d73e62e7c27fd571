//! What the players got: confirming the results behind the atomic gate (and awarding the
//! rating), the platform's recount of a finished tournament, a new account claiming the
//! results its phone earned as a guest, and reading them.

use std::collections::{HashMap, HashSet};

use chrono::{DateTime, Utc};
use floor_actors::rules::rating::season_points;
use floor_entities::enums::{TournamentStatus, UserStatus};
use floor_entities::{registrations, results, table_seats, tournaments, users};
use sea_orm::sea_query::Expr;
use sea_orm::{
    ActiveModelTrait, ColumnTrait, ConnectionTrait, DatabaseConnection, DatabaseTransaction, EntityTrait,
    PaginatorTrait, QueryFilter, QueryOrder, Set,
};
use serde_json::json;
use uuid::Uuid;

use super::lifecycle::advance_live_version;
use super::{display_title, lock, player_names};
use crate::domain::audit;
use crate::domain::notifications::{Journaled, Notice, NoticeKind, Notifier, PushMessage};
use crate::domain::rating::{self, RowOrigin};
use crate::infra::db::{self, IDS_PER_STATEMENT, find_where_in};
use crate::infra::error::{AppError, AppResult, ErrorCode};

/// Confirms the results of a running tournament with at most one player still in, in one
/// transaction: the move to `finished` is the gate (a second caller finds it shut before any
/// award), then the results are written, every participant's profile is rebuilt, and each
/// participant with an account (not deleted since) is told their place
/// (`tournament.results`), journaled with the results and pushed once they have committed.
pub async fn confirm_results(
    tx: &DatabaseTransaction,
    notifier: &Notifier,
    tournament_id: Uuid,
    by: Uuid,
    now: DateTime<Utc>,
) -> AppResult<Vec<Journaled>> {
    let tournament = lock(tx, tournament_id).await?;
    match tournament.status {
        TournamentStatus::Running => {}
        TournamentStatus::Finished => return Err(already_confirmed()),
        _ => return Err(AppError::new(ErrorCode::TournamentNotRunning, "the tournament is not running")),
    }
    let still_in = table_seats::Entity::find()
        .filter(table_seats::Column::TournamentId.eq(tournament_id))
        .filter(table_seats::Column::Active.eq(true))
        .count(tx)
        .await?;
    if still_in > 1 {
        return Err(AppError::new(ErrorCode::InvalidStatus, "more than one player is still in the game"));
    }
    let finish = tournaments::Entity::update_many()
        .col_expr(tournaments::Column::Status, Expr::value(TournamentStatus::Finished))
        .col_expr(tournaments::Column::FinishedAt, Expr::value(now));
    let decided_on = (tournament.live_version, TournamentStatus::Running);
    if !advance_live_version(tx, tournament_id, decided_on, finish, now).await? {
        return Err(already_confirmed());
    }
    let participants = rating::lock_participants(tx, tournament_id, &[]).await?;
    let awards =
        rating::write_results(tx, tournament_id, &participants, |_| RowOrigin { created_at: now, skill_before: None })
            .await?;
    let accounts: Vec<Uuid> = awards.iter().map(|award| award.user_id).collect();
    rating::rebuild_profiles(tx, &accounts).await?;
    audit::record(
        tx,
        Some(by),
        "tournament.confirm_results",
        ("tournament", tournament_id.to_string()),
        json!({"players": accounts.len()}),
    )
    .await?;
    let title = display_title(tx, tournament_id).await?;
    // A player out before the end may have deleted the account since: the place stays, under
    // the neutral name, and nobody is told.
    let deleted: HashSet<Uuid> = find_where_in::<users::Entity, _>(tx, users::Column::Id, &accounts)
        .await?
        .into_iter()
        .filter(|account| account.status == UserStatus::Deleted)
        .map(|account| account.id)
        .collect();
    let mut notices = Vec::with_capacity(awards.len());
    for award in awards.into_iter().filter(|award| !deleted.contains(&award.user_id)) {
        let notice = Notice {
            kind: NoticeKind::TournamentResults,
            recipients: vec![award.user_id],
            payload: json!({"tournamentId": tournament_id, "place": award.place, "seasonPoints": award.season_points}),
            push: Some(PushMessage {
                title: "Итоги турнира".to_owned(),
                body: format!("{title}: {} место, {} очков рейтинга", award.place, award.season_points),
            }),
            dedup_key: Some(format!("tournament.results:{tournament_id}")),
        };
        notices.push(notifier.journal(tx, notice).await?);
    }
    Ok(notices)
}

fn already_confirmed() -> AppError {
    AppError::new(ErrorCode::ResultsAlreadyConfirmed, "the results are already confirmed")
}

/// Recount of a finished tournament by the platform: the results are written anew (counting
/// guests claimed since) keeping each row's original `createdAt`, and every player who had
/// or now has a result there is rebuilt chronologically.
pub async fn recount(db: &DatabaseConnection, tournament_id: Uuid, by: Uuid) -> AppResult<()> {
    let tx = db::begin_write(db).await?;
    let tournament = lock(&tx, tournament_id).await?;
    if tournament.status != TournamentStatus::Finished {
        return Err(AppError::new(ErrorCode::TournamentNotFinished, "only a finished tournament can be recounted"));
    }
    let old = results::Entity::find().filter(results::Column::TournamentId.eq(tournament_id)).all(&tx).await?;
    let confirmed_at = old.iter().map(|row| row.created_at).min().or(tournament.finished_at).unwrap_or_else(Utc::now);
    let kept: HashMap<Uuid, RowOrigin> = old
        .iter()
        .map(|row| (row.registration_id, RowOrigin { created_at: row.created_at, skill_before: row.skill_before }))
        .collect();
    let mut affected: Vec<Uuid> = old.iter().filter_map(|row| row.user_id).collect();
    let participants = rating::lock_participants(&tx, tournament_id, &affected).await?;
    results::Entity::delete_many().filter(results::Column::TournamentId.eq(tournament_id)).exec(&tx).await?;
    affected.extend(
        rating::write_results(&tx, tournament_id, &participants, |registration_id| {
            kept.get(&registration_id).copied().unwrap_or(RowOrigin { created_at: confirmed_at, skill_before: None })
        })
        .await?
        .into_iter()
        .map(|award| award.user_id),
    );
    rating::rebuild_profiles(&tx, &affected).await?;
    audit::record(
        &tx,
        Some(by),
        "tournament.recount",
        ("tournament", tournament_id.to_string()),
        json!({"players": affected.len()}),
    )
    .await?;
    tx.commit().await?;
    Ok(())
}

/// Moves the results of the guests an account just claimed to it and rebuilds its profile.
/// A guest's result was recorded without points; the account now gets what the place earns
/// under today's settings.
pub async fn claim_guest_results(conn: &impl ConnectionTrait, user_id: Uuid, guest_ids: &[Uuid]) -> AppResult<()> {
    let mut unclaimed = Vec::new();
    for chunk in guest_ids.chunks(IDS_PER_STATEMENT) {
        unclaimed.extend(
            results::Entity::find()
                .filter(results::Column::GuestId.is_in(chunk.iter().copied()))
                .filter(results::Column::UserId.is_null())
                .all(conn)
                .await?,
        );
    }
    if unclaimed.is_empty() {
        return Ok(());
    }
    let tournament_ids: Vec<Uuid> = unclaimed.iter().map(|result| result.tournament_id).collect();
    let sizes = rating::field_sizes(conn, &tournament_ids).await?;
    let config = rating::rating_config(conn).await?;
    for result in unclaimed {
        let size = sizes.get(&result.tournament_id).copied().unwrap_or(1);
        let points = season_points(&config, size, result.place).map_err(|err| AppError::Internal(err.into()))?;
        let mut active: results::ActiveModel = result.into();
        active.user_id = Set(Some(user_id));
        active.season_points = Set(points);
        active.xp = Set(points);
        active.skill_alpha = Set(config.skill_alpha);
        active.update(conn).await?;
    }
    rating::rebuild_profiles(conn, &[user_id]).await
}

/// One row of a tournament's protocol.
#[derive(Clone, Debug, serde::Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ResultView {
    pub place: i32,
    pub registration_id: Uuid,
    /// The account the result counts for; absent for an unclaimed guest.
    pub user_id: Option<Uuid>,
    pub tournament_id: Uuid,
    /// The nickname when set, else the name; a guest's walk-in name.
    pub name: String,
    pub season_points: i32,
    pub xp: i32,
    /// Displayed skill (1.0 to 10.0) before and after; absent for guests.
    pub skill_before: Option<f64>,
    pub skill_after: Option<f64>,
    pub created_at: DateTime<Utc>,
}

/// Result rows as clients see them, in the order given.
pub async fn result_views(conn: &impl ConnectionTrait, rows: Vec<results::Model>) -> AppResult<Vec<ResultView>> {
    let registration_ids: Vec<Uuid> = rows.iter().map(|row| row.registration_id).collect();
    let registrations =
        find_where_in::<registrations::Entity, _>(conn, registrations::Column::Id, &registration_ids).await?;
    let names = player_names(conn, registrations.iter()).await?;
    let shown = floor_actors::rules::rating::displayed_skill;
    Ok(rows
        .into_iter()
        .map(|row| ResultView {
            place: row.place,
            registration_id: row.registration_id,
            user_id: row.user_id,
            tournament_id: row.tournament_id,
            name: names.get(&row.registration_id).cloned().unwrap_or_default(),
            season_points: row.season_points,
            xp: row.xp,
            skill_before: row.skill_before.map(shown),
            skill_after: row.skill_after.map(shown),
            created_at: row.created_at,
        })
        .collect())
}

/// The protocol of a tournament, by place.
pub async fn tournament_results(conn: &impl ConnectionTrait, tournament_id: Uuid) -> AppResult<Vec<ResultView>> {
    let rows = results::Entity::find()
        .filter(results::Column::TournamentId.eq(tournament_id))
        .order_by_asc(results::Column::Place)
        .all(conn)
        .await?;
    result_views(conn, rows).await
}

/// A player's results, newest first.
pub async fn player_results(conn: &impl ConnectionTrait, user_id: Uuid) -> AppResult<Vec<ResultView>> {
    let rows = results::Entity::find()
        .filter(results::Column::UserId.eq(user_id))
        .order_by_desc(results::Column::CreatedAt)
        .order_by_desc(results::Column::Id)
        .all(conn)
        .await?;
    result_views(conn, rows).await
}
