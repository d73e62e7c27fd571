//! Tournaments before the shuffle-up: creating (club and platform), the card, editing,
//! cancelling, the agenda and search.

use chrono::{Datelike, Duration, Utc};
use serde_json::json;

use crate::helpers::{Backend, on_both_databases, spawn_app};

on_both_databases!(
    a_td_creates_a_tournament_open_for_registration_with_no_money,
    the_season_is_the_quarter_of_the_start_made_once,
    a_tournament_needs_the_clubs_venue_a_future_start_and_a_title,
    the_platform_creates_tournaments_for_any_club_with_tournaments_manage,
    a_tournament_is_edited_only_while_registration_is_open,
    raising_capacity_promotes_the_waitlist_and_lowering_it_below_the_taken_seats_is_refused,
    cancelling_clears_live_registrations_without_strikes,
    the_agenda_lists_upcoming_and_running_by_start_with_filters_and_a_cap,
    search_finds_tournaments_players_and_clubs_without_phones,
    another_clubs_td_is_refused_every_tournament_operation,
);

async fn a_td_creates_a_tournament_open_for_registration_with_no_money(backend: Backend) {
    let Some(app) = spawn_app(backend).await else { return };
    let club = app.create_club("Aces", "+79990200001").await;
    let td = app.add_td(&club, "+79990200002").await;
    let location = app.create_location(&club).await;
    let mut body = app.tournament_body(location, 30, Duration::days(3));
    body["entryFee"] = json!(5000);
    body["prizes"] = json!("Кубок и медали");
    let created = app.post(&format!("/organizers/{}/tournaments", club.id), Some(&td.access_token), body).await;
    assert_eq!(created.status, 201, "{created:?}");
    let card = created.body.clone();
    assert_eq!(card["status"], "registration");
    assert_eq!(card["entryFee"], 0);
    assert_eq!(card["paymentStatus"], "not_required");
    assert_eq!(card["type"], "mtt");
    assert_eq!(card["registeredCount"], 0);
    assert_eq!(card["waitlistCount"], 0);
    assert_eq!(card["translations"]["ru"]["title"], "Турнир выходного дня");
    assert_eq!(card["translations"]["en"]["title"], "Weekend tournament");
    assert_eq!(app.count("SELECT COUNT(*) FROM tournaments WHERE entry_fee = 0").await, 1);

    let id = card["id"].as_str().expect("id");
    let public = app.get(&format!("/tournaments/{id}"), None).await;
    assert_eq!(public.assert_ok()["prizes"], "Кубок и медали");
    assert_eq!(public.body["organizerName"], "Aces");
    assert_eq!(public.body["locationName"], "Main hall");
    assert_eq!(public.body["citySlug"], "moscow");
    assert!(public.body["myRegistration"].is_null());
    let player = app.sign_in("+79990200003").await;
    assert!(app.get(&format!("/tournaments/{id}"), Some(&player.access_token)).await.body["myRegistration"].is_null());
    app.post(&format!("/tournaments/{id}/register"), Some(&player.access_token), json!({})).await.assert_ok();
    let mine = app.get(&format!("/tournaments/{id}"), Some(&player.access_token)).await;
    assert_eq!(mine.body["myRegistration"]["status"], "registered");
    assert_eq!(mine.body["registeredCount"], 1);
    let list = app.get(&format!("/organizers/{}/tournaments", club.id), Some(&td.access_token)).await;
    assert_eq!(list.assert_ok()["items"].as_array().map(Vec::len), Some(1));
    assert_eq!(app.count("SELECT COUNT(*) FROM audit_log WHERE action = 'tournament.create'").await, 1);
}

