//! What people in the room notice beyond the specification's rules: a cancelled or moved
//! tournament told to its players, seat notices at the start and at every move, a table
//! broken by a proposal and one batch of moves.

use std::time::Duration as StdDuration;

use chrono::Duration;
use serde_json::{Value, json};
use uuid::Uuid;

use crate::fake_fcm::FakeFcm;
use crate::helpers::{Backend, Session, TestApp, on_both_databases, spawn_app, spawn_app_with, test_redis_url};
use crate::live::{Ready, ready, seated_ids, staff, version};
use crate::notifications::{register_device, spawn_app_with_fcm};
use crate::staffing::id_of;

on_both_databases!(
    cancelling_tells_everyone_holding_a_place_once,
    moving_the_start_or_the_venue_tells_the_players_what_changed,
    at_the_start_each_seated_player_with_an_account_hears_their_seat,
    a_reseat_and_an_undo_into_another_seat_tell_the_moved_player,
    a_proposed_table_break_applied_as_one_batch_is_one_version,
    a_batch_with_one_wrong_move_moves_nobody,
    only_the_clubs_staff_break_tables,
    an_announcement_reaches_the_players_the_room_and_the_screen_once_a_minute,
    announcements_are_for_the_clubs_staff_and_short,
    a_player_lists_their_tournaments_and_sees_their_status_on_the_agenda,
    the_screens_event_stream_carries_the_rooms_level_and_announcement_events,
);

/// The caller's journal entries of `kind`, newest first.
pub(crate) async fn heard(app: &TestApp, session: &Session, kind: &str) -> Vec<Value> {
    let items = app.get("/me/notifications", Some(&session.access_token)).await.assert_ok()["items"].clone();
    items.as_array().expect("items").iter().filter(|item| item["kind"] == kind).cloned().collect()
}

/// Waits until the fake FCM has `count` messages whose data kind is `kind`.
async fn pushed(fcm: &FakeFcm, kind: &str, count: usize) -> Vec<Value> {
    for _ in 0..100 {
        let messages: Vec<Value> = fcm.messages().into_iter().filter(|m| m["data"]["kind"] == kind).collect();
        if messages.len() >= count {
            return messages;
        }
        tokio::time::sleep(StdDuration::from_millis(50)).await;
    }
    panic!("fewer than {count} {kind} pushes arrived");
}

/// Every player seated in a LiveState, by registration: (table, seat).
fn seat_of(state: &Value, registration_id: Uuid) -> Option<(i64, i64)> {
    state["tables"].as_array()?.iter().find_map(|table| {
        let seat = table["seats"].as_array()?.iter().find(|seat| id_of(&seat["registrationId"]) == registration_id)?;
        Some((table["tableNo"].as_i64()?, seat["seatNo"].as_i64()?))
    })
}

fn table_sizes(state: &Value) -> Vec<(i64, usize)> {
    state["tables"]
        .as_array()
        .expect("tables")
        .iter()
        .map(|table| (table["tableNo"].as_i64().unwrap_or(0), table["seats"].as_array().map_or(0, Vec::len)))
        .filter(|(_, players)| *players > 0)
        .collect()
}

async fn cancelling_tells_everyone_holding_a_place_once(backend: Backend) {
    let fcm = FakeFcm::start().await;
    let Some(app) = spawn_app_with_fcm(backend, &fcm).await else { return };
    let club = app.create_club("Aces", "+79990500001").await;
    let id = app.create_tournament(&club, 2, Duration::days(2)).await;
    let players = app.sign_in_players(501, 4).await;
    for player in &players {
        register_device(&app, &player.access_token, &format!("device-{}", player.user_id), "android").await;
        app.post(&format!("/tournaments/{id}/register"), Some(&player.access_token), json!({})).await.assert_ok();
    }
    // Two seats, one in the queue, and one who left before the cancel.
    app.post(&format!("/tournaments/{id}/cancel-registration"), Some(&players[3].access_token), json!({}))
        .await
        .assert_ok();
    staff(&app, &club, &format!("/tournaments/{id}/cancel"), json!({})).await.assert_ok();

    for player in &players[..3] {
        let told = heard(&app, player, "tournament.cancelled").await;
        assert_eq!(told.len(), 1, "{told:?}");
        assert_eq!(told[0]["payload"]["tournamentId"], id.to_string());
        assert_eq!(told[0]["payload"]["title"], "Турнир выходного дня");
    }
    assert!(heard(&app, &players[3], "tournament.cancelled").await.is_empty(), "who had left hears nothing");
    let pushes = pushed(&fcm, "tournament.cancelled", 3).await;
    assert_eq!(pushes.len(), 3);
    assert_eq!(pushes[0]["notification"]["title"], "Турнир отменён");
    assert!(pushes[0]["notification"]["body"].as_str().is_some_and(|body| body.contains("«Турнир выходного дня»")));

    staff(&app, &club, &format!("/tournaments/{id}/cancel"), json!({})).await.assert_error(409, "INVALID_STATUS");
    let journaled = app.count("SELECT COUNT(*) FROM notifications WHERE kind = 'tournament.cancelled'").await;
    assert_eq!(journaled, 3, "a second cancel tells nobody again");
}

