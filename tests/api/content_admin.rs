//! Content administration: cities (`cities.manage`), level tiers and promo slides
//! (`content.manage`) are created, edited and deleted with audit records, the public lists
//! follow at once, and bad input or a guarded case changes nothing.

use chrono::{Duration, Utc};
use serde_json::{Value, json};

use crate::helpers::{Backend, PLATFORM_ADMIN_PHONE, Reply, TestApp, on_both_databases, spawn_app};

on_both_databases!(
    cities_need_cities_manage_and_tiers_and_slides_content_manage,
    a_city_is_created_renamed_deactivated_and_deleted_and_the_public_list_follows,
    a_city_with_venues_is_not_deleted_but_can_be_deactivated,
    bad_or_taken_city_input_is_refused_with_details_and_changes_nothing,
    a_level_tier_is_created_edited_and_deleted_and_players_tiers_follow,
    the_tier_at_level_one_stays_and_keys_and_levels_stay_unique,
    a_promo_slide_is_created_edited_and_deleted_and_the_public_list_follows,
    inconsistent_slides_are_refused_with_details_and_change_nothing,
);

/// The fields named by a `VALIDATION_ERROR`, in order.
fn fields(reply: &Reply) -> Vec<String> {
    reply.assert_error(400, "VALIDATION_ERROR");
    reply.body["error"]["details"]
        .as_array()
        .expect("details")
        .iter()
        .map(|d| d["field"].as_str().unwrap_or_default().to_owned())
        .collect()
}

fn items(reply: &Reply) -> Vec<Value> {
    reply.assert_ok()["items"].as_array().expect("items").clone()
}

/// The values of `key` in the list at `path`.
async fn listed(app: &TestApp, path: &str, token: Option<&str>, key: &str) -> Vec<Value> {
    items(&app.get(path, token).await).into_iter().map(|item| item[key].clone()).collect()
}

async fn audits(app: &TestApp, action: &str) -> i64 {
    app.count(&format!("SELECT COUNT(*) FROM audit_log WHERE action = '{action}'")).await
}

fn names(ru: &str, en: &str) -> Value {
    json!({"ru": {"name": ru}, "en": {"name": en}})
}

async fn cities_need_cities_manage_and_tiers_and_slides_content_manage(backend: Backend) {
    let Some(app) = spawn_app(backend).await else { return };
    let marketing = app.sign_in_as_admin("+79990700001", "marketing").await;
    let moderator = app.sign_in_as_admin("+79990700002", "moderator").await;
    let player = app.sign_in("+79990700003").await;
    let city = json!({"slug": "tver", "translations": names("Тверь", "Tver")});
    for token in [&marketing, &moderator, &player].map(|s| Some(s.access_token.as_str())) {
        app.get("/admin/cities", token).await.assert_error(403, "FORBIDDEN");
        app.post("/admin/cities", token, city.clone()).await.assert_error(403, "FORBIDDEN");
    }
    app.get("/admin/cities", None).await.assert_error(401, "UNAUTHORIZED");
    for path in ["/admin/level-tiers", "/admin/promo-slides"] {
        app.get(path, Some(&marketing.access_token)).await.assert_ok();
        app.get(path, Some(&moderator.access_token)).await.assert_error(403, "FORBIDDEN");
        app.get(path, Some(&player.access_token)).await.assert_error(403, "FORBIDDEN");
    }
    assert_eq!(app.count("SELECT COUNT(*) FROM cities WHERE slug = 'tver'").await, 0);
}

