//! A push token is kept per account: the key of `push_tokens` becomes `(user_id, token)`, so
//! an account that registers a token another account holds gets a row of its own instead of
//! taking the other's (whoever learnt a token could otherwise silence its owner's pushes).
//! Every row is kept. The key leads with `user_id`, which serves the pushes' lookup by account,
//! so `ix_push_tokens_user_id` goes; `ix_push_tokens_token` serves the deletion of a token FCM
//! no longer knows, from every account that holds it.
//!
//! PostgreSQL swaps the primary key in place. SQLite cannot alter a primary key: the table is
//! rebuilt (made anew beside the old, filled from it, the old dropped, the new renamed).
//! Nothing references `push_tokens`, so dropping it never trips a foreign key. Either way the
//! result is the same table.
//!
//! Down goes back to one row per token, keeping the most recently registered row of each.

use sea_orm_migration::sea_orm::DatabaseBackend;
use sea_orm_migration::{prelude::*, schema::*};

use crate::{fk, index};

/// Where SQLite builds the new table before it takes the old one's name.
const REBUILT: &str = "push_tokens_rebuilt";

/// Keeps one row per token (the most recently registered; of two registered at the same
/// moment, the one of the greater account id), as the older key requires.
const ONE_ROW_PER_TOKEN: &str = "DELETE FROM push_tokens WHERE EXISTS (SELECT 1 FROM push_tokens AS newer \
     WHERE newer.token = push_tokens.token AND (newer.updated_at > push_tokens.updated_at \
     OR (newer.updated_at = push_tokens.updated_at AND newer.user_id > push_tokens.user_id)))";

#[derive(DeriveIden)]
enum PushTokens {
    Table,
    Token,
    UserId,
    Platform,
    CreatedAt,
    UpdatedAt,
}

#[derive(DeriveIden)]
enum Users {
    Table,
    Id,
}

/// Which key a rebuilt `push_tokens` gets.
#[derive(Clone, Copy)]
enum Key {
    /// `(user_id, token)`: a row per account and device.
    PerAccount,
    /// `token`: a row per device, as before this migration.
    PerToken,
}

#[derive(DeriveMigrationName)]
pub struct Migration;

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        match manager.get_database_backend() {
            DatabaseBackend::Sqlite => rebuild(manager, Key::PerAccount).await?,
            _ => {
                let db = manager.get_connection();
                db.execute_unprepared("ALTER TABLE push_tokens DROP CONSTRAINT push_tokens_pkey").await?;
                db.execute_unprepared("ALTER TABLE push_tokens ADD PRIMARY KEY (user_id, token)").await?;
                drop_index(manager, "ix_push_tokens_user_id").await?;
            }
        }
        manager.create_index(index("ix_push_tokens_token", PushTokens::Table, [PushTokens::Token])).await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager.get_connection().execute_unprepared(ONE_ROW_PER_TOKEN).await?;
        drop_index(manager, "ix_push_tokens_token").await?;
        match manager.get_database_backend() {
            DatabaseBackend::Sqlite => rebuild(manager, Key::PerToken).await?,
            _ => {
                let db = manager.get_connection();
                db.execute_unprepared("ALTER TABLE push_tokens DROP CONSTRAINT push_tokens_pkey").await?;
                db.execute_unprepared("ALTER TABLE push_tokens ADD PRIMARY KEY (token)").await?;
            }
        }
        manager.create_index(index("ix_push_tokens_user_id", PushTokens::Table, [PushTokens::UserId])).await
    }
}

async fn drop_index(manager: &SchemaManager<'_>, name: &str) -> Result<(), DbErr> {
    manager.drop_index(Index::drop().name(name).table(PushTokens::Table).to_owned()).await
}

/// SQLite: replaces `push_tokens` by a copy with the primary key `key`, keeping its rows and
/// its foreign key to `users`. Its indexes go with the old table; the caller makes the ones
/// the new key needs.
async fn rebuild(manager: &SchemaManager<'_>, key: Key) -> Result<(), DbErr> {
    let rebuilt = Alias::new(REBUILT);
    let mut table = Table::create();
    table
        .table(rebuilt.clone())
        .col(text(PushTokens::Token))
        .col(uuid(PushTokens::UserId))
        .col(text(PushTokens::Platform))
        .col(timestamp_with_time_zone(PushTokens::CreatedAt))
        .col(timestamp_with_time_zone(PushTokens::UpdatedAt))
        .foreign_key(&mut fk(
            "fk_push_tokens_user_id",
            rebuilt.clone(),
            PushTokens::UserId,
            Users::Table,
            Users::Id,
            ForeignKeyAction::Cascade,
        ));
    match key {
        Key::PerAccount => table.primary_key(Index::create().col(PushTokens::UserId).col(PushTokens::Token)),
        Key::PerToken => table.primary_key(Index::create().col(PushTokens::Token)),
    };
    manager.create_table(table.to_owned()).await?;

    let db = manager.get_connection();
    db.execute_unprepared(&format!(
        "INSERT INTO {REBUILT} (token, user_id, platform, created_at, updated_at) \
         SELECT token, user_id, platform, created_at, updated_at FROM push_tokens"
    ))
    .await?;
    manager.drop_table(Table::drop().table(PushTokens::Table).to_owned()).await?;
    manager.rename_table(Table::rename().table(rebuilt, PushTokens::Table).to_owned()).await
}
