//! What nobody may do to a person's record, tried as a new user, a club and a moderator
//! would: one place per person, no strike a club can hand out, no merge that takes over a
//! club or brings a merged account back, fields of any size, the journal written with its
//! change, search in any alphabet, and a ban that ends live sessions.

use std::time::Duration as StdDuration;

use chrono::{Duration, Utc};
use sea_orm::ConnectionTrait;
use serde_json::{Value, json};
use uuid::Uuid;

use crate::helpers::{Backend, Club, Reply, Session, TestApp, on_both_databases, spawn_app};
use crate::staffing::id_of;

on_both_databases!(
    a_guest_who_signs_up_keeps_the_one_place_the_club_gave_them,
    the_database_refuses_a_second_result_of_one_account_in_a_tournament,
    a_walk_in_the_club_takes_back_is_cancelled_and_never_struck,
    a_moderator_can_neither_merge_into_their_own_account_nor_take_over_a_club,
    a_merged_duplicate_stays_banned_and_names_its_main_account,
    a_field_of_ten_thousand_starts_is_confirmed_and_recounted,
    a_promotion_and_its_journal_commit_together_or_not_at_all,
    results_and_their_journal_commit_together_or_not_at_all,
    public_search_folds_the_case_of_every_alphabet,
    a_ban_closes_the_accounts_live_connections,
);

async fn staff(app: &TestApp, club: &Club, path: &str, body: Value) -> Reply {
    app.post(path, Some(&club.owner.access_token), body).await
}

async fn walk_in(app: &TestApp, club: &Club, tournament: Uuid, phone: &str, name: &str) -> Reply {
    staff(app, club, &format!("/tournaments/{tournament}/walk-in"), json!({"phone": phone, "name": name})).await
}

/// Registers `player` and checks them in; returns the registration.
async fn register_and_check_in(app: &TestApp, club: &Club, tournament: Uuid, player: &Session) -> Uuid {
    let reply = app.post(&format!("/tournaments/{tournament}/register"), Some(&player.access_token), json!({})).await;
    let registration = id_of(&reply.assert_ok()["id"]);
    staff(app, club, &format!("/tournaments/{tournament}/check-in"), json!({"registrationId": registration}))
        .await
        .assert_ok();
    registration
}

/// Every player seated in a LiveState, by registration id.
fn seated(state: &Value) -> Vec<Uuid> {
    let tables = state["tables"].as_array().cloned().unwrap_or_default();
    tables
        .iter()
        .flat_map(|table| table["seats"].as_array().cloned().unwrap_or_default())
        .map(|seat| id_of(&seat["registrationId"]))
        .collect()
}

async fn a_guest_who_signs_up_keeps_the_one_place_the_club_gave_them(backend: Backend) {
    let Some(app) = spawn_app(backend).await else { return };
    let club = app.create_club("Aces", "+79996000001").await;
    let tournament = app.create_tournament(&club, 10, Duration::days(1)).await;
    let guest_place = id_of(&walk_in(&app, &club, tournament, "+79996000002", "Петя").await.assert_ok()["id"]);

    let petya = app.sign_in("+79996000002").await;
    let again = app.post(&format!("/tournaments/{tournament}/register"), Some(&petya.access_token), json!({})).await;
    again.assert_error(409, "ALREADY_REGISTERED");
    let at_the_door = walk_in(&app, &club, tournament, "+79996000002", "Петя").await;
    assert_eq!(id_of(&at_the_door.assert_ok()["id"]), guest_place, "a repeated walk-in finds the same place");
    assert_eq!(at_the_door.body["userId"], json!(petya.user_id), "the place is the account's now");
    let places = app
        .count(&format!("SELECT COUNT(*) FROM registrations WHERE tournament_id = {}", app.uuid_literal(tournament)))
        .await;
    assert_eq!(places, 1);

    let other = app.sign_in("+79996000003").await;
    register_and_check_in(&app, &club, tournament, &other).await;
    let started = staff(&app, &club, &format!("/tournaments/{tournament}/start"), json!({})).await;
    let started = started.assert_ok().clone();
    let names: Vec<&str> = started["tables"][0]["seats"]
        .as_array()
        .map(|seats| seats.iter().filter_map(|seat| seat["name"].as_str()).collect())
        .unwrap_or_default();
    assert!(names.contains(&"Петя"), "an account without a name keeps its walk-in name: {names:?}");
    let other_place = seated(&started).into_iter().find(|id| *id != guest_place).expect("the other player");
    staff(&app, &club, "/eliminations", json!({"tournamentId": tournament, "registrationId": other_place}))
        .await
        .assert_ok();
    staff(&app, &club, &format!("/tournaments/{tournament}/confirm-results"), json!({})).await.assert_ok();

    let results = app.get(&format!("/players/{}/results", petya.user_id), Some(&petya.access_token)).await;
    assert_eq!(results.assert_ok()["items"].as_array().map(Vec::len), Some(1), "one result for one person");
    let me = app.get("/auth/me", Some(&petya.access_token)).await;
    assert_eq!(me.assert_ok()["profile"]["gamesPlayed"], 1);
    assert_eq!(me.body["profile"]["wins"], 1);
    let strikes =
        app.count(&format!("SELECT COUNT(*) FROM strikes WHERE user_id = {}", app.uuid_literal(petya.user_id))).await;
    assert_eq!(strikes, 0, "a person who played is no no-show");
}

