//! The live game day through the running server: start, the clock, eliminations, undo,
//! reorder, reseat, confirmation and the rating, with watchers on Socket.IO `/live`.

use std::collections::HashSet;
use std::time::Duration as StdDuration;

use chrono::Duration;
use futures::future::join_all;
use rust_socketio::TransportType;
use serde_json::{Value, json};
use uuid::Uuid;

use crate::helpers::{
    Backend, Club, Reply, Session, TestApp, on_both_databases, spawn_app, spawn_app_with, test_redis_url,
};
use crate::staffing::id_of;

on_both_databases!(
    a_whole_game_day_of_twenty_players_ends_in_confirmed_results,
    start_needs_two_checked_in_players_and_happens_once,
    start_marks_no_shows_with_a_strike_and_closes_the_waitlist,
    a_walk_in_after_start_gets_no_seat_and_cannot_be_eliminated,
    twenty_parallel_next_presses_lose_no_level,
    the_clock_pauses_resumes_and_steps_by_the_contract,
    ten_parallel_eliminations_of_one_player_let_one_through,
    places_follow_the_players_still_in_and_the_last_one_stays,
    undo_brings_back_the_last_elimination_to_a_free_seat,
    reorder_hands_out_the_stamps_in_the_given_order,
    reseat_moves_a_player_to_a_free_seat_only,
    eliminations_carry_the_balance_hint,
    five_parallel_confirmations_award_once,
    confirmation_needs_a_decided_game,
    a_killed_actor_restarts_with_the_same_live_state,
    a_watcher_receives_every_version_in_order,
    the_live_state_is_public_with_an_etag_and_no_phone,
    live_connections_need_a_valid_token,
    a_burst_of_connections_joining_at_once_gets_every_join_acked,
    a_compact_watcher_gets_clock_presses_as_small_clock_events,
    every_watcher_hears_a_level_event_when_a_level_or_a_break_begins,
    only_the_clubs_owner_or_td_run_the_game_day,
    cancelling_a_running_tournament_reaches_the_watchers,
    a_recount_rebuilds_results_keeping_their_time,
    a_guest_who_signs_up_takes_their_results,
    a_new_structure_before_start_is_a_new_live_version,
    results_are_for_signed_in_users_newest_first_for_a_player,
);

/// A tournament whose `count` players (phones from `prefix`) registered and were checked in.
pub(crate) struct Ready {
    pub club: Club,
    pub id: Uuid,
    pub players: Vec<Session>,
    /// The players' registration ids, in the order of `players`.
    pub registrations: Vec<Uuid>,
}

pub(crate) async fn ready(app: &TestApp, owner_phone: &str, prefix: u32, count: u32) -> Ready {
    let club = app.create_club("Aces", owner_phone).await;
    let id = app.create_tournament(&club, 100, Duration::days(1)).await;
    let players = app.sign_in_players(prefix, count).await;
    let mut registrations = Vec::new();
    for (n, player) in players.iter().enumerate() {
        app.patch("/me", Some(&player.access_token), json!({"name": format!("Player {n}")})).await.assert_ok();
        let registration =
            app.post(&format!("/tournaments/{id}/register"), Some(&player.access_token), json!({})).await;
        let registration_id = id_of(&registration.assert_ok()["id"]);
        staff(app, &club, &format!("/tournaments/{id}/check-in"), json!({"registrationId": registration_id}))
            .await
            .assert_ok();
        registrations.push(registration_id);
    }
    Ready { club, id, players, registrations }
}

pub(crate) async fn staff(app: &TestApp, club: &Club, path: &str, body: Value) -> Reply {
    app.post(path, Some(&club.owner.access_token), body).await
}

impl Ready {
    pub fn path(&self, action: &str) -> String {
        format!("/tournaments/{}/{action}", self.id)
    }

    pub async fn start(&self, app: &TestApp) -> Value {
        staff(app, &self.club, &self.path("start"), json!({})).await.assert_ok().clone()
    }

    async fn press(&self, app: &TestApp, action: &str, body: Value) -> Reply {
        staff(app, &self.club, &self.path(action), body).await
    }

    async fn eliminate(&self, app: &TestApp, registration_id: Uuid) -> Reply {
        staff(app, &self.club, "/eliminations", json!({"tournamentId": self.id, "registrationId": registration_id}))
            .await
    }

    pub async fn live(&self, app: &TestApp) -> Value {
        app.get(&self.path("live"), None).await.assert_ok().clone()
    }
}

/// Every player seated in a LiveState: (registrationId, tableNo, seatNo).
pub(crate) fn seats(state: &Value) -> Vec<(Uuid, i64, i64)> {
    let mut seats = Vec::new();
    for table in state["tables"].as_array().expect("tables") {
        for seat in table["seats"].as_array().expect("seats") {
            seats.push((
                id_of(&seat["registrationId"]),
                table["tableNo"].as_i64().unwrap_or(0),
                seat["seatNo"].as_i64().unwrap_or(0),
            ));
        }
    }
    seats
}

pub(crate) fn seated_ids(state: &Value) -> Vec<Uuid> {
    seats(state).into_iter().map(|(id, _, _)| id).collect()
}

pub(crate) fn version(state: &Value) -> i64 {
    state["version"].as_i64().expect("a version")
}

