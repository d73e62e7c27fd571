//! What an organizer's offline queue costs to replay (`floor-bench replay`): on a fresh
//! `floor serve` per database, `--tournaments` running tournaments of `--players` walk-ins
//! each; the first half get their queue of 50 commands (pauses, resumes, level steps,
//! eliminations, each with its `occurredAt`) in one `POST …/replay`, timed per request; the
//! other half get the same 50 commands sent live one at a time, timed per command and as a
//! whole: the reference the replay is compared with in the same run. Each queue is then sent
//! again and must come back `replayed` without a change.

use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use futures_util::{StreamExt, TryStreamExt};
use reqwest::Method;
use serde::Serialize;
use serde_json::{Value, json};

use crate::database::FreshDatabase;
use crate::reads::Database;
use crate::report::{ms, percentile};
use crate::server::{Server, ServerSettings, UNLIMITED_RATES};
use crate::setup::Api;

pub struct Settings {
    pub floor: std::path::PathBuf,
    pub port: u16,
    pub tournaments: usize,
    pub players: usize,
}

/// The commands of one queue.
pub const QUEUE: usize = 50;
/// Requests in flight at once while preparing.
const AT_ONCE: usize = 16;

#[derive(Serialize)]
pub struct Report {
    pub database: String,
    pub queues: usize,
    /// One `POST …/replay` of 50 commands, ms.
    pub replay_p50_ms: f64,
    pub replay_p99_ms: f64,
    pub replay_max_ms: f64,
    /// The same queue sent again (every command `replayed`), p99 ms.
    pub again_p99_ms: f64,
    /// The reference: the 50 commands sent live one at a time, the whole queue, p50 and p99 ms.
    pub live_queue_p50_ms: f64,
    pub live_queue_p99_ms: f64,
    /// One live command of them, p50 ms.
    pub live_command_p50_ms: f64,
    /// Replay p50 over the live queue's p50.
    pub replay_over_live: f64,
    /// Every replayed command applied, every one sent again `replayed`, no version moved.
    pub ok: bool,
}

pub async fn measure(settings: &Settings, database: &Database) -> anyhow::Result<Report> {
    if settings.tournaments < 2 || settings.players < 14 {
        bail!("--tournaments wants 2 or more, --players 14 or more (a queue eliminates 12)");
    }
    let fresh = FreshDatabase::make(database.admin_url()).await?;
    let server_settings = ServerSettings {
        floor: &settings.floor,
        port: settings.port,
        redis_url: None,
        database_url: fresh.url.as_deref(),
        env: &UNLIMITED_RATES,
    };
    let mut server = Server::start(&server_settings).await?;
    let measured = run(settings, &mut server, database).await;
    server.stop().await?;
    fresh.drop_it().await;
    measured
}

async fn run(settings: &Settings, server: &mut Server, database: &Database) -> anyhow::Result<Report> {
    let origin = format!("http://127.0.0.1:{}", settings.port);
    let api = Api::sign_in(server, &origin).await.context("signing the admin in")?;
    let (tournaments, seated) = prepare(&api, settings).await?;
    // The queues' moments lie between the starts and now, a millisecond apart.
    tokio::time::sleep(Duration::from_millis(200)).await;
    let first_moment = chrono::Utc::now() - chrono::Duration::milliseconds(100);

    let half = tournaments.len() / 2;
    let Replayed { mut replays, mut agains, ok } = replay(&api, &tournaments[..half], &seated, first_moment).await?;
    let Live { mut queues, mut commands } =
        send_live(&api, &tournaments[half..], &seated[half..], first_moment).await?;
    for figures in [&mut replays, &mut agains, &mut queues, &mut commands] {
        figures.sort_by(f64::total_cmp);
    }
    let at = |figures: &[f64], p: f64| percentile(figures, p).unwrap_or_default();
    Ok(Report {
        database: database.name().to_owned(),
        queues: replays.len(),
        replay_p50_ms: at(&replays, 50.0),
        replay_p99_ms: at(&replays, 99.0),
        replay_max_ms: at(&replays, 100.0),
        again_p99_ms: at(&agains, 99.0),
        live_queue_p50_ms: at(&queues, 50.0),
        live_queue_p99_ms: at(&queues, 99.0),
        live_command_p50_ms: at(&commands, 50.0),
        replay_over_live: at(&replays, 50.0) / at(&queues, 50.0).max(f64::MIN_POSITIVE),
        ok,
    })
}

/// Makes `settings.tournaments` tournaments, walks `settings.players` players into each and
/// starts them: their ids, and each one's seated registrations.
async fn prepare(api: &Api, settings: &Settings) -> anyhow::Result<(Vec<String>, Vec<Vec<String>>)> {
    let venue = api.venue().await?;
    let mut tournaments = Vec::with_capacity(settings.tournaments);
    for n in 0..settings.tournaments {
        let id = api.schedule(&venue, chrono::Duration::hours(6), settings.players, &format!("Офлайн №{n}")).await?;
        tournaments.push(id);
    }
    let walk_ins = tournaments.iter().flat_map(|id| (0..settings.players).map(move |seat| (id, seat)));
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
    let mut seated = Vec::with_capacity(tournaments.len());
    for id in &tournaments {
        let started = api.call(Method::POST, &format!("/tournaments/{id}/start"), None).await?;
        seated.push(registrations(&started));
    }
    Ok((tournaments, seated))
}