async fn the_database_refuses_a_second_result_of_one_account_in_a_tournament(backend: Backend) {
    let Some(app) = spawn_app(backend).await else { return };
    let club = app.create_club("Aces", "+79996010001").await;
    let tournament = app.create_tournament(&club, 10, Duration::days(1)).await;
    let players = app.sign_in_players(601, 2).await;
    let mut registrations = Vec::new();
    for player in &players {
        registrations.push(register_and_check_in(&app, &club, tournament, player).await);
    }
    let result = |registration: Uuid, user: Option<Uuid>, place: i32| {
        format!(
            "INSERT INTO results (id, tournament_id, registration_id, user_id, place, season_points, xp, created_at, skill_alpha) \
             VALUES ({}, {}, {}, {}, {place}, 0, 0, '{}', 0.1)",
            app.uuid_literal(Uuid::now_v7()),
            app.uuid_literal(tournament),
            app.uuid_literal(registration),
            user.map_or_else(|| "NULL".to_owned(), |user| app.uuid_literal(user)),
            Utc::now().to_rfc3339(),
        )
    };
    let anna = players[0].user_id;
    app.exec(&result(registrations[0], Some(anna), 1)).await;
    let second = app.db().execute_unprepared(&result(registrations[1], Some(anna), 2)).await;
    assert!(second.is_err(), "one account, one result per tournament");
    app.exec(&result(registrations[1], None, 2)).await;
    app.exec(&result(registrations[1], None, 3)).await;
    let rows = app
        .count(&format!("SELECT COUNT(*) FROM results WHERE tournament_id = {}", app.uuid_literal(tournament)))
        .await;
    assert_eq!(rows, 3, "results of unclaimed guests (no account) are not limited");
}

async fn a_walk_in_the_club_takes_back_is_cancelled_and_never_struck(backend: Backend) {
    let Some(app) = spawn_app(backend).await else { return };
    let club = app.create_club("Aces", "+79996020001").await;
    let victim = app.sign_in("+79996020002").await;
    let others = app.sign_in_players(602, 2).await;
    for _ in 0..2 {
        let tournament = app.create_tournament(&club, 10, Duration::days(1)).await;
        let place = id_of(&walk_in(&app, &club, tournament, "+79996020002", "Victim").await.assert_ok()["id"]);
        let taken_back =
            staff(&app, &club, &format!("/tournaments/{tournament}/cancel-check-in"), json!({"registrationId": place}))
                .await;
        assert_eq!(taken_back.assert_ok()["status"], "cancelled", "a walk-in taken back is no registration");
        for other in &others {
            register_and_check_in(&app, &club, tournament, other).await;
        }
        staff(&app, &club, &format!("/tournaments/{tournament}/start"), json!({})).await.assert_ok();
        let status = app
            .scalar(&format!("SELECT status FROM registrations WHERE id = {}", app.uuid_literal(place)))
            .await
            .expect("the row stays");
        assert_eq!(status, "cancelled", "not a no-show");
    }
    let strikes =
        app.count(&format!("SELECT COUNT(*) FROM strikes WHERE user_id = {}", app.uuid_literal(victim.user_id))).await;
    assert_eq!(strikes, 0, "nobody is struck for a place a club made and took back");
    let elsewhere = app.create_tournament(&club, 10, Duration::days(2)).await;
    let registered =
        app.post(&format!("/tournaments/{elsewhere}/register"), Some(&victim.access_token), json!({})).await;
    assert_eq!(registered.assert_ok()["status"], "registered", "no ban");
}