async fn the_season_is_the_quarter_of_the_start_made_once(backend: Backend) {
    let Some(app) = spawn_app(backend).await else { return };
    let club = app.create_club("Aces", "+79990200011").await;
    let location = app.create_location(&club).await;
    let path = format!("/organizers/{}/tournaments", club.id);
    let token = Some(club.owner.access_token.as_str());
    let starts = Utc::now() + Duration::days(200);
    let mut body = app.tournament_body(location, 10, Duration::days(200));
    let first = app.post(&path, token, body.clone()).await;
    body["startsAt"] = json!((starts + Duration::minutes(1)).to_rfc3339());
    let second = app.post(&path, token, body).await;
    assert_eq!(first.body["seasonId"], second.body["seasonId"]);
    let quarter_start =
        chrono::NaiveDate::from_ymd_opt(starts.year(), (starts.month0() / 3) * 3 + 1, 1).expect("a date");
    let season = app
        .count(&format!("SELECT COUNT(*) FROM seasons WHERE starts_on = '{quarter_start}' AND status = 'current'"))
        .await;
    assert_eq!(season, 1);
}

async fn a_tournament_needs_the_clubs_venue_a_future_start_and_a_title(backend: Backend) {
    let Some(app) = spawn_app(backend).await else { return };
    let club = app.create_club("Aces", "+79990200021").await;
    let other = app.create_club("Other", "+79990200022").await;
    let foreign_venue = app.create_location(&other).await;
    let mut body = app.tournament_body(foreign_venue, 1, -Duration::hours(1));
    body["translations"] = json!({});
    body["blindTemplateId"] = json!(uuid::Uuid::new_v4());
    body["chatLink"] = json!("telegram");
    let reply = app.post(&format!("/organizers/{}/tournaments", club.id), Some(&club.owner.access_token), body).await;
    reply.assert_error(400, "VALIDATION_ERROR");
    let fields: Vec<_> = reply.body["error"]["details"]
        .as_array()
        .expect("details")
        .iter()
        .map(|d| d["field"].as_str().unwrap_or("").to_owned())
        .collect();
    assert_eq!(fields, ["locationId", "blindTemplateId", "startsAt", "capacity", "chatLink", "translations"]);

    let mut wrong_type = app.tournament_body(foreign_venue, 10, Duration::days(1));
    wrong_type["type"] = json!("cash");
    let reply =
        app.post(&format!("/organizers/{}/tournaments", club.id), Some(&club.owner.access_token), wrong_type).await;
    reply.assert_error(400, "VALIDATION_ERROR");
    assert_eq!(reply.body["error"]["details"][0]["field"], "type");
    assert_eq!(app.count("SELECT COUNT(*) FROM tournaments").await, 0);
}

async fn the_platform_creates_tournaments_for_any_club_with_tournaments_manage(backend: Backend) {
    let Some(app) = spawn_app(backend).await else { return };
    let club = app.create_club("Aces", "+79990200031").await;
    let location = app.create_location(&club).await;
    let body = app.tournament_body(location, 10, Duration::days(1));
    let path = format!("/admin/organizers/{}/tournaments", club.id);
    for role in ["moderator", "support", "marketing"] {
        let admin = app.sign_in_as_admin("+79990200032", role).await;
        app.post(&path, Some(&admin.access_token), body.clone()).await.assert_error(403, "FORBIDDEN");
    }
    // A club owner is not a platform admin.
    app.post(&path, Some(&club.owner.access_token), body.clone()).await.assert_error(403, "FORBIDDEN");
    let admin = app.platform_admin().await;
    let created = app.post(&path, Some(&admin.access_token), body.clone()).await;
    assert_eq!(created.status, 201, "{created:?}");
    assert_eq!(created.body["organizerId"], club.id.to_string());
    let missing = format!("/admin/organizers/{}/tournaments", uuid::Uuid::new_v4());
    app.post(&missing, Some(&admin.access_token), body).await.assert_error(404, "NOT_FOUND");
}

