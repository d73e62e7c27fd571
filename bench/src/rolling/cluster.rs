//! The rolling run's moving parts: two floor nodes, HAProxy before them and a `redis-server`
//! of the benchmark's own; started, and restarted or killed as the events ask.

use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use anyhow::Context;
use tokio::process::{Child, Command};

use super::Settings;
use crate::server::{Server, ServerSettings, start_redis, wait_for_port, wait_until_ready};

/// The moving parts: the nodes, HAProxy and Redis.
pub(super) struct Cluster<'run> {
    /// `None` only while the event restarts it.
    pub(super) nodes: [Option<Server>; 2],
    /// The balancers, held for their `kill_on_drop`.
    _haproxies: Vec<Child>,
    redis: Option<Child>,
    settings: &'run Settings,
    /// The nodes' database, for a node started again.
    database_url: &'run str,
}

impl<'run> Cluster<'run> {
    /// Starts Redis, node 1 and node 2 (each until `/ready` answers), then the balancers, each
    /// listening before the next.
    pub(super) async fn start(settings: &'run Settings, database_url: &'run str) -> anyhow::Result<Self> {
        let redis = start_redis(settings.port + 3)?;
        wait_for_port(settings.port + 3).await?;
        let first = start_node(settings, &settings.floor, database_url, 0).await?;
        let second = start_node(settings, &settings.floor, database_url, 1).await?;
        let mut haproxies = Vec::with_capacity(settings.balancers);
        for n in 0..settings.balancers {
            haproxies.push(start_haproxy(settings, settings.balancer_port(n))?);
            wait_for_port(settings.balancer_port(n)).await?;
        }
        Ok(Self {
            nodes: [Some(first), Some(second)],
            _haproxies: haproxies,
            redis: Some(redis),
            settings,
            database_url,
        })
    }

    /// Restarts node `node` (from 0) as an operator does: SIGTERM, its exit, then started
    /// again until `/ready` answers. The ERROR lines it logged from line `log_from` on, and its
    /// exit if it was not a success.
    pub(super) async fn restart_node(&mut self, node: usize, log_from: usize) -> anyhow::Result<Vec<String>> {
        let mut error_lines = Vec::new();
        let mut server = self.nodes[node].take().context("a running node")?;
        let exit = server.terminate().await?;
        tokio::time::sleep(Duration::from_millis(100)).await;
        error_lines.extend(errors(&server.log_since(log_from), node));
        if !exit.success() {
            error_lines.push(format!("node {}: exited {exit}", node + 1));
        }
        drop(server);
        let port_node = u16::try_from(node)?;
        let binary = self.settings.restart_as.as_ref().unwrap_or(&self.settings.floor);
        self.nodes[node] = Some(start_node(self.settings, binary, self.database_url, port_node).await?);
        Ok(error_lines)
    }

    /// Kills Redis, waits `outage`, and starts it again until it listens.
    pub(super) async fn kill_redis_for(&mut self, outage: Duration) -> anyhow::Result<()> {
        if let Some(mut redis) = self.redis.take() {
            redis.kill().await.ok();
        }
        tokio::time::sleep(outage).await;
        self.redis = Some(start_redis(self.settings.port + 3)?);
        wait_for_port(self.settings.port + 3).await
    }

    /// How many lines each node has logged so far (0 for one not running).
    pub(super) fn log_lens(&self) -> Vec<usize> {
        self.nodes.iter().map(|node| node.as_ref().map_or(0, Server::log_len)).collect()
    }

    /// The ERROR lines the running nodes logged from `log_from` on, named by their node.
    pub(super) fn errors_since(&self, log_from: &[usize], restarted: Option<usize>) -> Vec<String> {
        let mut error_lines = Vec::new();
        for (node, server) in self.nodes.iter().enumerate() {
            if let Some(server) = server {
                // A node the event started again logs from its first line.
                let from = if restarted == Some(node) { 0 } else { log_from[node] };
                error_lines.extend(errors(&server.log_since(from), node));
            }
        }
        error_lines
    }
}

fn redis_url(port: u16) -> String {
    format!("redis://127.0.0.1:{port}/?protocol=resp3")
}

async fn start_node(settings: &Settings, floor: &Path, database_url: &str, node: u16) -> anyhow::Result<Server> {
    let redis = redis_url(settings.port + 3);
    let server_settings = ServerSettings {
        floor,
        port: settings.port + node,
        redis_url: Some(&redis),
        database_url: Some(database_url),
        env: &[],
    };
    let server = Server::start(&server_settings).await.with_context(|| format!("starting node {}", node + 1))?;
    wait_until_ready(settings.port + node, usize::from(node)).await?;
    Ok(server)
}

fn start_haproxy(settings: &Settings, port: u16) -> anyhow::Result<Child> {
    Command::new(&settings.haproxy)
        .arg("-f")
        .arg(&settings.haproxy_config)
        .env("LISTEN", format!("127.0.0.1:{port}"))
        .env("FLOOR_NODE_1", format!("127.0.0.1:{}", settings.port))
        .env("FLOOR_NODE_2", format!("127.0.0.1:{}", settings.port + 1))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .with_context(|| format!("starting {}", settings.haproxy.display()))
}

/// The ERROR lines among `lines`, named by their node.
fn errors(lines: &[String], node: usize) -> Vec<String> {
    lines.iter().filter(|line| line.contains(" ERROR ")).map(|line| format!("node {}: {line}", node + 1)).collect()
}
