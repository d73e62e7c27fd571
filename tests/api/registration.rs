//! Every row of the spec's registration table, strikes and the ban, through HTTP.

use chrono::Duration;
use futures::future::join_all;
use serde_json::{Value, json};
use uuid::Uuid;

use crate::helpers::{Backend, Club, Session, TestApp, on_both_databases, spawn_app};

on_both_databases!(
    registration_takes_a_seat_until_capacity_then_the_waitlist,
    a_hundred_parallel_registrations_never_exceed_capacity,
    two_simultaneous_registrations_of_one_player_give_one_row_and_one_conflict,
    a_re_registration_reuses_the_row_at_the_end_of_the_queue,
    cancelling_before_the_deadline_costs_nothing_and_promotes_the_first_in_queue,
    cancelling_a_seat_after_the_deadline_costs_a_strike_but_the_waitlist_never_does,
    two_late_cancellations_ban_registration_and_forgiving_lifts_it,
    registration_is_closed_outside_the_registration_status,
    a_banned_or_deleted_account_is_refused_before_the_tournament_is_looked_at,
    check_in_only_from_registered_while_registration_is_open,
    cancel_check_in_returns_a_promoted_player_to_the_waitlist,
    a_player_who_was_never_on_the_waitlist_returns_to_registered,
    cancelling_late_twice_in_one_tournament_earns_two_strikes,
    a_walk_in_attaches_to_an_account_or_makes_a_guest_and_repeats_return_the_same_row,
    twenty_parallel_walk_ins_of_one_phone_give_one_row,
    a_walk_in_after_start_gets_a_registration,
    the_club_list_has_phones_and_the_queue_order,
    a_followers_journal_hears_of_a_registration,
    registering_or_cancelling_at_an_unknown_tournament_is_404_and_starts_no_desk,
);

/// A tournament with a single seat (below what a club may set), to watch the queue move.
async fn create_tournament_of_one(app: &TestApp, club: &Club, starts_in: Duration) -> Uuid {
    let id = app.create_tournament(club, 2, starts_in).await;
    app.exec(&format!("UPDATE tournaments SET capacity = 1 WHERE id = {}", app.uuid_literal(id))).await;
    id
}

fn register_path(id: Uuid) -> String {
    format!("/tournaments/{id}/register")
}

async fn register(app: &TestApp, id: Uuid, player: &Session) -> crate::helpers::Reply {
    app.post(&register_path(id), Some(&player.access_token), json!({})).await
}

async fn cancel(app: &TestApp, id: Uuid, player: &Session) -> crate::helpers::Reply {
    app.post(&format!("/tournaments/{id}/cancel-registration"), Some(&player.access_token), json!({})).await
}

async fn club_call(app: &TestApp, club: &Club, id: Uuid, action: &str, registration: &Value) -> crate::helpers::Reply {
    app.post(
        &format!("/tournaments/{id}/{action}"),
        Some(&club.owner.access_token),
        json!({"registrationId": registration}),
    )
    .await
}

async fn registrations_of(app: &TestApp, club: &Club, id: Uuid) -> Vec<Value> {
    let list = app.get(&format!("/tournaments/{id}/registrations"), Some(&club.owner.access_token)).await;
    list.assert_ok()["items"].as_array().expect("items").clone()
}

async fn registration_takes_a_seat_until_capacity_then_the_waitlist(backend: Backend) {
    let Some(app) = spawn_app(backend).await else { return };
    let club = app.create_club("Aces", "+79990300001").await;
    let id = app.create_tournament(&club, 2, Duration::days(2)).await;
    let players = app.sign_in_players(301, 4).await;
    let mut statuses = Vec::new();
    for player in &players {
        let reply = register(&app, id, player).await;
        let body = reply.assert_ok();
        assert_eq!(body["userId"], player.user_id.to_string());
        assert_eq!(body["source"], "app");
        statuses.push((body["status"].clone(), body["waitlistPosition"].clone()));
    }
    assert_eq!(
        statuses,
        [
            (json!("registered"), Value::Null),
            (json!("registered"), Value::Null),
            (json!("waitlist"), json!(1)),
            (json!("waitlist"), json!(2)),
        ]
    );
    let card = app.get(&format!("/tournaments/{id}"), None).await;
    assert_eq!((card.body["registeredCount"].clone(), card.body["waitlistCount"].clone()), (json!(2), json!(2)));
    register(&app, id, &players[0]).await.assert_error(409, "ALREADY_REGISTERED");
    register(&app, id, &players[3]).await.assert_error(409, "ALREADY_REGISTERED");
    register(&app, Uuid::new_v4(), &players[0]).await.assert_error(404, "NOT_FOUND");
    app.post(&register_path(id), None, json!({})).await.assert_error(401, "UNAUTHORIZED");
}

