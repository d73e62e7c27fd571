//! Compact watchers (`join` with `compact: true`) through the running server: every change
//! comes small, `clock` for the clock alone and `patch` for anything else, and a client that
//! applies them to the state it was acked holds exactly the state a plain watcher receives,
//! version after version.

use std::time::Instant;

use chrono::Duration;
use futures::StreamExt;
use futures::stream;
use serde_json::{Value, json};
use uuid::Uuid;

use crate::helpers::{Backend, Club, TestApp, on_both_databases, spawn_app, spawn_app_with, test_redis_url};
use crate::live::{seated_ids, staff, version};
use crate::watchers::Watcher;

on_both_databases!(
    a_compact_watcher_hears_an_elimination_in_a_big_tournament_as_a_patch_under_a_kilobyte,
    a_compact_watcher_rebuilds_every_state_of_a_game_day_from_clock_and_patch_events,
    a_watcher_joining_again_with_the_version_it_holds_is_acked_the_patch_to_the_current_state,
    a_join_ack_tells_the_time_of_the_answer_not_of_the_state,
);

/// Walk-ins sent at once (each is a transaction of its own).
const WALK_INS_AT_ONCE: usize = 8;

/// A tournament of `players` walk-ins, started, with the first `out` of them (in seating
/// order) eliminated; its LiveState as it then is.
async fn walked_in(app: &TestApp, owner_phone: &str, players: usize, out: usize) -> (Club, Uuid, Value) {
    let club = app.create_club("Aces", owner_phone).await;
    let id = app.create_tournament(&club, players as i32, Duration::days(1)).await;
    let path = format!("/tournaments/{id}/walk-in");
    let walk_ins = stream::iter(0..players)
        .map(|n| {
            let body = json!({"phone": format!("+7997{n:07}"), "name": format!("Игрок Номер {n:04} из турнира")});
            staff(app, &club, &path, body)
        })
        .buffer_unordered(WALK_INS_AT_ONCE)
        .collect::<Vec<_>>()
        .await;
    for reply in walk_ins {
        reply.assert_ok();
    }
    let started = staff(app, &club, &format!("/tournaments/{id}/start"), json!({})).await.assert_ok().clone();
    let mut state = started.clone();
    for registration_id in seated_ids(&started).into_iter().take(out) {
        let body = json!({"tournamentId": id, "registrationId": registration_id});
        state = staff(app, &club, "/eliminations", body).await.assert_ok()["state"].clone();
    }
    (club, id, state)
}

/// A plain and a compact watcher of the tournament, and the state the compact one was acked.
async fn watchers_of(app: &TestApp, club: &Club, id: Uuid) -> (Watcher, Watcher, Value) {
    let plain = app.watcher(&club.owner.access_token).await;
    assert_eq!(plain.join(id).await["ok"], true);
    let compact = app.watcher(&club.owner.access_token).await;
    let joined = compact.join_with(json!({"tournamentId": id, "compact": true})).await;
    assert_eq!(joined["ok"], true, "{joined}");
    (plain, compact, joined["state"].clone())
}

/// The serialised size of an event's payload, as it goes in the Socket.IO frame.
fn bytes(payload: &Value) -> usize {
    payload.to_string().len()
}

