//! Reference data every installation starts with: the platform blind template, the cities,
//! the level tiers and the rating configuration row.
//!
//! Each row is inserted only when its stable key is missing (the fixed template id, the city
//! slug, the tier key, the config id, and (parent, locale) for translations) with
//! `INSERT ... ON CONFLICT DO NOTHING`. Running the seed again therefore changes nothing, and
//! values edited by admins afterwards are never overwritten.
//!
//! Cities and level tiers are seeded only into an empty table: once there, they belong to the
//! content admins, so a city or tier they deleted or renamed does not come back at the next
//! start. The whole seed is one transaction, so a start cut short leaves no half list behind.

use chrono::{DateTime, Utc};
use floor_entities::{blind_templates, cities, city_translations, level_tier_translations, level_tiers, rating_config};
use sea_orm::{
    ActiveValue::Set, ColumnTrait, ConnectionTrait, DatabaseConnection, DbErr, EntityTrait, PaginatorTrait,
    QueryFilter, QuerySelect, TryInsertResult,
};
use serde::Serialize;
use serde_json::{Value, json};
use uuid::Uuid;

/// Id of the platform blind template "Floor standard" (organizer_id NULL).
pub const PLATFORM_TEMPLATE_ID: Uuid = Uuid::from_u128(0xf100_0000_0000_4000_8000_0000_0000_0001);

/// Id of the single `rating_config` row.
pub const DEFAULT_RATING_CONFIG_ID: i32 = 1;

/// The spec's starting skill (displayed as 5.0): the configuration's default, and what a
/// profile starts with should the configuration row be missing.
pub const DEFAULT_SKILL_INITIAL: f64 = 0.4444;

const PLATFORM_TEMPLATE_NAME: &str = "Floor standard";
const STARTING_STACK: i64 = 20_000;
const LATE_REG_LEVEL: i32 = 6;
const LEVEL_MINUTES: i64 = 20;
/// The break comes after this many levels.
const BREAK_AFTER_LEVEL: usize = 6;
const BREAK_MINUTES: i64 = 15;
/// Small and big blind of each level, in order.
const BLINDS: [(i64, i64); 12] = [
    (100, 200),
    (200, 400),
    (300, 600),
    (400, 800),
    (500, 1000),
    (600, 1200),
    (800, 1600),
    (1000, 2000),
    (1500, 3000),
    (2000, 4000),
    (3000, 6000),
    (4000, 8000),
];

/// Slug, Russian and English name; the position gives `sort_order`.
const CITIES: [(&str, &str, &str); 10] = [
    ("moscow", "Москва", "Moscow"),
    ("saint-petersburg", "Санкт-Петербург", "Saint Petersburg"),
    ("novosibirsk", "Новосибирск", "Novosibirsk"),
    ("yekaterinburg", "Екатеринбург", "Yekaterinburg"),
    ("kazan", "Казань", "Kazan"),
    ("nizhny-novgorod", "Нижний Новгород", "Nizhny Novgorod"),
    ("krasnoyarsk", "Красноярск", "Krasnoyarsk"),
    ("chelyabinsk", "Челябинск", "Chelyabinsk"),
    ("samara", "Самара", "Samara"),
    ("ufa", "Уфа", "Ufa"),
];

/// Key, minimum level, colour, Russian and English name.
const TIERS: [(&str, i32, &str, &str, &str); 6] = [
    ("fish", 1, "#4FC3F7", "Рыба", "Fish"),
    ("grinder", 3, "#81C784", "Гриндер", "Grinder"),
    ("regular", 6, "#FFD54F", "Регуляр", "Regular"),
    ("shark", 10, "#FF8A65", "Акула", "Shark"),
    ("pro", 15, "#BA68C8", "Профи", "Pro"),
    ("legend", 25, "#E53935", "Легенда", "Legend"),
];

/// Rows inserted by one run of [`seed`], per table; all zero when everything was present.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct SeedReport {
    pub blind_templates: u64,
    pub cities: u64,
    pub city_translations: u64,
    pub level_tiers: u64,
    pub level_tier_translations: u64,
    pub rating_configs: u64,
}

impl SeedReport {
    /// Rows inserted in all tables.
    pub fn total(&self) -> u64 {
        self.blind_templates
            + self.cities
            + self.city_translations
            + self.level_tiers
            + self.level_tier_translations
            + self.rating_configs
    }
}

