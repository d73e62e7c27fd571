//! Who follows whom among players: the rows behind `PUT/DELETE /players/{userId}/follow`.
//! The audience of `followee.registered` pushes is read where they are sent
//! ([`crate::domain::tournaments::registrations`]).

use std::collections::{HashMap, HashSet};

use chrono::Utc;
use floor_entities::follows;
use sea_orm::sea_query::OnConflict;
use sea_orm::{ColumnTrait, ConnectionTrait, EntityTrait, QueryFilter, QueryOrder, QuerySelect, Set};
use uuid::Uuid;

use crate::infra::db::IDS_PER_STATEMENT;
use crate::infra::error::AppResult;

/// The players `follower` follows, most recently followed first.
pub async fn followees_of(conn: &impl ConnectionTrait, follower: Uuid) -> AppResult<Vec<Uuid>> {
    Ok(follows::Entity::find()
        .select_only()
        .column(follows::Column::FolloweeId)
        .filter(follows::Column::FollowerId.eq(follower))
        .order_by_desc(follows::Column::CreatedAt)
        .into_tuple()
        .all(conn)
        .await?)
}

/// `follower` follows `followee`; already following changes nothing (not even the date).
pub async fn follow(conn: &impl ConnectionTrait, follower: Uuid, followee: Uuid) -> AppResult<()> {
    let row =
        follows::ActiveModel { follower_id: Set(follower), followee_id: Set(followee), created_at: Set(Utc::now()) };
    follows::Entity::insert(row)
        .on_conflict(
            OnConflict::columns([follows::Column::FollowerId, follows::Column::FolloweeId]).do_nothing().to_owned(),
        )
        .exec_without_returning(conn)
        .await?;
    Ok(())
}

/// `follower` stops following `followee`; not following is fine.
pub async fn unfollow(conn: &impl ConnectionTrait, follower: Uuid, followee: Uuid) -> AppResult<()> {
    follows::Entity::delete_many()
        .filter(follows::Column::FollowerId.eq(follower))
        .filter(follows::Column::FolloweeId.eq(followee))
        .exec(conn)
        .await?;
    Ok(())
}

/// How many followers each of `users` has; a user nobody follows is absent.
pub async fn follower_counts(conn: &impl ConnectionTrait, users: &[Uuid]) -> AppResult<HashMap<Uuid, i64>> {
    let mut counts = HashMap::new();
    for chunk in users.chunks(IDS_PER_STATEMENT) {
        let rows: Vec<(Uuid, i64)> = follows::Entity::find()
            .select_only()
            .column(follows::Column::FolloweeId)
            .column_as(follows::Column::FollowerId.count(), "followers")
            .filter(follows::Column::FolloweeId.is_in(chunk.iter().copied()))
            .group_by(follows::Column::FolloweeId)
            .into_tuple()
            .all(conn)
            .await?;
        counts.extend(rows);
    }
    Ok(counts)
}

/// Which of `users` `follower` follows.
pub async fn followed_among(conn: &impl ConnectionTrait, follower: Uuid, users: &[Uuid]) -> AppResult<HashSet<Uuid>> {
    let mut followed = HashSet::new();
    for chunk in users.chunks(IDS_PER_STATEMENT) {
        let rows: Vec<Uuid> = follows::Entity::find()
            .select_only()
            .column(follows::Column::FolloweeId)
            .filter(follows::Column::FollowerId.eq(follower))
            .filter(follows::Column::FolloweeId.is_in(chunk.iter().copied()))
            .into_tuple()
            .all(conn)
            .await?;
        followed.extend(rows);
    }
    Ok(followed)
}