/// One elimination in a LiveState of 470 players with 100 out (about 65 KB) reaches a compact
/// watcher as a `patch` of under a kilobyte, which rebuilds exactly the state a plain watcher
/// gets.
async fn a_compact_watcher_hears_an_elimination_in_a_big_tournament_as_a_patch_under_a_kilobyte(backend: Backend) {
    let Some(app) = spawn_app(backend).await else { return };
    let preparing = Instant::now();
    let (club, id, before) = walked_in(&app, "+79990800001", 470, 100).await;
    eprintln!("470 walk-ins, a start and 100 eliminations took {:?}", preparing.elapsed());
    let (mut plain, mut compact, mut held) = watchers_of(&app, &club, id).await;
    assert_eq!(version(&held), version(&before));

    let out = seated_ids(&before)[200];
    let body = json!({"tournamentId": id, "registrationId": out});
    let eliminated = staff(&app, &club, "/eliminations", body).await.assert_ok()["state"].clone();
    // The last set-up change may still be in flight to a socket that joined after it: skipped.
    let state = plain.states_until(version(&eliminated)).await.pop().expect("the elimination's state");
    assert_eq!(version(&state), version(&eliminated));
    let acked = held.clone();
    let (name, patch) = compact.follow(&mut held).await;
    assert_eq!(name, "patch", "{patch}");
    assert_eq!(held, state, "the patch applied to the acked state is the state of the next version");
    let (patch_bytes, state_bytes) = (bytes(&patch), bytes(&state));
    let by_index = bytes(&serde_json::to_value(json_patch::diff(&acked, &state)).expect("json"));
    eprintln!(
        "one elimination: a patch of {patch_bytes} bytes ({} of ops; json_patch::diff's ops {by_index}) for a \
         state of {state_bytes}",
        bytes(&patch["ops"])
    );
    assert!(state_bytes > 60_000, "a LiveState of the usual size: {state_bytes} bytes");
    assert!(patch_bytes <= 1024, "{patch_bytes} bytes: {patch}");
}

/// A game day's changes one after another: each reaches the compact watcher as `clock` (the
/// clock alone) or `patch`, never as the state after the first, and the state it rebuilds is
/// at every version exactly what the plain watcher hears.
async fn a_compact_watcher_rebuilds_every_state_of_a_game_day_from_clock_and_patch_events(backend: Backend) {
    let Some(app) = spawn_app(backend).await else { return };
    let (club, id, started) = walked_in(&app, "+79990800011", 20, 0).await;
    let (mut plain, mut compact, mut held) = watchers_of(&app, &club, id).await;
    assert_eq!(version(&held), version(&started));
    let press = |action: &str, body: Value| {
        let path = format!("/tournaments/{id}/{action}");
        let club = &club;
        let app = &app;
        async move { staff(app, club, &path, body).await.assert_ok().clone() }
    };
    let eliminate = |registration_id: Uuid| {
        let (app, club) = (&app, &club);
        async move {
            let body = json!({"tournamentId": id, "registrationId": registration_id});
            staff(app, club, "/eliminations", body).await.assert_ok()["state"].clone()
        }
    };
    let seats = seated_ids(&started);
    let third: Vec<Uuid> = started["tables"][2]["seats"]
        .as_array()
        .expect("a third table")
        .iter()
        .map(|seat| crate::staffing::id_of(&seat["registrationId"]))
        .collect();

    let mut changes: Vec<(&str, Value)> = Vec::new();
    changes.push(("elimination", eliminate(seats[0]).await));
    changes.push(("elimination", eliminate(seats[1]).await));
    changes.push(("undo", press("eliminations/undo", json!({})).await));
    let free_seat = json!({"registrationId": seats[2], "tableNo": 2, "seatNo": 9});
    changes.push(("reseat", press("reseat", free_seat).await));
    changes.push(("pause", press("pause", json!({})).await));
    changes.push(("resume", press("resume", json!({})).await));
    changes.push(("level", press("level", json!({"direction": "next"})).await));
    // The third table down to two players, then broken into the other two.
    for fallen in &third[2..] {
        changes.push(("elimination", eliminate(*fallen).await));
    }
    let proposal = app.get(&format!("/tournaments/{id}/table-break"), Some(&club.owner.access_token)).await;
    let proposal = proposal.assert_ok().clone();
    assert_eq!(proposal["kind"], "break", "{proposal}");
    let moves: Vec<Value> = proposal["moves"]
        .as_array()
        .expect("moves")
        .iter()
        .map(|m| json!({"registrationId": m["registrationId"], "toTable": m["toTable"], "toSeat": m["toSeat"]}))
        .collect();
    changes.push(("table break", press("reseat-batch", json!({"moves": moves})).await));
    let latest = &changes.last().expect("changes were made").1["eliminations"];
    let reordered = json!({"registrationIds": [latest[0]["registrationId"], latest[1]["registrationId"]]});
    changes.push(("reorder", press("eliminations/reorder", reordered).await));
    changes.push(("level back", press("level", json!({"direction": "prev"})).await));

    for (what, answered) in &changes {
        let state = plain.next_state().await;
        assert_eq!(version(&state), version(answered), "{what}: the plain watcher hears every version in order");
        let (name, update) = compact.follow(&mut held).await;
        assert_eq!(held, state, "{what}: the compact watcher rebuilt the state of version {}", version(&state));
        let expected = if matches!(*what, "pause" | "resume" | "level" | "level back") { "clock" } else { "patch" };
        assert_eq!(name, expected, "{what}: {update}");
        assert!(bytes(&update) * 4 < bytes(&state), "{what}: {} bytes against {}", bytes(&update), bytes(&state));
    }
}

