//! `GET /me/export`: everything kept about the caller, and nothing secret. Every column of the
//! live schema that holds a user's id is exported or withheld with a reason.

use std::collections::BTreeSet;

use chrono::Duration;
use floor::domain::auth::tokens::sha256_hex;
use floor::domain::players::export::{Section, WITHHELD};
use sea_orm::{ConnectionTrait, DbBackend, Statement};
use serde_json::{Value, json};

use crate::compression::{gunzip, unbrotli};
use crate::helpers::{Backend, Session, TestApp, on_both_databases, spawn_app};

on_both_databases!(
    an_export_sent_compressed_is_the_same_whole_document,
    every_column_holding_a_users_id_is_exported_or_withheld,
    the_export_holds_what_the_player_did_and_gives_away_no_secret,
    staff_find_their_clubs_tournaments_and_acts_in_their_export,
    the_export_is_for_a_signed_in_account_that_is_not_banned,
    a_read_that_fails_before_the_answer_is_an_error_and_after_it_cuts_the_document_short,
);

/// Whether a column's name says it holds a user's id, foreign key or not.
fn named_for_a_user(column: &str) -> bool {
    column == "user_id" || column.ends_with("_user_id") || column == "follower_id" || column == "followee_id"
}

/// `(table, column)` of every column of the live schema that holds a user's id: a foreign key
/// to `users(id)`, or a name that says so; `users.id` itself aside.
async fn user_columns(app: &TestApp) -> BTreeSet<(String, String)> {
    let backend = app.db().get_database_backend();
    let (foreign_keys, columns) = match backend {
        DbBackend::Sqlite => (
            "SELECT m.name, f.\"from\" FROM sqlite_master m JOIN pragma_foreign_key_list(m.name) f \
             WHERE m.type = 'table' AND f.\"table\" = 'users'",
            "SELECT m.name, c.name FROM sqlite_master m JOIN pragma_table_info(m.name) c WHERE m.type = 'table'",
        ),
        _ => (
            "SELECT kcu.table_name::text, kcu.column_name::text \
             FROM information_schema.table_constraints tc \
             JOIN information_schema.key_column_usage kcu \
               ON kcu.constraint_name = tc.constraint_name AND kcu.table_schema = tc.table_schema \
             JOIN information_schema.constraint_column_usage ccu \
               ON ccu.constraint_name = tc.constraint_name AND ccu.table_schema = tc.table_schema \
             WHERE tc.constraint_type = 'FOREIGN KEY' AND tc.table_schema = current_schema() \
               AND ccu.table_name = 'users' AND ccu.column_name = 'id'",
            "SELECT table_name::text, column_name::text FROM information_schema.columns \
             WHERE table_schema = current_schema()",
        ),
    };
    let pairs = |sql: &'static str| async move {
        let rows = app.db().query_all_raw(Statement::from_string(backend, sql)).await.expect("the schema reads");
        rows.iter()
            .map(|row| {
                let table: String = row.try_get_by_index(0).expect("a table");
                let column: String = row.try_get_by_index(1).expect("a column");
                (table, column)
            })
            .collect::<Vec<_>>()
    };
    let mut found: BTreeSet<(String, String)> = pairs(foreign_keys).await.into_iter().collect();
    found.extend(pairs(columns).await.into_iter().filter(|(_, column)| named_for_a_user(column)));
    found.remove(&("users".to_owned(), "id".to_owned()));
    found
}

async fn every_column_holding_a_users_id_is_exported_or_withheld(backend: Backend) {
    let Some(app) = spawn_app(backend).await else { return };
    let in_schema = user_columns(&app).await;
    assert!(in_schema.contains(&("registrations".to_owned(), "user_id".to_owned())), "the schema was read");
    let accounted: BTreeSet<(String, String)> = Section::ALL
        .iter()
        .flat_map(|section| section.columns().iter().copied())
        .chain(WITHHELD.iter().map(|(table, column, _)| (*table, *column)))
        .map(|(table, column)| (table.to_owned(), column.to_owned()))
        .collect();
    let missing: Vec<_> = in_schema.difference(&accounted).collect();
    let gone: Vec<_> = accounted.difference(&in_schema).collect();
    assert!(
        missing.is_empty(),
        "columns holding a user's id that the export neither takes (Section::columns) nor withholds \
         (WITHHELD, with a reason): {missing:?}"
    );
    assert!(gone.is_empty(), "the export names columns the schema does not have: {gone:?}");
}

