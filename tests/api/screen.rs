//! The venue screen and the share page, driven in headless Chromium (Debian's `chromium`)
//! against a real server: what a TV in the room and a phone opening a shared link show.
//! Screenshots go to `$CARGO_TARGET_TMPDIR/screenshots/` (under the target folder).

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use chromiumoxide::cdp::browser_protocol::emulation::SetDeviceMetricsOverrideParams;
use chromiumoxide::page::ScreenshotParams;
use chromiumoxide::{Browser, BrowserConfig, Page};
use futures::StreamExt;
use serde_json::{Value, json};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinHandle;

use crate::helpers::{Backend, spawn_app};
use crate::live::{ready, staff};

const CHROMIUM: &str = "/usr/bin/chromium";

/// A headless Chromium with its own profile, closed when dropped.
pub(crate) struct Chromium {
    pub(crate) browser: Browser,
    handler: JoinHandle<()>,
    _profile: tempfile::TempDir,
}

impl Drop for Chromium {
    fn drop(&mut self) {
        self.handler.abort();
    }
}

/// Chromium from Debian's package; outside CI a machine without it skips (in CI it fails). It
/// resolves no name but this machine's, so a page that reaches for another host shows it.
pub(crate) async fn chromium() -> Option<Chromium> {
    if !Path::new(CHROMIUM).is_file() {
        assert!(std::env::var_os("CI").is_none(), "Chromium must be installed in CI (Debian's chromium)");
        eprintln!("skipping: Chromium is not installed and CI is not set");
        return None;
    }
    let profile = tempfile::tempdir().expect("a profile folder");
    let config = BrowserConfig::builder()
        .chrome_executable(CHROMIUM)
        .new_headless_mode()
        .no_sandbox()
        .user_data_dir(profile.path())
        .window_size(1920, 1080)
        .viewport(None)
        .arg("--disable-gpu")
        .arg("--disable-dev-shm-usage")
        .arg("--host-resolver-rules=MAP * ~NOTFOUND , EXCLUDE 127.0.0.1")
        .build()
        .expect("a browser configuration");
    let (browser, mut events) = Browser::launch(config).await.expect("Chromium starts");
    let handler = tokio::spawn(async move { while events.next().await.is_some() {} });
    Some(Chromium { browser, handler, _profile: profile })
}

impl Chromium {
    async fn open(&self, url: &str) -> Page {
        let page = self.browser.new_page(url).await.expect("the page opens");
        page.wait_for_navigation().await.expect("the page loads");
        page
    }
}

/// A JavaScript expression's value on `page` (a promise's, once it settles).
pub(crate) async fn eval(page: &Page, expression: &str) -> Value {
    page.evaluate(expression).await.expect("evaluates").into_value().unwrap_or(Value::Null)
}

/// The text of element `id`, with the spaces of Russian number formatting made plain.
async fn text(page: &Page, id: &str) -> String {
    let value = eval(page, &format!("document.getElementById('{id}').textContent")).await;
    value.as_str().unwrap_or_default().replace(['\u{a0}', '\u{202f}'], " ")
}

