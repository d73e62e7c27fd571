//! Player moderation: `GET /admin/users`, `PATCH /admin/users/{id}` (ban, unban) and
//! `POST /admin/users/{id}/merge`.

use chrono::Duration;
use serde_json::{Value, json};
use uuid::Uuid;

use crate::helpers::{Backend, Club, Session, TestApp, on_both_databases, spawn_app};

on_both_databases!(
    the_search_finds_accounts_by_phone_name_or_nickname_newest_first,
    a_ban_signs_the_account_out_and_an_unban_lets_it_back,
    banning_is_refused_for_oneself_and_for_platform_admins_without_admins_manage,
    a_merge_moves_the_duplicates_history_and_leaves_it_banned,
    a_merge_needs_two_known_accounts,
    a_merge_into_or_of_a_banned_account_is_refused_and_changes_nothing,
);

fn id_of(value: &Value) -> Uuid {
    value.as_str().and_then(|id| id.parse().ok()).expect("an id")
}

async fn name(app: &TestApp, player: &Session, name: &str, nickname: &str) {
    app.patch("/me", Some(&player.access_token), json!({"name": name, "nickname": nickname})).await.assert_ok();
}

async fn search(app: &TestApp, moderator: &Session, q: &str) -> Vec<Value> {
    let path = if q.is_empty() { "/admin/users".to_owned() } else { format!("/admin/users?q={}", urlencode(q)) };
    app.get(&path, Some(&moderator.access_token)).await.assert_ok()["items"].as_array().expect("items").clone()
}

fn urlencode(text: &str) -> String {
    text.bytes()
        .map(|b| if b.is_ascii_alphanumeric() { (b as char).to_string() } else { format!("%{b:02X}") })
        .collect()
}

fn ids(rows: &[Value]) -> Vec<Uuid> {
    rows.iter().map(|row| id_of(&row["id"])).collect()
}

async fn the_search_finds_accounts_by_phone_name_or_nickname_newest_first(backend: Backend) {
    let Some(app) = spawn_app(backend).await else { return };
    let moderator = app.sign_in_as_admin("+79997000001", "moderator").await;
    let anna = app.sign_in("+79997001234").await;
    let boris = app.sign_in("+79997005678").await;
    let clara = app.sign_in("+79997009999").await;
    name(&app, &anna, "Анна Петрова", "Queen").await;
    name(&app, &boris, "Boris", "АННАлитик").await;
    name(&app, &clara, "Clara", "ace77").await;

    assert_eq!(
        ids(&search(&app, &moderator, "анна").await),
        [boris.user_id, anna.user_id],
        "any case, Cyrillic too, newest first"
    );
    assert_eq!(ids(&search(&app, &moderator, "QUEEN").await), [anna.user_id]);
    assert_eq!(ids(&search(&app, &moderator, "+7 999 700-1234").await), [anna.user_id], "a phone by its digits");
    assert_eq!(ids(&search(&app, &moderator, "5678").await), [boris.user_id]);
    assert_eq!(
        ids(&search(&app, &moderator, "ace77").await),
        [clara.user_id],
        "a nickname with digits is a name search"
    );
    assert!(search(&app, &moderator, "nobody").await.is_empty());
    let everyone = search(&app, &moderator, "").await;
    assert_eq!(ids(&everyone), [clara.user_id, boris.user_id, anna.user_id, moderator.user_id], "all, newest first");

    let row = &everyone[2];
    assert_eq!(row["phone"], "+79997001234");
    assert_eq!(row["name"], "Анна Петрова");
    assert_eq!(row["nickname"], "Queen");
    assert_eq!(row["status"], "active");
    assert_eq!(row["adminRole"], Value::Null);
    for field in ["avatarUrl", "citySlug"] {
        assert!(row.get(field).is_some(), "{field} is present");
    }
    assert!(row["createdAt"].is_string());
    let profile = &row["profile"];
    assert_eq!(profile["xp"], 0);
    assert_eq!(profile["level"], 1);
    assert_eq!(profile["tier"], "fish");
    assert_eq!(profile["skill"], 5.0);
    assert_eq!(
        (profile["gamesPlayed"].clone(), profile["wins"].clone(), profile["banUntil"].clone()),
        (json!(0), json!(0), Value::Null)
    );
    assert_eq!(everyone[3]["adminRole"], "moderator");

    let long = "x".repeat(101);
    app.get(&format!("/admin/users?q={long}"), Some(&moderator.access_token))
        .await
        .assert_error(400, "VALIDATION_ERROR");
    let support = app.sign_in_as_admin("+79997000002", "support").await;
    app.get("/admin/users", Some(&support.access_token)).await.assert_error(403, "FORBIDDEN");
}

