//! Seeding: the spec's reference data, idempotently, on both databases.

use crate::helpers::{Backend, on_both_databases, spawn_app};

on_both_databases!(serving_seeds_the_reference_data_and_seeding_again_changes_nothing);

async fn serving_seeds_the_reference_data_and_seeding_again_changes_nothing(backend: Backend) {
    let Some(app) = spawn_app(backend).await else { return };
    let tables = ["cities", "city_translations", "level_tiers", "level_tier_translations", "blind_templates", "rating_config"];
    let mut before = Vec::new();
    for table in tables {
        before.push(app.count(&format!("SELECT COUNT(*) FROM {table}")).await);
    }
    assert_eq!(before, [10, 20, 6, 12, 1, 1]);
    let template_before = app.scalar("SELECT CAST(levels AS TEXT) FROM blind_templates").await;
    floor::seed::seed(app.db()).await.expect("seeding again works");
    for (table, count) in tables.iter().zip(&before) {
        assert_eq!(app.count(&format!("SELECT COUNT(*) FROM {table}")).await, *count, "{table}");
    }
    assert_eq!(app.scalar("SELECT CAST(levels AS TEXT) FROM blind_templates").await, template_before);
    let stack = app.count("SELECT starting_stack FROM blind_templates").await;
    assert_eq!(stack, 20000);
    let tiers = app.count("SELECT COUNT(*) FROM level_tiers WHERE (key, min_level) IN \
        (('fish', 1), ('grinder', 3), ('regular', 6), ('shark', 10), ('pro', 15), ('legend', 25))").await;
    assert_eq!(tiers, 6);
}
