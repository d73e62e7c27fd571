//! The audit log: one row for each live action, broadcast and admin operation, written in
//! the same transaction as the change it records.

use chrono::Utc;
use floor_entities::audit_log;
use sea_orm::{ActiveModelTrait, ConnectionTrait, DbErr, Set};
use uuid::Uuid;

/// Records that `actor` did `action` (`admin.role_change`, `tournament.start`, …) to the
/// target `(kind, id)`, with what changed in `details`.
pub async fn record(
    conn: &impl ConnectionTrait,
    actor: Option<Uuid>,
    action: &str,
    target: (&str, String),
    details: serde_json::Value,
) -> Result<(), DbErr> {
    audit_log::ActiveModel {
        id: Set(Uuid::now_v7()),
        actor_user_id: Set(actor),
        action: Set(action.to_owned()),
        target_type: Set(Some(target.0.to_owned())),
        target_id: Set(Some(target.1)),
        details: Set(details),
        created_at: Set(Utc::now()),
    }
    .insert(conn)
    .await?;
    Ok(())
}
