//! Results: confirming them behind the atomic gate (and awarding the rating), reading
//! them, and the platform's recount of a finished tournament.

use std::collections::HashMap;

use chrono::{DateTime, Utc};
use floor_entities::enums::TournamentStatus;
use floor_entities::{registrations, results, table_seats, tournaments};
use sea_orm::sea_query::Expr;
use sea_orm::{ColumnTrait, ConnectionTrait, DatabaseConnection, EntityTrait, PaginatorTrait, QueryFilter, QueryOrder};
use serde_json::json;
use uuid::Uuid;

use crate::db::{self, find_where_in};
use crate::error::{AppError, AppResult, ErrorCode};
use crate::notifications::{Notice, NoticeKind, Notifier, PushMessage};
use crate::rating::{Award, RowOrigin};
use crate::{audit, rating, tournaments as tournament_rows};

/// Confirms the results of a running tournament with at most one player still in, in one
/// transaction: the move to `finished` is the gate (a second caller finds it shut before any
/// award), then the results are written and every participant's profile is rebuilt.
pub async fn confirm_results(
    db: &DatabaseConnection,
    tournament_id: Uuid,
    by: Uuid,
    now: DateTime<Utc>,
) -> AppResult<Vec<Award>> {
    let tx = db::begin_write(db).await?;
    let tournament = tournament_rows::lock(&tx, tournament_id).await?;
    match tournament.status {
        TournamentStatus::Running => {}
        TournamentStatus::Finished => {
            return Err(AppError::new(ErrorCode::ResultsAlreadyConfirmed, "the results are already confirmed"));
        }
        _ => return Err(AppError::new(ErrorCode::TournamentNotRunning, "the tournament is not running")),
    }
    let still_in = table_seats::Entity::find()
        .filter(table_seats::Column::TournamentId.eq(tournament_id))
        .filter(table_seats::Column::Active.eq(true))
        .count(&tx)
        .await?;
    if still_in > 1 {
        return Err(AppError::new(ErrorCode::InvalidStatus, "more than one player is still in the game"));
    }
    let closed = tournaments::Entity::update_many()
        .col_expr(tournaments::Column::Status, Expr::value(TournamentStatus::Finished))
        .col_expr(tournaments::Column::FinishedAt, Expr::value(now))
        .col_expr(tournaments::Column::LiveVersion, Expr::value(tournament.live_version + 1))
        .col_expr(tournaments::Column::UpdatedAt, Expr::value(now))
        .filter(tournaments::Column::Id.eq(tournament_id))
        .filter(tournaments::Column::Status.eq(TournamentStatus::Running))
        .exec(&tx)
        .await?;
    if closed.rows_affected == 0 {
        return Err(AppError::new(ErrorCode::ResultsAlreadyConfirmed, "the results are already confirmed"));
    }
    let participants = rating::lock_participants(&tx, tournament_id, &[]).await?;
    let awards =
        rating::write_results(&tx, tournament_id, &participants, |_| RowOrigin { created_at: now, skill_before: None })
            .await?;
    let accounts: Vec<Uuid> = awards.iter().map(|award| award.user_id).collect();
    rating::rebuild_profiles(&tx, &accounts).await?;
    audit::record(
        &tx,
        Some(by),
        "tournament.confirm_results",
        ("tournament", tournament_id.to_string()),
        json!({"players": accounts.len()}),
    )
    .await?;
    tx.commit().await?;
    Ok(awards)
}

/// Sends `tournament.results` to each participant with an account, after the commit and in
/// the background: the confirmation never waits for a push.
pub fn announce_results(db: &DatabaseConnection, notifier: &Notifier, tournament_id: Uuid, awards: Vec<Award>) {
    let db = db.clone();
    let notifier = notifier.clone();
    tokio::spawn(async move {
        let title = match tournament_rows::display_title(&db, tournament_id).await {
            Ok(title) => title,
            Err(err) => {
                tracing::warn!(error = %err, %tournament_id, "could not read the title for the results push");
                String::new()
            }
        };
        for award in awards {
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
            if let Err(err) = notifier.notify(&db, notice).await {
                tracing::warn!(error = %err, %tournament_id, "could not send a results notification");
            }
        }
    });
}

/// Recount of a finished tournament by the platform: the results are written anew (counting
/// guests claimed since) keeping each row's original `createdAt`, and every player who had
/// or now has a result there is rebuilt chronologically.
pub async fn recount(db: &DatabaseConnection, tournament_id: Uuid, by: Uuid) -> AppResult<()> {
    let tx = db::begin_write(db).await?;
    let tournament = tournament_rows::lock(&tx, tournament_id).await?;
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
    let names = super::store::player_names(conn, registrations.iter()).await?;
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
