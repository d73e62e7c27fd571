//! A client's reads never go back, whichever node answers them: a node that cannot check its
//! copy against the database (PostgreSQL slow to it, Redis down so no note came) serves what it
//! holds to a client that says nothing, but never a version older than the one a client says
//! it has seen (the version in its `If-None-Match` tag, its join's `version`). Found by the
//! history checker (`tests/api/history.rs`): reads behind what the same client had been
//! answered, while PostgreSQL was slowed to 2.5 s a statement.

use std::time::{Duration, Instant};

use reqwest::Method;
use serde_json::json;

use crate::fault_proxy::FaultProxy;
use crate::helpers::{Backend, Reply, spawn_app_with, spawn_on_with};
use crate::live::{ready, staff, version};
use crate::own_redis::OwnRedis;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_node_behind_a_version_the_client_has_seen_refuses_rather_than_go_back() {
    let Some(mut redis) = OwnRedis::start() else { return };
    let url = redis.url();
    let Some(owner) = spawn_app_with(Backend::Postgres, &[("REDIS_URL", url.as_str())]).await else { return };
    let proxy = FaultProxy::start("127.0.0.1:5432").await;
    let behind =
        spawn_on_with(&proxy.in_front_of_postgres(&owner.database_url, 5432), &[("REDIS_URL", url.as_str())]).await;
    let game = ready(&owner, "+79997600070", 976, 2).await;
    game.start(&owner).await;
    let live = game.path("live");
    // The second node follows the tournament from here.
    let held = version(behind.get(&live, None).await.assert_ok());

    // No note reaches it now, and its database answers a statement in 2.5 s.
    redis.kill();
    let seen = version(staff(&owner, &game.club, &game.path("pause"), json!({})).await.assert_ok());
    assert!(seen > held, "the pause is a new version: {seen} after {held}");
    proxy.delay(Duration::from_millis(2500));
    let tag = format!("W/\"{}-{seen}\"", game.id);

    // A client that has seen the pause is not shown the state before it.
    let asked = Instant::now();
    let read = behind.call_with(Method::GET, &live, None, None, &[("if-none-match", &tag)]).await;
    let took = asked.elapsed();
    read.assert_error(503, "SERVICE_UNAVAILABLE");
    assert!(took < Duration::from_secs(2), "refused in {took:?}, within a live read's second or so");
    let watcher = behind.watcher(&game.players[0].access_token).await;
    let joined = watcher.join_with(json!({"tournamentId": game.id, "version": seen})).await;
    assert_eq!(joined["ok"], false, "a join holding the pause is not acked the state before it: {joined}");
    assert_eq!(joined["error"]["code"], "SERVICE_UNAVAILABLE", "{joined}");
    // One that says nothing is served what the node holds, at once, as while PostgreSQL is out.
    let asked = Instant::now();
    let unsaid = behind.get(&live, None).await;
    assert_eq!(version(unsaid.assert_ok()), held, "what it holds");
    assert!(asked.elapsed() < Duration::from_secs(1), "served in {:?}", asked.elapsed());

    // Once its database answers again, the same client is served the pause.
    proxy.heal();
    let read = eventually_served(&behind, &live, &tag).await;
    assert!(
        read.status == 304 || (read.status == 200 && version(&read.body) >= seen),
        "served again, not behind {seen}: {read:?}"
    );
    let joined = watcher.join_with(json!({"tournamentId": game.id, "version": seen})).await;
    assert_eq!(joined["ok"], true, "{joined}");
    watcher.close().await;
}

/// The read of `path` with `tag` once it is not refused, within ten seconds.
async fn eventually_served(node: &crate::helpers::TestApp, path: &str, tag: &str) -> Reply {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let read = node.call_with(Method::GET, path, None, None, &[("if-none-match", tag)]).await;
        if read.status != 503 || Instant::now() > deadline {
            return read;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}