async fn a_whole_game_day_of_twenty_players_ends_in_confirmed_results(backend: Backend) {
    let Some(app) = spawn_app(backend).await else { return };
    let day = ready(&app, "+79990400001", 401, 20).await;
    let mut watcher = app.watcher(&day.players[0].access_token).await;
    let joined = watcher.join(day.id).await;
    assert_eq!(joined["ok"], true, "{joined}");
    assert_eq!(joined["state"]["status"], "registration");

    let started = day.start(&app).await;
    assert_eq!(started["status"], "running");
    assert_eq!(started["entrants"], 20);
    assert_eq!(started["remaining"], 20);
    assert_eq!(started["chipsInPlay"], 20 * 20_000);
    assert_eq!(started["avgStack"], 20_000);
    assert_eq!(started["clock"]["currentLevelIdx"], 0);
    assert_eq!(started["clock"]["levels"].as_array().map(Vec::len), Some(13));
    let tables = started["tables"].as_array().expect("tables");
    assert_eq!(tables.len(), 3, "20 players need 3 tables of 9");
    let sizes: Vec<usize> = tables.iter().map(|t| t["seats"].as_array().map_or(0, Vec::len)).collect();
    assert_eq!(sizes.iter().sum::<usize>(), 20);
    assert!(sizes.iter().max().unwrap_or(&0) - sizes.iter().min().unwrap_or(&0) <= 1, "{sizes:?}");
    assert_eq!(watcher.next_state().await["version"], started["version"]);

    // Everyone but the winner falls, one by one; the place is the players still in.
    let mut order = seated_ids(&started);
    let winner = order.pop().expect("a winner");
    for (fallen, registration_id) in order.iter().enumerate() {
        let reply = day.eliminate(&app, *registration_id).await;
        let body = reply.assert_ok();
        assert_eq!(body["elimination"]["place"], 20 - fallen as i64, "{body}");
        assert_eq!(body["state"]["remaining"], 19 - fallen as i64);
        let heard = watcher.next_state().await;
        assert_eq!(heard["version"], body["state"]["version"]);
    }
    let last = day.live(&app).await;
    assert_eq!(last["remaining"], 1);
    assert_eq!(seated_ids(&last), vec![winner]);
    assert_eq!(last["eliminations"].as_array().map(Vec::len), Some(19));

    let confirmed = day.press(&app, "confirm-results", json!({})).await;
    let protocol = confirmed.assert_ok()["items"].as_array().expect("items").clone();
    assert_eq!(protocol.len(), 20);
    assert_eq!(id_of(&protocol[0]["registrationId"]), winner);
    let places: Vec<i64> = protocol.iter().map(|row| row["place"].as_i64().unwrap_or(0)).collect();
    assert_eq!(places, (1..=20).collect::<Vec<_>>());
    // N = 20: round(10 * sqrt(20) * (20 - place + 1) / 20).
    let points: Vec<i64> = protocol.iter().map(|row| row["seasonPoints"].as_i64().unwrap_or(-1)).collect();
    let expected: Vec<i64> =
        (1..=20).map(|place: i64| ((10.0 * 20f64.sqrt() * (21 - place) as f64 / 20.0).round() as i64).max(1)).collect();
    assert_eq!(points, expected);
    assert_eq!(protocol[0]["skillBefore"], 5.0);
    assert_eq!(protocol[0]["skillAfter"], 5.5, "0.4444 + 0.1 * (1 - 0.4444) = 0.49996, shown as 5.5");
    let finished = watcher.next_state().await;
    assert_eq!(finished["status"], "finished");

    let tournament = app.get(&format!("/tournaments/{}", day.id), None).await;
    assert_eq!(tournament.assert_ok()["status"], "finished");
    let winner_index = day.registrations.iter().position(|id| *id == winner).expect("the winner is a player");
    let winner_session = &day.players[winner_index];
    let profile = app.get("/auth/me", Some(&winner_session.access_token)).await;
    let profile = &profile.assert_ok()["profile"];
    assert_eq!(profile["wins"], 1);
    assert_eq!(profile["gamesPlayed"], 1);
    assert_eq!(profile["xp"], expected[0]);
    assert_eq!(profile["level"], 1, "45 xp is below the 50 of level 2");
    assert_eq!(profile["skill"], 5.5);
    let last_place = &day.players[day.registrations.iter().position(|id| *id == order[0]).expect("a player")];
    let profile = app.get("/auth/me", Some(&last_place.access_token)).await;
    assert_eq!(profile.assert_ok()["profile"]["skill"], 4.6, "0.4444 - 0.04444 = 0.39996, shown as 4.6");
    assert_eq!(
        app.eventually_count("SELECT COUNT(*) FROM notifications WHERE kind = 'tournament.results'", 20).await,
        20,
        "each participant hears of the results"
    );
    assert_eq!(app.count("SELECT COUNT(*) FROM audit_log WHERE action = 'tournament.eliminate'").await, 19);
    assert_eq!(app.count("SELECT COUNT(*) FROM audit_log WHERE action = 'tournament.start'").await, 1);
    assert_eq!(app.count("SELECT COUNT(*) FROM audit_log WHERE action = 'tournament.confirm_results'").await, 1);
    watcher.close().await;
}

async fn start_needs_two_checked_in_players_and_happens_once(backend: Backend) {
    let Some(app) = spawn_app(backend).await else { return };
    let day = ready(&app, "+79990400011", 402, 1).await;
    day.press(&app, "start", json!({})).await.assert_error(409, "NOT_ENOUGH_PLAYERS");
    assert_eq!(day.live(&app).await["status"], "registration");
    let second = app.sign_in("+79994020099").await;
    let registration = app.post(&day.path("register"), Some(&second.access_token), json!({})).await;
    let registration_id = id_of(&registration.assert_ok()["id"]);
    day.press(&app, "start", json!({})).await.assert_error(409, "NOT_ENOUGH_PLAYERS");
    staff(&app, &day.club, &day.path("check-in"), json!({"registrationId": registration_id})).await.assert_ok();
    let started = join_all((0..5).map(|_| day.press(&app, "start", json!({})))).await;
    let ok = started.iter().filter(|reply| reply.status.is_success()).count();
    assert_eq!(ok, 1, "{started:?}");
    for reply in started.iter().filter(|reply| !reply.status.is_success()) {
        reply.assert_error(409, "TOURNAMENT_ALREADY_STARTED");
    }
    assert_eq!(app.count("SELECT COUNT(*) FROM table_seats").await, 2);
    assert_eq!(app.count("SELECT COUNT(*) FROM audit_log WHERE action = 'tournament.start'").await, 1);
    // The roster is fixed: registration and check-in are closed.
    let late = app.sign_in("+79994020098").await;
    app.post(&day.path("register"), Some(&late.access_token), json!({})).await.assert_error(409, "REGISTRATION_CLOSED");
}

async fn start_marks_no_shows_with_a_strike_and_closes_the_waitlist(backend: Backend) {
    let Some(app) = spawn_app(backend).await else { return };
    let day = ready(&app, "+79990400021", 403, 2).await;
    app.exec(&format!("UPDATE tournaments SET capacity = 3 WHERE id = {}", app.uuid_literal(day.id))).await;
    let absent = app.sign_in("+79994030090").await;
    let queued = app.sign_in("+79994030091").await;
    let absent_registration = app.post(&day.path("register"), Some(&absent.access_token), json!({})).await;
    assert_eq!(absent_registration.assert_ok()["status"], "registered");
    let queued_registration = app.post(&day.path("register"), Some(&queued.access_token), json!({})).await;
    assert_eq!(queued_registration.assert_ok()["status"], "waitlist");
    let started = day.start(&app).await;
    assert_eq!(started["entrants"], 2);
    assert_eq!(started["chipsInPlay"], 40_000);
    let status = |id: Uuid| format!("SELECT status FROM registrations WHERE id = {}", app.uuid_literal(id));
    assert_eq!(app.scalar(&status(id_of(&absent_registration.body["id"]))).await.as_deref(), Some("no_show"));
    assert_eq!(app.scalar(&status(id_of(&queued_registration.body["id"]))).await.as_deref(), Some("cancelled"));
    let strikes = app.get(&day.path("strikes"), Some(&day.club.owner.access_token)).await;
    let strikes = strikes.assert_ok()["items"].as_array().expect("items").clone();
    assert_eq!(strikes.len(), 1, "only the no-show gets a strike: {strikes:?}");
    assert_eq!(strikes[0]["reason"], "no_show");
    assert_eq!(id_of(&strikes[0]["userId"]), absent.user_id);
}

async fn a_walk_in_after_start_gets_no_seat_and_cannot_be_eliminated(backend: Backend) {
    let Some(app) = spawn_app(backend).await else { return };
    let day = ready(&app, "+79990400031", 404, 3).await;
    let started = day.start(&app).await;
    let walk_in =
        staff(&app, &day.club, &day.path("walk-in"), json!({"phone": "+79994040099", "name": "Late Lena"})).await;
    let late = id_of(&walk_in.assert_ok()["id"]);
    assert_eq!(walk_in.body["status"], "checked_in");
    let state = day.live(&app).await;
    assert_eq!(state["version"], started["version"], "a walk-in after start changes nothing live");
    assert_eq!(state["remaining"], 3);
    assert!(!seated_ids(&state).contains(&late));
    day.eliminate(&app, late).await.assert_error(404, "NOT_FOUND");
}

