//! The spec's platform permission table, path by path: every endpoint a platform permission
//! opens refuses each role the table excludes with `403 FORBIDDEN`, lets in each role it
//! includes, and refuses a caller without a token with `401 UNAUTHORIZED`.

use reqwest::Method;
use serde_json::json;
use uuid::Uuid;

use crate::helpers::{Backend, Session, TestApp, on_both_databases, spawn_app};

const ROLES: [&str; 4] = ["moderator", "support", "marketing", "super_admin"];

/// The spec's table, written out again here as the test's own oracle.
fn table_grants(role: &str, permission: &str) -> bool {
    match role {
        "super_admin" => true,
        "moderator" => matches!(permission, "moderation" | "push.send" | "metrics.view"),
        "support" => permission == "metrics.view",
        "marketing" => matches!(permission, "push.send" | "metrics.view" | "content.manage"),
        _ => false,
    }
}

/// Every path a platform permission opens, with the permissions that open it (any one
/// suffices). `{club}` and `{tournament}` stand for a real club and tournament; `{id}` for an
/// id nobody has, so an admitted caller gets at most a 404 or a 400 and changes nothing.
const GUARDED: &[(&str, &str, &[&str])] = &[
    ("GET", "/admin/admins", &["admins.manage"]),
    ("POST", "/admin/admins", &["admins.manage"]),
    ("PUT", "/admin/admins/{id}/role", &["admins.manage"]),
    ("GET", "/organizers/{club}", &["organizers.manage"]),
    ("PATCH", "/organizers/{club}", &["organizers.manage"]),
    ("PATCH", "/tournaments/{tournament}", &["tournaments.manage"]),
    ("GET", "/admin/rating-config", &["rating_config.manage"]),
    ("PUT", "/admin/rating-config", &["rating_config.manage"]),
    ("GET", "/admin/users", &["moderation"]),
    ("PATCH", "/admin/users/{id}", &["moderation"]),
    ("POST", "/admin/users/{id}/merge", &["moderation"]),
    ("GET", "/admin/metrics", &["metrics.view"]),
    ("POST", "/admin/push", &["push.send"]),
    ("GET", "/admin/organizers", &["organizers.manage"]),
    ("POST", "/admin/organizers", &["organizers.manage"]),
    ("POST", "/admin/organizers/{club}/tournaments", &["tournaments.manage"]),
    ("POST", "/admin/tournaments/{tournament}/recount", &["tournaments.manage"]),
    ("GET", "/admin/tournaments", &["content.manage"]),
    ("PATCH", "/admin/tournaments/{id}", &["content.manage"]),
    ("GET", "/admin/seasons", &["seasons.manage"]),
    ("POST", "/admin/seasons", &["seasons.manage"]),
    ("PATCH", "/admin/seasons/{id}", &["seasons.manage"]),
    ("GET", "/admin/cities", &["cities.manage"]),
    ("POST", "/admin/cities", &["cities.manage"]),
    ("PATCH", "/admin/cities/{id}", &["cities.manage"]),
    ("DELETE", "/admin/cities/{id}", &["cities.manage"]),
    ("GET", "/admin/level-tiers", &["content.manage"]),
    ("POST", "/admin/level-tiers", &["content.manage"]),
    ("PATCH", "/admin/level-tiers/{id}", &["content.manage"]),
    ("DELETE", "/admin/level-tiers/{id}", &["content.manage"]),
    ("GET", "/admin/promo-slides", &["content.manage"]),
    ("POST", "/admin/promo-slides", &["content.manage"]),
    ("PATCH", "/admin/promo-slides/{id}", &["content.manage"]),
    ("DELETE", "/admin/promo-slides/{id}", &["content.manage"]),
    ("POST", "/uploads", &["content.manage", "tournaments.manage"]),
    // Last: a super_admin's call cancels the tournament the rows above use.
    ("POST", "/tournaments/{tournament}/cancel", &["tournaments.manage"]),
];

/// Calls one guarded path as `session` (or without a token), with an empty body where the
/// method takes one.
async fn call(app: &TestApp, method: &str, path: &str, session: Option<&Session>) -> crate::helpers::Reply {
    let method: Method = method.parse().expect("a method");
    let body = (method != Method::GET && method != Method::DELETE).then(|| json!({}));
    app.call(method, path, session.map(|s| s.access_token.as_str()), body).await
}

async fn every_permission_guarded_path_follows_the_permission_table(backend: Backend) {
    let Some(app) = spawn_app(backend).await else { return };
    let club = app.create_club("Permission club", "+79990001000").await;
    let tournament = app.create_tournament(&club, 10, chrono::Duration::days(3)).await;
    let player = app.sign_in("+79990001001").await;
    let mut admins = Vec::new();
    for (n, role) in ROLES.iter().enumerate() {
        admins.push((*role, app.sign_in_as_admin(&format!("+7999000110{n}"), role).await));
    }

    for (method, template, permissions) in GUARDED {
        let path = template
            .replace("{club}", &club.id.to_string())
            .replace("{tournament}", &tournament.to_string())
            .replace("{id}", &Uuid::now_v7().to_string());
        call(&app, method, &path, None).await.assert_error(401, "UNAUTHORIZED");
        call(&app, method, &path, Some(&player)).await.assert_error(403, "FORBIDDEN");
        for (role, session) in &admins {
            let reply = call(&app, method, &path, Some(session)).await;
            if permissions.iter().any(|permission| table_grants(role, permission)) {
                assert!(
                    !matches!(reply.status.as_u16(), 401 | 403 | 405)
                        && reply.body["error"]["message"] != "no such path",
                    "{role} may {method} {template}: {reply:?}"
                );
            } else {
                reply.assert_error(403, "FORBIDDEN");
            }
        }
    }
}

/// Club roles open the uploads too, and only owner and td do.
async fn uploads_are_open_to_club_owners_and_tds_only(backend: Backend) {
    let Some(app) = spawn_app(backend).await else { return };
    let club = app.create_club("Upload club", "+79990002000").await;
    for (phone, role) in [("+79990002001", "td"), ("+79990002002", "owner")] {
        let reply = app
            .post(
                &format!("/organizers/{}/members", club.id),
                Some(&club.owner.access_token),
                json!({"phone": phone, "role": role}),
            )
            .await;
        assert_eq!(reply.status, 201, "{reply:?}");
        let member = app.sign_in(phone).await;
        let reply = call(&app, "POST", "/uploads", Some(&member)).await;
        assert!(!matches!(reply.status.as_u16(), 401 | 403), "a club {role} may upload: {reply:?}");
    }
    let outsider = app.sign_in("+79990002003").await;
    call(&app, "POST", "/uploads", Some(&outsider)).await.assert_error(403, "FORBIDDEN");
}

on_both_databases!(
    every_permission_guarded_path_follows_the_permission_table,
    uploads_are_open_to_club_owners_and_tds_only
);
