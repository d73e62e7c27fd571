//! Moving a tournament's stored `live_version` on: the guarded write of the `live_version`
//! protocol (see [`super`]), for one tournament and for several at once.

use chrono::{DateTime, Utc};
use floor_entities::enums::TournamentStatus;
use floor_entities::tournaments;
use sea_orm::sea_query::{Expr, ExprTrait};
use sea_orm::{ColumnTrait, ConnectionTrait, DatabaseTransaction, EntityTrait, QueryFilter, QuerySelect, UpdateMany};
use uuid::Uuid;

use crate::infra::db;
use crate::infra::error::AppResult;

/// Moves the stored `live_version` of `tournament_id` on from `decided_on` (the version and
/// status the writer decided on) by one, writing `change`'s columns with it, only while the
/// row is still at that version and in that status. `false`: another writer moved it first,
/// and nothing was written.
pub async fn advance_live_version(
    conn: &impl ConnectionTrait,
    tournament_id: Uuid,
    decided_on: (i64, TournamentStatus),
    change: UpdateMany<tournaments::Entity>,
    now: DateTime<Utc>,
) -> AppResult<bool> {
    advance_live_version_by(conn, tournament_id, decided_on, 1, change, now).await
}

/// [`advance_live_version`] by `changes` versions at once: several changes written together.
pub async fn advance_live_version_by(
    conn: &impl ConnectionTrait,
    tournament_id: Uuid,
    decided_on: (i64, TournamentStatus),
    changes: i64,
    change: UpdateMany<tournaments::Entity>,
    now: DateTime<Utc>,
) -> AppResult<bool> {
    let (version, status) = decided_on;
    let written = change
        .col_expr(tournaments::Column::LiveVersion, Expr::value(version + changes))
        .col_expr(tournaments::Column::UpdatedAt, Expr::value(now))
        .filter(tournaments::Column::Id.eq(tournament_id))
        .filter(tournaments::Column::LiveVersion.eq(version))
        .filter(tournaments::Column::Status.eq(status))
        .exec(conn)
        .await?;
    Ok(written.rows_affected == 1)
}

/// Moves each of `ids` (locked by the caller) on by one version for a change of its picture
/// made outside any game: a deleted player's name. Returns each with its new version.
pub async fn advance_live_versions(
    tx: &DatabaseTransaction,
    ids: &[Uuid],
    now: DateTime<Utc>,
) -> AppResult<Vec<(Uuid, i64)>> {
    let mut advanced = Vec::with_capacity(ids.len());
    for chunk in ids.chunks(db::IDS_PER_STATEMENT) {
        tournaments::Entity::update_many()
            .col_expr(tournaments::Column::LiveVersion, Expr::col(tournaments::Column::LiveVersion).add(1))
            .col_expr(tournaments::Column::UpdatedAt, Expr::value(now))
            .filter(tournaments::Column::Id.is_in(chunk.iter().copied()))
            .exec(tx)
            .await?;
        let versions: Vec<(Uuid, i64)> = tournaments::Entity::find()
            .select_only()
            .column(tournaments::Column::Id)
            .column(tournaments::Column::LiveVersion)
            .filter(tournaments::Column::Id.is_in(chunk.iter().copied()))
            .into_tuple()
            .all(tx)
            .await?;
        advanced.extend(versions);
    }
    Ok(advanced)
}