async fn twenty_parallel_next_presses_lose_no_level(backend: Backend) {
    let Some(app) = spawn_app(backend).await else { return };
    let day = ready(&app, "+79990400041", 405, 2).await;
    let started = day.start(&app).await;
    let presses = join_all((0..20).map(|_| day.press(&app, "level", json!({"direction": "next"})))).await;
    let moved = presses.iter().filter(|reply| reply.status.is_success()).count();
    assert_eq!(moved, 12, "13 segments allow 12 steps: {presses:?}");
    for reply in presses.iter().filter(|reply| !reply.status.is_success()) {
        reply.assert_error(409, "INVALID_LEVEL");
    }
    let state = day.live(&app).await;
    assert_eq!(state["clock"]["currentLevelIdx"], 12);
    assert_eq!(version(&state), version(&started) + 12);
    let levels: HashSet<i64> =
        presses.iter().filter_map(|reply| reply.body["clock"]["currentLevelIdx"].as_i64()).collect();
    assert_eq!(levels, (1..=12).collect(), "each accepted press moved exactly one step");
    assert_eq!(app.count("SELECT COUNT(*) FROM audit_log WHERE action = 'tournament.level_next'").await, 12);
    assert_eq!(app.count("SELECT COUNT(*) FROM tournaments WHERE current_level_idx = 12").await, 1);
}

fn at(state: &Value, field: &str) -> Option<chrono::DateTime<chrono::Utc>> {
    state["clock"][field].as_str().and_then(|text| text.parse().ok())
}

async fn the_clock_pauses_resumes_and_steps_by_the_contract(backend: Backend) {
    let Some(app) = spawn_app(backend).await else { return };
    let day = ready(&app, "+79990400051", 406, 2).await;
    let started = day.start(&app).await;
    assert!(at(&started, "pausedAt").is_none());
    day.press(&app, "level", json!({"direction": "prev"})).await.assert_error(409, "INVALID_LEVEL");
    day.press(&app, "level", json!({"direction": "sideways"})).await.assert_error(400, "VALIDATION_ERROR");

    let resumed_while_running = day.press(&app, "resume", json!({})).await;
    assert_eq!(resumed_while_running.assert_ok()["version"], started["version"], "resume while running is a no-op");
    let paused = day.press(&app, "pause", json!({})).await.assert_ok().clone();
    assert_eq!(version(&paused), version(&started) + 1);
    let paused_at = at(&paused, "pausedAt").expect("paused");
    let again = day.press(&app, "pause", json!({})).await.assert_ok().clone();
    assert_eq!(again["version"], paused["version"], "pause while paused is a no-op");
    assert_eq!(app.count("SELECT COUNT(*) FROM audit_log WHERE action = 'tournament.pause'").await, 1);

    let stepped = day.press(&app, "level", json!({"direction": "next"})).await.assert_ok().clone();
    assert_eq!(stepped["clock"]["currentLevelIdx"], 1);
    assert_eq!(at(&stepped, "pausedAt"), Some(paused_at), "still paused");
    assert_eq!(at(&stepped, "levelStartedAt"), Some(paused_at), "the new segment starts at the pause");

    tokio::time::sleep(StdDuration::from_millis(50)).await;
    let resumed = day.press(&app, "resume", json!({})).await.assert_ok().clone();
    assert!(at(&resumed, "pausedAt").is_none());
    let shifted = at(&resumed, "levelStartedAt").expect("a segment start");
    assert!(shifted > paused_at, "the paused time does not count: {shifted} after {paused_at}");
    let back = day.press(&app, "level", json!({"direction": "prev"})).await.assert_ok().clone();
    assert_eq!(back["clock"]["currentLevelIdx"], 0);
    // Eliminations are accepted while paused.
    day.press(&app, "pause", json!({})).await.assert_ok();
    day.eliminate(&app, day.registrations[0]).await.assert_ok();
    // The persisted fields are the clock's.
    assert_eq!(app.count("SELECT COUNT(*) FROM tournaments WHERE current_level_idx = 0").await, 1);
}

async fn ten_parallel_eliminations_of_one_player_let_one_through(backend: Backend) {
    let Some(app) = spawn_app(backend).await else { return };
    let day = ready(&app, "+79990400061", 407, 3).await;
    let started = day.start(&app).await;
    let target = seated_ids(&started)[0];
    let replies = join_all((0..10).map(|_| day.eliminate(&app, target))).await;
    assert_eq!(replies.iter().filter(|reply| reply.status.is_success()).count(), 1, "{replies:?}");
    for reply in replies.iter().filter(|reply| !reply.status.is_success()) {
        reply.assert_error(409, "ALREADY_ELIMINATED");
    }
    let state = day.live(&app).await;
    assert_eq!(state["remaining"], 2);
    assert_eq!(version(&state), version(&started) + 1);
    assert_eq!(app.count("SELECT COUNT(*) FROM audit_log WHERE action = 'tournament.eliminate'").await, 1);
    assert_eq!(app.count("SELECT COUNT(*) FROM table_seats WHERE active = false").await, 1);
}

async fn places_follow_the_players_still_in_and_the_last_one_stays(backend: Backend) {
    let Some(app) = spawn_app(backend).await else { return };
    let day = ready(&app, "+79990400071", 408, 4).await;
    let started = day.start(&app).await;
    let ids = seated_ids(&started);
    let mut stamps = Vec::new();
    for (n, id) in ids.iter().take(3).enumerate() {
        let reply = day.eliminate(&app, *id).await;
        let body = reply.assert_ok();
        assert_eq!(body["elimination"]["place"], 4 - n as i64);
        stamps.push(
            body["elimination"]["eliminatedAt"]
                .as_str()
                .and_then(|t| t.parse::<chrono::DateTime<chrono::Utc>>().ok())
                .expect("a stamp"),
        );
    }
    assert!(stamps.windows(2).all(|pair| pair[0] < pair[1]), "stamps strictly increase: {stamps:?}");
    day.eliminate(&app, ids[3]).await.assert_error(409, "INVALID_STATUS");
    let state = day.live(&app).await;
    let places: Vec<i64> = state["eliminations"]
        .as_array()
        .expect("eliminations")
        .iter()
        .map(|e| e["place"].as_i64().unwrap_or(0))
        .collect();
    assert_eq!(places, vec![2, 3, 4], "best place first");
    day.eliminate(&app, Uuid::now_v7()).await.assert_error(404, "NOT_FOUND");
    staff(&app, &day.club, "/eliminations", json!({"tournamentId": Uuid::now_v7(), "registrationId": ids[3]}))
        .await
        .assert_error(404, "NOT_FOUND");
    staff(&app, &day.club, "/eliminations", json!({"tournamentId": day.id}))
        .await
        .assert_error(400, "VALIDATION_ERROR");
}