/// With several nodes, a compact watcher on a node that does not run the tournament rebuilds
/// the same states from the `patch` events the owner sends through Redis.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_compact_watcher_on_another_node_rebuilds_the_states_from_its_patches() {
    let Some(redis_url) = test_redis_url().await else { return };
    let Some(first) = spawn_app_with(Backend::Postgres, &[("REDIS_URL", redis_url)]).await else { return };
    let second = first.second_node(&[("REDIS_URL", redis_url)]).await;
    let (club, id, started) = walked_in(&first, "+79990800021", 12, 0).await;
    let (mut plain, mut compact, mut held) = watchers_of(&second, &club, id).await;
    // The follower may not have read the start yet: a client whose ack is behind joins again.
    while version(&held) < version(&started) {
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        held = compact.join_with(json!({"tournamentId": id, "compact": true})).await["state"].clone();
    }
    let seats = seated_ids(&started);
    for (n, registration_id) in seats.iter().take(3).enumerate() {
        let body = json!({"tournamentId": id, "registrationId": registration_id});
        let answered = staff(&first, &club, "/eliminations", body).await.assert_ok()["state"].clone();
        let state = loop {
            let state = plain.next_state().await;
            if version(&state) >= version(&answered) {
                break state;
            }
        };
        let (name, _) = loop {
            let seen = compact.follow(&mut held).await;
            if version(&held) >= version(&answered) {
                break seen;
            }
        };
        assert_eq!(name, "patch", "elimination {n}");
        assert_eq!(held, state, "elimination {n}");
    }
}

/// A watcher joining again after a reconnect says the version it holds: the ack carries the
/// `patch` from it to the current state (no operations when it is current), which rebuilds
/// exactly the state a fresh join is acked. A version the node did not keep, or none, gets the
/// state whole.
async fn a_watcher_joining_again_with_the_version_it_holds_is_acked_the_patch_to_the_current_state(backend: Backend) {
    let Some(app) = spawn_app(backend).await else { return };
    let (club, id, started) = walked_in(&app, "+79990800031", 20, 0).await;
    let (_plain, _compact, held) = watchers_of(&app, &club, id).await;
    assert_eq!(version(&held), version(&started));
    let seats = seated_ids(&started);
    let body = json!({"tournamentId": id, "registrationId": seats[0]});
    staff(&app, &club, "/eliminations", body).await.assert_ok();
    let paused = staff(&app, &club, &format!("/tournaments/{id}/pause"), json!({})).await.assert_ok().clone();
    let fresh = app.watcher(&club.owner.access_token).await.join(id).await["state"].clone();
    assert_eq!(version(&fresh), version(&paused));

    let again = app.watcher(&club.owner.access_token).await;
    let rejoin = |held: i64| json!({"tournamentId": id, "compact": true, "version": held});
    let acked = again.join_with(rejoin(version(&held))).await;
    assert_eq!(acked["ok"], true, "{acked}");
    assert!(acked.get("state").is_none(), "a patch instead of the state: {acked}");
    let patch = &acked["patch"];
    assert_eq!(patch["tournamentId"], json!(id));
    assert_eq!(patch["fromVersion"].as_i64(), Some(version(&held)));
    assert_eq!(patch["version"].as_i64(), Some(version(&paused)));
    assert!(bytes(patch) * 4 < bytes(&fresh), "{} bytes against {}", bytes(patch), bytes(&fresh));
    let ops: json_patch::Patch = serde_json::from_value(patch["ops"].clone()).expect("JSON Patch operations");
    let mut rebuilt = held.clone();
    json_patch::patch(&mut rebuilt, &ops).unwrap_or_else(|err| panic!("{err}: {patch}"));
    assert_eq!(untimed(&rebuilt), untimed(&fresh), "the patch turns the state held into the current one");

    let current = again.join_with(rejoin(version(&paused))).await;
    assert_eq!(current["patch"]["fromVersion"].as_i64(), Some(version(&paused)), "{current}");
    assert_eq!(current["patch"]["version"].as_i64(), Some(version(&paused)));
    let only_the_time = json!([{"op": "replace", "path": "/serverTime", "value": current["patch"]["ops"][0]["value"]}]);
    assert_eq!(current["patch"]["ops"], only_the_time, "nothing but the time to change for a client that is current");

    for unknown in [version(&held) - 1, version(&paused) + 5] {
        let whole = again.join_with(rejoin(unknown)).await;
        assert_eq!(untimed(&whole["state"]), untimed(&fresh), "version {unknown} was never kept here: the state whole");
    }
    let plain = again.join_with(json!({"tournamentId": id})).await;
    assert_eq!(untimed(&plain["state"]), untimed(&fresh), "without a version the state whole, as before");
}

