//! Deleting one's account: `POST /me/delete` with a fresh code for one's own phone.

use chrono::Duration;
use reqwest::Method;
use serde_json::{Value, json};
use uuid::Uuid;

use crate::game_day::heard;
use crate::helpers::{Backend, Club, Reply, Session, TestApp, on_both_databases, spawn_app, spawn_app_with};
use crate::moderation::play;
use crate::own_redis::OwnRedis;
use crate::staffing::id_of;

on_both_databases!(
    a_deletion_erases_the_person_gives_back_places_and_keeps_the_played_ones,
    a_wrong_or_spent_code_deletes_nothing_and_its_attempt_counts,
    the_only_owner_of_a_club_is_refused_until_someone_else_owns_it,
    a_player_of_a_running_tournament_is_refused_until_it_ends,
    a_player_already_out_of_a_running_tournament_may_delete_and_one_still_in_may_not,
    a_deleted_account_takes_its_merged_ones_along_and_is_neither_merged_nor_unbanned,
    a_registration_ban_outlives_the_deleted_account_for_its_phone_until_it_ends,
    a_deleted_player_leaves_every_live_picture_at_once_as_a_new_version,
    a_walk_in_whose_phone_signed_up_and_deleted_leaves_the_live_picture,
    a_deleted_name_is_gone_from_the_other_node_once_answered,
    a_deleted_name_is_gone_from_the_other_node_once_answered_without_redis,
    a_deleted_name_is_gone_from_a_node_alone_s_kept_leaderboards_once_answered,
);

const ANNA: &str = "+79997400002";

/// Asks for a code for `phone` and sends it to `POST /me/delete` with `session`'s token.
async fn delete_with_a_fresh_code(app: &TestApp, session: &Session, phone: &str) -> Reply {
    app.request_code(phone).await.assert_ok();
    let code = app.last_code(phone);
    app.post("/me/delete", Some(&session.access_token), json!({"code": code})).await
}

fn assert_deleted(reply: &Reply) {
    assert_eq!(reply.status, 204, "{reply:?}");
}

/// Registers `player` in `tournament` and returns the registration.
async fn register(app: &TestApp, tournament: Uuid, player: &Session) -> Value {
    let reply = app.post(&format!("/tournaments/{tournament}/register"), Some(&player.access_token), json!({})).await;
    reply.assert_ok().clone()
}

async fn status_of(app: &TestApp, club: &Club, tournament: Uuid, registration: &Value) -> Value {
    let list = app.get(&format!("/tournaments/{tournament}/registrations"), Some(&club.owner.access_token)).await;
    let items = list.assert_ok()["items"].as_array().expect("items").clone();
    let wanted = &registration["id"];
    items.into_iter().find(|row| &row["id"] == wanted).map(|row| row["status"].clone()).unwrap_or(Value::Null)
}

/// The details of the audit record of `user`'s deletion.
pub(crate) async fn deletion_audit(app: &TestApp, user: Uuid) -> Value {
    let details = app
        .scalar(&format!(
            "SELECT CAST(details AS TEXT) FROM audit_log WHERE action = 'user.delete' AND actor_user_id = {}",
            app.uuid_literal(user)
        ))
        .await
        .expect("the deletion is in the audit log");
    serde_json::from_str(&details).expect("JSON details")
}

/// How many rows of `table` have `column` equal to `user`.
async fn rows_of(app: &TestApp, table: &str, column: &str, user: Uuid) -> i64 {
    app.count(&format!("SELECT COUNT(*) FROM {table} WHERE {column} = {}", app.uuid_literal(user))).await
}

