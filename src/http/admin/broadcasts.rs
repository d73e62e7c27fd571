//! Broadcasts by platform staff: `POST /admin/push` sends one text to everyone, to a
//! tournament's players, to a city or to chosen accounts, through the notifier (journal
//! always, in the transaction of the audit record; push after commit where devices are
//! registered).

use std::collections::BTreeSet;

use axum::extract::State;
use floor_entities::enums::{RegistrationStatus, UserStatus};
use floor_entities::{cities, registrations, tournaments, users};
use sea_orm::sea_query::Query as SqlQuery;
use sea_orm::{ColumnTrait, ConnectionTrait, EntityTrait, PaginatorTrait, QueryFilter, QuerySelect, Select};
use serde::{Deserialize, Serialize};
use serde_json::json;
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;
use uuid::Uuid;

use crate::domain::audit;
use crate::domain::notifications::{Notice, NoticeKind, PushMessage};
use crate::http::extract::{Admin, Json, perm};
use crate::http::state::AppState;
use crate::http::validate::Problems;
use crate::infra::db::{self, IDS_PER_STATEMENT};
use crate::infra::error::{AppError, AppResult, ErrorBody};
use crate::values::Phone;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(send_broadcast))
}

/// Who a broadcast is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum PushTarget {
    /// Every active account.
    All,
    /// The accounts registered in `tournamentId`, in any status but `cancelled`.
    Tournament,
    /// The accounts whose city is `citySlug`.
    City,
    /// The accounts of `userIds` and of `phones` together.
    Users,
}

impl PushTarget {
    fn as_str(self) -> &'static str {
        match self {
            Self::All => "all",
            Self::Tournament => "tournament",
            Self::City => "city",
            Self::Users => "users",
        }
    }
}

#[derive(Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct NewBroadcast {
    pub target: PushTarget,
    /// Required with target `tournament`.
    pub tournament_id: Option<Uuid>,
    /// Required with target `city`; a city of the reference.
    pub city_slug: Option<String>,
    /// With target `users`: at most 1000; unknown ids are simply not reached.
    #[serde(default)]
    #[schema(max_items = 1000)]
    pub user_ids: Vec<Uuid>,
    /// With target `users`: at most 1000 phones (E.164, separators allowed); phones without
    /// an account are simply not reached.
    #[serde(default)]
    #[schema(max_items = 1000)]
    pub phones: Vec<String>,
    /// 1 to 100 characters.
    #[schema(
        max_length = 100,
        pattern = "^[\\t\\n\\v\\f\\r ]*[^\\x00-\\x20\\x7F][^\\x00-\\x1F\\x7F]*[\\t\\n\\v\\f\\r ]*$"
    )]
    pub title: String,
    /// 1 to 1000 characters.
    #[schema(
        max_length = 1000,
        pattern = "^[\\t\\n\\v\\f\\r ]*[^\\x00-\\x20\\x7F][^\\x00-\\x08\\x0B\\x0C\\x0E-\\x1F\\x7F]*[\\t\\n\\v\\f\\r ]*$"
    )]
    pub body: String,
}

#[derive(Serialize, ToSchema)]
pub struct BroadcastOutcome {
    /// Distinct accounts the notification was journaled for.
    pub targeted: usize,
    /// Accounts at least one of whose devices accepted the push.
    pub pushed: usize,
}

/// Most ids or phones one broadcast may list.
const MAX_LISTED: usize = 1000;

/// Sends a notification (kind `admin_custom`, payload `{title, body, target}`) to the
/// target's active accounts; banned accounts are never reached. The journal and an audit
/// record with the target and `targeted` commit in one transaction; the pushes go after
/// commit and their count (`pushed`) then completes the audit record.
#[utoipa::path(post, path = "/admin/push", tag = "admin", security(("bearer" = [])), request_body = NewBroadcast,
    responses(
        (status = 200, body = BroadcastOutcome),
        (status = 400, description = "VALIDATION_ERROR: a field the target needs is missing, an unknown city, a malformed phone, a bad title or body", body = ErrorBody),
        (status = 401, description = "UNAUTHORIZED", body = ErrorBody),
        (status = 403, description = "FORBIDDEN: needs push.send", body = ErrorBody),
        (status = 404, description = "NOT_FOUND: the tournament", body = ErrorBody),
    ))]
async fn send_broadcast(
    State(app): State<AppState>,
    admin: Admin<perm::PushSend>,
    Json(body): Json<NewBroadcast>,
) -> AppResult<Json<BroadcastOutcome>> {
    let mut problems = Problems::default();
    let title = problems.text("title", &body.title, 1, 100);
    let text = problems.multiline_text("body", &body.body, 1, 1000);
    let audience = Audience::of(&body, &mut problems, &app.db).await?;
    problems.into_result()?;
    if let Audience::Tournament(id) = &audience {
        tournaments::Entity::find_by_id(*id).one(&app.db).await?.ok_or_else(|| AppError::not_found("tournament"))?;
    }

    // The journal and its audit record commit together; the pushes (network calls that must
    // not hold the database's write lock) go after commit, and their count completes the
    // audit record then: `pushed` is null in it until they are done.
    let tx = db::begin_write(&app.db).await?;
    let recipients = audience.recipients(&tx).await?;
    let notice = Notice {
        kind: NoticeKind::AdminCustom,
        recipients,
        payload: json!({"title": title, "body": text, "target": body.target}),
        push: Some(PushMessage { title: title.clone(), body: text }),
        dedup_key: None,
    };
    let journaled = app.notifier.journal(&tx, notice).await?;
    let mut details = audit_details(&body, &title, journaled.len());
    let audit_id = audit::record(
        &tx,
        Some(admin.user.id()),
        "push.send",
        ("push", body.target.as_str().to_owned()),
        details.clone(),
    )
    .await?;
    tx.commit().await?;
    let pushed = app.notifier.push_journaled(&app.db, &journaled).await?;
    details["pushed"] = json!(pushed);
    audit::complete_details(&app.db, audit_id, details).await?;
    Ok(Json(BroadcastOutcome { targeted: journaled.len(), pushed }))
}

