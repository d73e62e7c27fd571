//! The keys of live commands in the database (`idempotency_keys`): read by a tournament's actor
//! before it decides a turn, and written in the turn's own transaction with what each command
//! came to ([`floor_actors::live::keys`] says why). A key is bound to its account, the
//! tournament and the command, and holds for ten minutes, or six hours and ten minutes for a
//! command made offline (as long as it may be replayed).

use std::collections::HashMap;

use axum::http::StatusCode;
use chrono::{DateTime, Utc};
use floor_actors::live::{Command, First, Keys, Recorded, Timed};
use floor_entities::idempotency_keys;
use sea_orm::sea_query::OnConflict;
use sea_orm::{ColumnTrait, ConnectionTrait, EntityTrait, ExprTrait, QueryFilter, Set};
use serde_json::Value;
use sha2::{Digest, Sha256};
use uuid::Uuid;

use crate::infra::error::{AppResult, ErrorCode};

/// How long a key holds what its command came to.
pub const KEEP: chrono::Duration = chrono::Duration::minutes(10);
/// How long the key of a command made offline (`occurredAt`) holds it: as long as the command
/// may still be replayed, so a queue sent again hours later applies nothing twice.
pub const KEEP_OFFLINE: chrono::Duration =
    floor_actors::live::command::BACK_AT_MOST.checked_add(&chrono::Duration::minutes(10)).expect("in range");

/// What makes two sendings one command: the tournament and the command itself. When it
/// happened (`occurredAt`) is not part of it: the app sends a command live and, if the answer
/// is lost, the same command again in a queue, stamped.
pub fn fingerprint(tournament_id: Uuid, command: &Command) -> String {
    let mut digest = Sha256::new();
    digest.update(tournament_id.as_bytes());
    // A command's JSON is its own: tagged by kind, every argument in a fixed order.
    digest.update(serde_json::to_vec(command).unwrap_or_default());
    hex::encode(digest.finalize())
}

/// What was kept with each keyed command of `queue` sent by `by` on `tournament_id`, in order.
pub async fn recorded(
    conn: &impl ConnectionTrait,
    tournament_id: Uuid,
    by: Uuid,
    queue: &[Timed],
    now: DateTime<Utc>,
) -> AppResult<Vec<Option<First>>> {
    let keys: Vec<String> = queue.iter().filter_map(|timed| timed.key.clone()).collect();
    let mut kept = HashMap::with_capacity(keys.len());
    for chunk in keys.chunks(crate::infra::db::IDS_PER_STATEMENT) {
        let rows = idempotency_keys::Entity::find()
            .filter(idempotency_keys::Column::UserId.eq(by))
            .filter(idempotency_keys::Column::Key.is_in(chunk.iter().cloned()))
            .all(conn)
            .await?;
        kept.extend(rows.into_iter().filter(|row| holds(row, now)).map(|row| (row.key.clone(), row)));
    }
    Ok(queue
        .iter()
        .map(|timed| {
            let row = kept.get(timed.key.as_ref()?)?;
            first_of(row, tournament_id, &timed.command)
        })
        .collect())
}

/// What a kept row says of a command sent again with its key.
fn first_of(row: &idempotency_keys::Model, tournament_id: Uuid, command: &Command) -> Option<First> {
    match row.tournament_id {
        Some(kept_for) if kept_for == tournament_id && row.fingerprint == fingerprint(tournament_id, command) => {
            let recorded = row.response_body.as_deref().and_then(|body| serde_json::from_str(body).ok());
            Some(recorded.map_or(First::Other, First::Same))
        }
        Some(_) => Some(First::Other),
        // Kept by a version before this one, whose fingerprint was of the HTTP request: its
        // answer, when it has one, is what the command came to.
        None => answered_before(row.status_code?, row.response_body.as_deref().unwrap_or_default()).map(First::Same),
    }
}