async fn a_deletion_erases_the_person_gives_back_places_and_keeps_the_played_ones(backend: Backend) {
    let Some(app) = spawn_app(backend).await else { return };
    let club = app.create_club("Aces", "+79997400001").await;
    let anna = app.sign_in(ANNA).await;
    let profile = json!({"name": "Anna Petrova", "nickname": "ace", "citySlug": "kazan", "consentAccepted": true,
        "avatarUrl": "https://cdn.example.org/a.png"});
    app.patch("/me", Some(&anna.access_token), profile).await.assert_ok();
    let boris = app.sign_in("+79997400003").await;
    let clara = app.sign_in("+79997400004").await;
    let dave = app.sign_in("+79997400005").await;

    // Played: Boris wins, Anna second.
    let played = play(&app, &club, &[&boris, &anna]).await;
    // Upcoming with two seats: Anna and Dave hold them, Clara waits.
    let upcoming = app.create_tournament(&club, 2, Duration::days(2)).await;
    let annas_seat = register(&app, upcoming, &anna).await;
    register(&app, upcoming, &dave).await;
    let claras_place = register(&app, upcoming, &clara).await;
    assert_eq!(claras_place["status"], "waitlist");
    // Full, and starting within the cancel deadline: Boris and Dave hold the seats, Anna waits.
    let full = app.create_tournament(&club, 2, Duration::hours(1)).await;
    let boris_seat = register(&app, full, &boris).await;
    register(&app, full, &dave).await;
    let annas_wait = register(&app, full, &anna).await;
    assert_eq!(annas_wait["status"], "waitlist");
    for (follower, followee) in [(&boris, anna.user_id), (&anna, boris.user_id)] {
        app.put(&format!("/players/{followee}/follow"), Some(&follower.access_token), json!({})).await.assert_ok();
    }
    app.post("/me/push-tokens", Some(&anna.access_token), json!({"token": "annas-phone", "platform": "ios"}))
        .await
        .assert_ok();
    app.post("/me/calendar-link", Some(&anna.access_token), json!({})).await.assert_ok();
    // The club invites Anna to deal: the invitation and its audit record name her phone.
    let invites = format!("/organizers/{}/dealer-invites", club.id);
    let invited = app.post(&invites, Some(&club.owner.access_token), json!({"phone": ANNA})).await;
    assert_eq!(invited.status, 201, "{invited:?}");
    let naming_the_phone = format!("SELECT COUNT(*) FROM audit_log WHERE CAST(details AS TEXT) LIKE '%{ANNA}%'");
    assert_eq!(app.count(&naming_the_phone).await, 1);

    assert_deleted(&delete_with_a_fresh_code(&app, &anna, ANNA).await);

    // Signed out everywhere.
    app.get("/auth/me", Some(&anna.access_token)).await.assert_error(401, "UNAUTHORIZED");
    app.post("/auth/refresh", None, json!({"refreshToken": anna.refresh_token}))
        .await
        .assert_error(401, "INVALID_REFRESH_TOKEN");
    // The places not yet played went back, with no strike, and the queue moved up.
    assert_eq!(status_of(&app, &club, upcoming, &annas_seat).await, "cancelled");
    assert_eq!(status_of(&app, &club, upcoming, &claras_place).await, "registered");
    assert_eq!(heard(&app, &clara, "waitlist.promoted").await.len(), 1, "Clara hears of her seat");
    assert_eq!(status_of(&app, &club, full, &annas_wait).await, "cancelled");
    assert_eq!(status_of(&app, &club, full, &boris_seat).await, "registered");
    // The played place stays, under the neutral name; the winner's result is untouched.
    let results = app.get(&format!("/tournaments/{played}/results"), Some(&boris.access_token)).await;
    let items = results.assert_ok()["items"].as_array().expect("items").clone();
    let second = items.iter().find(|row| row["place"] == 2).expect("second place");
    assert_eq!(second["name"], "Удалённый игрок");
    assert_eq!(second["userId"], anna.user_id.to_string());
    let first = items.iter().find(|row| row["place"] == 1).expect("first place");
    assert_eq!(first["userId"], boris.user_id.to_string());
    // Gone from everyone else's view.
    app.get(&format!("/players/{}", anna.user_id), None).await.assert_error(404, "NOT_FOUND");
    let follows = app.get("/me/follows", Some(&boris.access_token)).await;
    assert_eq!(follows.assert_ok()["items"], json!([]));
    // What concerned Anna alone is gone.
    for (table, column) in [
        ("refresh_tokens", "user_id"),
        ("push_tokens", "user_id"),
        ("calendar_links", "user_id"),
        ("follows", "follower_id"),
        ("follows", "followee_id"),
        ("notifications", "user_id"),
        ("consent_changes", "user_id"),
        ("strikes", "user_id"),
    ] {
        assert_eq!(rows_of(&app, table, column, anna.user_id).await, 0, "{table}.{column}");
    }
    // The person is erased: no column anywhere holds the phone any more.
    let row = format!("FROM users WHERE id = {}", app.uuid_literal(anna.user_id));
    assert_eq!(app.scalar(&format!("SELECT status {row}")).await.as_deref(), Some("deleted"));
    assert_eq!(app.scalar(&format!("SELECT name {row}")).await.as_deref(), Some("Удалённый игрок"));
    let erased = app
        .count(&format!(
            "SELECT COUNT(*) {row} AND nickname IS NULL AND avatar_url IS NULL AND city_slug IS NULL \
             AND consent_accepted_at IS NULL AND deleted_at IS NOT NULL"
        ))
        .await;
    assert_eq!(erased, 1, "nickname, avatar, city and consent are erased");
    for (table, column) in [("users", "phone"), ("guest_players", "phone"), ("dealer_invites", "phone")] {
        assert_eq!(app.count(&format!("SELECT COUNT(*) FROM {table} WHERE {column} = '{ANNA}'")).await, 0);
    }
    assert_eq!(app.count(&naming_the_phone).await, 0, "the invitation's record keeps all but the phone");
    // The audit log says who deleted the account, never what was erased.
    let audit = deletion_audit(&app, anna.user_id).await;
    assert_eq!(audit["asked"], "app", "{audit}");
    let text = audit.to_string();
    assert!(!text.contains(ANNA) && !text.contains("Petrova"), "{audit}");
    // Admins see a deleted account, without its phone.
    let admin = app.platform_admin().await;
    let accounts = app.get("/admin/users", Some(&admin.access_token)).await;
    let listed = accounts.assert_ok()["items"].as_array().expect("items").clone();
    let shown = listed.iter().find(|row| id_of(&row["id"]) == anna.user_id).expect("the deleted account is listed");
    assert_eq!(shown["status"], "deleted");
    assert_eq!(shown["phone"], Value::Null);
    assert!(shown["deletedAt"].is_string());

    // The same phone later signs up as a new person.
    app.request_code(ANNA).await.assert_ok();
    let again = app.verify(ANNA, &app.last_code(ANNA)).await;
    let body = again.assert_ok();
    assert_eq!(body["isNewUser"], true);
    assert_ne!(id_of(&body["user"]["id"]), anna.user_id);
    assert_eq!(body["user"]["name"], Value::Null, "nothing of the deleted person comes back");
}