async fn moving_the_start_or_the_venue_tells_the_players_what_changed(backend: Backend) {
    let Some(app) = spawn_app(backend).await else { return };
    let club = app.create_club("Aces", "+79990500011").await;
    let id = app.create_tournament(&club, 10, Duration::days(2)).await;
    let players = app.sign_in_players(502, 2).await;
    for player in &players {
        app.post(&format!("/tournaments/{id}/register"), Some(&player.access_token), json!({})).await.assert_ok();
    }
    let outsider = app.sign_in("+79995020099").await;
    let path = format!("/tournaments/{id}");
    let owner = Some(club.owner.access_token.as_str());

    // Not a move: the capacity, and the start it already has.
    let card = app.patch(&path, owner, json!({"capacity": 20})).await.assert_ok().clone();
    app.patch(&path, owner, json!({"startsAt": card["startsAt"]})).await.assert_ok();
    assert!(heard(&app, &players[0], "tournament.changed").await.is_empty());

    let later = (chrono::Utc::now() + Duration::days(3)).to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
    app.patch(&path, owner, json!({"startsAt": later})).await.assert_ok();
    let told = heard(&app, &players[0], "tournament.changed").await;
    assert_eq!(told.len(), 1, "{told:?}");
    assert_eq!(told[0]["payload"]["changed"], json!(["startsAt"]));
    let new_start =
        told[0]["payload"]["startsAt"].as_str().and_then(|at| at.parse::<chrono::DateTime<chrono::Utc>>().ok());
    assert_eq!(new_start, later.parse().ok());

    let venue = app.create_location(&club).await;
    app.patch(&path, owner, json!({"locationId": venue})).await.assert_ok();
    for player in &players {
        let told = heard(&app, player, "tournament.changed").await;
        assert_eq!(told.len(), 2, "{told:?}");
        assert_eq!(told[0]["payload"]["changed"], json!(["location"]));
        assert_eq!(told[0]["payload"]["location"]["id"], venue.to_string());
        assert_eq!(told[0]["payload"]["location"]["address"], "Tverskaya 1");
    }
    assert!(heard(&app, &outsider, "tournament.changed").await.is_empty());
}

async fn at_the_start_each_seated_player_with_an_account_hears_their_seat(backend: Backend) {
    let Some(app) = spawn_app(backend).await else { return };
    let day = ready(&app, "+79990500021", 503, 11).await;
    staff(&app, &day.club, &day.path("walk-in"), json!({"phone": "+79995030099", "name": "Guest Gleb"}))
        .await
        .assert_ok();
    let started = day.start(&app).await;
    assert_eq!(started["remaining"], 12, "the guest plays too");
    for (player, registration_id) in day.players.iter().zip(&day.registrations) {
        let told = heard(&app, player, "tournament.seated").await;
        assert_eq!(told.len(), 1, "{told:?}");
        let payload = &told[0]["payload"];
        let seat = (payload["tableNo"].as_i64().unwrap_or(0), payload["seatNo"].as_i64().unwrap_or(0));
        assert_eq!(Some(seat), seat_of(&started, *registration_id), "the notice names the seat the state shows");
        assert_eq!(payload["registrationId"], registration_id.to_string());
    }
    let journaled = app.count("SELECT COUNT(*) FROM notifications WHERE kind = 'tournament.seated'").await;
    assert_eq!(journaled, 11, "one per account; the guest has none");
}