async fn a_hundred_parallel_registrations_never_exceed_capacity(backend: Backend) {
    let Some(app) = spawn_app(backend).await else { return };
    let club = app.create_club("Aces", "+79990300011").await;
    let id = app.create_tournament(&club, 10, Duration::days(2)).await;
    let players = app.sign_in_players(302, 100).await;
    let replies = join_all(players.iter().map(|player| register(&app, id, player))).await;
    let mut registered = 0;
    let mut waitlist = 0;
    for reply in &replies {
        match reply.assert_ok()["status"].as_str() {
            Some("registered") => registered += 1,
            Some("waitlist") => waitlist += 1,
            other => panic!("unexpected status {other:?}"),
        }
    }
    assert_eq!((registered, waitlist), (10, 90));
    assert_eq!(app.count("SELECT COUNT(*) FROM registrations WHERE status = 'registered'").await, 10);
    // The queue has 90 distinct places.
    let mut positions: Vec<i64> = replies.iter().filter_map(|r| r.body["waitlistPosition"].as_i64()).collect();
    positions.sort_unstable();
    positions.dedup();
    assert_eq!(positions.len(), 90);
}

async fn two_simultaneous_registrations_of_one_player_give_one_row_and_one_conflict(backend: Backend) {
    let Some(app) = spawn_app(backend).await else { return };
    let club = app.create_club("Aces", "+79990300021").await;
    let id = app.create_tournament(&club, 10, Duration::days(2)).await;
    let player = app.sign_in("+79990300022").await;
    for _ in 0..3 {
        app.exec("DELETE FROM registrations").await;
        let replies = join_all((0..2).map(|_| register(&app, id, &player))).await;
        let mut statuses: Vec<u16> = replies.iter().map(|r| r.status.as_u16()).collect();
        statuses.sort_unstable();
        assert_eq!(statuses, [200, 409], "{replies:?}");
        assert!(replies.iter().any(|r| r.code() == "ALREADY_REGISTERED"));
        assert_eq!(app.count("SELECT COUNT(*) FROM registrations").await, 1);
    }
}

async fn a_re_registration_reuses_the_row_at_the_end_of_the_queue(backend: Backend) {
    let Some(app) = spawn_app(backend).await else { return };
    let club = app.create_club("Aces", "+79990300031").await;
    let id = create_tournament_of_one(&app, &club, Duration::days(2)).await;
    let players = app.sign_in_players(303, 3).await;
    for player in &players {
        register(&app, id, player).await.assert_ok();
    }
    let first_wait = cancel(&app, id, &players[1]).await;
    assert_eq!(first_wait.assert_ok()["status"], "cancelled");
    let again = register(&app, id, &players[1]).await;
    let again = again.assert_ok();
    assert_eq!(again["id"], first_wait.body["id"], "the row is reused");
    assert_eq!(again["status"], "waitlist");
    assert_eq!(again["waitlistPosition"], 2, "behind the one who waited all along");
    assert!(again["createdAt"].as_str() > first_wait.body["createdAt"].as_str());
    assert_eq!(app.count("SELECT COUNT(*) FROM registrations").await, 3);
}

