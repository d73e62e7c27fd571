//! Dealer invitations: `GET/POST /organizers/{id}/dealer-invites`, `POST /dealer-invites/claim`.

use chrono::{DateTime, Duration, Utc};
use serde_json::json;
use uuid::Uuid;

use crate::helpers::{Backend, on_both_databases, spawn_app};

on_both_databases!(
    an_invite_answers_a_one_time_code_that_is_stored_only_as_a_hash,
    claiming_an_invite_makes_the_caller_a_dealer_of_the_club,
    an_invite_code_works_once,
    an_expired_invite_is_not_found,
    an_invite_for_another_phone_is_forbidden,
    an_unknown_code_is_not_found,
    a_member_claiming_an_invite_keeps_the_stronger_role,
    two_simultaneous_claims_of_one_code_make_one_dealer,
    invites_are_managed_by_the_clubs_owners_only,
);

async fn an_invite_answers_a_one_time_code_that_is_stored_only_as_a_hash(backend: Backend) {
    let Some(app) = spawn_app(backend).await else { return };
    let club = app.create_club("River Club", "+79990000301").await;
    let path = format!("/organizers/{}/dealer-invites", club.id);
    let token = Some(club.owner.access_token.as_str());

    let created = app.post(&path, token, json!({"phone": "+7 999 000-03-02"})).await;
    assert_eq!(created.status, 201, "{created:?}");
    let invite = created.body.clone();
    assert_eq!(invite["phone"], "+79990000302");
    let code = invite["code"].as_str().expect("a code");
    assert_eq!(code.len(), 8);
    assert!(code.bytes().all(|b| b"ABCDEFGHJKMNPQRSTUVWXYZ23456789".contains(&b)), "{code}");
    let expires_at: DateTime<Utc> = invite["expiresAt"].as_str().and_then(|t| t.parse().ok()).expect("a time");
    let ttl = expires_at - Utc::now();
    assert!(ttl > Duration::days(7) - Duration::minutes(1) && ttl <= Duration::days(7), "{ttl}");

    let stored = app.scalar("SELECT code_hash FROM dealer_invites").await.expect("a row");
    assert_eq!(stored.len(), 64, "a hex SHA-256");
    assert!(!stored.contains(code));
    let second = app.post(&path, token, json!({"phone": "+79990000302"})).await;
    assert_ne!(second.assert_ok()["code"], invite["code"], "every invite has its own code");

    let list = app.get(&path, token).await;
    let items = list.assert_ok()["items"].as_array().expect("items").clone();
    assert_eq!(items.len(), 2);
    assert_eq!(items[1]["id"], invite["id"], "newest first");
    assert_eq!(items[1]["status"], "pending");
    assert_eq!(items[1]["phone"], "+79990000302");
    assert!(items.iter().all(|item| item.get("code").is_none() && item.get("codeHash").is_none()));
    assert!(!list.body.to_string().contains(code));
    assert_eq!(app.count("SELECT COUNT(*) FROM audit_log WHERE action = 'dealer_invite.create'").await, 2);

    app.post(&path, token, json!({"phone": "not a phone"})).await.assert_error(400, "VALIDATION_ERROR");
}

