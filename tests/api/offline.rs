//! Commands made offline: a live command with `occurredAt` is applied as of that moment, and
//! `POST /tournaments/{id}/replay` applies an organizer app's queue in one turn, each command
//! on its own and idempotent by its key, with one broadcast.
//!
//! The game day is moved into the past in the database first (started an hour ago), as if the
//! venue had been playing offline since: the commands then state moments of that hour.

use chrono::{DateTime, Duration, SubsecRound, Utc};
use sea_orm::{ColumnTrait, ConnectionTrait, EntityTrait, QueryFilter, Statement};
use serde_json::{Value, json};
use uuid::Uuid;

use crate::helpers::{Backend, TestApp, on_both_databases, spawn_app, spawn_app_with, test_redis_url};
use crate::live::{Ready, ready, seats, staff, version};

on_both_databases!(
    a_pause_made_offline_lands_as_if_it_had_arrived_at_once,
    a_replayed_queue_ends_as_the_same_commands_sent_live_at_their_times,
    each_queued_command_is_applied_or_refused_on_its_own,
    bad_times_and_conflicts_are_refused_and_change_nothing,
    a_queue_that_moves_players_leaves_the_seat_rows_as_its_state_shows,
);

/// Moves the running tournament's clock and its latest command `minutes` into the past (as
/// if started then) behind the actor's back; the version moves on, so the actor reads it again
/// at its next command. Returns the new start of the clock.
async fn started_ago(app: &TestApp, tournament_id: Uuid, minutes: i64) -> DateTime<Utc> {
    let started = (Utc::now() - Duration::minutes(minutes)).trunc_subsecs(3);
    started_at(app, tournament_id, started).await;
    started
}

/// [`started_ago`] at a given moment.
async fn started_at(app: &TestApp, tournament_id: Uuid, started: DateTime<Utc>) {
    app.db()
        .execute_raw(Statement::from_sql_and_values(
            app.db().get_database_backend(),
            "UPDATE tournaments SET level_started_at = $1, last_command_at = $1, live_version = live_version + 1 \
             WHERE id = $2",
            [started.into(), tournament_id.into()],
        ))
        .await
        .expect("the game day moved into the past");
}

/// Reads `day`'s live state until two reads 200 ms apart show one version: its actor has
/// caught up with a change made behind its back (and its clock with it).
async fn settled(app: &TestApp, day: &Ready) {
    let mut last = version(&day.live(app).await);
    for _ in 0..50 {
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
        let now = version(&day.live(app).await);
        if now == last {
            return;
        }
        last = now;
    }
    panic!("the live state of {} keeps moving", day.id);
}

/// The time `minutes` after `from`, as the contract writes it.
fn at(from: DateTime<Utc>, minutes: i64) -> String {
    (from + Duration::minutes(minutes)).to_rfc3339()
}

fn time(value: &Value) -> DateTime<Utc> {
    value
        .as_str()
        .and_then(|text| DateTime::parse_from_rfc3339(text).ok())
        .map(|t| t.with_timezone(&Utc))
        .expect("a time")
}

/// The clock a structure shows at `moment` when it started at `start` and ran unpaused: the
/// segment running then and when it began (a boundary belongs to the segment it begins).
fn running_at(levels: &Value, start: DateTime<Utc>, moment: DateTime<Utc>) -> (usize, DateTime<Utc>) {
    let levels = levels.as_array().expect("levels");
    let (mut idx, mut began) = (0, start);
    while idx + 1 < levels.len() {
        let ends = began + Duration::minutes(levels[idx]["durationMin"].as_i64().expect("a duration"));
        if ends > moment {
            break;
        }
        idx += 1;
        began = ends;
    }
    (idx, began)
}