async fn undo_brings_back_the_last_elimination_to_a_free_seat(backend: Backend) {
    let Some(app) = spawn_app(backend).await else { return };
    let day = ready(&app, "+79990400081", 409, 4).await;
    day.start(&app).await;
    day.press(&app, "eliminations/undo", json!({})).await.assert_error(409, "NOTHING_TO_UNDO");
    let state = day.live(&app).await;
    let all = seats(&state);
    let (first, _, _) = all[0];
    let (second, table, seat) = all[1];
    day.eliminate(&app, first).await.assert_ok();
    day.eliminate(&app, second).await.assert_ok();
    // Someone takes the second player's seat; the undo then finds the first free seat.
    let (mover, _, _) = all[2];
    day.press(&app, "reseat", json!({"registrationId": mover, "tableNo": table, "seatNo": seat})).await.assert_ok();
    let undone = day.press(&app, "eliminations/undo", json!({})).await.assert_ok().clone();
    assert_eq!(undone["remaining"], 3);
    let back = seats(&undone).into_iter().find(|(id, _, _)| *id == second).expect("the player is back");
    assert_eq!(back.1, table, "the same table");
    assert_ne!(back.2, seat, "not the taken seat");
    let free_seats: Vec<i64> =
        (1..=9).filter(|n| !seats(&undone).iter().any(|(id, t, s)| *id != second && *t == table && s == n)).collect();
    assert_eq!(back.2, free_seats[0], "the first free seat");
    assert_eq!(undone["eliminations"].as_array().map(Vec::len), Some(1));
    assert_eq!(
        app.scalar(&format!("SELECT eliminated_at FROM registrations WHERE id = {}", app.uuid_literal(second))).await,
        None
    );
    let again = day.press(&app, "eliminations/undo", json!({})).await.assert_ok().clone();
    let first_back = seats(&again).into_iter().find(|(id, _, _)| *id == first).expect("back");
    assert_eq!(first_back.1, all[0].1, "the same table");
    // With nobody in the way, an undo returns the player to the very seat.
    day.eliminate(&app, first).await.assert_ok();
    let alone = day.press(&app, "eliminations/undo", json!({})).await.assert_ok().clone();
    assert!(seats(&alone).contains(&first_back), "the old seat when it is free");
    day.press(&app, "eliminations/undo", json!({})).await.assert_error(409, "NOTHING_TO_UNDO");
}

async fn reorder_hands_out_the_stamps_in_the_given_order(backend: Backend) {
    let Some(app) = spawn_app(backend).await else { return };
    let day = ready(&app, "+79990400091", 410, 4).await;
    let started = day.start(&app).await;
    let ids = seated_ids(&started);
    let (a, b, c) = (ids[0], ids[1], ids[2]);
    day.eliminate(&app, a).await.assert_ok();
    day.eliminate(&app, b).await.assert_ok();
    day.press(&app, "eliminations/reorder", json!({"registrationIds": [a]}))
        .await
        .assert_error(400, "VALIDATION_ERROR");
    day.press(&app, "eliminations/reorder", json!({"registrationIds": [a, a]}))
        .await
        .assert_error(400, "VALIDATION_ERROR");
    day.press(&app, "eliminations/reorder", json!({"registrationIds": [a, c]}))
        .await
        .assert_error(409, "INVALID_STATUS");
    let before = day.live(&app).await;
    let place_of = |state: &Value, id: Uuid| {
        state["eliminations"]
            .as_array()
            .expect("eliminations")
            .iter()
            .find(|e| e["registrationId"] == json!(id))
            .map(|e| e["place"].clone())
    };
    assert_eq!(place_of(&before, a), Some(json!(4)));
    assert_eq!(place_of(&before, b), Some(json!(3)));
    let reordered =
        day.press(&app, "eliminations/reorder", json!({"registrationIds": [b, a]})).await.assert_ok().clone();
    assert_eq!(place_of(&reordered, b), Some(json!(4)), "b now fell first");
    assert_eq!(place_of(&reordered, a), Some(json!(3)));
    // Undo now brings back the one holding the latest stamp.
    let undone = day.press(&app, "eliminations/undo", json!({})).await.assert_ok().clone();
    assert!(seated_ids(&undone).contains(&a));
}

async fn reseat_moves_a_player_to_a_free_seat_only(backend: Backend) {
    let Some(app) = spawn_app(backend).await else { return };
    let day = ready(&app, "+79990400101", 411, 10).await;
    let started = day.start(&app).await;
    let all = seats(&started);
    let (mover, from_table, _) = all[0];
    let taken = all.iter().find(|(id, table, _)| *id != mover && *table != from_table).expect("another table");
    day.press(&app, "reseat", json!({"registrationId": mover, "tableNo": taken.1, "seatNo": taken.2}))
        .await
        .assert_error(409, "SEAT_TAKEN");
    day.press(&app, "reseat", json!({"registrationId": mover, "tableNo": 3, "seatNo": 1}))
        .await
        .assert_error(400, "VALIDATION_ERROR");
    day.press(&app, "reseat", json!({"registrationId": mover, "tableNo": 1, "seatNo": 10}))
        .await
        .assert_error(400, "VALIDATION_ERROR");
    let moved = day
        .press(&app, "reseat", json!({"registrationId": mover, "tableNo": taken.1, "seatNo": 9}))
        .await
        .assert_ok()
        .clone();
    assert!(seats(&moved).contains(&(mover, taken.1, 9)));
    day.eliminate(&app, all[1].0).await.assert_ok();
    day.press(&app, "reseat", json!({"registrationId": all[1].0, "tableNo": 1, "seatNo": 8}))
        .await
        .assert_error(409, "ALREADY_ELIMINATED");
}

async fn eliminations_carry_the_balance_hint(backend: Backend) {
    let Some(app) = spawn_app(backend).await else { return };
    let day = ready(&app, "+79990400111", 412, 12).await;
    let started = day.start(&app).await;
    let all = seats(&started);
    let on_table = |table: i64| all.iter().filter(|(_, t, _)| *t == table).map(|(id, _, _)| *id).collect::<Vec<_>>();
    // 12 players: 6 and 6. Two from table 2 fall: 6 and 4, one move from table 1.
    let second_table = on_table(2);
    let first = day.eliminate(&app, second_table[0]).await;
    assert_eq!(first.assert_ok()["balance"], Value::Null, "6 and 5 are balanced");
    let second = day.eliminate(&app, second_table[1]).await;
    let hint = second.assert_ok()["balance"].clone();
    assert_eq!(hint["kind"], "move", "{hint}");
    let moves = hint["moves"].as_array().expect("moves");
    assert_eq!(moves.len(), 1);
    assert_eq!(moves[0]["fromTable"], 1);
    assert_eq!(moves[0]["toTable"], 2);
    assert_eq!(moves[0]["fromSeat"], 6, "the highest seat of the larger table");
    // Nobody moved by itself.
    assert_eq!(seats(&second.body["state"]).iter().filter(|(_, t, _)| *t == 1).count(), 6);
    // Down to 9: the final table.
    let third = day.eliminate(&app, second_table[2]).await;
    let hint = third.assert_ok()["balance"].clone();
    assert_eq!(hint["kind"], "finalTable", "{hint}");
    assert_eq!(hint["moves"].as_array().map(Vec::len), Some(3), "table 2's three go to table 1");
    assert!(hint["moves"].as_array().expect("moves").iter().all(|m| m["toTable"] == 1));
}