/// Inserts whatever reference data is missing and reports what it inserted.
pub async fn seed(db: &DatabaseConnection) -> Result<SeedReport, DbErr> {
    let now = Utc::now();
    let tx = crate::infra::db::begin_write(db).await?;
    let mut report = SeedReport {
        blind_templates: seed_platform_template(&tx, now).await?,
        rating_configs: seed_rating_config(&tx, now).await?,
        ..SeedReport::default()
    };
    if cities::Entity::find().count(&tx).await? == 0 {
        seed_cities(&tx, now, &mut report).await?;
    }
    if level_tiers::Entity::find().count(&tx).await? == 0 {
        seed_level_tiers(&tx, now, &mut report).await?;
    }
    tx.commit().await?;
    Ok(report)
}

/// The segments of the platform template: twelve levels with a break after the sixth, in the
/// JSON shape the clock reads.
pub fn platform_template_levels() -> Value {
    let mut segments = Vec::with_capacity(BLINDS.len() + 1);
    for (i, (small, big)) in BLINDS.into_iter().enumerate() {
        if i == BREAK_AFTER_LEVEL {
            segments.push(json!({ "kind": "break", "durationMin": BREAK_MINUTES }));
        }
        segments.push(json!({
            "kind": "level",
            "durationMin": LEVEL_MINUTES,
            "smallBlind": small,
            "bigBlind": big,
            "ante": 0,
        }));
    }
    Value::Array(segments)
}

/// Rows written by an `ON CONFLICT DO NOTHING` insert: zero when the key was present.
fn inserted(result: TryInsertResult<u64>) -> u64 {
    match result {
        TryInsertResult::Inserted(rows) => rows,
        TryInsertResult::Empty | TryInsertResult::Conflicted => 0,
    }
}

async fn seed_platform_template(db: &impl ConnectionTrait, now: DateTime<Utc>) -> Result<u64, DbErr> {
    let template = blind_templates::ActiveModel {
        id: Set(PLATFORM_TEMPLATE_ID),
        organizer_id: Set(None),
        name: Set(PLATFORM_TEMPLATE_NAME.to_owned()),
        levels: Set(platform_template_levels()),
        starting_stack: Set(STARTING_STACK),
        late_reg_level: Set(Some(LATE_REG_LEVEL)),
        created_at: Set(now),
    };
    let result = blind_templates::Entity::insert(template).on_conflict_do_nothing().exec_without_returning(db).await?;
    Ok(inserted(result))
}

async fn seed_rating_config(db: &impl ConnectionTrait, now: DateTime<Utc>) -> Result<u64, DbErr> {
    let config = rating_config::ActiveModel {
        id: Set(DEFAULT_RATING_CONFIG_ID),
        points_base: Set(10.0),
        min_points: Set(1),
        xp_level_base: Set(50.0),
        xp_level_exponent: Set(1.5),
        skill_alpha: Set(0.1),
        skill_initial: Set(DEFAULT_SKILL_INITIAL),
        strikes_to_ban: Set(2),
        strike_window_days: Set(30),
        ban_days: Set(14),
        updated_at: Set(now),
        updated_by_user_id: Set(None),
    };
    let result = rating_config::Entity::insert(config).on_conflict_do_nothing().exec_without_returning(db).await?;
    Ok(inserted(result))
}

async fn seed_cities(db: &impl ConnectionTrait, now: DateTime<Utc>, report: &mut SeedReport) -> Result<(), DbErr> {
    for (order, (slug, ru, en)) in (1..).zip(CITIES) {
        let city = cities::ActiveModel {
            id: Set(Uuid::now_v7()),
            slug: Set(slug.to_owned()),
            is_active: Set(true),
            sort_order: Set(order),
            created_at: Set(now),
        };
        let result = cities::Entity::insert(city)
            .on_conflict_do_nothing_on([cities::Column::Slug])
            .exec_without_returning(db)
            .await?;
        report.cities += inserted(result);

        // The id of the row that holds the slug, whether inserted now or long ago.
        let city_id: Uuid = cities::Entity::find()
            .select_only()
            .column(cities::Column::Id)
            .filter(cities::Column::Slug.eq(slug))
            .into_tuple()
            .one(db)
            .await?
            .ok_or_else(|| DbErr::RecordNotFound(format!("city {slug}")))?;
        let names = [("ru", ru), ("en", en)].map(|(locale, name)| city_translations::ActiveModel {
            city_id: Set(city_id),
            locale: Set(locale.to_owned()),
            name: Set(name.to_owned()),
        });
        let result =
            city_translations::Entity::insert_many(names).on_conflict_do_nothing().exec_without_returning(db).await?;
        report.city_translations += inserted(result);
    }
    Ok(())
}