/// Whether a row still holds at `now`. A row of an older version whose first request never
/// ended holds nothing: no answer was kept, and the command it stood for is resolved by the
/// state (that version let such keys go).
fn holds(row: &idempotency_keys::Model, now: DateTime<Utc>) -> bool {
    let unexpired = match row.kept_until {
        Some(until) => until > now,
        None => row.created_at > now - KEEP,
    };
    unexpired && row.status_code.is_some()
}

/// Keeps `keys` for their commands on `tournament_id`, in the caller's transaction: false when
/// a key is held by a row kept meanwhile (nothing is kept then; the caller rolls back). The
/// account's keys that no longer hold are forgotten first.
pub async fn keep(
    tx: &impl ConnectionTrait,
    tournament_id: Uuid,
    keys: Keys<'_>,
    now: DateTime<Utc>,
) -> AppResult<bool> {
    if keys.records.is_empty() {
        return Ok(true);
    }
    idempotency_keys::Entity::delete_many()
        .filter(idempotency_keys::Column::UserId.eq(keys.by))
        .filter(
            idempotency_keys::Column::KeptUntil
                .lte(now)
                .or(idempotency_keys::Column::KeptUntil
                    .is_null()
                    .and(idempotency_keys::Column::CreatedAt.lte(now - KEEP)))
                .or(idempotency_keys::Column::StatusCode.is_null()),
        )
        .exec(tx)
        .await?;
    let rows = keys.records.iter().map(|record| idempotency_keys::ActiveModel {
        user_id: Set(keys.by),
        key: Set(record.key.clone()),
        fingerprint: Set(fingerprint(tournament_id, &record.command)),
        status_code: Set(Some(i32::from(status_of(&record.recorded).as_u16()))),
        response_body: Set(Some(serde_json::to_string(&record.recorded).unwrap_or_default())),
        created_at: Set(now),
        finished_at: Set(Some(now)),
        kept_until: Set(Some(now + if record.stated { KEEP_OFFLINE } else { KEEP })),
        tournament_id: Set(Some(tournament_id)),
    });
    let inserted = idempotency_keys::Entity::insert_many(rows)
        .on_conflict(
            OnConflict::columns([idempotency_keys::Column::UserId, idempotency_keys::Column::Key])
                .do_nothing()
                .to_owned(),
        )
        .exec_without_returning(tx)
        .await?;
    Ok(inserted == keys.records.len() as u64)
}

/// The HTTP status a kept outcome stands for (kept beside it, for an older version's reader).
fn status_of(recorded: &Recorded) -> StatusCode {
    match recorded.error() {
        None => StatusCode::OK,
        Some(err) => crate::infra::error::AppError::from(err).code().status(),
    }
}

