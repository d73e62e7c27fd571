//! permessage-deflate on `/live` WebSockets, seen on the wire: a socket that offers it gets
//! every message of 1 KiB and more compressed (the same bytes as every other such socket), the
//! small ones plain; a socket that offers nothing, or something unacceptable or malformed,
//! goes on plain; a client's compressed message is read, a compressed bomb and RSV1 without
//! the extension close that connection alone. The real clients are in `live_clients`.

use serde_json::{Value, json};

use crate::helpers::{Backend, TestApp, on_both_databases, spawn_app, spawn_app_with, test_redis_url};
use crate::live::{Ready, ready, staff};
use crate::live_guards::resident_bytes;
use crate::raw_socket::{CHROME_OFFER, DEFLATE_ANSWER, Message, RawSocket, SYNC_FLUSH, inflate};

on_both_databases!(a_socket_that_offers_deflate_gets_each_large_message_compressed_as_every_such_socket);

/// The payload of a Socket.IO event or ack message (`42/live,["state",{…}]`, `43/live,1[{…}]`).
fn payload(message: &Message) -> Value {
    let json = &message.text[message.text.find('[').expect("an event or an ack")..];
    let args: Vec<Value> = serde_json::from_str(json).expect("JSON arguments");
    args.into_iter().last().expect("an argument")
}

/// A started tournament with enough players that its state is several KiB.
async fn started(app: &TestApp, owner_phone: &str, prefix: u32) -> Ready {
    let day = ready(app, owner_phone, prefix, 12).await;
    day.start(app).await;
    day
}

async fn signed_in(app: &TestApp, offer: Option<&str>, token: &str) -> RawSocket {
    let mut socket = RawSocket::offering(&app.base, offer.map(str::as_bytes)).await;
    let connected = socket.sign_in(token).await;
    assert!(!connected.compressed, "a small message goes plain");
    socket
}

async fn a_socket_that_offers_deflate_gets_each_large_message_compressed_as_every_such_socket(backend: Backend) {
    let Some(app) = spawn_app(backend).await else { return };
    let day = started(&app, "+79990430001", 431).await;
    let token = &day.players[0].access_token;
    let mut chrome = signed_in(&app, Some(CHROME_OFFER), token).await;
    let mut bare = signed_in(&app, Some("permessage-deflate"), token).await;
    let mut plain = signed_in(&app, None, token).await;
    assert_eq!(chrome.extensions.as_deref(), Some(DEFLATE_ANSWER));
    assert_eq!(bare.extensions.as_deref(), Some(DEFLATE_ANSWER));
    assert_eq!(plain.extensions, None);

    let mut version = None;
    for (socket, compressed) in [(&mut chrome, true), (&mut bare, true), (&mut plain, false)] {
        let ack = socket.join(day.id).await;
        assert_eq!(ack.compressed, compressed, "the ack with the state: {} bytes", ack.text.len());
        let joined = payload(&ack);
        assert_eq!(joined["ok"], true, "{joined}");
        assert!(ack.text.len() > 2_000, "{} bytes", ack.text.len());
        version.get_or_insert(joined["state"]["version"].clone());
        assert_eq!(joined["state"]["version"], version.clone().unwrap_or_default());
    }

    let paused = staff(&app, &day.club, &day.path("pause"), json!({})).await.assert_ok().clone();
    let (by_chrome, by_bare, by_plain) = (
        chrome.message_starting("42/live,[\"state\"").await,
        bare.message_starting("42/live,[\"state\"").await,
        plain.message_starting("42/live,[\"state\"").await,
    );
    assert_eq!(payload(&by_plain)["version"], paused["version"]);
    assert!(by_chrome.compressed && by_bare.compressed && !by_plain.compressed);
    assert_eq!(by_chrome.text, by_plain.text, "the same message, inflated");
    assert_eq!(by_chrome.wire, by_bare.wire, "one compression for both");
    assert_eq!(by_plain.wire, by_plain.text.as_bytes(), "plain is the text itself");
    assert!(
        by_chrome.wire.len() * 3 < by_plain.wire.len(),
        "{} bytes compressed against {}",
        by_chrome.wire.len(),
        by_plain.wire.len()
    );
}