/// The export of `session`'s account: the raw body, parsed, with its headers checked.
async fn export_of(app: &TestApp, session: &Session) -> (String, Value) {
    let response = app
        .client
        .get(app.url("/me/export"))
        .bearer_auth(&session.access_token)
        .send()
        .await
        .expect("the server answers");
    assert_eq!(response.status().as_u16(), 200);
    let headers = response.headers().clone();
    assert_eq!(headers["content-type"], "application/json");
    assert_eq!(
        headers["content-disposition"],
        format!("attachment; filename=\"floor-export-{}.json\"", session.user_id)
    );
    assert_eq!(headers["cache-control"], "no-store");
    assert!(headers.get("etag").is_none() && headers.get("content-length").is_none(), "streamed: {headers:?}");
    let raw = response.text().await.expect("a whole body");
    let document: Value = serde_json::from_str(&raw).expect("one JSON document");
    let keys: Vec<&str> = document.as_object().expect("an object").keys().map(String::as_str).collect();
    let expected: Vec<&str> =
        ["exportedAt"].into_iter().chain(Section::ALL.iter().map(|section| section.key())).collect();
    assert_eq!(sorted(keys), sorted(expected), "every section, and nothing else");
    (raw, document)
}

fn sorted<T: Ord>(mut items: Vec<T>) -> Vec<T> {
    items.sort();
    items
}

fn ids_in(list: &Value, field: &str) -> BTreeSet<String> {
    list.as_array().expect("a list").iter().map(|item| item[field].as_str().expect("an id").to_owned()).collect()
}

async fn the_export_holds_what_the_player_did_and_gives_away_no_secret(backend: Backend) {
    let Some(app) = spawn_app(backend).await else { return };
    let club = app.create_club("Aces", "+79990400001").await;
    // Starts in 2 hours: the 3-hour deadline has passed, so cancelling costs a strike.
    let soon = app.create_tournament(&club, 10, Duration::hours(2)).await;
    let later = app.create_tournament(&club, 10, Duration::days(3)).await;
    let anna_phone = "+79990400002";
    let boris_phone = "+79990400003";
    let anna = app.sign_in(anna_phone).await;
    let boris = app.sign_in(boris_phone).await;
    let token = Some(anna.access_token.as_str());

    let profile = json!({"name": "Anna", "nickname": "ace", "citySlug": "kazan", "consentAccepted": true});
    app.patch("/me", token, profile).await.assert_ok();
    app.post(&format!("/tournaments/{later}/register"), token, json!({})).await.assert_ok();
    app.post(&format!("/tournaments/{soon}/register"), token, json!({})).await.assert_ok();
    app.post(&format!("/tournaments/{soon}/cancel-registration"), token, json!({})).await.assert_ok();
    app.put(&format!("/players/{}/follow", anna.user_id), Some(&boris.access_token), json!({})).await.assert_ok();
    app.put(&format!("/players/{}/follow", boris.user_id), token, json!({})).await.assert_ok();
    // Boris registering is news for the players who follow him: Anna.
    app.post(&format!("/tournaments/{later}/register"), Some(&boris.access_token), json!({})).await.assert_ok();
    let journal = format!(
        "SELECT COUNT(*) FROM notifications WHERE kind = 'followee.registered' AND user_id = {}",
        app.uuid_literal(anna.user_id)
    );
    assert_eq!(app.eventually_count(&journal, 1).await, 1);
    let device = "anna-device-token-0f1e2d3c4b5a69788796a5b4c3d2e1f0";
    app.post("/me/push-tokens", token, json!({"token": device, "platform": "android"})).await.assert_ok();
    let link = app.post("/me/calendar-link", token, json!({})).await;
    let url = link.assert_ok()["url"].as_str().expect("a url").to_owned();
    let calendar_secret = url.rsplit('/').next().and_then(|file| file.strip_suffix(".ics")).expect("a secret");
    // A refresh: the session now has two tokens, neither of which may show.
    let first_refresh = anna.refresh_token.clone();
    let refreshed = app.post("/auth/refresh", None, json!({"refreshToken": anna.refresh_token})).await;
    let refreshed = refreshed.assert_ok();
    let anna = Session {
        access_token: refreshed["accessToken"].as_str().expect("an access token").to_owned(),
        refresh_token: refreshed["refreshToken"].as_str().expect("a refresh token").to_owned(),
        ..anna
    };

    let (raw, document) = export_of(&app, &anna).await;

    let me = &document["profile"];
    assert_eq!(me["id"], anna.user_id.to_string());
    assert_eq!(me["phone"], anna_phone);
    assert_eq!((me["name"].as_str(), me["nickname"].as_str()), (Some("Anna"), Some("ace")));
    assert_eq!(me["citySlug"], "kazan");
    assert_eq!(me["status"], "active");
    assert_eq!(me["player"]["xp"], 0);
    assert_eq!(document["consent"]["consentVersion"], "1");
    let changes = document["consent"]["changes"].as_array().expect("changes");
    assert_eq!(changes.len(), 1);
    assert_eq!(changes[0]["accepted"], true);

    let registrations = &document["registrations"];
    assert_eq!(ids_in(registrations, "tournamentId"), BTreeSet::from([soon.to_string(), later.to_string()]));
    for registration in registrations.as_array().expect("registrations") {
        let expected = if registration["tournamentId"] == soon.to_string() { "cancelled" } else { "registered" };
        assert_eq!(registration["status"], expected, "{registration}");
        assert_eq!(registration["tournamentTitle"], "Турнир выходного дня");
        assert_eq!(registration["source"], "app");
    }
    let strikes = document["strikes"].as_array().expect("strikes");
    assert_eq!(strikes.len(), 1);
    assert_eq!(
        (strikes[0]["tournamentId"].as_str(), strikes[0]["reason"].as_str()),
        (Some(&*soon.to_string()), Some("late_cancel"))
    );
    assert_eq!(ids_in(&document["follows"]["following"], "userId"), BTreeSet::from([boris.user_id.to_string()]));
    assert_eq!(ids_in(&document["follows"]["followers"], "userId"), BTreeSet::from([boris.user_id.to_string()]));
    assert_eq!(
        document["devices"],
        json!([{
            "platform": "android",
            "createdAt": document["devices"][0]["createdAt"],
            "updatedAt": document["devices"][0]["updatedAt"],
        }])
    );
    let sessions = document["sessions"].as_array().expect("sessions");
    assert_eq!(sessions.len(), 1, "one sign-in");
    assert_eq!(sessions[0]["tokens"], 2, "and its refresh");
    assert!(sessions[0]["revokedAt"].is_null(), "the session lasts");
    let kinds: Vec<&str> = document["notifications"]
        .as_array()
        .expect("notifications")
        .iter()
        .filter_map(|n| n["kind"].as_str())
        .collect();
    assert!(kinds.contains(&"followee.registered"), "{kinds:?}");
    assert_eq!(document["calendarLink"]["exists"], true);
    assert_eq!(document["memberships"], json!([]));
    assert_eq!(document["mergedInto"], Value::Null);
    assert_eq!(document["mergedFrom"], json!([]));
    assert!(document["results"].as_array().is_some_and(Vec::is_empty));

    let secrets = [
        sha256_hex(&first_refresh),
        first_refresh,
        sha256_hex(&anna.refresh_token),
        anna.refresh_token.clone(),
        anna.access_token.clone(),
        device.to_owned(),
        calendar_secret.to_owned(),
        sha256_hex(calendar_secret),
        boris_phone.to_owned(),
        "+79990400001".to_owned(),
    ];
    for secret in &secrets {
        assert!(!raw.contains(secret.as_str()), "the export gives away {secret}");
    }
}

