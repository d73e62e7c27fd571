//! Helpers that staff a club over the API: members added by an owner, dealers by invite.

use serde_json::{Value, json};
use uuid::Uuid;

use crate::helpers::{Club, Session, TestApp};

impl TestApp {
    /// Has the club's owner add `phone` as `role` (`owner` or `td`), then signs that person
    /// in. Returns the session and the membership id.
    pub async fn add_member(&self, club: &Club, phone: &str, role: &str) -> (Session, Uuid) {
        let reply = self
            .post(
                &format!("/organizers/{}/members", club.id),
                Some(&club.owner.access_token),
                json!({"phone": phone, "role": role}),
            )
            .await;
        assert_eq!(reply.status, 201, "{reply:?}");
        (self.sign_in(phone).await, id_of(&reply.body["id"]))
    }

    /// Has the club's owner add `phone` as a td, and signs them in.
    pub async fn add_td(&self, club: &Club, phone: &str) -> Session {
        self.add_member(club, phone, "td").await.0
    }

    /// Has the club's owner invite `phone` to deal and returns the one-time code.
    pub async fn invite_dealer(&self, club: &Club, phone: &str) -> String {
        let reply = self
            .post(
                &format!("/organizers/{}/dealer-invites", club.id),
                Some(&club.owner.access_token),
                json!({"phone": phone}),
            )
            .await;
        assert_eq!(reply.status, 201, "{reply:?}");
        reply.body["code"].as_str().expect("a code").to_owned()
    }

    /// Invites `phone`, signs that person in and claims the invite: a dealer of the club.
    pub async fn make_dealer(&self, club: &Club, phone: &str) -> Session {
        let code = self.invite_dealer(club, phone).await;
        let dealer = self.sign_in(phone).await;
        self.post("/dealer-invites/claim", Some(&dealer.access_token), json!({"code": code})).await.assert_ok();
        dealer
    }
}

/// A UUID from a JSON string.
#[track_caller]
pub fn id_of(value: &Value) -> Uuid {
    value.as_str().and_then(|id| id.parse().ok()).unwrap_or_else(|| panic!("a UUID, got {value}"))
}
