//! The audit log: one row for each live action, broadcast and admin operation, written in
//! the same transaction as the change it records.

use chrono::Utc;
use floor_entities::audit_log;
use sea_orm::sea_query::Expr;
use sea_orm::{ActiveModelTrait, ColumnTrait, ConnectionTrait, DbErr, EntityTrait, QueryFilter, Set};
use serde_json::Value;
use uuid::Uuid;

/// The target kind of an invitation's records: the one kind whose details name a phone (the
/// phone invited), so the one a deletion erases a phone from.
pub const DEALER_INVITE: &str = "dealer_invite";

/// Records that `actor` did `action` (`admin.role_change`, `tournament.start`, …) to the
/// target `(kind, id)`, with what changed in `details`. Returns the record's id.
pub async fn record(
    conn: &impl ConnectionTrait,
    actor: Option<Uuid>,
    action: &str,
    target: (&str, String),
    details: serde_json::Value,
) -> Result<Uuid, DbErr> {
    let id = Uuid::now_v7();
    audit_log::ActiveModel {
        id: Set(id),
        actor_user_id: Set(actor),
        action: Set(action.to_owned()),
        target_type: Set(Some(target.0.to_owned())),
        target_id: Set(Some(target.1)),
        details: Set(details),
        created_at: Set(Utc::now()),
    }
    .insert(conn)
    .await?;
    Ok(id)
}

/// One record of [`rows`]: who did what, with which details.
pub struct Entry {
    pub actor: Option<Uuid>,
    pub action: &'static str,
    pub details: serde_json::Value,
}

/// The rows recording several actions on one target at once (a replayed queue's commands), in
/// the order given, all stamped now; the caller inserts them in as few statements as they allow
/// ([`ROWS_PER_INSERT`] to a statement).
pub fn rows(target: (&str, String), entries: Vec<Entry>) -> Vec<audit_log::ActiveModel> {
    let now = Utc::now();
    entries
        .into_iter()
        .map(|entry| audit_log::ActiveModel {
            id: Set(Uuid::now_v7()),
            actor_user_id: Set(entry.actor),
            action: Set(entry.action.to_owned()),
            target_type: Set(Some(target.0.to_owned())),
            target_id: Set(Some(target.1.clone())),
            details: Set(entry.details),
            created_at: Set(now),
        })
        .collect()
}

/// Records of a queue go this many to an `INSERT`: one statement for most queues, and the same
/// statement each time (a statement of a new length is prepared afresh).
pub const ROWS_PER_INSERT: usize = 64;

/// Replaces the details of the record `id`: only for an outcome known after the change
/// committed (how many devices a broadcast reached), never for the change itself.
pub async fn complete_details(conn: &impl ConnectionTrait, id: Uuid, details: serde_json::Value) -> Result<(), DbErr> {
    audit_log::Entity::update_many()
        .col_expr(audit_log::Column::Details, Expr::value(details))
        .filter(audit_log::Column::Id.eq(id))
        .exec(conn)
        .await?;
    Ok(())
}

/// `details` without `phone` and `phones`: the one place a phone stands in a record is the
/// phone an act reached. What an export shows of others' acts and what a deletion leaves of
/// the person's invitations keep everything else (ids, roles, counts).
pub fn without_phones(mut details: Value) -> Value {
    if let Some(fields) = details.as_object_mut() {
        fields.remove("phone");
        fields.remove("phones");
    }
    details
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn details_keep_everything_but_phones() {
        let details = serde_json::json!({"organizerId": "c1", "phone": "+79990000302", "phones": ["+79990000303"]});
        assert_eq!(without_phones(details), serde_json::json!({"organizerId": "c1"}));
        assert_eq!(without_phones(serde_json::json!([1])), serde_json::json!([1]));
    }
}