async fn a_wrong_or_spent_code_deletes_nothing_and_its_attempt_counts(backend: Backend) {
    let Some(app) = spawn_app(backend).await else { return };
    let anna = app.sign_in(ANNA).await;
    let token = Some(anna.access_token.as_str());
    // The code that signed Anna in is spent.
    let spent = app.last_code(ANNA);
    app.post("/me/delete", token, json!({"code": spent})).await.assert_error(400, "INVALID_OTP");
    app.post("/me/delete", token, json!({"code": "12"})).await.assert_error(400, "VALIDATION_ERROR");
    app.post("/me/delete", token, json!({})).await.assert_error(400, "VALIDATION_ERROR");
    app.post("/me/delete", None, json!({"code": "123456"})).await.assert_error(401, "UNAUTHORIZED");

    app.request_code(ANNA).await.assert_ok();
    let right = app.last_code(ANNA);
    let wrong = if right == "000000" { "111111" } else { "000000" };
    app.post("/me/delete", token, json!({"code": wrong})).await.assert_error(400, "INVALID_OTP");
    let counted = app
        .count(&format!(
            "SELECT COUNT(*) FROM otp_codes WHERE phone = '{ANNA}' AND consumed_at IS NULL AND attempts = 1"
        ))
        .await;
    assert_eq!(counted, 1, "the wrong code's attempt counts");
    app.get("/auth/me", token).await.assert_ok();
    // Four more wrong tries use the code up: the right one no longer deletes.
    for _ in 0..4 {
        app.post("/me/delete", token, json!({"code": wrong})).await.assert_error(400, "INVALID_OTP");
    }
    app.post("/me/delete", token, json!({"code": right})).await.assert_error(400, "INVALID_OTP");
    let me = app.get("/auth/me", token).await;
    assert_eq!(me.assert_ok()["status"], "active", "nothing was deleted");
}