async fn claiming_an_invite_makes_the_caller_a_dealer_of_the_club(backend: Backend) {
    let Some(app) = spawn_app(backend).await else { return };
    let club = app.create_club("River Club", "+79990000311").await;
    let code = app.invite_dealer(&club, "+79990000312").await;
    let dealer = app.sign_in("+79990000312").await;

    // Typed by hand: lower case, with a dash and spaces.
    let typed = format!(" {}-{} ", code[..4].to_lowercase(), &code[4..]);
    let claimed = app.post("/dealer-invites/claim", Some(&dealer.access_token), json!({"code": typed})).await;
    let membership = claimed.assert_ok().clone();
    assert_eq!(claimed.status, 201, "a new membership");
    assert_eq!(membership["role"], "dealer");
    assert_eq!(membership["organizer"]["id"], json!(club.id));
    assert_eq!(membership["organizer"]["name"], "River Club");

    let mine = app.get("/organizers/mine", Some(&dealer.access_token)).await;
    assert_eq!(mine.assert_ok()["items"], json!([membership]));
    let profiles = app
        .count(&format!("SELECT COUNT(*) FROM dealer_profiles WHERE user_id = {}", app.uuid_literal(dealer.user_id)))
        .await;
    assert_eq!(profiles, 1);

    let invites = app.get(&format!("/organizers/{}/dealer-invites", club.id), Some(&club.owner.access_token)).await;
    let invite = invites.assert_ok()["items"][0].clone();
    assert_eq!(invite["status"], "claimed");
    assert_eq!(invite["claimedByUserId"], json!(dealer.user_id));
    assert!(invite["claimedAt"].is_string());
    let members = app.get(&format!("/organizers/{}/members", club.id), Some(&club.owner.access_token)).await;
    assert_eq!(members.assert_ok()["items"][1]["id"], membership["id"]);
    assert_eq!(members.body["items"][1]["role"], "dealer");
    assert_eq!(app.count("SELECT COUNT(*) FROM audit_log WHERE action = 'dealer_invite.claim'").await, 1);

    // A second club's invite adds a second dealer membership and keeps the one profile.
    let other = app.create_club("Hill Club", "+79990000313").await;
    let code = app.invite_dealer(&other, "+79990000312").await;
    app.post("/dealer-invites/claim", Some(&dealer.access_token), json!({"code": code})).await.assert_ok();
    assert_eq!(app.count("SELECT COUNT(*) FROM dealer_profiles").await, 1);
    let mine = app.get("/organizers/mine", Some(&dealer.access_token)).await;
    assert_eq!(mine.assert_ok()["items"].as_array().map(Vec::len), Some(2));
}

async fn an_invite_code_works_once(backend: Backend) {
    let Some(app) = spawn_app(backend).await else { return };
    let club = app.create_club("River Club", "+79990000321").await;
    let code = app.invite_dealer(&club, "+79990000322").await;
    let dealer = app.sign_in("+79990000322").await;
    let token = Some(dealer.access_token.as_str());

    app.post("/dealer-invites/claim", token, json!({"code": code})).await.assert_ok();
    app.post("/dealer-invites/claim", token, json!({"code": code})).await.assert_error(404, "NOT_FOUND");
    assert_eq!(app.count("SELECT COUNT(*) FROM organizer_members").await, 2);
    assert_eq!(app.count("SELECT COUNT(*) FROM audit_log WHERE action = 'dealer_invite.claim'").await, 1);
}

async fn an_expired_invite_is_not_found(backend: Backend) {
    let Some(app) = spawn_app(backend).await else { return };
    let club = app.create_club("River Club", "+79990000331").await;
    let code = app.invite_dealer(&club, "+79990000332").await;
    let past = (Utc::now() - Duration::minutes(1)).to_rfc3339();
    app.exec(&format!("UPDATE dealer_invites SET expires_at = '{past}'")).await;
    let dealer = app.sign_in("+79990000332").await;

    app.post("/dealer-invites/claim", Some(&dealer.access_token), json!({"code": code}))
        .await
        .assert_error(404, "NOT_FOUND");
    assert_eq!(app.count("SELECT COUNT(*) FROM organizer_members").await, 1);
    let invites = app.get(&format!("/organizers/{}/dealer-invites", club.id), Some(&club.owner.access_token)).await;
    assert_eq!(invites.assert_ok()["items"][0]["status"], "expired");
    assert!(invites.body["items"][0]["claimedAt"].is_null());
}

async fn an_invite_for_another_phone_is_forbidden(backend: Backend) {
    let Some(app) = spawn_app(backend).await else { return };
    let club = app.create_club("River Club", "+79990000341").await;
    let code = app.invite_dealer(&club, "+79990000342").await;
    let stranger = app.sign_in("+79990000343").await;

    app.post("/dealer-invites/claim", Some(&stranger.access_token), json!({"code": code}))
        .await
        .assert_error(403, "FORBIDDEN");
    assert_eq!(app.count("SELECT COUNT(*) FROM organizer_members").await, 1);
    assert_eq!(app.count("SELECT COUNT(*) FROM dealer_invites WHERE claimed_at IS NULL").await, 1, "still unspent");

    let invited = app.sign_in("+79990000342").await;
    app.post("/dealer-invites/claim", Some(&invited.access_token), json!({"code": code})).await.assert_ok();
    // Once spent, the code is unknown to everyone: no hint that the phone was wrong.
    app.post("/dealer-invites/claim", Some(&stranger.access_token), json!({"code": code}))
        .await
        .assert_error(404, "NOT_FOUND");
}