async fn a_moderator_can_neither_merge_into_their_own_account_nor_take_over_a_club(backend: Backend) {
    let Some(app) = spawn_app(backend).await else { return };
    let club = app.create_club("Aces", "+79996030001").await;
    let moderator = app.sign_in_as_admin("+79996030002", "moderator").await;
    let stranger = app.sign_in("+79996030003").await;
    let merge = |main: Uuid, duplicate: Uuid, by: &Session| {
        let token = by.access_token.clone();
        let app = &app;
        async move {
            app.post(&format!("/admin/users/{main}/merge"), Some(&token), json!({"duplicateUserId": duplicate})).await
        }
    };

    merge(moderator.user_id, stranger.user_id, &moderator).await.assert_error(409, "INVALID_STATUS");
    merge(moderator.user_id, club.owner.user_id, &moderator).await.assert_error(409, "INVALID_STATUS");
    merge(stranger.user_id, club.owner.user_id, &moderator).await.assert_error(403, "FORBIDDEN");
    let owner_still = app.get("/organizers/mine", Some(&club.owner.access_token)).await;
    assert_eq!(owner_still.assert_ok()["items"].as_array().map(Vec::len), Some(1), "the owner keeps the club");
    let taken = app.get("/organizers/mine", Some(&stranger.access_token)).await;
    assert_eq!(taken.assert_ok()["items"].as_array().map(Vec::len), Some(0), "nobody took it");
    assert_eq!(app.count("SELECT COUNT(*) FROM audit_log WHERE action = 'user.merge'").await, 0);

    let admin = app.platform_admin().await;
    merge(stranger.user_id, club.owner.user_id, &admin).await.assert_ok();
    let moved = app.get("/organizers/mine", Some(&stranger.access_token)).await;
    assert_eq!(moved.assert_ok()["items"].as_array().map(Vec::len), Some(1), "organizers.manage may move a club");
}

async fn a_merged_duplicate_stays_banned_and_names_its_main_account(backend: Backend) {
    let Some(app) = spawn_app(backend).await else { return };
    let admin = app.platform_admin().await;
    let main = app.sign_in("+79996040001").await;
    let duplicate = app.sign_in("+79996040002").await;
    app.post(
        &format!("/admin/users/{}/merge", main.user_id),
        Some(&admin.access_token),
        json!({"duplicateUserId": duplicate.user_id}),
    )
    .await
    .assert_ok();
    let reopen = app
        .patch(&format!("/admin/users/{}", duplicate.user_id), Some(&admin.access_token), json!({"status": "active"}))
        .await;
    reopen.assert_error(409, "INVALID_STATUS");
    let found = app.get("/admin/users?q=79996040002", Some(&admin.access_token)).await;
    let row = found.assert_ok()["items"][0].clone();
    assert_eq!(row["status"], "banned");
    assert_eq!(row["mergedIntoUserId"], json!(main.user_id));
    app.request_code("+79996040002").await.assert_error(403, "USER_BANNED");
}

