//! Dealers of a tournament: `GET/POST /tournaments/{id}/dealers`,
//! `PATCH/DELETE /tournaments/{id}/dealers/{dealerUserId}`, and the dealer's own view,
//! `GET /me/dealer-assignments`.

use chrono::Duration;
use serde_json::json;
use uuid::Uuid;

use crate::helpers::{Backend, on_both_databases, spawn_app};

on_both_databases!(
    an_owner_assigns_a_dealer_who_then_sees_the_assignment,
    an_owner_moves_a_dealer_to_a_table_and_withdraws_them,
    only_a_dealer_of_the_tournaments_club_can_be_assigned,
    a_dealer_is_assigned_to_a_tournament_once,
    the_line_up_of_a_finished_or_cancelled_tournament_is_fixed,
    the_owner_assigns_and_the_staff_reads,
    assignment_fields_are_validated,
    two_simultaneous_withdrawals_count_once,
);

async fn two_simultaneous_withdrawals_count_once(backend: Backend) {
    let Some(app) = spawn_app(backend).await else { return };
    let club = app.create_club("River Club", "+79990000591").await;
    let dealer = app.make_dealer(&club, "+79990000592").await;
    let id = app.create_tournament(&club, 20, Duration::days(1)).await;
    let token = Some(club.owner.access_token.as_str());
    app.post(&format!("/tournaments/{id}/dealers"), token, json!({"dealerUserId": dealer.user_id})).await.assert_ok();
    let path = format!("/tournaments/{id}/dealers/{}", dealer.user_id);
    let replies = futures::future::join_all((0..4).map(|_| app.delete(&path, token))).await;
    let mut statuses: Vec<u16> = replies.iter().map(|r| r.status.as_u16()).collect();
    statuses.sort_unstable();
    assert_eq!(statuses, [204, 404, 404, 404], "{replies:?}");
    let catalogue = app.get(&format!("/dealers/{}", dealer.user_id), None).await;
    assert_eq!(catalogue.assert_ok()["gamesDealt"], 0);
}

async fn an_owner_assigns_a_dealer_who_then_sees_the_assignment(backend: Backend) {
    let Some(app) = spawn_app(backend).await else { return };
    let club = app.create_club("River Club", "+79990000501").await;
    let dealer = app.make_dealer(&club, "+79990000502").await;
    app.patch("/me", Some(&dealer.access_token), json!({"name": "Anna"})).await.assert_ok();
    let later = app.create_tournament(&club, 20, Duration::days(3)).await;
    let sooner = app.create_tournament(&club, 20, Duration::days(1)).await;
    let token = Some(club.owner.access_token.as_str());

    let assigned = app
        .post(&format!("/tournaments/{later}/dealers"), token, json!({"dealerUserId": dealer.user_id, "tableNo": 2}))
        .await;
    assert_eq!(assigned.status, 201, "{assigned:?}");
    assert_eq!(assigned.body["tournamentId"], json!(later));
    assert_eq!(assigned.body["dealerUserId"], json!(dealer.user_id));
    assert_eq!(assigned.body["name"], "Anna");
    assert_eq!(assigned.body["tableNo"], 2);
    let second =
        app.post(&format!("/tournaments/{sooner}/dealers"), token, json!({"dealerUserId": dealer.user_id})).await;
    assert_eq!(second.status, 201, "{second:?}");
    assert!(second.body["tableNo"].is_null());

    let list = app.get(&format!("/tournaments/{later}/dealers"), token).await;
    assert_eq!(list.assert_ok()["items"], json!([assigned.body]));

    let mine = app.get("/me/dealer-assignments", Some(&dealer.access_token)).await;
    let items = mine.assert_ok()["items"].as_array().expect("items").clone();
    assert_eq!(items.len(), 2);
    assert_eq!(items[0]["tournament"]["id"], json!(sooner), "by start");
    assert_eq!(items[0]["tournament"]["translations"]["en"]["title"], "Weekend tournament");
    assert_eq!(items[0]["tournament"]["status"], "registration");
    assert!(items[0]["tableNo"].is_null());
    assert_eq!(items[1]["tournament"]["id"], json!(later));
    assert!(items[1]["tournament"]["startsAt"].is_string());
    assert_eq!(items[1]["tableNo"], 2);

    let catalogue = app.get(&format!("/dealers/{}", dealer.user_id), None).await;
    assert_eq!(catalogue.assert_ok()["gamesDealt"], 2);
    assert_eq!(app.count("SELECT COUNT(*) FROM audit_log WHERE action = 'tournament.dealer_assign'").await, 2);
    let owner_view = app.get("/me/dealer-assignments", token).await;
    assert_eq!(owner_view.assert_ok(), &json!({"items": []}), "only the caller's own");
}