async fn a_tournament_is_edited_only_while_registration_is_open(backend: Backend) {
    let Some(app) = spawn_app(backend).await else { return };
    let club = app.create_club("Aces", "+79990200041").await;
    let id = app.create_tournament(&club, 10, Duration::days(2)).await;
    let token = Some(club.owner.access_token.as_str());
    let edit = app
        .patch(
            &format!("/tournaments/{id}"),
            token,
            json!({"capacity": 12, "prizes": "Медали", "translations": {"en": {"title": "Sunday cup", "subtitle": "deep stack"}}}),
        )
        .await;
    let card = edit.assert_ok();
    assert_eq!(card["capacity"], 12);
    assert_eq!(card["prizes"], "Медали");
    assert_eq!(card["translations"]["en"]["title"], "Sunday cup");
    assert_eq!(card["translations"]["ru"]["title"], "Турнир выходного дня");

    let cleared = app.patch(&format!("/tournaments/{id}"), token, json!({"prizes": null})).await;
    assert!(cleared.assert_ok()["prizes"].is_null());

    app.exec(&format!("UPDATE tournaments SET status = 'running' WHERE id = {}", app.uuid_literal(id))).await;
    app.patch(&format!("/tournaments/{id}"), token, json!({"capacity": 20})).await.assert_error(409, "INVALID_STATUS");
    let admin = app.platform_admin().await;
    app.patch(&format!("/tournaments/{id}"), Some(&admin.access_token), json!({"capacity": 20}))
        .await
        .assert_error(409, "INVALID_STATUS");
}

async fn raising_capacity_promotes_the_waitlist_and_lowering_it_below_the_taken_seats_is_refused(backend: Backend) {
    let Some(app) = spawn_app(backend).await else { return };
    let club = app.create_club("Aces", "+79990200051").await;
    let id = app.create_tournament(&club, 2, Duration::days(2)).await;
    let players = app.sign_in_players(205, 4).await;
    for player in &players {
        app.post(&format!("/tournaments/{id}/register"), Some(&player.access_token), json!({})).await.assert_ok();
    }
    let token = Some(club.owner.access_token.as_str());
    let lowered = app.patch(&format!("/tournaments/{id}"), token, json!({"capacity": 1})).await;
    lowered.assert_error(400, "VALIDATION_ERROR");
    let raised = app.patch(&format!("/tournaments/{id}"), token, json!({"capacity": 3})).await;
    assert_eq!(raised.assert_ok()["registeredCount"], 3);
    assert_eq!(raised.body["waitlistCount"], 1);
    // The first of the queue was promoted and told so; the last one waits.
    let to_promoted = format!(
        "SELECT COUNT(*) FROM notifications WHERE kind = 'waitlist.promoted' AND user_id = {}",
        app.uuid_literal(players[2].user_id)
    );
    assert_eq!(app.eventually_count(&to_promoted, 1).await, 1);
    assert_eq!(app.count("SELECT COUNT(*) FROM notifications WHERE kind = 'waitlist.promoted'").await, 1);
}

async fn cancelling_clears_live_registrations_without_strikes(backend: Backend) {
    let Some(app) = spawn_app(backend).await else { return };
    let club = app.create_club("Aces", "+79990200061").await;
    // Starts within the cancel deadline: a player's own late cancellation would cost a strike.
    let id = app.create_tournament(&club, 2, Duration::hours(1)).await;
    let players = app.sign_in_players(206, 3).await;
    for player in &players {
        app.post(&format!("/tournaments/{id}/register"), Some(&player.access_token), json!({})).await.assert_ok();
    }
    let cancelled = app.post(&format!("/tournaments/{id}/cancel"), Some(&club.owner.access_token), json!({})).await;
    assert_eq!(cancelled.assert_ok()["status"], "cancelled");
    assert_eq!(cancelled.body["registeredCount"], 0);
    assert_eq!(cancelled.body["waitlistCount"], 0);
    assert_eq!(app.count("SELECT COUNT(*) FROM registrations WHERE status = 'cancelled'").await, 3);
    assert_eq!(app.count("SELECT COUNT(*) FROM strikes").await, 0);
    assert_eq!(app.count("SELECT COUNT(*) FROM audit_log WHERE action = 'tournament.cancel'").await, 1);
    app.post(&format!("/tournaments/{id}/cancel"), Some(&club.owner.access_token), json!({}))
        .await
        .assert_error(409, "INVALID_STATUS");
    app.post(&format!("/tournaments/{id}/register"), Some(&players[0].access_token), json!({}))
        .await
        .assert_error(409, "REGISTRATION_CLOSED");

    // The platform may cancel a running one.
    let running = app.create_tournament(&club, 10, Duration::days(1)).await;
    app.exec(&format!("UPDATE tournaments SET status = 'running' WHERE id = {}", app.uuid_literal(running))).await;
    let marketing = app.sign_in_as_admin("+79990200062", "marketing").await;
    app.post(&format!("/tournaments/{running}/cancel"), Some(&marketing.access_token), json!({}))
        .await
        .assert_error(403, "FORBIDDEN");
    let admin = app.platform_admin().await;
    let by_platform = app.post(&format!("/tournaments/{running}/cancel"), Some(&admin.access_token), json!({})).await;
    assert_eq!(by_platform.assert_ok()["status"], "cancelled");
}

