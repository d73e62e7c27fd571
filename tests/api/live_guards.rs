//! The `/live` sockets facing a hostile client: the caps of sockets per account and per
//! address (the default one too), messages held to `maxPayload` on every transport before
//! sign-in (WebSocket closes with 1009 without buffering the message), a transport that never
//! connects closed at the connect timeout, a socket that ends
//! with its token unless renewed with `auth`, and a flood of joins of unknown ids that starts
//! no actor and leaves real reads alone.

use std::time::{Duration, Instant};

use rust_socketio::TransportType;
use serde_json::{Value, json};
use uuid::Uuid;

use crate::helpers::{Backend, TEST_JWT_SECRET, spawn_app, spawn_app_with};
use crate::nodes::Node;
use crate::raw_socket::RawSocket;

fn refused_rate_limited(refusal: &str) -> bool {
    refusal.contains("RATE_LIMITED")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_account_and_an_address_hold_at_most_their_sockets() {
    let settings = [("MAX_LIVE_SOCKETS_PER_ACCOUNT", "2"), ("MAX_LIVE_SOCKETS_PER_ADDRESS", "3")];
    let Some(app) = spawn_app_with(Backend::Sqlite, &settings).await else { return };
    let players = app.sign_in_players(730, 3).await;
    let first = app.watcher(&players[0].access_token).await;
    let _second = app.watcher(&players[0].access_token).await;
    let mut third = app.watch(Some(&players[0].access_token), TransportType::Websocket).await;
    let refusal = third.connected().await.expect_err("the account's third socket is refused");
    assert!(refused_rate_limited(&refusal), "{refusal}");

    let _other = app.watcher(&players[1].access_token).await;
    let mut past_the_address = app.watch(Some(&players[2].access_token), TransportType::Websocket).await;
    let refusal = past_the_address.connected().await.expect_err("the address's fourth socket is refused");
    assert!(refused_rate_limited(&refusal), "{refusal}");

    first.close().await;
    let mut admitted = false;
    for _ in 0..50 {
        let mut again = app.watch(Some(&players[2].access_token), TransportType::Websocket).await;
        if again.connected().await.is_ok() {
            admitted = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(admitted, "a closed socket gives its places back");
    assert_eq!(app.refusals("live_sockets_per_account").await, 1);
    assert!(app.refusals("live_sockets_per_address").await >= 1);
}

/// The production default (20 sockets of one account on a node) bites.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_default_cap_of_an_account_s_sockets_is_twenty() {
    let Some(app) = spawn_app_with(Backend::Sqlite, &[("MAX_LIVE_SOCKETS_PER_ACCOUNT", "")]).await else { return };
    let player = app.sign_in("+79990007301").await;
    let mut open = Vec::new();
    for _ in 0..20 {
        open.push(app.watcher(&player.access_token).await);
    }
    let mut past = app.watch(Some(&player.access_token), TransportType::Websocket).await;
    let refusal = past.connected().await.expect_err("the 21st socket is refused");
    assert!(refused_rate_limited(&refusal), "{refusal}");
}

/// The resident memory of process `pid`, in bytes.
pub(crate) fn resident_bytes(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find_map(|line| line.strip_prefix("VmRSS:"))
        .and_then(|kb| kb.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .map_or(0, |kb| kb * 1024)
}

/// Measured on a `floor serve` of its own, so the figure is the server's alone.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_websocket_message_past_max_payload_closes_the_connection_with_1009_unbuffered() {
    let folder = tempfile::tempdir().expect("a folder");
    let database_url = format!("sqlite://{}/floor.db?mode=rwc", folder.path().display());
    let node = Node::start(&database_url, None, folder.path(), "oversize").await;

    // One frame announcing 4 MiB, before any sign-in: refused at its header.
    let mut socket = RawSocket::open(&node.base).await;
    socket.send_zeros(true, 1, 4 << 20).await;
    assert_eq!(socket.close_code().await, Some(1009));

    // A message of frames each under the limit, together over it.
    let mut socket = RawSocket::open(&node.base).await;
    socket.send_zeros(false, 1, 60_000).await;
    socket.send_zeros(true, 0, 60_000).await;
    assert_eq!(socket.close_code().await, Some(1009));

    // A message under the limit is read (and, not being Socket.IO, ends the session some
    // other way than 1009).
    let mut socket = RawSocket::open(&node.base).await;
    socket.send_zeros(true, 1, 50_000).await;
    assert_ne!(socket.close_code().await, Some(1009));

    // 24 parallel handshakes each sending 15 MiB in 4 MiB frames (as the probe did): none is
    // held, during or after.
    let before = resident_bytes(node.child.id());
    let sends = (0..24).map(|_| async {
        let mut socket = RawSocket::open(&node.base).await;
        for _ in 0..4 {
            socket.send_zeros(false, 1, 4 << 20).await;
        }
        socket.close_code().await
    });
    let codes = futures::future::join_all(sends).await;
    assert!(codes.iter().all(|code| *code == Some(1009)), "{codes:?}");
    let grown = resident_bytes(node.child.id()).saturating_sub(before);
    assert!(grown < 16 << 20, "24 × 15 MiB refused, yet the server grew by {} KiB", grown >> 10);
    eprintln!("the server grew by {} KiB for 24 × 15 MiB sent", grown >> 10);
}

/// Opens an Engine.IO long-polling session and returns its id.
async fn polling_session(app: &crate::helpers::TestApp) -> String {
    let open = app.client.get(format!("{}/socket.io/?EIO=4&transport=polling", app.base)).send().await.expect("open");
    let text = open.text().await.expect("text");
    let handshake: Value = serde_json::from_str(text.trim_start_matches('0')).expect("the open packet");
    handshake["sid"].as_str().expect("a sid").to_owned()
}

/// Posts `packets` to the long-polling session `sid`: the status and the body of the answer.
async fn post_to(app: &crate::helpers::TestApp, sid: &str, packets: String) -> (u16, String) {
    let sent = app
        .client
        .post(format!("{}/socket.io/?EIO=4&transport=polling&sid={sid}", app.base))
        .body(packets)
        .send()
        .await
        .expect("an answer");
    (sent.status().as_u16(), sent.text().await.unwrap_or_default())
}

/// A transport that never sends the `/live` connect packet is closed at `LIVE_CONNECT_TIMEOUT`:
/// a packet after it finds no session, one before it is read.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_that_never_connects_is_closed_at_the_connect_timeout() {
    let Some(app) = spawn_app_with(Backend::Sqlite, &[("LIVE_CONNECT_TIMEOUT", "1s")]).await else { return };
    let (late, prompt) = (polling_session(&app).await, polling_session(&app).await);
    let connect = |token: &str| format!("40/live,{}", json!({"token": token}));
    let token = app.sign_in_players(431, 1).await.remove(0).access_token;
    assert_eq!(post_to(&app, &prompt, connect(&token)).await.0, 200, "a connect packet within the timeout");
    tokio::time::sleep(Duration::from_millis(2_500)).await;
    let (status, body) = post_to(&app, &late, connect(&token)).await;
    assert_eq!(status, 400, "{body}");
    assert!(body.contains("Session ID unknown"), "{body}");
    // The session that connected in time is still there: a ping is read.
    assert_eq!(post_to(&app, &prompt, "3".to_owned()).await.0, 200);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_long_polling_message_past_max_payload_is_413() {
    let Some(app) = spawn_app(Backend::Sqlite).await else { return };
    let sid = polling_session(&app).await;
    let big = format!("4{}", "x".repeat(150_000));
    let (status, body) = post_to(&app, &sid, big).await;
    assert_eq!(status, 413, "{body}");
}

/// An access token of `user_id` that runs out in `seconds`, signed as the server signs.
fn token_ending_in(user_id: Uuid, seconds: i64) -> String {
    let now = chrono::Utc::now().timestamp();
    let claims = json!({"sub": user_id, "adm": false, "iat": now, "exp": now + seconds, "iss": "floor"});
    let key = jsonwebtoken::EncodingKey::from_secret(TEST_JWT_SECRET.as_bytes());
    jsonwebtoken::encode(&jsonwebtoken::Header::default(), &claims, &key).expect("a token")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_socket_ends_with_its_token_unless_renewed_with_auth() {
    let Some(app) = spawn_app(Backend::Sqlite).await else { return };
    let player = app.sign_in("+79990007310").await;
    let stranger = app.sign_in("+79990007311").await;

    let mut lapsing = app.watcher(&token_ending_in(player.user_id, 3)).await;
    let started = Instant::now();
    let said = lapsing.expired_within(Duration::from_secs(10)).await.expect("`expired` comes");
    assert_eq!(said["code"], "UNAUTHORIZED");
    assert!(lapsing.closed_within(Duration::from_secs(5)).await, "the socket is closed after `expired`");
    let took = started.elapsed();
    assert!(took >= Duration::from_secs(2) && took < Duration::from_secs(8), "{took:?}");

    let mut renewed = app.watcher(&token_ending_in(player.user_id, 3)).await;
    let refused = renewed.ask("auth", json!({"token": stranger.access_token})).await;
    assert_eq!(refused["ok"], false);
    assert_eq!(refused["error"]["code"], "FORBIDDEN", "another account's token: {refused}");
    let refused = renewed.ask("auth", json!({"token": "not a token"})).await;
    assert_eq!(refused["error"]["code"], "UNAUTHORIZED", "{refused}");
    let ack = renewed.ask("auth", json!({"token": player.access_token})).await;
    assert_eq!(ack["ok"], true, "{ack}");
    assert!(ack["expiresAt"].is_string(), "{ack}");
    assert!(renewed.expired_within(Duration::from_secs(7)).await.is_none(), "a renewed socket lives on");
    let club = app.create_club("Renewed", "+79990007312").await;
    let tournament = app.create_tournament(&club, 20, chrono::Duration::days(1)).await;
    assert_eq!(renewed.join(tournament).await["ok"], true, "and joins rooms");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flood_of_unknown_joins_starts_no_actor_and_is_paced() {
    let Some(app) = spawn_app(Backend::Sqlite).await else { return };
    let club = app.create_club("Flooded", "+79990007320").await;
    let real = app.create_tournament(&club, 20, chrono::Duration::days(1)).await;
    let prober = app.sign_in("+79990007321").await;
    let actors_before = app.state.live.actor_count();

    let mut codes = Vec::new();
    for _ in 0..8 {
        let watcher = app.watcher(&prober.access_token).await;
        for _ in 0..25 {
            let ack = watcher.join(Uuid::new_v4()).await;
            codes.push(ack["error"]["code"].as_str().unwrap_or_default().to_owned());
        }
        watcher.close().await;
    }
    let not_found = codes.iter().filter(|code| *code == "NOT_FOUND").count();
    let paced = codes.iter().filter(|code| *code == "RATE_LIMITED").count();
    assert_eq!((not_found, paced), (8 * 20, 8 * 5), "20 joins at once per socket, then its pace");
    assert_eq!(app.state.live.actor_count(), actors_before, "no actor opened for an unknown id");

    let read = app.get(&format!("/tournaments/{real}/live"), None).await;
    read.assert_ok();
    app.get(&format!("/tournaments/{}/live", Uuid::new_v4()), None).await.assert_error(404, "NOT_FOUND");
    assert!(app.refusals("live_joins").await >= 40);
}

/// A handshake whose account cannot be read (the node's database blackholed) is refused as
/// `SERVICE_UNAVAILABLE`, which says nothing against the token, never `UNAUTHORIZED`, which
/// would send the app to sign in again; once the database answers, the same token connects.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_handshake_the_node_cannot_check_is_unavailable_not_unauthorized() {
    let Some(first) = spawn_app(Backend::Postgres).await else { return };
    let proxy = crate::fault_proxy::FaultProxy::start("127.0.0.1:5432").await;
    let node = crate::helpers::spawn_on_with(&proxy.in_front_of_postgres(&first.database_url, 5432), &[]).await;
    let player = node.sign_in_players(731, 1).await.remove(0);
    proxy.blackhole();
    let mut refused = node.watch(Some(&player.access_token), TransportType::Websocket).await;
    let refusal = refused.connected().await.expect_err("no account read, no admission");
    assert!(refusal.contains("SERVICE_UNAVAILABLE"), "{refusal}");
    proxy.heal();
    let mut admitted = false;
    for _ in 0..50 {
        let mut again = node.watch(Some(&player.access_token), TransportType::Websocket).await;
        if again.connected().await.is_ok() {
            admitted = true;
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    }
    assert!(admitted, "the same token connects once the database answers");
}
