//! Sign-in: every rule of the spec's Authentication section, through HTTP.

use chrono::{Duration, Utc};
use floor::domain::auth::tokens::sha256_hex;
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use serde_json::json;
use tokio::task::JoinSet;

use crate::helpers::{Backend, PLATFORM_ADMIN_PHONE, TEST_JWT_SECRET, on_both_databases, spawn_app};

const PHONE: &str = "+79990001122";

on_both_databases!(
    requesting_a_code_names_the_channel_and_stores_only_its_hash,
    a_malformed_phone_is_a_validation_error_naming_the_field,
    a_number_that_cannot_exist_is_refused_and_nothing_is_sent,
    a_fixed_line_gets_no_code_and_nothing_is_sent,
    mobiles_of_other_countries_get_their_code,
    ten_parallel_code_requests_for_one_phone_give_exactly_three,
    the_request_limit_reopens_after_ten_minutes,
    the_right_code_signs_in_and_creates_the_account_once,
    a_code_is_consumed_by_its_successful_verification,
    the_sixth_attempt_fails_even_with_the_right_code,
    an_expired_code_is_refused,
    only_the_latest_code_is_accepted,
    platform_admin_phones_get_super_admin_at_every_sign_in,
    a_banned_account_gets_user_banned_at_request_verify_and_with_its_tokens,
    refresh_rotates_the_pair_and_spends_the_old_token,
    reusing_a_spent_refresh_token_revokes_every_token_of_that_sign_in,
    parallel_refreshes_of_one_token_let_exactly_one_through,
    an_expired_or_unknown_refresh_token_is_refused,
    tokens_signed_otherwise_are_refused,
    guests_with_the_same_phone_are_linked_to_the_new_account,
);

async fn requesting_a_code_names_the_channel_and_stores_only_its_hash(backend: Backend) {
    let Some(app) = spawn_app(backend).await else { return };
    let reply = app.request_code("+7 (999) 000-11-22").await;
    assert_eq!(reply.assert_ok(), &json!({"channel": "fake", "expiresInSec": 300}));
    let code = app.last_code(PHONE);
    let stored = app.scalar("SELECT code_hash FROM otp_codes").await.expect("a code row");
    assert_eq!(stored, sha256_hex(&code));
    assert_ne!(stored, code);
    let fresh = app
        .count(&format!(
            "SELECT COUNT(*) FROM otp_codes WHERE phone = '{PHONE}' AND attempts = 0 AND consumed_at IS NULL"
        ))
        .await;
    assert_eq!(fresh, 1);
    let issued = app.timestamp("SELECT created_at FROM otp_codes").await;
    let expires = app.timestamp("SELECT expires_at FROM otp_codes").await;
    assert_eq!(expires - issued, Duration::minutes(5), "a code lives five minutes");
}

async fn a_malformed_phone_is_a_validation_error_naming_the_field(backend: Backend) {
    let Some(app) = spawn_app(backend).await else { return };
    for phone in ["89990001122", "+7999abc", "+1"] {
        let reply = app.request_code(phone).await;
        reply.assert_error(400, "VALIDATION_ERROR");
        assert_eq!(reply.body["error"]["details"][0]["field"], "phone");
    }
    assert_eq!(app.count("SELECT COUNT(*) FROM otp_codes").await, 0);
}

async fn a_number_that_cannot_exist_is_refused_and_nothing_is_sent(backend: Backend) {
    let Some(app) = spawn_app(backend).await else { return };
    // Shaped like phones, but no country numbers its lines like this.
    for phone in ["+70000000000", "+7 999 000-00-0", "+1 555 0100 000", "+999123456789"] {
        let reply = app.request_code(phone).await;
        reply.assert_error(400, "VALIDATION_ERROR");
        assert_eq!(reply.body["error"]["details"][0]["field"], "phone", "{phone}");
        assert!(app.outbox.last_code(phone).is_none(), "nothing went to {phone}");
        // Verifying is refused the same way, before any code is looked up.
        app.verify(phone, "123456").await.assert_error(400, "VALIDATION_ERROR");
    }
    assert_eq!(app.count("SELECT COUNT(*) FROM otp_codes").await, 0);
}

