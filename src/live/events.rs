//! The `/live` protocol as types: what a client emits, what its `join` is answered with, and
//! what the server emits to a tournament's room. socketioxide routes by event name, so every
//! event keeps its wire name beside its payload, and the socket handlers match on these
//! enums: an event added here without a handler does not compile.

use serde::{Deserialize, Serialize};
use uuid::Uuid;

use floor_actors::live::LiveState;

use crate::error::ErrorCode;

/// The events a client emits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ClientEvent {
    /// `{tournamentId}`: enter the tournament's room; acked with a [`JoinAck`].
    Join,
    /// `{tournamentId}`: leave the room; no ack.
    Leave,
}

impl ClientEvent {
    pub const ALL: [Self; 2] = [Self::Join, Self::Leave];

    /// The event's name on the wire.
    pub const fn name(self) -> &'static str {
        match self {
            Self::Join => "join",
            Self::Leave => "leave",
        }
    }
}

/// The payload of `join` and `leave`.
#[derive(Clone, Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RoomRequest {
    pub tournament_id: Uuid,
}

/// The ack of `join`: `{ok: true, state}` or `{ok: false, error: {code, message}}`.
#[derive(Debug, Serialize)]
pub struct JoinAck<'a> {
    ok: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    state: Option<&'a LiveState>,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<AckError>,
}

/// Why a `join` was refused, in the shape of the HTTP errors.
#[derive(Debug, Serialize)]
struct AckError {
    code: ErrorCode,
    message: String,
}

impl<'a> JoinAck<'a> {
    pub fn joined(state: &'a LiveState) -> Self {
        Self { ok: true, state: Some(state), error: None }
    }

    pub fn refused(code: ErrorCode, message: impl Into<String>) -> Self {
        Self { ok: false, state: None, error: Some(AckError { code, message: message.into() }) }
    }
}

/// The events the server emits to a tournament's room; each serialises as its payload.
#[derive(Debug, Serialize)]
#[serde(untagged)]
pub enum ServerEvent<'a> {
    /// The full LiveState after a change.
    State(&'a LiveState),
}

impl ServerEvent<'_> {
    /// The event's name on the wire.
    pub const fn name(&self) -> &'static str {
        match self {
            Self::State(_) => "state",
        }
    }
}

/// The room of one tournament's watchers.
pub fn room(tournament_id: Uuid) -> String {
    format!("tournament:{tournament_id}")
}

/// The room of one account's sockets (joined at connect, never by a client's `join`), so a
/// ban reaches every connection of the account on every node.
pub fn user_room(user_id: Uuid) -> String {
    format!("user:{user_id}")
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_refused_join_carries_the_contract_code_and_no_state() {
        let ack = serde_json::to_value(JoinAck::refused(ErrorCode::NotFound, "tournament not found")).expect("json");
        assert_eq!(ack, json!({"ok": false, "error": {"code": "NOT_FOUND", "message": "tournament not found"}}));
    }

    #[test]
    fn a_request_names_its_tournament_in_camel_case() {
        let id = Uuid::now_v7();
        let request: RoomRequest = serde_json::from_value(json!({"tournamentId": id})).expect("parses");
        assert_eq!(request.tournament_id, id);
        assert!(serde_json::from_value::<RoomRequest>(json!({"tournament_id": id})).is_err());
    }

    #[test]
    fn event_names_are_the_contracts() {
        assert_eq!(ClientEvent::ALL.map(ClientEvent::name), ["join", "leave"]);
        assert_eq!(room(Uuid::nil()), "tournament:00000000-0000-0000-0000-000000000000");
        assert_eq!(user_room(Uuid::nil()), "user:00000000-0000-0000-0000-000000000000");
    }
}