async fn a_pause_made_offline_lands_as_if_it_had_arrived_at_once(backend: Backend) {
    let Some(app) = spawn_app(backend).await else { return };
    let day = ready(&app, "+79990640001", 640, 3).await;
    let levels = day.start(&app).await["clock"]["levels"].clone();
    let start = started_ago(&app, day.id, 40).await;
    // Pressed 28 minutes in, sent 12 minutes later: the level that began meanwhile (if any)
    // is taken back, and the clock stands where it stood at the press.
    let pressed = start + Duration::minutes(28);
    let paused = staff(&app, &day.club, &day.path("pause"), json!({"occurredAt": pressed.to_rfc3339()})).await;
    let state = paused.assert_ok();
    let (idx, began) = running_at(&levels, start, pressed);
    assert_eq!(state["clock"]["currentLevelIdx"], idx, "{state}");
    assert_eq!(time(&state["clock"]["levelStartedAt"]), began);
    assert_eq!(time(&state["clock"]["pausedAt"]), pressed);
    // Time left: the segment's length less what had run at the press, to the second.
    let length = Duration::minutes(levels[idx]["durationMin"].as_i64().expect("a duration"));
    assert_eq!(began + length - time(&state["clock"]["pausedAt"]), began + length - pressed);
    // Read back, and once more after the actor is rebuilt from the database.
    let read = day.live(&app).await;
    assert_eq!(read["clock"], state["clock"]);
    // The audit keeps both moments: when it happened and (its own time) when it arrived.
    let stated = app
        .scalar(&format!(
            "SELECT CAST(details AS TEXT) FROM audit_log WHERE action = 'tournament.pause' AND target_id = '{}'",
            day.id
        ))
        .await
        .expect("an audit record");
    assert!(stated.contains("occurredAt"), "{stated}");
}

/// The commands of the queue, for one tournament: `(command, body, minutes after start)`.
fn queue_of(day: &Ready) -> Vec<(&'static str, Value, i64)> {
    let r = |n: usize| day.registrations[n];
    let mut queue = vec![
        ("pause", json!({}), 2),
        ("resume", json!({}), 4),
        ("eliminate", json!({"registrationId": r(0)}), 6),
        ("eliminate", json!({"registrationId": r(1)}), 6),
        ("level", json!({"direction": "next"}), 9),
        ("undo", json!({}), 10),
        ("level", json!({"direction": "prev"}), 11),
        ("pause", json!({}), 12),
        ("eliminate", json!({"registrationId": r(1)}), 13),
        ("resume", json!({}), 15),
    ];
    // Forty more over the next half hour: pauses and resumes, steps, the field knocked out to
    // the last player, with an undo and its elimination again on the way.
    let mut minute = 16;
    for n in 2..11 {
        queue.push(("eliminate", json!({"registrationId": r(n)}), minute));
        queue.push(("pause", json!({}), minute));
        queue.push(("resume", json!({}), minute + 1));
        queue.push(("level", json!({"direction": if n % 3 == 0 { "prev" } else { "next" }}), minute + 2));
        minute += 3;
    }
    queue.push(("undo", json!({}), minute));
    queue.push(("eliminate", json!({"registrationId": r(10)}), minute + 1));
    queue.push(("pause", json!({}), minute + 1));
    queue.push(("resume", json!({}), minute + 2));
    assert_eq!(queue.len(), 50);
    queue
}

/// Sends one queued command as a live request with its `occurredAt`.
async fn send_live(app: &TestApp, day: &Ready, (command, body, minute): &(&str, Value, i64), start: DateTime<Utc>) {
    let mut body = body.clone();
    body["occurredAt"] = json!(at(start, *minute));
    let reply = match *command {
        "eliminate" => {
            body["tournamentId"] = json!(day.id);
            staff(app, &day.club, "/eliminations", body).await
        }
        "undo" => staff(app, &day.club, &day.path("eliminations/undo"), body).await,
        other => staff(app, &day.club, &day.path(other), body).await,
    };
    reply.assert_ok();
}

fn replay_body(queue: &[(&str, Value, i64)], start: DateTime<Utc>, key: &str) -> Value {
    let commands: Vec<Value> = queue
        .iter()
        .enumerate()
        .map(|(n, (command, body, minute))| {
            json!({"command": command, "body": body, "occurredAt": at(start, *minute), "idempotencyKey": format!("{key}-{n}")})
        })
        .collect();
    json!({"commands": commands})
}

/// What two tournaments' states must share: the clock, and each place's player by its index.
fn comparable(state: &Value, day: &Ready) -> Value {
    let index = |id: &Value| day.registrations.iter().position(|r| r.to_string() == id.as_str().unwrap_or_default());
    let eliminations: Vec<Value> = state["eliminations"]
        .as_array()
        .expect("eliminations")
        .iter()
        .map(|e| json!({"player": index(&e["registrationId"]), "place": e["place"], "at": e["eliminatedAt"]}))
        .collect();
    let clock = &state["clock"];
    json!({
        "clock": [clock["currentLevelIdx"], clock["levelStartedAt"], clock["pausedAt"]],
        "eliminations": eliminations,
        "remaining": state["remaining"],
    })
}