async fn seed_level_tiers(db: &impl ConnectionTrait, now: DateTime<Utc>, report: &mut SeedReport) -> Result<(), DbErr> {
    for (key, min_level, color, ru, en) in TIERS {
        let row = level_tiers::ActiveModel {
            id: Set(Uuid::now_v7()),
            key: Set(key.to_owned()),
            min_level: Set(min_level),
            color: Set(color.to_owned()),
            picture_url: Set(None),
            created_at: Set(now),
        };
        let result = level_tiers::Entity::insert(row)
            .on_conflict_do_nothing_on([level_tiers::Column::Key])
            .exec_without_returning(db)
            .await?;
        report.level_tiers += inserted(result);

        let tier_id: Uuid = level_tiers::Entity::find()
            .select_only()
            .column(level_tiers::Column::Id)
            .filter(level_tiers::Column::Key.eq(key))
            .into_tuple()
            .one(db)
            .await?
            .ok_or_else(|| DbErr::RecordNotFound(format!("level tier {key}")))?;
        let names = [("ru", ru), ("en", en)].map(|(locale, name)| level_tier_translations::ActiveModel {
            tier_id: Set(tier_id),
            locale: Set(locale.to_owned()),
            name: Set(name.to_owned()),
        });
        let result = level_tier_translations::Entity::insert_many(names)
            .on_conflict_do_nothing()
            .exec_without_returning(db)
            .await?;
        report.level_tier_translations += inserted(result);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use floor_migrations::{Migrator, MigratorTrait};
    use sea_orm::{ActiveModelTrait, Database, DatabaseConnection, IntoActiveModel, QueryOrder};

    async fn migrated_sqlite() -> (tempfile::TempDir, DatabaseConnection) {
        let dir = tempfile::tempdir().expect("temp dir");
        let url = format!("sqlite://{}?mode=rwc", dir.path().join("seed.db").display());
        let db = Database::connect(url.as_str()).await.expect("open sqlite");
        Migrator::up(&db, None).await.expect("migrate");
        (dir, db)
    }

    /// Every row the seed touches, in key order.
    #[derive(Debug, PartialEq)]
    struct Snapshot {
        templates: Vec<blind_templates::Model>,
        cities: Vec<cities::Model>,
        city_translations: Vec<city_translations::Model>,
        tiers: Vec<level_tiers::Model>,
        tier_translations: Vec<level_tier_translations::Model>,
        configs: Vec<rating_config::Model>,
    }

    async fn snapshot(db: &DatabaseConnection) -> Snapshot {
        Snapshot {
            templates: blind_templates::Entity::find()
                .order_by_asc(blind_templates::Column::Id)
                .all(db)
                .await
                .expect("templates"),
            cities: cities::Entity::find().order_by_asc(cities::Column::Slug).all(db).await.expect("cities"),
            city_translations: city_translations::Entity::find()
                .order_by_asc(city_translations::Column::CityId)
                .order_by_asc(city_translations::Column::Locale)
                .all(db)
                .await
                .expect("city translations"),
            tiers: level_tiers::Entity::find().order_by_asc(level_tiers::Column::Key).all(db).await.expect("tiers"),
            tier_translations: level_tier_translations::Entity::find()
                .order_by_asc(level_tier_translations::Column::TierId)
                .order_by_asc(level_tier_translations::Column::Locale)
                .all(db)
                .await
                .expect("tier translations"),
            configs: rating_config::Entity::find().all(db).await.expect("rating config"),
        }
    }

    #[tokio::test]
    async fn seeding_twice_inserts_everything_once_and_then_nothing() {
        let (_dir, db) = migrated_sqlite().await;

        let first = seed(&db).await.expect("first seed");
        assert_eq!(
            first,
            SeedReport {
                blind_templates: 1,
                cities: 10,
                city_translations: 20,
                level_tiers: 6,
                level_tier_translations: 12,
                rating_configs: 1,
            }
        );
        let before = snapshot(&db).await;

        let second = seed(&db).await.expect("second seed");
        assert_eq!(second, SeedReport::default());
        assert_eq!(second.total(), 0);
        assert_eq!(snapshot(&db).await, before, "rows, values and timestamps unchanged");
    }

    #[tokio::test]
    async fn the_platform_template_has_thirteen_segments_with_the_break_after_the_sixth_level() {
        let (_dir, db) = migrated_sqlite().await;
        seed(&db).await.expect("seed");

        let template = blind_templates::Entity::find_by_id(PLATFORM_TEMPLATE_ID)
            .one(&db)
            .await
            .expect("query")
            .expect("platform template");
        assert_eq!(template.organizer_id, None);
        assert_eq!(template.name, "Floor standard");
        assert_eq!(template.starting_stack, 20_000);
        assert_eq!(template.late_reg_level, Some(6));

        let segments = template.levels.as_array().expect("a list of segments");
        assert_eq!(segments.len(), 13);
        assert_eq!(segments[6], json!({"kind": "break", "durationMin": 15}));
        assert_eq!(
            segments[0],
            json!({"kind": "level", "durationMin": 20, "smallBlind": 100, "bigBlind": 200, "ante": 0})
        );
        assert_eq!(
            segments[12],
            json!({"kind": "level", "durationMin": 20, "smallBlind": 4000, "bigBlind": 8000, "ante": 0})
        );
        let levels = segments.iter().filter(|s| s["kind"] == "level").count();
        assert_eq!(levels, 12);
    }

    #[tokio::test]
    async fn the_seeded_cities_tiers_and_rating_config_match_the_spec() {
        let (_dir, db) = migrated_sqlite().await;
        seed(&db).await.expect("seed");
        let seeded = snapshot(&db).await;

        let mut cities = seeded.cities.clone();
        cities.sort_by_key(|c| c.sort_order);
        let slugs: Vec<_> = cities.iter().map(|c| c.slug.as_str()).collect();
        assert_eq!(slugs, CITIES.map(|(slug, _, _)| slug));
        assert!(cities.iter().all(|c| c.is_active));
        assert_eq!(cities.iter().map(|c| c.sort_order).collect::<Vec<_>>(), (1..=10).collect::<Vec<_>>());
        let moscow_ru = seeded
            .city_translations
            .iter()
            .find(|t| t.city_id == cities[0].id && t.locale == "ru")
            .expect("Moscow in Russian");
        assert_eq!(moscow_ru.name, "Москва");

        let mut tiers = seeded.tiers.clone();
        tiers.sort_by_key(|t| t.min_level);
        let keyed: Vec<_> = tiers.iter().map(|t| (t.key.as_str(), t.min_level)).collect();
        assert_eq!(keyed, [("fish", 1), ("grinder", 3), ("regular", 6), ("shark", 10), ("pro", 15), ("legend", 25)]);
        let mut colors: Vec<_> = tiers.iter().map(|t| t.color.as_str()).collect();
        colors.sort_unstable();
        colors.dedup();
        assert_eq!(colors.len(), 6, "a distinct colour each");
        assert_eq!(seeded.tier_translations.len(), 12);

        let config = &seeded.configs[..];
        assert_eq!(config.len(), 1);
        let config = &config[0];
        assert_eq!(config.id, DEFAULT_RATING_CONFIG_ID);
        assert_eq!(
            (config.points_base, config.min_points, config.xp_level_base, config.xp_level_exponent),
            (10.0, 1, 50.0, 1.5)
        );
        assert_eq!((config.skill_alpha, config.skill_initial), (0.1, 0.4444));
        assert_eq!((config.strikes_to_ban, config.strike_window_days, config.ban_days), (2, 30, 14));
    }

    #[tokio::test]
    async fn seeding_again_keeps_what_admins_changed_deleted_and_renamed() {
        let (_dir, db) = migrated_sqlite().await;
        seed(&db).await.expect("seed");

        let kazan = cities::Entity::find()
            .filter(cities::Column::Slug.eq("kazan"))
            .one(&db)
            .await
            .expect("query")
            .expect("kazan");
        let mut edited = kazan.clone().into_active_model();
        edited.is_active = Set(false);
        edited.sort_order = Set(99);
        edited.update(&db).await.expect("deactivate kazan");
        let mut config = rating_config::Entity::find_by_id(DEFAULT_RATING_CONFIG_ID)
            .one(&db)
            .await
            .expect("query")
            .expect("config")
            .into_active_model();
        config.ban_days = Set(7);
        config.update(&db).await.expect("edit config");
        let mut renamed = cities::Entity::find()
            .filter(cities::Column::Slug.eq("moscow"))
            .one(&db)
            .await
            .expect("query")
            .expect("moscow")
            .into_active_model();
        renamed.slug = Set("moskva".to_owned());
        renamed.update(&db).await.expect("rename moscow");
        level_tiers::Entity::delete_many()
            .filter(level_tiers::Column::Key.eq("legend"))
            .exec(&db)
            .await
            .expect("delete the legend tier");
        let before = snapshot(&db).await;

        assert_eq!(seed(&db).await.expect("reseed"), SeedReport::default());
        assert_eq!(snapshot(&db).await, before);
    }
}