async fn set_status(app: &TestApp, moderator: &Session, user: Uuid, status: &str) -> crate::helpers::Reply {
    app.patch(&format!("/admin/users/{user}"), Some(&moderator.access_token), json!({"status": status})).await
}

async fn audit_count(app: &TestApp, action: &str) -> i64 {
    app.count(&format!("SELECT COUNT(*) FROM audit_log WHERE action = '{action}'")).await
}

async fn a_ban_signs_the_account_out_and_an_unban_lets_it_back(backend: Backend) {
    let Some(app) = spawn_app(backend).await else { return };
    let moderator = app.sign_in_as_admin("+79997100001", "moderator").await;
    let player = app.sign_in("+79997100002").await;
    let second_device = app.sign_in("+79997100002").await;

    let banned = set_status(&app, &moderator, player.user_id, "banned").await;
    assert_eq!(banned.assert_ok()["status"], "banned");
    assert_eq!(banned.body["id"], json!(player.user_id));
    app.get("/auth/me", Some(&player.access_token)).await.assert_error(403, "USER_BANNED");
    for session in [&player, &second_device] {
        app.post("/auth/refresh", None, json!({"refreshToken": session.refresh_token}))
            .await
            .assert_error(401, "INVALID_REFRESH_TOKEN");
    }
    app.request_code("+79997100002").await.assert_error(403, "USER_BANNED");
    assert_eq!(audit_count(&app, "user.ban").await, 1);

    // The same status again: no change, no second record.
    set_status(&app, &moderator, player.user_id, "banned").await.assert_ok();
    assert_eq!(audit_count(&app, "user.ban").await, 1);

    let unbanned = set_status(&app, &moderator, player.user_id, "active").await;
    assert_eq!(unbanned.assert_ok()["status"], "active");
    assert_eq!(audit_count(&app, "user.unban").await, 1);
    let back = app.sign_in("+79997100002").await;
    app.get("/auth/me", Some(&back.access_token)).await.assert_ok();

    set_status(&app, &moderator, player.user_id, "frozen").await.assert_error(400, "VALIDATION_ERROR");
    set_status(&app, &moderator, Uuid::now_v7(), "banned").await.assert_error(404, "NOT_FOUND");
    set_status(&app, &back, moderator.user_id, "banned").await.assert_error(403, "FORBIDDEN");
}

async fn banning_is_refused_for_oneself_and_for_platform_admins_without_admins_manage(backend: Backend) {
    let Some(app) = spawn_app(backend).await else { return };
    let moderator = app.sign_in_as_admin("+79997200001", "moderator").await;
    let marketing = app.sign_in_as_admin("+79997200002", "marketing").await;
    set_status(&app, &moderator, moderator.user_id, "banned").await.assert_error(409, "INVALID_STATUS");
    set_status(&app, &moderator, marketing.user_id, "banned").await.assert_error(403, "FORBIDDEN");
    assert_eq!(audit_count(&app, "user.ban").await, 0);
    let super_admin = app.platform_admin().await;
    set_status(&app, &super_admin, marketing.user_id, "banned").await.assert_ok();
    app.get("/auth/me", Some(&marketing.access_token)).await.assert_error(403, "USER_BANNED");
}