async fn an_unknown_code_is_not_found(backend: Backend) {
    let Some(app) = spawn_app(backend).await else { return };
    let user = app.sign_in("+79990000351").await;
    let token = Some(user.access_token.as_str());
    app.post("/dealer-invites/claim", token, json!({"code": "ABCDEFGH"})).await.assert_error(404, "NOT_FOUND");
    app.post("/dealer-invites/claim", token, json!({"code": " - "})).await.assert_error(400, "VALIDATION_ERROR");
    app.post("/dealer-invites/claim", token, json!({})).await.assert_error(400, "VALIDATION_ERROR");
    app.post("/dealer-invites/claim", None, json!({"code": "ABCDEFGH"})).await.assert_error(401, "UNAUTHORIZED");
}

async fn a_member_claiming_an_invite_keeps_the_stronger_role(backend: Backend) {
    let Some(app) = spawn_app(backend).await else { return };
    let club = app.create_club("River Club", "+79990000361").await;
    let (td, td_id) = app.add_member(&club, "+79990000362", "td").await;
    let code = app.invite_dealer(&club, "+79990000362").await;

    let claimed = app.post("/dealer-invites/claim", Some(&td.access_token), json!({"code": code})).await;
    assert_eq!(claimed.status, 200, "no new membership: {claimed:?}");
    assert_eq!(claimed.body["role"], "td");
    assert_eq!(claimed.body["id"], json!(td_id));
    assert_eq!(app.count("SELECT COUNT(*) FROM dealer_invites WHERE claimed_at IS NOT NULL").await, 1, "spent");
    assert_eq!(app.count("SELECT COUNT(*) FROM organizer_members").await, 2);
}

async fn two_simultaneous_claims_of_one_code_make_one_dealer(backend: Backend) {
    let Some(app) = spawn_app(backend).await else { return };
    let club = app.create_club("River Club", "+79990000371").await;
    for round in 0..3 {
        let phone = format!("+7999000038{round}");
        let code = app.invite_dealer(&club, &phone).await;
        let dealer = app.sign_in(&phone).await;
        let token = Some(dealer.access_token.as_str());
        let body = json!({"code": code});

        let (a, b) = tokio::join!(
            app.post("/dealer-invites/claim", token, body.clone()),
            app.post("/dealer-invites/claim", token, body.clone()),
        );
        let mut statuses = [a.status.as_u16(), b.status.as_u16()];
        statuses.sort_unstable();
        assert_eq!(statuses, [201, 404], "{a:?} {b:?}");
        let memberships = app
            .count(&format!(
                "SELECT COUNT(*) FROM organizer_members WHERE user_id = {}",
                app.uuid_literal(dealer.user_id)
            ))
            .await;
        assert_eq!(memberships, 1, "round {round}");
    }
    assert_eq!(app.count("SELECT COUNT(*) FROM audit_log WHERE action = 'dealer_invite.claim'").await, 3);
}

async fn invites_are_managed_by_the_clubs_owners_only(backend: Backend) {
    let Some(app) = spawn_app(backend).await else { return };
    let club = app.create_club("River Club", "+79990000391").await;
    let other = app.create_club("Hill Club", "+79990000392").await;
    let (td, _) = app.add_member(&club, "+79990000393", "td").await;
    let admin = app.platform_admin().await;
    let path = format!("/organizers/{}/dealer-invites", club.id);
    let body = json!({"phone": "+79990000394"});

    app.get(&path, None).await.assert_error(401, "UNAUTHORIZED");
    app.post(&path, None, body.clone()).await.assert_error(401, "UNAUTHORIZED");
    for outsider in [&td, &other.owner, &admin] {
        let token = Some(outsider.access_token.as_str());
        app.get(&path, token).await.assert_error(403, "FORBIDDEN");
        app.post(&path, token, body.clone()).await.assert_error(403, "FORBIDDEN");
    }
    assert_eq!(app.count("SELECT COUNT(*) FROM dealer_invites").await, 0);
    let unknown = format!("/organizers/{}/dealer-invites", Uuid::new_v4());
    app.get(&unknown, Some(&club.owner.access_token)).await.assert_error(404, "NOT_FOUND");
}