/// A field of `size` checked in straight in the database: `accounts` players with accounts,
/// the rest guests. Returns the registrations in their queue order.
async fn seed_field(app: &TestApp, tournament: Uuid, size: usize, accounts: usize) -> Vec<Uuid> {
    let start = Utc::now() - Duration::hours(1);
    let mut registrations = Vec::with_capacity(size);
    let (mut users, mut profiles, mut guests, mut places) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for n in 0..size {
        let at = format!("'{}'", (start + Duration::milliseconds(i64::try_from(n).unwrap_or(0))).to_rfc3339());
        let phone = format!("'+7998{n:07}'");
        let registration = Uuid::now_v7();
        let (user, guest) = if n < accounts {
            let user = app.uuid_literal(Uuid::now_v7());
            users.push(format!("({user}, {phone}, 'active', {at}, {at})"));
            profiles.push(format!("({user}, 0, 1, 0.4444, 0, 0, {at})"));
            (user, "NULL".to_owned())
        } else {
            let guest = app.uuid_literal(Uuid::now_v7());
            guests.push(format!("({guest}, {phone}, 'Guest {n}', {at})"));
            ("NULL".to_owned(), guest)
        };
        places.push(format!(
            "({}, {}, {user}, {guest}, 'checked_in', 'walk_in', {at}, {at}, {at})",
            app.uuid_literal(registration),
            app.uuid_literal(tournament),
        ));
        registrations.push(registration);
    }
    let batches = [
        ("users (id, phone, status, created_at, updated_at)", users),
        ("player_profiles (user_id, xp, level, skill, games_played, wins, updated_at)", profiles),
        ("guest_players (id, phone, name, created_at)", guests),
        (
            "registrations (id, tournament_id, user_id, guest_id, status, source, checked_in_at, created_at, updated_at)",
            places,
        ),
    ];
    for (table, rows) in batches {
        for chunk in rows.chunks(1000) {
            app.exec(&format!("INSERT INTO {table} VALUES {}", chunk.join(", "))).await;
        }
    }
    registrations
}

async fn a_field_of_ten_thousand_starts_is_confirmed_and_recounted(backend: Backend) {
    let Some(app) = spawn_app(backend).await else { return };
    let club = app.create_club("Aces", "+79996050001").await;
    let tournament = app.create_tournament(&club, 10_000, Duration::days(1)).await;
    let field = seed_field(&app, tournament, 10_000, 300).await;

    let started = staff(&app, &club, &format!("/tournaments/{tournament}/start"), json!({})).await;
    assert_eq!(started.assert_ok()["entrants"], 10_000, "the whole field is seated");
    assert_eq!(started.body["tables"].as_array().map(Vec::len), Some(1_112), "10,000 players need 1,112 tables");
    let seats = app
        .count(&format!("SELECT COUNT(*) FROM table_seats WHERE tournament_id = {}", app.uuid_literal(tournament)))
        .await;
    assert_eq!(seats, 10_000);

    // Played down to one, straight in the database: each player is out in queue order, but
    // the last, who wins.
    let winner = field[field.len() - 1];
    let (tournament_key, winner_key) = (app.uuid_literal(tournament), app.uuid_literal(winner));
    app.exec(&format!(
        "UPDATE registrations SET eliminated_at = created_at WHERE tournament_id = {tournament_key} AND id <> {winner_key}"
    ))
    .await;
    app.exec(&format!(
        "UPDATE table_seats SET active = false WHERE tournament_id = {tournament_key} AND registration_id <> {winner_key}"
    ))
    .await;

    let confirmed = staff(&app, &club, &format!("/tournaments/{tournament}/confirm-results"), json!({})).await;
    let protocol = confirmed.assert_ok()["items"].as_array().cloned().unwrap_or_default();
    assert_eq!(protocol.len(), 10_000);
    assert_eq!(protocol[0]["registrationId"], json!(winner), "the last one in wins");
    assert_eq!(protocol[9_999]["registrationId"], json!(field[0]), "the first one out is last");
    let awarded = |sql: String| {
        let app = &app;
        async move { app.count(&sql).await }
    };
    let accounts_with_results = format!(
        "SELECT COUNT(*) FROM results WHERE tournament_id = {tournament_key} AND user_id IS NOT NULL AND season_points > 0"
    );
    assert_eq!(awarded(accounts_with_results.clone()).await, 300, "every account gets its points");
    assert_eq!(app.count("SELECT COUNT(*) FROM player_profiles WHERE games_played = 1").await, 300);
    assert_eq!(app.count("SELECT COUNT(*) FROM notifications WHERE kind = 'tournament.results'").await, 300);

    let admin = app.platform_admin().await;
    app.post(&format!("/admin/tournaments/{tournament}/recount"), Some(&admin.access_token), json!({}))
        .await
        .assert_ok();
    let rows = awarded(format!("SELECT COUNT(*) FROM results WHERE tournament_id = {tournament_key}")).await;
    assert_eq!(rows, 10_000, "a recount writes the whole field again");
    assert_eq!(awarded(accounts_with_results).await, 300);
}

