//! What a tournament costs a node's memory while it waits (`floor-bench cost`): a fresh
//! `floor serve` on SQLite, `--running` tournaments of `--players` walk-ins each made, then
//! started (their actors live, their clocks run), and `--registering` tournaments in
//! registration, `--places` signed-in players registering into each (their desks live). The
//! server's RSS is read before and after each step: the difference over the count is what one
//! tournament holds. The rows are written before the first reading of a step, so the database's
//! own page cache is not counted as the tournaments'.

use std::time::Duration;

use anyhow::Context;
use futures_util::{StreamExt, TryStreamExt};
use reqwest::Method;
use serde::Serialize;
use serde_json::json;

use crate::server::{Server, ServerSettings, UNLIMITED_RATES};
use crate::setup::{Api, Venue};

pub struct Settings {
    pub floor: std::path::PathBuf,
    pub port: u16,
    pub running: usize,
    pub players: usize,
    pub registering: usize,
    pub places: usize,
}

#[derive(Serialize)]
pub struct Report {
    pub running: usize,
    pub players: usize,
    pub registering: usize,
    pub places: usize,
    /// RSS with the running tournaments made but not started, KiB.
    pub before_start_kib: u64,
    /// RSS with them started, KiB.
    pub started_kib: u64,
    /// What one running tournament holds, KiB.
    pub per_running_kib: f64,
    /// RSS with the registering tournaments made, before any registration, KiB.
    pub before_registrations_kib: u64,
    /// RSS right after the registrations, every desk still alive, KiB.
    pub registered_kib: u64,
    /// What one tournament in registration holds while its desk lives, KiB.
    pub per_registering_kib: f64,
    /// Desks open right after the registrations (`floor_registration_desks`).
    pub desks_open: Option<u64>,
    /// RSS once the desks have sat idle past their end, KiB (the allocator may keep what
    /// was freed).
    pub idle_kib: u64,
    /// Desks open then: none is held once idle.
    pub desks_idle: Option<u64>,
}

/// Requests in flight at once while preparing.
const AT_ONCE: usize = 32;
/// Longer than a registration desk waits for a change before it ends.
const DESKS_END_WITHIN: Duration = Duration::from_secs(35);

pub async fn measure(settings: &Settings) -> anyhow::Result<Report> {
    let server_settings = ServerSettings {
        floor: &settings.floor,
        port: settings.port,
        redis_url: None,
        database_url: None,
        env: &UNLIMITED_RATES,
    };
    let mut server = Server::start(&server_settings).await?;
    let origin = format!("http://127.0.0.1:{}", settings.port);
    let api = Api::sign_in(&mut server, &origin).await.context("signing the admin in")?;
    let venue = api.venue().await?;

    // Running tournaments: made and filled first, then started, RSS read between.
    let running = make_running(&api, &venue, settings).await?;
    let before_start_kib = settled_rss(&server).await?;
    start_all(&api, &running).await?;
    let started_kib = settled_rss(&server).await?;

    // Tournaments in registration: made, then every player registers into each.
    let phones: Vec<String> = (0..settings.places).map(|n| format!("+7991{n:07}")).collect();
    let tokens = api.sign_in_players(&mut server, &phones).await.context("signing the players in")?;
    let registering = make_registering(&api, &venue, settings).await?;
    let before_registrations_kib = settled_rss(&server).await?;
    register_everyone(&api, &tokens, &registering).await?;
    let registered_kib = settled_rss(&server).await?;
    let desks_open = desks(&origin).await?;
    tokio::time::sleep(DESKS_END_WITHIN).await;
    let idle_kib = settled_rss(&server).await?;
    let desks_idle = desks(&origin).await?;
    server.stop().await?;

    let per = |after: u64, before: u64, count: usize| after.saturating_sub(before) as f64 / count.max(1) as f64;
    Ok(Report {
        running: settings.running,
        players: settings.players,
        registering: settings.registering,
        places: settings.places,
        before_start_kib,
        started_kib,
        per_running_kib: per(started_kib, before_start_kib, settings.running),
        before_registrations_kib,
        registered_kib,
        per_registering_kib: per(registered_kib, before_registrations_kib, settings.registering),
        desks_open,
        idle_kib,
        desks_idle,
    })
}