async fn staff_find_their_clubs_tournaments_and_acts_in_their_export(backend: Backend) {
    let Some(app) = spawn_app(backend).await else { return };
    let club = app.create_club("Aces", "+79990400011").await;
    let tournament = app.create_tournament(&club, 10, Duration::days(2)).await;
    let dealer_phone = "+79990400012";
    let code = app.invite_dealer(&club, dealer_phone).await;
    let dealer = app.sign_in(dealer_phone).await;
    app.post("/dealer-invites/claim", Some(&dealer.access_token), json!({"code": code})).await.assert_ok();
    let assign = json!({"dealerUserId": dealer.user_id, "tableNo": 2});
    app.post(&format!("/tournaments/{tournament}/dealers"), Some(&club.owner.access_token), assign).await.assert_ok();

    let (raw, document) = export_of(&app, &club.owner).await;
    // The invite's phone is the dealer's, even in the audit record of making it.
    for secret in [dealer_phone.to_owned(), code.clone(), sha256_hex(&code)] {
        assert!(!raw.contains(&secret), "the owner's export gives away {secret}");
    }
    let memberships = document["memberships"].as_array().expect("memberships");
    assert_eq!(memberships.len(), 1);
    assert_eq!(memberships[0]["organizerId"], club.id.to_string());
    assert_eq!(
        (memberships[0]["organizerName"].as_str(), memberships[0]["role"].as_str()),
        (Some("Aces"), Some("owner"))
    );
    let created = document["createdTournaments"].as_array().expect("tournaments");
    assert_eq!(created.len(), 1);
    assert_eq!(created[0]["id"], tournament.to_string());
    assert_eq!(created[0]["title"], "Турнир выходного дня");
    let invites = document["dealer"]["invites"].as_array().expect("invites");
    assert_eq!(invites.len(), 1);
    assert_eq!((&invites[0]["createdByMe"], &invites[0]["forMe"]), (&json!(true), &json!(false)));
    let entries = document["auditEntries"].as_array().expect("audit entries");
    let acts: Vec<(&str, bool)> =
        entries.iter().filter_map(|entry| Some((entry["action"].as_str()?, entry["byMe"].as_bool()?))).collect();
    assert!(acts.contains(&("tournament.create", true)), "{acts:?}");
    assert!(acts.contains(&("dealer_invite.create", true)), "{acts:?}");
    assert!(entries.iter().all(|entry| entry.get("actorUserId").is_none()), "no actor is named");

    let (_, document) = export_of(&app, &dealer).await;
    let dealing = &document["dealer"];
    assert!(dealing["profile"].is_object(), "claiming made a dealer profile: {dealing}");
    let invites = dealing["invites"].as_array().expect("invites");
    assert_eq!(invites.len(), 1);
    assert_eq!((&invites[0]["forMe"], &invites[0]["claimedByMe"]), (&json!(true), &json!(true)));
    assert_eq!(invites[0]["organizerName"], "Aces");
    let assignments = dealing["assignments"].as_array().expect("assignments");
    assert_eq!(assignments.len(), 1);
    assert_eq!(assignments[0]["tournamentId"], tournament.to_string());
    assert_eq!(assignments[0]["tableNo"], 2);
    assert_eq!(document["memberships"][0]["role"], "dealer");
}