async fn a_fixed_line_gets_no_code_and_nothing_is_sent(backend: Backend) {
    let Some(app) = spawn_app(backend).await else { return };
    for (phone, kind) in [
        ("+74951234567", "a fixed line"),       // a Moscow landline
        ("+7 (495) 123-45-67", "a fixed line"), // the same, as typed
        ("+18005550123", "a toll-free number"), // US toll-free
        ("+448712345678", "a premium-rate number"),
    ] {
        let reply = app.request_code(phone).await;
        reply.assert_error(400, "VALIDATION_ERROR");
        let problem = &reply.body["error"]["details"][0];
        assert_eq!(problem["field"], "phone");
        let message = problem["problem"].as_str().expect("a problem");
        assert!(message.contains(kind) && message.contains("mobile"), "{phone}: {message}");
        assert!(app.outbox.last_code(phone).is_none(), "nothing went to {phone}");
    }
    assert!(app.outbox.last_code("+74951234567").is_none());
    assert_eq!(app.count("SELECT COUNT(*) FROM otp_codes").await, 0);
}

async fn mobiles_of_other_countries_get_their_code(backend: Backend) {
    let Some(app) = spawn_app(backend).await else { return };
    // Kazakhstan (sharing +7), Belarus, the US (fixed or mobile there), Britain, Germany.
    let phones = ["+77011234567", "+375291234567", "+12025550123", "+447911123456", "+4915112345678"];
    for phone in phones {
        app.request_code(phone).await.assert_ok();
        assert!(app.outbox.last_code(phone).is_some(), "a code went to {phone}");
    }
    assert_eq!(app.count("SELECT COUNT(*) FROM otp_codes").await, phones.len() as i64);
}

async fn ten_parallel_code_requests_for_one_phone_give_exactly_three(backend: Backend) {
    let Some(app) = spawn_app(backend).await else { return };
    let app = std::sync::Arc::new(app);
    let mut requests = JoinSet::new();
    for _ in 0..10 {
        let app = app.clone();
        requests.spawn(async move { app.request_code(PHONE).await });
    }
    let (mut sent, mut limited) = (0, 0);
    while let Some(reply) = requests.join_next().await {
        let reply = reply.expect("the request task finishes");
        match reply.status.as_u16() {
            200 => sent += 1,
            429 => {
                assert_eq!(reply.code(), "OTP_RATE_LIMITED");
                limited += 1;
            }
            other => panic!("unexpected status {other}: {reply:?}"),
        }
    }
    assert_eq!((sent, limited), (3, 7));
    assert_eq!(app.count("SELECT COUNT(*) FROM otp_codes").await, 3);
}

async fn the_request_limit_reopens_after_ten_minutes(backend: Backend) {
    let Some(app) = spawn_app(backend).await else { return };
    for _ in 0..3 {
        app.request_code(PHONE).await.assert_ok();
    }
    app.request_code(PHONE).await.assert_error(429, "OTP_RATE_LIMITED");
    // Another phone has its own limit.
    app.request_code("+79990003344").await.assert_ok();
    let eleven_minutes_ago = (Utc::now() - Duration::minutes(11)).to_rfc3339();
    app.exec(&format!("UPDATE otp_codes SET created_at = '{eleven_minutes_ago}' WHERE phone = '{PHONE}'")).await;
    app.request_code(PHONE).await.assert_ok();
    // The codes that no longer count are forgotten: only the phone's new one and the other
    // phone's are kept. A check forgets them too.
    assert_eq!(app.count(&format!("SELECT COUNT(*) FROM otp_codes WHERE phone = '{PHONE}'")).await, 1);
    assert_eq!(app.count("SELECT COUNT(*) FROM otp_codes").await, 2);
    app.exec(&format!("UPDATE otp_codes SET created_at = '{eleven_minutes_ago}' WHERE phone = '{PHONE}'")).await;
    app.post("/auth/otp/verify", None, json!({"phone": "+79990003344", "code": "000000"})).await;
    assert_eq!(app.count(&format!("SELECT COUNT(*) FROM otp_codes WHERE phone = '{PHONE}'")).await, 0);
}