async fn cancelling_before_the_deadline_costs_nothing_and_promotes_the_first_in_queue(backend: Backend) {
    let Some(app) = spawn_app(backend).await else { return };
    let club = app.create_club("Aces", "+79990300041").await;
    let id = create_tournament_of_one(&app, &club, Duration::days(2)).await;
    let players = app.sign_in_players(304, 3).await;
    for player in &players {
        register(&app, id, player).await.assert_ok();
    }
    let cancelled = cancel(&app, id, &players[0]).await;
    assert_eq!(cancelled.assert_ok()["status"], "cancelled");
    assert_eq!(app.count("SELECT COUNT(*) FROM strikes").await, 0);

    let list = registrations_of(&app, &club, id).await;
    let by_user = |user: Uuid| list.iter().find(|r| r["userId"] == user.to_string()).cloned().expect("a row");
    assert_eq!(by_user(players[1].user_id)["status"], "registered");
    assert_eq!(by_user(players[1].user_id)["seatedFromWaitlist"], true);
    assert_eq!(by_user(players[2].user_id)["status"], "waitlist");
    assert_eq!(by_user(players[2].user_id)["waitlistPosition"], 1);

    // Only the promoted player is told.
    let to_promoted = format!(
        "SELECT COUNT(*) FROM notifications WHERE kind = 'waitlist.promoted' AND user_id = {}",
        app.uuid_literal(players[1].user_id)
    );
    assert_eq!(app.eventually_count(&to_promoted, 1).await, 1);
    assert_eq!(app.count("SELECT COUNT(*) FROM notifications WHERE kind = 'waitlist.promoted'").await, 1);

    cancel(&app, id, &players[0]).await.assert_error(409, "INVALID_STATUS");
    let stranger = app.sign_in("+79990300042").await;
    cancel(&app, id, &stranger).await.assert_error(404, "NOT_FOUND");
}

async fn cancelling_a_seat_after_the_deadline_costs_a_strike_but_the_waitlist_never_does(backend: Backend) {
    let Some(app) = spawn_app(backend).await else { return };
    let club = app.create_club("Aces", "+79990300051").await;
    // Starts in 2 hours; the deadline (3 hours before) has passed.
    let id = create_tournament_of_one(&app, &club, Duration::hours(2)).await;
    let players = app.sign_in_players(305, 2).await;
    register(&app, id, &players[0]).await.assert_ok();
    register(&app, id, &players[1]).await.assert_ok();
    // The waitlisted one leaves first: never a strike.
    cancel(&app, id, &players[1]).await.assert_ok();
    assert_eq!(app.count("SELECT COUNT(*) FROM strikes").await, 0);
    cancel(&app, id, &players[0]).await.assert_ok();

    let strikes = app.get(&format!("/tournaments/{id}/strikes"), Some(&club.owner.access_token)).await;
    let items = strikes.assert_ok()["items"].as_array().expect("items").clone();
    assert_eq!(items.len(), 1);
    assert_eq!(items[0]["userId"], players[0].user_id.to_string());
    assert_eq!(items[0]["reason"], "late_cancel");
    assert!(items[0]["forgivenAt"].is_null());

    // A 1-hour deadline makes the same cancellation free.
    app.exec(&format!("UPDATE organizers SET cancel_deadline_hours = 1 WHERE id = {}", app.uuid_literal(club.id)))
        .await;
    let other = app.create_tournament(&club, 5, Duration::hours(2)).await;
    register(&app, other, &players[1]).await.assert_ok();
    cancel(&app, other, &players[1]).await.assert_ok();
    assert_eq!(app.count("SELECT COUNT(*) FROM strikes").await, 1);
}

