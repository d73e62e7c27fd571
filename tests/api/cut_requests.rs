//! A live command or a queue whose connection is cut after it was sent, at any moment: the
//! client does not know what happened, sends it again with the same keys, and gets each
//! command's true outcome at once, each applied exactly once. A key stands for one command of
//! one tournament: used for another, it refuses (`IDEMPOTENCY_KEY_REUSED`) and applies nothing.

use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::AsyncWriteExt as _;

use crate::helpers::{Backend, Reply, TestApp, on_both_databases, spawn_app};
use crate::live::{Ready, ready, seated_ids, version};

on_both_databases!(
    a_press_cut_at_any_moment_and_sent_again_is_applied_once,
    a_queue_cut_at_any_moment_and_sent_again_is_applied_once,
    a_key_of_another_tournament_or_command_refuses_and_applies_nothing,
    a_queue_sent_again_whose_first_command_was_refused_is_answered_command_by_command,
);

/// The moments after sending at which a request's connection is cut, in milliseconds.
const CUTS: [u64; 6] = [1, 3, 8, 20, 60, 150];

/// Sends `body` to `path` as the club's owner with `key`, and closes the connection `cut` after
/// sending, as an app does when its network drops: on a socket of its own, so the close reaches
/// the server at once (an HTTP client's pool would keep the connection until the answer came).
/// The server sees the end of the connection while it runs the command.
async fn cut(app: &TestApp, day: &Ready, path: &str, body: &Value, key: &str, cut: Duration) {
    let url = reqwest::Url::parse(&app.url(path)).expect("a url");
    let address = format!("{}:{}", url.host_str().expect("a host"), url.port().expect("a port"));
    let body = serde_json::to_vec(body).expect("json");
    let head = format!(
        "POST {} HTTP/1.1\r\nHost: {address}\r\nAuthorization: Bearer {}\r\nIdempotency-Key: {key}\r\n\
         Content-Type: application/json\r\nContent-Length: {}\r\n\r\n",
        url.path(),
        day.club.owner.access_token,
        body.len()
    );
    let mut stream = tokio::net::TcpStream::connect(&address).await.expect("connected");
    stream.write_all(head.as_bytes()).await.expect("sent");
    stream.write_all(&body).await.expect("sent");
    tokio::time::sleep(cut).await;
    // Answered before the cut (a fast server) is fine too: what counts is the next sending.
    drop(stream);
}

async fn keyed(app: &TestApp, day: &Ready, path: &str, body: &Value, key: &str) -> Reply {
    let headers = [("Idempotency-Key", key)];
    app.call_with(reqwest::Method::POST, path, Some(&day.club.owner.access_token), Some(body.clone()), &headers).await
}

async fn a_press_cut_at_any_moment_and_sent_again_is_applied_once(backend: Backend) {
    let Some(app) = spawn_app(backend).await else { return };
    let day = ready(&app, "+79990960001", 961, 3).await;
    let started = day.start(&app).await;
    let next = json!({"direction": "next"});
    for (n, after) in CUTS.iter().enumerate() {
        let key = format!("level-{n}");
        cut(&app, &day, &day.path("level"), &next, &key, Duration::from_millis(*after)).await;
        let again = keyed(&app, &day, &day.path("level"), &next, &key).await;
        assert_eq!(again.status, 200, "cut after {after} ms: {again:?}");
        assert_eq!(again.body["clock"]["currentLevelIdx"], n + 1, "cut after {after} ms: one step per press");
    }
    let state = day.live(&app).await;
    assert_eq!(state["clock"]["currentLevelIdx"], CUTS.len());
    assert_eq!(version(&state), version(&started) + CUTS.len() as i64, "each press applied once");
    let steps = app.count("SELECT COUNT(*) FROM audit_log WHERE action = 'tournament.level_next'").await;
    assert_eq!(steps, CUTS.len() as i64);

    // An elimination cut and sent again: out once, with its place, never ALREADY_ELIMINATED.
    let target = seated_ids(&state)[0];
    let body = json!({"tournamentId": day.id, "registrationId": target});
    cut(&app, &day, "/eliminations", &body, "out", Duration::from_millis(2)).await;
    let again = keyed(&app, &day, "/eliminations", &body, "out").await;
    assert_eq!(again.status, 200, "{again:?}");
    assert_eq!(again.body["elimination"]["registrationId"], json!(target));
    assert_eq!(again.body["elimination"]["place"], 3);
    assert_eq!(day.live(&app).await["remaining"], 2);
}