async fn a_reseat_and_an_undo_into_another_seat_tell_the_moved_player(backend: Backend) {
    let Some(app) = spawn_app(backend).await else { return };
    let day = ready(&app, "+79990500031", 504, 10).await;
    let started = day.start(&app).await;
    let (anna, anna_registration) = (&day.players[0], day.registrations[0]);
    let from = seat_of(&started, anna_registration).expect("seated");
    let to_table = if from.0 == 1 { 2 } else { 1 };
    let moved = staff(
        &app,
        &day.club,
        &day.path("reseat"),
        json!({"registrationId": anna_registration, "tableNo": to_table, "seatNo": 9}),
    )
    .await
    .assert_ok()
    .clone();
    let told = heard(&app, anna, "seat.moved").await;
    assert_eq!(told.len(), 1, "{told:?}");
    let payload = &told[0]["payload"];
    assert_eq!((payload["fromTable"].as_i64(), payload["fromSeat"].as_i64()), (Some(from.0), Some(from.1)));
    assert_eq!((payload["toTable"].as_i64(), payload["toSeat"].as_i64()), (Some(to_table), Some(9)));
    assert_eq!(payload["version"].as_i64(), Some(version(&moved)));

    // Boris falls; Clara takes his seat; the undo brings Boris back elsewhere and tells him.
    let (boris, boris_registration) = (&day.players[1], day.registrations[1]);
    let boris_seat = seat_of(&moved, boris_registration).expect("seated");
    staff(&app, &day.club, "/eliminations", json!({"tournamentId": day.id, "registrationId": boris_registration}))
        .await
        .assert_ok();
    let clara_registration = seated_ids(&moved)
        .into_iter()
        .find(|id| ![anna_registration, boris_registration].contains(id))
        .expect("a third player");
    let clara = day.players[day.registrations.iter().position(|id| *id == clara_registration).expect("known")].clone();
    staff(
        &app,
        &day.club,
        &day.path("reseat"),
        json!({"registrationId": clara_registration, "tableNo": boris_seat.0, "seatNo": boris_seat.1}),
    )
    .await
    .assert_ok();
    let undone = staff(&app, &day.club, &day.path("eliminations/undo"), json!({})).await.assert_ok().clone();
    let back = seat_of(&undone, boris_registration).expect("back in");
    assert_ne!(back, boris_seat);
    let told = heard(&app, boris, "seat.moved").await;
    assert_eq!(told.len(), 1, "{told:?}");
    assert_eq!(
        (told[0]["payload"]["toTable"].as_i64(), told[0]["payload"]["toSeat"].as_i64()),
        (Some(back.0), Some(back.1))
    );
    assert_eq!(heard(&app, &clara, "seat.moved").await.len(), 1, "Clara heard of her own move");
}

/// A game of 20 (three tables: 7, 7, 6) where table 3 is down to two players.
async fn shrunk(app: &TestApp, owner_phone: &str, prefix: u32) -> (Ready, Value) {
    let day = ready(app, owner_phone, prefix, 20).await;
    let started = day.start(app).await;
    let third: Vec<Uuid> =
        seated_ids(&started).into_iter().filter(|id| seat_of(&started, *id).is_some_and(|(t, _)| t == 3)).collect();
    for fallen in &third[2..] {
        staff(app, &day.club, "/eliminations", json!({"tournamentId": day.id, "registrationId": fallen}))
            .await
            .assert_ok();
    }
    let state = day.live(app).await;
    assert_eq!(table_sizes(&state), [(1, 7), (2, 7), (3, 2)]);
    (day, state)
}