async fn two_late_cancellations_ban_registration_and_forgiving_lifts_it(backend: Backend) {
    let Some(app) = spawn_app(backend).await else { return };
    let club = app.create_club("Aces", "+79990300061").await;
    let player = app.sign_in("+79990300062").await;
    let first = app.create_tournament(&club, 5, Duration::hours(1)).await;
    let second = app.create_tournament(&club, 5, Duration::hours(1)).await;
    let third = app.create_tournament(&club, 5, Duration::days(5)).await;
    for id in [first, second] {
        register(&app, id, &player).await.assert_ok();
        cancel(&app, id, &player).await.assert_ok();
    }
    let me = app.get("/auth/me", Some(&player.access_token)).await;
    let ban = me.body["profile"]["banUntil"].as_str().expect("a ban").to_owned();
    let ban: chrono::DateTime<chrono::Utc> = ban.parse().expect("a time");
    let expected = chrono::Utc::now() + Duration::days(14);
    assert!((ban - expected).num_seconds().abs() < 60, "banned for 14 days: {ban}");
    register(&app, third, &player).await.assert_error(403, "REGISTRATION_BANNED");
    // The ban closes only registration: the account still works.
    app.get("/auth/me", Some(&player.access_token)).await.assert_ok();

    let strikes = app.get(&format!("/tournaments/{first}/strikes"), Some(&club.owner.access_token)).await;
    let strike_id = strikes.body["items"][0]["id"].as_str().expect("a strike").to_owned();
    let td = app.add_td(&club, "+79990300063").await;
    let forgiven = app.post(&format!("/strikes/{strike_id}/forgive"), Some(&td.access_token), json!({})).await;
    assert!(forgiven.assert_ok()["forgivenAt"].is_string());
    app.post(&format!("/strikes/{strike_id}/forgive"), Some(&td.access_token), json!({}))
        .await
        .assert_error(409, "INVALID_STATUS");
    let me = app.get("/auth/me", Some(&player.access_token)).await;
    assert!(me.body["profile"]["banUntil"].is_null(), "{me:?}");
    assert_eq!(register(&app, third, &player).await.assert_ok()["status"], "registered");
    assert_eq!(app.count("SELECT COUNT(*) FROM audit_log WHERE action = 'strike.forgive'").await, 1);

    let rival = app.create_club("Rival", "+79990300064").await;
    let second_strike = app.get(&format!("/tournaments/{second}/strikes"), Some(&club.owner.access_token)).await;
    let second_strike = second_strike.body["items"][0]["id"].as_str().expect("a strike").to_owned();
    app.post(&format!("/strikes/{second_strike}/forgive"), Some(&rival.owner.access_token), json!({}))
        .await
        .assert_error(403, "FORBIDDEN");
    app.post(&format!("/strikes/{}/forgive", Uuid::new_v4()), Some(&td.access_token), json!({}))
        .await
        .assert_error(404, "NOT_FOUND");
}

async fn registration_is_closed_outside_the_registration_status(backend: Backend) {
    let Some(app) = spawn_app(backend).await else { return };
    let club = app.create_club("Aces", "+79990300071").await;
    let id = app.create_tournament(&club, 5, Duration::days(1)).await;
    let players = app.sign_in_players(307, 2).await;
    register(&app, id, &players[0]).await.assert_ok();
    for status in ["running", "finished", "cancelled", "announced"] {
        app.exec(&format!("UPDATE tournaments SET status = '{status}' WHERE id = {}", app.uuid_literal(id))).await;
        register(&app, id, &players[1]).await.assert_error(409, "REGISTRATION_CLOSED");
        cancel(&app, id, &players[0]).await.assert_error(409, "REGISTRATION_CLOSED");
    }
    assert_eq!(app.count("SELECT COUNT(*) FROM registrations").await, 1);
}

