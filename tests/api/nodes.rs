//! `floor serve` processes as an operator runs them, for the tests that stop, kill or starve
//! one: a node on a given database (and Redis, for several nodes), and the owner's presses and
//! the metrics read from outside.

use std::path::Path;
use std::process::Child;
use std::time::Duration;

use serde_json::Value;

use crate::cli::floor;
use crate::helpers::{Reply, TEST_ENV};
use crate::live::Ready;

/// A `floor serve` process, killed when dropped.
pub(crate) struct Node {
    pub child: Child,
    pub base: String,
}

impl Drop for Node {
    fn drop(&mut self) {
        self.child.kill().ok();
        self.child.wait().ok();
    }
}

impl Node {
    /// Starts a node on `database_url` (and `redis`, one of several nodes), its log in
    /// `logs/<name>.log`, and waits until it is ready.
    pub async fn start(database_url: &str, redis: Option<&str>, logs: &Path, name: &str) -> Self {
        Self::start_with(database_url, redis, logs, name, &[]).await
    }

    /// [`Node::start`] with `extra` variables in its environment, over the ones it sets.
    pub async fn start_with(
        database_url: &str,
        redis: Option<&str>,
        logs: &Path,
        name: &str,
        extra: &[(&str, &str)],
    ) -> Self {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|listener| listener.local_addr())
            .map(|address| address.port())
            .expect("a free port");
        Self::start_on(port, database_url, redis, logs, name, extra).await
    }

    /// [`Node::start_with`] on `port`: a node started again where the load balancer expects
    /// it, as a rolling deploy does.
    pub async fn start_on(
        port: u16,
        database_url: &str,
        redis: Option<&str>,
        logs: &Path,
        name: &str,
        extra: &[(&str, &str)],
    ) -> Self {
        let base = format!("http://127.0.0.1:{port}");
        let log = std::fs::File::create(logs.join(format!("{name}.log"))).expect("a log file");
        let mut command = floor();
        command.arg("serve").envs(TEST_ENV).envs([
            ("PORT", port.to_string().as_str()),
            ("DATABASE_URL", database_url),
            ("NODE_URL", &base),
            ("RUST_LOG", "info"),
        ]);
        if let Some(redis) = redis {
            command.env("REDIS_URL", redis);
        }
        command.envs(extra.iter().copied());
        let child =
            command.stdout(log.try_clone().expect("the log file again")).stderr(log).spawn().expect("floor starts");
        let node = Self { child, base };
        let client = reqwest::Client::new();
        for _ in 0..300 {
            if let Ok(answer) = client.get(format!("{}/ready", node.base)).send().await
                && answer.status() == 200
            {
                return node;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        panic!("node {name} did not become ready; see its log");
    }

    /// Sends SIGTERM, as a container runtime does.
    pub fn terminate(&self) {
        let status = std::process::Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status()
            .expect("kill runs");
        assert!(status.success());
    }

    /// The port the node listens on.
    pub fn port(&self) -> u16 {
        crate::load_balancer::port_of(&self.base).parse().expect("a port in the base")
    }

    /// Waits for the process to exit, `within` at most since `since` (a signal): its status.
    pub async fn exit_within(&mut self, since: std::time::Instant, within: Duration) -> std::process::ExitStatus {
        loop {
            if let Some(exit) = self.child.try_wait().expect("a status") {
                return exit;
            }
            assert!(since.elapsed() < within, "the node exits within {within:?}");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// The address of `path` of the API on this node.
    pub fn url(&self, path: &str) -> String {
        format!("{}/api/v1{path}", self.base)
    }
}

/// The value of the gauge `floor_live_actors` on a node, `None` when it does not answer.
pub(crate) async fn live_actors(client: &reqwest::Client, node: &Node) -> Option<f64> {
    metric(client, node, "floor_live_actors").await
}

/// The value of a metric without labels on a node, `None` when it does not answer.
pub(crate) async fn metric(client: &reqwest::Client, node: &Node, name: &str) -> Option<f64> {
    let text = client.get(format!("{}/metrics", node.base)).send().await.ok()?.text().await.ok()?;
    let prefix = format!("{name} ");
    text.lines().find_map(|line| line.strip_prefix(prefix.as_str())).and_then(|value| value.trim().parse().ok())
}

/// A command of the club's owner on `node`, with `Idempotency-Key: key`: the whole answer, or
/// the transport's error.
pub(crate) async fn send_press(
    client: &reqwest::Client,
    node: &Node,
    game: &Ready,
    path: &str,
    body: Value,
    key: &str,
) -> Result<Reply, reqwest::Error> {
    send_press_with(client, node, game, path, body, key, &[]).await
}

/// [`send_press`] with `headers` besides (a `traceparent`, say).
pub(crate) async fn send_press_with(
    client: &reqwest::Client,
    node: &Node,
    game: &Ready,
    path: &str,
    body: Value,
    key: &str,
    headers: &[(&str, &str)],
) -> Result<Reply, reqwest::Error> {
    let mut request =
        client.post(node.url(path)).bearer_auth(&game.club.owner.access_token).header("idempotency-key", key);
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    Ok(Reply::read(request.json(&body).send().await?).await)
}

/// [`send_press`]: the status and body.
pub(crate) async fn press(
    client: &reqwest::Client,
    node: &Node,
    game: &Ready,
    path: &str,
    body: Value,
    key: &str,
) -> Result<(u16, Value), reqwest::Error> {
    send_press(client, node, game, path, body, key).await.map(|reply| (reply.status.as_u16(), reply.body))
}