/// A LiveState without its `serverTime`, which each answer sets to its own moment.
fn untimed(state: &Value) -> Value {
    let mut state = state.clone();
    if let Some(members) = state.as_object_mut() {
        members.remove("serverTime");
    }
    state
}

/// The `serverTime` of a LiveState.
fn server_time(state: &Value) -> chrono::DateTime<chrono::Utc> {
    state["serverTime"].as_str().and_then(|time| time.parse().ok()).unwrap_or_else(|| panic!("a serverTime: {state}"))
}

/// An app corrects its clock by a join ack's `serverTime` to stamp the commands it makes
/// offline, so the ack tells the moment it was answered, whether it carries the state or the
/// patch to it, however long ago the state was made.
async fn a_join_ack_tells_the_time_of_the_answer_not_of_the_state(backend: Backend) {
    let Some(app) = spawn_app(backend).await else { return };
    let (club, id, _) = walked_in(&app, "+79990800041", 6, 0).await;
    let paused = staff(&app, &club, &format!("/tournaments/{id}/pause"), json!({})).await.assert_ok().clone();
    let watcher = app.watcher(&club.owner.access_token).await;
    let held = watcher.join(id).await["state"].clone();
    assert_eq!(version(&held), version(&paused));
    // Nothing changes meanwhile: the state stays the one made at the pause.
    tokio::time::sleep(std::time::Duration::from_millis(1_500)).await;

    let sent = chrono::Utc::now();
    let whole = watcher.join(id).await;
    let answered = chrono::Utc::now();
    let state = &whole["state"];
    assert_eq!(version(state), version(&paused), "{whole}");
    let told = server_time(state);
    assert!(sent <= told && told <= answered, "the state's serverTime {told} is not between {sent} and {answered}");
    assert!(server_time(&paused) < sent, "the state was made before");

    let sent = chrono::Utc::now();
    let acked = watcher.join_with(json!({"tournamentId": id, "compact": true, "version": version(&held)})).await;
    let answered = chrono::Utc::now();
    let patch = &acked["patch"];
    assert_eq!(patch["version"].as_i64(), Some(version(&paused)), "{acked}");
    let ops: json_patch::Patch = serde_json::from_value(patch["ops"].clone()).expect("JSON Patch operations");
    let mut rebuilt = held.clone();
    json_patch::patch(&mut rebuilt, &ops).unwrap_or_else(|err| panic!("{err}: {patch}"));
    let told = server_time(&rebuilt);
    assert!(sent <= told && told <= answered, "the patched serverTime {told} is not between {sent} and {answered}");
    assert_eq!(untimed(&rebuilt), untimed(state));
}
