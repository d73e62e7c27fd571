//! The venue screen and the share page, driven in headless Chromium (Debian's `chromium`)
//! against a real server: what a TV in the room and a phone opening a shared link show.
//! Screenshots go to `$CARGO_TARGET_TMPDIR/screenshots/` (under the target folder).

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use chromiumoxide::cdp::browser_protocol::emulation::SetDeviceMetricsOverrideParams;
use chromiumoxide::page::ScreenshotParams;
use chromiumoxide::{Browser, BrowserConfig, Page};
use chrono::{DateTime, TimeDelta, Utc};
use floor_actors::rules::clock::Clock;
use floor_actors::rules::structure::Segment;
use futures::StreamExt;
use serde::Deserialize;
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
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

/// A TCP relay between the browser and the server, which the test can cut or hold up and then
/// restore, at the same address.
struct Relay {
    origin: String,
    flow: watch::Sender<Flow>,
    task: JoinHandle<()>,
}

/// What the relay does with the bytes it carries.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Flow {
    Open,
    /// A stalled Wi-Fi: the connections stay, and what is sent either way passes only when
    /// open again (a stream's events then arrive late).
    Held,
    /// A router gone: every connection dropped and new ones closed at once.
    Cut,
}

impl Relay {
    async fn to(server: &str) -> Self {
        let target = server.trim_start_matches("http://").to_owned();
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("a port");
        let origin = format!("http://{}", listener.local_addr().expect("an address"));
        let (flow, gate) = watch::channel(Flow::Open);
        let task = tokio::spawn(async move {
            let mut relays = tokio::task::JoinSet::new();
            while let Ok((inbound, _)) = listener.accept().await {
                while relays.try_join_next().is_some() {}
                let (target, gate) = (target.clone(), gate.clone());
                relays.spawn(async move {
                    if *gate.borrow() == Flow::Cut {
                        return;
                    }
                    let Ok(outbound) = TcpStream::connect(&target).await else { return };
                    let ((from_page, to_page), (from_server, to_server)) =
                        (inbound.into_split(), outbound.into_split());
                    tokio::select! {
                        () = pipe(from_page, to_server, gate.clone()) => {}
                        () = pipe(from_server, to_page, gate) => {}
                    }
                });
            }
        });
        Self { origin, flow, task }
    }

    fn cut(&self) {
        self.flow.send_replace(Flow::Cut);
    }

    fn hold(&self) {
        self.flow.send_replace(Flow::Held);
    }

    fn restore(&self) {
        self.flow.send_replace(Flow::Open);
    }
}

/// Copies `from` to `to` as the flow lets it; ends the connection when cut.
async fn pipe(mut from: OwnedReadHalf, mut to: OwnedWriteHalf, mut gate: watch::Receiver<Flow>) {
    let mut buffer = vec![0; 16 * 1024];
    loop {
        let read = tokio::select! {
            read = from.read(&mut buffer) => read,
            _ = gate.wait_for(|flow| *flow == Flow::Cut) => return,
        };
        let Ok(n @ 1..) = read else { return };
        if gate.wait_for(|flow| *flow != Flow::Held).await.map(|flow| *flow).ok() != Some(Flow::Open) {
            return;
        }
        if to.write_all(&buffer[..n]).await.is_err() {
            return;
        }
    }
}

