//! Seasons: the current quarter made on demand once, the rollover, and their administration.

use chrono::{NaiveDate, Utc};
use futures::future::join_all;
use serde_json::json;
use uuid::Uuid;

use crate::helpers::{Backend, on_both_databases, spawn_app};
use crate::staffing::id_of;

on_both_databases!(
    concurrent_first_calls_make_one_current_season_of_todays_quarter,
    concurrent_rollovers_archive_the_ended_quarter_and_make_one_current,
    seasons_are_listed_newest_first_for_everyone,
    an_admin_adds_a_quarter_once_and_only_from_its_first_day,
    an_admin_archives_a_season_early_and_reopens_it_while_its_quarter_lasts,
);

fn day(text: &str) -> NaiveDate {
    text.parse().expect("a date")
}

async fn concurrent_first_calls_make_one_current_season_of_todays_quarter(backend: Backend) {
    let Some(app) = spawn_app(backend).await else { return };
    let replies = join_all((0..8).map(|_| app.get("/seasons/current", None))).await;
    let ids: Vec<Uuid> = replies.iter().map(|reply| id_of(&reply.assert_ok()["id"])).collect();
    assert!(ids.iter().all(|id| *id == ids[0]), "{ids:?}");
    assert_eq!(app.count("SELECT COUNT(*) FROM seasons").await, 1);
    let (starts_on, ends_on) = floor::domain::seasons::quarter_of(Utc::now().date_naive());
    let season = &replies[0].body;
    assert_eq!(season["startsOn"], starts_on.to_string());
    assert_eq!(season["endsOn"], ends_on.to_string());
    assert_eq!(season["status"], "current");
}

async fn concurrent_rollovers_archive_the_ended_quarter_and_make_one_current(backend: Backend) {
    let Some(app) = spawn_app(backend).await else { return };
    // Quarters far ahead, so today's real season plays no part.
    let summer = floor::domain::seasons::ensure_season(app.db(), day("2031-08-15")).await.expect("a season");
    let rollovers = (0..8).map(|_| {
        let db = app.db().clone();
        tokio::spawn(async move { floor::domain::seasons::roll_over(&db, day("2031-10-01")).await })
    });
    let seasons: Vec<Uuid> = join_all(rollovers)
        .await
        .into_iter()
        .map(|joined| joined.expect("the task ran").expect("the rollover ran").id)
        .collect();
    assert!(seasons.iter().all(|id| *id == seasons[0]), "{seasons:?}");
    assert_eq!(app.count("SELECT COUNT(*) FROM seasons WHERE starts_on = '2031-10-01'").await, 1);
    assert_eq!(
        app.count("SELECT COUNT(*) FROM seasons WHERE starts_on = '2031-10-01' AND status = 'current'").await,
        1
    );
    assert_eq!(
        app.count("SELECT COUNT(*) FROM seasons WHERE starts_on = '2031-07-01' AND status = 'archived'").await,
        1
    );
    assert_eq!(app.count("SELECT COUNT(*) FROM seasons WHERE status = 'current'").await, 1, "exactly one current");
    let listed = app.get("/seasons", None).await;
    let archived =
        listed.assert_ok()["items"].as_array().expect("items").iter().find(|s| id_of(&s["id"]) == summer.id).cloned();
    assert_eq!(archived.expect("the summer season")["status"], "archived");
}

async fn seasons_are_listed_newest_first_for_everyone(backend: Backend) {
    let Some(app) = spawn_app(backend).await else { return };
    for date in ["2024-05-05", "2031-02-02", "2025-12-31"] {
        floor::domain::seasons::ensure_season(app.db(), day(date)).await.expect("a season");
    }
    let listed = app.get("/seasons", None).await.assert_ok()["items"].clone();
    let starts: Vec<&str> = listed.as_array().expect("items").iter().filter_map(|s| s["startsOn"].as_str()).collect();
    let today = floor::domain::seasons::quarter_of(Utc::now().date_naive()).0.to_string();
    let mut expected = vec!["2031-01-01", today.as_str(), "2025-10-01", "2024-04-01"];
    expected.sort_unstable_by(|a, b| b.cmp(a));
    assert_eq!(starts, expected, "today's quarter is listed too");
    let admin = app.platform_admin().await;
    let admin_list = app.get("/admin/seasons", Some(&admin.access_token)).await;
    assert_eq!(admin_list.assert_ok()["items"], listed);
    let player = app.sign_in("+79995900001").await;
    app.get("/admin/seasons", Some(&player.access_token)).await.assert_error(403, "FORBIDDEN");
}