/// Makes `settings.running` tournaments at `venue` and walks `settings.players` players into
/// each: their ids.
async fn make_running(api: &Api, venue: &Venue, settings: &Settings) -> anyhow::Result<Vec<String>> {
    let mut running = Vec::with_capacity(settings.running);
    for n in 0..settings.running {
        running.push(api.schedule(venue, chrono::Duration::hours(6), settings.players, &format!("Стол №{n}")).await?);
    }
    let walk_ins = running.iter().flat_map(|id| (0..settings.players).map(move |seat| (id, seat)));
    futures_util::stream::iter(walk_ins.enumerate())
        .map(|(n, (id, _))| {
            let player = json!({ "phone": format!("+7990{n:07}"), "name": format!("Игрок {n}") });
            let path = format!("/tournaments/{id}/walk-in");
            async move { api.call(Method::POST, &path, Some(player)).await }
        })
        .buffer_unordered(AT_ONCE)
        .try_for_each(|_| std::future::ready(Ok(())))
        .await
        .context("walking the players in")?;
    Ok(running)
}

/// Starts the `running` tournaments.
async fn start_all(api: &Api, running: &[String]) -> anyhow::Result<()> {
    futures_util::stream::iter(running)
        .map(|id| {
            let path = format!("/tournaments/{id}/start");
            async move { api.call(Method::POST, &path, None).await }
        })
        .buffer_unordered(AT_ONCE)
        .try_for_each(|_| std::future::ready(Ok(())))
        .await
        .context("starting the tournaments")
}

/// Makes `settings.registering` tournaments at `venue` open for registration, of
/// `settings.places` places each: their ids.
async fn make_registering(api: &Api, venue: &Venue, settings: &Settings) -> anyhow::Result<Vec<String>> {
    let mut registering = Vec::with_capacity(settings.registering);
    for n in 0..settings.registering {
        let starts_in = chrono::Duration::days(2);
        registering.push(api.schedule(venue, starts_in, settings.places, &format!("Отбор №{n}")).await?);
    }
    Ok(registering)
}

/// Every player (signed in with `tokens`) registers into each of the `registering` tournaments.
async fn register_everyone(api: &Api, tokens: &[String], registering: &[String]) -> anyhow::Result<()> {
    let players: Vec<Api> = tokens.iter().map(|token| api.as_holder_of(token)).collect();
    let registrations = registering.iter().flat_map(|id| players.iter().map(move |player| (id, player)));
    futures_util::stream::iter(registrations)
        .map(|(id, player)| {
            let path = format!("/tournaments/{id}/register");
            async move { player.call(Method::POST, &path, Some(json!({}))).await }
        })
        .buffer_unordered(AT_ONCE)
        .try_for_each(|_| std::future::ready(Ok(())))
        .await
        .context("registering the players")
}

/// The registration desks open on the server, read off `/metrics` (`None` from a build
/// without desks).
async fn desks(origin: &str) -> anyhow::Result<Option<u64>> {
    let text = reqwest::get(format!("{origin}/metrics")).await?.error_for_status()?.text().await?;
    Ok(text.lines().find_map(|line| line.strip_prefix("floor_registration_desks ")?.trim().parse().ok()))
}

/// The server's RSS once the work just asked of it has settled (its tasks finished).
async fn settled_rss(server: &Server) -> anyhow::Result<u64> {
    tokio::time::sleep(Duration::from_secs(2)).await;
    server.rss_kib()
}

impl Report {
    pub fn text(&self) -> String {
        format!(
            "running: {} tournaments of {} players: RSS {} -> {} KiB, {:.1} KiB each\n\
             registering: {} tournaments, {} places taken in each: RSS {} -> {} KiB, {:.1} KiB each, \
             {} desks open; {} KiB and {} desks open once idle\n",
            self.running,
            self.players,
            self.before_start_kib,
            self.started_kib,
            self.per_running_kib,
            self.registering,
            self.places,
            self.before_registrations_kib,
            self.registered_kib,
            self.per_registering_kib,
            shown(self.desks_open),
            self.idle_kib,
            shown(self.desks_idle),
        )
    }
}

fn shown(count: Option<u64>) -> String {
    count.map_or_else(|| "-".to_owned(), |count| count.to_string())
}