/// A join's ack is compressed around the one compression of its state's text after
/// `serverTime`: the ack's first piece, up to a sync flush, is its text up to the moment of the
/// answer, and every socket's ack of that state ends in the same bytes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_join_s_ack_is_compressed_around_its_state_s_one_compression() {
    let Some(app) = spawn_app(Backend::Sqlite).await else { return };
    let day = ready(&app, "+79990430007", 437, 40).await;
    day.start(&app).await;
    let token = &day.players[0].access_token;
    let mut acks = Vec::new();
    for _ in 0..2 {
        let mut socket = signed_in(&app, Some(CHROME_OFFER), token).await;
        acks.push(socket.join(day.id).await);
    }
    let mut rests = Vec::new();
    for ack in &acks {
        assert!(ack.compressed);
        let time = ack.text.find(r#""serverTime":""#).expect("a serverTime") + r#""serverTime":""#.len();
        let time_ends = time + ack.text[time..].find('"').expect("a quoted time") + 1;
        assert!(ack.text.len() - time_ends > 4096, "a state too small to be kept: {} bytes", ack.text.len());
        let flush = ack.wire.windows(4).position(|four| four == SYNC_FLUSH).expect("a piece ended by a sync flush");
        assert_eq!(String::from_utf8(inflate(&ack.wire[..flush])).expect("text"), &ack.text[..time_ends]);
        rests.push(&ack.wire[flush..]);
    }
    assert_ne!(acks[0].text, acks[1].text, "two moments");
    assert_eq!(rests[0], rests[1], "the state's one compression");
}

/// A client may compress what it sends; a message inflating past `maxPayload` (100,000) is
/// refused with 1009 as it inflates, and only its connection closes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_clients_compressed_message_is_read_and_a_bomb_closes_only_its_connection() {
    let Some(app) = spawn_app(Backend::Sqlite).await else { return };
    let day = started(&app, "+79990430002", 432).await;
    let token = &day.players[0].access_token;
    let mut socket = signed_in(&app, Some(CHROME_OFFER), token).await;
    let join = format!(r#"42/live,1["join",{{"tournamentId":"{}"}}]"#, day.id);
    socket.send_deflated(join.as_bytes()).await;
    assert_eq!(payload(&socket.message_starting("43/live,1[").await)["ok"], true);

    let mut bomber = signed_in(&app, Some(CHROME_OFFER), token).await;
    let bomb = format!("42/live,[\"join\",\"{}\"]", "a".repeat(16 << 20));
    let compressed = crate::raw_socket::deflate(bomb.as_bytes());
    assert!(compressed.len() < 100_000, "the bomb itself is under maxPayload: {}", compressed.len());
    bomber.send(true, 1, &compressed).await;
    assert_eq!(bomber.close_code().await, Some(1009));

    // The other socket goes on.
    let paused = staff(&app, &day.club, &day.path("pause"), json!({})).await.assert_ok().clone();
    let state = socket.message_starting("42/live,[\"state\"").await;
    assert_eq!(payload(&state)["version"], paused["version"]);
}

/// 24 bombs at once, each 16 MiB once inflated: the server never holds them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bombs_are_refused_before_they_are_allocated() {
    let folder = tempfile::tempdir().expect("a folder");
    let database_url = format!("sqlite://{}/floor.db?mode=rwc", folder.path().display());
    let node = crate::nodes::Node::start(&database_url, None, folder.path(), "bombs").await;
    let compressed = crate::raw_socket::deflate("a".repeat(16 << 20).as_bytes());
    let before = resident_bytes(node.child.id());
    let bombs = (0..24).map(|_| {
        let (base, compressed) = (node.base.clone(), compressed.clone());
        tokio::spawn(async move {
            let mut bomber = RawSocket::offering(&base, Some(CHROME_OFFER.as_bytes())).await;
            bomber.send(true, 1, &compressed).await;
            bomber.close_code().await
        })
    });
    for closed in futures::future::join_all(bombs).await {
        assert_eq!(closed.expect("the bomber ran"), Some(1009));
    }
    let grown = resident_bytes(node.child.id()).saturating_sub(before);
    assert!(grown < 16 << 20, "the server grew by {grown} bytes for 24 bombs of 16 MiB");
}

