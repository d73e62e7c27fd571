//! The invariants two requests could break at once, each tried on PostgreSQL with real
//! parallel requests: two tasks on the runtime's two workers wait at a barrier and send
//! together, [`TRIES`] times over. SQLite's single writer would hide every one of these races,
//! so they run on PostgreSQL alone. `docs/concurrency.md` names, for each invariant, the lock
//! or constraint that holds it and the test here that shows it.

use std::sync::Arc;

use chrono::Duration;
use reqwest::StatusCode;
use serde_json::json;
use tokio::sync::Barrier;
use uuid::Uuid;

use crate::helpers::{Backend, Club, Reply, Session, TestApp, spawn_app, spawn_app_with, test_redis_url};
use crate::live::{Ready, seated_ids, staff};
use crate::staffing::id_of;

/// How many times each race is run.
const TRIES: usize = 50;

/// Runs `first` and `second` at the same instant: each in a task of its own, both waiting at
/// a barrier before they send. Returns both answers.
async fn at_once<A, B>(first: A, second: B) -> (A::Output, B::Output)
where
    A: Future + Send + 'static,
    A::Output: Send + 'static,
    B: Future + Send + 'static,
    B::Output: Send + 'static,
{
    let barrier = Arc::new(Barrier::new(2));
    let first = tokio::spawn({
        let barrier = barrier.clone();
        async move {
            barrier.wait().await;
            first.await
        }
    });
    let second = tokio::spawn(async move {
        barrier.wait().await;
        second.await
    });
    (first.await.expect("the first request ran"), second.await.expect("the second request ran"))
}

/// A phone of try `round` of the test numbered `test`: every person of every try has their own.
fn phone(test: u32, round: usize, person: u32) -> String {
    format!("+796{test:02}{round:03}{person:03}")
}

/// A fresh PostgreSQL app; `None` (skipped) only when PostgreSQL is unreachable outside CI.
async fn postgres_app() -> Option<Arc<TestApp>> {
    spawn_app(Backend::Postgres).await.map(Arc::new)
}

/// Asks a code for `phone` and returns the deletion it allows, not yet sent.
async fn deletion(app: &Arc<TestApp>, session: &Session, phone: &str) -> impl Future<Output = Reply> + Send + 'static {
    app.request_code(phone).await.assert_ok();
    let (app, code, token) = (app.clone(), app.last_code(phone), session.access_token.clone());
    async move { app.post("/me/delete", Some(&token), json!({"code": code})).await }
}

