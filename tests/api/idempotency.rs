//! A live command sent again with its `Idempotency-Key` is not applied again: the same
//! account gets what it came to the first time within ten minutes, also while the first still
//! runs, and however the first request ended (the key is kept with the command).

use floor_entities::idempotency_keys;
use futures::future::join_all;
use reqwest::Method;
use sea_orm::EntityTrait;
use sea_orm::sea_query::Expr;
use serde_json::{Value, json};

use crate::helpers::{Backend, Reply, TestApp, on_both_databases, spawn_app};
use crate::live::{Ready, ready, seated_ids, version};

on_both_databases!(
    a_retried_level_press_moves_the_clock_once,
    ten_copies_at_once_apply_once_and_all_get_the_first_answer,
    a_key_is_the_accounts_own_and_names_one_request,
    a_first_refusal_is_replayed_as_it_was,
    a_key_is_free_again_after_ten_minutes,
    a_malformed_key_is_refused_and_nothing_happens,
);

const KEY: &str = "b0f7f3c2-6a0e-4c1d-9a57-0d7a4f1e2c3b";

/// A command of the club's owner with `key`.
async fn press(app: &TestApp, day: &Ready, path: &str, body: Value, key: &str) -> Reply {
    let headers = [("Idempotency-Key", key)];
    app.call_with(Method::POST, path, Some(&day.club.owner.access_token), Some(body), &headers).await
}

fn replayed(reply: &Reply) -> bool {
    reply.headers.get("idempotent-replayed").is_some_and(|value| value == "true")
}

async fn level_moves(app: &TestApp) -> i64 {
    app.count("SELECT COUNT(*) FROM audit_log WHERE action = 'tournament.level_next'").await
}

async fn a_retried_level_press_moves_the_clock_once(backend: Backend) {
    let Some(app) = spawn_app(backend).await else { return };
    let day = ready(&app, "+79990900001", 901, 2).await;
    let started = day.start(&app).await;

    let first = press(&app, &day, &day.path("level"), json!({"direction": "next"}), KEY).await;
    let first_state = first.assert_ok().clone();
    assert!(!replayed(&first));
    let retry = press(&app, &day, &day.path("level"), json!({"direction": "next"}), KEY).await;
    assert_eq!(retry.assert_ok()["version"], first_state["version"], "the first answer again");
    assert_eq!(retry.body["clock"], first_state["clock"]);
    assert!(replayed(&retry));

    let state = day.live(&app).await;
    assert_eq!(state["clock"]["currentLevelIdx"], 1, "one step, not two");
    assert_eq!(version(&state), version(&started) + 1);
    assert_eq!(level_moves(&app).await, 1);

    // A new key is a new command.
    press(&app, &day, &day.path("level"), json!({"direction": "next"}), "another-key").await.assert_ok();
    assert_eq!(day.live(&app).await["clock"]["currentLevelIdx"], 2);
}

async fn ten_copies_at_once_apply_once_and_all_get_the_first_answer(backend: Backend) {
    let Some(app) = spawn_app(backend).await else { return };
    let day = ready(&app, "+79990900101", 911, 3).await;
    let started = day.start(&app).await;
    let target = seated_ids(&started)[0];
    let body = json!({"tournamentId": day.id, "registrationId": target});

    let replies = join_all((0..10).map(|_| press(&app, &day, "/eliminations", body.clone(), KEY))).await;
    for reply in &replies {
        assert_eq!(reply.status, 200, "every copy gets the first answer, none ALREADY_ELIMINATED: {replies:?}");
        assert_eq!(reply.body["state"]["version"], version(&started) + 1);
        assert_eq!(reply.body["elimination"], replies[0].body["elimination"], "one record, one place");
    }
    assert_eq!(replies.iter().filter(|reply| !replayed(reply)).count(), 1, "one ran, the others were replays");
    assert_eq!(app.count("SELECT COUNT(*) FROM audit_log WHERE action = 'tournament.eliminate'").await, 1);
    assert_eq!(day.live(&app).await["remaining"], 2);
}

