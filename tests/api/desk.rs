//! The registration desk's answers are true whatever befalls its transaction or the nodes'
//! clocks: a group whose `COMMIT` lost its connection is looked up and answered as it
//! ended (or as unknown, when it cannot be looked up); a place in the queue is after every
//! place decided before it, whichever node decided that and whatever its clock said; a banned
//! player's tap takes no lock of their account.

use std::time::Duration;

use floor_entities::registrations;
use reqwest::StatusCode;
use sea_orm::{ActiveModelTrait, ColumnTrait, EntityTrait, QueryFilter, QueryOrder, Set};
use serde_json::json;
use uuid::Uuid;

use crate::fault_proxy::{Cut, FaultProxy};
use crate::helpers::{
    Backend, Reply, TestApp, on_both_databases, spawn_app, spawn_app_with, spawn_on_with, test_redis_url,
};

on_both_databases!(a_registration_decided_after_one_stamped_by_a_clock_ahead_queues_behind_it);

/// A place on the waitlist was decided on a node whose clock runs five seconds ahead of this
/// one (its `createdAt` is then five seconds ahead of this node's time). A registration this
/// node decides after it goes behind it in the queue, and is told that place; the seat freed
/// next goes to the one decided first.
async fn a_registration_decided_after_one_stamped_by_a_clock_ahead_queues_behind_it(backend: Backend) {
    let Some(app) = spawn_app(backend).await else { return };
    let club = app.create_club("Aces", "+79990004700").await;
    let tournament = app.create_tournament(&club, 2, chrono::Duration::days(1)).await;
    let [anna, dora, boris, carl] = [1, 2, 3, 4].map(|n| format!("+7999000470{n}"));
    let (anna, dora) = (app.sign_in(&anna).await, app.sign_in(&dora).await);
    let (boris, carl) = (app.sign_in(&boris).await, app.sign_in(&carl).await);
    let register = format!("/tournaments/{tournament}/register");
    for seated in [&anna, &dora] {
        app.post(&register, Some(&seated.access_token), json!({})).await.assert_ok();
    }
    let boris_place = app.post(&register, Some(&boris.access_token), json!({})).await;
    assert_eq!(boris_place.assert_ok()["waitlistPosition"], 1);
    let boris_id: Uuid = boris_place.body["id"].as_str().expect("an id").parse().expect("a uuid");
    let row = registrations::Entity::find_by_id(boris_id).one(app.db()).await.expect("read").expect("stored");
    let ahead = row.created_at + chrono::Duration::seconds(5);
    let mut stamped_ahead: registrations::ActiveModel = row.into();
    stamped_ahead.created_at = Set(ahead);
    stamped_ahead.update(app.db()).await.expect("stamped ahead");

    let carl_place = app.post(&register, Some(&carl.access_token), json!({})).await;

    assert_eq!(carl_place.assert_ok()["waitlistPosition"], 2, "{carl_place:?}");
    let queue: Vec<Option<Uuid>> = registrations::Entity::find()
        .filter(registrations::Column::TournamentId.eq(tournament))
        .order_by_asc(registrations::Column::CreatedAt)
        .order_by_asc(registrations::Column::Id)
        .all(app.db())
        .await
        .expect("the registrations")
        .into_iter()
        .map(|row| row.user_id)
        .collect();
    let expected = [anna.user_id, dora.user_id, boris.user_id, carl.user_id].map(Some);
    assert_eq!(queue, expected, "the stored queue");
    let carl_at: chrono::DateTime<chrono::Utc> =
        serde_json::from_value(carl_place.body["createdAt"].clone()).expect("a time");
    assert!(carl_at > ahead, "{carl_at} after {ahead}");

    let cancel = format!("/tournaments/{tournament}/cancel-registration");
    app.post(&cancel, Some(&anna.access_token), json!({})).await.assert_ok();
    let seated = registrations::Entity::find()
        .filter(registrations::Column::TournamentId.eq(tournament))
        .filter(registrations::Column::Status.eq(floor_entities::enums::RegistrationStatus::Registered))
        .all(app.db())
        .await
        .expect("the seated");
    let seated: Vec<Option<Uuid>> = seated.iter().map(|row| row.user_id).collect();
    assert!(seated.contains(&Some(boris.user_id)) && !seated.contains(&Some(carl.user_id)), "first come: {seated:?}");
}

/// A banned player's tap is refused `403 USER_BANNED` at once while a moderator's change holds
/// their account's row: the desk locks no banned account.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_banned_players_tap_is_refused_without_waiting_on_their_accounts_row() {
    let Some(app) = spawn_app(Backend::Postgres).await else { return };
    let club = app.create_club("Aces", "+79990004800").await;
    let tournament = app.create_tournament(&club, 10, chrono::Duration::days(1)).await;
    let boris = app.sign_in("+79990004801").await;
    app.exec(&format!("UPDATE users SET status = 'banned' WHERE id = {}", app.uuid_literal(boris.user_id))).await;
    let moderator =
        app.hold(&format!("SELECT id FROM users WHERE id = {} FOR UPDATE", app.uuid_literal(boris.user_id))).await;

    let register = format!("/tournaments/{tournament}/register");
    let tap = app.post(&register, Some(&boris.access_token), json!({}));
    let tapped = tokio::time::timeout(Duration::from_millis(1500), tap).await;

    moderator.rollback().await.expect("let go");
    let tapped = tapped.expect("answered while the moderator holds the row");
    tapped.assert_error(403, "USER_BANNED");
}

/// Two nodes sharing Redis and a database: `proxied` reaches it through `proxy`, `direct` does
/// not. Each keeps the public reads.
struct Proxied {
    direct: TestApp,
    proxied: TestApp,
    proxy: FaultProxy,
}

