//! One person, one place: a guest's registrations belong to the account that claimed the
//! guest (the same row, so the account's unique key per tournament covers them), and an
//! account has at most one result per tournament.
//!
//! Registrations of guests claimed before this migration move to their accounts, except
//! where the account already holds a registration in that tournament (the two places the
//! old sign-up could create; they stay as they are). Two results of one account in one
//! tournament cannot be told apart safely here: the migration refuses and names them, and a
//! platform recount after removing the spare registration settles them.

use sea_orm_migration::prelude::*;
use sea_orm_migration::sea_orm::{DatabaseBackend, Statement};

/// The unique key of an account's result in a tournament (guests' null accounts repeat freely).
const RESULTS_UNIQUE: &str = "ux_results_tournament_user";

/// Moves the registrations of claimed guests to their accounts where that makes no second
/// place: not where the account has one there, nor where two claimed guests of one account
/// both have one there.
const MOVE_CLAIMED_GUESTS: &str = "\
UPDATE registrations SET user_id = (
    SELECT g.claimed_by_user_id FROM guest_players g WHERE g.id = registrations.guest_id
)
WHERE user_id IS NULL
  AND EXISTS (
    SELECT 1 FROM guest_players g WHERE g.id = registrations.guest_id AND g.claimed_by_user_id IS NOT NULL
  )
  AND NOT EXISTS (
    SELECT 1 FROM registrations other
    JOIN guest_players g ON g.id = registrations.guest_id
    WHERE other.tournament_id = registrations.tournament_id
      AND other.id <> registrations.id
      AND (
        other.user_id = g.claimed_by_user_id
        OR other.guest_id IN (SELECT g2.id FROM guest_players g2 WHERE g2.claimed_by_user_id = g.claimed_by_user_id)
      )
  )";

/// Accounts with more than one result in one tournament, their ids as text (SQLite keeps a
/// uuid as 16 bytes: as hex there).
fn double_results(backend: DatabaseBackend) -> String {
    let text = |column: &str| match backend {
        DatabaseBackend::Sqlite => format!("lower(hex({column})) AS {column}"),
        _ => format!("CAST({column} AS TEXT) AS {column}"),
    };
    format!(
        "SELECT {}, {} FROM results WHERE user_id IS NOT NULL GROUP BY tournament_id, user_id HAVING COUNT(*) > 1",
        text("tournament_id"),
        text("user_id")
    )
}

/// A uuid read as text, in its usual hyphenated form whichever way the database wrote it.
fn hyphenated(text: &str) -> String {
    if text.len() != 32 {
        return text.to_owned();
    }
    [&text[0..8], &text[8..12], &text[12..16], &text[16..20], &text[20..32]].join("-")
}

#[derive(DeriveIden)]
enum Results {
    Table,
    TournamentId,
    UserId,
}

#[derive(DeriveMigrationName)]
pub struct Migration;

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        let db = manager.get_connection();
        db.execute_unprepared(MOVE_CLAIMED_GUESTS).await?;
        let backend = manager.get_database_backend();
        let doubles = db.query_all_raw(Statement::from_string(backend, double_results(backend))).await?;
        if !doubles.is_empty() {
            let pairs: Vec<String> = doubles
                .iter()
                .map(|row| {
                    let id = |column: &str| {
                        row.try_get::<String>("", column).map_or_else(|_| "?".to_owned(), |text| hyphenated(&text))
                    };
                    format!("tournament {} account {}", id("tournament_id"), id("user_id"))
                })
                .collect();
            return Err(DbErr::Migration(format!(
                "an account holds two results in one tournament ({}); cancel the spare registration and recount \
                 the tournament, then migrate again",
                pairs.join(", ")
            )));
        }
        manager
            .create_index(
                Index::create()
                    .name(RESULTS_UNIQUE)
                    .table(Results::Table)
                    .col(Results::TournamentId)
                    .col(Results::UserId)
                    .unique()
                    .to_owned(),
            )
            .await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager.drop_index(Index::drop().name(RESULTS_UNIQUE).table(Results::Table).to_owned()).await
    }
}