/// Makes every write to the notification journal fail, as a broken journal would.
async fn break_the_journal(app: &TestApp) {
    match app.db().get_database_backend() {
        sea_orm::DbBackend::Postgres => {
            app.exec(
                "CREATE FUNCTION journal_down() RETURNS trigger AS $$ BEGIN RAISE EXCEPTION 'journal down'; END $$ \
                 LANGUAGE plpgsql",
            )
            .await;
            app.exec(
                "CREATE TRIGGER journal_down BEFORE INSERT ON notifications FOR EACH ROW EXECUTE FUNCTION journal_down()",
            )
            .await;
        }
        _ => {
            app.exec(
                "CREATE TRIGGER journal_down BEFORE INSERT ON notifications BEGIN SELECT RAISE(ABORT, 'journal down'); END",
            )
            .await;
        }
    }
}

async fn mend_the_journal(app: &TestApp) {
    match app.db().get_database_backend() {
        sea_orm::DbBackend::Postgres => app.exec("DROP TRIGGER journal_down ON notifications").await,
        _ => app.exec("DROP TRIGGER journal_down").await,
    }
}

async fn a_promotion_and_its_journal_commit_together_or_not_at_all(backend: Backend) {
    let Some(app) = spawn_app(backend).await else { return };
    let club = app.create_club("Aces", "+79996060001").await;
    let tournament = app.create_tournament(&club, 2, Duration::days(3)).await;
    app.exec(&format!("UPDATE tournaments SET capacity = 1 WHERE id = {}", app.uuid_literal(tournament))).await;
    let players = app.sign_in_players(606, 2).await;
    for player in &players {
        app.post(&format!("/tournaments/{tournament}/register"), Some(&player.access_token), json!({}))
            .await
            .assert_ok();
    }
    let cancel = || {
        let app = &app;
        let token = players[0].access_token.clone();
        async move { app.post(&format!("/tournaments/{tournament}/cancel-registration"), Some(&token), json!({})).await }
    };
    let status_of = |player: &Session| {
        let sql = format!(
            "SELECT status FROM registrations WHERE user_id = {} AND tournament_id = {}",
            app.uuid_literal(player.user_id),
            app.uuid_literal(tournament)
        );
        let app = &app;
        async move { app.scalar(&sql).await }
    };

    break_the_journal(&app).await;
    cancel().await.assert_error(500, "INTERNAL_ERROR");
    assert_eq!(status_of(&players[0]).await.as_deref(), Some("registered"), "the cancel did not happen");
    assert_eq!(status_of(&players[1]).await.as_deref(), Some("waitlist"), "nor the promotion it owed a notice");

    mend_the_journal(&app).await;
    cancel().await.assert_ok();
    assert_eq!(status_of(&players[1]).await.as_deref(), Some("registered"));
    let journaled = app
        .count(&format!(
            "SELECT COUNT(*) FROM notifications WHERE kind = 'waitlist.promoted' AND user_id = {}",
            app.uuid_literal(players[1].user_id)
        ))
        .await;
    assert_eq!(journaled, 1, "the notice is in the journal when the answer comes");
}

