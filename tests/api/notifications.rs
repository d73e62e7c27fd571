//! The notification entry point (journal, dedup, FCM pushes) and `GET /me/notifications`.

use floor::domain::notifications::{Delivery, Notice, NoticeKind, PushMessage};
use serde_json::{Value, json};
use uuid::Uuid;

use crate::fake_fcm::FakeFcm;
use crate::helpers::{Backend, TestApp, on_both_databases, spawn_app, spawn_app_with};

on_both_databases!(
    the_list_shows_the_last_fifty_newest_first_and_only_the_callers,
    without_fcm_a_notice_is_journaled_and_nothing_is_pushed,
    with_fcm_every_device_is_pushed_reached_rows_are_stamped_and_unregistered_tokens_go,
    a_repeated_dedup_key_writes_and_pushes_nothing_again,
    a_revoked_access_token_is_replaced_and_the_push_still_arrives,
    a_journal_lives_and_dies_with_the_callers_transaction_and_is_pushed_after_commit,
    a_token_someone_else_registered_still_carries_its_owners_pushes_until_fcm_forgets_it,
);

fn notice(kind: NoticeKind, recipients: &[Uuid], payload: Value, dedup_key: Option<&str>) -> Notice {
    Notice {
        kind,
        recipients: recipients.to_vec(),
        payload,
        push: Some(PushMessage {
            title: "Турнир скоро".to_owned(), body: "Начало через 24 часа".to_owned()
        }),
        dedup_key: dedup_key.map(str::to_owned),
    }
}

async fn notify(app: &TestApp, notice: Notice) -> Delivery {
    app.state.notifier.notify(app.db(), notice).await.expect("notify works")
}

pub(crate) async fn register_device(app: &TestApp, token: &str, device: &str, platform: &str) {
    let reply = app.post("/me/push-tokens", Some(token), json!({"token": device, "platform": platform})).await;
    assert_eq!(reply.status.as_u16(), 201, "{reply:?}");
}

pub(crate) async fn spawn_app_with_fcm(backend: Backend, fcm: &FakeFcm) -> Option<TestApp> {
    let env = fcm.env();
    let vars: Vec<(&str, &str)> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    spawn_app_with(backend, &vars).await
}

async fn the_list_shows_the_last_fifty_newest_first_and_only_the_callers(backend: Backend) {
    let Some(app) = spawn_app(backend).await else { return };
    let anna = app.sign_in("+79990001001").await;
    let boris = app.sign_in("+79990001002").await;
    for n in 0..55 {
        notify(&app, notice(NoticeKind::AdminCustom, &[anna.user_id], json!({"n": n}), None)).await;
    }
    notify(&app, notice(NoticeKind::AdminCustom, &[boris.user_id], json!({"n": "boris"}), None)).await;

    let reply = app.get("/me/notifications", Some(&anna.access_token)).await;
    let items = reply.assert_ok()["items"].as_array().expect("items").clone();
    assert_eq!(items.len(), 50);
    let numbers: Vec<i64> = items.iter().map(|item| item["payload"]["n"].as_i64().expect("n")).collect();
    assert_eq!(numbers, (5..55).rev().collect::<Vec<i64>>(), "newest first, the oldest five dropped");
    let first = &items[0];
    assert_eq!(first["kind"], "admin_custom");
    assert!(first["id"].is_string() && first["createdAt"].is_string());
    assert_eq!(first["sentAt"], Value::Null);

    let boris_items = app.get("/me/notifications", Some(&boris.access_token)).await;
    assert_eq!(boris_items.assert_ok()["items"].as_array().map(Vec::len), Some(1));
    app.get("/me/notifications", None).await.assert_error(401, "UNAUTHORIZED");
}

async fn without_fcm_a_notice_is_journaled_and_nothing_is_pushed(backend: Backend) {
    let Some(app) = spawn_app(backend).await else { return };
    assert!(!app.state.notifier.pushes_enabled());
    let anna = app.sign_in("+79990001001").await;
    register_device(&app, &anna.access_token, "anna-phone", "ios").await;

    let delivery =
        notify(&app, notice(NoticeKind::TournamentReminder, &[anna.user_id], json!({"tournamentId": "t"}), None)).await;
    assert_eq!(delivery, Delivery { journaled: 1, pushed: 0 });
    let items = app.get("/me/notifications", Some(&anna.access_token)).await.assert_ok()["items"].clone();
    assert_eq!(items[0]["kind"], "tournament.reminder");
    assert_eq!(items[0]["payload"], json!({"tournamentId": "t"}));
    assert_eq!(items[0]["sentAt"], Value::Null);
    assert_eq!(app.count("SELECT COUNT(*) FROM push_tokens").await, 1, "the device stays registered");
}

