//! Response shapes shared by several resources, and the reads that fill them.

use std::collections::{HashMap, HashSet};

use chrono::{DateTime, Utc};
use floor_actors::rules::rating::{displayed_skill, tier_for_level};
use floor_entities::enums::{AdminRole, MemberRole, UserStatus};
use floor_entities::{level_tiers, player_profiles, users};
use sea_orm::{ColumnTrait, ConnectionTrait, EntityTrait, QueryFilter};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use uuid::Uuid;

use crate::domain::clubs::memberships_of;
use crate::domain::players::follows;
use crate::domain::seed::DEFAULT_SKILL_INITIAL;
use crate::infra::db::IDS_PER_STATEMENT;
use crate::infra::error::AppResult;

/// A player's profile: identity and rating. `skill` is the displayed value (1.0 to 10.0).
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct PlayerProfileView {
    pub user_id: Uuid,
    pub name: Option<String>,
    pub nickname: Option<String>,
    pub avatar_url: Option<String>,
    pub city_slug: Option<String>,
    pub xp: i64,
    pub level: i32,
    /// Key of the level tier (`fish` … `legend`).
    pub tier: Option<String>,
    pub skill: f64,
    pub games_played: i32,
    pub wins: i32,
    /// Registration is closed to the player until then.
    pub ban_until: Option<DateTime<Utc>>,
    /// When the player consented to personal data processing; null without consent.
    pub consent_accepted_at: Option<DateTime<Utc>>,
    /// The version of the consent text they accepted (`CONSENT_VERSION`); null without consent.
    pub consent_version: Option<String>,
}

/// A club the user belongs to.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct MembershipView {
    pub organizer_id: Uuid,
    pub organizer_name: String,
    pub role: MemberRole,
}

/// The signed-in user as `/auth/me` and sign-in return it.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct UserView {
    pub id: Uuid,
    pub phone: String,
    pub name: Option<String>,
    pub nickname: Option<String>,
    pub avatar_url: Option<String>,
    pub city_slug: Option<String>,
    pub admin_role: Option<AdminRole>,
    pub status: UserStatus,
    pub consent_accepted: bool,
    pub created_at: DateTime<Utc>,
    pub memberships: Vec<MembershipView>,
    /// Name, nickname, city and consent are all filled in: the player app's gate.
    pub profile_complete: bool,
    pub profile: PlayerProfileView,
}

/// Whether the player app's first-sign-in form is done.
pub fn profile_complete(user: &users::Model) -> bool {
    let filled = |value: &Option<String>| value.as_deref().is_some_and(|text| !text.trim().is_empty());
    filled(&user.name) && filled(&user.nickname) && user.city_slug.is_some() && user.consent_accepted_at.is_some()
}

pub async fn user_view(conn: &impl ConnectionTrait, user: users::Model) -> AppResult<UserView> {
    let memberships = memberships_of(conn, user.id)
        .await?
        .into_iter()
        .map(|(member, organizer)| MembershipView {
            organizer_id: organizer.id,
            organizer_name: organizer.name,
            role: member.role,
        })
        .collect();
    let profile = player_profile_view(conn, &user).await?;
    Ok(UserView {
        id: user.id,
        profile_complete: profile_complete(&user),
        consent_accepted: user.consent_accepted_at.is_some(),
        phone: user.phone,
        name: user.name,
        nickname: user.nickname,
        avatar_url: user.avatar_url,
        city_slug: user.city_slug,
        admin_role: user.admin_role,
        status: user.status,
        created_at: user.created_at,
        memberships,
        profile,
    })
}

pub async fn player_profile_view(conn: &impl ConnectionTrait, user: &users::Model) -> AppResult<PlayerProfileView> {
    let profile = player_profiles::Entity::find_by_id(user.id).one(conn).await?;
    let tiers = level_tiers::Entity::find().all(conn).await?;
    Ok(profile_view(user, profile.as_ref(), &tiers))
}

