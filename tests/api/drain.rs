//! A node drained under real phones (issue 48): two `floor serve` processes behind
//! `deploy/haproxy.cfg`, a few hundred official socket.io-client 4.x watchers
//! (`tests/contract/drain-watchers.mjs`) spread over both, the club pressing every 500 ms, and
//! one node terminated as a rolling deploy does. socket.io-client retries a failed transport or
//! an HTTP error on the Engine.IO handshake, but not a namespace refusal (`connect_error`
//! "Invalid namespace"): a watcher refused so stays dark until its app restarts. Every watcher
//! must end current, none stranded.

use std::time::{Duration, Instant};

use serde_json::json;
use uuid::Uuid;

use crate::helpers::{Backend, test_redis_url};
use crate::live::version;
use crate::live::{Ready, ready};
use crate::load_balancer::{Balancer, haproxy};
use crate::nodes::{Node, press};
use crate::official_watchers::{Crowd, Watchers, watchers_script};

/// The watchers: a few hundred, as a venue's phones, in one Node process.
const WATCHERS: usize = 300;
/// How long a watcher may take to hear the press after the drain.
const CURRENT_WITHIN: Duration = Duration::from_secs(3);
/// The watchers' first reconnection waits this long (randomized by half either way, doubling up
/// to five times it): socket.io-client's default is 1 s, over which 2,000 phones spread across
/// a drain of a second or more; a tenth of it packs the reconnections of a few hundred into the
/// drain of their 150 the same way.
const FIRST_RECONNECT_MS: u64 = 100;
/// The watchers offer permessage-deflate, as socket.io-client does unless told otherwise.
const DEFLATE: bool = true;
/// The club presses this often, as the bench's rolling restart does.
const PRESS_EVERY: Duration = Duration::from_millis(500);

/// A pause or resume of the club's owner on `node`, answered `200`: its version.
async fn press_on(client: &reqwest::Client, node: &Node, game: &Ready, n: usize) -> i64 {
    let action = if n.is_multiple_of(2) { "pause" } else { "resume" };
    let key = Uuid::new_v4().to_string();
    let (status, state) =
        press(client, node, game, &game.path(action), json!({}), &key).await.expect("the staying node answers");
    assert_eq!(status, 200, "press {n}: {state}");
    version(&state)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_node_drained_behind_haproxy_strands_no_socket_io_client_watcher() {
    let the_box = crate::the_box::whole().await;
    let Some(binary) = haproxy() else { return };
    let Some(script) = watchers_script() else { return };
    let Some(redis) = test_redis_url().await else { return };
    let Some(setup) = the_box.spawn_app_with(Backend::Postgres, &[]).await else { return };
    let game = ready(&setup, "+79990048000", 480, 2).await;
    let logs = tempfile::tempdir().expect("a folder for the logs");
    let first = Node::start(&setup.database_url, Some(redis), logs.path(), "first").await;
    let second = Node::start(&setup.database_url, Some(redis), logs.path(), "second").await;
    let (_balancer, origin) = Balancer::start(binary, [&first.base, &second.base]);
    let client = reqwest::Client::new();
    let key = Uuid::new_v4().to_string();
    let (status, started) = press(&client, &second, &game, &game.path("start"), json!({}), &key).await.expect("sent");
    assert_eq!(status, 200, "{started}");

    let crowd = Crowd { watchers: WATCHERS, first_reconnect_ms: FIRST_RECONNECT_MS, deflate: DEFLATE };
    let mut watchers = Watchers::spawn(&script, &origin, &game, &crowd);
    let all = WATCHERS as u64;
    let report = watchers.until(Duration::from_secs(30), |report| report.joined() == all).await;
    assert_eq!(report.joined(), all, "every watcher joined through the balancer: {}", report.summary());

    // A rolling deploy's first step: the first node leaves while the club keeps pressing on
    // the node that stays, until the first has exited.
    first.terminate();
    let terminated = Instant::now();
    let mut first = first;
    let mut presses = 0;
    let exited = loop {
        press_on(&client, &second, &game, presses).await;
        presses += 1;
        tokio::time::sleep(PRESS_EVERY).await;
        if let Some(exit) = first.child.try_wait().expect("a status") {
            break exit;
        }
        assert!(terminated.elapsed() < Duration::from_secs(30), "the terminated node exits within 30 s");
    };
    assert!(exited.success(), "a graceful exit: {exited:?}");
    eprintln!("the first node exited {:?} after SIGTERM, {presses} presses meanwhile", terminated.elapsed());

    // The backoff reaches 0.5 s: every watcher that can come back is back well within this.
    let report = watchers.until(Duration::from_secs(15), |report| report.joined() == all).await;
    eprintln!("after the drain: {}", report.summary());
    assert_eq!(report.invalid_namespace(), 0, "no watcher was refused the namespace: {}", report.summary());
    assert_eq!(report.stranded(), 0, "no watcher is stranded: {}", report.summary());
    assert_eq!(report.joined(), all, "every watcher is back: {}", report.summary());

    let last = press_on(&client, &second, &game, presses).await;
    let pressed = Instant::now();
    let report = watchers.until(CURRENT_WITHIN, |report| report.behind(last) == 0).await;
    let behind = report.behind(last);
    assert_eq!(behind, 0, "every watcher heard the press within {CURRENT_WITHIN:?}: {}", report.summary());
    eprintln!("every watcher heard the press after the drain within {:?}", pressed.elapsed());
}