async fn the_right_code_signs_in_and_creates_the_account_once(backend: Backend) {
    let Some(app) = spawn_app(backend).await else { return };
    app.request_code(PHONE).await.assert_ok();
    let reply = app.verify(PHONE, &app.last_code(PHONE)).await;
    let body = reply.assert_ok();
    assert_eq!(body["isNewUser"], true);
    assert_eq!(body["user"]["phone"], PHONE);
    assert_eq!(body["user"]["profileComplete"], false);
    assert_eq!(body["user"]["profile"]["skill"], 5.0);
    assert_eq!(body["user"]["profile"]["level"], 1);
    assert_eq!(body["user"]["profile"]["tier"], "fish");
    assert!(body["accessToken"].is_string() && body["refreshToken"].is_string());
    let token = body["accessToken"].as_str().expect("token");
    let me = app.get("/auth/me", Some(token)).await;
    assert_eq!(me.assert_ok()["phone"], PHONE);

    app.request_code(PHONE).await.assert_ok();
    let again = app.verify(PHONE, &app.last_code(PHONE)).await;
    assert_eq!(again.assert_ok()["isNewUser"], false);
    assert_eq!(again.body["user"]["id"], body["user"]["id"]);
    assert_eq!(app.count("SELECT COUNT(*) FROM users").await, 1);
    assert_eq!(app.count("SELECT COUNT(*) FROM player_profiles").await, 1);
}

async fn a_code_is_consumed_by_its_successful_verification(backend: Backend) {
    let Some(app) = spawn_app(backend).await else { return };
    app.request_code(PHONE).await.assert_ok();
    let code = app.last_code(PHONE);
    app.verify(PHONE, &code).await.assert_ok();
    app.verify(PHONE, &code).await.assert_error(400, "INVALID_OTP");
}

async fn the_sixth_attempt_fails_even_with_the_right_code(backend: Backend) {
    let Some(app) = spawn_app(backend).await else { return };
    app.request_code(PHONE).await.assert_ok();
    let code = app.last_code(PHONE);
    let wrong = if code == "000000" { "111111" } else { "000000" };
    for _ in 0..5 {
        app.verify(PHONE, wrong).await.assert_error(400, "INVALID_OTP");
    }
    app.verify(PHONE, &code).await.assert_error(400, "INVALID_OTP");
    assert_eq!(app.count("SELECT COUNT(*) FROM users").await, 0);
}

async fn an_expired_code_is_refused(backend: Backend) {
    let Some(app) = spawn_app(backend).await else { return };
    app.request_code(PHONE).await.assert_ok();
    let a_second_ago = (Utc::now() - Duration::seconds(1)).to_rfc3339();
    app.exec(&format!("UPDATE otp_codes SET expires_at = '{a_second_ago}'")).await;
    app.verify(PHONE, &app.last_code(PHONE)).await.assert_error(400, "INVALID_OTP");
}

async fn only_the_latest_code_is_accepted(backend: Backend) {
    let Some(app) = spawn_app(backend).await else { return };
    app.request_code(PHONE).await.assert_ok();
    let first = app.last_code(PHONE);
    app.request_code(PHONE).await.assert_ok();
    let second = app.last_code(PHONE);
    if first != second {
        app.verify(PHONE, &first).await.assert_error(400, "INVALID_OTP");
    }
    app.verify(PHONE, &second).await.assert_ok();
}

async fn platform_admin_phones_get_super_admin_at_every_sign_in(backend: Backend) {
    let Some(app) = spawn_app(backend).await else { return };
    let admin = app.sign_in(PLATFORM_ADMIN_PHONE).await;
    let me = app.get("/auth/me", Some(&admin.access_token)).await;
    assert_eq!(me.assert_ok()["adminRole"], "super_admin");
    // Taken away by hand, the role comes back at the next sign-in.
    app.exec("UPDATE users SET admin_role = NULL").await;
    let again = app.sign_in(PLATFORM_ADMIN_PHONE).await;
    let me = app.get("/auth/me", Some(&again.access_token)).await;
    assert_eq!(me.assert_ok()["adminRole"], "super_admin");
    let player = app.sign_in(PHONE).await;
    let me = app.get("/auth/me", Some(&player.access_token)).await;
    assert_eq!(me.assert_ok()["adminRole"], serde_json::Value::Null);
}