async fn a_proposed_table_break_applied_as_one_batch_is_one_version(backend: Backend) {
    let Some(app) = spawn_app(backend).await else { return };
    let (day, before) = shrunk(&app, "+79990500041", 505).await;
    let mut watcher = app.watcher(&day.players[0].access_token).await;
    assert_eq!(watcher.join(day.id).await["ok"], true);

    let proposal = app.get(&day.path("table-break"), Some(&day.club.owner.access_token)).await.assert_ok().clone();
    assert_eq!(proposal["kind"], "break");
    assert_eq!(proposal["tableNo"], 3);
    assert_eq!(proposal["version"], before["version"]);
    let moves = proposal["moves"].as_array().expect("moves").clone();
    assert_eq!(moves.len(), 2);
    // Tables 1 and 2 hold 7 each: the first goes to table 1 (a tie goes to the lower number),
    // the second to table 2, each to the table's first free seat.
    assert_eq!((moves[0]["toTable"].as_i64(), moves[1]["toTable"].as_i64()), (Some(1), Some(2)));
    assert!(moves.iter().all(|m| m["fromTable"] == 3 && m["name"].as_str().is_some_and(|n| n.starts_with("Player"))));
    assert_eq!(day.live(&app).await["version"], before["version"], "a proposal moves nobody");

    let batch: Vec<Value> = moves
        .iter()
        .map(|m| json!({"registrationId": m["registrationId"], "toTable": m["toTable"], "toSeat": m["toSeat"]}))
        .collect();
    let after = staff(&app, &day.club, &day.path("reseat-batch"), json!({"moves": batch})).await.assert_ok().clone();
    assert_eq!(version(&after), version(&before) + 1, "one version for the whole batch");
    assert_eq!(table_sizes(&after), [(1, 8), (2, 8)]);
    for m in &moves {
        let seat = seat_of(&after, id_of(&m["registrationId"]));
        assert_eq!(seat, Some((m["toTable"].as_i64().unwrap_or(0), m["toSeat"].as_i64().unwrap_or(0))));
        let player =
            &day.players[day.registrations.iter().position(|id| *id == id_of(&m["registrationId"])).expect("known")];
        let told = heard(&app, player, "seat.moved").await;
        assert_eq!(told.len(), 1, "{told:?}");
        assert_eq!(told[0]["payload"]["fromTable"], 3);
    }
    let audits = app.count("SELECT COUNT(*) FROM audit_log WHERE action = 'tournament.reseat_batch'").await;
    assert_eq!(audits, 1, "one audit record");
    let heard_state = watcher.next_state().await;
    assert_eq!(version(&heard_state), version(&after), "watchers get the batch as one state");

    let again = app.get(&day.path("table-break"), Some(&day.club.owner.access_token)).await.assert_ok().clone();
    assert_eq!(again["kind"], "noRoom", "16 players cannot sit at one table: {again}");
    assert_eq!(again["moves"], json!([]));
}

async fn a_batch_with_one_wrong_move_moves_nobody(backend: Backend) {
    let Some(app) = spawn_app(backend).await else { return };
    let (day, before) = shrunk(&app, "+79990500051", 506).await;
    let leaving: Vec<Uuid> =
        seated_ids(&before).into_iter().filter(|id| seat_of(&before, *id).is_some_and(|(t, _)| t == 3)).collect();
    let stays_on_table_one = seated_ids(&before)
        .into_iter()
        .find(|id| seat_of(&before, *id).is_some_and(|(t, _)| t == 1))
        .expect("table 1 has players");
    let occupied = seat_of(&before, stays_on_table_one).expect("seated");
    let batch = |second: Value| json!({"moves": [{"registrationId": leaving[0], "toTable": 1, "toSeat": 8}, second]});
    let path = day.path("reseat-batch");
    staff(
        &app,
        &day.club,
        &path,
        batch(json!({"registrationId": leaving[1], "toTable": occupied.0, "toSeat": occupied.1})),
    )
    .await
    .assert_error(409, "SEAT_TAKEN");
    staff(&app, &day.club, &path, batch(json!({"registrationId": leaving[1], "toTable": 1, "toSeat": 8})))
        .await
        .assert_error(400, "VALIDATION_ERROR");
    staff(&app, &day.club, &path, batch(json!({"registrationId": leaving[1], "toTable": 4, "toSeat": 1})))
        .await
        .assert_error(400, "VALIDATION_ERROR");
    staff(&app, &day.club, &path, json!({"moves": []})).await.assert_error(400, "VALIDATION_ERROR");
    let after = day.live(&app).await;
    assert_eq!(version(&after), version(&before), "nothing moved");
    assert_eq!(seat_of(&after, leaving[0]), seat_of(&before, leaving[0]));
    assert_eq!(app.count("SELECT COUNT(*) FROM notifications WHERE kind = 'seat.moved'").await, 0);

    // Two players may swap seats in one batch.
    let swap = json!({"moves": [
        {"registrationId": leaving[0], "toTable": occupied.0, "toSeat": occupied.1},
        {"registrationId": stays_on_table_one, "toTable": 3, "toSeat": seat_of(&before, leaving[0]).expect("seated").1},
    ]});
    let swapped = staff(&app, &day.club, &path, swap).await.assert_ok().clone();
    assert_eq!(seat_of(&swapped, leaving[0]), Some(occupied));
    assert_eq!(seat_of(&swapped, stays_on_table_one), seat_of(&before, leaving[0]));
}