async fn a_city_is_created_renamed_deactivated_and_deleted_and_the_public_list_follows(backend: Backend) {
    let Some(app) = spawn_app(backend).await else { return };
    let root = app.sign_in(PLATFORM_ADMIN_PHONE).await;
    let token = Some(root.access_token.as_str());

    let created =
        app.post("/admin/cities", token, json!({"slug": "tver", "translations": names(" Тверь ", "Tver")})).await;
    assert_eq!(created.status, 201, "{created:?}");
    let id = created.body["id"].as_str().expect("id").to_owned();
    assert_eq!(created.body["slug"], "tver");
    assert_eq!(created.body["isActive"], true);
    assert_eq!(created.body["sortOrder"], 11, "after the ten seeded cities");
    assert_eq!(created.body["translations"], names("Тверь", "Tver"));
    let public = listed(&app, "/cities", None, "slug").await;
    assert_eq!(public.last(), Some(&json!("tver")), "the public list shows it at once, last");

    let player = app.sign_in("+79990700010").await;
    let me = app.patch("/me", Some(&player.access_token), json!({"citySlug": "tver"})).await;
    assert_eq!(me.assert_ok()["citySlug"], "tver");

    let path = format!("/admin/cities/{id}");
    app.patch(&path, token, json!({"slug": "tver-city"})).await.assert_error(400, "VALIDATION_ERROR");
    let edited = app
        .patch(
            &path,
            token,
            json!({"slug": "tver", "isActive": false, "sortOrder": 0, "translations": {"en": {"name": "Tver City"}}}),
        )
        .await;
    let edited = edited.assert_ok();
    assert_eq!(edited["slug"], "tver", "the slug is stable");
    assert_eq!(edited["isActive"], false);
    assert_eq!(edited["sortOrder"], 0);
    assert_eq!(edited["translations"], names("Тверь", "Tver City"), "only the locale given is replaced");
    let me = app.get("/auth/me", Some(&player.access_token)).await;
    assert_eq!(me.assert_ok()["citySlug"], "tver", "the user keeps the city");
    let public = listed(&app, "/cities", None, "slug").await;
    assert!(!public.contains(&json!("tver")), "inactive: not offered");
    let all = items(&app.get("/admin/cities", token).await);
    assert_eq!(all.len(), 11, "the admin list holds inactive cities too");
    assert_eq!(all[0]["slug"], "tver", "in display order");

    assert_eq!(app.delete(&path, token).await.status, 204);
    let me = app.get("/auth/me", Some(&player.access_token)).await;
    assert_eq!(me.assert_ok()["citySlug"], Value::Null, "its users are left without a city");
    assert_eq!(items(&app.get("/admin/cities", token).await).len(), 10);
    assert_eq!(
        app.count(&format!(
            "SELECT COUNT(*) FROM city_translations WHERE city_id = {}",
            app.uuid_literal(id.parse().expect("uuid"))
        ))
        .await,
        0
    );
    app.delete(&path, token).await.assert_error(404, "NOT_FOUND");
    app.patch(&path, token, json!({"isActive": true})).await.assert_error(404, "NOT_FOUND");
    for action in ["admin.city.create", "admin.city.update", "admin.city.delete"] {
        assert_eq!(audits(&app, action).await, 1, "{action}");
    }
}

async fn a_city_with_venues_is_not_deleted_but_can_be_deactivated(backend: Backend) {
    let Some(app) = spawn_app(backend).await else { return };
    let club = app.create_club("Aces", "+79990700020").await;
    let venue = app.create_location(&club).await;
    let root = app.platform_admin().await;
    let token = Some(root.access_token.as_str());
    let moscow =
        items(&app.get("/admin/cities", token).await).into_iter().find(|c| c["slug"] == "moscow").expect("moscow");
    let path = format!("/admin/cities/{}", moscow["id"].as_str().expect("id"));

    let refused = app.delete(&path, token).await;
    refused.assert_error(409, "INVALID_STATUS");
    assert!(refused.body["error"]["message"].as_str().is_some_and(|m| m.contains("deactivate")), "{refused:?}");
    assert_eq!(app.count("SELECT COUNT(*) FROM cities WHERE slug = 'moscow'").await, 1);
    assert_eq!(audits(&app, "admin.city.delete").await, 0);

    app.patch(&path, token, json!({"isActive": false})).await.assert_ok();
    assert!(!listed(&app, "/cities", None, "slug").await.contains(&json!("moscow")));
    let card = app.get(&format!("/locations/{venue}"), None).await;
    assert_eq!(card.assert_ok()["citySlug"], "moscow", "the venue keeps its city");
}