async fn a_key_is_the_accounts_own_and_names_one_request(backend: Backend) {
    let Some(app) = spawn_app(backend).await else { return };
    let day = ready(&app, "+79990900201", 921, 2).await;
    day.start(&app).await;
    press(&app, &day, &day.path("level"), json!({"direction": "next"}), KEY).await.assert_ok();

    // The same key for another command conflicts with what the key means.
    let other_body = press(&app, &day, &day.path("level"), json!({"direction": "prev"}), KEY).await;
    other_body.assert_error(409, "IDEMPOTENCY_KEY_REUSED");
    press(&app, &day, &day.path("pause"), json!({}), KEY).await.assert_error(409, "IDEMPOTENCY_KEY_REUSED");
    assert_eq!(day.live(&app).await["clock"]["currentLevelIdx"], 1, "neither was applied");

    // Another account's key of the same text is its own.
    let (td, _) = app.add_member(&day.club, "+79990900202", "td").await;
    let headers = [("Idempotency-Key", KEY)];
    let by_td = app
        .call_with(
            Method::POST,
            &day.path("level"),
            Some(&td.access_token),
            Some(json!({"direction": "next"})),
            &headers,
        )
        .await;
    by_td.assert_ok();
    assert!(!replayed(&by_td));
    assert_eq!(day.live(&app).await["clock"]["currentLevelIdx"], 2);
    assert_eq!(level_moves(&app).await, 2);
}

async fn a_first_refusal_is_replayed_as_it_was(backend: Backend) {
    let Some(app) = spawn_app(backend).await else { return };
    let day = ready(&app, "+79990900301", 931, 2).await;

    // Not running yet: the first answer is a refusal, and so is the retry, even once the
    // tournament runs: the key stands for that first attempt.
    press(&app, &day, &day.path("pause"), json!({}), KEY).await.assert_error(409, "TOURNAMENT_NOT_RUNNING");
    day.start(&app).await;
    let retry = press(&app, &day, &day.path("pause"), json!({}), KEY).await;
    retry.assert_error(409, "TOURNAMENT_NOT_RUNNING");
    assert!(replayed(&retry));
    assert!(day.live(&app).await["clock"]["pausedAt"].is_null(), "the retry did not pause the clock");
}

async fn a_key_is_free_again_after_ten_minutes(backend: Backend) {
    let Some(app) = spawn_app(backend).await else { return };
    let day = ready(&app, "+79990900401", 941, 2).await;
    day.start(&app).await;
    press(&app, &day, &day.path("level"), json!({"direction": "next"}), KEY).await.assert_ok();

    let eleven_minutes_ago = chrono::Utc::now() - chrono::Duration::minutes(11);
    idempotency_keys::Entity::update_many()
        .col_expr(idempotency_keys::Column::CreatedAt, Expr::value(eleven_minutes_ago))
        .col_expr(idempotency_keys::Column::KeptUntil, Expr::value(eleven_minutes_ago + chrono::Duration::minutes(10)))
        .exec(app.db())
        .await
        .expect("the key ages");
    let later = press(&app, &day, &day.path("level"), json!({"direction": "next"}), KEY).await;
    later.assert_ok();
    assert!(!replayed(&later));
    assert_eq!(day.live(&app).await["clock"]["currentLevelIdx"], 2);
    assert_eq!(app.count("SELECT COUNT(*) FROM idempotency_keys").await, 1, "the expired answer is gone");
}

async fn a_malformed_key_is_refused_and_nothing_happens(backend: Backend) {
    let Some(app) = spawn_app(backend).await else { return };
    let day = ready(&app, "+79990900501", 951, 2).await;
    day.start(&app).await;
    for key in ["", &"k".repeat(256)] {
        let reply = press(&app, &day, &day.path("level"), json!({"direction": "next"}), key).await;
        reply.assert_error(400, "VALIDATION_ERROR");
    }
    assert_eq!(day.live(&app).await["clock"]["currentLevelIdx"], 0);
    // Without a token the key does not matter: the caller is unknown.
    let headers = [("Idempotency-Key", KEY)];
    let anonymous =
        app.call_with(Method::POST, &day.path("level"), None, Some(json!({"direction": "next"})), &headers).await;
    anonymous.assert_error(401, "UNAUTHORIZED");
}