/// A queue of `count` pauses and resumes, a millisecond apart from now (after every command
/// applied before), ending with a step to the next level; keys `{prefix}-{n}`.
fn queue(prefix: &str, count: usize) -> Value {
    let first = chrono::Utc::now();
    let commands: Vec<Value> = (0..count)
        .map(|n| {
            let (command, body) = match n {
                n if n + 1 == count => ("level", json!({"direction": "next"})),
                n if n % 2 == 0 => ("pause", json!({})),
                _ => ("resume", json!({})),
            };
            json!({
                "command": command,
                "body": body,
                "occurredAt": (first + chrono::Duration::milliseconds(n as i64)).to_rfc3339(),
                "idempotencyKey": format!("{prefix}-{n}"),
            })
        })
        .collect();
    json!({"commands": commands})
}

async fn a_queue_cut_at_any_moment_and_sent_again_is_applied_once(backend: Backend) {
    let Some(app) = spawn_app(backend).await else { return };
    let day = ready(&app, "+79990960101", 962, 2).await;
    let mut expected = version(&day.start(&app).await);
    let count = 41;
    for (round, after) in CUTS.iter().enumerate() {
        let body = queue(&format!("q{round}"), count);
        cut(&app, &day, &day.path("replay"), &body, "unused", Duration::from_millis(*after)).await;
        let again = app.post(&day.path("replay"), Some(&day.club.owner.access_token), body.clone()).await;
        let results = again.assert_ok()["results"].as_array().expect("results").clone();
        assert_eq!(results.len(), count);
        for result in &results {
            assert_ne!(result["outcome"], "refused", "cut after {after} ms, nothing is refused: {result}");
        }
        expected += count as i64;
        assert_eq!(version(&again.body["state"]), expected, "cut after {after} ms: each command applied once");
        assert_eq!(again.body["state"]["clock"]["currentLevelIdx"], round + 1, "one step per queue");
        // And once more: every command as it was kept, nothing applied.
        let third = app.post(&day.path("replay"), Some(&day.club.owner.access_token), body).await;
        let outcomes = third.assert_ok()["results"].as_array().expect("results").clone();
        assert!(outcomes.iter().all(|result| result["outcome"] == "replayed"), "{outcomes:?}");
        assert_eq!(version(&third.body["state"]), expected);
    }
}

async fn a_key_of_another_tournament_or_command_refuses_and_applies_nothing(backend: Backend) {
    let Some(app) = spawn_app(backend).await else { return };
    // Two clubs of one owner (one account), each with a running tournament.
    let one = ready(&app, "+79990960201", 963, 2).await;
    let other = ready(&app, "+79990960201", 964, 2).await;
    one.start(&app).await;
    let other_started = other.start(&app).await;
    let now = chrono::Utc::now().to_rfc3339();
    let pause = |key: &str| json!({"commands": [{"command": "pause", "occurredAt": now, "idempotencyKey": key}]});
    let token = one.club.owner.access_token.clone();

    let applied = app.post(&one.path("replay"), Some(&token), pause("k")).await;
    assert_eq!(applied.assert_ok()["results"][0]["outcome"], "applied");
    // The same key on the other tournament: refused, the other tournament not paused.
    let elsewhere = app.post(&other.path("replay"), Some(&other.club.owner.access_token), pause("k")).await;
    let result = &elsewhere.assert_ok()["results"][0];
    assert_eq!(result["outcome"], "refused", "{result}");
    assert_eq!(result["error"]["code"], "IDEMPOTENCY_KEY_REUSED");
    let state = other.live(&app).await;
    assert!(state["clock"]["pausedAt"].is_null(), "nothing applied on the other tournament");
    assert_eq!(version(&state), version(&other_started));

    // The same key for another command of the same tournament: refused, the player still in.
    let target = seated_ids(&one.live(&app).await)[0];
    let eliminate = json!({"commands": [{
        "command": "eliminate", "body": {"registrationId": target}, "occurredAt": chrono::Utc::now().to_rfc3339(),
        "idempotencyKey": "k",
    }]});
    let reused = app.post(&one.path("replay"), Some(&token), eliminate).await;
    assert_eq!(reused.assert_ok()["results"][0]["error"]["code"], "IDEMPOTENCY_KEY_REUSED");
    assert_eq!(one.live(&app).await["remaining"], 2);

    // A key first used on a live route answers for that command only.
    keyed(&app, &one, &one.path("resume"), &json!({}), "live").await.assert_ok();
    let queued = json!({"commands": [{"command": "resume", "occurredAt": chrono::Utc::now().to_rfc3339(), "idempotencyKey": "live"}]});
    let same = app.post(&one.path("replay"), Some(&token), queued).await;
    assert_eq!(same.assert_ok()["results"][0]["outcome"], "replayed", "the same command, sent live first");
    let live_then_other = keyed(&app, &other, &other.path("resume"), &json!({}), "live").await;
    live_then_other.assert_error(409, "IDEMPOTENCY_KEY_REUSED");
}

