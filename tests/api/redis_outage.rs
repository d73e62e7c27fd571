//! Redis blinks under two `floor serve` nodes: the test runs a `redis-server` of its own on a
//! free port and kills it for ten seconds while presses stream in. The owner's watchers miss
//! nothing, the other node's watchers hear each change within 2 s all through the outage (their
//! node reads the database), nobody hears a state again once Redis is back, a node started
//! during the outage serves, watchers that join afterwards hear every change, and the probes
//! and metrics say what happened without taking a node out.

use std::path::Path;
use std::time::{Duration, Instant};

use rust_socketio::TransportType;
use serde_json::{Value, json};
use uuid::Uuid;

use crate::fault_proxy::FaultProxy;
use crate::helpers::{Backend, spawn_app_with};
use crate::live::version;
use crate::live::{Ready, ready};
use crate::nodes::{Node, metric, press};
use crate::own_redis::OwnRedis;
use crate::watchers::Watcher;

/// A probe's status and body.
async fn probe(client: &reqwest::Client, node: &Node, path: &str) -> (u16, Value) {
    let answer = client.get(format!("{}{path}", node.base)).send().await.expect("the node answers");
    let status = answer.status().as_u16();
    (status, answer.json().await.expect("json"))
}

/// A watcher of the tournament on `node`, joined and holding the state it was acked.
async fn watcher_on(setup: &crate::helpers::TestApp, node: &Node, game: &Ready) -> (Watcher, i64) {
    let token = game.club.owner.access_token.clone();
    let mut watcher = setup.watch_at(&node.base, Some(&token), TransportType::Websocket).await;
    watcher.connected().await.expect("the namespace accepts the owner");
    let ack = watcher.join(game.id).await;
    assert_eq!(ack["ok"], true, "{ack}");
    (watcher, version(&ack["state"]))
}

/// Every `state` version a watcher hears until `last`, within `wait`.
async fn versions_until(watcher: &mut Watcher, last: i64, wait: Duration) -> Option<Vec<i64>> {
    let heard = tokio::time::timeout(wait, watcher.states_until(last)).await.ok()?;
    Some(heard.iter().map(version).collect())
}

/// Each `state` version a watcher hears until `until`, with when it heard it.
async fn heard_until(watcher: &mut Watcher, until: Instant) -> Vec<(i64, Instant)> {
    let mut heard = Vec::new();
    while Instant::now() < until {
        if let Some(state) = watcher.hears_within(Duration::from_millis(100)).await {
            heard.push((version(&state), Instant::now()));
        }
    }
    heard
}

/// How many lines of a node's log contain `text`.
fn log_lines(logs: &Path, node: &str, text: &str) -> usize {
    std::fs::read_to_string(logs.join(format!("{node}.log")))
        .unwrap_or_default()
        .lines()
        .filter(|line| line.contains(text))
        .count()
}