async fn only_the_clubs_staff_break_tables(backend: Backend) {
    let Some(app) = spawn_app(backend).await else { return };
    let day = ready(&app, "+79990500061", 507, 3).await;
    let td = app.add_td(&day.club, "+79995070099").await;
    let other = app.create_club("Kings", "+79995070098").await;
    let other_td = app.add_td(&other, "+79995070097").await;
    let td_token = Some(td.access_token.as_str());
    app.get(&day.path("table-break"), td_token).await.assert_error(409, "TOURNAMENT_NOT_RUNNING");
    day.start(&app).await;
    let batch = json!({"moves": [{"registrationId": day.registrations[0], "toTable": 1, "toSeat": 9}]});
    for token in [&day.players[0].access_token, &other.owner.access_token, &other_td.access_token] {
        app.get(&day.path("table-break"), Some(token)).await.assert_error(403, "FORBIDDEN");
        app.post(&day.path("reseat-batch"), Some(token), batch.clone()).await.assert_error(403, "FORBIDDEN");
    }
    app.get(&day.path("table-break"), None).await.assert_error(401, "UNAUTHORIZED");
    app.post(&day.path("reseat-batch"), None, batch.clone()).await.assert_error(401, "UNAUTHORIZED");
    let proposal = app.get(&day.path("table-break"), td_token).await.assert_ok().clone();
    assert_eq!(proposal["kind"], "oneTable");
    app.post(&day.path("reseat-batch"), td_token, batch).await.assert_ok();
}