/// The history run's finding: a queue whose first command was refused (a step back from the
/// first level), cut and sent again, was refused as a whole with that command's code
/// (`409 INVALID_LEVEL`), so the app took its other commands, applied by the first sending, for
/// refused. The server runs a command detached from its request, so a cut first sending is,
/// for the second, one whose answer was lost: the test sends it whole and drops the answer.
async fn a_queue_sent_again_whose_first_command_was_refused_is_answered_command_by_command(backend: Backend) {
    let Some(app) = spawn_app(backend).await else { return };
    let day = ready(&app, "+79990960401", 966, 3).await;
    let started = version(&day.start(&app).await);
    let target = seated_ids(&day.live(&app).await)[0];
    let now = chrono::Utc::now();
    let when = |ms| (now + chrono::Duration::milliseconds(ms)).to_rfc3339();
    let body = json!({"commands": [
        {"command": "level", "body": {"direction": "prev"}, "occurredAt": when(0), "idempotencyKey": "back"},
        {"command": "eliminate", "body": {"registrationId": target}, "occurredAt": when(1), "idempotencyKey": "out"},
        {"command": "pause", "body": {}, "occurredAt": when(2), "idempotencyKey": "stop"},
    ]});
    let token = &day.club.owner.access_token;
    let first = app.post(&day.path("replay"), Some(token), body.clone()).await;
    let outcomes = |answer: &Value| -> Vec<(Value, Value)> {
        let results = answer["results"].as_array().expect("results");
        results.iter().map(|result| (result["outcome"].clone(), result["error"]["code"].clone())).collect()
    };
    let applied = (json!("applied"), Value::Null);
    assert_eq!(outcomes(first.assert_ok()), [(json!("refused"), json!("INVALID_LEVEL")), applied.clone(), applied]);

    let again = app.post(&day.path("replay"), Some(token), body).await;
    let replayed = (json!("replayed"), Value::Null);
    assert_eq!(outcomes(again.assert_ok()), [(json!("replayed"), json!("INVALID_LEVEL")), replayed.clone(), replayed]);
    assert_eq!(version(&again.body["state"]), started + 2, "the elimination and the pause, once each");
    assert_eq!(again.body["state"]["remaining"], 2);
}

/// The request cut while the tournament's row is held by another transaction, so the command
/// is surely under way when the client hangs up, and sent again while it still waits: the
/// queue is applied once the row is free, and every command of the second sending is answered
/// by what it came to. On PostgreSQL, whose row locks let the test hold the command mid-way.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_queue_cut_while_under_way_and_sent_again_is_applied_once() {
    let Some(app) = spawn_app(Backend::Postgres).await else { return };
    let day = ready(&app, "+79990960301", 965, 2).await;
    let started = version(&day.start(&app).await);
    let count = 41;
    let body = queue("held", count);

    let held = app.hold_tournament_row(day.id).await;
    cut(&app, &day, &day.path("replay"), &body, "unused", Duration::from_millis(300)).await;
    let again = {
        let (app_url, token, body) = (app.url(&day.path("replay")), day.club.owner.access_token.clone(), body.clone());
        tokio::spawn(async move {
            let reply = reqwest::Client::new().post(app_url).bearer_auth(token).json(&body).send().await;
            let reply = reply.expect("the server answers");
            (reply.status().as_u16(), reply.json::<Value>().await.expect("json"))
        })
    };
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(version(&day.live(&app).await), started, "the first sending waits for the row");
    held.rollback().await.expect("the row free again");
    let (status, answer) = again.await.expect("sent");
    assert_eq!(status, 200, "{answer}");
    let results = answer["results"].as_array().expect("results");
    assert!(results.iter().all(|result| result["outcome"] == "replayed"), "the first sending applied them: {answer}");
    assert_eq!(version(&answer["state"]), started + count as i64, "each command applied once");
    assert_eq!(version(&day.live(&app).await), started + count as i64);
}