/// The confirmed results of `day`: each place with its player's index.
async fn protocol(app: &TestApp, day: &Ready) -> Vec<(Value, Option<usize>)> {
    let items = staff(app, &day.club, &day.path("confirm-results"), json!({})).await.assert_ok()["items"].clone();
    items
        .as_array()
        .expect("items")
        .iter()
        .map(|item| {
            let id = item["registrationId"].as_str().unwrap_or_default().to_owned();
            (item["place"].clone(), day.registrations.iter().position(|r| r.to_string() == id))
        })
        .collect()
}

async fn a_replayed_queue_ends_as_the_same_commands_sent_live_at_their_times(backend: Backend) {
    let Some(app) = spawn_app(backend).await else { return };
    let live = ready(&app, "+79990641001", 641, 12).await;
    let queued = ready(&app, "+79990642001", 642, 12).await;
    live.start(&app).await;
    queued.start(&app).await;
    let start = started_ago(&app, live.id, 60).await;
    started_at(&app, queued.id, start).await;

    for command in queue_of(&live) {
        send_live(&app, &live, &command, start).await;
    }
    let sent_live = live.live(&app).await;

    // The start moved behind the actor's back: a read has it read the game again, and its clock
    // catches up with the levels run out since. The watcher joins once that is done.
    settled(&app, &queued).await;
    let mut watcher = app.watcher(&queued.players[0].access_token).await;
    assert_eq!(watcher.join(queued.id).await["ok"], true);
    let before = version(&queued.live(&app).await);
    let body = replay_body(&queue_of(&queued), start, "q");
    let answer = staff(&app, &queued.club, &queued.path("replay"), body.clone()).await.assert_ok().clone();
    let results = answer["results"].as_array().expect("results");
    assert_eq!(results.len(), 50);
    assert!(results.iter().all(|r| r["outcome"] == "applied"), "{answer}");
    assert_eq!(comparable(&answer["state"], &queued), comparable(&sent_live, &live), "{answer}");
    assert_eq!(answer["state"]["remaining"], 1);
    // One broadcast for the whole queue: the watcher hears its final state and nothing between.
    let heard = watcher.states_until(version(&answer["state"])).await;
    assert_eq!(
        heard.len(),
        1,
        "one broadcast, not one per command: {:?}",
        heard.iter().map(version).collect::<Vec<_>>()
    );
    assert!(version(&answer["state"]) > before);

    // Sent again: every command was applied already, and nothing changes.
    let again = staff(&app, &queued.club, &queued.path("replay"), body).await.assert_ok().clone();
    assert!(again["results"].as_array().expect("results").iter().all(|r| r["outcome"] == "replayed"), "{again}");
    assert_eq!(again["results"][3]["version"], answer["results"][3]["version"]);
    assert_eq!(version(&again["state"]), version(&answer["state"]));

    // The results use the recorded order: the same places for the same players.
    assert_eq!(protocol(&app, &queued).await, protocol(&app, &live).await);
    watcher.close().await;
}