async fn a_banned_account_gets_user_banned_at_request_verify_and_with_its_tokens(backend: Backend) {
    let Some(app) = spawn_app(backend).await else { return };
    let session = app.sign_in(PHONE).await;
    app.request_code(PHONE).await.assert_ok();
    let pending_code = app.last_code(PHONE);
    app.exec("UPDATE users SET status = 'banned'").await;

    app.request_code(PHONE).await.assert_error(403, "USER_BANNED");
    app.verify(PHONE, &pending_code).await.assert_error(403, "USER_BANNED");
    app.get("/auth/me", Some(&session.access_token)).await.assert_error(403, "USER_BANNED");
    let refresh = app.post("/auth/refresh", None, json!({"refreshToken": session.refresh_token})).await;
    refresh.assert_error(403, "USER_BANNED");
}

async fn refresh_rotates_the_pair_and_spends_the_old_token(backend: Backend) {
    let Some(app) = spawn_app(backend).await else { return };
    let session = app.sign_in(PHONE).await;
    let reply = app.post("/auth/refresh", None, json!({"refreshToken": session.refresh_token})).await;
    let pair = reply.assert_ok().clone();
    let new_refresh = pair["refreshToken"].as_str().expect("refresh token");
    assert_ne!(new_refresh, session.refresh_token);
    app.get("/auth/me", pair["accessToken"].as_str()).await.assert_ok();
    let stored = app
        .count(&format!("SELECT COUNT(*) FROM refresh_tokens WHERE token_hash = '{}'", sha256_hex(new_refresh)))
        .await;
    assert_eq!(stored, 1, "only the hash of a refresh token is stored");
    let revoked = app
        .count(&format!(
            "SELECT COUNT(*) FROM refresh_tokens WHERE token_hash = '{}' AND revoked_at IS NOT NULL",
            sha256_hex(&session.refresh_token)
        ))
        .await;
    assert_eq!(revoked, 1);
    let hash = sha256_hex(new_refresh);
    let issued = app.timestamp(&format!("SELECT created_at FROM refresh_tokens WHERE token_hash = '{hash}'")).await;
    let expires = app.timestamp(&format!("SELECT expires_at FROM refresh_tokens WHERE token_hash = '{hash}'")).await;
    assert_eq!(expires - issued, Duration::days(30), "a refresh token lives thirty days");
    let next = app.post("/auth/refresh", None, json!({"refreshToken": new_refresh})).await;
    next.assert_ok();
}

async fn reusing_a_spent_refresh_token_revokes_every_token_of_that_sign_in(backend: Backend) {
    let Some(app) = spawn_app(backend).await else { return };
    let stolen = app.sign_in(PHONE).await;
    let other_device = app.sign_in(PHONE).await;
    let rotated = app.post("/auth/refresh", None, json!({"refreshToken": stolen.refresh_token})).await;
    let current = rotated.assert_ok()["refreshToken"].as_str().expect("token").to_owned();

    let reuse = app.post("/auth/refresh", None, json!({"refreshToken": stolen.refresh_token})).await;
    reuse.assert_error(401, "INVALID_REFRESH_TOKEN");
    let after = app.post("/auth/refresh", None, json!({"refreshToken": current})).await;
    after.assert_error(401, "INVALID_REFRESH_TOKEN");
    // Another sign-in of the same person is another family and keeps working.
    let other = app.post("/auth/refresh", None, json!({"refreshToken": other_device.refresh_token})).await;
    other.assert_ok();
}

