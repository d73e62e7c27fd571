//! A player's devices: the push tokens behind `POST/DELETE /me/push-tokens`, a row per
//! account and token. Registering a token another account holds gives the caller a row of its
//! own and leaves the other's alone, so knowing someone's token lets nobody take or remove
//! their pushes. A device signed into two accounts gets both accounts' pushes until each
//! removes its row (the app does at sign-out). A token FCM no longer knows is forgotten for
//! every account ([`crate::domain::notifications`]).

use chrono::{DateTime, Utc};
use floor_entities::enums::PushPlatform;
use floor_entities::push_tokens;
use sea_orm::sea_query::{Expr, ExprTrait, OnConflict, Query};
use sea_orm::{
    ColumnTrait, ConnectionTrait, DatabaseTransaction, EntityTrait, QueryFilter, QueryOrder, QuerySelect, Set,
};
use uuid::Uuid;

use crate::infra::db;
use crate::infra::error::AppResult;

/// How many devices one account keeps; registering one more forgets the account's least
/// recently registered. A person has a phone, a tablet, a browser or two, and the tokens of
/// reinstalls FCM has not yet reported dead: 20 is plenty for that, and it stops one account
/// (a script holding its access token) from piling up rows without end, each of which every
/// push to the account would be sent to.
pub const DEVICES_PER_ACCOUNT: usize = 20;

/// `user_id` registers `token`: a new row, or the account's own row again (its platform and
/// registration time renewed). Never touches another account's row. Past
/// [`DEVICES_PER_ACCOUNT`] the account's least recently registered devices go.
pub async fn register(
    tx: &DatabaseTransaction,
    user_id: Uuid,
    token: &str,
    platform: PushPlatform,
    now: DateTime<Utc>,
) -> AppResult<()> {
    // Two registrations of one account at once would each count the rows without the other's.
    db::lock_key(tx, &format!("push-tokens:{user_id}")).await?;
    let row = push_tokens::ActiveModel {
        user_id: Set(user_id),
        token: Set(token.to_owned()),
        platform: Set(platform),
        created_at: Set(now),
        updated_at: Set(now),
    };
    push_tokens::Entity::insert(row)
        .on_conflict(
            OnConflict::columns([push_tokens::Column::UserId, push_tokens::Column::Token])
                .update_columns([push_tokens::Column::Platform, push_tokens::Column::UpdatedAt])
                .to_owned(),
        )
        .exec_without_returning(tx)
        .await?;
    forget_past_the_cap(tx, user_id).await?;
    Ok(())
}

/// Removes `user_id`'s row of `token`; `false` when the account has none (whether the token is
/// unknown or only another account's).
pub async fn remove(conn: &impl ConnectionTrait, user_id: Uuid, token: &str) -> AppResult<bool> {
    let removed = push_tokens::Entity::delete_many()
        .filter(push_tokens::Column::UserId.eq(user_id))
        .filter(push_tokens::Column::Token.eq(token))
        .exec(conn)
        .await?;
    Ok(removed.rows_affected > 0)
}

/// A merge: `duplicate`'s devices become `main`'s. A token both accounts hold keeps `main`'s
/// row (the duplicate's goes), then `main` is held to [`DEVICES_PER_ACCOUNT`]. Returns how
/// many rows moved.
pub async fn move_to(conn: &impl ConnectionTrait, main: Uuid, duplicate: Uuid) -> AppResult<u64> {
    let mains_tokens = Query::select()
        .column(push_tokens::Column::Token)
        .from(push_tokens::Entity)
        .and_where(Expr::col(push_tokens::Column::UserId).eq(main))
        .to_owned();
    let moved = push_tokens::Entity::update_many()
        .col_expr(push_tokens::Column::UserId, Expr::value(main))
        .filter(push_tokens::Column::UserId.eq(duplicate))
        .filter(push_tokens::Column::Token.not_in_subquery(mains_tokens))
        .exec(conn)
        .await?
        .rows_affected;
    push_tokens::Entity::delete_many().filter(push_tokens::Column::UserId.eq(duplicate)).exec(conn).await?;
    forget_past_the_cap(conn, main).await?;
    Ok(moved)
}

/// Deletes `user_id`'s devices beyond the [`DEVICES_PER_ACCOUNT`] most recently registered.
async fn forget_past_the_cap(conn: &impl ConnectionTrait, user_id: Uuid) -> AppResult<()> {
    // The account's rows are few (the cap, and one more being registered): read them all and
    // count here, since SQLite takes no OFFSET without a LIMIT.
    let newest_first: Vec<String> = push_tokens::Entity::find()
        .select_only()
        .column(push_tokens::Column::Token)
        .filter(push_tokens::Column::UserId.eq(user_id))
        .order_by_desc(push_tokens::Column::UpdatedAt)
        .order_by_desc(push_tokens::Column::Token)
        .into_tuple()
        .all(conn)
        .await?;
    let past_the_cap: Vec<String> = newest_first.into_iter().skip(DEVICES_PER_ACCOUNT).collect();
    for chunk in past_the_cap.chunks(db::IDS_PER_STATEMENT) {
        push_tokens::Entity::delete_many()
            .filter(push_tokens::Column::UserId.eq(user_id))
            .filter(push_tokens::Column::Token.is_in(chunk.iter().cloned()))
            .exec(conn)
            .await?;
    }
    Ok(())
}