/// Registers `players` in the club's new tournament, checks them in, starts, eliminates
/// all but the first (last listed goes out first) and confirms: the first wins.
pub(crate) async fn play(app: &TestApp, club: &Club, players: &[&Session]) -> Uuid {
    let tournament = app.create_tournament(club, 10, Duration::days(1)).await;
    let owner = Some(club.owner.access_token.as_str());
    let mut registrations = Vec::new();
    for player in players {
        let reply =
            app.post(&format!("/tournaments/{tournament}/register"), Some(&player.access_token), json!({})).await;
        let registration = id_of(&reply.assert_ok()["id"]);
        app.post(&format!("/tournaments/{tournament}/check-in"), owner, json!({"registrationId": registration}))
            .await
            .assert_ok();
        registrations.push(registration);
    }
    app.post(&format!("/tournaments/{tournament}/start"), owner, json!({})).await.assert_ok();
    for registration in registrations.iter().skip(1).rev() {
        app.post("/eliminations", owner, json!({"tournamentId": tournament, "registrationId": registration}))
            .await
            .assert_ok();
    }
    app.post(&format!("/tournaments/{tournament}/confirm-results"), owner, json!({})).await.assert_ok();
    tournament
}

async fn profile_of(app: &TestApp, moderator: &Session, user: Uuid) -> Value {
    let everyone = search(app, moderator, "").await;
    everyone.into_iter().find(|row| id_of(&row["id"]) == user).expect("the account is listed")
}

async fn follow(app: &TestApp, follower: &Session, followee: Uuid) {
    app.put(&format!("/players/{followee}/follow"), Some(&follower.access_token), json!({})).await.assert_ok();
}

/// Registers `player` in `tournament` and cancels after the club's deadline: one strike.
/// Returns the strike's time.
async fn late_cancellation(app: &TestApp, club: &Club, player: &Session) -> chrono::DateTime<chrono::Utc> {
    let tournament = app.create_tournament(club, 5, Duration::hours(1)).await;
    let token = Some(player.access_token.as_str());
    app.post(&format!("/tournaments/{tournament}/register"), token, json!({})).await.assert_ok();
    app.post(&format!("/tournaments/{tournament}/cancel-registration"), token, json!({})).await.assert_ok();
    let strikes = app.get(&format!("/tournaments/{tournament}/strikes"), Some(&club.owner.access_token)).await;
    let items = strikes.assert_ok()["items"].as_array().expect("items").clone();
    assert_eq!(items.len(), 1, "a late cancellation costs a strike");
    items[0]["createdAt"].as_str().and_then(|at| at.parse().ok()).expect("a strike time")
}