/// The desk, not the request, reads a registering caller's account: it refuses a banned or
/// deleted one as every other route does, whatever the tournament.
async fn a_banned_or_deleted_account_is_refused_before_the_tournament_is_looked_at(backend: Backend) {
    let Some(app) = spawn_app(backend).await else { return };
    let club = app.create_club("Aces", "+79990300091").await;
    let open = app.create_tournament(&club, 5, Duration::days(1)).await;
    let running = app.create_tournament(&club, 5, Duration::days(1)).await;
    app.exec(&format!("UPDATE tournaments SET status = 'running' WHERE id = {}", app.uuid_literal(running))).await;
    let players = app.sign_in_players(309, 2).await;
    let (banned, deleted) = (&players[0], &players[1]);
    app.exec(&format!("UPDATE users SET status = 'banned' WHERE id = {}", app.uuid_literal(banned.user_id))).await;
    app.exec(&format!("UPDATE users SET status = 'deleted' WHERE id = {}", app.uuid_literal(deleted.user_id))).await;
    for id in [open, running, Uuid::new_v4()] {
        register(&app, id, banned).await.assert_error(403, "USER_BANNED");
        register(&app, id, deleted).await.assert_error(401, "UNAUTHORIZED");
    }
    let forged = Session { access_token: "not.a.token".into(), ..banned.clone() };
    register(&app, open, &forged).await.assert_error(401, "UNAUTHORIZED");
    app.post(&register_path(open), None, json!({})).await.assert_error(401, "UNAUTHORIZED");
    assert_eq!(app.count("SELECT COUNT(*) FROM registrations").await, 0);
}

async fn check_in_only_from_registered_while_registration_is_open(backend: Backend) {
    let Some(app) = spawn_app(backend).await else { return };
    let club = app.create_club("Aces", "+79990300081").await;
    let td = app.add_td(&club, "+79990300082").await;
    let id = create_tournament_of_one(&app, &club, Duration::days(1)).await;
    let players = app.sign_in_players(308, 2).await;
    let seated = register(&app, id, &players[0]).await.body["id"].clone();
    let waiting = register(&app, id, &players[1]).await.body["id"].clone();

    let checked = app
        .post(&format!("/tournaments/{id}/check-in"), Some(&td.access_token), json!({"registrationId": seated}))
        .await;
    assert_eq!(checked.assert_ok()["status"], "checked_in");
    club_call(&app, &club, id, "check-in", &seated).await.assert_error(409, "INVALID_STATUS");
    club_call(&app, &club, id, "check-in", &waiting).await.assert_error(409, "INVALID_STATUS");
    club_call(&app, &club, id, "check-in", &json!(Uuid::new_v4())).await.assert_error(404, "NOT_FOUND");
    club_call(&app, &club, id, "check-in", &json!("nope")).await.assert_error(400, "VALIDATION_ERROR");
    // A player cannot check in by themselves.
    app.post(&format!("/tournaments/{id}/check-in"), Some(&players[0].access_token), json!({"registrationId": seated}))
        .await
        .assert_error(403, "FORBIDDEN");
    // Checked in: the player must ask the club.
    cancel(&app, id, &players[0]).await.assert_error(409, "INVALID_STATUS");

    let back = club_call(&app, &club, id, "cancel-check-in", &seated).await;
    assert_eq!(back.assert_ok()["status"], "registered");
    club_call(&app, &club, id, "cancel-check-in", &seated).await.assert_error(409, "INVALID_STATUS");

    // A registration of another tournament is not found here.
    let other = app.create_tournament(&club, 5, Duration::days(1)).await;
    club_call(&app, &club, other, "check-in", &seated).await.assert_error(404, "NOT_FOUND");

    app.exec(&format!("UPDATE tournaments SET status = 'running' WHERE id = {}", app.uuid_literal(id))).await;
    club_call(&app, &club, id, "check-in", &seated).await.assert_error(409, "REGISTRATION_CLOSED");
    club_call(&app, &club, id, "cancel-check-in", &seated).await.assert_error(409, "REGISTRATION_CLOSED");
}