async fn the_export_is_for_a_signed_in_account_that_is_not_banned(backend: Backend) {
    let Some(app) = spawn_app(backend).await else { return };
    app.get("/me/export", None).await.assert_error(401, "UNAUTHORIZED");
    app.get("/me/export", Some("not-a-token")).await.assert_error(401, "UNAUTHORIZED");
    let anna = app.sign_in("+79990400021").await;
    app.exec(&format!("UPDATE users SET status = 'banned' WHERE id = {}", app.uuid_literal(anna.user_id))).await;
    app.get("/me/export", Some(&anna.access_token)).await.assert_error(403, "USER_BANNED");
}

async fn a_read_that_fails_before_the_answer_is_an_error_and_after_it_cuts_the_document_short(backend: Backend) {
    let Some(app) = spawn_app(backend).await else { return };
    let anna = app.sign_in("+79990400031").await;
    let token = Some(anna.access_token.as_str());

    // The first section is read before the answer: its failure is a plain error.
    app.exec("ALTER TABLE player_profiles RENAME TO player_profiles_away").await;
    app.get("/me/export", token).await.assert_error(500, "INTERNAL_ERROR");
    app.exec("ALTER TABLE player_profiles_away RENAME TO player_profiles").await;

    // A later one fails after the 200 went out: the body ends cut short.
    app.exec("ALTER TABLE notifications RENAME TO notifications_away").await;
    let mut response =
        app.client.get(app.url("/me/export")).bearer_auth(&anna.access_token).send().await.expect("an answer");
    assert_eq!(response.status().as_u16(), 200);
    let mut body = Vec::new();
    let mut broken = false;
    loop {
        match response.chunk().await {
            Ok(Some(chunk)) => body.extend_from_slice(&chunk),
            Ok(None) => break,
            Err(_) => {
                broken = true;
                break;
            }
        }
    }
    assert!(broken, "the body ends with an error, not as if it were whole");
    let text = String::from_utf8_lossy(&body);
    assert!(text.starts_with("{\"exportedAt\":"), "{text}");
    assert!(text.contains(&format!("\"profile\":{{\"id\":\"{}\"", anna.user_id)), "{text}");
    assert!(serde_json::from_slice::<Value>(&body).is_err(), "a cut document is no valid JSON: {text}");
    assert!(!text.contains("\"notifications\":["), "{text}");
}

async fn an_export_sent_compressed_is_the_same_whole_document(backend: Backend) {
    let Some(app) = spawn_app(backend).await else { return };
    let anna = app.sign_in("+79990400101").await;
    let profile = json!({"name": "Anna", "nickname": "ace", "citySlug": "kazan", "consentAccepted": true});
    app.patch("/me", Some(&anna.access_token), profile).await.assert_ok();
    for (encoding, decode) in [("gzip", gunzip as fn(&[u8]) -> Vec<u8>), ("br", unbrotli)] {
        let answer = app
            .client
            .get(app.url("/me/export"))
            .bearer_auth(&anna.access_token)
            .header("Accept-Encoding", encoding)
            .send()
            .await
            .expect("an answer");
        assert_eq!(answer.status(), 200);
        let sent_as = answer.headers().get("content-encoding").and_then(|v| v.to_str().ok()).map(str::to_owned);
        let bytes = answer.bytes().await.expect("the whole body, not one cut short");
        let plain = if sent_as.as_deref() == Some(encoding) { decode(&bytes) } else { bytes.to_vec() };
        let document: Value = serde_json::from_slice(&plain).expect("a whole JSON document");
        assert_eq!(document["profile"]["nickname"], "ace", "{encoding}");
    }
}