/// How many owners the club has.
async fn owners(app: &TestApp, club: Uuid) -> i64 {
    app.count(&format!(
        "SELECT COUNT(*) FROM organizer_members WHERE role = 'owner' AND organizer_id = {}",
        app.uuid_literal(club)
    ))
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_owners_deleting_their_accounts_at_once_leave_their_club_an_owner() {
    let Some(app) = postgres_app().await else { return };
    let admin = app.platform_admin().await;
    for round in 0..TRIES {
        let (anna_phone, boris_phone) = (phone(1, round, 1), phone(1, round, 2));
        let club = app.create_club_by(&admin, "Aces", &anna_phone).await;
        let (boris, _) = app.add_member(&club, &boris_phone, "owner").await;
        let annas = deletion(&app, &club.owner, &anna_phone).await;
        let boriss = deletion(&app, &boris, &boris_phone).await;

        let (anna, boris) = at_once(annas, boriss).await;

        assert_eq!(owners(&app, club.id).await, 1, "try {round}: {anna:?} {boris:?}");
        let mut statuses = [anna.status.as_u16(), boris.status.as_u16()];
        statuses.sort_unstable();
        assert_eq!(statuses, [204, 409], "try {round}: one goes, the other is the sole owner now");
        for refused in [&anna, &boris].into_iter().filter(|reply| reply.status == StatusCode::CONFLICT) {
            refused.assert_error(409, "SOLE_OWNER");
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_owner_deleting_her_account_as_she_removes_the_other_owner_leaves_the_club_an_owner() {
    let Some(app) = postgres_app().await else { return };
    let admin = app.platform_admin().await;
    for round in 0..TRIES {
        let club = app.create_club_by(&admin, "Aces", &phone(2, round, 1)).await;
        let (_, boris_membership) = app.add_member(&club, &phone(2, round, 2), "owner").await;
        let annas = deletion(&app, &club.owner, &phone(2, round, 1)).await;
        let removal = {
            let (app, token) = (app.clone(), club.owner.access_token.clone());
            let path = format!("/organizers/{}/members/{boris_membership}", club.id);
            async move { app.delete(&path, Some(&token)).await }
        };

        let (deleted, removed) = at_once(annas, removal).await;

        assert_eq!(owners(&app, club.id).await, 1, "try {round}: {deleted:?} {removed:?}");
        assert!(
            !(deleted.status == StatusCode::NO_CONTENT && removed.status == StatusCode::NO_CONTENT),
            "try {round}: both went through"
        );
    }
}

/// A tournament of the club with `ready` players checked in, not started.
async fn checked_in(app: &TestApp, club: &Club, players: &[&Session]) -> (Uuid, Vec<Uuid>) {
    let tournament = app.create_tournament(club, 10, Duration::days(1)).await;
    let mut places = Vec::new();
    for player in players {
        let reply =
            app.post(&format!("/tournaments/{tournament}/register"), Some(&player.access_token), json!({})).await;
        let place = id_of(&reply.assert_ok()["id"]);
        staff(app, club, &format!("/tournaments/{tournament}/check-in"), json!({"registrationId": place}))
            .await
            .assert_ok();
        places.push(place);
    }
    (tournament, places)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_player_deleting_her_account_as_the_tournament_starts_is_either_seated_or_gone() {
    let Some(app) = postgres_app().await else { return };
    let club = app.create_club("Aces", &phone(3, 999, 1)).await;
    for round in 0..TRIES {
        let anna_phone = phone(3, round, 1);
        let anna = app.sign_in(&anna_phone).await;
        let others = [app.sign_in(&phone(3, round, 2)).await, app.sign_in(&phone(3, round, 3)).await];
        let (tournament, places) = checked_in(&app, &club, &[&anna, &others[0], &others[1]]).await;
        let annas = deletion(&app, &anna, &anna_phone).await;
        let start = {
            let (app, token) = (app.clone(), club.owner.access_token.clone());
            async move { app.post(&format!("/tournaments/{tournament}/start"), Some(&token), json!({})).await }
        };

        let (deleted, started) = at_once(annas, start).await;

        let started = started.assert_ok().clone();
        let seated = seated_ids(&started).contains(&places[0]);
        let status =
            app.scalar(&format!("SELECT status FROM registrations WHERE id = {}", app.uuid_literal(places[0]))).await;
        if seated {
            deleted.assert_error(409, "PLAYING_NOW");
            assert_eq!(status.as_deref(), Some("checked_in"), "try {round}: seated, her place stands");
        } else {
            assert_eq!(deleted.status, StatusCode::NO_CONTENT, "try {round}: {deleted:?}");
            assert_eq!(status.as_deref(), Some("cancelled"), "try {round}");
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nothing_written_beside_a_deletion_outlives_it() {
    let Some(app) = postgres_app().await else { return };
    for round in 0..TRIES {
        let anna_phone = phone(4, round, 1);
        let anna = app.sign_in(&anna_phone).await;
        let annas = deletion(&app, &anna, &anna_phone).await;
        // Her profile, her session, a device and her calendar, all sent as she deletes.
        let writes = {
            let (app, token, refresh) = (app.clone(), anna.access_token.clone(), anna.refresh_token.clone());
            async move {
                let profile = json!({"name": "Anna Petrova", "nickname": "ace", "citySlug": "kazan"});
                tokio::join!(
                    app.patch("/me", Some(&token), profile),
                    app.post("/auth/refresh", None, json!({"refreshToken": refresh})),
                    app.post("/me/push-tokens", Some(&token), json!({"token": "annas-phone", "platform": "ios"})),
                    app.post("/me/calendar-link", Some(&token), json!({})),
                )
            }
        };

        let (deleted, (profile, refreshed, device, calendar)) = at_once(annas, writes).await;

        assert_eq!(deleted.status, StatusCode::NO_CONTENT, "try {round}: {deleted:?}");
        let row = format!("FROM users WHERE id = {}", app.uuid_literal(anna.user_id));
        let erased = app
            .count(&format!(
                "SELECT COUNT(*) {row} AND status = 'deleted' AND name = 'Удалённый игрок' AND nickname IS NULL \
                 AND city_slug IS NULL"
            ))
            .await;
        assert_eq!(erased, 1, "try {round}: the erased row stays erased ({profile:?})");
        for table in ["refresh_tokens", "push_tokens", "calendar_links"] {
            let left = app
                .count(&format!("SELECT COUNT(*) FROM {table} WHERE user_id = {}", app.uuid_literal(anna.user_id)))
                .await;
            assert_eq!(left, 0, "try {round}: {table} ({refreshed:?} {device:?} {calendar:?})");
        }
        if refreshed.status.is_success() {
            let again = app.post("/auth/refresh", None, json!({"refreshToken": refreshed.body["refreshToken"]})).await;
            again.assert_error(401, "INVALID_REFRESH_TOKEN");
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_person_registering_twice_at_once_holds_one_place() {
    let Some(app) = postgres_app().await else { return };
    let club = app.create_club("Aces", &phone(5, 999, 1)).await;
    for round in 0..TRIES {
        let tournament = app.create_tournament(&club, 10, Duration::days(1)).await;
        let anna = app.sign_in(&phone(5, round, 1)).await;
        let register = || {
            let (app, token) = (app.clone(), anna.access_token.clone());
            async move { app.post(&format!("/tournaments/{tournament}/register"), Some(&token), json!({})).await }
        };

        let (first, second) = at_once(register(), register()).await;

        let (placed, refused) = if first.status.is_success() { (first, second) } else { (second, first) };
        assert_eq!(placed.assert_ok()["status"], "registered", "try {round}");
        refused.assert_error(409, "ALREADY_REGISTERED");
        let places = app
            .count(&format!(
                "SELECT COUNT(*) FROM registrations WHERE tournament_id = {} AND user_id = {}",
                app.uuid_literal(tournament),
                app.uuid_literal(anna.user_id)
            ))
            .await;
        assert_eq!(places, 1, "try {round}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_players_taking_the_last_seat_at_once_leave_one_on_the_waitlist() {
    let Some(app) = postgres_app().await else { return };
    let club = app.create_club("Aces", &phone(6, 999, 1)).await;
    for round in 0..TRIES {
        // Two seats, one taken: two players go for the other.
        let tournament = app.create_tournament(&club, 2, Duration::days(1)).await;
        let first = app.sign_in(&phone(6, round, 0)).await;
        app.post(&format!("/tournaments/{tournament}/register"), Some(&first.access_token), json!({}))
            .await
            .assert_ok();
        let players = [app.sign_in(&phone(6, round, 1)).await, app.sign_in(&phone(6, round, 2)).await];
        let register = |player: &Session| {
            let (app, token) = (app.clone(), player.access_token.clone());
            async move { app.post(&format!("/tournaments/{tournament}/register"), Some(&token), json!({})).await }
        };

        let (first, second) = at_once(register(&players[0]), register(&players[1])).await;

        let mut outcomes = [first.assert_ok()["status"].clone(), second.assert_ok()["status"].clone()];
        outcomes.sort_by_key(ToString::to_string);
        assert_eq!(outcomes, [json!("registered"), json!("waitlist")], "try {round}");
        let seats_taken = app
            .count(&format!(
                "SELECT COUNT(*) FROM registrations WHERE tournament_id = {} AND status = 'registered'",
                app.uuid_literal(tournament)
            ))
            .await;
        assert_eq!(seats_taken, 2, "try {round}: the capacity holds");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_elimination_sent_twice_at_once_is_applied_once() {
    let Some(app) = postgres_app().await else { return };
    let players = u32::try_from(TRIES).expect("a count") + 1;
    let day: Ready = crate::live::ready(&app, &phone(7, 999, 1), 970, players).await;
    day.start(&app).await;
    for (round, target) in day.registrations.iter().skip(1).copied().enumerate() {
        let eliminate = || {
            let (app, club, tournament) = (app.clone(), day.club.clone(), day.id);
            let body = json!({"tournamentId": tournament, "registrationId": target});
            async move { staff(&app, &club, "/eliminations", body).await }
        };

        let (first, second) = at_once(eliminate(), eliminate()).await;

        let (applied, refused) = if first.status.is_success() { (first, second) } else { (second, first) };
        applied.assert_ok();
        refused.assert_error(409, "ALREADY_ELIMINATED");
        let out = app
            .count(&format!(
                "SELECT COUNT(*) FROM registrations WHERE id = {} AND eliminated_at IS NOT NULL",
                app.uuid_literal(target)
            ))
            .await;
        assert_eq!(out, 1, "try {round}");
    }
    let live = day.live(&app).await;
    let places: Vec<i64> =
        live["eliminations"].as_array().expect("eliminations").iter().filter_map(|e| e["place"].as_i64()).collect();
    let mut distinct = places.clone();
    distinct.sort_unstable();
    distinct.dedup();
    assert_eq!(distinct.len(), places.len(), "every place once: {places:?}");
    assert_eq!(places.len(), TRIES);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_nodes_opening_a_tournament_at_once_run_one_actor_of_it() {
    let Some(redis) = test_redis_url().await else { return };
    let Some(first) = spawn_app_with(Backend::Postgres, &[("REDIS_URL", redis)]).await else { return };
    let second = Arc::new(first.second_node(&[("REDIS_URL", redis)]).await);
    let first = Arc::new(first);
    let club = first.create_club("Aces", &phone(8, 999, 1)).await;
    for round in 0..TRIES {
        let tournament = first.create_tournament(&club, 10, Duration::days(1)).await;
        let read = |node: &Arc<TestApp>| {
            let node = node.clone();
            async move { node.get(&format!("/tournaments/{tournament}/live"), None).await }
        };

        let (on_first, on_second) = at_once(read(&first), read(&second)).await;

        on_first.assert_ok();
        on_second.assert_ok();
        let actors =
            [&first, &second].iter().filter(|node| node.state.live.registry().actor_of(tournament).is_some()).count();
        assert_eq!(actors, 1, "try {round}: exactly one node runs the tournament");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_walk_in_of_a_person_deleting_her_account_goes_before_or_after_the_deletion() {
    let Some(app) = postgres_app().await else { return };
    let club = app.create_club("Aces", &phone(9, 999, 1)).await;
    for round in 0..TRIES {
        let anna_phone = phone(9, round, 1);
        let anna = app.sign_in(&anna_phone).await;
        // Her place makes the deletion lock the tournament the walk-in locks.
        let tournament = app.create_tournament(&club, 10, Duration::days(1)).await;
        app.post(&format!("/tournaments/{tournament}/register"), Some(&anna.access_token), json!({})).await.assert_ok();
        let annas = deletion(&app, &anna, &anna_phone).await;
        let walk_in = {
            let (app, club) = (app.clone(), club.clone());
            let body = json!({"phone": anna_phone, "name": "Anna"});
            async move { staff(&app, &club, &format!("/tournaments/{tournament}/walk-in"), body).await }
        };

        let (deleted, walked_in) = at_once(annas, walk_in).await;

        assert_eq!(deleted.status, StatusCode::NO_CONTENT, "try {round}: {deleted:?}");
        let walked_in = walked_in.assert_ok().clone();
        assert_eq!(walked_in["status"], "checked_in", "try {round}");
        let places = |status: &str| {
            format!(
                "SELECT COUNT(*) FROM registrations WHERE tournament_id = {} AND user_id = {} AND status = '{status}'",
                app.uuid_literal(tournament),
                app.uuid_literal(anna.user_id)
            )
        };
        for live in ["registered", "waitlist", "checked_in"] {
            assert_eq!(app.count(&places(live)).await, 0, "try {round}: a deleted account holds no {live} place");
        }
        if walked_in["userId"] == json!(anna.user_id) {
            // Let in first: the deletion gave that place back.
            assert_eq!(app.count(&places("cancelled")).await, 1, "try {round}");
        } else {
            // Let in after: her phone is nobody's now, so a guest under it holds the place.
            let guest = id_of(&walked_in["guestId"]);
            let guests = app
                .count(&format!(
                    "SELECT COUNT(*) FROM guest_players WHERE id = {} AND phone = '{anna_phone}'",
                    app.uuid_literal(guest)
                ))
                .await;
            assert_eq!(guests, 1, "try {round}: {walked_in}");
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_desks_holding_the_same_accounts_in_other_orders_decide_both_groups() {
    const PLAYERS: u32 = 8;
    let Some(app) = postgres_app().await else { return };
    let club = app.create_club("Aces", &phone(10, 999, 1)).await;
    for round in 0..TRIES {
        let mut players = Vec::new();
        for person in 0..PLAYERS {
            players.push(app.sign_in(&phone(10, round, person)).await);
        }
        // One of them deletes her account meanwhile: a lock that waits for the desks' shared
        // ones, and that they wait for.
        let leaving = players[PLAYERS as usize / 2].clone();
        let leaves = deletion(&app, &leaving, &phone(10, round, PLAYERS / 2)).await;
        let tournaments = [
            app.create_tournament(&club, 4, Duration::days(1)).await,
            app.create_tournament(&club, 4, Duration::days(1)).await,
        ];
        let rush = |tournament: Uuid, players: Vec<Session>| {
            let app = app.clone();
            async move {
                let path = format!("/tournaments/{tournament}/register");
                let taps = players.iter().map(|player| app.post(&path, Some(&player.access_token), json!({})));
                futures::future::join_all(taps).await
            }
        };
        let forwards = rush(tournaments[0], players.clone());
        let backwards = rush(tournaments[1], players.iter().rev().cloned().collect());
        let both = async move { tokio::join!(forwards, backwards) };

        let ((first, second), deleted) = at_once(both, leaves).await;

        assert_eq!(deleted.status, StatusCode::NO_CONTENT, "try {round}: {deleted:?}");
        for reply in first.iter().chain(&second) {
            assert!(reply.status.is_success() || reply.status == StatusCode::UNAUTHORIZED, "try {round}: {reply:?}");
        }
        for tournament in tournaments {
            let placed = app
                .count(&format!(
                    "SELECT COUNT(*) FROM registrations WHERE tournament_id = {} AND status IN ('registered', \
                     'waitlist') AND user_id <> {}",
                    app.uuid_literal(tournament),
                    app.uuid_literal(leaving.user_id)
                ))
                .await;
            assert_eq!(placed, i64::from(PLAYERS) - 1, "try {round}: every other player placed once");
            let theirs = app
                .count(&format!(
                    "SELECT COUNT(*) FROM registrations WHERE tournament_id = {} AND status IN ('registered', \
                     'waitlist') AND user_id = {}",
                    app.uuid_literal(tournament),
                    app.uuid_literal(leaving.user_id)
                ))
                .await;
            assert_eq!(theirs, 0, "try {round}: the deleted account holds no place");
        }
    }
}