async fn with_fcm_every_device_is_pushed_reached_rows_are_stamped_and_unregistered_tokens_go(backend: Backend) {
    let fcm = FakeFcm::start().await;
    let Some(app) = spawn_app_with_fcm(backend, &fcm).await else { return };
    assert!(app.state.notifier.pushes_enabled());
    let anna = app.sign_in("+79990001001").await;
    let boris = app.sign_in("+79990001002").await;
    let clara = app.sign_in("+79990001003").await;
    let dmitry = app.sign_in("+79990001004").await;
    register_device(&app, &anna.access_token, "anna-phone", "ios").await;
    register_device(&app, &anna.access_token, "anna-tablet", "android").await;
    register_device(&app, &boris.access_token, "boris-uninstalled", "android").await;
    register_device(&app, &clara.access_token, "clara-broken", "web").await;
    fcm.answer_unregistered("boris-uninstalled");
    fcm.answer_broken("clara-broken");

    let recipients = [anna.user_id, boris.user_id, clara.user_id, dmitry.user_id];
    let payload = json!({"tournamentId": "t-1", "place": 2});
    let delivery = notify(&app, notice(NoticeKind::TournamentResults, &recipients, payload, None)).await;
    assert_eq!(delivery, Delivery { journaled: 4, pushed: 1 }, "only Anna's devices accepted");

    let messages = fcm.messages();
    let mut devices: Vec<&str> = messages.iter().filter_map(|m| m["token"].as_str()).collect();
    devices.sort_unstable();
    assert_eq!(devices, ["anna-phone", "anna-tablet", "boris-uninstalled", "clara-broken"]);
    let to_anna = messages.iter().find(|m| m["token"] == "anna-phone").expect("a message to Anna");
    assert_eq!(to_anna["notification"], json!({"title": "Турнир скоро", "body": "Начало через 24 часа"}));
    assert_eq!(to_anna["data"], json!({"kind": "tournament.results", "tournamentId": "t-1", "place": "2"}));

    let sent_at = |session: &crate::helpers::Session| {
        let token = session.access_token.clone();
        let app = &app;
        async move { app.get("/me/notifications", Some(&token)).await.assert_ok()["items"][0]["sentAt"].clone() }
    };
    assert!(sent_at(&anna).await.is_string(), "Anna's row is stamped");
    for other in [&boris, &clara, &dmitry] {
        assert_eq!(sent_at(other).await, Value::Null, "nobody else was reached");
    }
    let left = app.count("SELECT COUNT(*) FROM push_tokens WHERE token = 'boris-uninstalled'").await;
    assert_eq!(left, 0, "an unregistered device is forgotten");
    assert_eq!(app.count("SELECT COUNT(*) FROM push_tokens").await, 3, "a failing device is kept");

    // The access token is cached: a second notice fetches none.
    notify(&app, notice(NoticeKind::AdminCustom, &[anna.user_id], json!({}), None)).await;
    assert_eq!(fcm.token_requests(), 1);
    assert_eq!(fcm.messages().len(), 6);
}

async fn a_repeated_dedup_key_writes_and_pushes_nothing_again(backend: Backend) {
    let fcm = FakeFcm::start().await;
    let Some(app) = spawn_app_with_fcm(backend, &fcm).await else { return };
    let anna = app.sign_in("+79990001001").await;
    let boris = app.sign_in("+79990001002").await;
    register_device(&app, &anna.access_token, "anna-phone", "ios").await;
    let key = "tournament.reminder:t-1:24h";

    let first = notify(&app, notice(NoticeKind::TournamentReminder, &[anna.user_id], json!({}), Some(key))).await;
    assert_eq!(first, Delivery { journaled: 1, pushed: 1 });
    let again =
        notify(&app, notice(NoticeKind::TournamentReminder, &[anna.user_id, boris.user_id], json!({}), Some(key)))
            .await;
    assert_eq!(again, Delivery { journaled: 1, pushed: 0 }, "only Boris is new, and he has no device");
    assert_eq!(app.count("SELECT COUNT(*) FROM notifications").await, 2);
    assert_eq!(fcm.messages().len(), 1, "Anna is not pushed twice");
}

