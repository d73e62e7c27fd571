//! Reference data: seeded idempotently on both databases, and served by `/cities`,
//! `/level-tiers` and `/promo-slides`.

use chrono::{Duration, Utc};
use floor_entities::enums::PromoTarget;
use floor_entities::{promo_slide_translations, promo_slides};
use sea_orm::{ActiveModelTrait, Set};
use serde_json::json;
use uuid::Uuid;

use crate::helpers::{Backend, on_both_databases, spawn_app};

on_both_databases!(serving_seeds_the_reference_data_and_seeding_again_changes_nothing);

async fn serving_seeds_the_reference_data_and_seeding_again_changes_nothing(backend: Backend) {
    let Some(app) = spawn_app(backend).await else { return };
    let tables =
        ["cities", "city_translations", "level_tiers", "level_tier_translations", "blind_templates", "rating_config"];
    let mut before = Vec::new();
    for table in tables {
        before.push(app.count(&format!("SELECT COUNT(*) FROM {table}")).await);
    }
    assert_eq!(before, [10, 20, 6, 12, 1, 1]);
    let template_before = app.scalar("SELECT CAST(levels AS TEXT) FROM blind_templates").await;
    floor::domain::seed::seed(app.db()).await.expect("seeding again works");
    for (table, count) in tables.iter().zip(&before) {
        assert_eq!(app.count(&format!("SELECT COUNT(*) FROM {table}")).await, *count, "{table}");
    }
    assert_eq!(app.scalar("SELECT CAST(levels AS TEXT) FROM blind_templates").await, template_before);
    let stack = app.count("SELECT starting_stack FROM blind_templates").await;
    assert_eq!(stack, 20000);
    let tiers = app
        .count(
            "SELECT COUNT(*) FROM level_tiers WHERE (key, min_level) IN \
        (('fish', 1), ('grinder', 3), ('regular', 6), ('shark', 10), ('pro', 15), ('legend', 25))",
        )
        .await;
    assert_eq!(tiers, 6);
}

on_both_databases!(
    cities_are_the_active_ones_in_display_order_with_both_names,
    level_tiers_run_from_the_lowest_level_up_with_both_names,
    promo_slides_are_those_whose_window_holds_now_in_display_order,
);

async fn cities_are_the_active_ones_in_display_order_with_both_names(backend: Backend) {
    let Some(app) = spawn_app(backend).await else { return };
    let reply = app.get("/cities", None).await;
    let items = reply.assert_ok()["items"].as_array().expect("items").clone();
    assert_eq!(items.len(), 10);
    assert_eq!(
        items[0],
        json!({"slug": "moscow", "translations": {"ru": {"name": "Москва"}, "en": {"name": "Moscow"}}})
    );

    app.exec("UPDATE cities SET is_active = FALSE WHERE slug = 'ufa'").await;
    app.exec("UPDATE cities SET sort_order = -1 WHERE slug = 'kazan'").await;
    let items = app.get("/cities", None).await.assert_ok()["items"].as_array().expect("items").clone();
    let slugs: Vec<&str> = items.iter().filter_map(|city| city["slug"].as_str()).collect();
    assert_eq!(slugs.len(), 9);
    assert_eq!(slugs[0], "kazan", "display order decides");
    assert!(!slugs.contains(&"ufa"), "an inactive city is not offered");
}

async fn level_tiers_run_from_the_lowest_level_up_with_both_names(backend: Backend) {
    let Some(app) = spawn_app(backend).await else { return };
    let reply = app.get("/level-tiers", None).await;
    let items = reply.assert_ok()["items"].as_array().expect("items").clone();
    let keys: Vec<(&str, i64)> =
        items.iter().filter_map(|tier| Some((tier["key"].as_str()?, tier["minLevel"].as_i64()?))).collect();
    assert_eq!(keys, [("fish", 1), ("grinder", 3), ("regular", 6), ("shark", 10), ("pro", 15), ("legend", 25)]);
    assert_eq!(items[3]["translations"], json!({"ru": {"name": "Акула"}, "en": {"name": "Shark"}}));
    assert!(items[0]["color"].as_str().is_some_and(|colour| colour.starts_with('#')));
}

async fn promo_slides_are_those_whose_window_holds_now_in_display_order(backend: Backend) {
    let Some(app) = spawn_app(backend).await else { return };
    let now = Utc::now();
    let day = Duration::days(1);
    // (name, sort order, starts, ends)
    let slides = [
        ("over", 0, Some(now - day * 2), Some(now - day)),
        ("not-yet", 1, Some(now + day), None),
        ("always", 5, None, None),
        ("until-tomorrow", 3, None, Some(now + day)),
        ("since-yesterday", 4, Some(now - day), None),
        ("this-week", 2, Some(now - day), Some(now + day)),
    ];
    for (name, order, starts_at, ends_at) in slides {
        let id = Uuid::new_v4();
        promo_slides::ActiveModel {
            id: Set(id),
            picture_url: Set(format!("https://cdn.example.org/{name}.png")),
            target_kind: Set(PromoTarget::Url),
            target_tournament_id: Set(None),
            target_url: Set(Some(format!("https://example.org/{name}"))),
            starts_at: Set(starts_at),
            ends_at: Set(ends_at),
            sort_order: Set(order),
            created_at: Set(now),
            updated_at: Set(now),
        }
        .insert(app.db())
        .await
        .expect("a slide");
        promo_slide_translations::ActiveModel {
            slide_id: Set(id),
            locale: Set("ru".to_owned()),
            title: Set(format!("Слайд {name}")),
            subtitle: Set(None),
        }
        .insert(app.db())
        .await
        .expect("a title");
    }

    let reply = app.get("/promo-slides", None).await;
    let items = reply.assert_ok()["items"].as_array().expect("items").clone();
    let names: Vec<&str> = items
        .iter()
        .filter_map(|slide| slide["target"]["url"].as_str()?.strip_prefix("https://example.org/"))
        .collect();
    assert_eq!(names, ["this-week", "until-tomorrow", "since-yesterday", "always"]);
    let always = &items[3];
    assert_eq!(always["target"]["kind"], "url");
    assert_eq!(always["startsAt"], serde_json::Value::Null);
    assert_eq!(always["translations"], json!({"ru": {"title": "Слайд always", "subtitle": null}, "en": null}));
}