async fn bad_or_taken_city_input_is_refused_with_details_and_changes_nothing(backend: Backend) {
    let Some(app) = spawn_app(backend).await else { return };
    let root = app.platform_admin().await;
    let token = Some(root.access_token.as_str());
    let bad =
        app.post("/admin/cities", token, json!({"slug": "Tver City", "translations": {"ru": {"name": ""}}})).await;
    assert_eq!(fields(&bad), ["slug", "translations.en", "translations.ru.name"]);
    let missing = app.post("/admin/cities", token, json!({"slug": "tver"})).await;
    assert_eq!(fields(&missing), ["translations"]);
    let taken = app
        .post("/admin/cities", token, json!({"slug": "moscow", "translations": names("Москва 2", "Moscow 2")}))
        .await;
    assert_eq!(fields(&taken), ["slug"]);
    assert_eq!(taken.body["error"]["details"][0]["problem"], "is taken");

    let kazan =
        items(&app.get("/admin/cities", token).await).into_iter().find(|c| c["slug"] == "kazan").expect("kazan");
    let path = format!("/admin/cities/{}", kazan["id"].as_str().expect("id"));
    let renamed = app.patch(&path, token, json!({"slug": "moscow", "translations": {"en": {"name": "Kazan!"}}})).await;
    assert_eq!(fields(&renamed), ["slug"]);
    let bad_edit = app.patch(&path, token, json!({"slug": "kazan-", "isActive": "no"})).await;
    assert_eq!(fields(&bad_edit), ["isActive"], "a mistyped field is named");

    assert_eq!(app.count("SELECT COUNT(*) FROM cities").await, 10);
    assert_eq!(
        app.count("SELECT COUNT(*) FROM city_translations WHERE name = 'Kazan'").await,
        1,
        "the rename's names stay"
    );
    assert!(listed(&app, "/cities", None, "slug").await.contains(&json!("kazan")));
    assert_eq!(app.count("SELECT COUNT(*) FROM audit_log WHERE action LIKE 'admin.city.%'").await, 0);
}

async fn a_level_tier_is_created_edited_and_deleted_and_players_tiers_follow(backend: Backend) {
    let Some(app) = spawn_app(backend).await else { return };
    let marketing = app.sign_in_as_admin("+79990700030", "marketing").await;
    let token = Some(marketing.access_token.as_str());
    let player = app.sign_in("+79990700031").await;
    app.exec(&format!("UPDATE player_profiles SET level = 60 WHERE user_id = {}", app.uuid_literal(player.user_id)))
        .await;
    let tier_of_player =
        || async { app.get(&format!("/players/{}", player.user_id), None).await.assert_ok()["tier"].clone() };
    assert_eq!(tier_of_player().await, "legend");

    let body = json!({"key": "whale", "minLevel": 50, "color": "#0A0B0C", "translations": names("Кит", "Whale")});
    let created = app.post("/admin/level-tiers", token, body).await;
    assert_eq!(created.status, 201, "{created:?}");
    let id = created.body["id"].as_str().expect("id").to_owned();
    assert_eq!(created.body["color"], "#0a0b0c");
    assert_eq!(created.body["pictureUrl"], Value::Null);
    assert_eq!(listed(&app, "/level-tiers", None, "key").await.last(), Some(&json!("whale")));
    assert_eq!(tier_of_player().await, "whale");

    let path = format!("/admin/level-tiers/{id}");
    let edited = app
        .patch(&path, token, json!({"minLevel": 70, "pictureUrl": "https://cdn.example.org/whale.png", "translations": {"ru": {"name": "Синий кит"}}}))
        .await;
    let edited = edited.assert_ok();
    assert_eq!(edited["minLevel"], 70);
    assert_eq!(edited["pictureUrl"], "https://cdn.example.org/whale.png");
    assert_eq!(edited["translations"], names("Синий кит", "Whale"));
    assert_eq!(tier_of_player().await, "legend", "level 60 is below the tier now");
    let public = items(&app.get("/level-tiers", None).await);
    assert_eq!(public.last().map(|t| t["minLevel"].clone()), Some(json!(70)));
    let cleared = app.patch(&path, token, json!({"pictureUrl": null})).await;
    assert_eq!(cleared.assert_ok()["pictureUrl"], Value::Null);
    assert_eq!(cleared.body["minLevel"], 70, "an absent field stays");

    assert_eq!(app.delete(&path, token).await.status, 204);
    assert!(!listed(&app, "/level-tiers", None, "key").await.contains(&json!("whale")));
    assert_eq!(app.count("SELECT COUNT(*) FROM level_tier_translations").await, 12, "its names went with it");
    app.delete(&path, token).await.assert_error(404, "NOT_FOUND");
    for (action, count) in
        [("admin.level_tier.create", 1), ("admin.level_tier.update", 2), ("admin.level_tier.delete", 1)]
    {
        assert_eq!(audits(&app, action).await, count, "{action}");
    }
}