/// What a command came to, read from the first answer an older version kept: the version it
/// left (a live command's answer holds the LiveState, an elimination's holds it in `state`, a
/// replay's holds the version), or its refusal.
fn answered_before(status: i32, body: &str) -> Option<Recorded> {
    let body: Value = serde_json::from_str(body).unwrap_or_default();
    if status < 400 {
        let version = body["version"].as_i64().or_else(|| body["state"]["version"].as_i64());
        return Some(Recorded::Applied { version, elimination: None });
    }
    let code = body["error"]["code"].as_str()?.parse::<ErrorCode>().ok()?;
    let message = body["error"]["message"].as_str().unwrap_or_default().to_owned();
    match crate::infra::error::AppError::new(code, message.clone()).into_live() {
        floor_actors::error::LiveError::Refused { refusal, message } => Some(Recorded::Refused { refusal, message }),
        _ if code == ErrorCode::ValidationError => Some(Recorded::Invalid { field: String::new(), problem: message }),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use floor_actors::error::Refusal;
    use floor_actors::rules::clock::Direction;

    use super::*;

    fn row(tournament_id: Option<Uuid>, fingerprint: String, recorded: &Recorded) -> idempotency_keys::Model {
        idempotency_keys::Model {
            user_id: Uuid::nil(),
            key: "k".to_owned(),
            fingerprint,
            status_code: Some(i32::from(status_of(recorded).as_u16())),
            response_body: Some(serde_json::to_string(recorded).expect("json")),
            created_at: Utc::now(),
            kept_until: Some(Utc::now() + KEEP),
            finished_at: Some(Utc::now()),
            tournament_id,
        }
    }

    #[test]
    fn a_key_answers_for_its_own_command_of_its_own_tournament_only() {
        let (one, other) = (Uuid::from_u128(1), Uuid::from_u128(2));
        let next = Command::Level(Direction::Next);
        let applied = Recorded::Applied { version: Some(4), elimination: None };
        let kept = row(Some(one), fingerprint(one, &next), &applied);
        assert_eq!(first_of(&kept, one, &next), Some(First::Same(applied)));
        assert_eq!(first_of(&kept, other, &next), Some(First::Other), "another tournament");
        assert_eq!(first_of(&kept, one, &Command::Level(Direction::Prev)), Some(First::Other), "another command");
        assert_eq!(first_of(&kept, one, &Command::Pause), Some(First::Other));
    }

    #[test]
    fn the_same_command_has_one_fingerprint_whenever_it_was_made() {
        let id = Uuid::from_u128(1);
        let out = |n| Command::Eliminate(Uuid::from_u128(n));
        assert_eq!(fingerprint(id, &out(5)), fingerprint(id, &out(5)));
        assert_ne!(fingerprint(id, &out(5)), fingerprint(id, &out(6)));
        assert_ne!(fingerprint(id, &out(5)), fingerprint(Uuid::from_u128(2), &out(5)));
    }

    #[test]
    fn a_refusal_is_kept_with_its_status() {
        let refused = Recorded::Refused { refusal: Refusal::NothingToUndo, message: "none".to_owned() };
        assert_eq!(status_of(&refused), StatusCode::CONFLICT);
        let invalid = Recorded::Invalid { field: "occurredAt".to_owned(), problem: "old".to_owned() };
        assert_eq!(status_of(&invalid), StatusCode::BAD_REQUEST);
        assert_eq!(status_of(&Recorded::Applied { version: None, elimination: None }), StatusCode::OK);
    }

    #[test]
    fn a_key_holds_ten_minutes_or_as_long_as_it_is_kept_and_only_with_an_answer() {
        let now = Utc::now();
        let applied = Recorded::Applied { version: Some(1), elimination: None };
        let kept = |created_ago: i64, kept_for: Option<i64>| idempotency_keys::Model {
            created_at: now - chrono::Duration::minutes(created_ago),
            kept_until: kept_for.map(|minutes| now + chrono::Duration::minutes(minutes)),
            ..row(None, String::new(), &applied)
        };
        assert!(holds(&kept(9, None), now));
        assert!(!holds(&kept(10, None), now));
        assert!(holds(&kept(300, Some(1)), now), "a command made offline is kept longer");
        assert!(!holds(&kept(300, Some(0)), now));
        assert!(!holds(&idempotency_keys::Model { status_code: None, ..kept(1, None) }, now), "never answered");
    }

    #[test]
    fn an_answer_kept_by_an_older_version_is_read_as_what_its_command_came_to() {
        let applied = answered_before(200, r#"{"version":7,"tables":[]}"#);
        assert_eq!(applied, Some(Recorded::Applied { version: Some(7), elimination: None }));
        let eliminated = answered_before(200, r#"{"elimination":{},"state":{"version":9}}"#);
        assert_eq!(eliminated, Some(Recorded::Applied { version: Some(9), elimination: None }));
        let refused = answered_before(409, r#"{"error":{"code":"ALREADY_ELIMINATED","message":"out"}}"#);
        assert_eq!(refused, Some(Recorded::Refused { refusal: Refusal::AlreadyEliminated, message: "out".to_owned() }));
        let kept = idempotency_keys::Model {
            status_code: Some(200),
            response_body: Some(r#"{"version":3}"#.to_owned()),
            ..row(None, "an HTTP digest".to_owned(), &Recorded::Applied { version: None, elimination: None })
        };
        assert_eq!(
            first_of(&kept, Uuid::from_u128(1), &Command::Pause),
            Some(First::Same(Recorded::Applied { version: Some(3), elimination: None }))
        );
    }
}