impl Proxied {
    async fn start() -> Option<Self> {
        let redis = test_redis_url().await?;
        let direct = spawn_app_with(Backend::Postgres, &[("REDIS_URL", redis)]).await?;
        let proxy = FaultProxy::start("127.0.0.1:5432").await;
        let url = proxy.in_front_of_postgres(&direct.database_url, 5432);
        let proxied = spawn_on_with(&url, &[("REDIS_URL", redis)]).await;
        Some(Self { direct, proxied, proxy })
    }

    /// A tournament of `seats` and a signed-in player, with the tournament's card kept on both
    /// nodes, showing nobody registered.
    async fn tournament(&self, phone: &str, seats: i32) -> (Uuid, crate::helpers::Session) {
        let club = self.direct.create_club("Aces", &format!("{phone}0")).await;
        let tournament = self.direct.create_tournament(&club, seats, chrono::Duration::days(1)).await;
        let anna = self.direct.sign_in(&format!("{phone}1")).await;
        for node in [&self.direct, &self.proxied] {
            let card = eventually_registered(node, tournament, 0).await;
            assert_eq!(card.body["registeredCount"], 0, "{card:?}");
        }
        (tournament, anna)
    }
}

/// The tournament's card on `node` once it shows `registered` (within two seconds), or as it
/// is then.
async fn eventually_registered(node: &TestApp, tournament: Uuid, registered: i64) -> Reply {
    let mut card = node.get(&format!("/tournaments/{tournament}"), None).await;
    for _ in 0..100 {
        if card.body["registeredCount"] == registered {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
        card = node.get(&format!("/tournaments/{tournament}"), None).await;
    }
    card
}

/// The registrations stored for `tournament`.
async fn stored(app: &TestApp, tournament: Uuid) -> Vec<registrations::Model> {
    registrations::Entity::find()
        .filter(registrations::Column::TournamentId.eq(tournament))
        .all(app.db())
        .await
        .expect("the registrations")
}

/// The group's `COMMIT` reached PostgreSQL and committed, and its answer was lost with the
/// connection: the desk looks and answers the registration as written, renews the reads here
/// and tells the other node; a second tap is `ALREADY_REGISTERED`, as the first one's answer
/// says.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_registration_whose_commit_answer_was_lost_is_answered_with_its_place() {
    let Some(nodes) = Proxied::start().await else { return };
    let (tournament, anna) = nodes.tournament("+7999000490", 10).await;
    let register = format!("/tournaments/{tournament}/register");

    nodes.proxy.cut_at_commit(tournament, Cut::AfterCommit);
    let reply = nodes.proxied.post(&register, Some(&anna.access_token), json!({})).await;

    assert_eq!(nodes.proxy.cuts(), 1, "the group's connection was cut at its COMMIT");
    assert_eq!(reply.assert_ok()["status"], "registered", "{reply:?}");
    let rows = stored(&nodes.direct, tournament).await;
    assert_eq!(rows.len(), 1);
    assert_eq!(reply.body["id"], rows[0].id.to_string(), "the answer is the row written");
    for node in [&nodes.proxied, &nodes.direct] {
        let card = eventually_registered(node, tournament, 1).await;
        assert_eq!(card.body["registeredCount"], 1, "each node shows the place: {card:?}");
    }
    nodes.proxied.post(&register, Some(&anna.access_token), json!({})).await.assert_error(409, "ALREADY_REGISTERED");
}

/// The group's `COMMIT` never reached PostgreSQL: the desk looks, finds nothing written, and
/// says so (`503`, try again); the retry takes the place.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_registration_whose_commit_never_arrived_is_refused_as_nothing_written() {
    let Some(nodes) = Proxied::start().await else { return };
    let (tournament, anna) = nodes.tournament("+7999000491", 10).await;
    let register = format!("/tournaments/{tournament}/register");

    nodes.proxy.cut_at_commit(tournament, Cut::BeforeCommit);
    let reply = nodes.proxied.post(&register, Some(&anna.access_token), json!({})).await;

    assert_eq!(nodes.proxy.cuts(), 1, "the group's connection was cut at its COMMIT");
    reply.assert_error(503, "SERVICE_UNAVAILABLE");
    assert!(reply.headers.contains_key("retry-after"), "{reply:?}");
    assert!(stored(&nodes.direct, tournament).await.is_empty(), "nothing written");
    let again = nodes.proxied.post(&register, Some(&anna.access_token), json!({})).await;
    assert_eq!(again.assert_ok()["status"], "registered");
}

/// The group committed, and then nothing reaches PostgreSQL: the desk cannot look, so the
/// answer says the outcome is unknown (neither a refusal nor a place), and every node drops
/// the reads that may show it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_registration_that_cannot_be_looked_up_is_answered_unknown_and_its_reads_dropped() {
    let Some(nodes) = Proxied::start().await else { return };
    let (tournament, anna) = nodes.tournament("+7999000492", 10).await;
    let register = format!("/tournaments/{tournament}/register");

    nodes.proxy.cut_at_commit(tournament, Cut::AfterCommitThenBlackhole);
    let reply = nodes.proxied.post(&register, Some(&anna.access_token), json!({})).await;
    nodes.proxy.heal();

    assert_eq!(nodes.proxy.cuts(), 1, "the group's connection was cut at its COMMIT");
    reply.assert_error(500, "INTERNAL_ERROR");
    let message = reply.body["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("unknown"), "the answer says the outcome is unknown: {reply:?}");
    assert_ne!(reply.status, StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(stored(&nodes.direct, tournament).await.len(), 1, "it did commit");
    let card = eventually_registered(&nodes.direct, tournament, 1).await;
    assert_eq!(card.body["registeredCount"], 1, "the other node dropped its kept card: {card:?}");
}