async fn the_tier_at_level_one_stays_and_keys_and_levels_stay_unique(backend: Backend) {
    let Some(app) = spawn_app(backend).await else { return };
    let root = app.platform_admin().await;
    let token = Some(root.access_token.as_str());
    let tiers = items(&app.get("/admin/level-tiers", token).await);
    let id_of =
        |key: &str| tiers.iter().find(|t| t["key"] == key).and_then(|t| t["id"].as_str()).expect("a tier").to_owned();
    let fish = format!("/admin/level-tiers/{}", id_of("fish"));
    let grinder = format!("/admin/level-tiers/{}", id_of("grinder"));

    app.delete(&fish, token).await.assert_error(409, "INVALID_STATUS");
    app.patch(&fish, token, json!({"minLevel": 2})).await.assert_error(409, "INVALID_STATUS");
    let renamed = app.patch(&fish, token, json!({"key": "minnow", "minLevel": 1})).await;
    assert_eq!(renamed.assert_ok()["key"], "minnow", "the tier at level 1 can be edited in place");

    let taken_level = app
        .post(
            "/admin/level-tiers",
            token,
            json!({"key": "carp", "minLevel": 3, "color": "#123456", "translations": names("Карп", "Carp")}),
        )
        .await;
    assert_eq!(fields(&taken_level), ["minLevel"]);
    let taken_key = app
        .post(
            "/admin/level-tiers",
            token,
            json!({"key": "grinder", "minLevel": 4, "color": "#123456", "translations": names("Гриндер", "Grinder")}),
        )
        .await;
    assert_eq!(fields(&taken_key), ["key"]);
    let bad = app.post("/admin/level-tiers", token, json!({"key": "Carp!", "minLevel": 0, "color": "red", "pictureUrl": "x", "translations": {"en": {"name": "Carp"}}})).await;
    assert_eq!(fields(&bad), ["key", "minLevel", "color", "pictureUrl", "translations.ru"]);
    assert_eq!(fields(&app.patch(&grinder, token, json!({"minLevel": 6})).await), ["minLevel"]);
    assert_eq!(fields(&app.patch(&grinder, token, json!({"key": "regular"})).await), ["key"]);
    assert_eq!(fields(&app.patch(&grinder, token, json!({"minLevel": 1001})).await), ["minLevel"]);

    let levels: Vec<(Value, Value)> = items(&app.get("/level-tiers", None).await)
        .into_iter()
        .map(|t| (t["key"].clone(), t["minLevel"].clone()))
        .collect();
    let expected = [("minnow", 1), ("grinder", 3), ("regular", 6), ("shark", 10), ("pro", 15), ("legend", 25)];
    assert_eq!(levels, expected.map(|(key, level)| (json!(key), json!(level))));
    assert_eq!(audits(&app, "admin.level_tier.update").await, 1, "only the rename was written");
    assert_eq!(app.count("SELECT COUNT(*) FROM audit_log WHERE action LIKE 'admin.level_tier.%'").await, 1);
}