impl Drop for Relay {
    fn drop(&mut self) {
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

    // The server goes away: within 10 s (and a poll) the screen says so, and the paused clock
    // still shows where it stood.
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
    assert_eq!(text(&page, "timer").await, frozen, "the clock is kept through the silence");
    screenshot(&page, 1920, 1080, false, "screen-offline-1920x1080.png").await;
}

/// Whole seconds the offline test keeps the browser from the server: `SCREEN_CUT_SECS` (300 for
/// the five-minute cut, run by hand), by default just long enough to cross one change of its
/// one-minute levels.
fn cut_length() -> TimeDelta {
    let asked = std::env::var("SCREEN_CUT_SECS").ok();
    TimeDelta::seconds(asked.map_or(70, |secs| secs.parse().expect("SCREEN_CUT_SECS in whole seconds")))
}

/// What the screen shows at one moment, `at` in the browser's milliseconds since the epoch.
#[derive(Clone, Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Shown {
    at: i64,
    segment: String,
    timer: String,
    blinds: String,
    next: String,
    to_break: String,
    offline: bool,
    /// How many segment starts the screen rang the chime for.
    rings: usize,
    /// The version of the last `level` event the screen heard ("" before any).
    heard: String,
}

/// `shown()` reads the screen as a [`Shown`]; every change of it is also kept, with the
/// browser's time, in `seen` (read with [`changes_seen`]): exact moments, not the test's samples.
const WATCH: &str = r#"(() => {
  const text = (id) => document.getElementById(id).textContent.replace(/[\u00a0\u202f]/g, ' ');
  const screen = document.getElementById('screen');
  window.shown = () => ({
    at: Date.now(), segment: text('segment'), timer: text('timer'), blinds: text('blinds'),
    next: text('next'), toBreak: text('to-break'), offline: !document.getElementById('offline').hidden,
    rings: Number(screen.dataset.levelRings || 0), heard: screen.dataset.levelHeard || '',
  });
  window.seen = [];
  new MutationObserver(() => window.seen.push(window.shown())).observe(screen, {
    subtree: true, childList: true, characterData: true, attributeFilter: ['data-level-rings'],
  });
  return true;
})()"#;

async fn shown(page: &Page) -> Shown {
    serde_json::from_value(eval(page, "window.shown()").await).expect("what the screen shows")
}

/// Every change of the screen since the last call, in order.
async fn changes_seen(page: &Page) -> Vec<Shown> {
    serde_json::from_value(eval(page, "window.seen.splice(0)").await).expect("the changes seen")
}

/// The seconds a countdown reads (`mm:ss` or `h:mm:ss`); `None` for anything else: a blank or
/// the `--:--` of a clock not shown.
fn countdown(timer: &str) -> Option<i64> {
    let parts: Vec<&str> = timer.split(':').collect();
    let digits = |part: &&str| !part.is_empty() && part.bytes().all(|b| b.is_ascii_digit());
    if !(2..=3).contains(&parts.len()) || !parts.iter().all(digits) || parts[1..].iter().any(|p| p.len() != 2) {
        return None;
    }
    parts.iter().try_fold(0, |total, part| part.parse::<i64>().ok().map(|n| total * 60 + n))
}

/// The whole seconds the screen shows for `ms` left: rounded up, so `00:00` only at the end.
fn whole_seconds(ms: i64) -> i64 {
    (ms.max(0) + 999) / 1000
}

fn utc(ms: i64) -> DateTime<Utc> {
    DateTime::from_timestamp_millis(ms).expect("a time")
}

/// The clock of a LiveState, as the server's rules hold it.
fn clock_of(state: &Value) -> Clock {
    let time = |field: &str| {
        state["clock"][field].as_str().map(|text| DateTime::parse_from_rfc3339(text).expect("a time").to_utc())
    };
    let idx = state["clock"]["currentLevelIdx"].as_u64().expect("a level index");
    Clock {
        current_level_idx: usize::try_from(idx).expect("a small index"),
        level_started_at: time("levelStartedAt").expect("a started clock"),
        paused_at: time("pausedAt"),
    }
}

/// A tournament's structure as the server's rules read it and as the screen words it.
struct Structure {
    segments: Vec<Segment>,
    levels: Vec<Value>,
}

impl Structure {
    fn of(state: &Value) -> Self {
        let levels = state["clock"]["levels"].as_array().expect("levels").clone();
        let segments = serde_json::from_value(Value::Array(levels.clone())).expect("segments");
        Self { segments, levels }
    }