async fn the_only_owner_of_a_club_is_refused_until_someone_else_owns_it(backend: Backend) {
    let Some(app) = spawn_app(backend).await else { return };
    let owner_phone = "+79997400011";
    let club = app.create_club("Aces", owner_phone).await;
    let token = Some(club.owner.access_token.as_str());
    app.request_code(owner_phone).await.assert_ok();
    let code = app.last_code(owner_phone);
    let refused = app.post("/me/delete", token, json!({"code": code})).await;
    refused.assert_error(409, "SOLE_OWNER");
    assert!(refused.body["error"]["message"].as_str().is_some_and(|text| text.contains("Aces")), "{refused:?}");
    app.get("/auth/me", token).await.assert_ok();
    let members = app.get(&format!("/organizers/{}/members", club.id), token).await;
    assert_eq!(members.assert_ok()["items"].as_array().map(Vec::len), Some(1), "still the club's owner");

    let path = format!("/organizers/{}/members", club.id);
    let added = app.post(&path, token, json!({"phone": "+79997400012", "role": "owner"})).await;
    assert_eq!(added.status, 201, "{added:?}");
    // A refusal changed nothing, the code included: it deletes now.
    assert_deleted(&app.post("/me/delete", token, json!({"code": code})).await);
    let new_owner = app.sign_in("+79997400012").await;
    let members = app.get(&path, Some(&new_owner.access_token)).await;
    let items = members.assert_ok()["items"].as_array().expect("items").clone();
    assert_eq!(items.len(), 1, "the deleted owner left the club: {items:?}");
    assert_eq!(items[0]["phone"], "+79997400012");
}

async fn a_player_of_a_running_tournament_is_refused_until_it_ends(backend: Backend) {
    let Some(app) = spawn_app(backend).await else { return };
    let club = app.create_club("Aces", "+79997400021").await;
    let owner = Some(club.owner.access_token.as_str());
    let anna = app.sign_in(ANNA).await;
    let boris = app.sign_in("+79997400022").await;
    let tournament = app.create_tournament(&club, 10, Duration::days(1)).await;
    let mut registrations = Vec::new();
    for player in [&anna, &boris] {
        let registration = id_of(&register(&app, tournament, player).await["id"]);
        app.post(&format!("/tournaments/{tournament}/check-in"), owner, json!({"registrationId": registration}))
            .await
            .assert_ok();
        registrations.push(registration);
    }
    app.post(&format!("/tournaments/{tournament}/start"), owner, json!({})).await.assert_ok();

    app.request_code(ANNA).await.assert_ok();
    let code = app.last_code(ANNA);
    let refused = app.post("/me/delete", Some(&anna.access_token), json!({"code": code})).await;
    refused.assert_error(409, "PLAYING_NOW");
    app.get("/auth/me", Some(&anna.access_token)).await.assert_ok();

    app.post("/eliminations", owner, json!({"tournamentId": tournament, "registrationId": registrations[1]}))
        .await
        .assert_ok();
    app.post(&format!("/tournaments/{tournament}/confirm-results"), owner, json!({})).await.assert_ok();
    assert_deleted(&app.post("/me/delete", Some(&anna.access_token), json!({"code": code})).await);
    let results = app.get(&format!("/tournaments/{tournament}/results"), Some(&boris.access_token)).await;
    let items = results.assert_ok()["items"].as_array().expect("items").clone();
    let winner = items.iter().find(|row| row["place"] == 1).expect("a winner");
    assert_eq!(winner["name"], "Удалённый игрок", "the win stays, under the neutral name");
}