async fn a_merge_moves_the_duplicates_history_and_leaves_it_banned(backend: Backend) {
    let Some(app) = spawn_app(backend).await else { return };
    let club = app.create_club("Aces", "+79997300001").await;
    let hall = app.create_club("Hall", "+79997300003").await;
    let moderator = app.sign_in_as_admin("+79997300002", "moderator").await;
    let main = app.sign_in("+79997300010").await;
    // The duplicate deals in another club, with a showcase bio; the main account deals nowhere.
    let duplicate = app.make_dealer(&hall, "+79997300011").await;
    app.patch("/dealers/me", Some(&duplicate.access_token), json!({"bio": "Ten years on the felt"})).await.assert_ok();
    let xenia = app.sign_in("+79997300012").await;
    let yury = app.sign_in("+79997300013").await;
    let zoe = app.sign_in("+79997300014").await;

    // The duplicate wins a game against Xenia; then the main account loses one to Yury;
    // then both play one game, under both accounts: the main account wins it.
    let won_by_duplicate = play(&app, &club, &[&duplicate, &xenia]).await;
    play(&app, &club, &[&yury, &main]).await;
    let played_by_both = play(&app, &club, &[&main, &duplicate]).await;
    // One strike each, within the window: together they reach strikesToBan (2).
    let main_strike = late_cancellation(&app, &club, &main).await;
    let duplicate_strike = late_cancellation(&app, &club, &duplicate).await;
    // Both accounts registered in an open tournament of two seats (past its cancel deadline),
    // Zoe waiting; the duplicate alone in another.
    let both = app.create_tournament(&club, 2, Duration::hours(2)).await;
    let only_duplicate = app.create_tournament(&club, 10, Duration::days(4)).await;
    let register = |tournament: Uuid, player: &Session| {
        let path = format!("/tournaments/{tournament}/register");
        let token = player.access_token.clone();
        let app = &app;
        async move { id_of(&app.post(&path, Some(&token), json!({})).await.assert_ok()["id"]) }
    };
    let main_in_both = register(both, &main).await;
    let duplicate_in_both = register(both, &duplicate).await;
    let zoe_in_both = register(both, &zoe).await;
    let duplicate_alone = register(only_duplicate, &duplicate).await;
    // Follows around the pair: one would become a repeat, two a self-follow.
    follow(&app, &xenia, duplicate.user_id).await;
    follow(&app, &xenia, main.user_id).await;
    follow(&app, &duplicate, main.user_id).await;
    follow(&app, &main, duplicate.user_id).await;
    follow(&app, &duplicate, yury.user_id).await;
    let strikes_before = app.count("SELECT COUNT(*) FROM strikes").await;

    let reply = app
        .post(
            &format!("/admin/users/{}/merge", main.user_id),
            Some(&moderator.access_token),
            json!({"duplicateUserId": duplicate.user_id}),
        )
        .await;
    let merged = reply.assert_ok().clone();
    assert_eq!(id_of(&merged["id"]), main.user_id, "the main account's row comes back");

    // Registrations: the main account keeps its own where both were; the duplicate's other moves.
    let registration = |id: Uuid, column: &'static str| {
        let app = &app;
        async move { app.scalar(&format!("SELECT {column} FROM registrations WHERE id = {}", app.uuid_literal(id))).await }
    };
    assert_eq!(registration(main_in_both, "user_id").await, Some(main.user_id.to_string()));
    assert_eq!(
        registration(duplicate_in_both, "user_id").await,
        Some(duplicate.user_id.to_string()),
        "stays behind: one registration per account"
    );
    assert_eq!(registration(duplicate_alone, "user_id").await, Some(main.user_id.to_string()));
    let main_literal = app.uuid_literal(main.user_id);
    let in_both = app
        .count(&format!(
            "SELECT COUNT(*) FROM registrations WHERE tournament_id = {} AND user_id = {main_literal}",
            app.uuid_literal(both)
        ))
        .await;
    assert_eq!(in_both, 1, "no second registration for the main account");
    // ...but it holds no seat any more: cancelled without a strike, the seat went to Zoe.
    assert_eq!(registration(duplicate_in_both, "status").await.as_deref(), Some("cancelled"));
    assert_eq!(registration(main_in_both, "status").await.as_deref(), Some("registered"));
    assert_eq!(
        registration(zoe_in_both, "status").await.as_deref(),
        Some("registered"),
        "the waitlist's head is promoted"
    );
    assert_eq!(app.count("SELECT COUNT(*) FROM strikes").await, strikes_before, "the merge costs nobody a strike");
    let promoted = format!(
        "SELECT COUNT(*) FROM notifications WHERE kind = 'waitlist.promoted' AND user_id = {}",
        app.uuid_literal(zoe.user_id)
    );
    assert_eq!(app.eventually_count(&promoted, 1).await, 1, "Zoe is told");

    // Results moved where the main account had none; the profile equals a rebuild from scratch.
    let results_of = |user: Uuid| {
        let app = &app;
        let token = main.access_token.clone();
        async move {
            app.get(&format!("/players/{user}/results"), Some(&token)).await.assert_ok()["items"]
                .as_array()
                .expect("rows")
                .clone()
        }
    };
    let rows = results_of(main.user_id).await;
    assert_eq!(rows.len(), 3);
    assert_eq!(
        rows[2]["tournamentId"],
        json!(won_by_duplicate),
        "the duplicate's win is the main account's, first in time"
    );
    assert_eq!(
        (rows[0]["tournamentId"].clone(), rows[0]["place"].clone()),
        (json!(played_by_both), json!(1)),
        "the main account keeps its own result"
    );
    assert_eq!(
        rows[1]["skillBefore"], rows[2]["skillAfter"],
        "replayed in order: the later game starts where the win ended"
    );
    assert_eq!(rows[0]["skillBefore"], rows[1]["skillAfter"]);
    let profile = merged["profile"].clone();
    assert_eq!((profile["gamesPlayed"].clone(), profile["wins"].clone()), (json!(3), json!(2)));
    assert_eq!(profile["xp"], 14 + 7 + 14, "round(10 * sqrt(2) * 2 / 2) for a win, round(10 * sqrt(2) / 2) for second");
    // Two strikes within 30 days: banned from the later one for 14 days.
    let ban: chrono::DateTime<chrono::Utc> =
        profile["banUntil"].as_str().and_then(|at| at.parse().ok()).expect("a ban");
    let expected = main_strike.max(duplicate_strike) + Duration::days(14);
    assert!((ban - expected).num_milliseconds().abs() < 1000, "banned until {ban}, expected {expected}");
    floor::domain::rating::rebuild_profiles(app.db(), &[main.user_id, duplicate.user_id])
        .await
        .expect("a rebuild from scratch");
    assert_eq!(
        profile_of(&app, &moderator, main.user_id).await["profile"],
        profile,
        "the merge left what a rebuild gives"
    );
    let emptied = profile_of(&app, &moderator, duplicate.user_id).await;
    assert_eq!(emptied["status"], "banned");
    assert_eq!(emptied["phone"], "+79997300011", "the duplicate keeps its phone");
    // The duplicate keeps its result in the game both played, and nothing else.
    let kept = results_of(duplicate.user_id).await;
    assert_eq!(kept.len(), 1);
    assert_eq!((kept[0]["tournamentId"].clone(), kept[0]["place"].clone()), (json!(played_by_both), json!(2)));
    let left = &emptied["profile"];
    assert_eq!(
        (left["xp"].clone(), left["gamesPlayed"].clone(), left["wins"].clone(), left["banUntil"].clone()),
        (json!(7), json!(1), json!(0), Value::Null)
    );

    // The dealer profile moved whole, bio and all.
    let dealer = app.get(&format!("/dealers/{}", main.user_id), None).await;
    assert_eq!(dealer.assert_ok()["bio"], "Ten years on the felt");

    // Follows: Xenia follows the main account once, the main account follows Yury; no self-follow.
    assert_eq!(app.count("SELECT COUNT(*) FROM follows WHERE follower_id = followee_id").await, 0);
    let duplicate_literal = app.uuid_literal(duplicate.user_id);
    assert_eq!(
        app.count(&format!(
            "SELECT COUNT(*) FROM follows WHERE follower_id = {duplicate_literal} OR followee_id = {duplicate_literal}"
        ))
        .await,
        0
    );
    assert_eq!(app.count(&format!("SELECT COUNT(*) FROM follows WHERE followee_id = {main_literal}")).await, 1);
    assert_eq!(app.count(&format!("SELECT COUNT(*) FROM follows WHERE follower_id = {main_literal}")).await, 1);

    // The duplicate cannot sign in any more, and its sessions lead nowhere (least of all into
    // the main account).
    app.request_code("+79997300011").await.assert_error(403, "USER_BANNED");
    app.get("/auth/me", Some(&duplicate.access_token)).await.assert_error(403, "USER_BANNED");
    app.post("/auth/refresh", None, json!({"refreshToken": duplicate.refresh_token}))
        .await
        .assert_error(401, "INVALID_REFRESH_TOKEN");
    let audited = app.scalar("SELECT target_id FROM audit_log WHERE action = 'user.merge'").await;
    assert_eq!(audited, Some(main.user_id.to_string()));
}

