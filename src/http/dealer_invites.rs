//! Dealer invitations: an owner invites a phone and receives a one-time code to pass on (the
//! service never delivers it); the person with that phone claims it and joins the club as a
//! dealer.

use axum::extract::State;
use axum::http::StatusCode;
use chrono::{DateTime, Duration, Utc};
use floor_entities::enums::MemberRole;
use floor_entities::{dealer_invites, organizers};
use sea_orm::sea_query::Expr;
use sea_orm::{ActiveModelTrait, ColumnTrait, EntityTrait, QueryFilter, QueryOrder, Set};
use serde::{Deserialize, Serialize};
use serde_json::json;
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;
use uuid::Uuid;

use super::extract::{AuthUser, Json, OrganizerAccess, club};
use super::organizers::MyMembershipView;
use super::validate::Problems;
use super::views::ItemList;
use crate::domain::accounts::hold_account;
use crate::domain::audit;
use crate::domain::auth::tokens::sha256_hex;
use crate::domain::clubs::{ensure_dealer_profile, find_membership, insert_membership, lock_members};
use crate::http::state::AppState;
use crate::infra::db;
use crate::infra::error::{AppError, AppResult, ErrorBody, ErrorCode};

/// How long an invite code can be claimed.
pub const DEALER_INVITE_TTL: Duration = Duration::days(7);
/// Letters and digits that cannot be mistaken for one another when read aloud or copied
/// by hand (no 0/O, 1/I/L).
const CODE_ALPHABET: &[u8] = b"ABCDEFGHJKMNPQRSTUVWXYZ23456789";
const CODE_LENGTH: usize = 8;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(list_dealer_invites, create_dealer_invite)).routes(routes!(claim_dealer_invite))
}

/// Where an invite stands, derived from its stamps and the clock.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum InviteStatus {
    /// Can still be claimed.
    Pending,
    /// Spent: the invited person joined.
    Claimed,
    /// Not claimed in time.
    Expired,
}

impl InviteStatus {
    fn of(invite: &dealer_invites::Model, now: DateTime<Utc>) -> Self {
        if invite.claimed_at.is_some() {
            Self::Claimed
        } else if invite.expires_at <= now {
            Self::Expired
        } else {
            Self::Pending
        }
    }
}

/// An invite as the club sees it later: never with its code.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct DealerInviteView {
    pub id: Uuid,
    pub phone: String,
    pub status: InviteStatus,
    pub expires_at: DateTime<Utc>,
    pub claimed_at: Option<DateTime<Utc>>,
    pub claimed_by_user_id: Option<Uuid>,
    pub created_at: DateTime<Utc>,
}

impl DealerInviteView {
    fn new(invite: dealer_invites::Model, now: DateTime<Utc>) -> Self {
        Self {
            status: InviteStatus::of(&invite, now),
            id: invite.id,
            phone: invite.phone,
            expires_at: invite.expires_at,
            claimed_at: invite.claimed_at,
            claimed_by_user_id: invite.claimed_by_user_id,
            created_at: invite.created_at,
        }
    }
}

/// A new invite with its one-time code: the only time the code is ever shown.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct CreatedDealerInvite {
    pub id: Uuid,
    pub phone: String,
    /// 8 characters from `ABCDEFGHJKMNPQRSTUVWXYZ23456789`; single use. The club passes it on.
    pub code: String,
    pub expires_at: DateTime<Utc>,
}

#[derive(Deserialize, ToSchema)]
pub struct NewDealerInvite {
    /// Only the signed-in user with this phone can claim the invite.
    #[schema(pattern = "^[ ()\\t\u{a0}-]*\\+[ ()\\t\u{a0}-]*[1-9]([ ()\\t\u{a0}-]*[0-9]){0,14}[ ()\\t\u{a0}-]*$")]
    pub phone: String,
}

#[derive(Deserialize, ToSchema)]
pub struct InviteClaim {
    /// The code from the invite; case, spaces and dashes do not matter.
    #[schema(max_length = 64, pattern = "[^\\s-]")]
    pub code: String,
}