    fn is_break(&self, idx: usize) -> bool {
        matches!(self.segments[idx], Segment::Break { .. })
    }

    /// "Уровень N" counts levels only.
    fn name(&self, idx: usize) -> String {
        if self.is_break(idx) {
            return "Перерыв".to_owned();
        }
        let n = self.segments[..=idx].iter().filter(|s| matches!(s, Segment::Level { .. })).count();
        format!("Уровень {n}")
    }

    fn blinds(&self, idx: usize) -> String {
        if self.is_break(idx) { "Перерыв".to_owned() } else { blinds(&self.levels[idx]) }
    }

    fn next(&self, idx: usize) -> String {
        match self.segments.get(idx + 1) {
            None => "—".to_owned(),
            Some(Segment::Break { duration_min, .. }) => format!("Перерыв {duration_min} мин"),
            Some(Segment::Level { .. }) => blinds(&self.levels[idx + 1]),
        }
    }

    /// Milliseconds to the next break from a level with `left` ms to go; `None` on a break or
    /// with no break ahead.
    fn to_break(&self, idx: usize, left: i64) -> Option<i64> {
        if self.is_break(idx) {
            return None;
        }
        let mut ms = left;
        for later in &self.segments[idx + 1..] {
            if matches!(later, Segment::Break { .. }) {
                return Some(ms);
            }
            ms += later.duration_min() * 60_000;
        }
        None
    }

    /// The segment changes of `clock` after `from` and before `until`, by the server's own rule
    /// (`Clock::catch_up`): each end, with the index of the segment that began there.
    fn changes(&self, clock: Clock, from: DateTime<Utc>, until: DateTime<Utc>) -> Vec<(DateTime<Utc>, usize)> {
        let mut clock = clock;
        let mut changes = Vec::new();
        while let Some(end) = clock.segment_ends_at(&self.segments)
            && end < until
        {
            clock = clock.catch_up(&self.segments, end).expect("the segment ran out");
            if end > from {
                changes.push((end, clock.current_level_idx));
            }
        }
        changes
    }

    /// Whether `shown` is what `clock` gives at its moment: that moment's segment, or one within
    /// a second of it (the screen renders every 250 ms), and in it the blinds and the next
    /// segment exactly and the countdown and the time to the break to the second.
    fn check(&self, shown: &Shown, clock: Clock) -> Result<(), String> {
        let Some(timer) = countdown(&shown.timer) else { return Err(format!("no running countdown: {shown:?}")) };
        let at = utc(shown.at);
        let as_of = |t: DateTime<Utc>| clock.catch_up(&self.segments, t).unwrap_or(clock);
        let now = as_of(at);
        let idx = now.current_level_idx;
        let paused = if clock.paused_at.is_some() { " · пауза" } else { "" };
        let name = |idx: usize| self.name(idx) + paused;
        if shown.segment != name(idx) {
            let second = TimeDelta::seconds(1);
            let near = [at - second, at + second].map(|t| name(as_of(t).current_level_idx));
            return if near.contains(&shown.segment) {
                Ok(())
            } else {
                Err(format!("{shown:?}: the server's clock is at {}", name(idx)))
            };
        }
        if shown.blinds != self.blinds(idx) || shown.next != self.next(idx) {
            return Err(format!("{shown:?}: {} with {} next", self.blinds(idx), self.next(idx)));
        }
        let left = now.remaining(&self.segments, at).num_milliseconds();
        if (timer - whole_seconds(left)).abs() > 1 {
            return Err(format!("{shown:?}: {left} ms left by the server's clock"));
        }
        let to_break = self.to_break(idx, left).map(whole_seconds);
        let shown_to_break = if shown.to_break == "—" { None } else { countdown(&shown.to_break) };
        match (to_break, shown_to_break) {
            (None, None) => Ok(()),
            (Some(expected), Some(read)) if (expected - read).abs() <= 1 => Ok(()),
            _ => Err(format!("{shown:?}: {to_break:?} s to the break")),
        }
    }
}