async fn cancel_check_in_returns_a_promoted_player_to_the_waitlist(backend: Backend) {
    let Some(app) = spawn_app(backend).await else { return };
    let club = app.create_club("Aces", "+79990300091").await;
    let id = create_tournament_of_one(&app, &club, Duration::days(1)).await;
    let players = app.sign_in_players(309, 3).await;
    for player in &players {
        register(&app, id, player).await.assert_ok();
    }
    cancel(&app, id, &players[0]).await.assert_ok();
    let promoted =
        registrations_of(&app, &club, id).await.into_iter().find(|r| r["status"] == "registered").expect("promoted");
    assert_eq!(promoted["userId"], players[1].user_id.to_string());
    club_call(&app, &club, id, "check-in", &promoted["id"]).await.assert_ok();
    let back = club_call(&app, &club, id, "cancel-check-in", &promoted["id"]).await;
    let back = back.assert_ok();
    assert_eq!(back["status"], "waitlist");
    assert_eq!(back["seatedFromWaitlist"], false);
    assert_eq!(back["waitlistPosition"], 1, "keeps their place at the head of the queue");
    // The seat given back goes to the next in the queue at once, who is told.
    let list = registrations_of(&app, &club, id).await;
    let row = |user: Uuid| list.iter().find(|r| r["userId"] == user.to_string()).cloned().expect("row");
    assert_eq!(row(players[2].user_id)["status"], "registered");
    assert_eq!(row(players[2].user_id)["seatedFromWaitlist"], true);
    let told = format!(
        "SELECT COUNT(*) FROM notifications WHERE kind = 'waitlist.promoted' AND user_id = {}",
        app.uuid_literal(players[2].user_id)
    );
    assert_eq!(app.eventually_count(&told, 1).await, 1);
    // A newcomer queues behind the player who gave the seat back.
    let newcomer = app.sign_in("+79990300092").await;
    assert_eq!(register(&app, id, &newcomer).await.assert_ok()["waitlistPosition"], 2);
    // A non-promoted player's check-in is cancelled back to `registered`.
    club_call(&app, &club, id, "check-in", &row(players[2].user_id)["id"]).await.assert_ok();
    let plain = club_call(&app, &club, id, "cancel-check-in", &row(players[2].user_id)["id"]).await;
    assert_eq!(plain.assert_ok()["status"], "waitlist", "promoted players go back to the queue");
}

async fn a_player_who_was_never_on_the_waitlist_returns_to_registered(backend: Backend) {
    let Some(app) = spawn_app(backend).await else { return };
    let club = app.create_club("Aces", "+79990300093").await;
    let id = app.create_tournament(&club, 5, Duration::days(1)).await;
    let player = app.sign_in("+79990300094").await;
    let seat = register(&app, id, &player).await.body["id"].clone();
    club_call(&app, &club, id, "check-in", &seat).await.assert_ok();
    let back = club_call(&app, &club, id, "cancel-check-in", &seat).await;
    assert_eq!(back.assert_ok()["status"], "registered");
}

async fn cancelling_late_twice_in_one_tournament_earns_two_strikes(backend: Backend) {
    let Some(app) = spawn_app(backend).await else { return };
    let club = app.create_club("Aces", "+79990300095").await;
    let id = app.create_tournament(&club, 5, Duration::hours(1)).await;
    let player = app.sign_in("+79990300096").await;
    for _ in 0..2 {
        register(&app, id, &player).await.assert_ok();
        cancel(&app, id, &player).await.assert_ok();
    }
    assert_eq!(app.count("SELECT COUNT(*) FROM registrations").await, 1, "the row is reused");
    assert_eq!(app.count("SELECT COUNT(*) FROM strikes WHERE reason = 'late_cancel'").await, 2);
    register(&app, id, &player).await.assert_error(403, "REGISTRATION_BANNED");
}