/// The replayed queues' figures (ms), and whether every replay came out right.
struct Replayed {
    /// Each queue's `POST …/replay`.
    replays: Vec<f64>,
    /// The same queue sent again.
    agains: Vec<f64>,
    /// Every command applied, every one sent again `replayed`, no version moved.
    ok: bool,
}

/// Replays the queue of each of `tournaments` (`seated` in the same order) in one request,
/// then sends it again.
async fn replay(
    api: &Api,
    tournaments: &[String],
    seated: &[Vec<String>],
    first_moment: chrono::DateTime<chrono::Utc>,
) -> anyhow::Result<Replayed> {
    let mut ok = true;
    let (mut replays, mut agains) = (Vec::new(), Vec::new());
    for (id, players) in tournaments.iter().zip(seated) {
        let body = replay_body(&queue(players), first_moment);
        let path = format!("/tournaments/{id}/replay");
        let sent = Instant::now();
        let answer = api.call(Method::POST, &path, Some(body.clone())).await?;
        replays.push(ms(sent.elapsed()));
        ok &= every(&answer, "applied");
        let sent = Instant::now();
        let again = api.call(Method::POST, &path, Some(body)).await?;
        agains.push(ms(sent.elapsed()));
        ok &= every(&again, "replayed") && again["state"]["version"] == answer["state"]["version"];
    }
    Ok(Replayed { replays, agains, ok })
}

/// The reference's figures (ms): the queues sent live one command at a time.
struct Live {
    /// Each whole queue.
    queues: Vec<f64>,
    /// Each command.
    commands: Vec<f64>,
}

/// Sends the queue of each of `tournaments` (`seated` in the same order) live, one command at
/// a time.
async fn send_live(
    api: &Api,
    tournaments: &[String],
    seated: &[Vec<String>],
    first_moment: chrono::DateTime<chrono::Utc>,
) -> anyhow::Result<Live> {
    let (mut queues, mut commands) = (Vec::new(), Vec::new());
    for (id, players) in tournaments.iter().zip(seated) {
        let sent_all = Instant::now();
        for (n, (command, body)) in queue(players).into_iter().enumerate() {
            let mut body = body;
            body["occurredAt"] = json!(moment(first_moment, n));
            let path = match command {
                "eliminate" => {
                    body["tournamentId"] = json!(id);
                    "/eliminations".to_owned()
                }
                "undo" => format!("/tournaments/{id}/eliminations/undo"),
                other => format!("/tournaments/{id}/{other}"),
            };
            let sent = Instant::now();
            api.call(Method::POST, &path, Some(body)).await?;
            commands.push(ms(sent.elapsed()));
        }
        queues.push(ms(sent_all.elapsed()));
    }
    Ok(Live { queues, commands })
}

/// The seated players' registrations, as a start answers them.
fn registrations(state: &Value) -> Vec<String> {
    let tables = state["tables"].as_array().into_iter().flatten();
    tables
        .flat_map(|table| table["seats"].as_array().into_iter().flatten())
        .filter_map(|seat| seat["registrationId"].as_str().map(str::to_owned))
        .collect()
}

/// Fifty commands of a game day made offline: twelve rounds of an elimination, a pause, a
/// resume and a level step (on and back in turn), then a pause and a resume.
fn queue(players: &[String]) -> Vec<(&'static str, Value)> {
    let mut queue = Vec::with_capacity(QUEUE);
    for (n, player) in players.iter().take(12).enumerate() {
        queue.push(("eliminate", json!({ "registrationId": player })));
        queue.push(("pause", json!({})));
        queue.push(("resume", json!({})));
        queue.push(("level", json!({ "direction": if n % 2 == 0 { "next" } else { "prev" } })));
    }
    queue.push(("pause", json!({})));
    queue.push(("resume", json!({})));
    queue
}

/// The moment of the `n`th command of a queue.
fn moment(first: chrono::DateTime<chrono::Utc>, n: usize) -> String {
    (first + chrono::Duration::milliseconds(n as i64)).to_rfc3339()
}

fn replay_body(queue: &[(&str, Value)], first: chrono::DateTime<chrono::Utc>) -> Value {
    let commands: Vec<Value> = queue
        .iter()
        .enumerate()
        .map(|(n, (command, body))| {
            json!({ "command": command, "body": body, "occurredAt": moment(first, n),
                "idempotencyKey": uuid::Uuid::new_v4().to_string() })
        })
        .collect();
    json!({ "commands": commands })
}

/// Whether every command of a replay's answer came to `outcome`.
fn every(answer: &Value, outcome: &str) -> bool {
    answer["results"]
        .as_array()
        .is_some_and(|results| results.len() == QUEUE && results.iter().all(|result| result["outcome"] == outcome))
}

impl Report {
    pub fn text(&self) -> String {
        format!(
            "{}: {} queues of {QUEUE} replayed: p50 {:.1} ms, p99 {:.1} ms, max {:.1} ms; sent again p99 {:.1} ms\n\
             {}: the same {QUEUE} sent live one at a time: queue p50 {:.1} ms, p99 {:.1} ms (a command p50 {:.2} ms); \
             replay / live {:.3}; {}\n",
            self.database,
            self.queues,
            self.replay_p50_ms,
            self.replay_p99_ms,
            self.replay_max_ms,
            self.again_p99_ms,
            self.database,
            self.live_queue_p50_ms,
            self.live_queue_p99_ms,
            self.live_command_p50_ms,
            self.replay_over_live,
            if self.ok { "every command applied once, none again" } else { "NOT every command applied exactly once" },
        )
    }
}