async fn parallel_refreshes_of_one_token_let_exactly_one_through(backend: Backend) {
    let Some(app) = spawn_app(backend).await else { return };
    let session = app.sign_in(PHONE).await;
    let app = std::sync::Arc::new(app);
    let mut refreshes = JoinSet::new();
    for _ in 0..5 {
        let app = app.clone();
        let token = session.refresh_token.clone();
        refreshes.spawn(async move { app.post("/auth/refresh", None, json!({"refreshToken": token})).await });
    }
    let mut successes = 0;
    while let Some(reply) = refreshes.join_next().await {
        let reply = reply.expect("task finishes");
        if reply.status.is_success() {
            successes += 1;
        } else {
            reply.assert_error(401, "INVALID_REFRESH_TOKEN");
        }
    }
    assert_eq!(successes, 1);
}

async fn an_expired_or_unknown_refresh_token_is_refused(backend: Backend) {
    let Some(app) = spawn_app(backend).await else { return };
    let session = app.sign_in(PHONE).await;
    let unknown = app.post("/auth/refresh", None, json!({"refreshToken": "00".repeat(32)})).await;
    unknown.assert_error(401, "INVALID_REFRESH_TOKEN");
    let yesterday = (Utc::now() - Duration::days(1)).to_rfc3339();
    app.exec(&format!("UPDATE refresh_tokens SET expires_at = '{yesterday}'")).await;
    let expired = app.post("/auth/refresh", None, json!({"refreshToken": session.refresh_token})).await;
    expired.assert_error(401, "INVALID_REFRESH_TOKEN");
    let missing = app.post("/auth/refresh", None, json!({})).await;
    missing.assert_error(400, "VALIDATION_ERROR");
}

async fn tokens_signed_otherwise_are_refused(backend: Backend) {
    let Some(app) = spawn_app(backend).await else { return };
    let session = app.sign_in(PLATFORM_ADMIN_PHONE).await;
    let claims = json!({
        "sub": session.user_id, "adm": true, "iss": "floor",
        "iat": Utc::now().timestamp(), "exp": (Utc::now() + Duration::minutes(10)).timestamp(),
    });
    let key = EncodingKey::from_secret(TEST_JWT_SECRET.as_bytes());
    // The same secret, another algorithm: algorithm confusion must not pass.
    for alg in [Algorithm::HS384, Algorithm::HS512] {
        let forged = jsonwebtoken::encode(&Header::new(alg), &claims, &key).expect("signed");
        app.get("/auth/me", Some(&forged)).await.assert_error(401, "UNAUTHORIZED");
    }
    let honest = jsonwebtoken::encode(&Header::new(Algorithm::HS256), &claims, &key).expect("signed");
    app.get("/auth/me", Some(&honest)).await.assert_ok();
    // Our algorithm and secret, claims we never write: issued or valid only in the future, or
    // living a hundred years.
    let now = Utc::now();
    let unlike_ours = [
        json!({"iat": (now + Duration::minutes(5)).timestamp()}),
        json!({"nbf": (now + Duration::minutes(5)).timestamp()}),
        json!({"exp": (now + Duration::days(36_500)).timestamp()}),
    ];
    for changed in unlike_ours {
        let mut odd = claims.clone();
        for (name, value) in changed.as_object().expect("an object") {
            odd[name] = value.clone();
        }
        let forged = jsonwebtoken::encode(&Header::new(Algorithm::HS256), &odd, &key).expect("signed");
        app.get("/auth/me", Some(&forged)).await.assert_error(401, "UNAUTHORIZED");
    }
    app.get("/auth/me", Some("not-a-token")).await.assert_error(401, "UNAUTHORIZED");
    app.get("/auth/me", None).await.assert_error(401, "UNAUTHORIZED");
}

async fn guests_with_the_same_phone_are_linked_to_the_new_account(backend: Backend) {
    let Some(app) = spawn_app(backend).await else { return };
    let guest = uuid::Uuid::new_v4();
    let now = Utc::now().to_rfc3339();
    app.exec(&format!(
        "INSERT INTO guest_players (id, phone, name, created_at) VALUES ({}, '{PHONE}', 'Walk-in', '{now}')",
        app.uuid_literal(guest)
    ))
    .await;
    let session = app.sign_in(PHONE).await;
    let claimed = app
        .scalar(&format!("SELECT claimed_by_user_id FROM guest_players WHERE id = {}", app.uuid_literal(guest)))
        .await;
    assert_eq!(claimed, Some(session.user_id.to_string()));
}