/// `PLAYING_NOW` is the contract's "seated in a running tournament": a player still at a table.
/// One already eliminated has played; the account goes as after the game, the elimination and
/// then the place stay under the neutral name, and nothing more is told to the deleted account.
async fn a_player_already_out_of_a_running_tournament_may_delete_and_one_still_in_may_not(backend: Backend) {
    let Some(app) = spawn_app(backend).await else { return };
    let club = app.create_club("Aces", "+79997400071").await;
    let owner = Some(club.owner.access_token.as_str());
    let (boris_phone, vera_phone) = ("+79997400072", "+79997400073");
    let anna = app.sign_in(ANNA).await;
    let boris = app.sign_in(boris_phone).await;
    let vera = app.sign_in(vera_phone).await;
    let tournament = app.create_tournament(&club, 10, Duration::days(1)).await;
    let mut places = Vec::new();
    for player in [&anna, &boris, &vera] {
        let registration = id_of(&register(&app, tournament, player).await["id"]);
        app.post(&format!("/tournaments/{tournament}/check-in"), owner, json!({"registrationId": registration}))
            .await
            .assert_ok();
        places.push(registration);
    }
    app.post(&format!("/tournaments/{tournament}/start"), owner, json!({})).await.assert_ok();
    app.post("/eliminations", owner, json!({"tournamentId": tournament, "registrationId": places[1]}))
        .await
        .assert_ok();

    assert_deleted(&delete_with_a_fresh_code(&app, &boris, boris_phone).await);
    let still_in = delete_with_a_fresh_code(&app, &vera, vera_phone).await;
    still_in.assert_error(409, "PLAYING_NOW");
    app.get("/auth/me", Some(&vera.access_token)).await.assert_ok();
    let live = app.get(&format!("/tournaments/{tournament}/live"), None).await;
    let live = live.assert_ok();
    assert_eq!(live["eliminations"][0]["name"], "Удалённый игрок", "{live}");
    assert_eq!(live["remaining"], 2, "the game goes on: {live}");

    app.post(&format!("/tournaments/{tournament}/announcements"), owner, json!({"text": "Перерыв 10 минут"}))
        .await
        .assert_ok();
    app.post("/eliminations", owner, json!({"tournamentId": tournament, "registrationId": places[2]}))
        .await
        .assert_ok();
    app.post(&format!("/tournaments/{tournament}/confirm-results"), owner, json!({})).await.assert_ok();
    let results = app.get(&format!("/tournaments/{tournament}/results"), owner).await;
    let items = results.assert_ok()["items"].as_array().expect("items").clone();
    let third = items.iter().find(|row| row["place"] == 3).expect("a third place");
    assert_eq!(third["name"], "Удалённый игрок", "the place stays, under the neutral name: {items:?}");
    let told = |user: Uuid| {
        format!(
            "SELECT COUNT(*) FROM notifications WHERE user_id = {} \
             AND kind IN ('tournament.announcement', 'tournament.results')",
            app.uuid_literal(user)
        )
    };
    assert_eq!(app.count(&told(boris.user_id)).await, 0, "the deleted account hears nothing more");
    assert_eq!(app.count(&told(anna.user_id)).await, 2, "the others hear the announcement and their place");
    let left = format!("SELECT COUNT(*) FROM notifications WHERE user_id = {}", app.uuid_literal(boris.user_id));
    assert_eq!(app.count(&left).await, 0, "nor was anything kept for it");
    assert_deleted(&delete_with_a_fresh_code(&app, &vera, vera_phone).await);
}

async fn a_deleted_account_takes_its_merged_ones_along_and_is_neither_merged_nor_unbanned(backend: Backend) {
    let Some(app) = spawn_app(backend).await else { return };
    let anna = app.sign_in(ANNA).await;
    let boris = app.sign_in("+79997400032").await;
    // Anna's second account, merged into hers earlier, goes with it.
    let second_phone = "+79997400033";
    let second = app.sign_in(second_phone).await;
    let admin = app.platform_admin().await;
    let token = Some(admin.access_token.as_str());
    app.post(&format!("/admin/users/{}/merge", anna.user_id), token, json!({"duplicateUserId": second.user_id}))
        .await
        .assert_ok();
    assert_deleted(&delete_with_a_fresh_code(&app, &anna, ANNA).await);
    assert_eq!(app.count(&format!("SELECT COUNT(*) FROM users WHERE phone = '{second_phone}'")).await, 0);
    let second_row = format!("FROM users WHERE id = {}", app.uuid_literal(second.user_id));
    assert_eq!(app.scalar(&format!("SELECT status {second_row}")).await.as_deref(), Some("deleted"));

    for (main, duplicate) in [(boris.user_id, anna.user_id), (anna.user_id, boris.user_id)] {
        app.post(&format!("/admin/users/{main}/merge"), token, json!({"duplicateUserId": duplicate}))
            .await
            .assert_error(409, "INVALID_STATUS");
    }
    let path = format!("/admin/users/{}", anna.user_id);
    app.call(Method::PATCH, &path, token, Some(json!({"status": "active"}))).await.assert_error(409, "INVALID_STATUS");
    app.call(Method::PATCH, &path, token, Some(json!({"status": "deleted"})))
        .await
        .assert_error(400, "VALIDATION_ERROR");
    let me = app.get("/auth/me", Some(&boris.access_token)).await;
    assert_eq!(me.assert_ok()["status"], "active", "the refused merge left Boris alone");
}