async fn the_agenda_lists_upcoming_and_running_by_start_with_filters_and_a_cap(backend: Backend) {
    let Some(app) = spawn_app(backend).await else { return };
    let club = app.create_club("Aces", "+79990200071").await;
    let other = app.create_club("Kazan club", "+79990200072").await;
    let later = app.create_tournament(&club, 10, Duration::days(5)).await;
    let sooner = app.create_tournament(&club, 10, Duration::days(1)).await;
    let running = app.create_tournament(&club, 10, Duration::days(3)).await;
    let cancelled = app.create_tournament(&club, 10, Duration::days(2)).await;
    app.exec(&format!("UPDATE tournaments SET status = 'running' WHERE id = {}", app.uuid_literal(running))).await;
    app.post(&format!("/tournaments/{cancelled}/cancel"), Some(&club.owner.access_token), json!({})).await.assert_ok();
    let kazan_venue = app
        .post(
            &format!("/organizers/{}/locations", other.id),
            Some(&other.owner.access_token),
            json!({"name": "K", "citySlug": "kazan", "address": "a", "timezone": "Europe/Moscow", "lat": 1.0, "lng": 1.0}),
        )
        .await;
    let kazan_venue: uuid::Uuid = kazan_venue.body["id"].as_str().and_then(|id| id.parse().ok()).expect("venue");
    let kazan = app
        .post(
            &format!("/organizers/{}/tournaments", other.id),
            Some(&other.owner.access_token),
            app.tournament_body(kazan_venue, 10, Duration::days(4)),
        )
        .await;
    let kazan = kazan.body["id"].as_str().expect("id").to_owned();

    let ids = |reply: &crate::helpers::Reply| -> Vec<String> {
        reply.body["items"]
            .as_array()
            .expect("items")
            .iter()
            .map(|t| t["id"].as_str().unwrap_or("").to_owned())
            .collect()
    };
    let agenda = app.get("/tournaments", None).await;
    assert_eq!(ids(&agenda), [sooner.to_string(), running.to_string(), kazan.clone(), later.to_string()]);
    assert_eq!(ids(&app.get("/tournaments?city=kazan", None).await), std::slice::from_ref(&kazan));
    assert_eq!(
        ids(&app.get(&format!("/tournaments?organizerId={}", other.id), None).await),
        std::slice::from_ref(&kazan)
    );
    assert_eq!(ids(&app.get("/tournaments?status=running", None).await), [running.to_string()]);
    assert_eq!(ids(&app.get("/tournaments?status=cancelled", None).await), [cancelled.to_string()]);
    let to = (Utc::now() + Duration::days(2)).to_rfc3339().replace('+', "%2B");
    assert_eq!(ids(&app.get(&format!("/tournaments?to={to}"), None).await), [sooner.to_string()]);
    let from = (Utc::now() + Duration::days(4) + Duration::hours(1)).to_rfc3339().replace('+', "%2B");
    assert_eq!(ids(&app.get(&format!("/tournaments?from={from}"), None).await), [later.to_string()]);
    app.get("/tournaments?status=open", None).await.assert_error(400, "VALIDATION_ERROR");

    for _ in 0..48 {
        app.create_tournament(&club, 10, Duration::days(6)).await;
    }
    assert_eq!(app.get("/tournaments", None).await.body["items"].as_array().map(Vec::len), Some(50));
}

