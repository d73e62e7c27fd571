//! Two `floor serve` processes on one PostgreSQL and Redis, as an operator runs them: one node
//! runs a tournament's actor and the other hands it its commands; a killed owner's tournament
//! is served by the other node within 10 seconds with everything acknowledged kept and the
//! clock caught up; a SIGTERM hands the tournament over while presses stream in, losing and
//! doubling none; phones reading both nodes through it are never served a version older than
//! one they were served. The tournament is prepared by an in-process node without Redis, which
//! never runs it.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use rust_socketio::TransportType;
use sea_orm::{ConnectionTrait, Statement};
use serde_json::{Value, json};
use uuid::Uuid;

use crate::helpers::{Backend, TestApp, spawn_app_with, test_redis_url};
use crate::live::{Ready, ready, version};
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
    let Some((setup, game, first, second, logs)) = two_nodes("+79990008900", 890, 2).await else { return };
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
            // The balancer's probe hears at once that the node takes nothing new (once the
            // process has taken the signal in): `503`, or a refused connection once the node
            // has handed over and closed its door, which it may do within a few milliseconds
            // when none of its sockets is left to close. A crash instead is caught below, by
            // the exit status and the log.
            let signalled = Instant::now();
            loop {
                match client.get(format!("{}/ready", first.base)).send().await {
                    Ok(ready) if ready.status() == 503 => break,
                    Ok(_) => {}
                    Err(err) if err.is_connect() => break,
                    Err(err) => panic!("the leaving node answers or refuses: {err}"),
                }
                // Within a moment: two seconds leave room for a CI machine running every
                // test at once (alone it takes a few milliseconds).
                assert!(signalled.elapsed() < Duration::from_secs(2), "readiness turns 503 as the shutdown begins");
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        }
        let direction = if n % 2 == 0 { "next" } else { "prev" };
        let key = Uuid::new_v4().to_string();
        let mut target = n % 2;
        let mut answered = None;
        for _attempt in 0..50 {
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
    while handed_over.is_none() && since.elapsed() < Duration::from_secs(10) {
        if live_actors(&client, &second).await == Some(1.0) {
            handed_over = Some(since.elapsed());
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let handed_over = handed_over.expect("the other node runs the tournament");
    // Handed over, not taken once the lease ran out (5 s): alone it takes well under a
    // second; the margin is for a CI machine running every test at once.
    assert!(handed_over < Duration::from_secs(4), "the other node owned it {handed_over:?} after SIGTERM");

    let mut first = first;
    let exit = first.exit_within(since, Duration::from_secs(30)).await;
    assert!(exit.success(), "a graceful exit: {exit:?}");
    // An orderly shutdown is no error: nothing in the leaving node's log pages anyone.
    let log = std::fs::read_to_string(logs.path().join("first.log")).expect("the node's log");
    let errors: Vec<&str> = log.lines().filter(|line| line.contains(" ERROR ")).collect();
    assert!(errors.is_empty(), "ERROR lines of an orderly shutdown:\n{}", errors.join("\n"));
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

/// What one reader was served, in order: the node and the version.
type Served = Vec<(&'static str, i64)>;

/// A phone reading the live picture again and again, its requests spread over both nodes by a
/// balancer, until `stop`: what it was served, its reads served by the first node counted in
/// `reads_on_first` as they come. A node that no longer answers (it has exited) is skipped.
async fn read_both_until(
    nodes: [(&'static str, String); 2],
    id: Uuid,
    stop: Arc<AtomicBool>,
    reads_on_first: Arc<AtomicUsize>,
) -> Served {
    let client = reqwest::Client::new();
    let mut served = Vec::new();
    while !stop.load(Ordering::SeqCst) {
        for (name, base) in &nodes {
            let Ok(answer) = client.get(format!("{base}/api/v1/tournaments/{id}/live")).send().await else { continue };
            if answer.status() != 200 {
                continue;
            }
            let Ok(state) = answer.json::<Value>().await else { continue };
            served.push((*name, version(&state)));
            if *name == "first" {
                reads_on_first.fetch_add(1, Ordering::SeqCst);
            }
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    served
}

/// The first read of `served` older than one served before it, with what came before it.
fn first_step_back(served: &Served) -> Option<String> {
    let mut highest = (0, "");
    for (n, &(node, version)) in served.iter().enumerate() {
        if version < highest.0 {
            let shown = &served[n.saturating_sub(6)..(n + 1).min(served.len())];
            return Some(format!("version {version} on {node} after {} on {}: {shown:?}", highest.0, highest.1));
        }
        if version > highest.0 {
            highest = (version, node);
        }
    }
    None
}

/// A rolling deploy's step under reads: the club presses on the owner, then on the node that
/// stays, while four phones read the live picture from both nodes in turn, before, through and
/// after the owner's SIGTERM. No phone is ever served a version older than one it was served
/// already, on either node: not by the leaving node while its actor finishes or after it
/// handed the tournament over, nor by a follower before the owner's note reached it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reads_on_either_node_never_go_back_through_a_hand_over() {
    let Some((_setup, game, first, second, _logs)) = two_nodes("+79990008960", 896, 2).await else { return };
    let client = reqwest::Client::new();
    let (status, started) = press(&client, &first, &game, &game.path("start"), json!({}), "start").await.expect("sent");
    assert_eq!(status, 200, "{started}");
    let stop = Arc::new(AtomicBool::new(false));
    let reads_on_first: Vec<Arc<AtomicUsize>> = (0..4).map(|_| Arc::default()).collect();
    let readers: Vec<_> = reads_on_first
        .iter()
        .enumerate()
        .map(|(n, reads)| {
            let mut nodes = [("first", first.base.clone()), ("second", second.base.clone())];
            nodes.rotate_left(n % 2);
            tokio::spawn(read_both_until(nodes, game.id, stop.clone(), reads.clone()))
        })
        .collect();
    let pressed = Arc::new(AtomicUsize::new(0));
    // The club presses on the owner, and on the node that stays once the owner answers no more.
    let pressing = tokio::spawn({
        let (stop, pressed, id) = (stop.clone(), pressed.clone(), game.id);
        let bases = [first.base.clone(), second.base.clone()];
        let token = game.club.owner.access_token.clone();
        async move {
            let client = reqwest::Client::new();
            let mut on = 0;
            while !stop.load(Ordering::SeqCst) {
                let direction = if pressed.load(Ordering::SeqCst).is_multiple_of(2) { "next" } else { "prev" };
                let answer = client
                    .post(format!("{}/api/v1/tournaments/{id}/level", bases[on]))
                    .bearer_auth(&token)
                    .header("idempotency-key", Uuid::new_v4().to_string())
                    .json(&json!({"direction": direction}))
                    .send()
                    .await;
                match answer {
                    Ok(answer) if answer.status() == 200 => {
                        pressed.fetch_add(1, Ordering::SeqCst);
                    }
                    _ => on = 1,
                }
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        }
    });
    let pressed_at_least = |count: usize| {
        let pressed = pressed.clone();
        async move {
            while pressed.load(Ordering::SeqCst) < count {
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        }
    };

    tokio::time::timeout(Duration::from_secs(30), pressed_at_least(15)).await.expect("the presses begin");
    // Each phone has read the owner a few times before it leaves (a loaded machine's reads are
    // slower than the presses).
    let each_read_the_owner = async {
        while reads_on_first.iter().any(|reads| reads.load(Ordering::SeqCst) <= 10) {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    };
    tokio::time::timeout(Duration::from_secs(30), each_read_the_owner).await.expect("the phones read the owner");
    first.terminate();
    let mut first = first;
    let exit = first.exit_within(Instant::now(), Duration::from_secs(30)).await;
    assert!(exit.success(), "a graceful exit: {exit:?}");
    // A few presses more on the node that stays, read there alone.
    tokio::time::timeout(Duration::from_secs(30), pressed_at_least(pressed.load(Ordering::SeqCst) + 5))
        .await
        .expect("the presses go on");
    stop.store(true, Ordering::SeqCst);
    pressing.await.expect("the presses ran");
    for (n, reader) in readers.into_iter().enumerate() {
        let served = reader.await.expect("the reader ran");
        let on_first = served.iter().filter(|(node, _)| *node == "first").count();
        assert!(on_first > 10 && served.len() > on_first + 10, "reader {n} read both nodes: {served:?}");
        assert_eq!(first_step_back(&served), None, "reader {n} was served an older version");
    }
}

/// A node frozen in the middle of the game (SIGSTOP: a stalled host, a paused VM) while the
/// club presses every 200 ms on the other node: the presses are answered within 4 s each, the
/// other node takes the tournament once the frozen one's lease runs out and serves presses
/// within 10 s of the freeze, and the frozen node, woken, applies and broadcasts nothing more
/// and lets its actor go. Nothing is applied twice.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_frozen_owner_s_tournament_is_served_by_the_other_node_and_the_woken_owner_stays_silent() {
    ride_out_a_frozen_owner(Duration::from_secs(15), Frozen::BetweenWrites).await;
}

/// The same for an owner frozen inside a write, holding the tournament's lease and row locked
/// in a transaction it cannot finish: PostgreSQL ends that transaction (the serving nodes'
/// sessions may sit idle in one no longer than a statement may run), so the locks go before
/// the lease runs out and the other node takes over as it would from an owner frozen between
/// writes. The write in the middle was pressed on the frozen node itself; it is answered, once
/// the owner wakes, as not applied or of unknown outcome, and it is applied nowhere.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_owner_frozen_inside_a_write_holds_the_tournament_from_the_other_node_no_longer_than_its_lease() {
    ride_out_a_frozen_owner(Duration::from_secs(15), Frozen::InsideAWrite).await;
}

/// The same for a minute's freeze: the lease bounds the takeover whatever the freeze's length.
/// A minute and a half of CI time, so run by hand (`cargo test --test api -- --ignored frozen`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "a minute and a half; the 15 s freeze runs in CI"]
async fn a_minute_s_freeze_of_the_owner_is_ridden_out_the_same_way() {
    ride_out_a_frozen_owner(Duration::from_secs(60), Frozen::BetweenWrites).await;
}

/// Where the owner is when it freezes.
#[derive(Clone, Copy, PartialEq)]
enum Frozen {
    /// Wherever it happens to be: between two writes, as a rule.
    BetweenWrites,
    /// Inside the transaction of a press made on it, having locked the tournament's lease and
    /// row.
    InsideAWrite,
}

/// Freezes the owner for `frozen_for` while the club presses on the other node every 200 ms,
/// and checks everything the tests above promise.
async fn ride_out_a_frozen_owner(frozen_for: Duration, at: Frozen) {
    let Some(redis) = test_redis_url().await else { return };
    let Some(setup) = spawn_app_with(Backend::Postgres, &[]).await else { return };
    let logs = tempfile::tempdir().expect("a folder for the logs");
    let first = Node::start(&setup.database_url, Some(redis), logs.path(), "first").await;
    let second = Node::start(&setup.database_url, Some(redis), logs.path(), "second").await;
    let client = reqwest::Client::new();
    // Hour-long levels, pressed to the middle: next and prev in any order stay in range.
    let (game, started) = crate::outages::started_in_the_middle(&setup, &first, &client, "+79990008700").await;
    assert_eq!(live_actors(&client, &first).await, Some(1.0), "the node that started it runs it");
    let token = game.club.owner.access_token.clone();
    let mut on_first = setup.watch_at(&first.base, Some(&token), TransportType::Websocket).await;
    on_first.connected().await.expect("connected to the first node");
    assert_eq!(on_first.join(game.id).await["ok"], true);
    let mut on_second = setup.watch_at(&second.base, Some(&token), TransportType::Websocket).await;
    on_second.connected().await.expect("connected to the second node");
    assert_eq!(on_second.join(game.id).await["ok"], true);

    let t0 = Instant::now();
    let mut presses = tokio::task::JoinSet::new();
    let mut tick = tokio::time::interval(Duration::from_millis(200));
    let (mut frozen, mut woken, mut inside_a_write) = (None, None, None);
    let presses_in_all = 10 + frozen_for.as_millis() / 200 + 25;
    for n in 0..presses_in_all {
        tick.tick().await;
        if n == 10 {
            if at == Frozen::InsideAWrite {
                inside_a_write = Some(freeze_inside_a_write(&setup, &first, &game).await);
            } else {
                signal(&first, "STOP");
            }
            frozen = Some(t0.elapsed());
        }
        if frozen.is_some_and(|at| woken.is_none() && t0.elapsed() >= at + frozen_for) {
            signal(&first, "CONT");
            woken = Some(t0.elapsed());
        }
        let direction = if n % 2 == 0 { "next" } else { "prev" };
        let request = client
            .post(second.url(&game.path("level")))
            .bearer_auth(&token)
            .header("idempotency-key", Uuid::new_v4().to_string())
            .json(&json!({"direction": direction}));
        presses.spawn(async move {
            let sent = t0.elapsed();
            let answer = request.send().await.expect("every press is answered");
            let status = answer.status().as_u16();
            let body: Value = answer.json().await.unwrap_or_default();
            (n, sent, t0.elapsed() - sent, status, body)
        });
    }
    let mut presses = presses.join_all().await;
    presses.sort_by_key(|press| press.0);
    let (frozen, woken) = (frozen.expect("frozen"), woken.expect("woken"));
    eprintln!("the owner was frozen at {frozen:?} and woken at {woken:?}");
    for (n, sent, took, status, body) in &presses {
        let version = body["version"].as_i64().map_or_else(String::new, |v| format!(" v{v}"));
        eprintln!("press {n:3} sent {sent:>10.2?} answered {status} in {took:>10.2?}{version}");
    }

    // Each press answered within 4 s: through, refused `503` (applied nowhere), or, handed to
    // the owner as it froze, of unknown outcome (`500`).
    let handed_as_it_froze = |sent: Duration| sent <= frozen + Duration::from_secs(2);
    let mut unknown = 0;
    for (n, sent, took, status, body) in &presses {
        assert!(*took < Duration::from_secs(4), "press {n} took {took:?}");
        match status {
            200 => {}
            503 => assert_eq!(body["error"]["code"], "SERVICE_UNAVAILABLE", "press {n}: {body}"),
            500 if handed_as_it_froze(*sent) => unknown += 1,
            _ => panic!("press {n} answered {status}: {body}"),
        }
    }
    let first_through = presses
        .iter()
        .filter(|(_, sent, _, status, _)| *status == 200 && *sent > frozen)
        .map(|(_, sent, took, _, _)| *sent + *took)
        .min()
        .expect("a press went through during the freeze");
    eprintln!("the first press went through {:?} after the freeze", first_through - frozen);
    assert!(first_through - frozen < Duration::from_secs(10), "served {:?} after the freeze", first_through - frozen);

    // Nothing applied twice; a press of unknown outcome may have been applied once.
    let mut acknowledged: Vec<i64> =
        presses.iter().filter(|press| press.3 == 200).map(|press| version(&press.4)).collect();
    if let Some(frozen_in) = inside_a_write {
        let reply = tokio::time::timeout(Duration::from_secs(30), frozen_in)
            .await
            .expect("the press the owner froze in is answered once it wakes")
            .expect("the press ran")
            .expect("the press is answered");
        eprintln!("the press the owner froze in: {} {}", reply.status, reply.body);
        match reply.status.as_u16() {
            503 => {}
            500 => unknown += 1,
            status => panic!("the press the owner froze in answered {status}: {}", reply.body),
        }
    }
    let kept = acknowledged.len();
    acknowledged.sort_unstable();
    acknowledged.dedup();
    assert_eq!(acknowledged.len(), kept, "one version per acknowledged press");
    let last = acknowledged.last().copied().expect("presses went through");
    let live = |node: &Node| {
        let url = format!("{}/api/v1/tournaments/{}/live", node.base, game.id);
        let client = client.clone();
        async move { version(&client.get(url).send().await.expect("an answer").json::<Value>().await.expect("json")) }
    };
    let now = live(&second).await;
    let applied = now - started;
    let kept = i64::try_from(kept).expect("a count");
    assert!(
        now >= last && (kept..=kept + unknown).contains(&applied),
        "version {now}: {kept} acknowledged, {unknown} of unknown outcome"
    );

    // The woken owner let its actor go and took no command; both nodes show the same state.
    let settled = Instant::now();
    while live_actors(&client, &first).await != Some(0.0) {
        assert!(settled.elapsed() < Duration::from_secs(5), "the woken owner still runs an actor");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(live_actors(&client, &second).await, Some(1.0), "one actor, on the other node");
    assert_eq!(live(&first).await, now, "both nodes show the last version");
    let log = std::fs::read_to_string(logs.path().join("first.log")).expect("the first node's log");
    let applied_after_waking: Vec<&str> = log
        .lines()
        .filter(|line| line.contains("a live command was applied"))
        .filter(|line| version_in(line).is_some_and(|applied| applied > started + 10))
        .collect();
    assert!(applied_after_waking.is_empty(), "the woken owner applied {applied_after_waking:?}");
    // Every watcher heard each version at most once, in order, up to the last. One on the
    // frozen node is given up by its client once no ping came for 45 s (Engine.IO's interval and
    // timeout): an app then connects again.
    let mut watchers = vec![&mut on_second];
    if frozen_for < Duration::from_secs(45) {
        watchers.push(&mut on_first);
    }
    for watcher in watchers {
        let seen: Vec<i64> = watcher.states_until(now).await.iter().map(version).collect();
        assert!(seen.windows(2).all(|pair| pair[0] < pair[1]), "versions only grow: {seen:?}");
    }
}

/// Freezes `owner` inside the transaction of a press made on it: the test locks the
/// tournament's row, the press's transaction locks the lease (its fence) and waits for the
/// row, the owner is stopped, and the row let go, so the press's statement finishes on a
/// session whose node no longer runs. Returns the press, answered once the owner wakes.
async fn freeze_inside_a_write(
    setup: &TestApp,
    owner: &Node,
    game: &Ready,
) -> tokio::task::JoinHandle<Result<crate::helpers::Reply, reqwest::Error>> {
    let held = setup.hold_tournament_row(game.id).await;
    let press = tokio::spawn({
        let (client, url, token) =
            (reqwest::Client::new(), owner.url(&game.path("level")), game.club.owner.access_token.clone());
        async move {
            let request = client.post(url).bearer_auth(token).header("idempotency-key", Uuid::new_v4().to_string());
            let answer = request.json(&json!({"direction": "next"})).send().await?;
            Ok(crate::helpers::Reply::read(answer).await)
        }
    });
    let waiting =
        "SELECT count(*)::int8 FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'";
    let since = Instant::now();
    loop {
        let row = setup
            .db()
            .query_one_raw(Statement::from_string(setup.db().get_database_backend(), waiting))
            .await
            .expect("pg_stat_activity read")
            .expect("a row");
        if row.try_get_by_index::<i64>(0).expect("a count") > 0 {
            break;
        }
        assert!(since.elapsed() < Duration::from_secs(10), "the press never waited for the row");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    signal(owner, "STOP");
    held.commit().await.expect("the row let go");
    press
}

/// Sends `signal` to a node's process.
fn signal(node: &Node, signal: &str) {
    let status = std::process::Command::new("kill")
        .args([format!("-{signal}"), node.child.id().to_string()])
        .status()
        .expect("kill runs");
    assert!(status.success(), "kill -{signal}");
}

/// The `version=` of a log line, when it has one.
fn version_in(line: &str) -> Option<i64> {
    let rest = line.split("version=").nth(1)?;
    rest.split(|c: char| !c.is_ascii_digit()).next()?.parse().ok()
}
