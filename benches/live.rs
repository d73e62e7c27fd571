//! Live engine benchmark: a running tournament watched by many Socket.IO clients. Measures
//! how long a club's press takes to answer over HTTP, and how long until every watcher has
//! the new LiveState. Run: `cargo bench --bench live` (`WATCHERS`, `PRESSES` to change the
//! load; the server runs in this process on a fresh SQLite file).

use std::sync::Arc;
use std::sync::atomic::{AtomicI64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use floor::{Application, Config};
use futures::FutureExt;
use rust_socketio::asynchronous::ClientBuilder;
use rust_socketio::{Payload, TransportType};
use serde_json::{Value, json};
use tokio::sync::Notify;

fn setting(name: &str, default: usize) -> usize {
    std::env::var(name).ok().and_then(|value| value.parse().ok()).unwrap_or(default)
}

struct Bench {
    base: String,
    http: reqwest::Client,
    outbox: floor::auth::delivery::FakeOutbox,
}

impl Bench {
    async fn post(&self, path: &str, token: Option<&str>, body: Value) -> Value {
        let mut request = self.http.post(format!("{}/api/v1{path}", self.base)).json(&body);
        if let Some(token) = token {
            request = request.bearer_auth(token);
        }
        let response = request.send().await.expect("the server answers");
        assert!(response.status().is_success(), "{path}: {}", response.status());
        response.json().await.unwrap_or(Value::Null)
    }

    /// Signs a phone in through the fake code channel; returns (user id, access token).
    async fn sign_in(&self, phone: &str) -> String {
        self.post("/auth/otp/request", None, json!({"phone": phone})).await;
        let code = self.outbox.last_code(phone).expect("a code");
        let session = self.post("/auth/otp/verify", None, json!({"phone": phone, "code": code})).await;
        session["accessToken"].as_str().expect("a token").to_owned()
    }
}

fn percentile(samples: &mut [Duration], p: f64) -> Duration {
    samples.sort();
    let index = ((samples.len() as f64 - 1.0) * p).round() as usize;
    samples.get(index).copied().unwrap_or_default()
}

#[tokio::main]
async fn main() {
    let watchers = setting("WATCHERS", 500);
    let presses = setting("PRESSES", 50);
    let folder = tempfile::tempdir().expect("a temporary folder");
    let database_url = format!("sqlite://{}?mode=rwc", folder.path().join("bench.db").display());
    let vars = [
        ("APP_ENV", "test".to_owned()),
        ("PORT", "0".to_owned()),
        ("JWT_SECRET", "bench-secret-bench-secret-bench-secret".to_owned()),
        ("PLATFORM_ADMIN_PHONES", "+70000000001".to_owned()),
        ("OTP_CHANNELS", "fake".to_owned()),
        ("RUST_LOG", "warn".to_owned()),
        ("DATABASE_URL", database_url),
    ];
    let config = Config::from_lookup(|name| vars.iter().find(|(key, _)| *key == name).map(|(_, value)| value.clone()))
        .expect("a configuration");
    let application = Application::build(config).await.expect("the server builds");
    let base = format!("http://127.0.0.1:{}", application.port());
    let outbox = application.state().sign_in.codes.fake_outbox().expect("the fake channel");
    tokio::spawn(application.run_until(std::future::pending()));
    let bench = Bench { base: base.clone(), http: reqwest::Client::new(), outbox };

    // A club, a tournament of 20 checked-in players, started.
    let admin = bench.sign_in("+70000000001").await;
    let club =
        bench.post("/admin/organizers", Some(&admin), json!({"name": "Bench", "ownerPhone": "+79000000000"})).await;
    let club_id = club["id"].as_str().expect("a club").to_owned();
    let owner = bench.sign_in("+79000000000").await;
    let location = bench
        .post(
            &format!("/organizers/{club_id}/locations"),
            Some(&owner),
            json!({"name": "Hall", "citySlug": "moscow", "address": "1", "timezone": "Europe/Moscow", "lat": 55.7, "lng": 37.6}),
        )
        .await;
    let tournament = bench
        .post(
            &format!("/organizers/{club_id}/tournaments"),
            Some(&owner),
            json!({
                "locationId": location["id"], "blindTemplateId": "f1000000-0000-4000-8000-000000000001",
                "type": "mtt", "startsAt": (chrono::Utc::now() + chrono::Duration::days(1)).to_rfc3339(),
                "capacity": 100, "translations": {"ru": {"title": "Бенчмарк"}},
            }),
        )
        .await;
    let id = tournament["id"].as_str().expect("a tournament").to_owned();
    for n in 0..20 {
        let player = bench.sign_in(&format!("+7900100{n:04}")).await;
        let registration = bench.post(&format!("/tournaments/{id}/register"), Some(&player), json!({})).await;
        bench
            .post(&format!("/tournaments/{id}/check-in"), Some(&owner), json!({"registrationId": registration["id"]}))
            .await;
    }
    let started = bench.post(&format!("/tournaments/{id}/start"), Some(&owner), json!({})).await;
    let mut version = started["version"].as_i64().expect("a version");

    // The watchers: each counts as having a version once its `state` arrives.
    let viewer = bench.sign_in("+79002000000").await;
    let target = Arc::new(AtomicI64::new(i64::MAX));
    let reached = Arc::new(AtomicUsize::new(0));
    let all_reached = Arc::new(Notify::new());
    let mut clients = Vec::with_capacity(watchers);
    let connecting = Instant::now();
    for _ in 0..watchers {
        let (target, reached, all_reached) = (target.clone(), reached.clone(), all_reached.clone());
        let client = ClientBuilder::new(base.clone())
            .namespace("/live")
            .transport_type(TransportType::Websocket)
            .auth(json!({"token": viewer}))
            .on("state", move |payload, _| {
                if let Payload::Text(values) = payload {
                    let version = values.first().and_then(|state| state["version"].as_i64()).unwrap_or(0);
                    if version >= target.load(Ordering::SeqCst)
                        && reached.fetch_add(1, Ordering::SeqCst) + 1 == watchers
                    {
                        all_reached.notify_waiters();
                    }
                }
                async {}.boxed()
            })
            .connect()
            .await
            .expect("a watcher connects");
        clients.push(client);
    }
    // Let every namespace connection settle, then join the room.
    tokio::time::sleep(Duration::from_millis(500)).await;
    for client in &clients {
        client.emit("join", json!({"tournamentId": id})).await.expect("join is sent");
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    println!("{watchers} watchers connected and joined in {:?}", connecting.elapsed());

    let mut answers = Vec::with_capacity(presses);
    let mut fan_outs = Vec::with_capacity(presses);
    for n in 0..presses {
        let action = if n % 2 == 0 { "pause" } else { "resume" };
        // The broadcast may reach a watcher before the answer reaches us: aim first.
        version += 1;
        reached.store(0, Ordering::SeqCst);
        target.store(version, Ordering::SeqCst);
        let pressed = Instant::now();
        let http =
            bench.http.post(format!("{base}/api/v1/tournaments/{id}/{action}")).bearer_auth(&owner).json(&json!({}));
        let response = http.send().await.expect("an answer");
        let answered = pressed.elapsed();
        let state: Value = response.json().await.expect("a LiveState");
        assert_eq!(state["version"].as_i64(), Some(version), "each press is one change");
        // Waits for the round's own count: no wake-up left over from an earlier round counts.
        let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
        loop {
            let notified = all_reached.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if reached.load(Ordering::SeqCst) >= watchers {
                break;
            }
            if tokio::time::timeout_at(deadline, notified).await.is_err() {
                println!(
                    "press {n}: only {} of {watchers} watchers heard version {version}",
                    reached.load(Ordering::SeqCst)
                );
                break;
            }
        }
        fan_outs.push(pressed.elapsed());
        answers.push(answered);
    }
    println!(
        "press answered over HTTP: p50 {:?}, p95 {:?}, max {:?}",
        percentile(&mut answers, 0.5),
        percentile(&mut answers, 0.95),
        percentile(&mut answers, 1.0)
    );
    println!(
        "every one of {watchers} watchers has the new LiveState: p50 {:?}, p95 {:?}, max {:?}",
        percentile(&mut fan_outs, 0.5),
        percentile(&mut fan_outs, 0.95),
        percentile(&mut fan_outs, 1.0)
    );
}
