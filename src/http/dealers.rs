//! Dealers: the public catalogue of everyone who deals in some club (never with a phone),
//! the dealer's own showcase profile, and the dealer's assignments to tournaments.

use std::collections::BTreeMap;

use axum::extract::State;
use chrono::{DateTime, Utc};
use floor_entities::enums::MemberRole;
use floor_entities::{dealer_profiles, organizer_members, organizers, tournament_dealers, tournaments, users};
use sea_orm::{ActiveModelTrait, ColumnTrait, ConnectionTrait, EntityTrait, QueryFilter, QueryOrder, Set};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;
use uuid::Uuid;

use super::extract::{AuthUser, Json, Path, double_option};
use super::tournaments::{TournamentView, tournament_views};
use super::validate::{Problems, optional_multiline_text, url};
use super::views::ItemList;
use crate::domain::accounts::hold_account;
use crate::domain::clubs::{ensure_dealer_profile, is_dealer};
use crate::http::state::AppState;
use crate::infra::db::{self, find_where_in};
use crate::infra::error::{AppError, AppResult, ErrorBody};

/// The range of `experienceYears`.
const EXPERIENCE_YEARS: std::ops::RangeInclusive<i32> = 0..=70;
/// The longest `bio`, in characters.
const BIO_MAX_CHARS: usize = 2000;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(list_dealers))
        .routes(routes!(update_my_dealer_profile))
        .routes(routes!(get_dealer))
        .routes(routes!(list_my_dealer_assignments))
}

/// A club a dealer deals for.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct DealerClubView {
    pub organizer_id: Uuid,
    pub organizer_name: String,
}

/// A dealer as the public catalogue shows them: the showcase profile, never a phone.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct DealerView {
    pub user_id: Uuid,
    pub name: Option<String>,
    pub nickname: Option<String>,
    pub photo_url: Option<String>,
    pub bio: Option<String>,
    pub experience_years: Option<i32>,
    /// Tournaments the dealer has been assigned to.
    pub games_dealt: i32,
    /// The clubs the user is a dealer of, in the order they joined.
    pub clubs: Vec<DealerClubView>,
}

/// Changes to the caller's dealer profile: an absent field stays, `null` clears it.
#[derive(Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct DealerProfileUpdate {
    /// An http(s) address of at most 2048 characters, usually from `POST /uploads`.
    #[serde(default, deserialize_with = "double_option")]
    #[schema(value_type = Option<String>, max_length = 2048, pattern = "^(https?://[!-.0-Z^-~][!-Z^-~]*|/files/[0-9a-f-]{1,64}\\.(png|jpg|webp))$")]
    pub photo_url: Option<Option<String>>,
    /// 1 to 2000 characters.
    #[serde(default, deserialize_with = "double_option")]
    #[schema(value_type = Option<String>, max_length = 2000, pattern = "^[\\t\\n\\v\\f\\r ]*[^\\x00-\\x20\\x7F][^\\x00-\\x08\\x0B\\x0C\\x0E-\\x1F\\x7F]*[\\t\\n\\v\\f\\r ]*$")]
    pub bio: Option<Option<String>>,
    /// Whole years of dealing experience, 0 to 70.
    #[serde(default, deserialize_with = "double_option")]
    #[schema(value_type = Option<i32>, minimum = 0, maximum = 70)]
    pub experience_years: Option<Option<i32>>,
}

/// One of the caller's assignments as a dealer.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct DealerAssignmentView {
    /// The tournament card: id, start, status, titles by locale and the rest.
    pub tournament: TournamentView,
    /// The table to deal at; `null` until the owner sets it.
    pub table_no: Option<i32>,
    pub assigned_at: DateTime<Utc>,
}

/// Every dealer of every club, by name.
#[utoipa::path(get, path = "/dealers", tag = "dealers",
    responses(
        (status = 200, body = ItemList<DealerView>),
        (status = 500, description = "INTERNAL_ERROR", body = ErrorBody),
    ))]
async fn list_dealers(State(app): State<AppState>) -> AppResult<Json<ItemList<DealerView>>> {
    Ok(Json(ItemList::new(dealer_views(&app.reads, None).await?)))
}

/// One dealer's showcase profile.
#[utoipa::path(get, path = "/dealers/{userId}", tag = "dealers",
    params(("userId" = Uuid, Path, description = "The dealer's user id")),
    responses(
        (status = 200, body = DealerView),
        (status = 400, description = "VALIDATION_ERROR: the id is not a UUID", body = ErrorBody),
        (status = 404, description = "NOT_FOUND: no dealer has this id", body = ErrorBody),
    ))]
async fn get_dealer(State(app): State<AppState>, Path(user_id): Path<Uuid>) -> AppResult<Json<DealerView>> {
    Ok(Json(dealer_view(&app.reads, user_id).await?))
}

/// Edits the caller's showcase profile; only a dealer of some club may.
#[utoipa::path(patch, path = "/dealers/me", tag = "dealers", security(("bearer" = [])), request_body = DealerProfileUpdate,
    responses(
        (status = 200, body = DealerView),
        (status = 400, description = "VALIDATION_ERROR", body = ErrorBody),
        (status = 401, description = "UNAUTHORIZED", body = ErrorBody),
        (status = 403, description = "FORBIDDEN: the caller is no club's dealer", body = ErrorBody),
    ))]