/// The club's invites, newest first, each with its status; codes are never shown again.
#[utoipa::path(get, path = "/organizers/{id}/dealer-invites", tag = "clubs", security(("bearer" = [])),
    params(("id" = Uuid, Path, description = "The club")),
    responses(
        (status = 200, body = ItemList<DealerInviteView>),
        (status = 400, description = "VALIDATION_ERROR: the id is not a UUID", body = ErrorBody),
        (status = 401, description = "UNAUTHORIZED", body = ErrorBody),
        (status = 403, description = "FORBIDDEN: needs club:owner", body = ErrorBody),
        (status = 404, description = "NOT_FOUND: no such club", body = ErrorBody),
    ))]
async fn list_dealer_invites(
    State(app): State<AppState>,
    access: OrganizerAccess<club::Owner>,
) -> AppResult<Json<ItemList<DealerInviteView>>> {
    let invites = dealer_invites::Entity::find()
        .filter(dealer_invites::Column::OrganizerId.eq(access.organizer.id))
        .order_by_desc(dealer_invites::Column::CreatedAt)
        .order_by_desc(dealer_invites::Column::Id)
        .all(&app.reads)
        .await?;
    let now = Utc::now();
    Ok(Json(ItemList::new(invites.into_iter().map(|invite| DealerInviteView::new(invite, now)).collect())))
}

/// Invites the person with this phone to deal for the club. The answer carries the one-time
/// code (valid 7 days, single use); only its SHA-256 is stored.
#[utoipa::path(post, path = "/organizers/{id}/dealer-invites", tag = "clubs", security(("bearer" = [])),
    params(("id" = Uuid, Path, description = "The club")), request_body = NewDealerInvite,
    responses(
        (status = 201, body = CreatedDealerInvite),
        (status = 400, description = "VALIDATION_ERROR", body = ErrorBody),
        (status = 401, description = "UNAUTHORIZED", body = ErrorBody),
        (status = 403, description = "FORBIDDEN: needs club:owner", body = ErrorBody),
        (status = 404, description = "NOT_FOUND: no such club", body = ErrorBody),
    ))]
async fn create_dealer_invite(
    State(app): State<AppState>,
    access: OrganizerAccess<club::Owner>,
    Json(body): Json<NewDealerInvite>,
) -> AppResult<(StatusCode, Json<CreatedDealerInvite>)> {
    let mut problems = Problems::default();
    let phone = problems.phone("phone", &body.phone);
    problems.into_result()?;
    let phone = phone.ok_or_else(|| AppError::invalid_field("phone", "is not a phone"))?;

    let code = new_invite_code();
    let now = Utc::now();
    let tx = db::begin_write(&app.db).await?;
    let invite = dealer_invites::ActiveModel {
        id: Set(Uuid::now_v7()),
        organizer_id: Set(access.organizer.id),
        phone: Set(phone.to_string()),
        code_hash: Set(sha256_hex(&code)),
        expires_at: Set(now + DEALER_INVITE_TTL),
        claimed_at: Set(None),
        claimed_by_user_id: Set(None),
        created_by_user_id: Set(Some(access.user.id())),
        created_at: Set(now),
    }
    .insert(&tx)
    .await?;
    audit::record(
        &tx,
        Some(access.user.id()),
        "dealer_invite.create",
        (audit::DEALER_INVITE, invite.id.to_string()),
        json!({"organizerId": invite.organizer_id, "phone": invite.phone}),
    )
    .await?;
    tx.commit().await?;
    Ok((
        StatusCode::CREATED,
        Json(CreatedDealerInvite { id: invite.id, phone: invite.phone, code, expires_at: invite.expires_at }),
    ))
}

/// Claims an invite: the caller joins its club as a dealer (`201`) and gets a dealer profile
/// if they had none. A caller already in the club keeps their role (`200`; owner and td are
/// stronger than dealer); the invite is spent all the same. Unknown, expired and spent codes are alike
/// `404`; of two concurrent claims exactly one succeeds.
#[utoipa::path(post, path = "/dealer-invites/claim", tag = "clubs", security(("bearer" = [])),
    request_body = InviteClaim,
    responses(
        (status = 201, description = "the caller's new dealer membership", body = MyMembershipView),
        (status = 200, description = "the caller was already a member: the membership as it stays", body = MyMembershipView),
        (status = 400, description = "VALIDATION_ERROR", body = ErrorBody),
        (status = 401, description = "UNAUTHORIZED", body = ErrorBody),
        (status = 403, description = "FORBIDDEN: the invite is for another phone", body = ErrorBody),
        (status = 404, description = "NOT_FOUND: unknown, expired or already claimed code", body = ErrorBody),
    ))]