/// RSV1 means nothing on a connection that negotiated nothing: 1002, for that one alone.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rsv1_without_the_extension_closes_that_connection_with_1002() {
    let Some(app) = spawn_app(Backend::Sqlite).await else { return };
    let day = started(&app, "+79990430003", 433).await;
    let token = &day.players[0].access_token;
    let mut bystander = signed_in(&app, None, token).await;
    let mut plain = signed_in(&app, None, token).await;
    plain.send_deflated(format!(r#"42/live,1["join",{{"tournamentId":"{}"}}]"#, day.id).as_bytes()).await;
    assert_eq!(plain.close_code().await, Some(1002));
    assert_eq!(payload(&bystander.join(day.id).await)["ok"], true);
}

/// An offer Floor cannot honour, or a header that does not parse, is declined: the upgrade
/// goes through without the extension and the socket works plainly.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unacceptable_or_malformed_offers_are_declined_and_the_socket_works_plainly() {
    let Some(app) = spawn_app(Backend::Sqlite).await else { return };
    let day = started(&app, "+79990430004", 434).await;
    let token = &day.players[0].access_token;
    let offers: [&[u8]; 10] = [
        b"permessage-deflate; server_max_window_bits=10",
        b"permessage-deflate; client_max_window_bits=16",
        b"permessage-deflate; unknown_parameter",
        b"permessage-deflate; client_no_context_takeover; client_no_context_takeover",
        b"x-webkit-deflate-frame",
        b"permessage-deflate; client_max_window_bits=\"15",
        b"permessage-deflate;; client_max_window_bits",
        b"permessage-deflate, @@@",
        b"permessage-deflate; client_max_window_bits=99999999999999999999999",
        b"permessage-deflate\xff\xfe",
    ];
    for offer in offers {
        let mut socket = RawSocket::offering(&app.base, Some(offer)).await;
        assert_eq!(socket.extensions, None, "{}", String::from_utf8_lossy(offer));
        socket.sign_in(token).await;
        let ack = socket.join(day.id).await;
        assert!(!ack.compressed);
        assert_eq!(payload(&ack)["ok"], true);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn live_deflate_false_declines_every_offer() {
    let Some(app) = spawn_app_with(Backend::Sqlite, &[("LIVE_DEFLATE", "false")]).await else { return };
    let day = started(&app, "+79990430005", 435).await;
    let mut socket = signed_in(&app, Some(CHROME_OFFER), &day.players[0].access_token).await;
    assert_eq!(socket.extensions, None);
    let ack = socket.join(day.id).await;
    assert!(!ack.compressed);
    assert_eq!(payload(&ack)["ok"], true);
}

/// A change made on one node reaches a compressing socket on another, once and in order.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_redis_a_change_on_one_node_reaches_a_compressing_socket_on_another() {
    let Some(redis_url) = test_redis_url().await else { return };
    let Some(first) = spawn_app_with(Backend::Postgres, &[("REDIS_URL", redis_url)]).await else { return };
    let second = first.second_node(&[("REDIS_URL", redis_url)]).await;
    let day = started(&first, "+79990430006", 436).await;
    let mut socket = signed_in(&second, Some(CHROME_OFFER), &day.players[0].access_token).await;
    assert_eq!(payload(&socket.join(day.id).await)["ok"], true);
    let mut pressed = Vec::new();
    for action in ["pause", "resume", "pause"] {
        pressed.push(staff(&first, &day.club, &day.path(action), json!({})).await.assert_ok()["version"].clone());
    }
    for version in pressed {
        let state = socket.message_starting("42/live,[\"state\"").await;
        assert!(state.compressed);
        assert_eq!(payload(&state)["version"], version);
    }
}