async fn each_queued_command_is_applied_or_refused_on_its_own(backend: Backend) {
    let Some(app) = spawn_app(backend).await else { return };
    let day = ready(&app, "+79990643001", 643, 4).await;
    day.start(&app).await;
    let start = started_ago(&app, day.id, 30).await;
    // A live press the app sent before the connection went, whose answer it never saw.
    let pressed = json!({"occurredAt": at(start, 1)});
    let live_pause = app
        .call_with(
            reqwest::Method::POST,
            &day.path("pause"),
            Some(&day.club.owner.access_token),
            Some(pressed),
            &[("Idempotency-Key", "sent-live")],
        )
        .await;
    let paused_version = version(live_pause.assert_ok());
    let commands = json!({"commands": [
        {"command": "pause", "body": {}, "occurredAt": at(start, 1), "idempotencyKey": "sent-live"},
        {"command": "resume", "occurredAt": at(start, 3), "idempotencyKey": "k1"},
        {"command": "level", "body": {"direction": "prev"}, "occurredAt": at(start, 4), "idempotencyKey": "k2"},
        {"command": "eliminate", "body": {"registrationId": Uuid::nil()}, "occurredAt": at(start, 5), "idempotencyKey": "k3"},
        {"command": "eliminate", "body": {"registrationId": day.registrations[0]}, "occurredAt": at(start, 5), "idempotencyKey": "k4"},
        {"command": "reseat", "body": {"registrationId": day.registrations[1]}, "occurredAt": at(start, 6), "idempotencyKey": "k5"},
        {"command": "pause", "occurredAt": at(start, 2), "idempotencyKey": "k6"},
        {"command": "pause", "occurredAt": at(start, 7), "idempotencyKey": "k7"},
    ]});
    let answer = staff(&app, &day.club, &day.path("replay"), commands).await.assert_ok().clone();
    let outcome = |n: usize| (answer["results"][n]["outcome"].clone(), answer["results"][n]["error"]["code"].clone());
    assert_eq!(outcome(0), (json!("replayed"), Value::Null), "{answer}");
    assert_eq!(answer["results"][0]["version"], paused_version, "the live press's version");
    assert_eq!(outcome(1), (json!("applied"), Value::Null));
    assert_eq!(outcome(2), (json!("refused"), json!("INVALID_LEVEL")));
    assert_eq!(outcome(3), (json!("refused"), json!("NOT_FOUND")));
    assert_eq!(outcome(4), (json!("applied"), Value::Null));
    assert_eq!(outcome(5), (json!("refused"), json!("VALIDATION_ERROR")));
    assert_eq!(outcome(6), (json!("refused"), json!("CONFLICTING_CHANGE")), "before the elimination at 5");
    assert_eq!(outcome(7), (json!("applied"), Value::Null));
    let state = &answer["state"];
    assert_eq!(state["remaining"], 3);
    assert_eq!(time(&state["clock"]["pausedAt"]), start + Duration::minutes(7));
    assert_eq!(answer["results"][7]["version"], state["version"]);
    // Each applied command has the version it made: one after the other.
    let applied: Vec<i64> = [1, 4, 7].iter().map(|n| answer["results"][*n]["version"].as_i64().unwrap_or(-1)).collect();
    assert!(applied.windows(2).all(|pair| pair[1] == pair[0] + 1), "{applied:?}");

    // The whole request is refused only for what it is as a whole.
    let refused = |body: Value| {
        let (app, day) = (&app, &day);
        async move { staff(app, &day.club, &day.path("replay"), body).await }
    };
    refused(json!({"commands": []})).await.assert_error(400, "VALIDATION_ERROR");
    let many: Vec<Value> = (0..201)
        .map(|n| json!({"command": "pause", "occurredAt": at(start, 8), "idempotencyKey": format!("m{n}")}))
        .collect();
    refused(json!({"commands": many})).await.assert_error(400, "VALIDATION_ERROR");
    let twice = json!({"commands": [
        {"command": "pause", "occurredAt": at(start, 8), "idempotencyKey": "same"},
        {"command": "resume", "occurredAt": at(start, 9), "idempotencyKey": "same"},
    ]});
    refused(twice).await.assert_error(400, "VALIDATION_ERROR");
    let unknown = json!({"commands": [{"command": "start", "occurredAt": at(start, 8), "idempotencyKey": "u"}]});
    refused(unknown).await.assert_error(400, "VALIDATION_ERROR");
    assert_eq!(version(&day.live(&app).await), version(state), "nothing of a refused request was applied");
    // A player may not replay the club's commands.
    let player = &day.players[0].access_token;
    let one = json!({"commands": [{"command": "resume", "occurredAt": at(start, 8), "idempotencyKey": "p"}]});
    app.post(&day.path("replay"), Some(player), one).await.assert_error(403, "FORBIDDEN");
}