/// The audit record's details of a broadcast journaled for `targeted` accounts: the target
/// with the field it used, the title, and `pushed` null until the pushes are done.
fn audit_details(body: &NewBroadcast, title: &str, targeted: usize) -> serde_json::Value {
    json!({
        "target": body.target,
        "tournamentId": body.tournament_id.filter(|_| body.target == PushTarget::Tournament),
        "citySlug": body.city_slug.as_deref().filter(|_| body.target == PushTarget::City),
        "title": title,
        "targeted": targeted,
        "pushed": null,
    })
}

/// A validated target.
enum Audience {
    All,
    Tournament(Uuid),
    City(String),
    Listed { ids: Vec<Uuid>, phones: Vec<Phone> },
}

impl Audience {
    /// The audience `body` names; what is missing or wrong in it goes to `problems` (the
    /// audience then stands in for none), a city is checked against the reference.
    async fn of(body: &NewBroadcast, problems: &mut Problems, conn: &impl ConnectionTrait) -> AppResult<Self> {
        Ok(match body.target {
            PushTarget::All => Self::All,
            PushTarget::Tournament => match body.tournament_id {
                Some(id) => Self::Tournament(id),
                None => {
                    problems.add("tournamentId", "is required with target tournament");
                    Self::All
                }
            },
            PushTarget::City => match body.city_slug.as_deref().map(str::trim) {
                Some(slug) if !slug.is_empty() => {
                    let known = cities::Entity::find().filter(cities::Column::Slug.eq(slug)).count(conn).await? > 0;
                    if !known {
                        problems.add("citySlug", "is not a city of the reference");
                    }
                    Self::City(slug.to_owned())
                }
                _ => {
                    problems.add("citySlug", "is required with target city");
                    Self::All
                }
            },
            PushTarget::Users => Self::listed(body, problems),
        })
    }

    /// The accounts `body` lists by id and by phone, at most [`MAX_LISTED`] of each.
    fn listed(body: &NewBroadcast, problems: &mut Problems) -> Self {
        if body.user_ids.is_empty() && body.phones.is_empty() {
            problems.add("userIds", "userIds or phones must list someone with target users");
        }
        if body.user_ids.len() > MAX_LISTED {
            problems.add("userIds", format!("at most {MAX_LISTED}"));
        }
        if body.phones.len() > MAX_LISTED {
            problems.add("phones", format!("at most {MAX_LISTED}"));
        }
        let phones: Vec<Phone> = body
            .phones
            .iter()
            .enumerate()
            .filter_map(|(index, phone)| problems.phone(&format!("phones[{index}]"), phone))
            .collect();
        Self::Listed { ids: body.user_ids.clone(), phones }
    }

    /// The active accounts this audience names, each once, in id order.
    async fn recipients(&self, conn: &impl ConnectionTrait) -> AppResult<Vec<Uuid>> {
        let ids: BTreeSet<Uuid> = match self {
            Self::All => active_ids(conn, active_users()).await?,
            Self::Tournament(tournament_id) => {
                let registered = SqlQuery::select()
                    .column(registrations::Column::UserId)
                    .from(registrations::Entity)
                    .and_where(registrations::Column::TournamentId.eq(*tournament_id))
                    .and_where(registrations::Column::UserId.is_not_null())
                    .and_where(registrations::Column::Status.ne(RegistrationStatus::Cancelled))
                    .to_owned();
                active_ids(conn, active_users().filter(users::Column::Id.in_subquery(registered))).await?
            }
            Self::City(slug) => {
                active_ids(conn, active_users().filter(users::Column::CitySlug.eq(slug.as_str()))).await?
            }
            Self::Listed { ids, phones } => {
                let mut found = BTreeSet::new();
                for chunk in ids.chunks(IDS_PER_STATEMENT) {
                    found.extend(
                        active_ids(conn, active_users().filter(users::Column::Id.is_in(chunk.iter().copied()))).await?,
                    );
                }
                for chunk in phones.chunks(IDS_PER_STATEMENT) {
                    let phones = chunk.iter().map(Phone::as_str);
                    found.extend(active_ids(conn, active_users().filter(users::Column::Phone.is_in(phones))).await?);
                }
                found
            }
        };
        Ok(ids.into_iter().collect())
    }
}

/// Accounts that may be reached: banned ones never are.
fn active_users() -> Select<users::Entity> {
    users::Entity::find().filter(users::Column::Status.eq(UserStatus::Active))
}

async fn active_ids(conn: &impl ConnectionTrait, query: Select<users::Entity>) -> AppResult<BTreeSet<Uuid>> {
    let ids: Vec<Uuid> = query.select_only().column(users::Column::Id).into_tuple().all(conn).await?;
    Ok(ids.into_iter().collect())
}