fn slide_texts(title: &str) -> Value {
    json!({"ru": {"title": format!("{title} ru"), "subtitle": "подзаголовок"}, "en": {"title": format!("{title} en")}})
}

async fn a_promo_slide_is_created_edited_and_deleted_and_the_public_list_follows(backend: Backend) {
    let Some(app) = spawn_app(backend).await else { return };
    let club = app.create_club("Aces", "+79990700040").await;
    let tournament = app.create_tournament(&club, 20, Duration::days(2)).await;
    let marketing = app.sign_in_as_admin("+79990700041", "marketing").await;
    let token = Some(marketing.access_token.as_str());
    let now = Utc::now();

    let first = app
        .post(
            "/admin/promo-slides",
            token,
            json!({
                "pictureUrl": "https://cdn.example.org/a.png",
                "target": {"kind": "tournament", "tournamentId": tournament},
                "startsAt": (now - Duration::days(1)).to_rfc3339(),
                "endsAt": (now + Duration::days(1)).to_rfc3339(),
                "translations": slide_texts("Final"),
            }),
        )
        .await;
    assert_eq!(first.status, 201, "{first:?}");
    assert_eq!(
        first.body["target"],
        json!({"kind": "tournament", "tournamentId": tournament.to_string(), "url": null})
    );
    assert_eq!(first.body["sortOrder"], 0);
    assert_eq!(first.body["translations"]["en"], json!({"title": "Final en", "subtitle": null}));
    let first_id = first.body["id"].as_str().expect("id").to_owned();
    let second = app
        .post(
            "/admin/promo-slides",
            token,
            json!({
                "pictureUrl": "https://cdn.example.org/b.png",
                "target": {"kind": "url", "url": "https://floor.example.org/news"},
                "startsAt": (now + Duration::days(3)).to_rfc3339(),
                "translations": slide_texts("News"),
            }),
        )
        .await;
    assert_eq!(second.status, 201, "{second:?}");
    assert_eq!(second.body["sortOrder"], 1, "after the existing slide");
    let second_id = second.body["id"].as_str().expect("id").to_owned();

    assert_eq!(listed(&app, "/promo-slides", None, "id").await, [json!(first_id)], "the public list: on show now");
    assert_eq!(
        listed(&app, "/admin/promo-slides", token, "id").await,
        [json!(first_id), json!(second_id)],
        "the admin list: all"
    );

    let second_path = format!("/admin/promo-slides/{second_id}");
    let edited = app
        .patch(
            &second_path,
            token,
            json!({"startsAt": null, "sortOrder": -1, "translations": {"en": {"title": "Fresh news"}}}),
        )
        .await;
    let edited = edited.assert_ok();
    assert_eq!(edited["startsAt"], Value::Null);
    assert_eq!(edited["translations"]["en"], json!({"title": "Fresh news", "subtitle": null}));
    assert_eq!(edited["translations"]["ru"]["title"], "News ru", "only the locale given is replaced");
    assert_eq!(
        listed(&app, "/promo-slides", None, "id").await,
        [json!(second_id), json!(first_id)],
        "on show, in the new order"
    );

    let first_path = format!("/admin/promo-slides/{first_id}");
    let retargeted = app
        .patch(&first_path, token, json!({"target": {"kind": "url", "url": "https://floor.example.org/final"}}))
        .await;
    assert_eq!(
        retargeted.assert_ok()["target"],
        json!({"kind": "url", "tournamentId": null, "url": "https://floor.example.org/final"})
    );
    assert!(retargeted.body["endsAt"].is_string(), "an absent field stays");

    assert_eq!(app.delete(&first_path, token).await.status, 204);
    assert_eq!(listed(&app, "/promo-slides", None, "id").await, [json!(second_id)]);
    assert_eq!(app.count("SELECT COUNT(*) FROM promo_slide_translations").await, 2, "its texts went with it");
    app.delete(&first_path, token).await.assert_error(404, "NOT_FOUND");
    for (action, count) in
        [("admin.promo_slide.create", 2), ("admin.promo_slide.update", 2), ("admin.promo_slide.delete", 1)]
    {
        assert_eq!(audits(&app, action).await, count, "{action}");
    }
}