async fn five_parallel_confirmations_award_once(backend: Backend) {
    let Some(app) = spawn_app(backend).await else { return };
    let day = ready(&app, "+79990400121", 413, 3).await;
    let started = day.start(&app).await;
    let ids = seated_ids(&started);
    day.eliminate(&app, ids[0]).await.assert_ok();
    day.eliminate(&app, ids[1]).await.assert_ok();
    let replies = join_all((0..5).map(|_| day.press(&app, "confirm-results", json!({})))).await;
    assert_eq!(replies.iter().filter(|reply| reply.status.is_success()).count(), 1, "{replies:?}");
    for reply in replies.iter().filter(|reply| !reply.status.is_success()) {
        reply.assert_error(409, "RESULTS_ALREADY_CONFIRMED");
    }
    assert_eq!(app.count("SELECT COUNT(*) FROM results").await, 3);
    assert_eq!(app.count("SELECT SUM(wins) FROM player_profiles").await, 1);
    assert_eq!(app.count("SELECT SUM(games_played) FROM player_profiles").await, 3);
    assert_eq!(app.count("SELECT COUNT(*) FROM audit_log WHERE action = 'tournament.confirm_results'").await, 1);
    day.press(&app, "pause", json!({})).await.assert_error(409, "TOURNAMENT_NOT_RUNNING");
    day.eliminate(&app, ids[2]).await.assert_error(409, "TOURNAMENT_NOT_RUNNING");
}

async fn confirmation_needs_a_decided_game(backend: Backend) {
    let Some(app) = spawn_app(backend).await else { return };
    let day = ready(&app, "+79990400131", 414, 3).await;
    day.press(&app, "confirm-results", json!({})).await.assert_error(409, "TOURNAMENT_NOT_RUNNING");
    day.press(&app, "pause", json!({})).await.assert_error(409, "TOURNAMENT_NOT_RUNNING");
    let started = day.start(&app).await;
    day.eliminate(&app, seated_ids(&started)[0]).await.assert_ok();
    day.press(&app, "confirm-results", json!({})).await.assert_error(409, "INVALID_STATUS");
    assert_eq!(app.count("SELECT COUNT(*) FROM results").await, 0);
    app.get(&day.path("results"), Some(&day.players[0].access_token)).await.assert_ok();
}

async fn a_killed_actor_restarts_with_the_same_live_state(backend: Backend) {
    let Some(app) = spawn_app(backend).await else { return };
    let day = ready(&app, "+79990400141", 415, 5).await;
    let started = day.start(&app).await;
    day.eliminate(&app, seated_ids(&started)[0]).await.assert_ok();
    day.press(&app, "level", json!({"direction": "next"})).await.assert_ok();
    let before = day.press(&app, "pause", json!({})).await.assert_ok().clone();
    let actor = app.state.live.registry().actor_of(day.id).expect("a running tournament has an actor");
    actor.kill();
    let mut rebuilt = None;
    for _ in 0..100 {
        if let Some(new) = app.state.live.registry().actor_of(day.id).filter(|new| new.get_id() != actor.get_id()) {
            rebuilt = Some(new);
            break;
        }
        tokio::time::sleep(StdDuration::from_millis(50)).await;
    }
    assert!(rebuilt.is_some(), "the supervisor restarts the actor");
    let after = day.live(&app).await;
    let without_time = |state: &Value| {
        let mut state = state.clone();
        state["serverTime"] = Value::Null;
        state
    };
    assert_eq!(without_time(&after), without_time(&before), "the rebuilt actor shows the same LiveState");
    // It goes on from there.
    let resumed = day.press(&app, "resume", json!({})).await.assert_ok().clone();
    assert_eq!(version(&resumed), version(&before) + 1);
}

async fn a_watcher_receives_every_version_in_order(backend: Backend) {
    let Some(app) = spawn_app(backend).await else { return };
    let day = ready(&app, "+79990400151", 416, 6).await;
    let mut watcher = app.watcher(&day.players[0].access_token).await;
    let joined = watcher.join(day.id).await;
    let first = version(&joined["state"]);
    let started = day.start(&app).await;
    let ids = seated_ids(&started);
    // Presses from several clients at once; the watcher still sees one version after another.
    join_all(vec![
        day.press(&app, "level", json!({"direction": "next"})),
        day.press(&app, "pause", json!({})),
        day.press(&app, "resume", json!({})),
        day.press(&app, "level", json!({"direction": "next"})),
    ])
    .await;
    for id in &ids[..3] {
        day.eliminate(&app, *id).await.assert_ok();
    }
    day.press(&app, "eliminations/undo", json!({})).await.assert_ok();
    let last = version(&day.live(&app).await);
    let heard: Vec<i64> = watcher.states_until(last).await.iter().map(version).collect();
    assert_eq!(heard, (first + 1..=last).collect::<Vec<_>>(), "every version, in order, once");
    watcher.leave(day.id).await;
    tokio::time::sleep(StdDuration::from_millis(100)).await;
    day.press(&app, "level", json!({"direction": "next"})).await.assert_ok();
    assert!(watcher.hears_within(StdDuration::from_millis(500)).await.is_none(), "nothing after leave");
}

async fn the_live_state_is_public_with_an_etag_and_no_phone(backend: Backend) {
    let Some(app) = spawn_app(backend).await else { return };
    let day = ready(&app, "+79990400161", 417, 3).await;
    app.patch("/me", Some(&day.players[0].access_token), json!({"nickname": "shark"})).await.assert_ok();
    let started = day.start(&app).await;
    let text = started.to_string();
    assert!(!text.contains("+7999"), "no phone in a LiveState: {text}");
    let names: Vec<String> = started["tables"]
        .as_array()
        .expect("tables")
        .iter()
        .flat_map(|table| table["seats"].as_array().cloned().unwrap_or_default())
        .filter_map(|seat| seat["name"].as_str().map(str::to_owned))
        .collect();
    assert_eq!(names.len(), 3, "every seat has a name: {names:?}");
    assert!(names.iter().all(|name| !name.is_empty() && !name.contains('+')), "{names:?}");
    assert!(text.contains("\"shark\""), "a nickname wins over the name");
    for field in [
        "tournamentId",
        "version",
        "status",
        "serverTime",
        "clock",
        "remaining",
        "entrants",
        "chipsInPlay",
        "avgStack",
        "tables",
        "eliminations",
    ] {
        assert!(started.get(field).is_some(), "LiveState has {field}");
    }
    let response = app.client.get(app.url(&day.path("live"))).send().await.expect("a response");
    assert_eq!(response.status(), 200);
    let tag = response.headers().get("etag").and_then(|v| v.to_str().ok()).expect("an ETag").to_owned();
    let unchanged =
        app.client.get(app.url(&day.path("live"))).header("if-none-match", &tag).send().await.expect("a response");
    assert_eq!(unchanged.status(), 304);
    day.press(&app, "pause", json!({})).await.assert_ok();
    let changed =
        app.client.get(app.url(&day.path("live"))).header("if-none-match", &tag).send().await.expect("a response");
    assert_eq!(changed.status(), 200);
    app.get(&format!("/tournaments/{}/live", Uuid::now_v7()), None).await.assert_error(404, "NOT_FOUND");
}