/// The segment changes among `seen` (the screen's changes in order) must be exactly `changes`
/// after a start on segment `from`, each within 1 s of its time; how far off each was, in ms
/// (positive when late).
fn changed_on_time(structure: &Structure, seen: &[Shown], from: usize, changes: &[(DateTime<Utc>, usize)]) -> Vec<i64> {
    let mut names: Vec<&str> = Vec::new();
    for shown in seen {
        let name = shown.segment.split(" · ").next().unwrap_or_default();
        if names.last() != Some(&name) {
            names.push(name);
        }
    }
    let expected: Vec<String> =
        std::iter::once(from).chain(changes.iter().map(|(_, idx)| *idx)).map(|idx| structure.name(idx)).collect();
    assert_eq!(names, expected, "the segments the screen went through");
    let mut offs = Vec::new();
    let mut rest = seen;
    for (end, idx) in changes {
        let at = rest.iter().position(|shown| shown.segment == structure.name(*idx)).expect("the change seen");
        let off = rest[at].at - end.timestamp_millis();
        assert!(off.abs() <= 1000, "{} shown {off} ms off the server's {end}", structure.name(*idx));
        offs.push(off);
        rest = &rest[at..];
    }
    offs
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn through_a_lost_connection_the_screen_keeps_the_clock_then_takes_the_servers() {
    let Some(browser) = chromium().await else { return };
    let Some(app) = spawn_app(Backend::Sqlite).await else { return };
    let game = ready(&app, "+79990009710", 971, 3).await;
    // One-minute segments, two breaks among them, enough for a cut of several minutes.
    let level = |small: i64| json!({"kind": "level", "durationMin": 1, "smallBlind": small, "bigBlind": 2 * small});
    let pause = json!({"kind": "break", "durationMin": 1});
    let levels = [100, 200, 0, 300, 400, 500, 0, 600, 800, 1000, 1500, 2000, 3000]
        .map(|small| if small == 0 { pause.clone() } else { level(small) });
    let template = app
        .post(
            &format!("/organizers/{}/blind-templates", game.club.id),
            Some(&game.club.owner.access_token),
            json!({"name": "Minutes", "startingStack": 10000, "levels": levels}),
        )
        .await;
    let template_id = template.assert_ok()["id"].clone();
    let path = format!("/tournaments/{}", game.id);
    app.patch(&path, Some(&game.club.owner.access_token), json!({"blindTemplateId": template_id})).await.assert_ok();
    game.start(&app).await;
    let relay = Relay::to(&app.base).await;
    let page = browser.open(&format!("{}/screen/{}", relay.origin, game.id)).await;
    shows(&page, "blinds", "100 / 200", Duration::from_secs(5)).await.expect("the first level");
    eval(&page, WATCH).await;

    // Held up (a stalled Wi-Fi: nothing either way, the server's events kept for later) with
    // the state the screen has: the server's clock from it is the schedule. 2 s before the
    // stream is back the floor puts a player out and presses the next level, which the screen
    // cannot know; the cut is moved on a few seconds when a level change would fall next to that
    // moment, where it would blur the press.
    let before = game.live(&app).await;
    let (structure, clock) = (Structure::of(&before), clock_of(&before));
    let at_cut = shown(&page).await;
    assert_eq!(at_cut.heard, "", "no level event yet");
    let cut_at = Utc::now();
    relay.hold();
    let two = TimeDelta::seconds(2);
    let mut back_at = cut_at + cut_length();
    if let Some((end, _)) = structure.changes(clock, back_at - two - TimeDelta::seconds(1), back_at + two).first() {
        back_at = *end + TimeDelta::seconds(3);
    }
    let mut pressed = None;
    let (mut samples, mut marked) = (0, 0);
    while Utc::now() < back_at {
        let seen = shown(&page).await;
        structure.check(&seen, clock).unwrap_or_else(|err| panic!("while cut off: {err}"));
        samples += 1;
        if utc(seen.at) > cut_at + TimeDelta::seconds(12) {
            assert!(seen.offline, "the no-connection mark 12 s into the cut: {seen:?}");
            marked += 1;
        }
        if pressed.is_none() && Utc::now() >= back_at - two {
            let out = json!({"tournamentId": game.id, "registrationId": game.registrations[0]});
            staff(&app, &game.club, "/eliminations", out).await.assert_ok();
            let next = staff(&app, &game.club, &game.path("level"), json!({"direction": "next"})).await;
            pressed = Some(next.assert_ok().clone());
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    let pressed = pressed.expect("the level pressed during the cut");
    let seen: Vec<Shown> = changes_seen(&page).await.into_iter().filter(|s| utc(s.at) >= cut_at).collect();
    let blank = seen.iter().filter(|s| countdown(&s.timer).is_none()).count();
    assert_eq!(blank, 0, "a countdown in every change seen: {seen:?}");
    let changes = structure.changes(clock, cut_at, back_at);
    assert!(!changes.is_empty(), "the cut crosses a level change");
    let from = clock.catch_up(&structure.segments, cut_at).unwrap_or(clock).current_level_idx;
    let offs = changed_on_time(&structure, &seen, from, &changes);
    let rung = seen.last().expect("changes seen").rings;
    assert_eq!(rung, at_cut.rings + changes.len(), "one chime for each change while cut off");
    assert!(marked > 0, "sampled with the mark on");
    eprintln!(
        "cut of {} s: {samples} samples ({marked} with the mark) and {} changes seen, none blank; \
         segment changes {offs:?} ms off the server's schedule",
        (back_at - cut_at).num_seconds(),
        seen.len(),
    );

    // Back: the server's state wins over the screen's own reckoning: its level, counted by
    // the server's time (not put out by answers held up on the way), and the player out. The
    // level events kept since arrive late: the press rings, the changes rung already do not.
    relay.restore();
    let clock = clock_of(&pressed);
    shows(&page, "segment", &structure.name(clock.current_level_idx), Duration::from_secs(5)).await.expect("the press");
    shows(&page, "players", "2 / 3", Duration::from_secs(2)).await.expect("the player out");
    for _ in 0..12 {
        structure.check(&shown(&page).await, clock).unwrap_or_else(|err| panic!("once back: {err}"));
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    let back = shown(&page).await;
    assert!(!back.offline, "the mark gone once back: {back:?}");
    assert_eq!(back.heard, pressed["version"].to_string(), "the level events kept, the press's last");
    assert_eq!(back.rings, rung + 1, "a chime for the press heard late, none again for the changes rung");

    // Online again, the next change comes on time, with one chime whichever of the screen's
    // own advance and the server's `level` event comes first.
    changes_seen(&page).await;
    let since = Utc::now();
    let (end, _) = *structure.changes(clock, since, since + TimeDelta::hours(1)).first().expect("a next one");
    while Utc::now() < end + TimeDelta::seconds(3) {
        let seen = shown(&page).await;
        structure.check(&seen, clock).unwrap_or_else(|err| panic!("online: {err}"));
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    let seen = changes_seen(&page).await;
    let changes = structure.changes(clock, since, end + TimeDelta::seconds(1));
    changed_on_time(&structure, &seen, clock.current_level_idx, &changes);
    let after = shown(&page).await;
    assert_eq!(after.rings, back.rings + 1, "one chime for the change");
    assert_ne!(after.heard, back.heard, "the server's level event of the change heard");
    let server = game.live(&app).await;
    assert_eq!(server["clock"]["currentLevelIdx"], json!(changes[0].1), "the server changed level too");
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