async fn an_announcement_reaches_the_players_the_room_and_the_screen_once_a_minute(backend: Backend) {
    let fcm = FakeFcm::start().await;
    let Some(app) = spawn_app_with_fcm(backend, &fcm).await else { return };
    let day = ready(&app, "+79990500071", 508, 3).await;
    for player in &day.players {
        register_device(&app, &player.access_token, &format!("device-{}", player.user_id), "ios").await;
    }
    let guest =
        staff(&app, &day.club, &day.path("walk-in"), json!({"phone": "+79995080099", "name": "Guest Gleb"})).await;
    guest.assert_ok();
    let started = day.start(&app).await;
    let mut plain = app.watcher(&day.players[0].access_token).await;
    assert_eq!(plain.join(day.id).await["ok"], true);
    let mut compact = app.watcher(&day.players[1].access_token).await;
    assert_eq!(compact.join_with(json!({"tournamentId": day.id, "compact": true})).await["ok"], true);
    let screen = format!("{}/screen/{}/announcement", app.base, day.id);
    assert_eq!(app.client.get(&screen).send().await.expect("an answer").status(), 204, "nothing said yet");

    let text = "Перерыв 10 минут, затем смена цвета фишек";
    let reply = app
        .post(&day.path("announcements"), Some(&day.club.owner.access_token), json!({"text": format!("  {text} ")}))
        .await;
    assert_eq!(reply.status.as_u16(), 201, "{reply:?}");
    assert_eq!(reply.body["text"], text, "trimmed");
    for watcher in [&mut plain, &mut compact] {
        let said = watcher.next_announcement().await;
        assert_eq!(said["tournamentId"], day.id.to_string());
        assert_eq!(said["text"], text);
        assert_eq!(said["createdAt"], reply.body["createdAt"]);
    }
    for player in &day.players {
        let told = heard(&app, player, "tournament.announcement").await;
        assert_eq!(told.len(), 1, "{told:?}");
        assert_eq!(told[0]["payload"]["text"], text);
    }
    let journaled = app.count("SELECT COUNT(*) FROM notifications WHERE kind = 'tournament.announcement'").await;
    assert_eq!(journaled, 3, "the guest has no account");
    let pushes = pushed(&fcm, "tournament.announcement", 3).await;
    assert_eq!(pushes[0]["notification"]["body"], text);
    assert_eq!(pushes[0]["notification"]["title"], "Турнир выходного дня");
    let shown: Value = app.client.get(&screen).send().await.expect("an answer").json().await.expect("json");
    assert_eq!(shown["text"], text, "the venue screen shows it");
    assert_eq!(day.live(&app).await["version"], started["version"], "an announcement is not a change of the game");

    let again =
        app.post(&day.path("announcements"), Some(&day.club.owner.access_token), json!({"text": "Ещё одно"})).await;
    again.assert_error(429, "RATE_LIMITED");
    let wait: u64 = again
        .headers
        .get("retry-after")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse().ok())
        .expect("Retry-After");
    assert!((55..=60).contains(&wait), "{wait}");
    // A minute later the next one goes.
    let a_minute_ago = (chrono::Utc::now() - Duration::seconds(61)).to_rfc3339();
    app.exec(&format!("UPDATE tournament_announcements SET created_at = '{a_minute_ago}'")).await;
    let next =
        app.post(&day.path("announcements"), Some(&day.club.owner.access_token), json!({"text": "Ещё одно"})).await;
    assert_eq!(next.status.as_u16(), 201, "{next:?}");
    assert_eq!(plain.next_announcement().await["text"], "Ещё одно");
    assert_eq!(app.count("SELECT COUNT(*) FROM audit_log WHERE action = 'tournament.announce'").await, 2);
}

async fn announcements_are_for_the_clubs_staff_and_short(backend: Backend) {
    let Some(app) = spawn_app(backend).await else { return };
    let day = ready(&app, "+79990500081", 509, 2).await;
    let td = app.add_td(&day.club, "+79995090099").await;
    let other = app.create_club("Kings", "+79995090098").await;
    let other_td = app.add_td(&other, "+79995090097").await;
    let path = day.path("announcements");
    let body = json!({"text": "Регистрация закрывается через 10 минут"});
    for token in [&day.players[0].access_token, &other.owner.access_token, &other_td.access_token] {
        app.post(&path, Some(token), body.clone()).await.assert_error(403, "FORBIDDEN");
    }
    app.post(&path, None, body.clone()).await.assert_error(401, "UNAUTHORIZED");
    let td_token = Some(td.access_token.as_str());
    app.post(&path, td_token, json!({"text": "   "})).await.assert_error(400, "VALIDATION_ERROR");
    app.post(&path, td_token, json!({"text": "я".repeat(281)})).await.assert_error(400, "VALIDATION_ERROR");
    assert_eq!(app.count("SELECT COUNT(*) FROM tournament_announcements").await, 0, "refused ones are not kept");
    let sent = app.post(&path, td_token, json!({"text": "я".repeat(280)})).await;
    assert_eq!(sent.status.as_u16(), 201, "a td announces before the start: {sent:?}");
    staff(&app, &day.club, &day.path("cancel"), json!({})).await.assert_ok();
    let a_minute_ago = (chrono::Utc::now() - Duration::seconds(61)).to_rfc3339();
    app.exec(&format!("UPDATE tournament_announcements SET created_at = '{a_minute_ago}'")).await;
    app.post(&path, td_token, body).await.assert_error(409, "INVALID_STATUS");
}

