//! Platform admins: `admins.manage` guards every path; roles are granted, changed, removed.

use reqwest::Method;
use serde_json::json;
use uuid::Uuid;

use crate::helpers::{Backend, PLATFORM_ADMIN_PHONE, on_both_databases, spawn_app};

on_both_databases!(
    every_admins_path_refuses_each_role_without_admins_manage,
    a_super_admin_grants_changes_and_removes_roles_with_audit_records,
    the_last_super_admin_cannot_lose_the_role,
);

async fn every_admins_path_refuses_each_role_without_admins_manage(backend: Backend) {
    let Some(app) = spawn_app(backend).await else { return };
    let target = Uuid::new_v4();
    let role_path = format!("/admin/admins/{target}/role");
    let calls = [
        (Method::GET, "/admin/admins".to_owned(), None),
        (Method::POST, "/admin/admins".to_owned(), Some(json!({"phone": "+79995550000", "role": "support"}))),
        (Method::PUT, role_path, Some(json!({"role": "support"}))),
    ];
    let mut sessions = Vec::new();
    for (i, role) in ["moderator", "support", "marketing"].into_iter().enumerate() {
        sessions.push(app.sign_in_as_admin(&format!("+7999000000{i}"), role).await);
    }
    sessions.push(app.sign_in("+79990009999").await);
    for (method, path, body) in &calls {
        app.call(method.clone(), path, None, body.clone()).await.assert_error(401, "UNAUTHORIZED");
        for session in &sessions {
            let reply = app.call(method.clone(), path, Some(&session.access_token), body.clone()).await;
            reply.assert_error(403, "FORBIDDEN");
        }
    }
    assert_eq!(app.count("SELECT COUNT(*) FROM users WHERE phone = '+79995550000'").await, 0);
}

async fn a_super_admin_grants_changes_and_removes_roles_with_audit_records(backend: Backend) {
    let Some(app) = spawn_app(backend).await else { return };
    let root = app.sign_in(PLATFORM_ADMIN_PHONE).await;
    let token = Some(root.access_token.as_str());
    let created = app
        .post("/admin/admins", token, json!({"phone": "+7 999 555-00-00", "name": "Mila", "role": "marketing"}))
        .await;
    assert_eq!(created.status, 201, "{created:?}");
    assert_eq!(created.body["phone"], "+79995550000");
    assert_eq!(created.body["adminRole"], "marketing");
    assert_eq!(created.body["name"], "Mila");
    let user_id = created.body["userId"].as_str().expect("id").to_owned();

    let list = app.get("/admin/admins", token).await;
    let roles: Vec<&str> =
        list.assert_ok()["items"].as_array().expect("items").iter().filter_map(|a| a["adminRole"].as_str()).collect();
    assert_eq!(roles, ["super_admin", "marketing"]);

    let path = format!("/admin/admins/{user_id}/role");
    let changed = app.call(Method::PUT, &path, token, Some(json!({"role": "moderator"}))).await;
    assert_eq!(changed.assert_ok()["adminRole"], "moderator");
    // A role change takes effect at once, on a token issued before it.
    let mila = app.sign_in("+79995550000").await;
    app.get("/admin/admins", Some(&mila.access_token)).await.assert_error(403, "FORBIDDEN");
    let promoted = app.call(Method::PUT, &path, token, Some(json!({"role": "super_admin"}))).await;
    promoted.assert_ok();
    app.get("/admin/admins", Some(&mila.access_token)).await.assert_ok();
    let removed = app.call(Method::PUT, &path, token, Some(json!({"role": null}))).await;
    assert_eq!(removed.assert_ok()["adminRole"], serde_json::Value::Null);
    let list = app.get("/admin/admins", token).await;
    assert_eq!(list.assert_ok()["items"].as_array().map(Vec::len), Some(1));

    let audits = app.count("SELECT COUNT(*) FROM audit_log WHERE action IN ('admin.grant', 'admin.role_change')").await;
    assert_eq!(audits, 4);
    let unknown = app
        .call(Method::PUT, &format!("/admin/admins/{}/role", Uuid::new_v4()), token, Some(json!({"role": "support"})))
        .await;
    unknown.assert_error(404, "NOT_FOUND");
    let bad_role = app.post("/admin/admins", token, json!({"phone": "+79995550001", "role": "emperor"})).await;
    bad_role.assert_error(400, "VALIDATION_ERROR");
}

async fn the_last_super_admin_cannot_lose_the_role(backend: Backend) {
    let Some(app) = spawn_app(backend).await else { return };
    let root = app.sign_in(PLATFORM_ADMIN_PHONE).await;
    let token = Some(root.access_token.as_str());
    let path = format!("/admin/admins/{}/role", root.user_id);
    app.call(Method::PUT, &path, token, Some(json!({"role": "support"}))).await.assert_error(409, "INVALID_STATUS");
    let second = app.post("/admin/admins", token, json!({"phone": "+79995550000", "role": "super_admin"})).await;
    assert_eq!(second.status, 201);
    let demoted = app.call(Method::PUT, &path, token, Some(json!({"role": "support"}))).await;
    assert_eq!(demoted.assert_ok()["adminRole"], "support");
}
