//! A club's staff: `GET/POST /organizers/{id}/members`, `DELETE …/members/{memberId}`.

use serde_json::json;
use uuid::Uuid;

use crate::helpers::{Backend, on_both_databases, spawn_app};
use crate::staffing::id_of;

on_both_databases!(
    an_owner_adds_a_td_by_phone_and_the_account_is_created,
    adding_someone_who_is_already_a_member_changes_their_role,
    dealers_join_by_invite_not_by_the_member_list,
    members_are_managed_by_the_clubs_owners_only,
    removing_a_member_ends_their_club_rights,
    the_last_owner_can_be_neither_removed_nor_demoted,
    a_member_of_another_club_is_not_found,
    the_last_two_owners_leaving_at_once_leave_one_owner,
    a_dealer_leaving_the_club_leaves_the_line_ups_still_to_be_played,
);

async fn a_dealer_leaving_the_club_leaves_the_line_ups_still_to_be_played(backend: Backend) {
    let Some(app) = spawn_app(backend).await else { return };
    let club = app.create_club("River Club", "+79990000291").await;
    let dealer = app.make_dealer(&club, "+79990000292").await;
    let token = Some(club.owner.access_token.as_str());
    let open = app.create_tournament(&club, 10, chrono::Duration::days(1)).await;
    let played = app.create_tournament(&club, 10, chrono::Duration::days(2)).await;
    for id in [open, played] {
        app.post(&format!("/tournaments/{id}/dealers"), token, json!({"dealerUserId": dealer.user_id}))
            .await
            .assert_ok();
    }
    app.exec(&format!("UPDATE tournaments SET status = 'finished' WHERE id = {}", app.uuid_literal(played))).await;
    let members = app.get(&format!("/organizers/{}/members", club.id), token).await;
    let membership = members.body["items"]
        .as_array()
        .and_then(|items| items.iter().find(|m| m["role"] == "dealer"))
        .map(|m| id_of(&m["id"]))
        .expect("the dealer's membership");
    let removed = app.delete(&format!("/organizers/{}/members/{membership}", club.id), token).await;
    assert_eq!(removed.status, 204, "{removed:?}");

    let open_line_up = app.get(&format!("/tournaments/{open}/dealers"), token).await;
    assert_eq!(open_line_up.assert_ok()["items"], json!([]));
    let history = app.get(&format!("/tournaments/{played}/dealers"), token).await;
    assert_eq!(history.assert_ok()["items"].as_array().map(Vec::len), Some(1), "a finished line-up is history");
    let assignments = app.get("/me/dealer-assignments", Some(&dealer.access_token)).await;
    assert_eq!(assignments.assert_ok()["items"].as_array().map(Vec::len), Some(1));
    let games = app
        .count(&format!(
            "SELECT CAST(games_dealt AS BIGINT) FROM dealer_profiles WHERE user_id = {}",
            app.uuid_literal(dealer.user_id)
        ))
        .await;
    assert_eq!(games, 1);
}

async fn an_owner_adds_a_td_by_phone_and_the_account_is_created(backend: Backend) {
    let Some(app) = spawn_app(backend).await else { return };
    let club = app.create_club("River Club", "+79990000201").await;
    let path = format!("/organizers/{}/members", club.id);
    let token = Some(club.owner.access_token.as_str());
    assert_eq!(app.count("SELECT COUNT(*) FROM users WHERE phone = '+79990000202'").await, 0);

    let added = app.post(&path, token, json!({"phone": "+7 (999) 000-02-02", "role": "td"})).await;
    assert_eq!(added.status, 201, "{added:?}");
    let member = added.body.clone();
    assert_eq!(member["phone"], "+79990000202");
    assert_eq!(member["role"], "td");
    assert!(member["name"].is_null() && member["nickname"].is_null());
    assert!(member["createdAt"].is_string());
    assert_eq!(app.count("SELECT COUNT(*) FROM users WHERE phone = '+79990000202'").await, 1);
    assert_eq!(app.count("SELECT COUNT(*) FROM player_profiles").await, 3, "admin, owner and td each have a profile");

    let list = app.get(&path, token).await;
    let items = list.assert_ok()["items"].as_array().expect("items").clone();
    assert_eq!(items.len(), 2);
    assert_eq!(items[0]["role"], "owner");
    assert_eq!(items[0]["userId"], json!(club.owner.user_id));
    assert_eq!(items[1], member);

    let td = app.sign_in("+79990000202").await;
    assert_eq!(json!(td.user_id), member["userId"]);
    let mine = app.get("/organizers/mine", Some(&td.access_token)).await;
    assert_eq!(mine.assert_ok()["items"][0]["id"], member["id"]);
    assert_eq!(app.count("SELECT COUNT(*) FROM audit_log WHERE action = 'member.add'").await, 1);
}

