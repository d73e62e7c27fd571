//! Search across the platform: tournaments by title, players by name or nickname, clubs by
//! name; at most 20 of each, never a phone.

use axum::extract::State;
use floor_entities::enums::UserStatus;
use floor_entities::{organizers, tournament_translations, tournaments, users};
use sea_orm::sea_query::{BinOper, Condition, Expr, ExprTrait, Func, LikeExpr, Query as SqlQuery, SimpleExpr};
use sea_orm::{ColumnTrait, DbBackend, EntityTrait, IntoSimpleExpr, QueryFilter, QueryOrder, QuerySelect};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::extract::{Json, MaybeAuthUser, Query};
use super::organizers::OrganizerView;
use super::tournaments::{TournamentView, tournament_views};
use super::validate::BLANK;
use super::views::{PublicPlayerView, public_player_views};
use crate::http::state::AppState;
use crate::infra::error::{AppError, AppResult, ErrorBody};

/// Each kind of result is cut at this many.
pub const SEARCH_LIMIT: u64 = 20;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(search))
}

#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct SearchQuery {
    /// 2 to 100 characters, at least 2 once trimmed; matched anywhere in a title, a name or a
    /// nickname.
    #[param(max_length = 100, pattern = "[^\\t\\n\\v\\f\\r ][\\s\\S]*[^\\t\\n\\v\\f\\r ]")]
    pub q: String,
}

#[derive(Serialize, ToSchema)]
pub struct SearchResults {
    pub tournaments: Vec<TournamentView>,
    pub players: Vec<PublicPlayerView>,
    pub clubs: Vec<OrganizerView>,
}

/// Whether `column` contains `needle` in any case, in every alphabet, on either database.
/// PostgreSQL: `LOWER(column) LIKE '%needle%'` (its `lower` folds every alphabet). SQLite's
/// `lower` folds ASCII only, so there the needle becomes a case-blind `GLOB` pattern instead:
/// "иван" finds "Иван" as it does on PostgreSQL.
fn contains(backend: DbBackend, column: impl IntoSimpleExpr, needle: &str) -> SimpleExpr {
    match backend {
        DbBackend::Sqlite => column.into_simple_expr().binary(BinOper::Custom("GLOB"), any_case_glob(needle)),
        _ => {
            let escaped: String = needle
                .to_lowercase()
                .chars()
                .flat_map(|c| if matches!(c, '%' | '_' | '\\') { vec!['\\', c] } else { vec![c] })
                .collect();
            Expr::expr(Func::lower(column.into_simple_expr())).like(LikeExpr::new(format!("%{escaped}%")).escape('\\'))
        }
    }
}

/// A SQLite `GLOB` pattern matching any text that contains `needle` whatever the case of its
/// letters: each letter with two cases becomes a class of both (`и` → `[иИ]`), the
/// pattern's own wildcards stand for themselves (`*` → `[*]`), and `*` on both ends.
fn any_case_glob(needle: &str) -> String {
    let mut pattern = String::from("*");
    for c in needle.chars() {
        match (single(c.to_lowercase()), single(c.to_uppercase())) {
            (Some(lower), Some(upper)) if lower != upper => {
                pattern.extend(['[', lower, upper, ']']);
            }
            _ if matches!(c, '*' | '?' | '[') => pattern.extend(['[', c, ']']),
            _ => pattern.push(c),
        }
    }
    pattern.push('*');
    pattern
}

/// The one character of a case mapping, unless it maps to several (`ß` → `SS`).
fn single(mut cased: impl Iterator<Item = char>) -> Option<char> {
    let first = cased.next()?;
    cased.next().is_none().then_some(first)
}

/// Tournaments, players and clubs matching `q`.
#[utoipa::path(get, path = "/search", tag = "tournaments", params(SearchQuery), security((), ("bearer" = [])),
    responses(
        (status = 200, body = SearchResults),
        (status = 400, description = "VALIDATION_ERROR: q too short or too long", body = ErrorBody),
    ))]
async fn search(
    State(app): State<AppState>,
    MaybeAuthUser(caller): MaybeAuthUser,
    Query(query): Query<SearchQuery>,
) -> AppResult<Json<SearchResults>> {
    let needle = query.q.trim_matches(BLANK);
    if needle.chars().count() < 2 || query.q.chars().count() > 100 {
        return Err(AppError::invalid_field("q", "must be 2 to 100 characters"));
    }
    let backend = app.reads.get_database_backend();
    let found = tournaments::Entity::find()
        .filter(
            tournaments::Column::Id.in_subquery(
                SqlQuery::select()
                    .column(tournament_translations::Column::TournamentId)
                    .from(tournament_translations::Entity)
                    .and_where(contains(backend, tournament_translations::Column::Title, needle))
                    .to_owned(),
            ),
        )
        .order_by_desc(tournaments::Column::StartsAt)
        .limit(SEARCH_LIMIT)
        .all(&app.reads)
        .await?;
    let people = users::Entity::find()
        .filter(users::Column::Status.eq(UserStatus::Active))
        .filter(Condition::any().add(contains(backend, users::Column::Name, needle)).add(contains(
            backend,
            users::Column::Nickname,
            needle,
        )))
        .order_by_asc(users::Column::Nickname)
        .limit(SEARCH_LIMIT)
        .all(&app.reads)
        .await?;
    let players = public_player_views(&app.reads, &people, caller.map(|user| user.id())).await?;
    let clubs = organizers::Entity::find()
        .filter(contains(backend, organizers::Column::Name, needle))
        .order_by_asc(organizers::Column::Name)
        .limit(SEARCH_LIMIT)
        .all(&app.reads)
        .await?;
    Ok(Json(SearchResults {
        tournaments: tournament_views(&app.reads, found).await?,
        players,
        clubs: clubs.into_iter().map(OrganizerView::from).collect(),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_cased_letter_matches_both_of_its_cases() {
        assert_eq!(any_case_glob("иван"), "*[иИ][вВ][аА][нН]*");
        assert_eq!(any_case_glob("Ace 7"), "*[aA][cC][eE] 7*");
    }

    #[test]
    fn the_globs_own_wildcards_stand_for_themselves() {
        assert_eq!(any_case_glob("a*b?[c]"), "*[aA][*][bB][?][[][cC]]*");
    }

    #[test]
    fn letters_without_a_one_letter_other_case_stay_as_they_are() {
        assert_eq!(any_case_glob("ß-1"), "*ß-1*");
    }
}