async fn a_player_lists_their_tournaments_and_sees_their_status_on_the_agenda(backend: Backend) {
    let Some(app) = spawn_app(backend).await else { return };
    let club = app.create_club("Aces", "+79990500091").await;
    let anna = app.sign_in("+79995100001").await;
    let boris = app.sign_in("+79995100002").await;
    // Created out of start order: the list comes by start.
    let later = app.create_tournament(&club, 10, Duration::days(5)).await;
    let full = app.create_tournament(&club, 2, Duration::days(3)).await;
    let sooner = app.create_tournament(&club, 10, Duration::days(1)).await;
    let left = app.create_tournament(&club, 10, Duration::days(2)).await;
    let called_off = app.create_tournament(&club, 10, Duration::days(4)).await;
    let untouched = app.create_tournament(&club, 10, Duration::days(6)).await;
    let register = |id: Uuid, who: &Session| {
        let token = who.access_token.clone();
        let app = &app;
        async move { app.post(&format!("/tournaments/{id}/register"), Some(&token), json!({})).await }
    };
    for id in [later, sooner, left, called_off] {
        register(id, &anna).await.assert_ok();
    }
    register(full, &boris).await.assert_ok();
    let third = app.sign_in("+79995100003").await;
    register(full, &third).await.assert_ok();
    assert_eq!(register(full, &anna).await.assert_ok()["status"], "waitlist");
    app.post(&format!("/tournaments/{left}/cancel-registration"), Some(&anna.access_token), json!({}))
        .await
        .assert_ok();
    staff(&app, &club, &format!("/tournaments/{called_off}/cancel"), json!({})).await.assert_ok();

    let mine = app.get("/me/registrations", Some(&anna.access_token)).await.assert_ok().clone();
    let items = mine["items"].as_array().expect("items");
    let listed: Vec<(String, String)> = items
        .iter()
        .map(|item| {
            (
                item["tournament"]["id"].as_str().unwrap_or_default().to_owned(),
                item["registration"]["status"].as_str().unwrap_or_default().to_owned(),
            )
        })
        .collect();
    let expected = [(sooner, "registered"), (full, "waitlist"), (later, "registered")]
        .map(|(id, status)| (id.to_string(), status.to_owned()));
    assert_eq!(listed, expected, "live registrations in tournaments still to come, by start");
    assert_eq!(items[1]["registration"]["waitlistPosition"], 1);
    assert_eq!(items[0]["tournament"]["organizerName"], "Aces");
    assert_eq!(
        app.get("/me/registrations", Some(&boris.access_token)).await.assert_ok()["items"].as_array().map(Vec::len),
        Some(1)
    );
    app.get("/me/registrations", None).await.assert_error(401, "UNAUTHORIZED");

    let status_of = |agenda: &Value, id: Uuid| {
        agenda["items"].as_array().and_then(|cards| cards.iter().find(|card| card["id"] == id.to_string()).cloned())
    };
    let anonymous = app.get("/tournaments", None).await.assert_ok().clone();
    let card = status_of(&anonymous, sooner).expect("on the agenda");
    assert!(card.get("myStatus").is_none(), "an anonymous agenda says nothing of anyone: {card}");
    let signed_in = app.get("/tournaments", Some(&anna.access_token)).await.assert_ok().clone();
    for (id, status) in
        [(sooner, json!("registered")), (full, json!("waitlist")), (left, json!("cancelled")), (untouched, Value::Null)]
    {
        let card = status_of(&signed_in, id).expect("on the agenda");
        assert_eq!(card["myStatus"], status, "{card}");
    }
    assert_eq!(
        status_of(&signed_in, sooner).map(|card| card["translations"].clone()),
        status_of(&anonymous, sooner).map(|card| card["translations"].clone())
    );
    assert!(status_of(&signed_in, called_off).is_none(), "a cancelled tournament is off the agenda");
    let other = app.get("/tournaments", Some(&boris.access_token)).await.assert_ok().clone();
    assert_eq!(status_of(&other, full).map(|card| card["myStatus"].clone()), Some(json!("registered")));
    assert_eq!(status_of(&other, sooner).map(|card| card["myStatus"].clone()), Some(Value::Null));
    app.get("/tournaments", Some("not-a-token")).await.assert_error(401, "UNAUTHORIZED");
}

/// A venue screen's event stream (`/screen/{id}/events`), read as the browser does.
struct ScreenStream {
    response: reqwest::Response,
    buffer: String,
}

impl ScreenStream {
    async fn open(app: &TestApp, tournament_id: Uuid) -> Self {
        let response = app
            .client
            .get(format!("{}/screen/{tournament_id}/events", app.base))
            .send()
            .await
            .expect("the stream opens");
        assert_eq!(response.status(), 200);
        let kind = response.headers().get("content-type").and_then(|v| v.to_str().ok()).unwrap_or_default();
        assert_eq!(kind, "text/event-stream");
        Self { response, buffer: String::new() }
    }