async fn bad_times_and_conflicts_are_refused_and_change_nothing(backend: Backend) {
    let Some(app) = spawn_app(backend).await else { return };
    let day = ready(&app, "+79990644001", 644, 3).await;
    day.start(&app).await;
    let start = started_ago(&app, day.id, 20).await;
    let pause = |occurred_at: String| {
        let (app, day) = (&app, &day);
        async move { staff(app, &day.club, &day.path("pause"), json!({"occurredAt": occurred_at})).await }
    };
    let ahead = pause((Utc::now() + Duration::seconds(30)).to_rfc3339()).await;
    ahead.assert_error(400, "VALIDATION_ERROR");
    assert_eq!(ahead.body["error"]["details"][0]["field"], "occurredAt");
    pause((Utc::now() - Duration::hours(7)).to_rfc3339()).await.assert_error(400, "VALIDATION_ERROR");
    pause("at half past nine".to_owned()).await.assert_error(400, "VALIDATION_ERROR");
    // Before the start: earlier than a command applied.
    let before_start = pause(at(start, -1)).await;
    before_start.assert_error(409, "CONFLICTING_CHANGE");
    let untouched = day.live(&app).await;
    assert_eq!(before_start.body["error"]["details"]["state"]["version"], untouched["version"], "the state now");
    assert!(untouched["clock"]["pausedAt"].is_null(), "nothing applied");

    // Another device applied a step at minute 10; a pause stated at minute 8 conflicts.
    let step = json!({"direction": "next", "occurredAt": at(start, 10)});
    staff(&app, &day.club, &day.path("level"), step).await.assert_ok();
    let late = pause(at(start, 8)).await;
    late.assert_error(409, "CONFLICTING_CHANGE");
    assert_eq!(late.body["error"]["details"]["state"]["clock"]["currentLevelIdx"], 1);
    // A device a few seconds ahead is taken as now; without `occurredAt` nothing is checked.
    let now_ish = pause((Utc::now() + Duration::seconds(3)).to_rfc3339()).await;
    assert!(time(&now_ish.assert_ok()["clock"]["pausedAt"]) <= Utc::now());
    staff(&app, &day.club, &day.path("resume"), json!({})).await.assert_ok();
    staff(&app, &day.club, &day.path("pause"), json!({})).await.assert_ok();
}

/// Through two nodes sharing PostgreSQL and Redis: the pause made offline goes to the node that
/// does not run the tournament, and every reader and watcher ends with the same clock.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn through_two_nodes_a_replayed_pause_lands_as_if_it_had_arrived_at_once() {
    let Some(redis_url) = test_redis_url().await else { return };
    let Some(first) = spawn_app_with(Backend::Postgres, &[("REDIS_URL", redis_url)]).await else { return };
    let second = first.second_node(&[("REDIS_URL", redis_url)]).await;
    let day = ready(&first, "+79990645001", 645, 3).await;
    let levels = day.start(&first).await["clock"]["levels"].clone();
    let start = started_ago(&first, day.id, 40).await;
    let mut watcher = second.watcher(&day.players[0].access_token).await;
    assert_eq!(watcher.join(day.id).await["ok"], true);
    let pressed = start + Duration::minutes(28);
    let commands = json!({"commands": [
        {"command": "pause", "occurredAt": pressed.to_rfc3339(), "idempotencyKey": "offline-pause"},
    ]});
    let answer = staff(&second, &day.club, &day.path("replay"), commands).await.assert_ok().clone();
    assert_eq!(answer["results"][0]["outcome"], "applied", "{answer}");
    let (idx, began) = running_at(&levels, start, pressed);
    let clock = &answer["state"]["clock"];
    assert_eq!(clock["currentLevelIdx"], idx);
    assert_eq!(time(&clock["levelStartedAt"]), began);
    assert_eq!(time(&clock["pausedAt"]), pressed);
    let heard = watcher.states_until(version(&answer["state"])).await;
    assert_eq!(heard.last().map(|state| state["clock"].clone()), Some(clock.clone()));
    assert_eq!(first.get(&day.path("live"), None).await.assert_ok()["clock"], *clock);
    watcher.close().await;
}