async fn a_walk_in_attaches_to_an_account_or_makes_a_guest_and_repeats_return_the_same_row(backend: Backend) {
    let Some(app) = spawn_app(backend).await else { return };
    let club = app.create_club("Aces", "+79990300101").await;
    let id = create_tournament_of_one(&app, &club, Duration::days(1)).await;
    let member = app.sign_in("+79990300102").await;
    let filler = app.sign_in("+79990300103").await;
    register(&app, id, &filler).await.assert_ok();
    let path = format!("/tournaments/{id}/walk-in");
    let token = Some(club.owner.access_token.as_str());

    let account = app.post(&path, token, json!({"phone": "+7 (999) 030-01-02", "name": "Someone"})).await;
    assert_eq!(account.status, 200, "{account:?}");
    assert_eq!(account.body["userId"], member.user_id.to_string());
    assert_eq!(account.body["status"], "checked_in", "capacity is not checked");
    assert_eq!(account.body["source"], "walk_in");

    let guest = app.post(&path, token, json!({"phone": "+79990300104", "name": "Гость"})).await;
    assert_eq!(guest.status, 200);
    assert!(guest.body["userId"].is_null());
    let guest_id = guest.body["guestId"].as_str().expect("a guest").to_owned();
    let again = app.post(&path, token, json!({"phone": "+79990300104", "name": "Other name"})).await;
    assert_eq!(again.status, 200);
    assert_eq!(again.body["id"], guest.body["id"]);
    assert_eq!(app.scalar("SELECT name FROM guest_players").await.as_deref(), Some("Гость"));

    // A registered player arriving at the door is checked in on the same row.
    let door = app.post(&path, token, json!({"phone": "+79990300103", "name": "Filler"})).await;
    assert_eq!(door.status, 200);
    assert_eq!(door.body["status"], "checked_in");
    assert_eq!(door.body["source"], "app");
    assert_eq!(app.count("SELECT COUNT(*) FROM registrations").await, 3);
    assert_eq!(
        app.count(&format!(
            "SELECT COUNT(*) FROM guest_players WHERE id = {}",
            app.uuid_literal(guest_id.parse().expect("uuid"))
        ))
        .await,
        1
    );

    let bad = app.post(&path, token, json!({"phone": "12", "name": ""})).await;
    bad.assert_error(400, "VALIDATION_ERROR");
    assert_eq!(bad.body["error"]["details"].as_array().map(Vec::len), Some(2));
}

async fn twenty_parallel_walk_ins_of_one_phone_give_one_row(backend: Backend) {
    let Some(app) = spawn_app(backend).await else { return };
    let club = app.create_club("Aces", "+79990300111").await;
    let id = app.create_tournament(&club, 5, Duration::days(1)).await;
    let path = format!("/tournaments/{id}/walk-in");
    let replies =
        join_all((0..20).map(|_| {
            app.post(&path, Some(&club.owner.access_token), json!({"phone": "+79990300112", "name": "Guest"}))
        }))
        .await;
    let ids: std::collections::HashSet<_> = replies.iter().map(|r| r.assert_ok()["id"].to_string()).collect();
    assert_eq!(ids.len(), 1);
    assert_eq!(app.count("SELECT COUNT(*) FROM registrations").await, 1);
    assert_eq!(app.count("SELECT COUNT(*) FROM guest_players").await, 1);
}

async fn a_walk_in_after_start_gets_a_registration(backend: Backend) {
    let Some(app) = spawn_app(backend).await else { return };
    let club = app.create_club("Aces", "+79990300121").await;
    let id = app.create_tournament(&club, 5, Duration::days(1)).await;
    app.exec(&format!("UPDATE tournaments SET status = 'running' WHERE id = {}", app.uuid_literal(id))).await;
    let path = format!("/tournaments/{id}/walk-in");
    let late = app.post(&path, Some(&club.owner.access_token), json!({"phone": "+79990300122", "name": "Late"})).await;
    assert_eq!(late.assert_ok()["status"], "checked_in");
    assert_eq!(app.count("SELECT COUNT(*) FROM table_seats").await, 0, "no seat");
    for status in ["finished", "cancelled"] {
        app.exec(&format!("UPDATE tournaments SET status = '{status}' WHERE id = {}", app.uuid_literal(id))).await;
        app.post(&path, Some(&club.owner.access_token), json!({"phone": "+79990300123", "name": "Too late"}))
            .await
            .assert_error(409, "REGISTRATION_CLOSED");
    }
}