async fn an_owner_moves_a_dealer_to_a_table_and_withdraws_them(backend: Backend) {
    let Some(app) = spawn_app(backend).await else { return };
    let club = app.create_club("River Club", "+79990000511").await;
    let dealer = app.make_dealer(&club, "+79990000512").await;
    let tournament = app.create_tournament(&club, 20, Duration::days(2)).await;
    let token = Some(club.owner.access_token.as_str());
    let one = format!("/tournaments/{tournament}/dealers/{}", dealer.user_id);
    app.post(&format!("/tournaments/{tournament}/dealers"), token, json!({"dealerUserId": dealer.user_id}))
        .await
        .assert_ok();

    let moved = app.patch(&one, token, json!({"tableNo": 3})).await;
    assert_eq!(moved.assert_ok()["tableNo"], 3);
    let untouched = app.patch(&one, token, json!({})).await;
    assert_eq!(untouched.assert_ok()["tableNo"], 3, "absent leaves it");
    let cleared = app.patch(&one, token, json!({"tableNo": null})).await;
    assert!(cleared.assert_ok()["tableNo"].is_null(), "null clears it");

    let withdrawn = app.delete(&one, token).await;
    assert_eq!(withdrawn.status, 204, "{withdrawn:?}");
    assert!(withdrawn.body.is_null());
    app.delete(&one, token).await.assert_error(404, "NOT_FOUND");
    app.patch(&one, token, json!({"tableNo": 1})).await.assert_error(404, "NOT_FOUND");
    let list = app.get(&format!("/tournaments/{tournament}/dealers"), token).await;
    assert_eq!(list.assert_ok(), &json!({"items": []}));
    let mine = app.get("/me/dealer-assignments", Some(&dealer.access_token)).await;
    assert_eq!(mine.assert_ok(), &json!({"items": []}));
    let catalogue = app.get(&format!("/dealers/{}", dealer.user_id), None).await;
    assert_eq!(catalogue.assert_ok()["gamesDealt"], 0, "a withdrawn assignment is not a game dealt");
    assert_eq!(app.count("SELECT COUNT(*) FROM audit_log WHERE action = 'tournament.dealer_unassign'").await, 1);
}

async fn only_a_dealer_of_the_tournaments_club_can_be_assigned(backend: Backend) {
    let Some(app) = spawn_app(backend).await else { return };
    let club = app.create_club("River Club", "+79990000521").await;
    let other = app.create_club("Hill Club", "+79990000522").await;
    let foreign_dealer = app.make_dealer(&other, "+79990000523").await;
    let (td, _) = app.add_member(&club, "+79990000524", "td").await;
    let player = app.sign_in("+79990000525").await;
    let tournament = app.create_tournament(&club, 20, Duration::days(2)).await;
    let path = format!("/tournaments/{tournament}/dealers");
    let token = Some(club.owner.access_token.as_str());

    for user_id in [foreign_dealer.user_id, td.user_id, player.user_id, club.owner.user_id, Uuid::new_v4()] {
        app.post(&path, token, json!({"dealerUserId": user_id})).await.assert_error(404, "NOT_FOUND");
    }
    assert_eq!(app.count("SELECT COUNT(*) FROM tournament_dealers").await, 0);
}

async fn a_dealer_is_assigned_to_a_tournament_once(backend: Backend) {
    let Some(app) = spawn_app(backend).await else { return };
    let club = app.create_club("River Club", "+79990000531").await;
    let dealer = app.make_dealer(&club, "+79990000532").await;
    let tournament = app.create_tournament(&club, 20, Duration::days(2)).await;
    let path = format!("/tournaments/{tournament}/dealers");
    let token = Some(club.owner.access_token.as_str());
    let body = json!({"dealerUserId": dealer.user_id, "tableNo": 1});

    let (a, b) = tokio::join!(app.post(&path, token, body.clone()), app.post(&path, token, body.clone()),);
    let mut statuses = [a.status.as_u16(), b.status.as_u16()];
    statuses.sort_unstable();
    assert_eq!(statuses, [201, 409], "{a:?} {b:?}");
    let loser = if a.status == 409 { &a } else { &b };
    loser.assert_error(409, "INVALID_STATUS");
    app.post(&path, token, body.clone()).await.assert_error(409, "INVALID_STATUS");
    assert_eq!(app.count("SELECT COUNT(*) FROM tournament_dealers").await, 1);
    let catalogue = app.get(&format!("/dealers/{}", dealer.user_id), None).await;
    assert_eq!(catalogue.assert_ok()["gamesDealt"], 1, "a refused assignment counts nothing");
}