async fn live_connections_need_a_valid_token(backend: Backend) {
    let Some(app) = spawn_app(backend).await else { return };
    let day = ready(&app, "+79990400171", 418, 2).await;
    for token in [None, Some("not-a-token")] {
        let mut refused = app.watch(token, TransportType::Websocket).await;
        let error = refused.connected().await.expect_err("refused");
        assert!(
            error.contains("\\\"message\\\":\\\"UNAUTHORIZED\\\"") || error.contains("\"message\":\"UNAUTHORIZED\""),
            "{error}"
        );
        refused.close().await;
    }
    // Polling works as well as websocket, and any signed-in user may watch.
    let mut polling = app.watch(Some(&day.players[1].access_token), TransportType::Polling).await;
    polling.connected().await.expect("accepted over polling");
    let unknown = polling.join(Uuid::now_v7()).await;
    assert_eq!(unknown["ok"], false);
    assert_eq!(unknown["error"]["code"], "NOT_FOUND");
    let bad = polling.join_with(json!({"tournamentId": "nope"})).await;
    assert_eq!(bad["ok"], false);
    assert_eq!(bad["error"]["code"], "VALIDATION_ERROR");
    // The payload is an object, as asyncapi.yaml says: its fields in an array are no request.
    let listed = polling.join_with(json!([day.id, false])).await;
    assert_eq!(listed["ok"], false, "{listed}");
    assert_eq!(listed["error"]["code"], "VALIDATION_ERROR");
    let joined = polling.join(day.id).await;
    assert_eq!(joined["ok"], true);
    day.start(&app).await;
    assert_eq!(polling.next_state().await["status"], "running");
    polling.close().await;
}

/// Sockets that emit `join` the moment they are connected, many at once, each get their ack:
/// the handlers are in place before the client hears it is connected.
async fn a_burst_of_connections_joining_at_once_gets_every_join_acked(backend: Backend) {
    let Some(app) = spawn_app(backend).await else { return };
    let day = ready(&app, "+79990400181", 419, 2).await;
    let (app, token, tournament) = (&app, &day.players[0].access_token, day.id);
    for name in ["websocket", "polling"] {
        let burst = (0..60).map(|_| async move {
            let transport = if name == "polling" { TransportType::Polling } else { TransportType::Websocket };
            let mut watcher = app.watch(Some(token), transport).await;
            watcher.connected().await.expect("accepted");
            let ack = watcher.join(tournament).await;
            watcher.close().await;
            ack
        });
        for ack in join_all(burst).await {
            assert_eq!(ack["ok"], true, "{name}: {ack}");
            assert_eq!(ack["state"]["tournamentId"], day.id.to_string());
        }
    }
}

/// `level` after the state, to plain and compact watchers, when the clock starts or moves to
/// another segment; a pause, a resume or an elimination sends none.
async fn every_watcher_hears_a_level_event_when_a_level_or_a_break_begins(backend: Backend) {
    let Some(app) = spawn_app(backend).await else { return };
    let day = ready(&app, "+79990400195", 425, 4).await;
    let token = &day.players[0].access_token;
    let mut full = app.watcher(token).await;
    let mut compact = app.watcher(token).await;
    assert_eq!(full.join(day.id).await["ok"], true);
    assert_eq!(compact.join_with(json!({"tournamentId": day.id, "compact": true})).await["ok"], true);

    let started = day.start(&app).await;
    for watcher in [&mut full, &mut compact] {
        let level = watcher.next_level().await;
        assert_eq!(level["tournamentId"], day.id.to_string());
        assert_eq!(
            (level["version"].clone(), level["currentLevelIdx"].clone()),
            (started["version"].clone(), json!(0))
        );
        assert_eq!(level["kind"], "level");
        assert_eq!(level["startedAt"], started["clock"]["levelStartedAt"]);
    }
    day.press(&app, "pause", json!({})).await.assert_ok();
    day.press(&app, "resume", json!({})).await.assert_ok();
    day.eliminate(&app, seated_ids(&started)[0]).await.assert_ok();
    let moved = day.press(&app, "level", json!({"direction": "next"})).await.assert_ok().clone();
    let kind = if moved["clock"]["levels"][1]["kind"] == "break" { "break" } else { "level" };
    for watcher in [&mut full, &mut compact] {
        let level = watcher.next_level().await;
        assert_eq!(level["version"], moved["version"], "nothing between the start and the press: {level}");
        assert_eq!(level["currentLevelIdx"], 1);
        assert_eq!(level["kind"], kind);
    }
}

/// `join` with `compact: true`: a press that moves only the clock comes as a `clock` event of
/// a few hundred bytes, an elimination as a `patch` (see `compact_watchers`); every watcher
/// that did not ask gets `state`.
async fn a_compact_watcher_gets_clock_presses_as_small_clock_events(backend: Backend) {
    let Some(app) = spawn_app(backend).await else { return };
    let day = ready(&app, "+79990400191", 420, 4).await;
    let token = &day.players[0].access_token;
    let mut full = app.watcher(token).await;
    let mut compact = app.watcher(token).await;
    assert_eq!(full.join(day.id).await["ok"], true);
    let joined = compact.join_with(json!({"tournamentId": day.id, "compact": true})).await;
    assert_eq!(joined["ok"], true);
    assert!(joined["state"]["tables"].is_array(), "the ack is the full state");

    let started = day.start(&app).await;
    for watcher in [&mut full, &mut compact] {
        let (event, state) = watcher.next_update().await;
        assert_eq!((event, version(&state)), ("state", version(&started)), "a start is not a clock press");
    }
    let paused = day.press(&app, "pause", json!({})).await.assert_ok().clone();
    let (event, state) = full.next_update().await;
    assert_eq!((event, version(&state)), ("state", version(&paused)), "no change for who did not ask");
    let (event, clock) = compact.next_update().await;
    assert_eq!(event, "clock");
    assert_eq!(clock["version"], paused["version"]);
    assert_eq!(clock["tournamentId"], day.id.to_string());
    assert_eq!(clock["status"], "running");
    assert_eq!(clock["clock"]["pausedAt"], paused["clock"]["pausedAt"]);
    assert_eq!(clock["clock"]["currentLevelIdx"], 0);
    assert!(clock["serverTime"].is_string());
    assert!(clock.get("tables").is_none() && clock["clock"].get("levels").is_none(), "{clock}");
    let clock_bytes = clock.to_string().len();
    let state_bytes = state.to_string().len();
    assert!(clock_bytes < 300 && clock_bytes * 5 < state_bytes, "{clock_bytes} against {state_bytes} bytes");

    day.press(&app, "resume", json!({})).await.assert_ok();
    let moved = day.press(&app, "level", json!({"direction": "next"})).await.assert_ok().clone();
    let (first, second) = (compact.next_update().await, compact.next_update().await);
    assert_eq!((first.0, second.0), ("clock", "clock"));
    assert_eq!(version(&second.1), version(&moved), "versions stay one sequence");
    assert_eq!(second.1["clock"]["currentLevelIdx"], 1);

    let out = seated_ids(&started)[0];
    let eliminated = day.eliminate(&app, out).await.assert_ok()["state"].clone();
    let (event, patch) = compact.next_update().await;
    assert_eq!((event, version(&patch)), ("patch", version(&eliminated)), "an elimination is a patch");
    for _ in 0..3 {
        assert_eq!(full.next_update().await.0, "state");
    }
}