async fn adding_someone_who_is_already_a_member_changes_their_role(backend: Backend) {
    let Some(app) = spawn_app(backend).await else { return };
    let club = app.create_club("River Club", "+79990000211").await;
    let (_, member_id) = app.add_member(&club, "+79990000212", "td").await;
    let path = format!("/organizers/{}/members", club.id);
    let token = Some(club.owner.access_token.as_str());

    let promoted = app.post(&path, token, json!({"phone": "+79990000212", "role": "owner"})).await;
    assert_eq!(promoted.status, 200, "{promoted:?}");
    assert_eq!(promoted.body["role"], "owner");
    assert_eq!(promoted.body["id"], json!(member_id), "the same membership");

    let again = app.post(&path, token, json!({"phone": "+79990000212", "role": "owner"})).await;
    assert_eq!(again.status, 200, "{again:?}");
    assert_eq!(app.count("SELECT COUNT(*) FROM organizer_members").await, 2);
    assert_eq!(app.count("SELECT COUNT(*) FROM audit_log WHERE action = 'member.role_change'").await, 1);

    // With two owners, the first one may step down to td.
    let stepped_down = app.post(&path, token, json!({"phone": "+79990000211", "role": "td"})).await;
    assert_eq!(stepped_down.status, 200, "{stepped_down:?}");
    assert_eq!(stepped_down.body["role"], "td");
    app.get(&path, token).await.assert_error(403, "FORBIDDEN");
}

async fn dealers_join_by_invite_not_by_the_member_list(backend: Backend) {
    let Some(app) = spawn_app(backend).await else { return };
    let club = app.create_club("River Club", "+79990000221").await;
    let path = format!("/organizers/{}/members", club.id);
    let token = Some(club.owner.access_token.as_str());

    let reply = app.post(&path, token, json!({"phone": "+79990000222", "role": "dealer"})).await;
    reply.assert_error(400, "VALIDATION_ERROR");
    assert_eq!(reply.body["error"]["details"][0]["field"], "role");
    let reply = app.post(&path, token, json!({"phone": "89990000222", "role": "td"})).await;
    reply.assert_error(400, "VALIDATION_ERROR");
    assert_eq!(reply.body["error"]["details"][0]["field"], "phone");
    app.post(&path, token, json!({"phone": "+79990000222"})).await.assert_error(400, "VALIDATION_ERROR");
    assert_eq!(app.count("SELECT COUNT(*) FROM organizer_members").await, 1);
    assert_eq!(app.count("SELECT COUNT(*) FROM users WHERE phone = '+79990000222'").await, 0);
}

async fn members_are_managed_by_the_clubs_owners_only(backend: Backend) {
    let Some(app) = spawn_app(backend).await else { return };
    let club = app.create_club("River Club", "+79990000231").await;
    let other = app.create_club("Hill Club", "+79990000232").await;
    let (td, td_member_id) = app.add_member(&club, "+79990000233", "td").await;
    let dealer = app.make_dealer(&club, "+79990000234").await;
    let admin = app.platform_admin().await;
    let moderator = app.sign_in_as_admin("+79990000235", "moderator").await;
    let list = format!("/organizers/{}/members", club.id);
    let remove = format!("/organizers/{}/members/{td_member_id}", club.id);
    let body = json!({"phone": "+79990000236", "role": "owner"});

    app.get(&list, None).await.assert_error(401, "UNAUTHORIZED");
    app.post(&list, None, body.clone()).await.assert_error(401, "UNAUTHORIZED");
    app.delete(&remove, None).await.assert_error(401, "UNAUTHORIZED");
    // A platform role gives no club rights: the contract lists no permission here.
    for outsider in [&td, &dealer, &other.owner, &admin, &moderator] {
        let token = Some(outsider.access_token.as_str());
        app.get(&list, token).await.assert_error(403, "FORBIDDEN");
        app.post(&list, token, body.clone()).await.assert_error(403, "FORBIDDEN");
        app.delete(&remove, token).await.assert_error(403, "FORBIDDEN");
    }
    assert_eq!(app.count("SELECT COUNT(*) FROM users WHERE phone = '+79990000236'").await, 0);
    assert_eq!(app.count("SELECT COUNT(*) FROM organizer_members").await, 4);

    let unknown = format!("/organizers/{}/members", Uuid::new_v4());
    app.get(&unknown, Some(&club.owner.access_token)).await.assert_error(404, "NOT_FOUND");
}