async fn update_my_dealer_profile(
    State(app): State<AppState>,
    user: AuthUser,
    Json(body): Json<DealerProfileUpdate>,
) -> AppResult<Json<DealerView>> {
    if !is_dealer(&app.db, user.id()).await? {
        return Err(AppError::forbidden());
    }
    let mut problems = Problems::default();
    let photo_url = body.photo_url.map(|photo| photo.map(|link| url(&mut problems, "photoUrl", &link)));
    let bio = body.bio.map(|bio| optional_multiline_text(&mut problems, "bio", bio, 1, BIO_MAX_CHARS));
    if let Some(Some(years)) = body.experience_years
        && !EXPERIENCE_YEARS.contains(&years)
    {
        problems.add("experienceYears", format!("must be {} to {}", EXPERIENCE_YEARS.start(), EXPERIENCE_YEARS.end()));
    }
    problems.into_result()?;

    let tx = db::begin_write(&app.db).await?;
    hold_account(&tx, user.id()).await?;
    ensure_dealer_profile(&tx, user.id()).await?;
    let profile = dealer_profiles::Entity::find_by_id(user.id())
        .one(&tx)
        .await?
        .ok_or_else(|| AppError::not_found("dealer profile"))?;
    let mut active: dealer_profiles::ActiveModel = profile.into();
    if let Some(photo_url) = photo_url {
        active.photo_url = Set(photo_url);
    }
    if let Some(bio) = bio {
        active.bio = Set(bio);
    }
    if let Some(years) = body.experience_years {
        active.experience_years = Set(years);
    }
    active.updated_at = Set(Utc::now());
    active.update(&tx).await?;
    tx.commit().await?;
    Ok(Json(dealer_view(&app.db, user.id()).await?))
}

/// The caller's assignments as a dealer, by tournament start.
#[utoipa::path(get, path = "/me/dealer-assignments", tag = "dealers", security(("bearer" = [])),
    responses(
        (status = 200, body = ItemList<DealerAssignmentView>),
        (status = 401, description = "UNAUTHORIZED", body = ErrorBody),
    ))]
async fn list_my_dealer_assignments(
    State(app): State<AppState>,
    user: AuthUser,
) -> AppResult<Json<ItemList<DealerAssignmentView>>> {
    let assignments = tournament_dealers::Entity::find()
        .filter(tournament_dealers::Column::DealerUserId.eq(user.id()))
        .find_also_related(tournaments::Entity)
        .order_by_asc(tournaments::Column::StartsAt)
        .order_by_asc(tournaments::Column::Id)
        .all(&app.reads)
        .await?;
    let (assignments, models): (Vec<_>, Vec<_>) =
        assignments.into_iter().filter_map(|(assignment, tournament)| Some((assignment, tournament?))).unzip();
    let cards = tournament_views(&app.reads, models).await?;
    let items = assignments
        .into_iter()
        .zip(cards)
        .map(|(assignment, tournament)| DealerAssignmentView {
            tournament,
            table_no: assignment.table_no,
            assigned_at: assignment.created_at,
        })
        .collect();
    Ok(Json(ItemList::new(items)))
}

/// The catalogue row of one dealer; `404` for a user who deals nowhere.
async fn dealer_view(conn: &impl ConnectionTrait, user_id: Uuid) -> AppResult<DealerView> {
    dealer_views(conn, Some(user_id)).await?.pop().ok_or_else(|| AppError::not_found("dealer"))
}

/// The catalogue rows of every dealer, or of the one dealer `only`, ordered by name (then
/// id). A user counts as a dealer while they hold a dealer membership in some club.
async fn dealer_views(conn: &impl ConnectionTrait, only: Option<Uuid>) -> AppResult<Vec<DealerView>> {
    let mut memberships = organizer_members::Entity::find()
        .filter(organizer_members::Column::Role.eq(MemberRole::Dealer))
        .order_by_asc(organizer_members::Column::CreatedAt);
    if let Some(user_id) = only {
        memberships = memberships.filter(organizer_members::Column::UserId.eq(user_id));
    }
    let memberships = memberships.find_also_related(organizers::Entity).all(conn).await?;
    let mut clubs: BTreeMap<Uuid, Vec<DealerClubView>> = BTreeMap::new();
    for (member, organizer) in memberships {
        if let Some(organizer) = organizer {
            clubs
                .entry(member.user_id)
                .or_default()
                .push(DealerClubView { organizer_id: organizer.id, organizer_name: organizer.name });
        }
    }
    if clubs.is_empty() {
        return Ok(Vec::new());
    }
    let user_ids: Vec<Uuid> = clubs.keys().copied().collect();
    let users = find_where_in::<users::Entity, _>(conn, users::Column::Id, &user_ids).await?;
    let mut profiles: BTreeMap<Uuid, dealer_profiles::Model> =
        find_where_in::<dealer_profiles::Entity, _>(conn, dealer_profiles::Column::UserId, &user_ids)
            .await?
            .into_iter()
            .map(|profile| (profile.user_id, profile))
            .collect();
    let mut views: Vec<DealerView> = users
        .into_iter()
        .map(|user| {
            let profile = profiles.remove(&user.id);
            DealerView {
                user_id: user.id,
                clubs: clubs.remove(&user.id).unwrap_or_default(),
                name: user.name,
                nickname: user.nickname,
                photo_url: profile.as_ref().and_then(|p| p.photo_url.clone()),
                bio: profile.as_ref().and_then(|p| p.bio.clone()),
                experience_years: profile.as_ref().and_then(|p| p.experience_years),
                games_dealt: profile.map_or(0, |p| p.games_dealt),
            }
        })
        .collect();
    views.sort_by(|a, b| {
        let key = |view: &DealerView| (view.name.is_none(), view.name.as_ref().map(|name| name.to_lowercase()));
        key(a).cmp(&key(b)).then(a.user_id.cmp(&b.user_id))
    });
    Ok(views)
}