async fn only_the_clubs_owner_or_td_run_the_game_day(backend: Backend) {
    let Some(app) = spawn_app(backend).await else { return };
    let day = ready(&app, "+79990400181", 419, 3).await;
    let td = app.add_td(&day.club, "+79994190099").await;
    let other = app.create_club("Kings", "+79994190098").await;
    let player = &day.players[0];
    for token in [&player.access_token, &other.owner.access_token] {
        for action in ["start", "pause", "resume", "eliminations/undo", "confirm-results"] {
            app.post(&day.path(action), Some(token), json!({})).await.assert_error(403, "FORBIDDEN");
        }
        app.post("/eliminations", Some(token), json!({"tournamentId": day.id, "registrationId": day.registrations[0]}))
            .await
            .assert_error(403, "FORBIDDEN");
    }
    app.post(&day.path("start"), None, json!({})).await.assert_error(401, "UNAUTHORIZED");
    let started = app.post(&day.path("start"), Some(&td.access_token), json!({})).await;
    assert_eq!(started.assert_ok()["status"], "running", "a td runs the day");
    app.get(&day.path("results"), None).await.assert_error(401, "UNAUTHORIZED");
}

async fn cancelling_a_running_tournament_reaches_the_watchers(backend: Backend) {
    let Some(app) = spawn_app(backend).await else { return };
    let day = ready(&app, "+79990400191", 420, 3).await;
    let started = day.start(&app).await;
    let mut watcher = app.watcher(&day.players[0].access_token).await;
    assert_eq!(watcher.join(day.id).await["ok"], true);
    staff(&app, &day.club, &day.path("cancel"), json!({})).await.assert_ok();
    assert_eq!(day.live(&app).await["status"], "cancelled", "a read after the answer shows the cancel");
    let heard = watcher.next_state().await;
    assert_eq!(heard["status"], "cancelled");
    assert!(version(&heard) > version(&started));
    day.eliminate(&app, seated_ids(&started)[0]).await.assert_error(409, "TOURNAMENT_NOT_RUNNING");
    assert_eq!(app.count("SELECT COUNT(*) FROM strikes").await, 0, "a cancel issues no strikes");
}

/// Plays `day` to the end in seating order and confirms; returns the registration that won.
async fn play_out(app: &TestApp, day: &Ready) -> Uuid {
    let started = day.start(app).await;
    let mut ids = seated_ids(&started);
    let winner = ids.pop().expect("a winner");
    for id in ids {
        day.eliminate(app, id).await.assert_ok();
    }
    day.press(app, "confirm-results", json!({})).await.assert_ok();
    winner
}

async fn a_recount_rebuilds_results_keeping_their_time(backend: Backend) {
    let Some(app) = spawn_app(backend).await else { return };
    let day = ready(&app, "+79990400201", 421, 3).await;
    let admin = app.platform_admin().await;
    app.post(&format!("/admin/tournaments/{}/recount", day.id), Some(&admin.access_token), json!({}))
        .await
        .assert_error(409, "TOURNAMENT_NOT_FINISHED");
    // A guest plays too.
    staff(&app, &day.club, &day.path("walk-in"), json!({"phone": "+79994210099", "name": "Guest Gleb"}))
        .await
        .assert_ok();
    play_out(&app, &day).await;
    let before = app.get(&day.path("results"), Some(&admin.access_token)).await.assert_ok()["items"].clone();
    assert_eq!(before.as_array().map(Vec::len), Some(4));
    let guest_row =
        before.as_array().expect("rows").iter().find(|row| row["name"] == "Guest Gleb").expect("the guest").clone();
    assert_eq!(guest_row["userId"], Value::Null);
    assert_eq!(guest_row["seasonPoints"], 0, "a guest gets a place and no rating");
    let created: Vec<String> =
        before.as_array().expect("rows").iter().map(|row| row["createdAt"].to_string()).collect();
    // Points change with the configuration; a recount applies today's settings.
    app.exec("UPDATE rating_config SET points_base = 20").await;
    app.post(&format!("/admin/tournaments/{}/recount", day.id), Some(&day.club.owner.access_token), json!({}))
        .await
        .assert_error(403, "FORBIDDEN");
    let recounted =
        app.post(&format!("/admin/tournaments/{}/recount", day.id), Some(&admin.access_token), json!({})).await;
    let after = recounted.assert_ok()["items"].clone();
    let rows = after.as_array().expect("rows");
    assert_eq!(rows.len(), 4);
    assert_eq!(rows.iter().map(|row| row["createdAt"].to_string()).collect::<Vec<_>>(), created, "createdAt is kept");
    for row in rows {
        let place = row["place"].as_i64().expect("a place");
        let Some(user) = row["userId"].as_str() else {
            assert_eq!(row["seasonPoints"], 0, "still a guest");
            continue;
        };
        // round(20 * sqrt(4) * (4 - place + 1) / 4)
        let points = 10 * (5 - place);
        assert_eq!(row["seasonPoints"], points, "{row}");
        let user = id_of(&json!(user));
        let xp = app
            .count(&format!(
                "SELECT COUNT(*) FROM player_profiles WHERE xp = {points} AND user_id = {}",
                app.uuid_literal(user)
            ))
            .await;
        assert_eq!(xp, 1, "the profile is rebuilt from the new results");
    }
    assert_eq!(app.count("SELECT COUNT(*) FROM audit_log WHERE action = 'tournament.recount'").await, 1);
    // The guest signs up: the row is theirs from then on, and a recount keeps counting it.
    let gleb = app.sign_in("+79994210099").await;
    app.post(&format!("/admin/tournaments/{}/recount", day.id), Some(&admin.access_token), json!({})).await.assert_ok();
    let mine = app.get(&format!("/players/{}/results", gleb.user_id), Some(&gleb.access_token)).await;
    let rows = mine.assert_ok()["items"].as_array().expect("rows").clone();
    assert_eq!(rows.len(), 1, "the claimed guest's result counts for the account");
    let place = rows[0]["place"].as_i64().expect("a place");
    assert_eq!(rows[0]["seasonPoints"], 10 * (5 - place));
    assert_eq!(rows[0]["createdAt"], guest_row["createdAt"], "still the confirmation time");
}