async fn removing_a_member_ends_their_club_rights(backend: Backend) {
    let Some(app) = spawn_app(backend).await else { return };
    let club = app.create_club("River Club", "+79990000241").await;
    let (co_owner, co_owner_id) = app.add_member(&club, "+79990000242", "owner").await;
    let list = format!("/organizers/{}/members", club.id);
    app.get(&list, Some(&co_owner.access_token)).await.assert_ok();

    let removed = app.delete(&format!("{list}/{co_owner_id}"), Some(&club.owner.access_token)).await;
    assert_eq!(removed.status, 204, "{removed:?}");
    assert!(removed.body.is_null(), "no body");
    app.get(&list, Some(&co_owner.access_token)).await.assert_error(403, "FORBIDDEN");
    let items = app.get(&list, Some(&club.owner.access_token)).await.assert_ok()["items"].clone();
    assert_eq!(items.as_array().map(Vec::len), Some(1));
    app.delete(&format!("{list}/{co_owner_id}"), Some(&club.owner.access_token)).await.assert_error(404, "NOT_FOUND");
    assert_eq!(app.count("SELECT COUNT(*) FROM audit_log WHERE action = 'member.remove'").await, 1);
    assert_eq!(app.count("SELECT COUNT(*) FROM users WHERE phone = '+79990000242'").await, 1, "the account stays");
}

async fn the_last_owner_can_be_neither_removed_nor_demoted(backend: Backend) {
    let Some(app) = spawn_app(backend).await else { return };
    let club = app.create_club("River Club", "+79990000251").await;
    let (_, td_id) = app.add_member(&club, "+79990000252", "td").await;
    let list = format!("/organizers/{}/members", club.id);
    let token = Some(club.owner.access_token.as_str());
    let owner_id = id_of(&app.get(&list, token).await.assert_ok()["items"][0]["id"]);

    app.delete(&format!("{list}/{owner_id}"), token).await.assert_error(409, "INVALID_STATUS");
    app.post(&list, token, json!({"phone": "+79990000251", "role": "td"})).await.assert_error(409, "INVALID_STATUS");
    let removed = app.delete(&format!("{list}/{td_id}"), token).await;
    assert_eq!(removed.status, 204, "{removed:?}");
    let items = app.get(&list, token).await.assert_ok()["items"].clone();
    assert_eq!(
        items,
        json!([{
            "id": owner_id, "userId": club.owner.user_id, "phone": "+79990000251",
            "name": null, "nickname": null, "role": "owner", "createdAt": items[0]["createdAt"],
        }])
    );
}

async fn a_member_of_another_club_is_not_found(backend: Backend) {
    let Some(app) = spawn_app(backend).await else { return };
    let club = app.create_club("River Club", "+79990000261").await;
    let other = app.create_club("Hill Club", "+79990000262").await;
    let (_, other_td_id) = app.add_member(&other, "+79990000263", "td").await;
    let token = Some(club.owner.access_token.as_str());

    let path = format!("/organizers/{}/members/{other_td_id}", club.id);
    app.delete(&path, token).await.assert_error(404, "NOT_FOUND");
    let path = format!("/organizers/{}/members/{}", club.id, Uuid::new_v4());
    app.delete(&path, token).await.assert_error(404, "NOT_FOUND");
    let path = format!("/organizers/{}/members/not-a-uuid", club.id);
    app.delete(&path, token).await.assert_error(400, "VALIDATION_ERROR");
    assert_eq!(app.count("SELECT COUNT(*) FROM organizer_members").await, 3);
}

async fn the_last_two_owners_leaving_at_once_leave_one_owner(backend: Backend) {
    let Some(app) = spawn_app(backend).await else { return };
    for round in 0..3 {
        let club = app.create_club("River Club", &format!("+7999000027{round}")).await;
        let (second, second_id) = app.add_member(&club, &format!("+7999000028{round}"), "owner").await;
        let list = format!("/organizers/{}/members", club.id);
        let first_id = id_of(&app.get(&list, Some(&club.owner.access_token)).await.assert_ok()["items"][0]["id"]);

        // Each owner removes themself: both pass the guard whatever the timing, so the two
        // removals meet at the last-owner check.
        let (remove_first, remove_second) = (format!("{list}/{first_id}"), format!("{list}/{second_id}"));
        let (a, b) = tokio::join!(
            app.delete(&remove_first, Some(&club.owner.access_token)),
            app.delete(&remove_second, Some(&second.access_token)),
        );
        let mut statuses = [a.status.as_u16(), b.status.as_u16()];
        statuses.sort_unstable();
        assert_eq!(statuses, [204, 409], "{a:?} {b:?}");
        for reply in [&a, &b] {
            if reply.status == 409 {
                reply.assert_error(409, "INVALID_STATUS");
            }
        }
        let owners = app
            .count(&format!(
                "SELECT COUNT(*) FROM organizer_members WHERE role = 'owner' AND organizer_id = {}",
                app.uuid_literal(club.id)
            ))
            .await;
        assert_eq!(owners, 1, "round {round}");
    }
}