async fn a_registration_ban_outlives_the_deleted_account_for_its_phone_until_it_ends(backend: Backend) {
    let Some(app) = spawn_app(backend).await else { return };
    let club = app.create_club("Aces", "+79997400041").await;
    let tournament = app.create_tournament(&club, 10, Duration::days(2)).await;
    let anna = app.sign_in(ANNA).await;
    let ban_until = chrono::Utc::now() + Duration::days(7);
    app.exec(&format!(
        "UPDATE player_profiles SET ban_until = '{}' WHERE user_id = {}",
        ban_until.to_rfc3339(),
        app.uuid_literal(anna.user_id)
    ))
    .await;
    assert_deleted(&delete_with_a_fresh_code(&app, &anna, ANNA).await);
    // The phone's SHA-256 is kept, never the phone.
    assert_eq!(app.count("SELECT COUNT(*) FROM phone_bans").await, 1);
    assert_eq!(
        app.count(&format!("SELECT COUNT(*) FROM phone_bans WHERE phone_hash LIKE '%{}%'", &ANNA[1..])).await,
        0
    );

    let again = app.sign_in(ANNA).await;
    assert_ne!(again.user_id, anna.user_id, "a new person");
    let refused = app.post(&format!("/tournaments/{tournament}/register"), Some(&again.access_token), json!({})).await;
    refused.assert_error(403, "REGISTRATION_BANNED");
    let me = app.get("/auth/me", Some(&again.access_token)).await;
    let kept = me.assert_ok()["profile"]["banUntil"].as_str().expect("a ban").to_owned();
    let kept: chrono::DateTime<chrono::Utc> = kept.parse().expect("a time");
    assert!((kept - ban_until).num_milliseconds().abs() < 1000, "the same ban: {kept} {ban_until}");

    // Once it has ended it follows nobody: the next deletion forgets it. (The codes asked so far
    // go too, as ten minutes would take them out of the phone's limit.)
    app.exec("DELETE FROM otp_codes").await;
    app.exec("UPDATE phone_bans SET ban_until = '2020-01-01T00:00:00Z'").await;
    app.exec(&format!(
        "UPDATE player_profiles SET ban_until = NULL WHERE user_id = {}",
        app.uuid_literal(again.user_id)
    ))
    .await;
    assert_deleted(&delete_with_a_fresh_code(&app, &again, ANNA).await);
    assert_eq!(app.count("SELECT COUNT(*) FROM phone_bans").await, 0, "ended bans go");
    let third = app.sign_in(ANNA).await;
    register(&app, tournament, &third).await;
}

/// What the public pictures of `tournament` say now: its live state (with its `ETag`, asked
/// with `since` as `If-None-Match`), its share page, and a `join`'s state.
struct Pictures {
    live: Reply,
    share: String,
    joined: Value,
}

async fn pictures(app: &TestApp, tournament: Uuid, since: Option<&str>, watcher_token: &str) -> Pictures {
    let path = format!("/tournaments/{tournament}/live");
    let live = match since {
        Some(tag) => app.call_with(Method::GET, &path, None, None, &[("if-none-match", tag)]).await,
        None => app.get(&path, None).await,
    };
    let share = app.client.get(format!("{}/t/{tournament}", app.base)).send().await.expect("the page");
    let share = share.text().await.expect("its text");
    let watcher = app.watcher(watcher_token).await;
    let joined = watcher.join(tournament).await["state"].clone();
    Pictures { live, share, joined }
}