/// The last lines of every node's log, for a failure's message.
fn log_tails(logs: &Path) -> String {
    ["first", "second", "third"]
        .iter()
        .map(|node| {
            let text = std::fs::read_to_string(logs.join(format!("{node}.log"))).unwrap_or_default();
            let lines: Vec<&str> = text.lines().collect();
            format!("--- {node} ---\n{}", lines[lines.len().saturating_sub(30)..].join("\n"))
        })
        .collect::<Vec<String>>()
        .join("\n")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ten_seconds_without_redis_freeze_no_phone_and_take_no_node_out() {
    let Some(mut redis) = OwnRedis::start() else { return };
    let Some(setup) = spawn_app_with(Backend::Postgres, &[]).await else { return };
    let game = ready(&setup, "+79990007700", 770, 4).await;
    let logs = tempfile::tempdir().expect("a folder for the logs");
    let first = Node::start(&setup.database_url, Some(&redis.url()), logs.path(), "first").await;
    let second = Node::start(&setup.database_url, Some(&redis.url()), logs.path(), "second").await;
    let client = reqwest::Client::new();
    let (status, started) = press(&client, &first, &game, &game.path("start"), json!({}), "start").await.expect("sent");
    assert_eq!(status, 200, "{started}");
    let (mut owners, _) = watcher_on(&setup, &first, &game).await;
    let (mut followers, _) = watcher_on(&setup, &second, &game).await;
    assert_eq!(metric(&client, &first, "floor_bus_up").await, Some(1.0));

    // Redis dies; presses keep coming to both nodes, every 200 ms, for ten seconds; a third
    // node starts meanwhile.
    redis.kill();
    let nodes = [&first, &second];
    let outage_ends = Instant::now() + Duration::from_secs(10);
    let pressing = async {
        let mut acknowledged = Vec::new();
        let mut acknowledged_at = Vec::new();
        let until = outage_ends;
        let mut n = 0;
        while Instant::now() < until {
            let direction = if n % 2 == 0 { "next" } else { "prev" };
            let key = Uuid::new_v4().to_string();
            let (status, state) =
                press(&client, nodes[n % 2], &game, &game.path("level"), json!({"direction": direction}), &key)
                    .await
                    .expect("a press is answered");
            assert_eq!(status, 200, "press {n} without Redis: {state}");
            acknowledged.push(version(&state));
            acknowledged_at.push(Instant::now());
            n += 1;
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        (acknowledged, acknowledged_at)
    };
    // What the other node's watcher hears meanwhile, and when.
    let following = heard_until(&mut followers, outage_ends + Duration::from_secs(2));
    let url = redis.url();
    let ((acknowledged, acknowledged_at), third, heard) =
        tokio::join!(pressing, Node::start(&setup.database_url, Some(&url), logs.path(), "third"), following);
    let first_press = version(&started) + 1;
    let last = *acknowledged.last().expect("presses");
    assert_eq!(acknowledged, (first_press..=last).collect::<Vec<i64>>(), "every press applied once, in order");

    // Nothing took a node out, and each says what is down.
    for node in [&first, &second, &third] {
        let (status, health) = probe(&client, node, "/api/v1/health").await;
        assert_eq!((status, health["redis"].as_str()), (200, Some("error")), "{health}");
        let (status, ready) = probe(&client, node, "/ready").await;
        assert_eq!(status, 200, "a node without Redis still serves its clients: {ready}");
        assert_eq!((ready["status"].as_str(), ready["redis"].as_str()), (Some("degraded"), Some("error")));
        assert_eq!(metric(&client, node, "floor_bus_up").await, Some(0.0));
    }
    // The owner's watcher heard every press, in order, while Redis was down.
    let owners_heard = versions_until(&mut owners, last, Duration::from_secs(5))
        .await
        .expect("the owner's watcher hears the outage's presses");
    assert_eq!(owners_heard, (first_press..=last).collect::<Vec<i64>>(), "the owner's watcher missed nothing");
    // The other node's watcher heard each press within 2 s, its versions only going up.
    let versions: Vec<i64> = heard.iter().map(|(seen, _)| *seen).collect();
    assert!(versions.windows(2).all(|pair| pair[0] < pair[1]), "versions only go up: {versions:?}");
    let mut slowest = Duration::ZERO;
    for (pressed, at) in acknowledged.iter().zip(&acknowledged_at) {
        let reached = heard.iter().find(|(seen, _)| seen >= pressed).map(|(_, when)| *when);
        let reached = reached.unwrap_or_else(|| {
            panic!("version {pressed} never reached the other node: {versions:?}\n{}", log_tails(logs.path()))
        });
        slowest = slowest.max(reached.saturating_duration_since(*at));
    }
    eprintln!("without Redis, the other node's watcher heard each press within {slowest:?}");
    assert!(slowest <= Duration::from_secs(2), "a press reached the other node's watcher {slowest:?} late");

    redis.run();
    // Nobody hears again what they have: the owner's watchers had every state, the other
    // node's were brought up to date from the database.
    for (name, watcher) in [("the owner's", &mut owners), ("the other node's", &mut followers)] {
        if let Some(again) = watcher.hears_within(Duration::from_secs(3)).await {
            panic!("{name} watcher heard version {} again after Redis was back", version(&again));
        }
    }
    for node in [&first, &second, &third] {
        let deadline = Instant::now() + Duration::from_secs(5);
        while metric(&client, node, "floor_bus_up").await != Some(1.0) {
            assert!(Instant::now() < deadline, "{} sees Redis again", node.base);
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        let (status, ready) = probe(&client, node, "/ready").await;
        assert_eq!((status, ready["status"].as_str()), (200, Some("ready")), "{ready}");
    }

    // Watchers that join afterwards, on every node, hear every change, as the old ones do.
    let mut everyone = vec![owners, followers];
    for node in [&first, &second, &third] {
        everyone.push(watcher_on(&setup, node, &game).await.0);
    }
    let mut after = Vec::new();
    for n in 0..6 {
        let direction = if n % 2 == 0 { "next" } else { "prev" };
        let key = Uuid::new_v4().to_string();
        let node = [&first, &second, &third][n % 3];
        let (status, state) = press(&client, node, &game, &game.path("level"), json!({"direction": direction}), &key)
            .await
            .expect("sent");
        assert_eq!(status, 200, "{state}");
        after.push(version(&state));
    }
    let final_version = *after.last().expect("presses");
    for (n, watcher) in everyone.iter_mut().enumerate() {
        let heard = versions_until(watcher, final_version, Duration::from_secs(5))
            .await
            .expect("every watcher hears the presses after");
        let heard_after: Vec<i64> = heard.into_iter().filter(|seen| *seen > last).collect();
        assert_eq!(heard_after, after, "watcher {n} heard every press after Redis came back, once, in order");
    }

    // The outage was told once per node, not at every change.
    for node in ["first", "second", "third"] {
        assert!(log_lines(logs.path(), node, "could not broadcast") == 0, "{node} logged a broadcast error");
    }
    for node in ["first", "second"] {
        assert_eq!(log_lines(logs.path(), node, "lost Redis"), 1, "{node} says it lost Redis once");
    }
}

/// Redis blackholed for ten seconds (the nodes' connections to it through a proxy that lets
/// nothing pass, open: a partition) instead of killed: the nodes notice by themselves, each
/// press is acknowledged, and the other node's watcher still hears each one within 2 s; once
/// the partition heals, every watcher ends at the last version.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_blackholed_for_ten_seconds_leaves_no_phone_behind() {
    let Some(redis) = OwnRedis::start() else { return };
    let Some(setup) = spawn_app_with(Backend::Postgres, &[]).await else { return };
    let proxy = FaultProxy::start(&format!("127.0.0.1:{}", redis.port)).await;
    let through = proxy.in_front_of(&redis.url(), redis.port);
    let game = ready(&setup, "+79990007800", 780, 4).await;
    let logs = tempfile::tempdir().expect("a folder for the logs");
    let first = Node::start(&setup.database_url, Some(&through), logs.path(), "first").await;
    let second = Node::start(&setup.database_url, Some(&through), logs.path(), "second").await;
    let client = reqwest::Client::new();
    let (status, started) = press(&client, &first, &game, &game.path("start"), json!({}), "start").await.expect("sent");
    assert_eq!(status, 200, "{started}");
    let (mut owners, _) = watcher_on(&setup, &first, &game).await;
    let (mut followers, _) = watcher_on(&setup, &second, &game).await;

    proxy.blackhole();
    let outage_ends = Instant::now() + Duration::from_secs(10);
    let nodes = [&first, &second];
    let pressing = async {
        let mut acknowledged = Vec::new();
        let mut n = 0;
        while Instant::now() < outage_ends {
            let direction = if n % 2 == 0 { "next" } else { "prev" };
            let key = Uuid::new_v4().to_string();
            let asked = Instant::now();
            let (status, state) =
                press(&client, nodes[n % 2], &game, &game.path("level"), json!({"direction": direction}), &key)
                    .await
                    .expect("a press is answered");
            assert_eq!(status, 200, "press {n} with Redis blackholed: {state}");
            assert!(asked.elapsed() < Duration::from_secs(2), "press {n} took {:?}", asked.elapsed());
            acknowledged.push((version(&state), Instant::now()));
            n += 1;
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        acknowledged
    };
    let following = heard_until(&mut followers, outage_ends + Duration::from_secs(2));
    let (acknowledged, heard) = tokio::join!(pressing, following);
    let mut slowest = Duration::ZERO;
    for (pressed, at) in &acknowledged {
        let reached = heard.iter().filter(|(seen, _)| seen >= pressed).map(|(_, when)| *when).min();
        let reached = reached.unwrap_or_else(|| panic!("version {pressed} never reached the other node: {heard:?}"));
        slowest = slowest.max(reached.saturating_duration_since(*at));
    }
    eprintln!(
        "Redis blackholed: {} presses acknowledged, the other node's watcher heard each within {slowest:?}",
        acknowledged.len()
    );
    assert!(slowest <= Duration::from_secs(2), "a press reached the other node's watcher {slowest:?} late");
    for node in nodes {
        assert_eq!(metric(&client, node, "floor_bus_up").await, Some(0.0), "{} noticed", node.base);
    }

    proxy.heal();
    let last = acknowledged.last().map(|(version, _)| *version).expect("presses");
    let key = Uuid::new_v4().to_string();
    let (status, state) =
        press(&client, &second, &game, &game.path("level"), json!({"direction": "next"}), &key).await.expect("sent");
    assert_eq!((status, version(&state)), (200, last + 1), "{state}");
    for (name, watcher) in [("the owner's", &mut owners), ("the other node's", &mut followers)] {
        let heard = versions_until(watcher, last + 1, Duration::from_secs(5)).await;
        assert!(heard.is_some(), "{name} watcher reaches version {} after the partition", last + 1);
    }
}
