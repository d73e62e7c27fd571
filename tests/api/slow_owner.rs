//! A healthy owner slow to finish a press that another node handed it (a lock wait, a slow
//! disk), seen from that other node, two `floor serve` processes on one PostgreSQL and Redis:
//! the press is answered with what the owner made of it, never called lost while the owner
//! may still commit it, and the owner keeps getting the presses after it. An owner that cannot
//! finish in time answers so itself, and the same `Idempotency-Key` sent again gives what the
//! press came to. The frozen owner, which answers nothing, is `failover`'s.

use std::time::{Duration, Instant};

use sea_orm::ConnectionTrait;
use serde_json::json;
use uuid::Uuid;

use crate::helpers::{Backend, Reply, TestApp, spawn_app_with, test_redis_url};
use crate::live::Ready;
use crate::live::version;
use crate::nodes::{Node, live_actors, send_press};

/// `DATABASE_DEADLINE` as the nodes run it (the default).
const DEADLINE: Duration = Duration::from_secs(3);
/// What the owner's own bound on a press comes to with that deadline (twice the deadline and
/// its half-second margin, and a second for the rest of the turn): `src/domain/live/forward.rs`.
const OWNER_BOUND: Duration = Duration::from_secs(8);
/// What the other node's log says of a call that reached the owner and got no answer.
const NO_ANSWER: &str = "took the command and did not answer";
/// What it says of an owner found frozen.
const FROZEN: &str = "answers nothing";

/// A tournament pressed to the middle of hour-long levels on the node that runs it, and the
/// other node beside it.
struct TwoNodes {
    setup: TestApp,
    game: Ready,
    /// The version the tournament is at.
    version: i64,
    owner: Node,
    other: Node,
    logs: tempfile::TempDir,
    client: reqwest::Client,
}

impl TwoNodes {
    /// `None` when PostgreSQL or Redis is unreachable outside CI.
    async fn start(phone: &str) -> Option<Self> {
        let redis = test_redis_url().await?;
        let setup = spawn_app_with(Backend::Postgres, &[]).await?;
        let logs = tempfile::tempdir().expect("a folder for the logs");
        let owner = Node::start(&setup.database_url, Some(redis), logs.path(), "owner").await;
        let other = Node::start(&setup.database_url, Some(redis), logs.path(), "other").await;
        let client = reqwest::Client::new();
        let (game, version) = crate::outages::started_in_the_middle(&setup, &owner, &client, phone).await;
        assert_eq!(live_actors(&client, &owner).await, Some(1.0), "the node that started it runs it");
        assert_eq!(live_actors(&client, &other).await, Some(0.0), "one owner across the nodes");
        Some(Self { setup, game, version, owner, other, logs, client })
    }

    /// A level press on the other node with `key`, handed to the owner: its answer and how
    /// long it took.
    async fn press(&self, direction: &str, key: &str) -> (Reply, Duration) {
        let sent = Instant::now();
        let path = self.game.path("level");
        let reply = send_press(&self.client, &self.other, &self.game, &path, json!({"direction": direction}), key)
            .await
            .expect("every press is answered");
        (reply, sent.elapsed())
    }

    /// The version the owner shows.
    async fn live_version(&self) -> i64 {
        let reply = Reply::read(self.client.get(self.owner.url(&self.game.path("live"))).send().await.expect("sent"));
        version(reply.await.assert_ok())
    }

    fn log(&self, node: &str) -> String {
        std::fs::read_to_string(self.logs.path().join(format!("{node}.log"))).expect("a node's log")
    }

    /// Runs `sql` on the test's own connection.
    async fn execute(&self, sql: &str) {
        self.setup.db().execute_unprepared(sql).await.unwrap_or_else(|err| panic!("{sql}: {err}"));
    }
}