/// Waits up to `within` for element `id` to read `expected`; what it read last otherwise.
async fn shows(page: &Page, id: &str, expected: &str, within: Duration) -> Result<(), String> {
    let since = Instant::now();
    loop {
        let now = text(page, id).await;
        if now == expected {
            return Ok(());
        }
        if since.elapsed() > within {
            return Err(now);
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

fn blinds(level: &Value) -> String {
    let group = |n: i64| {
        let digits = n.to_string();
        let mut out = String::new();
        for (i, c) in digits.chars().enumerate() {
            if i > 0 && (digits.len() - i).is_multiple_of(3) {
                out.push(' ');
            }
            out.push(c);
        }
        out
    };
    let (small, big) = (level["smallBlind"].as_i64().expect("a blind"), level["bigBlind"].as_i64().expect("a blind"));
    format!("{} / {}", group(small), group(big))
}

pub(crate) fn screenshot_path(name: &str) -> PathBuf {
    let folder = Path::new(env!("CARGO_TARGET_TMPDIR")).join("screenshots");
    std::fs::create_dir_all(&folder).expect("the screenshots folder");
    folder.join(name)
}

async fn screenshot(page: &Page, width: i64, height: i64, mobile: bool, name: &str) {
    page.execute(SetDeviceMetricsOverrideParams::new(width, height, 1.0, mobile)).await.expect("the size is set");
    tokio::time::sleep(Duration::from_millis(300)).await;
    page.save_screenshot(ScreenshotParams::builder().build(), screenshot_path(name)).await.expect("a screenshot");
}

/// A TCP relay between the browser and the server, which the test can cut: to the page, the
/// server is gone.
struct Relay {
    origin: String,
    task: JoinHandle<()>,
}

impl Relay {
    async fn to(server: &str) -> Self {
        let target = server.trim_start_matches("http://").to_owned();
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("a port");
        let origin = format!("http://{}", listener.local_addr().expect("an address"));
        let task = tokio::spawn(async move {
            let mut relays = tokio::task::JoinSet::new();
            while let Ok((mut inbound, _)) = listener.accept().await {
                let target = target.clone();
                relays.spawn(async move {
                    if let Ok(mut outbound) = TcpStream::connect(&target).await {
                        let _ = tokio::io::copy_bidirectional(&mut inbound, &mut outbound).await;
                    }
                });
            }
        });
        Self { origin, task }
    }

    /// Stops listening and drops every relayed connection.
    fn cut(&self) {
        self.task.abort();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_venue_screen_follows_a_game_day_and_says_when_it_lost_the_server() {
    let Some(browser) = chromium().await else { return };
    let Some(app) = spawn_app(Backend::Sqlite).await else { return };
    let game = ready(&app, "+79990009100", 910, 12).await;
    let started = game.start(&app).await;
    let levels = started["clock"]["levels"].as_array().expect("levels").clone();
    let relay = Relay::to(&app.base).await;

    let page = browser.open(&format!("{}/screen/{}", relay.origin, game.id)).await;
    shows(&page, "blinds", &blinds(&levels[0]), Duration::from_secs(5)).await.expect("the first level's blinds");
    shows(&page, "players", "12 / 12", Duration::from_secs(1)).await.expect("players left / entrants");
    shows(&page, "title", "Турнир выходного дня", Duration::from_secs(5)).await.expect("the title");
    assert_eq!(text(&page, "segment").await, "Уровень 1");
    let timer = text(&page, "timer").await;
    assert!(timer.len() == 5 && timer.as_bytes()[2] == b':', "a running countdown: {timer}");
    eval(&page, "document.getElementById('tables').click()").await;
    screenshot(&page, 1920, 1080, false, "screen-1920x1080.png").await;

    // A level press and an elimination over the API show within 3 s; the press's `level`
    // event reaches the page (its chime) through the screen's event stream.
    let pressed = staff(&app, &game.club, &game.path("level"), json!({"direction": "next"})).await;
    let pressed_version = pressed.assert_ok()["version"].to_string();
    let since = Instant::now();
    while eval(&page, "document.getElementById('screen').dataset.levelHeard || ''").await != json!(pressed_version) {
        assert!(since.elapsed() < Duration::from_secs(3), "the level event reaches the screen within 3 s");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let out = json!({"tournamentId": game.id, "registrationId": game.registrations[0]});
    staff(&app, &game.club, "/eliminations", out).await.assert_ok();
    let next = levels.iter().skip(1).find(|segment| segment["kind"] == "level").expect("a second level");
    let expected = if levels[1]["kind"] == "break" { "Перерыв".to_owned() } else { blinds(next) };
    shows(&page, "blinds", &expected, Duration::from_secs(3)).await.expect("the new level within 3 s");
    shows(&page, "players", "11 / 12", Duration::from_secs(3)).await.expect("the elimination within 3 s");
    let outs = text(&page, "eliminations").await;
    assert!(outs.starts_with("12."), "the latest elimination with its place: {outs}");
    screenshot(&page, 390, 844, true, "screen-390x844.png").await;

    // A paused clock says so and stands still.
    staff(&app, &game.club, &game.path("pause"), json!({})).await.assert_ok();
    let segment = text(&page, "segment").await;
    let paused = segment.split(" · ").next().unwrap_or_default().to_owned() + " · пауза";
    shows(&page, "segment", &paused, Duration::from_secs(3)).await.expect("the pause within 3 s");
    let frozen = text(&page, "timer").await;
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert_eq!(text(&page, "timer").await, frozen, "a paused clock stands still");
    screenshot(&page, 1920, 1080, false, "screen-paused-1920x1080.png").await;

    // The club's announcement shows within the screen's round of 3 s.
    let said = "Перерыв 10 минут";
    let announced = staff(&app, &game.club, &game.path("announcements"), json!({"text": said})).await;
    assert_eq!(announced.status.as_u16(), 201, "{announced:?}");
    shows(&page, "announcement", said, Duration::from_secs(5)).await.expect("the announcement within 5 s");
    assert_eq!(eval(&page, "document.getElementById('announcement').hidden").await, Value::Bool(false));
    screenshot(&page, 1920, 1080, false, "screen-announcement-1920x1080.png").await;

    // The server goes away: within 10 s (and a poll) the screen says so and shows no clock.
    relay.cut();
    let offline = eval(&page, "document.getElementById('offline').hidden").await;
    assert_eq!(offline, Value::Bool(true), "connected until now");
    let since = Instant::now();
    loop {
        if eval(&page, "document.getElementById('offline').hidden").await == Value::Bool(false) {
            break;
        }
        assert!(since.elapsed() < Duration::from_secs(15), "the screen says it lost the server");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    assert!(since.elapsed() >= Duration::from_secs(8), "not before the silence lasted ({:?})", since.elapsed());
    assert_eq!(text(&page, "offline").await, "нет связи");
    assert_eq!(text(&page, "timer").await, "--:--", "a stale clock is not shown running");
    screenshot(&page, 1920, 1080, false, "screen-offline-1920x1080.png").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_segments_note_shows_under_its_blinds() {
    let Some(browser) = chromium().await else { return };
    let Some(app) = spawn_app(Backend::Sqlite).await else { return };
    let game = ready(&app, "+79990009600", 960, 2).await;
    let template = app
        .post(
            &format!("/organizers/{}/blind-templates", game.club.id),
            Some(&game.club.owner.access_token),
            json!({"name": "Colour-up", "startingStack": 10000, "levels": [
                {"kind": "level", "durationMin": 20, "smallBlind": 100, "bigBlind": 200, "note": "Снимаем фишки по 25"},
                {"kind": "level", "durationMin": 20, "smallBlind": 200, "bigBlind": 400},
            ]}),
        )
        .await;
    let template_id = template.assert_ok()["id"].clone();
    let path = format!("/tournaments/{}", game.id);
    app.patch(&path, Some(&game.club.owner.access_token), json!({"blindTemplateId": template_id})).await.assert_ok();
    game.start(&app).await;

    let page = browser.open(&format!("{}/screen/{}", app.base, game.id)).await;
    shows(&page, "note", "Снимаем фишки по 25", Duration::from_secs(5)).await.expect("the first level's note");
    staff(&app, &game.club, &game.path("level"), json!({"direction": "next"})).await.assert_ok();
    shows(&page, "note", "", Duration::from_secs(3)).await.expect("a level without a note shows none");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_screen_before_the_start_shows_the_start_and_the_structure() {
    let Some(browser) = chromium().await else { return };
    let Some(app) = spawn_app(Backend::Sqlite).await else { return };
    let game = ready(&app, "+79990009200", 920, 3).await;
    let page = browser.open(&format!("{}/screen/{}", app.base, game.id)).await;
    shows(&page, "registered", "Зарегистрировано 3 из 100", Duration::from_secs(5)).await.expect("the seats");
    let rows = eval(&page, "document.querySelectorAll('#structure tr').length").await;
    assert!(rows.as_i64().unwrap_or_default() > 1, "the structure: {rows}");
    assert_eq!(eval(&page, "document.getElementById('live').hidden").await, Value::Bool(true));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_share_page_shows_the_tournament_card_with_open_graph_tags() {
    let Some(browser) = chromium().await else { return };
    let Some(app) = spawn_app(Backend::Sqlite).await else { return };
    let game = ready(&app, "+79990009300", 930, 2).await;
    let detail = app.get(&format!("/tournaments/{}", game.id), None).await;
    let share_url = detail.assert_ok()["shareUrl"].as_str().expect("a share URL").to_owned();
    assert!(share_url.ends_with(&format!("/t/{}", game.id)), "{share_url}");
    let page = browser.open(&format!("{}/t/{}", app.base, game.id)).await;
    assert_eq!(eval(&page, "document.querySelector('h1').textContent").await, "Турнир выходного дня");
    let og = eval(&page, "document.querySelector('meta[property=\"og:title\"]').content").await;
    assert_eq!(og, "Турнир выходного дня");
    let body = eval(&page, "document.body.innerText").await;
    let body = body.as_str().unwrap_or_default();
    for expected in ["Идёт регистрация", "Aces", "Мест занято 2 из 100", "Структура"]
    {
        assert!(body.contains(expected), "{expected} on the page: {body}");
    }
    page.execute(SetDeviceMetricsOverrideParams::new(390, 844, 1.0, true)).await.expect("a phone");
    page.save_screenshot(ScreenshotParams::builder().build(), screenshot_path("share-390x844.png"))
        .await
        .expect("a screenshot");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_pages_come_from_the_binary_and_unknown_tournaments_are_404() {
    let Some(app) = spawn_app(Backend::Sqlite).await else { return };
    let club = app.create_club("Aces", "+79990009400").await;
    let id = app.create_tournament(&club, 20, chrono::Duration::days(1)).await;
    let detail = app.get(&format!("/tournaments/{id}"), None).await;
    let screen_url = detail.assert_ok()["screenUrl"].as_str().expect("a screen URL").to_owned();
    assert!(screen_url.ends_with(&format!("/screen/{id}")), "{screen_url}");
    for (path, kind) in [
        (format!("/screen/{id}"), "text/html; charset=utf-8"),
        ("/screen/assets/screen.js".to_owned(), "text/javascript; charset=utf-8"),
        ("/screen/assets/screen.css".to_owned(), "text/css; charset=utf-8"),
        ("/screen/assets/chime.wav".to_owned(), "audio/wav"),
        (format!("/t/{id}"), "text/html; charset=utf-8"),
    ] {
        let answer = app.client.get(format!("{}{path}", app.base)).send().await.expect("an answer");
        assert_eq!(answer.status(), 200, "{path}");
        assert_eq!(answer.headers()["content-type"], kind, "{path}");
    }
    let page = app.client.get(format!("{}/screen/{id}", app.base)).send().await.expect("an answer");
    let policy = page.headers()["content-security-policy"].to_str().expect("text").to_owned();
    assert!(policy.starts_with("default-src 'self'"), "nothing from another host: {policy}");
    let html = page.text().await.expect("html");
    assert!(!html.contains("http://") && !html.contains("https://"), "no other host in the page");
    let unknown = uuid::Uuid::new_v4();
    for path in [
        format!("/screen/{unknown}"),
        format!("/t/{unknown}"),
        "/t/not-an-id".to_owned(),
        "/screen/assets/x.js".to_owned(),
    ] {
        let answer = app.client.get(format!("{}{path}", app.base)).send().await.expect("an answer");
        assert_eq!(answer.status(), 404, "{path}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn after_the_end_the_screen_and_the_share_page_show_the_final_standings() {
    let Some(browser) = chromium().await else { return };
    let Some(app) = spawn_app(Backend::Sqlite).await else { return };
    let game = ready(&app, "+79990009500", 950, 3).await;
    game.start(&app).await;
    for out in [0, 1] {
        let body = json!({"tournamentId": game.id, "registrationId": game.registrations[out]});
        staff(&app, &game.club, "/eliminations", body).await.assert_ok();
    }
    staff(&app, &game.club, &game.path("confirm-results"), json!({})).await.assert_ok();

    let screen = browser.open(&format!("{}/screen/{}", app.base, game.id)).await;
    shows(&screen, "after-title", "Итоги", Duration::from_secs(5)).await.expect("the standings");
    let standings = eval(&screen, "[...document.querySelectorAll('#standings li')].map(li => li.textContent)").await;
    assert_eq!(standings, json!(["1.Player 2", "2.Player 1", "3.Player 0"]), "the winner first, then by place");
    screenshot(&screen, 1920, 1080, false, "screen-finished-1920x1080.png").await;

    let share = browser.open(&format!("{}/t/{}", app.base, game.id)).await;
    let body = eval(&share, "document.body.innerText").await;
    let body = body.as_str().unwrap_or_default().to_owned();
    assert!(body.contains("Завершён") && body.contains("Итоги"), "{body}");
    let places =
        eval(&share, "[...document.querySelectorAll('ol li')].map(li => li.value + ' ' + li.textContent)").await;
    assert_eq!(places, json!(["1 Player 2", "2 Player 1", "3 Player 0"]));
    assert!(!body.contains("Структура"), "no structure once it is over");
}