impl Pictures {
    #[track_caller]
    fn name(&self, name: &str, shown: bool) {
        assert_eq!(self.live.body.to_string().contains(name), shown, "GET …/live: {name}");
        assert_eq!(self.share.contains(name), shown, "the share page: {name}");
        assert_eq!(self.joined.to_string().contains(name), shown, "a join's state: {name}");
    }

    fn etag(&self) -> String {
        self.live.headers["etag"].to_str().expect("an ETag").to_owned()
    }
}

async fn a_deleted_player_leaves_every_live_picture_at_once_as_a_new_version(backend: Backend) {
    let Some(app) = spawn_app(backend).await else { return };
    let club = app.create_club("Aces", "+79997400051").await;
    let anna = app.sign_in(ANNA).await;
    app.patch("/me", Some(&anna.access_token), json!({"name": "Anna Petrova"})).await.assert_ok();
    let boris = app.sign_in("+79997400052").await;
    let played = play(&app, &club, &[&boris, &anna]).await;
    let before = pictures(&app, played, None, &boris.access_token).await;
    before.name("Anna Petrova", true);
    let mut watcher = app.watcher(&boris.access_token).await;
    watcher.join(played).await;

    assert_deleted(&delete_with_a_fresh_code(&app, &anna, ANNA).await);

    let after = pictures(&app, played, Some(&before.etag()), &boris.access_token).await;
    assert_eq!(after.live.status, 200, "the old ETag no longer matches: {:?}", after.live);
    assert_ne!(after.etag(), before.etag());
    assert_eq!(after.live.body["version"].as_i64(), before.live.body["version"].as_i64().map(|v| v + 1));
    after.name("Anna Petrova", false);
    after.name("Удалённый игрок", true);
    let pushed = watcher.next_state().await;
    assert!(!pushed.to_string().contains("Anna Petrova"), "a watcher joined before hears the new picture");
    assert_eq!(pushed["version"], after.live.body["version"]);
}

async fn a_walk_in_whose_phone_signed_up_and_deleted_leaves_the_live_picture(backend: Backend) {
    let Some(app) = spawn_app(backend).await else { return };
    let club = app.create_club("Aces", "+79997400061").await;
    let owner = Some(club.owner.access_token.as_str());
    let boris = app.sign_in("+79997400062").await;
    let tournament = app.create_tournament(&club, 10, Duration::days(1)).await;
    let walk_in = app
        .post(&format!("/tournaments/{tournament}/walk-in"), owner, json!({"phone": ANNA, "name": "Петя Гость"}))
        .await;
    let petya = id_of(&walk_in.assert_ok()["id"]);
    let borises = id_of(&register(&app, tournament, &boris).await["id"]);
    for place in [petya, borises] {
        app.post(&format!("/tournaments/{tournament}/check-in"), owner, json!({"registrationId": place})).await;
    }
    app.post(&format!("/tournaments/{tournament}/start"), owner, json!({})).await.assert_ok();
    app.post("/eliminations", owner, json!({"tournamentId": tournament, "registrationId": petya})).await.assert_ok();
    app.post(&format!("/tournaments/{tournament}/confirm-results"), owner, json!({})).await.assert_ok();
    pictures(&app, tournament, None, &boris.access_token).await.name("Петя Гость", true);

    let anna = app.sign_in(ANNA).await;
    assert_deleted(&delete_with_a_fresh_code(&app, &anna, ANNA).await);

    let after = pictures(&app, tournament, None, &boris.access_token).await;
    after.name("Петя Гость", false);
    after.name("Удалённый игрок", true);
}

/// A public read of `path` on `app`, asked with `since` as `If-None-Match`.
async fn read_since(app: &TestApp, path: &str, since: Option<&str>) -> Reply {
    match since {
        Some(tag) => app.call_with(Method::GET, path, None, None, &[("if-none-match", tag)]).await,
        None => app.get(path, None).await,
    }
}

/// The `ETag` of a reply.
fn tag_of(reply: &Reply) -> String {
    reply.headers["etag"].to_str().expect("an ETag").to_owned()
}

/// The leaderboards, which name the players.
const BOARDS: [&str; 2] = ["/leaderboards/level", "/leaderboards/season"];

async fn a_deleted_name_is_gone_from_the_other_node_once_answered(backend: Backend) {
    deleted_name_gone_from_the_other_node(backend, false).await;
}

