//! `GET /admin/metrics`: the dashboard's figures on a data set with chosen times, around a
//! Monday 00:00 UTC week boundary.

use chrono::{DateTime, Datelike, Duration, NaiveTime, Utc};
use serde_json::json;
use uuid::Uuid;

use crate::helpers::{Backend, Session, TestApp, on_both_databases, spawn_app};

on_both_databases!(the_dashboard_counts_a_known_data_set_by_the_definitions, metrics_need_metrics_view);

/// Monday 00:00 UTC of the current week, computed apart from the code under test.
fn this_monday() -> DateTime<Utc> {
    let today = Utc::now().date_naive();
    let monday = today - Duration::days(i64::from(today.weekday().num_days_from_monday()));
    monday.and_time(NaiveTime::MIN).and_utc()
}

/// A time as a SQL literal both databases read as a timestamp (and SQLite compares as the
/// text sqlx writes).
fn at(time: DateTime<Utc>) -> String {
    format!("'{}'", time.to_rfc3339())
}

async fn backdate_user(app: &TestApp, user: &Session, created_at: DateTime<Utc>) {
    app.exec(&format!(
        "UPDATE users SET created_at = {} WHERE id = {}",
        at(created_at),
        app.uuid_literal(user.user_id)
    ))
    .await;
}

/// Marks the tournament finished at `finished_at` and gives each of `players` (already
/// registered, with these registrations) a result, in order of place.
async fn finish(app: &TestApp, tournament: Uuid, finished_at: DateTime<Utc>, players: &[(&Session, Uuid)]) {
    app.exec(&format!(
        "UPDATE tournaments SET status = 'finished', finished_at = {} WHERE id = {}",
        at(finished_at),
        app.uuid_literal(tournament)
    ))
    .await;
    for (place, (player, registration)) in players.iter().enumerate() {
        app.exec(&format!(
            "INSERT INTO results (id, tournament_id, registration_id, user_id, place, season_points, xp, created_at, skill_alpha) \
             VALUES ({}, {}, {}, {}, {}, 10, 10, {}, 0.1)",
            app.uuid_literal(Uuid::now_v7()),
            app.uuid_literal(tournament),
            app.uuid_literal(*registration),
            app.uuid_literal(player.user_id),
            place + 1,
            at(finished_at),
        ))
        .await;
    }
}

async fn register(app: &TestApp, tournament: Uuid, player: &Session) -> Uuid {
    let reply = app.post(&format!("/tournaments/{tournament}/register"), Some(&player.access_token), json!({})).await;
    reply.assert_ok()["id"].as_str().and_then(|id| id.parse().ok()).expect("a registration id")
}

async fn the_dashboard_counts_a_known_data_set_by_the_definitions(backend: Backend) {
    let Some(app) = spawn_app(backend).await else { return };
    let monday = this_monday();
    // Created now: the platform admin and the club owner (by create_club), the viewer and
    // three players: six new accounts in the current week.
    let club = app.create_club("Aces", "+79995900001").await;
    let viewer = app.sign_in_as_admin("+79995900002", "support").await;
    let players = app.sign_in_players(500, 3).await;
    let (anna, boris, clara) = (&players[0], &players[1], &players[2]);
    // Backdated accounts: at the boundary, one second before it, 35 days before this
    // Monday (week 3 of 8, outside the 30 days) and 100 days ago (nowhere).
    let old = app.sign_in_players(501, 4).await;
    backdate_user(&app, &old[0], monday).await;
    backdate_user(&app, &old[1], monday - Duration::seconds(1)).await;
    backdate_user(&app, &old[2], monday - Duration::days(35) + Duration::hours(12)).await;
    backdate_user(&app, &old[3], Utc::now() - Duration::days(100)).await;

    // Finished exactly at the boundary: Anna and Boris.
    let on_monday = app.create_tournament(&club, 10, Duration::days(1)).await;
    let (a1, b1) = (register(&app, on_monday, anna).await, register(&app, on_monday, boris).await);
    finish(&app, on_monday, monday, &[(anna, a1), (boris, b1)]).await;
    // One second earlier, last week: Anna again and Clara.
    let last_week = app.create_tournament(&club, 10, Duration::days(1)).await;
    let (a2, c2) = (register(&app, last_week, anna).await, register(&app, last_week, clara).await);
    finish(&app, last_week, monday - Duration::seconds(1), &[(anna, a2), (clara, c2)]).await;
    // Week 3 of 8, outside the 30 days: Boris.
    let older = app.create_tournament(&club, 10, Duration::days(1)).await;
    let b3 = register(&app, older, boris).await;
    finish(&app, older, monday - Duration::days(35) + Duration::hours(12), &[(boris, b3)]).await;
    // 100 days ago: Clara; counted nowhere.
    let ancient = app.create_tournament(&club, 10, Duration::days(1)).await;
    let c4 = register(&app, ancient, clara).await;
    finish(&app, ancient, Utc::now() - Duration::days(100), &[(clara, c4)]).await;
    // Registered but never finished: no activity.
    let open = app.create_tournament(&club, 10, Duration::days(1)).await;
    register(&app, open, anna).await;

    let reply = app.get("/admin/metrics", Some(&viewer.access_token)).await;
    let body = reply.assert_ok();
    assert_eq!(body["newPlayers30d"], 8, "six now, one at the boundary, one a second before: {body}");
    assert_eq!(body["activePlayers30d"], 3, "Anna, Boris and Clara played in the 30 days");
    let retention = body["retention30d"].as_f64().expect("a number");
    assert!((retention - 1.0 / 3.0).abs() < 1e-9, "only Anna played twice: {retention}");
    assert_eq!(body["finishedTournaments30d"], 2);

    let weeks = body["weeks"].as_array().expect("weeks");
    assert_eq!(weeks.len(), 8);
    for (index, week) in weeks.iter().enumerate() {
        let start = monday - Duration::weeks(7 - index as i64);
        assert_eq!(week["weekStart"], start.format("%Y-%m-%d").to_string(), "oldest first, Mondays");
    }
    let figures = |index: usize| {
        let week = &weeks[index];
        (week["newPlayers"].as_i64(), week["activePlayers"].as_i64(), week["finishedTournaments"].as_i64())
    };
    assert_eq!(figures(7), (Some(7), Some(2), Some(1)), "this week: six new plus the boundary, Anna and Boris");
    assert_eq!(figures(6), (Some(1), Some(2), Some(1)), "last week: one second before Monday, Anna and Clara");
    assert_eq!(figures(2), (Some(1), Some(1), Some(1)), "35 days before Monday: Boris");
    for index in [0, 1, 3, 4, 5] {
        assert_eq!(figures(index), (Some(0), Some(0), Some(0)), "week {index} is empty");
    }
}

async fn metrics_need_metrics_view(backend: Backend) {
    let Some(app) = spawn_app(backend).await else { return };
    let player = app.sign_in("+79995010001").await;
    app.get("/admin/metrics", Some(&player.access_token)).await.assert_error(403, "FORBIDDEN");
    app.get("/admin/metrics", None).await.assert_error(401, "UNAUTHORIZED");
    for (n, role) in ["support", "marketing", "moderator"].into_iter().enumerate() {
        let admin = app.sign_in_as_admin(&format!("+7999502000{n}"), role).await;
        app.get("/admin/metrics", Some(&admin.access_token)).await.assert_ok();
    }
}