async fn results_and_their_journal_commit_together_or_not_at_all(backend: Backend) {
    let Some(app) = spawn_app(backend).await else { return };
    let club = app.create_club("Aces", "+79996070001").await;
    let tournament = app.create_tournament(&club, 10, Duration::days(1)).await;
    let players = app.sign_in_players(607, 2).await;
    for player in &players {
        register_and_check_in(&app, &club, tournament, player).await;
    }
    let started = staff(&app, &club, &format!("/tournaments/{tournament}/start"), json!({})).await;
    let first_out = seated(started.assert_ok())[0];
    staff(&app, &club, "/eliminations", json!({"tournamentId": tournament, "registrationId": first_out}))
        .await
        .assert_ok();
    let confirm = format!("/tournaments/{tournament}/confirm-results");

    break_the_journal(&app).await;
    staff(&app, &club, &confirm, json!({})).await.assert_error(500, "INTERNAL_ERROR");
    let status =
        app.scalar(&format!("SELECT status FROM tournaments WHERE id = {}", app.uuid_literal(tournament))).await;
    assert_eq!(status.as_deref(), Some("running"), "no results without their notices");
    assert_eq!(app.count("SELECT COUNT(*) FROM results").await, 0);

    mend_the_journal(&app).await;
    staff(&app, &club, &confirm, json!({})).await.assert_ok();
    assert_eq!(app.count("SELECT COUNT(*) FROM notifications WHERE kind = 'tournament.results'").await, 2);
}

async fn public_search_folds_the_case_of_every_alphabet(backend: Backend) {
    let Some(app) = spawn_app(backend).await else { return };
    let club = app.create_club("Тузы и короли", "+79996080001").await;
    app.create_tournament(&club, 10, Duration::days(1)).await;
    let ivan = app.sign_in("+79996080002").await;
    app.patch("/me", Some(&ivan.access_token), json!({"name": "Иван Петров", "nickname": "Grozny"})).await.assert_ok();

    let search = |q: &str| {
        let path = format!("/search?q={}", url_encode(q));
        let app = &app;
        async move { app.get(&path, None).await.assert_ok().clone() }
    };
    for q in ["иван", "ИВАН", "пЕтРоВ", "grozny"] {
        let found = search(q).await;
        assert_eq!(found["players"].as_array().map(Vec::len), Some(1), "{q} finds Иван: {found}");
    }
    let found = search("турнир выходного").await;
    assert_eq!(found["tournaments"].as_array().map(Vec::len), Some(1), "{found}");
    let found = search("ТУЗЫ").await;
    assert_eq!(found["clubs"].as_array().map(Vec::len), Some(1), "{found}");
    let found = search("ива*").await;
    assert_eq!(found["players"].as_array().map(Vec::len), Some(0), "a star is a star, not a wildcard");
}

fn url_encode(text: &str) -> String {
    text.bytes()
        .map(|b| if b.is_ascii_alphanumeric() { (b as char).to_string() } else { format!("%{b:02X}") })
        .collect()
}

async fn a_ban_closes_the_accounts_live_connections(backend: Backend) {
    let Some(app) = spawn_app(backend).await else { return };
    let club = app.create_club("Aces", "+79996090001").await;
    let tournament = app.create_tournament(&club, 10, Duration::days(1)).await;
    let player = app.sign_in("+79996090002").await;
    let bystander = app.sign_in("+79996090003").await;
    let mut watching = app.watcher(&player.access_token).await;
    assert_eq!(watching.join(tournament).await["ok"], true);
    let mut other = app.watcher(&bystander.access_token).await;
    assert_eq!(other.join(tournament).await["ok"], true);

    let admin = app.platform_admin().await;
    app.patch(&format!("/admin/users/{}", player.user_id), Some(&admin.access_token), json!({"status": "banned"}))
        .await
        .assert_ok();
    assert!(watching.closed_within(StdDuration::from_secs(10)).await, "the banned account's socket is closed");
    assert!(!other.closed_within(StdDuration::from_millis(500)).await, "nobody else's");
    let mut again = app.watch(Some(&player.access_token), rust_socketio::TransportType::Websocket).await;
    assert!(again.connected().await.is_err(), "and it cannot connect again");
}