    /// The next event (not a keep-alive comment): its name and its data as JSON.
    async fn next(&mut self) -> (String, Value) {
        loop {
            if let Some(end) = self.buffer.find("\n\n") {
                let block: String = self.buffer.drain(..end + 2).collect();
                let field = |name: &str| {
                    block.lines().find_map(|line| line.strip_prefix(name)).map(|value| value.trim_start().to_owned())
                };
                if let (Some(event), Some(data)) = (field("event:"), field("data:")) {
                    return (event, serde_json::from_str(&data).expect("JSON data"));
                }
                continue;
            }
            let chunk = tokio::time::timeout(StdDuration::from_secs(5), self.response.chunk())
                .await
                .expect("an event within 5 s")
                .expect("a chunk")
                .expect("the stream stays open");
            self.buffer.push_str(std::str::from_utf8(&chunk).expect("UTF-8"));
        }
    }
}

async fn the_screens_event_stream_carries_the_rooms_level_and_announcement_events(backend: Backend) {
    let Some(app) = spawn_app(backend).await else { return };
    let day = ready(&app, "+79990500101", 511, 2).await;
    let other = ready(&app, "+79990500102", 512, 2).await;
    let mut screen = ScreenStream::open(&app, day.id).await;
    let started = day.start(&app).await;
    other.start(&app).await; // another tournament's events stay out of this stream
    let (name, level) = screen.next().await;
    assert_eq!(name, "level", "the start begins the first level");
    assert_eq!(
        (level["tournamentId"].as_str(), level["version"].as_i64()),
        (Some(day.id.to_string().as_str()), Some(version(&started)))
    );
    assert_eq!(level["currentLevelIdx"], 0);
    let pressed = staff(&app, &day.club, &day.path("level"), json!({"direction": "next"})).await.assert_ok().clone();
    let (name, level) = screen.next().await;
    assert_eq!((name.as_str(), level["version"].as_i64()), ("level", Some(version(&pressed))));
    assert_eq!(level["currentLevelIdx"], 1);
    assert_eq!(level["startedAt"], pressed["clock"]["levelStartedAt"]);
    staff(&app, &day.club, &day.path("pause"), json!({})).await.assert_ok();
    staff(&app, &day.club, &day.path("announcements"), json!({"text": "Смена цвета фишек"})).await;
    let (name, said) = screen.next().await;
    assert_eq!(name, "announcement", "a pause sends no level event");
    assert_eq!(said["text"], "Смена цвета фишек");
    let unknown = app.client.get(format!("{}/screen/{}/events", app.base, Uuid::now_v7())).send().await;
    assert_eq!(unknown.expect("an answer").status(), 404);
}

/// With several nodes, a screen on one node hears the room's events made on another.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_screen_on_one_node_hears_the_events_made_on_another() {
    let Some(redis_url) = test_redis_url().await else { return };
    let Some(first) = spawn_app_with(Backend::Postgres, &[("REDIS_URL", redis_url)]).await else { return };
    let second = first.second_node(&[("REDIS_URL", redis_url)]).await;
    let day = ready(&first, "+79990500111", 513, 2).await;
    let started = day.start(&first).await;
    let mut screen = ScreenStream::open(&second, day.id).await;
    let pressed = staff(&first, &day.club, &day.path("level"), json!({"direction": "next"})).await.assert_ok().clone();
    assert!(version(&pressed) > version(&started));
    // The start's own level event may still be on its way to the second node.
    let (name, mut level) = screen.next().await;
    if level["version"].as_i64() == Some(version(&started)) {
        level = screen.next().await.1;
    }
    assert_eq!((name.as_str(), level["version"].as_i64()), ("level", Some(version(&pressed))));
    staff(&first, &day.club, &day.path("announcements"), json!({"text": "Финальный стол"})).await;
    let (name, said) = screen.next().await;
    assert_eq!((name.as_str(), said["text"].as_str()), ("announcement", Some("Финальный стол")));
}