async fn a_merge_needs_two_known_accounts(backend: Backend) {
    let Some(app) = spawn_app(backend).await else { return };
    let moderator = app.sign_in_as_admin("+79997400001", "moderator").await;
    let player = app.sign_in("+79997400002").await;
    let token = Some(moderator.access_token.as_str());
    let merge = |main: Uuid, duplicate: Value| {
        let app = &app;
        async move { app.post(&format!("/admin/users/{main}/merge"), token, json!({"duplicateUserId": duplicate})).await }
    };
    merge(player.user_id, json!(player.user_id)).await.assert_error(400, "VALIDATION_ERROR");
    merge(player.user_id, json!("not-an-id")).await.assert_error(400, "VALIDATION_ERROR");
    merge(player.user_id, json!(Uuid::now_v7())).await.assert_error(404, "NOT_FOUND");
    merge(Uuid::now_v7(), json!(player.user_id)).await.assert_error(404, "NOT_FOUND");
    merge(player.user_id, json!(moderator.user_id)).await.assert_error(409, "INVALID_STATUS");
    app.post(
        &format!("/admin/users/{}/merge", moderator.user_id),
        Some(&player.access_token),
        json!({"duplicateUserId": player.user_id}),
    )
    .await
    .assert_error(403, "FORBIDDEN");
    assert_eq!(audit_count(&app, "user.merge").await, 0);
    app.get("/auth/me", Some(&player.access_token)).await.assert_ok();
}

