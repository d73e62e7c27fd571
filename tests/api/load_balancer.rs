//! Two nodes behind HAProxy, run with `deploy/haproxy.cfg` as it is (the node addresses come
//! from the environment): clients reach the API through it, and watchers over WebSocket and
//! over long-polling (whose requests must stick to the node of their session) see every
//! acknowledged version in order while presses alternate between the nodes.

use std::process::{Child, Command, Stdio};
use std::time::Duration;

use rust_socketio::TransportType;
use serde_json::json;

use crate::helpers::{Backend, spawn_app_with, test_redis_url};
use crate::live::{ready, staff};

/// HAProxy from Debian's package; outside CI a machine without it skips (in CI it fails).
pub(crate) fn haproxy() -> Option<&'static str> {
    const BINARY: &str = "/usr/sbin/haproxy";
    if std::path::Path::new(BINARY).is_file() {
        return Some(BINARY);
    }
    assert!(std::env::var_os("CI").is_none(), "HAProxy must be installed in CI (Debian's haproxy)");
    eprintln!("skipping: HAProxy is not installed and CI is not set");
    None
}

/// A running HAProxy, stopped when dropped.
pub(crate) struct Balancer(Child);

impl Drop for Balancer {
    fn drop(&mut self) {
        self.0.kill().ok();
        self.0.wait().ok();
    }
}

impl Balancer {
    /// Runs `deploy/haproxy.cfg` (checked first) in front of the nodes at `bases`; the balancer
    /// and its origin.
    pub(crate) fn start(binary: &str, bases: [&str; 2]) -> (Self, String) {
        let listen = std::net::TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()).expect("a free port");
        let config = concat!(env!("CARGO_MANIFEST_DIR"), "/deploy/haproxy.cfg");
        let env = [
            ("LISTEN", listen.to_string()),
            ("FLOOR_NODE_1", format!("127.0.0.1:{}", port_of(bases[0]))),
            ("FLOOR_NODE_2", format!("127.0.0.1:{}", port_of(bases[1]))),
        ];
        let valid =
            Command::new(binary).args(["-c", "-q", "-f", config]).envs(env.clone()).output().expect("haproxy runs");
        assert!(valid.status.success(), "{}", String::from_utf8_lossy(&valid.stderr));
        let balancer = Command::new(binary)
            .args(["-db", "-f", config])
            .envs(env)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .map(Balancer)
            .expect("haproxy starts");
        (balancer, format!("http://{listen}"))
    }
}

pub(crate) fn port_of(origin: &str) -> &str {
    origin.rsplit(':').next().unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_nodes_behind_haproxy_serve_the_api_and_watchers_over_websocket_and_polling() {
    let Some(binary) = haproxy() else { return };
    let Some(redis) = test_redis_url().await else { return };
    let Some(first) = spawn_app_with(Backend::Postgres, &[("REDIS_URL", redis)]).await else { return };
    let second = first.second_node(&[("REDIS_URL", redis)]).await;
    let listen = std::net::TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()).expect("a free port");
    let config = concat!(env!("CARGO_MANIFEST_DIR"), "/deploy/haproxy.cfg");
    let env = [
        ("LISTEN", listen.to_string()),
        ("FLOOR_NODE_1", format!("127.0.0.1:{}", port_of(&first.base))),
        ("FLOOR_NODE_2", format!("127.0.0.1:{}", port_of(&second.base))),
    ];
    let valid = Command::new(binary).args(["-c", "-q", "-f", config]).envs(env.clone()).output().expect("haproxy runs");
    assert!(valid.status.success(), "{}", String::from_utf8_lossy(&valid.stderr));
    let _balancer = Command::new(binary)
        .args(["-db", "-f", config])
        .envs(env)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .map(Balancer)
        .expect("haproxy starts");
    let origin = format!("http://{listen}");
    let mut up = false;
    for _ in 0..100 {
        if let Ok(answer) = first.client.get(format!("{origin}/api/v1/health")).send().await {
            up = answer.status() == 200;
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(up, "the API answers through the load balancer");
    let scrape = first.client.get(format!("{origin}/metrics")).send().await.expect("an answer");
    assert_eq!(scrape.status(), 404, "metrics stay inside");
    let internal = first.client.post(format!("{origin}/internal/live/{}", uuid::Uuid::nil())).send().await;
    assert_eq!(internal.expect("an answer").status(), 404, "the nodes' door stays inside");

    let game = ready(&first, "+79990007700", 770, 2).await;
    let started = game.start(&first).await;
    let token = game.club.owner.access_token.clone();
    let mut watchers = Vec::new();
    for transport in [TransportType::Websocket, TransportType::Polling] {
        let mut watcher = first.watch_at(&origin, Some(&token), transport).await;
        watcher.connected().await.expect("the namespace accepts the owner through the load balancer");
        let ack = watcher.join(game.id).await;
        assert_eq!(ack["ok"], true, "{ack}");
        watchers.push(watcher);
    }
    let joined_at = started["version"].as_i64().expect("a version");

    let mut versions = Vec::new();
    for press in 0..100 {
        let node = if press % 2 == 0 { &first } else { &second };
        let action = if press % 2 == 0 { "pause" } else { "resume" };
        let answer = staff(node, &game.club, &game.path(action), json!({})).await;
        versions.push(answer.assert_ok()["version"].as_i64().expect("a version"));
    }
    let last = *versions.last().expect("presses");
    assert_eq!(versions, ((joined_at + 1)..=last).collect::<Vec<_>>(), "each press made the next version");
    for watcher in &mut watchers {
        let seen: Vec<i64> = watcher
            .states_until(last)
            .await
            .iter()
            .filter_map(|state| state["version"].as_i64())
            .filter(|version| *version > joined_at)
            .collect();
        assert_eq!(seen, versions, "every acknowledged version, once, in order");
    }
    let live = first.client.get(format!("{origin}/api/v1/tournaments/{}/live", game.id)).send().await;
    let live: serde_json::Value = live.expect("an answer").json().await.expect("json");
    assert_eq!(live["version"], last, "a read through the load balancer is current");
    let mut actors = 0.0;
    for node in [&first, &second] {
        let text = node.client.get(format!("{}/metrics", node.base)).send().await.expect("a scrape");
        let text = text.text().await.expect("text");
        actors += text
            .lines()
            .find_map(|line| line.strip_prefix("floor_live_actors "))
            .and_then(|value| value.trim().parse::<f64>().ok())
            .expect("the gauge");
    }
    assert_eq!(actors, 1.0, "one actor across the nodes for the one running tournament");
}