async fn an_admin_adds_a_quarter_once_and_only_from_its_first_day(backend: Backend) {
    let Some(app) = spawn_app(backend).await else { return };
    let admin = app.platform_admin().await;
    let token = Some(admin.access_token.as_str());
    let year = Utc::now().date_naive().format("%Y").to_string().parse::<i32>().expect("a year");
    let ahead = format!("{}-04-01", year + 1);
    let created = app.post("/admin/seasons", token, json!({"startsOn": ahead})).await;
    assert_eq!(created.status, 201, "{created:?}");
    assert_eq!(created.body["startsOn"], ahead);
    assert_eq!(created.body["endsOn"], format!("{}-06-30", year + 1));
    assert_eq!(created.body["status"], "current", "a quarter still to come is current");
    app.post("/admin/seasons", token, json!({"startsOn": ahead})).await.assert_error(409, "INVALID_STATUS");

    let past = format!("{}-07-01", year - 2);
    let created = app.post("/admin/seasons", token, json!({"startsOn": past})).await;
    assert_eq!(created.status, 201, "{created:?}");
    assert_eq!(created.body["status"], "archived", "a quarter that has ended is made archived");

    for bad in [
        json!({"startsOn": format!("{}-05-01", year + 1)}),
        json!({"startsOn": "2300-01-01"}),
        json!({"startsOn": "soon"}),
        json!({}),
    ] {
        let reply = app.post("/admin/seasons", token, bad.clone()).await;
        reply.assert_error(400, "VALIDATION_ERROR");
        assert_eq!(reply.body["error"]["details"][0]["field"], "startsOn", "{bad}");
    }
    let marketing = app.sign_in_as_admin("+79995910002", "marketing").await;
    let refused = app
        .post("/admin/seasons", Some(&marketing.access_token), json!({"startsOn": format!("{}-10-01", year + 1)}))
        .await;
    refused.assert_error(403, "FORBIDDEN");
    app.post("/admin/seasons", None, json!({"startsOn": format!("{}-10-01", year + 1)}))
        .await
        .assert_error(401, "UNAUTHORIZED");
    assert_eq!(app.count("SELECT COUNT(*) FROM seasons").await, 2, "refusals make nothing");
    assert_eq!(app.count("SELECT COUNT(*) FROM audit_log WHERE action = 'season.create'").await, 2);
}

async fn an_admin_archives_a_season_early_and_reopens_it_while_its_quarter_lasts(backend: Backend) {
    let Some(app) = spawn_app(backend).await else { return };
    let admin = app.platform_admin().await;
    let token = Some(admin.access_token.as_str());
    let current = id_of(&app.get("/seasons/current", None).await.assert_ok()["id"]);
    let path = format!("/admin/seasons/{current}");

    let archived = app.patch(&path, token, json!({"status": "archived"})).await;
    assert_eq!(archived.assert_ok()["status"], "archived");
    let shown = app.get("/seasons/current", None).await.assert_ok().clone();
    assert_eq!((id_of(&shown["id"]), shown["status"].clone()), (current, json!("archived")), "still today's quarter");
    let again = app.patch(&path, token, json!({"status": "archived"})).await;
    assert_eq!(again.assert_ok()["status"], "archived");
    assert_eq!(
        app.count("SELECT COUNT(*) FROM audit_log WHERE action = 'season.status_change'").await,
        1,
        "no change, no record"
    );
    let reopened = app.patch(&path, token, json!({"status": "current"})).await;
    assert_eq!(reopened.assert_ok()["status"], "current");

    let ended = floor::domain::seasons::ensure_season(app.db(), day("2024-02-10")).await.expect("a season");
    let ended_path = format!("/admin/seasons/{}", ended.id);
    app.patch(&ended_path, token, json!({"status": "archived"})).await.assert_ok();
    app.patch(&ended_path, token, json!({"status": "current"})).await.assert_error(409, "INVALID_STATUS");
    app.patch(&ended_path, token, json!({"status": "open"})).await.assert_error(400, "VALIDATION_ERROR");
    app.patch(&format!("/admin/seasons/{}", Uuid::now_v7()), token, json!({"status": "archived"}))
        .await
        .assert_error(404, "NOT_FOUND");
    app.patch("/admin/seasons/not-a-uuid", token, json!({"status": "archived"}))
        .await
        .assert_error(400, "VALIDATION_ERROR");
    let marketing = app.sign_in_as_admin("+79995920002", "marketing").await;
    app.patch(&path, Some(&marketing.access_token), json!({"status": "archived"})).await.assert_error(403, "FORBIDDEN");
    assert_eq!(app.count("SELECT COUNT(*) FROM audit_log WHERE action = 'season.status_change'").await, 3);
    let status = app.scalar(&format!("SELECT status FROM seasons WHERE id = {}", app.uuid_literal(ended.id))).await;
    assert_eq!(status.as_deref(), Some("archived"), "the refused reopening changed nothing");
}