/// The row held 2.5 s, within the deadline: the press handed over meanwhile is answered with
/// its outcome once the owner commits it, a press sent behind it too, and the presses after
/// them go through at once (the owner, slow once, was not taken for frozen). (The press behind
/// is handed over at once, though the owner's write holds the lease row: a node that finds
/// another holding the lease only reads it, and waits in the owner's queue.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_press_a_healthy_owner_is_slow_to_commit_is_answered_with_its_outcome_and_the_owner_keeps_its_presses() {
    let Some(nodes) = TwoNodes::start("+79990008310").await else { return };
    let nodes = std::sync::Arc::new(nodes);
    let held = nodes.setup.hold_tournament_row(nodes.game.id).await;
    let t0 = Instant::now();
    let slow = tokio::spawn({
        let nodes = nodes.clone();
        async move { nodes.press("next", "slow").await }
    });
    // Past the half second after which the other node looks whether the owner answers at all.
    tokio::time::sleep(Duration::from_secs(1)).await;
    let behind = tokio::spawn({
        let nodes = nodes.clone();
        async move { nodes.press("prev", "behind").await }
    });
    tokio::time::sleep_until((t0 + Duration::from_millis(2500)).into()).await;
    held.commit().await.expect("the row let go");

    let (slow, slow_took) = slow.await.expect("the press");
    let (behind, behind_took) = behind.await.expect("the press");
    eprintln!(
        "the slow press: {} in {slow_took:?}; the one behind it: {} in {behind_took:?}",
        slow.status, behind.status
    );
    assert!(slow_took >= Duration::from_millis(2400), "the press waited for the row: {slow_took:?}");
    assert_eq!(version(slow.assert_ok()), nodes.version + 1, "the slow press applied");
    assert_eq!(version(behind.assert_ok()), nodes.version + 2, "the press behind it applied after it");

    for n in 1..=3 {
        let (reply, took) = nodes.press(if n % 2 == 0 { "next" } else { "prev" }, &Uuid::new_v4().to_string()).await;
        eprintln!("press {n} after: {} in {took:?}", reply.status);
        assert_eq!(version(reply.assert_ok()), nodes.version + 2 + n, "handed to the owner and applied");
    }
    let log = nodes.log("other");
    assert!(!log.contains(NO_ANSWER) && !log.contains(FROZEN), "the owner was taken for frozen:\n{log}");
    assert_eq!(live_actors(&nodes.client, &nodes.owner).await, Some(1.0), "the owner still runs it");
}

/// The row held 5 s, past the deadline: the owner's statement is cancelled at the deadline and
/// the owner answers `503` (nothing written), which the other node passes on rather than an
/// answer of its own before it; the same key sent again once the row is free applies the
/// press, once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_press_its_owner_cannot_write_within_the_deadline_gets_the_owner_s_answer_and_a_resend_its_outcome() {
    let Some(nodes) = TwoNodes::start("+79990008320").await else { return };
    let held = nodes.setup.hold_tournament_row(nodes.game.id).await;
    let t0 = Instant::now();
    let (reply, took) = nodes.press("next", "held").await;
    eprintln!("the press: {} in {took:?}: {}", reply.status, reply.body);
    reply.assert_error(503, "SERVICE_UNAVAILABLE");
    let message = reply.body["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("database"), "the owner's own answer, of its database: {message}");
    assert!(took >= DEADLINE, "answered when the owner did, at its deadline: {took:?}");
    tokio::time::sleep_until((t0 + Duration::from_secs(5)).into()).await;
    held.commit().await.expect("the row let go");

    let (again, _) = nodes.press("next", "held").await;
    assert_eq!(version(again.assert_ok()), nodes.version + 1, "not applied before, applied now");
    let (once_more, _) = nodes.press("next", "held").await;
    assert_eq!(version(once_more.assert_ok()), nodes.version + 1, "the same key, the same answer");
    assert!(once_more.headers.get("idempotent-replayed").is_some_and(|value| value == "true"), "{once_more:?}");
    assert_eq!(nodes.live_version().await, nodes.version + 1, "applied once");
    let log = nodes.log("other");
    assert!(!log.contains(NO_ANSWER) && !log.contains(FROZEN), "the other node answered on its own:\n{log}");
}