async fn claim_dealer_invite(
    State(app): State<AppState>,
    AuthUser(user): AuthUser,
    Json(body): Json<InviteClaim>,
) -> AppResult<(StatusCode, Json<MyMembershipView>)> {
    let code = normalize_code(&body.code);
    if code.is_empty() || code.len() > 64 {
        return Err(AppError::invalid_field("code", "must be the invite's code"));
    }
    let now = Utc::now();
    let tx = db::begin_write(&app.db).await?;
    // The account before the invitation and the club's staff, as a deletion takes them.
    hold_account(&tx, user.id).await?;
    let invite = dealer_invites::Entity::find()
        .filter(dealer_invites::Column::CodeHash.eq(sha256_hex(&code)))
        .one(&tx)
        .await?
        .filter(|invite| InviteStatus::of(invite, now) == InviteStatus::Pending)
        .ok_or_else(|| AppError::not_found("invite"))?;
    if invite.phone != user.phone {
        return Err(AppError::new(ErrorCode::Forbidden, "this invite is for another phone"));
    }
    // The guarded update is the gate: of two concurrent claims only one finds it unclaimed.
    let claimed = dealer_invites::Entity::update_many()
        .col_expr(dealer_invites::Column::ClaimedAt, Expr::value(Some(now)))
        .col_expr(dealer_invites::Column::ClaimedByUserId, Expr::value(Some(user.id)))
        .filter(dealer_invites::Column::Id.eq(invite.id))
        .filter(dealer_invites::Column::ClaimedAt.is_null())
        .exec(&tx)
        .await?;
    if claimed.rows_affected != 1 {
        return Err(AppError::not_found("invite"));
    }
    lock_members(&tx, invite.organizer_id).await?;
    let (status, member) = match find_membership(&tx, invite.organizer_id, user.id).await? {
        Some(member) => (StatusCode::OK, member),
        None => (StatusCode::CREATED, insert_membership(&tx, invite.organizer_id, user.id, MemberRole::Dealer).await?),
    };
    ensure_dealer_profile(&tx, user.id).await?;
    let organizer = organizers::Entity::find_by_id(invite.organizer_id)
        .one(&tx)
        .await?
        .ok_or_else(|| AppError::not_found("organizer"))?;
    audit::record(
        &tx,
        Some(user.id),
        "dealer_invite.claim",
        (audit::DEALER_INVITE, invite.id.to_string()),
        json!({"organizerId": invite.organizer_id, "memberId": member.id, "role": member.role}),
    )
    .await?;
    tx.commit().await?;
    Ok((status, Json(MyMembershipView::new(member, organizer))))
}

/// A fresh code: `CODE_LENGTH` characters of `CODE_ALPHABET` from the thread's cryptographic
/// generator (31^8, about 2^40 codes).
fn new_invite_code() -> String {
    (0..CODE_LENGTH).map(|_| char::from(CODE_ALPHABET[rand::random_range(0..CODE_ALPHABET.len())])).collect()
}

/// The code as typed, upper-cased, without spaces and dashes.
fn normalize_code(input: &str) -> String {
    input.chars().filter(|c| !c.is_whitespace() && *c != '-').map(|c| c.to_ascii_uppercase()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_eight_unambiguous_characters() {
        for _ in 0..1000 {
            let code = new_invite_code();
            assert_eq!(code.len(), CODE_LENGTH);
            assert!(code.bytes().all(|b| CODE_ALPHABET.contains(&b)), "{code}");
        }
        assert_ne!(new_invite_code(), new_invite_code());
    }

    #[test]
    fn a_typed_code_ignores_case_spaces_and_dashes() {
        assert_eq!(normalize_code(" abcd-ef 23 "), "ABCDEF23");
    }
}
