//! The schema history: one migration a step, applied in order by [`Migrator`].
//!
//! Every migration runs unchanged on SQLite and PostgreSQL: tables are built with the schema
//! builder, foreign keys are declared inside `CREATE TABLE` (SQLite cannot add them later),
//! and the raw statements (partial unique indexes) are the same text on both.
//! Unique rules are named indexes `ux_<table>_<columns>`, so a violation can be mapped to a
//! domain error by name on PostgreSQL.

use sea_orm_migration::prelude::*;
pub use sea_orm_migration::{MigrationStatus, MigratorTrait};

mod m20261122_000001_create_reference_data;
mod m20261122_000002_create_accounts;
mod m20261122_000003_create_clubs;
mod m20261122_000004_create_tournaments;
mod m20261122_000005_create_game_records;
mod m20261122_000006_create_engagement;
mod m20261122_000007_relax_late_cancel_strikes;
mod m20261122_000008_add_result_skill_alpha;
mod m20261122_000009_create_job_runs;
mod m20261124_000010_keep_one_place_per_person;
mod m20261124_000012_add_user_merged_into;
mod m20261124_000013_create_idempotency_keys;
mod m20261125_000014_create_tournament_leases;
mod m20261125_000015_create_calendar_links;
mod m20261125_000016_create_tournament_announcements;
mod m20261125_000017_keep_consent_and_deletion;
mod m20261126_000018_keep_push_tokens_per_account;
mod m20261127_000019_index_audit_log_by_target;
mod m20261127_000020_create_phone_bans;
mod m20261128_000021_keep_offline_commands;
mod m20261128_000022_create_registration_groups;
mod m20261128_000023_keep_keys_with_their_commands;
mod m20261129_000024_create_erasures;
mod m20261129_000025_create_schema_compat;
mod m20261129_000026_index_audit_log_by_actor;

pub mod compat;

/// Every table the migrations create, in creation order.
pub const TABLES: &[&str] = &[
    "cities",
    "city_translations",
    "level_tiers",
    "level_tier_translations",
    "users",
    "player_profiles",
    "dealer_profiles",
    "guest_players",
    "otp_codes",
    "refresh_tokens",
    "organizers",
    "organizer_members",
    "dealer_invites",
    "locations",
    "blind_templates",
    "seasons",
    "tournaments",
    "tournament_translations",
    "tournament_dealers",
    "registrations",
    "table_seats",
    "results",
    "strikes",
    "rating_config",
    "promo_slides",
    "promo_slide_translations",
    "follows",
    "push_tokens",
    "notifications",
    "audit_log",
    "job_runs",
    "idempotency_keys",
    "tournament_leases",
    "calendar_links",
    "tournament_announcements",
    "phone_bans",
    "registration_groups",
    "erasures",
    "schema_compat",
];

pub struct Migrator;

#[async_trait::async_trait]
impl MigratorTrait for Migrator {
    fn migrations() -> Vec<Box<dyn MigrationTrait>> {
        vec![
            Box::new(m20261122_000001_create_reference_data::Migration),
            Box::new(m20261122_000002_create_accounts::Migration),
            Box::new(m20261122_000003_create_clubs::Migration),
            Box::new(m20261122_000004_create_tournaments::Migration),
            Box::new(m20261122_000005_create_game_records::Migration),
            Box::new(m20261122_000006_create_engagement::Migration),
            Box::new(m20261122_000007_relax_late_cancel_strikes::Migration),
            Box::new(m20261122_000008_add_result_skill_alpha::Migration),
            Box::new(m20261122_000009_create_job_runs::Migration),
            Box::new(m20261124_000010_keep_one_place_per_person::Migration),
            Box::new(m20261124_000012_add_user_merged_into::Migration),
            Box::new(m20261124_000013_create_idempotency_keys::Migration),
            Box::new(m20261125_000014_create_tournament_leases::Migration),
            Box::new(m20261125_000015_create_calendar_links::Migration),
            Box::new(m20261125_000016_create_tournament_announcements::Migration),
            Box::new(m20261125_000017_keep_consent_and_deletion::Migration),
            Box::new(m20261126_000018_keep_push_tokens_per_account::Migration),
            Box::new(m20261127_000019_index_audit_log_by_target::Migration),
            Box::new(m20261127_000020_create_phone_bans::Migration),
            Box::new(m20261128_000021_keep_offline_commands::Migration),
            Box::new(m20261128_000022_create_registration_groups::Migration),
            Box::new(m20261128_000023_keep_keys_with_their_commands::Migration),
            Box::new(m20261129_000024_create_erasures::Migration),
            Box::new(m20261129_000025_create_schema_compat::Migration),
            Box::new(m20261129_000026_index_audit_log_by_actor::Migration),
        ]
    }
}

/// A named foreign key from `from_table.from_col` to `to_table.to_col`, for use inside
/// `CREATE TABLE`. `ON UPDATE` stays the default (no action).
fn fk<A, B, C, D>(
    name: &str,
    from_table: A,
    from_col: B,
    to_table: C,
    to_col: D,
    on_delete: ForeignKeyAction,
) -> ForeignKeyCreateStatement
where
    A: IntoIden,
    B: IntoIden,
    C: IntoIden,
    D: IntoIden,
{
    ForeignKey::create().name(name).from(from_table, from_col).to(to_table, to_col).on_delete(on_delete).to_owned()
}

/// A named plain index over `cols` of `table`.
fn index<T, C, I>(name: &str, table: T, cols: I) -> IndexCreateStatement
where
    T: IntoIden,
    C: IntoIndexColumn,
    I: IntoIterator<Item = C>,
{
    let mut index = Index::create();
    index.name(name).table(table);
    for col in cols {
        index.col(col);
    }
    index.to_owned()
}

/// A named unique index over `cols` of `table`.
fn unique<T, C, I>(name: &str, table: T, cols: I) -> IndexCreateStatement
where
    T: IntoIden,
    C: IntoIndexColumn,
    I: IntoIterator<Item = C>,
{
    index(name, table, cols).unique().to_owned()
}

/// Drops `tables` in the given order (children first).
async fn drop_tables<T: IntoIden>(
    manager: &SchemaManager<'_>,
    tables: impl IntoIterator<Item = T>,
) -> Result<(), DbErr> {
    for table in tables {
        manager.drop_table(Table::drop().table(table).to_owned()).await?;
    }
    Ok(())
}