async fn the_club_list_has_phones_and_the_queue_order(backend: Backend) {
    let Some(app) = spawn_app(backend).await else { return };
    let club = app.create_club("Aces", "+79990300131").await;
    let td = app.add_td(&club, "+79990300132").await;
    let id = create_tournament_of_one(&app, &club, Duration::days(1)).await;
    let players = app.sign_in_players(313, 2).await;
    app.patch("/me", Some(&players[0].access_token), json!({"name": "Anna", "nickname": "queen"})).await.assert_ok();
    for player in &players {
        register(&app, id, player).await.assert_ok();
    }
    app.post(
        &format!("/tournaments/{id}/walk-in"),
        Some(&td.access_token),
        json!({"phone": "+79990300133", "name": "Guest"}),
    )
    .await
    .assert_ok();
    let list = app.get(&format!("/tournaments/{id}/registrations"), Some(&td.access_token)).await;
    let items = list.assert_ok()["items"].as_array().expect("items").clone();
    assert_eq!(items.len(), 3);
    assert_eq!((items[0]["name"].clone(), items[0]["nickname"].clone()), (json!("Anna"), json!("queen")));
    assert_eq!(items[0]["phone"], "+79993130000");
    assert_eq!(items[1]["waitlistPosition"], 1);
    assert_eq!((items[2]["name"].clone(), items[2]["phone"].clone()), (json!("Guest"), json!("+79990300133")));

    // Public answers never carry a phone.
    for path in [format!("/tournaments/{id}"), "/tournaments".to_owned()] {
        let text = app.get(&path, None).await.body.to_string();
        assert!(!text.contains("+7999"), "{path}: {text}");
    }
}

async fn a_followers_journal_hears_of_a_registration(backend: Backend) {
    let Some(app) = spawn_app(backend).await else { return };
    let club = app.create_club("Aces", "+79990300141").await;
    let id = app.create_tournament(&club, 5, Duration::days(1)).await;
    let players = app.sign_in_players(314, 2).await;
    app.exec(&format!(
        "INSERT INTO follows (follower_id, followee_id, created_at) VALUES ({}, {}, '2026-01-01T00:00:00Z')",
        app.uuid_literal(players[1].user_id),
        app.uuid_literal(players[0].user_id)
    ))
    .await;
    register(&app, id, &players[0]).await.assert_ok();
    // Best effort, in the background: wait for it a little.
    let journaled =
        app.eventually_count("SELECT COUNT(*) FROM notifications WHERE kind = 'followee.registered'", 1).await;
    assert_eq!(journaled, 1);
    let follower = app.scalar("SELECT user_id FROM notifications WHERE kind = 'followee.registered'").await;
    assert_eq!(follower, Some(players[1].user_id.to_string()));
    let payload = app
        .scalar("SELECT CAST(payload AS TEXT) FROM notifications WHERE kind = 'followee.registered'")
        .await
        .expect("a payload");
    let payload: Value = serde_json::from_str(&payload).expect("JSON");
    assert_eq!(payload["tournamentId"], id.to_string());
    assert_eq!(payload["userId"], players[0].user_id.to_string());
    assert_eq!(payload["title"], "Турнир выходного дня");
}

/// A tournament id that does not exist is answered before a desk starts for it: each desk
/// would live its idle time, and random ids would start thousands.
async fn registering_or_cancelling_at_an_unknown_tournament_is_404_and_starts_no_desk(backend: Backend) {
    let Some(app) = spawn_app(backend).await else { return };
    let club = app.create_club("Aces", "+79990300131").await;
    let real = app.create_tournament(&club, 5, Duration::days(1)).await;
    let player = app.sign_in_players(313, 1).await.remove(0);
    for _ in 0..20 {
        let unknown = Uuid::new_v4();
        register(&app, unknown, &player).await.assert_error(404, "NOT_FOUND");
        cancel(&app, unknown, &player).await.assert_error(404, "NOT_FOUND");
        // Asked twice, the second from the remembered answer.
        register(&app, unknown, &player).await.assert_error(404, "NOT_FOUND");
    }
    assert_eq!(app.state.desks.open_count(), 0, "no desk started");
    assert_eq!(app.count("SELECT COUNT(*) FROM registrations").await, 0, "nothing written");
    // The count is the desks': the real tournament's starts one.
    register(&app, real, &player).await.assert_ok();
    cancel(&app, real, &player).await.assert_ok();
    assert_eq!(app.state.desks.open_count(), 1);
}