/// The profile of `user` from rows already read: their profile row and every tier.
fn profile_view(
    user: &users::Model,
    profile: Option<&player_profiles::Model>,
    tiers: &[level_tiers::Model],
) -> PlayerProfileView {
    let (xp, level, skill, games_played, wins, ban_until) = match profile {
        Some(p) => (p.xp, p.level, p.skill, p.games_played, p.wins, p.ban_until),
        // Every account is created with a profile; this covers a row lost to a manual edit.
        None => (0, 1, DEFAULT_SKILL_INITIAL, 0, 0, None),
    };
    let tier = tier_for_level(tiers.iter().map(|tier| (tier.key.as_str(), tier.min_level)), level).map(str::to_owned);
    PlayerProfileView {
        user_id: user.id,
        name: user.name.clone(),
        nickname: user.nickname.clone(),
        avatar_url: user.avatar_url.clone(),
        city_slug: user.city_slug.clone(),
        xp,
        level,
        tier,
        skill: displayed_skill(skill),
        games_played,
        wins,
        ban_until,
        consent_accepted_at: user.consent_accepted_at,
        consent_version: user.consent_version.clone(),
    }
}

/// The profiles of `users`, in their order: a fixed number of queries whatever their number.
pub async fn player_profile_views(
    conn: &impl ConnectionTrait,
    users: &[users::Model],
) -> AppResult<Vec<PlayerProfileView>> {
    let ids: Vec<Uuid> = users.iter().map(|user| user.id).collect();
    let mut profiles: HashMap<Uuid, player_profiles::Model> = HashMap::new();
    for chunk in ids.chunks(IDS_PER_STATEMENT) {
        let rows = player_profiles::Entity::find()
            .filter(player_profiles::Column::UserId.is_in(chunk.iter().copied()))
            .all(conn)
            .await?;
        profiles.extend(rows.into_iter().map(|profile| (profile.user_id, profile)));
    }
    let tiers = level_tiers::Entity::find().all(conn).await?;
    Ok(users.iter().map(|user| profile_view(user, profiles.get(&user.id), &tiers)).collect())
}

/// A player as anyone may see them: no phone, no ban, no xp.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct PublicPlayerView {
    pub user_id: Uuid,
    pub name: Option<String>,
    pub nickname: Option<String>,
    pub avatar_url: Option<String>,
    pub city_slug: Option<String>,
    pub level: i32,
    /// Key of the level tier (`fish` … `legend`).
    pub tier: Option<String>,
    /// Displayed skill, 1.0 to 10.0.
    pub skill: f64,
    pub games_played: i32,
    pub wins: i32,
    pub followers_count: i64,
    /// Whether the caller follows this player; `false` for an anonymous caller.
    pub followed_by_me: bool,
}

/// Public cards of `users`, in their order, as `viewer` (if signed in) sees them. A fixed
/// number of queries whatever the number of users.
pub async fn public_player_views(
    conn: &impl ConnectionTrait,
    users: &[users::Model],
    viewer: Option<Uuid>,
) -> AppResult<Vec<PublicPlayerView>> {
    let ids: Vec<Uuid> = users.iter().map(|user| user.id).collect();
    let profiles = player_profile_views(conn, users).await?;
    let counts = follows::follower_counts(conn, &ids).await?;
    let followed = match viewer {
        Some(viewer) => follows::followed_among(conn, viewer, &ids).await?,
        None => HashSet::new(),
    };
    Ok(users
        .iter()
        .zip(profiles)
        .map(|(user, profile)| PublicPlayerView {
            user_id: profile.user_id,
            name: profile.name,
            nickname: profile.nickname,
            avatar_url: profile.avatar_url,
            city_slug: profile.city_slug,
            level: profile.level,
            tier: profile.tier,
            skill: profile.skill,
            games_played: profile.games_played,
            wins: profile.wins,
            followers_count: counts.get(&user.id).copied().unwrap_or(0),
            followed_by_me: followed.contains(&user.id),
        })
        .collect())
}

/// Localised data: `{"ru": {...}, "en": {...}}`; a locale without a translation is `null`
/// (and may be left out of a request).
///
/// It is read from a JSON object only: serde's derive would also take an array of the fields
/// in order, which the schema forbids.
#[derive(Clone, Serialize, ToSchema)]
pub struct Localized<T> {
    #[schema(schema_with = nullable::<T>)]
    pub ru: Option<T>,
    #[schema(schema_with = nullable::<T>)]
    pub en: Option<T>,
}