async fn a_merge_into_or_of_a_banned_account_is_refused_and_changes_nothing(backend: Backend) {
    let Some(app) = spawn_app(backend).await else { return };
    let moderator = app.sign_in_as_admin("+79997500001", "moderator").await;
    let anna = app.sign_in("+79997500002").await;
    let boris = app.sign_in("+79997500003").await;
    let clara = app.sign_in("+79997500004").await;
    follow(&app, &boris, clara.user_id).await;
    let token = Some(moderator.access_token.as_str());
    let merge = |main: Uuid, duplicate: Uuid| {
        let app = &app;
        async move { app.post(&format!("/admin/users/{main}/merge"), token, json!({"duplicateUserId": duplicate})).await }
    };

    merge(anna.user_id, boris.user_id).await.assert_ok();
    // Boris is a merged duplicate now: banned. Neither way round merges again.
    merge(boris.user_id, anna.user_id).await.assert_error(409, "INVALID_STATUS");
    merge(anna.user_id, boris.user_id).await.assert_error(409, "INVALID_STATUS");
    merge(clara.user_id, boris.user_id).await.assert_error(409, "INVALID_STATUS");
    // A banned duplicate or main account, banned by a moderator.
    set_status(&app, &moderator, clara.user_id, "banned").await.assert_ok();
    merge(anna.user_id, clara.user_id).await.assert_error(409, "INVALID_STATUS");
    merge(clara.user_id, anna.user_id).await.assert_error(409, "INVALID_STATUS");

    assert_eq!(audit_count(&app, "user.merge").await, 1, "only the first merge happened");
    app.get("/auth/me", Some(&anna.access_token)).await.assert_ok();
    for (user, status) in [(anna.user_id, "active"), (boris.user_id, "banned"), (clara.user_id, "banned")] {
        assert_eq!(profile_of(&app, &moderator, user).await["status"], status);
    }
    let anna_literal = app.uuid_literal(anna.user_id);
    assert_eq!(
        app.count(&format!("SELECT COUNT(*) FROM follows WHERE follower_id = {anna_literal}")).await,
        1,
        "Boris's follow, once"
    );
    let clara_literal = app.uuid_literal(clara.user_id);
    assert_eq!(app.count(&format!("SELECT COUNT(*) FROM follows WHERE followee_id = {clara_literal}")).await, 1);
    app.post("/auth/refresh", None, json!({"refreshToken": anna.refresh_token})).await.assert_ok();
}
