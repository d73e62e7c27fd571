//! Two `floor serve` processes on one PostgreSQL and Redis, as an operator runs them: one node
//! runs a tournament's actor and the other hands it its commands; a killed owner's tournament
//! is served by the other node within 10 seconds with everything acknowledged kept and the
//! clock caught up; a SIGTERM hands the tournament over while presses stream in, losing and
//! doubling none. The tournament is prepared by an in-process node without Redis, which
//! never runs it.

use std::time::{Duration, Instant};

use rust_socketio::TransportType;
use sea_orm::{ConnectionTrait, Statement};
use serde_json::{Value, json};
use uuid::Uuid;

use crate::helpers::{Backend, TestApp, spawn_app_with, test_redis_url};
use crate::live::{Ready, ready};
use crate::nodes::{Node, live_actors, press};

/// Prepares a tournament of `players` checked in, and two nodes beside it; `None` when
/// PostgreSQL or Redis is unreachable outside CI.
async fn two_nodes(phone: &str, prefix: u32, players: u32) -> Option<(TestApp, Ready, Node, Node, tempfile::TempDir)> {
    let redis = test_redis_url().await?;
    let setup = spawn_app_with(Backend::Postgres, &[]).await?;
    let game = ready(&setup, phone, prefix, players).await;
    let logs = tempfile::tempdir().expect("a folder for the logs");
    let first = Node::start(&setup.database_url, Some(redis), logs.path(), "first").await;
    let second = Node::start(&setup.database_url, Some(redis), logs.path(), "second").await;
    Some((setup, game, first, second, logs))
}