/// `T` or `null`: what a locale of [`Localized`] holds (the derive drops the `null` of a
/// generic `Option`).
fn nullable<T: ToSchema>() -> utoipa::openapi::Schema {
    use utoipa::openapi::Ref;
    use utoipa::openapi::schema::{ObjectBuilder, OneOfBuilder, Type};
    OneOfBuilder::new().item(Ref::from_schema_name(T::name())).item(ObjectBuilder::new().schema_type(Type::Null)).into()
}

/// The schema of a [`Localized`] a request must give in both locales (what a create needs).
pub fn both_locales<T: ToSchema>() -> utoipa::openapi::Schema {
    use utoipa::openapi::Ref;
    use utoipa::openapi::schema::{ObjectBuilder, Type};
    ObjectBuilder::new()
        .schema_type(Type::Object)
        .description(Some("Both `ru` and `en`."))
        .property("ru", Ref::from_schema_name(T::name()))
        .property("en", Ref::from_schema_name(T::name()))
        .required("ru")
        .required("en")
        .into()
}

/// The schema of a [`Localized`] a request must give in one locale at least; `null` or
/// absent leaves a locale out.
pub fn some_locale<T: ToSchema>() -> utoipa::openapi::Schema {
    use utoipa::openapi::schema::{AllOfBuilder, AnyOfBuilder, ObjectBuilder, Type};
    let given = |locale: &str| {
        ObjectBuilder::new().property(locale, ObjectBuilder::new().schema_type(Type::Object)).required(locale)
    };
    AllOfBuilder::new()
        .description(Some("`ru`, `en` or both; `null` leaves a locale out."))
        .item(
            ObjectBuilder::new()
                .schema_type(Type::Object)
                .property("ru", nullable::<T>())
                .property("en", nullable::<T>()),
        )
        .item(AnyOfBuilder::new().item(given("ru")).item(given("en")))
        .into()
}

/// The locales of an object; other keys are ignored, as in any body.
/// Read as a map of locales rather than through a text of its own, so an error inside a
/// locale keeps its path (`translations.en.title`, not `translations`) and each locale is read
/// as the rest of the document is (from an object only, in a body). Other locales are ignored.
impl<'de, T: Deserialize<'de>> Deserialize<'de> for Localized<T> {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Locales<T>(std::marker::PhantomData<T>);

        impl<'de, T: Deserialize<'de>> serde::de::Visitor<'de> for Locales<T> {
            type Value = Localized<T>;

            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("an object of translations by locale (ru, en)")
            }

            fn visit_map<A: serde::de::MapAccess<'de>>(self, mut locales: A) -> Result<Self::Value, A::Error> {
                let mut localized = Localized::default();
                while let Some(locale) = locales.next_key::<String>()? {
                    match locale.as_str() {
                        "ru" => localized.ru = locales.next_value()?,
                        "en" => localized.en = locales.next_value()?,
                        _ => {
                            locales.next_value::<serde::de::IgnoredAny>()?;
                        }
                    }
                }
                Ok(localized)
            }
        }

        deserializer.deserialize_map(Locales(std::marker::PhantomData))
    }
}

impl<T> Default for Localized<T> {
    fn default() -> Self {
        Self { ru: None, en: None }
    }
}

impl<T> Localized<T> {
    /// Files `value` under `locale`; a locale other than `ru` and `en` is ignored.
    pub fn set(&mut self, locale: &str, value: T) {
        match locale {
            "ru" => self.ru = Some(value),
            "en" => self.en = Some(value),
            _ => {}
        }
    }

    /// The translations present, by locale.
    pub fn present(self) -> Vec<(&'static str, T)> {
        [("ru", self.ru), ("en", self.en)]
            .into_iter()
            .filter_map(|(locale, value)| value.map(|v| (locale, v)))
            .collect()
    }
}

/// Every list leaves as `{"items": [...]}`, so fields can be added beside it later.
#[derive(Serialize, ToSchema)]
pub struct ItemList<T> {
    pub items: Vec<T>,
}

impl<T> ItemList<T> {
    pub fn new(items: Vec<T>) -> Self {
        Self { items }
    }
}