async fn a_deleted_name_is_gone_from_the_other_node_once_answered_without_redis(backend: Backend) {
    deleted_name_gone_from_the_other_node(backend, true).await;
}

/// Two nodes on one database and a Redis of the test's own (stopped before the deletion when
/// `redis_down`): one tournament run by each node, both played by Anna, and the leaderboards
/// naming her, all read on the second node. Anna deletes her account on the first: right after
/// its `204`, the second node shows her name nowhere (each tournament's live picture, its share
/// page, a join's state, the leaderboards), and the tags of what it showed before get a new
/// answer, not `304`. Nothing waits for a note between the nodes.
async fn deleted_name_gone_from_the_other_node(backend: Backend, redis_down: bool) {
    let Some(mut redis) = OwnRedis::start() else { return };
    let url = redis.url();
    let Some(first) = spawn_app_with(backend, &[("REDIS_URL", url.as_str())]).await else { return };
    let second = first.second_node(&[("REDIS_URL", url.as_str())]).await;
    let club = first.create_club("Aces", "+79997400071").await;
    let anna = first.sign_in(ANNA).await;
    first.patch("/me", Some(&anna.access_token), json!({"name": "Anna Petrova"})).await.assert_ok();
    let boris = first.sign_in("+79997400072").await;
    // The first node runs one tournament's actor and follows the other's; the second the reverse.
    let run_by_first = play(&first, &club, &[&boris, &anna]).await;
    let run_by_second = play(&second, &club, &[&boris, &anna]).await;
    let token = boris.access_token.clone();
    let mut tags = Vec::new();
    for tournament in [run_by_first, run_by_second] {
        let before = pictures(&second, tournament, None, &token).await;
        before.name("Anna Petrova", true);
        tags.push((format!("/tournaments/{tournament}/live"), before.etag()));
    }
    for board in BOARDS {
        let before = read_since(&second, board, None).await;
        assert!(before.assert_ok().to_string().contains("Anna Petrova"), "{board} names her: {before:?}");
        tags.push((board.to_owned(), tag_of(&before)));
    }
    if redis_down {
        redis.kill();
    }

    assert_deleted(&delete_with_a_fresh_code(&first, &anna, ANNA).await);

    // At once, on the other node: every tag it gave before gets a new answer without her name.
    let mut kept = Vec::new();
    for (path, tag) in &tags {
        let after = read_since(&second, path, Some(tag)).await;
        if after.status != 200 || after.body.to_string().contains("Anna Petrova") || &tag_of(&after) == tag {
            kept.push(format!("{path}: {} {}", after.status, after.body));
        }
    }
    assert!(kept.is_empty(), "the other node still answers as before the deletion:\n{}", kept.join("\n"));
    for tournament in [run_by_first, run_by_second] {
        let after = pictures(&second, tournament, None, &token).await;
        after.name("Anna Petrova", false);
        after.name("Удалённый игрок", true);
    }
}

/// A node alone counts its own deletions, reading no stored count: right after the `204`, a
/// leaderboard it kept naming the person is built again without her, and its old tag gets a new
/// answer, not `304`.
async fn a_deleted_name_is_gone_from_a_node_alone_s_kept_leaderboards_once_answered(backend: Backend) {
    let Some(app) = spawn_app(backend).await else { return };
    let club = app.create_club("Aces", "+79997400081").await;
    let anna = app.sign_in(ANNA).await;
    app.patch("/me", Some(&anna.access_token), json!({"name": "Anna Petrova"})).await.assert_ok();
    let boris = app.sign_in("+79997400082").await;
    play(&app, &club, &[&boris, &anna]).await;
    let mut tags = Vec::new();
    for board in BOARDS {
        let before = read_since(&app, board, None).await;
        assert!(before.assert_ok().to_string().contains("Anna Petrova"), "{board} names her: {before:?}");
        tags.push((board, tag_of(&before)));
    }

    assert_deleted(&delete_with_a_fresh_code(&app, &anna, ANNA).await);

    for (board, tag) in &tags {
        let after = read_since(&app, board, Some(tag)).await;
        assert_eq!(after.status, 200, "{board}: a new answer, not 304: {after:?}");
        assert!(!after.body.to_string().contains("Anna Petrova"), "{board} still names her: {after:?}");
    }
}