pub(crate) fn version(state: &Value) -> i64 {
    state["version"].as_i64().expect("a version")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_owner_s_tournament_is_served_by_the_other_node_within_ten_seconds() {
    let Some((setup, game, mut first, second, _logs)) = two_nodes("+79990008800", 880, 4).await else { return };
    let client = reqwest::Client::new();
    let (status, started) = press(&client, &first, &game, &game.path("start"), json!({}), "start").await.expect("sent");
    assert_eq!(status, 200, "{started}");
    assert_eq!(live_actors(&client, &first).await, Some(1.0), "the node that started it runs it");
    assert_eq!(live_actors(&client, &second).await, Some(0.0), "one owner across the nodes");

    // An elimination sent to the other node is handed to the owner and answered as if local.
    let out = json!({"tournamentId": game.id, "registrationId": game.registrations[0]});
    let (status, eliminated) = press(&client, &second, &game, "/eliminations", out, "out-1").await.expect("sent");
    assert_eq!(status, 200, "{eliminated}");
    assert_eq!(version(&eliminated["state"]), version(&started) + 1);
    assert_eq!(live_actors(&client, &second).await, Some(0.0), "the other node ran no actor for it");
    let acknowledged = version(&eliminated["state"]);

    // The first segment runs out two seconds from now; the owner dies at once.
    let minutes = started["clock"]["levels"][0]["durationMin"].as_i64().expect("a duration");
    let level_started_at = chrono::Utc::now() - chrono::Duration::minutes(minutes) + chrono::Duration::seconds(2);
    setup
        .db()
        .execute_raw(Statement::from_sql_and_values(
            setup.db().get_database_backend(),
            "UPDATE tournaments SET level_started_at = $1 WHERE id = $2",
            [level_started_at.into(), game.id.into()],
        ))
        .await
        .expect("the clock moved back");
    first.child.kill().expect("kill -9");
    let killed = Instant::now();

    let out = json!({"tournamentId": game.id, "registrationId": game.registrations[1]});
    let (status, answer) = press(&client, &second, &game, "/eliminations", out, "out-2").await.expect("sent");
    let waited = killed.elapsed();
    eprintln!("served {waited:?} after the kill");
    assert_eq!(status, 200, "{answer}");
    assert!(waited < Duration::from_secs(10), "served {waited:?} after the kill");
    let state = &answer["state"];
    let out: Vec<&str> = state["eliminations"]
        .as_array()
        .expect("eliminations")
        .iter()
        .filter_map(|e| e["registrationId"].as_str())
        .collect();
    let expected = [game.registrations[1].to_string(), game.registrations[0].to_string()];
    assert_eq!(out, expected, "the acknowledged elimination is kept");
    assert_eq!(state["clock"]["currentLevelIdx"], 1, "the clock caught up with the segment that ran out");
    let next_started: chrono::DateTime<chrono::Utc> =
        serde_json::from_value(state["clock"]["levelStartedAt"].clone()).expect("a time");
    let ended = level_started_at + chrono::Duration::minutes(minutes);
    assert!((next_started - ended).num_milliseconds().abs() <= 1, "the next level started when the first ran out");
    assert_eq!(version(state), acknowledged + 2, "the catch-up and the elimination, nothing else");
    assert_eq!(live_actors(&client, &second).await, Some(1.0), "the survivor runs it now");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_terminated_owner_hands_its_tournament_over_without_losing_or_doubling_a_press() {
    let Some((setup, game, first, second, _logs)) = two_nodes("+79990008900", 890, 2).await else { return };
    let client = reqwest::Client::new();
    let (status, started) = press(&client, &first, &game, &game.path("start"), json!({}), "start").await.expect("sent");
    assert_eq!(status, 200, "{started}");
    assert_eq!(live_actors(&client, &first).await, Some(1.0));
    // A watcher on the node that stays hears every press, whichever node took it.
    let token = game.club.owner.access_token.clone();
    let mut staying = setup.watch_at(&second.base, Some(&token), TransportType::Websocket).await;
    staying.connected().await.expect("the namespace accepts the owner");
    assert_eq!(staying.join(game.id).await["ok"], true);

    // Presses stream in, alternating between the nodes: a press that finds its node gone
    // (refused connection) goes to the other one with the same key, as a client would.
    const PRESSES: usize = 60;
    const TERMINATE_AFTER: usize = 20;
    let nodes = [&first, &second];
    let mut versions = Vec::new();
    let mut terminated = None;
    let mut handed_over = None;
    for n in 0..PRESSES {
        if n == TERMINATE_AFTER {
            first.terminate();
            terminated = Some(Instant::now());
        }
        let direction = if n % 2 == 0 { "next" } else { "prev" };
        let key = Uuid::new_v4().to_string();
        let mut target = n % 2;
        let mut answered = None;
        for _attempt in 0..20 {
            match press(&client, nodes[target], &game, &game.path("level"), json!({"direction": direction}), &key).await
            {
                Ok(answer) => {
                    answered = Some(answer);
                    break;
                }
                Err(_) => {
                    target = 1 - target;
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
            }
        }
        let (status, state) = answered.expect("a press is answered by one of the nodes");
        assert_eq!(status, 200, "press {n}: {state}");
        versions.push(version(&state));
        if let Some(since) = terminated
            && handed_over.is_none()
            && live_actors(&client, &second).await == Some(1.0)
        {
            handed_over = Some(since.elapsed());
        }
    }
    let expected: Vec<i64> = (1..=PRESSES as i64).map(|n| version(&started) + n).collect();
    assert_eq!(versions, expected, "each press applied once, in order, none lost");
    let seen: Vec<i64> = staying.states_until(*expected.last().expect("presses")).await.iter().map(version).collect();
    assert_eq!(seen, expected, "the staying node's watcher saw every press once, in order, across the hand-over");

    let since = terminated.expect("terminated");
    while handed_over.is_none() && since.elapsed() < Duration::from_secs(5) {
        if live_actors(&client, &second).await == Some(1.0) {
            handed_over = Some(since.elapsed());
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let handed_over = handed_over.expect("the other node runs the tournament");
    assert!(handed_over < Duration::from_secs(2), "the other node owned it {handed_over:?} after SIGTERM");

    let mut first = first;
    let exit = loop {
        if let Some(exit) = first.child.try_wait().expect("a status") {
            break exit;
        }
        assert!(since.elapsed() < Duration::from_secs(30), "the terminated node exits within 30 s");
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert!(exit.success(), "a graceful exit: {exit:?}");
    eprintln!("owned by the other node {handed_over:?} after SIGTERM, exited {:?} after", since.elapsed());
    let live: Value = client
        .get(format!("{}/api/v1/tournaments/{}/live", second.base, game.id))
        .send()
        .await
        .expect("an answer")
        .json()
        .await
        .expect("json");
    assert_eq!(version(&live), version(&started) + PRESSES as i64, "the survivor shows every press");
}