async fn the_line_up_of_a_finished_or_cancelled_tournament_is_fixed(backend: Backend) {
    let Some(app) = spawn_app(backend).await else { return };
    let club = app.create_club("River Club", "+79990000541").await;
    let dealer = app.make_dealer(&club, "+79990000542").await;
    let newcomer = app.make_dealer(&club, "+79990000543").await;
    let token = Some(club.owner.access_token.as_str());
    for status in ["finished", "cancelled"] {
        let tournament = app.create_tournament(&club, 20, Duration::days(2)).await;
        let path = format!("/tournaments/{tournament}/dealers");
        app.post(&path, token, json!({"dealerUserId": dealer.user_id})).await.assert_ok();
        app.exec(&format!("UPDATE tournaments SET status = '{status}' WHERE id = {}", app.uuid_literal(tournament)))
            .await;

        app.post(&path, token, json!({"dealerUserId": newcomer.user_id})).await.assert_error(409, "INVALID_STATUS");
        let one = format!("{path}/{}", dealer.user_id);
        app.patch(&one, token, json!({"tableNo": 1})).await.assert_error(409, "INVALID_STATUS");
        app.delete(&one, token).await.assert_error(409, "INVALID_STATUS");
        let list = app.get(&path, token).await;
        assert_eq!(list.assert_ok()["items"].as_array().map(Vec::len), Some(1), "{status}: still readable");
    }
}

async fn the_owner_assigns_and_the_staff_reads(backend: Backend) {
    let Some(app) = spawn_app(backend).await else { return };
    let club = app.create_club("River Club", "+79990000551").await;
    let other = app.create_club("Hill Club", "+79990000552").await;
    let dealer = app.make_dealer(&club, "+79990000553").await;
    let (td, _) = app.add_member(&club, "+79990000554", "td").await;
    let admin = app.platform_admin().await;
    let tournament = app.create_tournament(&club, 20, Duration::days(2)).await;
    let path = format!("/tournaments/{tournament}/dealers");
    let one = format!("{path}/{}", dealer.user_id);
    let body = json!({"dealerUserId": dealer.user_id});
    app.post(&path, Some(&club.owner.access_token), body.clone()).await.assert_ok();

    let seen = app.get(&path, Some(&td.access_token)).await;
    assert_eq!(seen.assert_ok()["items"].as_array().map(Vec::len), Some(1), "a td reads the line-up");

    app.get(&path, None).await.assert_error(401, "UNAUTHORIZED");
    app.post(&path, None, body.clone()).await.assert_error(401, "UNAUTHORIZED");
    app.patch(&one, None, json!({"tableNo": 1})).await.assert_error(401, "UNAUTHORIZED");
    app.delete(&one, None).await.assert_error(401, "UNAUTHORIZED");
    for outsider in [&td, &dealer, &other.owner, &admin] {
        let token = Some(outsider.access_token.as_str());
        app.post(&path, token, body.clone()).await.assert_error(403, "FORBIDDEN");
        app.patch(&one, token, json!({"tableNo": 1})).await.assert_error(403, "FORBIDDEN");
        app.delete(&one, token).await.assert_error(403, "FORBIDDEN");
    }
    for outsider in [&dealer, &other.owner, &admin] {
        app.get(&path, Some(&outsider.access_token)).await.assert_error(403, "FORBIDDEN");
    }
    let unknown = format!("/tournaments/{}/dealers", Uuid::new_v4());
    app.get(&unknown, Some(&club.owner.access_token)).await.assert_error(404, "NOT_FOUND");
    app.post(&unknown, Some(&club.owner.access_token), body).await.assert_error(404, "NOT_FOUND");
    let list = app.get(&path, Some(&club.owner.access_token)).await;
    assert!(list.assert_ok()["items"][0]["tableNo"].is_null(), "nothing changed");
}

async fn assignment_fields_are_validated(backend: Backend) {
    let Some(app) = spawn_app(backend).await else { return };
    let club = app.create_club("River Club", "+79990000561").await;
    let dealer = app.make_dealer(&club, "+79990000562").await;
    let tournament = app.create_tournament(&club, 20, Duration::days(2)).await;
    let path = format!("/tournaments/{tournament}/dealers");
    let token = Some(club.owner.access_token.as_str());

    for table_no in [0, 101] {
        let reply = app.post(&path, token, json!({"dealerUserId": dealer.user_id, "tableNo": table_no})).await;
        reply.assert_error(400, "VALIDATION_ERROR");
        assert_eq!(reply.body["error"]["details"][0]["field"], "tableNo");
    }
    app.post(&path, token, json!({"dealerUserId": "nobody"})).await.assert_error(400, "VALIDATION_ERROR");
    app.post(&path, token, json!({})).await.assert_error(400, "VALIDATION_ERROR");
    app.post(&path, token, json!({"dealerUserId": dealer.user_id, "tableNo": 100})).await.assert_ok();
    let one = format!("{path}/{}", dealer.user_id);
    app.patch(&one, token, json!({"tableNo": 0})).await.assert_error(400, "VALIDATION_ERROR");
    app.patch(&format!("{path}/not-a-uuid"), token, json!({"tableNo": 1})).await.assert_error(400, "VALIDATION_ERROR");
}