async fn inconsistent_slides_are_refused_with_details_and_change_nothing(backend: Backend) {
    let Some(app) = spawn_app(backend).await else { return };
    let root = app.platform_admin().await;
    let token = Some(root.access_token.as_str());
    let now = Utc::now();
    let slide = |target: Value| json!({"pictureUrl": "https://cdn.example.org/a.png", "target": target, "translations": slide_texts("A")});

    let cases = [
        (slide(json!({"kind": "tournament"})), vec!["target.tournamentId"]),
        (slide(json!({"kind": "tournament", "tournamentId": uuid::Uuid::new_v4()})), vec!["target.tournamentId"]),
        (
            slide(json!({"kind": "tournament", "tournamentId": uuid::Uuid::new_v4(), "url": "https://x.org"})),
            vec!["target.url", "target.tournamentId"],
        ),
        (slide(json!({"kind": "url"})), vec!["target.url"]),
        (slide(json!({"kind": "url", "url": "ftp://x.org/a"})), vec!["target.url"]),
        (
            slide(json!({"kind": "url", "url": "https://x.org", "tournamentId": uuid::Uuid::new_v4()})),
            vec!["target.tournamentId"],
        ),
        (slide(json!({"kind": "banner"})), vec!["target.kind"]),
        (
            json!({"pictureUrl": "picture", "target": {"kind": "url", "url": "https://x.org"}, "startsAt": now.to_rfc3339(), "endsAt": now.to_rfc3339(),
                   "translations": {"ru": {"title": ""}}}),
            vec!["pictureUrl", "endsAt", "translations.en", "translations.ru.title"],
        ),
    ];
    for (body, expected) in cases {
        let reply = app.post("/admin/promo-slides", token, body.clone()).await;
        assert_eq!(fields(&reply), expected, "{body}");
    }

    let kept = app
        .post(
            "/admin/promo-slides",
            token,
            json!({
                "pictureUrl": "https://cdn.example.org/a.png",
                "target": {"kind": "url", "url": "https://x.org"},
                "startsAt": (now + Duration::days(1)).to_rfc3339(),
                "translations": slide_texts("Kept"),
            }),
        )
        .await;
    assert_eq!(kept.status, 201, "{kept:?}");
    let path = format!("/admin/promo-slides/{}", kept.body["id"].as_str().expect("id"));
    let before_window = app
        .patch(&path, token, json!({"endsAt": now.to_rfc3339(), "pictureUrl": "https://cdn.example.org/b.png"}))
        .await;
    assert_eq!(fields(&before_window), ["endsAt"], "the window is checked with the start it keeps");
    let bad_target =
        app.patch(&path, token, json!({"target": {"kind": "tournament", "tournamentId": uuid::Uuid::new_v4()}})).await;
    assert_eq!(fields(&bad_target), ["target.tournamentId"]);
    let unchanged = items(&app.get("/admin/promo-slides", token).await);
    assert_eq!(unchanged.len(), 1);
    assert_eq!(unchanged[0]["pictureUrl"], "https://cdn.example.org/a.png");
    assert_eq!(unchanged[0]["endsAt"], Value::Null);
    assert_eq!(unchanged[0]["target"]["kind"], "url");
    app.patch(&format!("/admin/promo-slides/{}", uuid::Uuid::new_v4()), token, json!({}))
        .await
        .assert_error(404, "NOT_FOUND");
    assert_eq!(app.count("SELECT COUNT(*) FROM audit_log WHERE action LIKE 'admin.promo_slide.%'").await, 1);
}