/// Two requests replaying one queue at once (the app's retry racing its first try) apply each
/// command once: the key's row goes to one of them, and the other answers `replayed` with the
/// version the first applied it at. On PostgreSQL, where the two run truly together.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_replays_of_one_queue_at_once_apply_each_command_once() {
    const TRIES: usize = 50;
    let Some(app) = spawn_app(Backend::Postgres).await.map(std::sync::Arc::new) else { return };
    let day = ready(&app, "+79990646001", 646, 3).await;
    let mut expected = version(&day.start(&app).await);
    for round in 0..TRIES {
        let now = Utc::now();
        let body = json!({"commands": [
            {"command": "pause", "occurredAt": now.to_rfc3339(), "idempotencyKey": format!("p{round}")},
            {"command": "resume", "occurredAt": (now + Duration::milliseconds(1)).to_rfc3339(), "idempotencyKey": format!("r{round}")},
        ]});
        let barrier = std::sync::Arc::new(tokio::sync::Barrier::new(2));
        let send = |barrier: std::sync::Arc<tokio::sync::Barrier>| {
            let (app, path, token, body) =
                (app.clone(), day.path("replay"), day.club.owner.access_token.clone(), body.clone());
            tokio::spawn(async move {
                barrier.wait().await;
                app.post(&path, Some(&token), body).await.assert_ok().clone()
            })
        };
        let (first, second) = (send(barrier.clone()), send(barrier));
        let (first, second) = (first.await.expect("sent"), second.await.expect("sent"));
        expected += 2;
        for n in 0..2 {
            let outcomes = [&first["results"][n]["outcome"], &second["results"][n]["outcome"]];
            assert!(outcomes.contains(&&json!("applied")), "round {round}: {first} {second}");
            assert!(outcomes.contains(&&json!("replayed")), "round {round}: {first} {second}");
            assert_eq!(first["results"][n]["version"], second["results"][n]["version"], "round {round}");
        }
        assert_eq!(version(&day.live(&app).await), expected, "round {round}: each command applied once");
    }
}

/// A queue's seat changes are written as the queue leaves them, whatever their order inside
/// it: a player moved into the seat of one who fell, another into the seat the first left, the
/// fallen one brought back (to another seat, theirs being taken), one more falling. The stored
/// rows, read afresh, are the state's seats, and the fallen player's row is kept but free.
async fn a_queue_that_moves_players_leaves_the_seat_rows_as_its_state_shows(backend: Backend) {
    let Some(app) = spawn_app(backend).await else { return };
    let day = ready(&app, "+79990647001", 647, 12).await;
    let started = day.start(&app).await;
    let seat_of = |id: Uuid| {
        let (_, table, seat) = seats(&started).into_iter().find(|(seated, ..)| *seated == id).expect("seated");
        json!({"tableNo": table, "seatNo": seat})
    };
    let r = |n: usize| day.registrations[n];
    let with = |mut seat: Value, id: Uuid| {
        seat["registrationId"] = json!(id);
        seat
    };
    let start = started_ago(&app, day.id, 10).await;
    let queue = [
        ("eliminate", json!({"registrationId": r(0)})),
        ("reseat", with(seat_of(r(0)), r(1))),
        ("reseat", with(seat_of(r(1)), r(2))),
        ("undo", json!({})),
        ("eliminate", json!({"registrationId": r(3)})),
    ];
    let commands: Vec<Value> = queue
        .iter()
        .enumerate()
        .map(|(n, (command, body))| {
            let moment = at(start, n as i64 + 1);
            json!({"command": command, "body": body, "occurredAt": moment, "idempotencyKey": format!("s{n}")})
        })
        .collect();
    let answer = staff(&app, &day.club, &day.path("replay"), json!({"commands": commands})).await.assert_ok().clone();
    assert!(answer["results"].as_array().expect("results").iter().all(|r| r["outcome"] == "applied"), "{answer}");
    let state = &answer["state"];
    let mut shown = seats(state);
    assert_eq!(
        shown.iter().find(|(id, ..)| *id == r(1)).map(|(_, t, s)| json!({"tableNo": t, "seatNo": s})),
        Some(seat_of(r(0)))
    );
    assert!(shown.iter().any(|(id, ..)| *id == r(0)), "the fallen player is back: {state}");
    assert!(!shown.iter().any(|(id, ..)| *id == r(3)), "{state}");

    let rows = floor_entities::table_seats::Entity::find()
        .filter(floor_entities::table_seats::Column::TournamentId.eq(day.id))
        .all(app.db())
        .await
        .expect("the seat rows");
    let mut taken: Vec<(Uuid, i64, i64)> = rows
        .iter()
        .filter(|row| row.active)
        .map(|row| (row.registration_id, i64::from(row.table_no), i64::from(row.seat_no)))
        .collect();
    taken.sort();
    shown.sort();
    assert_eq!(taken, shown, "the stored seats are the state's");
    let fallen = rows.iter().find(|row| row.registration_id == r(3)).expect("the fallen player's row");
    assert!(!fallen.active);
    assert_eq!(json!({"tableNo": fallen.table_no, "seatNo": fallen.seat_no}), seat_of(r(3)), "kept for an undo");
}