async fn a_revoked_access_token_is_replaced_and_the_push_still_arrives(backend: Backend) {
    let fcm = FakeFcm::start().await;
    let Some(app) = spawn_app_with_fcm(backend, &fcm).await else { return };
    let anna = app.sign_in("+79990001001").await;
    register_device(&app, &anna.access_token, "anna-phone", "ios").await;
    let first = notify(&app, notice(NoticeKind::AdminCustom, &[anna.user_id], json!({}), None)).await;
    assert_eq!(first.pushed, 1);

    fcm.revoke_access_tokens();
    let second = notify(&app, notice(NoticeKind::AdminCustom, &[anna.user_id], json!({}), None)).await;
    assert_eq!(second, Delivery { journaled: 1, pushed: 1 });
    assert_eq!(fcm.token_requests(), 2, "one new token after the 401");
    assert_eq!(fcm.messages().len(), 2, "one accepted message per notice");
}

async fn a_journal_lives_and_dies_with_the_callers_transaction_and_is_pushed_after_commit(backend: Backend) {
    let fcm = FakeFcm::start().await;
    let Some(app) = spawn_app_with_fcm(backend, &fcm).await else { return };
    let anna = app.sign_in("+79990001001").await;
    let boris = app.sign_in("+79990001002").await;
    register_device(&app, &anna.access_token, "anna-phone", "ios").await;
    let notifier = &app.state.notifier;
    let broadcast = notice(NoticeKind::AdminCustom, &[anna.user_id, boris.user_id, anna.user_id], json!({}), None);

    let tx = floor::infra::db::begin_write(app.db()).await.expect("a transaction");
    let journaled = notifier.journal(&tx, broadcast.clone()).await.expect("journaled");
    assert_eq!(journaled.len(), 2, "each recipient once");
    tx.rollback().await.expect("rolled back");
    assert_eq!(app.count("SELECT COUNT(*) FROM notifications").await, 0, "rolled back with the transaction");
    assert!(fcm.messages().is_empty(), "journaling pushes nothing");

    let tx = floor::infra::db::begin_write(app.db()).await.expect("a transaction");
    let journaled = notifier.journal(&tx, broadcast).await.expect("journaled");
    tx.commit().await.expect("committed");
    assert_eq!(app.count("SELECT COUNT(*) FROM notifications WHERE sent_at IS NULL").await, 2);
    assert!(fcm.messages().is_empty());
    let pushed = notifier.push_journaled(app.db(), &journaled).await.expect("pushed");
    assert_eq!(pushed, 1, "Anna's device accepted");
    assert_eq!(fcm.messages().len(), 1);
    let stamped = app
        .count(&format!(
            "SELECT COUNT(*) FROM notifications WHERE sent_at IS NOT NULL AND user_id = {}",
            app.uuid_literal(anna.user_id)
        ))
        .await;
    assert_eq!(stamped, 1, "the committed row is stamped after the push");
}

async fn a_token_someone_else_registered_still_carries_its_owners_pushes_until_fcm_forgets_it(backend: Backend) {
    let fcm = FakeFcm::start().await;
    let Some(app) = spawn_app_with_fcm(backend, &fcm).await else { return };
    let anna = app.sign_in("+79990001001").await;
    let boris = app.sign_in("+79990001002").await;
    register_device(&app, &anna.access_token, "anna-phone", "ios").await;
    // Boris learns Anna's token and registers it as his.
    register_device(&app, &boris.access_token, "anna-phone", "ios").await;

    let to_anna = notify(&app, notice(NoticeKind::AdminCustom, &[anna.user_id], json!({"for": "anna"}), None)).await;
    assert_eq!(to_anna, Delivery { journaled: 1, pushed: 1 }, "Anna's device still gets her pushes");
    let messages = fcm.messages();
    assert_eq!(messages.len(), 1);
    assert_eq!(messages[0]["token"], "anna-phone");
    assert_eq!(messages[0]["data"]["for"], "anna");
    let stamped = format!(
        "SELECT COUNT(*) FROM notifications WHERE sent_at IS NOT NULL AND user_id = {}",
        app.uuid_literal(anna.user_id)
    );
    assert_eq!(app.count(&stamped).await, 1);

    // The device is uninstalled: FCM says so on Boris's push, and it is gone for both.
    fcm.answer_unregistered("anna-phone");
    let to_boris = notify(&app, notice(NoticeKind::AdminCustom, &[boris.user_id], json!({"for": "boris"}), None)).await;
    assert_eq!(to_boris, Delivery { journaled: 1, pushed: 0 });
    assert_eq!(app.count("SELECT COUNT(*) FROM push_tokens").await, 0, "every account's row of a dead device goes");
}
