//! Helpers that staff a club over the API: members added by an owner, dealers by invite,
//! and a tournament for them to deal.

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

    /// Has the club's owner invite `phone` to deal and returns the one-time code.
    pub async fn invite_dealer(&self, club: &Club, phone: &str) -> String {
        let reply = self
            .post(&format!("/organizers/{}/dealer-invites", club.id), Some(&club.owner.access_token), json!({"phone": phone}))
            .await;
        assert_eq!(reply.status, 201, "{reply:?}");
        reply.body["code"].as_str().expect("a code").to_owned()
    }

    /// Has the club's owner open a venue and a tournament (platform blind template) titled
    /// `title`, starting `days` days from now. Returns the tournament id.
    pub async fn create_tournament(&self, club: &Club, title: &str, days: i64) -> Uuid {
        let token = Some(club.owner.access_token.as_str());
        let venue = json!({
            "name": "Main hall", "citySlug": "moscow", "address": "Tverskaya 1",
            "timezone": "Europe/Moscow", "lat": 55.75, "lng": 37.61,
        });
        let location = self.post(&format!("/organizers/{}/locations", club.id), token, venue).await;
        assert_eq!(location.status, 201, "{location:?}");
        let templates = self.get(&format!("/organizers/{}/blind-templates", club.id), token).await;
        let template = templates.assert_ok()["items"][0]["id"].clone();
        let starts_at = (chrono::Utc::now() + chrono::Duration::days(days)).to_rfc3339();
        let body = json!({
            "locationId": location.body["id"], "blindTemplateId": template, "type": "mtt",
            "startsAt": starts_at, "capacity": 20, "translations": {"ru": {"title": title}},
        });
        let tournament = self.post(&format!("/organizers/{}/tournaments", club.id), token, body).await;
        assert_eq!(tournament.status, 201, "{tournament:?}");
        id_of(&tournament.body["id"])
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