async fn search_finds_tournaments_players_and_clubs_without_phones(backend: Backend) {
    let Some(app) = spawn_app(backend).await else { return };
    let club = app.create_club("Royal Flush Club", "+79990200081").await;
    let location = app.create_location(&club).await;
    let mut body = app.tournament_body(location, 10, Duration::days(1));
    body["translations"] = json!({"en": {"title": "Royal Sunday 100%"}});
    app.post(&format!("/organizers/{}/tournaments", club.id), Some(&club.owner.access_token), body).await.assert_ok();
    let player = app.sign_in("+79990200082").await;
    app.patch("/me", Some(&player.access_token), json!({"name": "Roy Batty", "nickname": "replicant"}))
        .await
        .assert_ok();

    let found = app.get("/search?q=roy", None).await;
    let found = found.assert_ok();
    assert_eq!(found["tournaments"].as_array().map(Vec::len), Some(1));
    assert_eq!(found["players"][0]["nickname"], "replicant");
    assert_eq!(found["clubs"][0]["name"], "Royal Flush Club");
    let text = found.to_string();
    assert!(!text.contains("+7999"), "no phone in a public answer: {text}");
    assert!(!text.contains("phone"), "no phone field: {text}");

    // Wildcards are literal.
    let percent = app.get("/search?q=0%25", None).await;
    assert_eq!(percent.assert_ok()["tournaments"].as_array().map(Vec::len), Some(1));
    assert_eq!(app.get("/search?q=%25%25", None).await.body["tournaments"].as_array().map(Vec::len), Some(0));
    app.get("/search?q=r", None).await.assert_error(400, "VALIDATION_ERROR");
    app.get("/search", None).await.assert_error(400, "VALIDATION_ERROR");
}

async fn another_clubs_td_is_refused_every_tournament_operation(backend: Backend) {
    let Some(app) = spawn_app(backend).await else { return };
    let club = app.create_club("Aces", "+79990200091").await;
    let rival = app.create_club("Rival", "+79990200092").await;
    let rival_td = app.add_td(&rival, "+79990200093").await;
    let id = app.create_tournament(&club, 10, Duration::days(1)).await;
    let player = app.sign_in("+79990200094").await;
    let registration = app.post(&format!("/tournaments/{id}/register"), Some(&player.access_token), json!({})).await;
    let registration_id = registration.body["id"].clone();
    let token = Some(rival_td.access_token.as_str());
    let location = app.create_location(&club).await;
    let calls = [
        (
            reqwest::Method::POST,
            format!("/organizers/{}/tournaments", club.id),
            Some(app.tournament_body(location, 5, Duration::days(1))),
        ),
        (reqwest::Method::GET, format!("/organizers/{}/tournaments", club.id), None),
        (reqwest::Method::PATCH, format!("/tournaments/{id}"), Some(json!({"capacity": 50}))),
        (reqwest::Method::POST, format!("/tournaments/{id}/cancel"), Some(json!({}))),
        (
            reqwest::Method::POST,
            format!("/tournaments/{id}/check-in"),
            Some(json!({"registrationId": registration_id})),
        ),
        (
            reqwest::Method::POST,
            format!("/tournaments/{id}/cancel-check-in"),
            Some(json!({"registrationId": registration_id})),
        ),
        (
            reqwest::Method::POST,
            format!("/tournaments/{id}/walk-in"),
            Some(json!({"phone": "+79990200095", "name": "Guest"})),
        ),
        (reqwest::Method::GET, format!("/tournaments/{id}/registrations"), None),
        (reqwest::Method::GET, format!("/tournaments/{id}/strikes"), None),
    ];
    for (method, path, body) in calls {
        let reply = app.call(method.clone(), &path, token, body.clone()).await;
        assert_eq!((reply.status.as_u16(), reply.code()), (403, "FORBIDDEN"), "{method} {path}: {reply:?}");
        let anonymous = app.call(method.clone(), &path, None, body).await;
        assert_eq!(anonymous.status.as_u16(), 401, "{method} {path}");
    }
    // A player of the club without a role is refused too.
    app.get(&format!("/tournaments/{id}/registrations"), Some(&player.access_token))
        .await
        .assert_error(403, "FORBIDDEN");
    let unchanged = app.get(&format!("/tournaments/{id}"), None).await;
    assert_eq!(unchanged.body["status"], "registration");
    assert_eq!(unchanged.body["capacity"], 10);
    assert_eq!(app.count("SELECT COUNT(*) FROM registrations").await, 1);
}