async fn a_guest_who_signs_up_takes_their_results(backend: Backend) {
    let Some(app) = spawn_app(backend).await else { return };
    let day = ready(&app, "+79990400211", 422, 1).await;
    let walk_in =
        staff(&app, &day.club, &day.path("walk-in"), json!({"phone": "+79994220099", "name": "Guest Galya"})).await;
    let guest_registration = id_of(&walk_in.assert_ok()["id"]);
    let started = day.start(&app).await;
    let other = seated_ids(&started).into_iter().find(|id| *id != guest_registration).expect("the other player");
    day.eliminate(&app, other).await.assert_ok();
    day.press(&app, "confirm-results", json!({})).await.assert_ok();
    assert_eq!(app.count("SELECT COUNT(*) FROM results WHERE user_id IS NULL").await, 1);
    let galya = app.sign_in("+79994220099").await;
    let mine = app.get(&format!("/players/{}/results", galya.user_id), Some(&galya.access_token)).await;
    let rows = mine.assert_ok()["items"].as_array().expect("rows").clone();
    assert_eq!(rows.len(), 1, "the guest's result moved to the new account");
    assert_eq!(rows[0]["place"], 1);
    assert_eq!(rows[0]["seasonPoints"], 14, "round(10 * sqrt(2) * 2 / 2)");
    let profile = app.get("/auth/me", Some(&galya.access_token)).await;
    let profile = &profile.assert_ok()["profile"];
    assert_eq!(profile["wins"], 1);
    assert_eq!(profile["xp"], 14);
    assert_eq!(profile["skill"], 5.5);
}

async fn results_are_for_signed_in_users_newest_first_for_a_player(backend: Backend) {
    let Some(app) = spawn_app(backend).await else { return };
    let first = ready(&app, "+79990400221", 423, 2).await;
    play_out(&app, &first).await;
    let second = app.create_tournament(&first.club, 10, Duration::days(2)).await;
    let second_day =
        Ready { club: first.club.clone(), id: second, players: first.players.clone(), registrations: Vec::new() };
    for player in &first.players {
        let registration = app.post(&second_day.path("register"), Some(&player.access_token), json!({})).await;
        staff(
            &app,
            &first.club,
            &second_day.path("check-in"),
            json!({"registrationId": id_of(&registration.assert_ok()["id"])}),
        )
        .await
        .assert_ok();
    }
    play_out(&app, &second_day).await;
    let player = &first.players[0];
    let mine = app.get(&format!("/players/{}/results", player.user_id), Some(&first.players[1].access_token)).await;
    let rows = mine.assert_ok()["items"].as_array().expect("rows").clone();
    assert_eq!(rows.len(), 2);
    assert_eq!(rows[0]["tournamentId"], json!(second), "newest first");
    assert_eq!(rows[0]["skillBefore"], rows[1]["skillAfter"], "the second result starts where the first ended");
    app.get(&format!("/players/{}/results", Uuid::now_v7()), Some(&player.access_token))
        .await
        .assert_error(404, "NOT_FOUND");
    app.get(&format!("/players/{}/results", player.user_id), None).await.assert_error(401, "UNAUTHORIZED");
}

/// Two nodes behind one load balancer share the database and Redis: a press on one node
/// reaches a watcher connected to the other.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_redis_a_change_on_one_node_reaches_watchers_on_another() {
    let Some(redis_url) = test_redis_url().await else { return };
    let Some(first) = spawn_app_with(Backend::Postgres, &[("REDIS_URL", redis_url)]).await else { return };
    let second = first.second_node(&[("REDIS_URL", redis_url)]).await;
    let day = ready(&first, "+79990400231", 424, 2).await;
    let mut watcher = second.watcher(&day.players[0].access_token).await;
    let joined = watcher.join(day.id).await;
    assert_eq!(joined["ok"], true, "{joined}");
    let started = day.start(&first).await;
    let heard = watcher.next_state().await;
    assert_eq!(heard["version"], started["version"], "the start on the first node reached the second");
    assert_eq!(heard["status"], "running");
    // The second node's own reads catch up too (its actor hears of the change on the bus).
    let mut caught_up = Value::Null;
    for _ in 0..100 {
        caught_up = second.get(&day.path("live"), None).await.assert_ok().clone();
        if caught_up["version"] == started["version"] {
            break;
        }
        tokio::time::sleep(StdDuration::from_millis(20)).await;
    }
    assert_eq!(caught_up["status"], "running", "{caught_up}");
    assert_eq!(caught_up["version"], started["version"]);
    // A press on the second node works from the state the first one made.
    let paused = day.press(&second, "pause", json!({})).await.assert_ok().clone();
    assert_eq!(version(&paused), version(&started) + 1);
    assert_eq!(watcher.next_state().await["version"], paused["version"]);
    watcher.close().await;
}

/// The database's guards hold without the actor's ordering: two nodes, each with its own
/// actor for the tournament, pressed at once, still apply each change once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_nodes_pressing_at_once_apply_each_change_once() {
    let Some(first) = spawn_app(Backend::Postgres).await else { return };
    let second = first.second_node(&[]).await;
    let day = ready(&first, "+79990400241", 425, 3).await;
    let started = day.start(&first).await;
    let ids = seated_ids(&started);
    // Both nodes have an actor holding the running game.
    second.get(&day.path("live"), None).await.assert_ok();
    let replies = join_all((0..6).map(|n| day.eliminate(if n % 2 == 0 { &first } else { &second }, ids[0]))).await;
    assert_eq!(replies.iter().filter(|reply| reply.status.is_success()).count(), 1, "{replies:?}");
    for reply in replies.iter().filter(|reply| !reply.status.is_success()) {
        reply.assert_error(409, "ALREADY_ELIMINATED");
    }
    day.eliminate(&second, ids[1]).await.assert_ok();
    let replies =
        join_all((0..4).map(|n| day.press(if n % 2 == 0 { &first } else { &second }, "confirm-results", json!({}))))
            .await;
    assert_eq!(replies.iter().filter(|reply| reply.status.is_success()).count(), 1, "{replies:?}");
    for reply in replies.iter().filter(|reply| !reply.status.is_success()) {
        reply.assert_error(409, "RESULTS_ALREADY_CONFIRMED");
    }
    assert_eq!(first.count("SELECT COUNT(*) FROM results").await, 3);
    assert_eq!(first.count("SELECT SUM(wins) FROM player_profiles").await, 1);
    assert_eq!(first.count("SELECT COUNT(*) FROM audit_log WHERE action = 'tournament.eliminate'").await, 2);
}

async fn a_new_structure_before_start_is_a_new_live_version(backend: Backend) {
    let Some(app) = spawn_app(backend).await else { return };
    let day = ready(&app, "+79990400251", 426, 2).await;
    let before = day.live(&app).await;
    assert_eq!(before["clock"]["levels"].as_array().map(Vec::len), Some(13), "the template's structure before start");
    let template = app
        .post(
            &format!("/organizers/{}/blind-templates", day.club.id),
            Some(&day.club.owner.access_token),
            json!({"name": "Turbo", "startingStack": 10000, "levels": [
                {"kind": "level", "durationMin": 10, "smallBlind": 100, "bigBlind": 200},
                {"kind": "level", "durationMin": 10, "smallBlind": 200, "bigBlind": 400},
            ]}),
        )
        .await;
    let template_id = id_of(&template.assert_ok()["id"]);
    app.patch(
        &format!("/tournaments/{}", day.id),
        Some(&day.club.owner.access_token),
        json!({"blindTemplateId": template_id}),
    )
    .await
    .assert_ok();
    let after = day.live(&app).await;
    assert_eq!(version(&after), version(&before) + 1, "the ETag and watchers see the change");
    assert_eq!(after["clock"]["levels"].as_array().map(Vec::len), Some(2));
    let started = day.start(&app).await;
    assert_eq!(started["chipsInPlay"], 20_000, "the new template's stack");
}