/// A disk so slow that each press's write takes 2.5 s (each statement within the deadline),
/// and five presses handed over at once: the owner answers those it has not finished within its
/// own bound as of unknown outcome (`500`) by itself, and the other node passes that on, never
/// taking the owner for frozen; each key sent again gives what its press came to (applied on
/// the owner after all, or applied now), and every press is applied once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn presses_an_owner_cannot_finish_within_its_own_bound_are_answered_unknown_by_it_and_resent_give_their_outcome()
{
    const PRESSES: i64 = 8;
    let Some(nodes) = TwoNodes::start("+79990008330").await else { return };
    nodes.execute("CREATE TABLE slow_disk (seconds double precision NOT NULL)").await;
    nodes.execute("INSERT INTO slow_disk VALUES (2.5)").await;
    nodes
        .execute(
            "CREATE FUNCTION slow_disk() RETURNS trigger LANGUAGE plpgsql AS \
             $$ BEGIN PERFORM pg_sleep((SELECT seconds FROM slow_disk)); RETURN NEW; END $$",
        )
        .await;
    nodes
        .execute("CREATE TRIGGER slow_disk BEFORE UPDATE ON tournaments FOR EACH ROW EXECUTE FUNCTION slow_disk()")
        .await;

    let keys: Vec<String> = (0..PRESSES).map(|n| format!("queued-{n}")).collect();
    // Next and prev in turn: the level stays in range in whatever order they are applied.
    let direction = |n: usize| if n.is_multiple_of(2) { "next" } else { "prev" };
    let presses = keys.iter().enumerate().map(|(n, key)| nodes.press(direction(n), key));
    let answers = futures::future::join_all(presses).await;
    for (key, (reply, took)) in keys.iter().zip(&answers) {
        eprintln!("{key}: {} in {took:?}: {}", reply.status, reply.body);
    }
    nodes.execute("UPDATE slow_disk SET seconds = 0").await;

    let unknown: Vec<&String> =
        keys.iter().zip(&answers).filter(|(_, (reply, _))| reply.status == 500).map(|(key, _)| key).collect();
    assert!(!unknown.is_empty(), "the owner's bound passed on some of the queue");
    for (key, (reply, took)) in keys.iter().zip(&answers) {
        match reply.status.as_u16() {
            200 => {}
            500 => {
                reply.assert_error(500, "INTERNAL_ERROR");
                assert!(*took >= OWNER_BOUND, "{key}: answered at the owner's bound, not before: {took:?}");
            }
            _ => panic!("{key}: {reply:?}"),
        }
    }
    let other = nodes.log("other");
    assert!(other.contains("did not finish the work within"), "the owner's own answer passed on:\n{other}");
    assert!(!other.contains(NO_ANSWER) && !other.contains(FROZEN), "the owner was taken for frozen:\n{other}");
    let owner = nodes.log("owner");
    assert!(owner.contains("was not finished in time"), "the owner answered by itself:\n{owner}");

    // Sent again: what each came to, applied on the owner after its answer (replayed now) or
    // applied now. A replay's body is the state as it is now, so the count is the version's.
    let applied: Vec<i64> =
        answers.iter().filter(|(reply, _)| reply.status == 200).map(|(reply, _)| version(&reply.body)).collect();
    let mut distinct = applied.clone();
    distinct.sort_unstable();
    distinct.dedup();
    assert_eq!(distinct.len(), applied.len(), "one version per acknowledged press: {applied:?}");
    for (n, (key, (reply, _))) in keys.iter().zip(&answers).enumerate() {
        if reply.status != 200 {
            let (again, took) = nodes.press(direction(n), key).await;
            let replayed = again.headers.get("idempotent-replayed").is_some();
            eprintln!(
                "{key} again: {} in {took:?}, {}",
                again.status,
                if replayed { "replayed" } else { "applied now" }
            );
            again.assert_ok();
        }
    }
    assert_eq!(nodes.live_version().await, nodes.version + PRESSES, "every press applied once");
}
