//! Sign-in endpoints: requesting and verifying a one-time code, refreshing tokens, and the
//! current user.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::extract::{AuthUser, Json};
use super::views::{UserView, user_view};
use crate::domain::auth::{otp, sessions};
use crate::domain::players::signup;
use crate::http::state::AppState;
use crate::infra::error::{AppError, AppResult, ErrorBody};
use crate::values::Phone;
use axum::extract::State;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(request_code))
        .routes(routes!(verify_code))
        .routes(routes!(refresh_tokens))
        .routes(routes!(get_me))
}

#[derive(Deserialize, ToSchema)]
pub struct CodeRequest {
    /// E.164; spaces, dashes and brackets are stripped. It must be a number that can exist
    /// (libphonenumber's metadata) and a mobile: codes are not sent to fixed, toll-free,
    /// premium-rate, VoIP or other lines.
    #[schema(
        example = "+79991234567",
        pattern = "^[ ()\\t\u{a0}-]*\\+[ ()\\t\u{a0}-]*[1-9]([ ()\\t\u{a0}-]*[0-9]){0,14}[ ()\\t\u{a0}-]*$"
    )]
    pub phone: String,
}

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct CodeRequested {
    /// The delivery channel that took the code.
    pub channel: String,
    pub expires_in_sec: i64,
}

#[derive(Deserialize, ToSchema)]
pub struct VerifyRequest {
    #[schema(pattern = "^[ ()\\t\u{a0}-]*\\+[ ()\\t\u{a0}-]*[1-9]([ ()\\t\u{a0}-]*[0-9]){0,14}[ ()\\t\u{a0}-]*$")]
    pub phone: String,
    /// Six digits.
    #[schema(pattern = "^[0-9]{6}$")]
    pub code: String,
}

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct SignInResponse {
    pub access_token: String,
    pub refresh_token: String,
    pub user: UserView,
    pub is_new_user: bool,
}

#[derive(Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct RefreshRequest {
    pub refresh_token: String,
}

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct TokenPairResponse {
    pub access_token: String,
    pub refresh_token: String,
}

fn parse_phone(input: &str) -> AppResult<Phone> {
    Phone::parse(input).map_err(|err| AppError::invalid_field("phone", err.to_string()))
}

/// Sends a six-digit sign-in code through the first channel that takes it.
#[utoipa::path(post, path = "/auth/otp/request", tag = "auth", request_body = CodeRequest,
    responses(
        (status = 200, body = CodeRequested),
        (status = 400, description = "VALIDATION_ERROR: a malformed phone, a number that cannot exist, or one that is not a mobile", body = ErrorBody),
        (status = 403, description = "USER_BANNED", body = ErrorBody),
        (status = 429, description = "OTP_RATE_LIMITED: 3 codes per phone per 10 minutes", body = ErrorBody),
    ))]
async fn request_code(State(app): State<AppState>, Json(body): Json<CodeRequest>) -> AppResult<Json<CodeRequested>> {
    let phone = parse_phone(&body.phone)?;
    let sent = otp::request_code(&app.db, &app.sign_in, &phone).await?;
    Ok(Json(CodeRequested { channel: sent.channel.to_owned(), expires_in_sec: sent.expires_in_sec }))
}

/// Exchanges a valid code for a token pair; creates the account on first sign-in.
#[utoipa::path(post, path = "/auth/otp/verify", tag = "auth", request_body = VerifyRequest,
    responses(
        (status = 200, body = SignInResponse),
        (status = 400, description = "VALIDATION_ERROR, INVALID_OTP", body = ErrorBody),
        (status = 403, description = "USER_BANNED", body = ErrorBody),
    ))]
async fn verify_code(State(app): State<AppState>, Json(body): Json<VerifyRequest>) -> AppResult<Json<SignInResponse>> {
    let phone = parse_phone(&body.phone)?;
    let code = otp::parse_code(&body.code)?;
    let signed_in = signup::sign_in(&app.db, &app.sign_in, &phone, code).await?;
    let user = user_view(&app.db, signed_in.user).await?;
    Ok(Json(SignInResponse {
        access_token: signed_in.tokens.access_token,
        refresh_token: signed_in.tokens.refresh_token,
        user,
        is_new_user: signed_in.is_new_user,
    }))
}

/// Rotates the refresh token: the presented one is spent. Presenting a spent token revokes
/// every token of that sign-in.
#[utoipa::path(post, path = "/auth/refresh", tag = "auth", request_body = RefreshRequest,
    responses(
        (status = 200, body = TokenPairResponse),
        (status = 400, description = "VALIDATION_ERROR", body = ErrorBody),
        (status = 401, description = "INVALID_REFRESH_TOKEN", body = ErrorBody),
        (status = 403, description = "USER_BANNED", body = ErrorBody),
    ))]
async fn refresh_tokens(
    State(app): State<AppState>,
    Json(body): Json<RefreshRequest>,
) -> AppResult<Json<TokenPairResponse>> {
    let pair = sessions::refresh(&app.db, &app.sign_in.jwt, body.refresh_token.trim()).await?;
    Ok(Json(TokenPairResponse { access_token: pair.access_token, refresh_token: pair.refresh_token }))
}

/// The signed-in user with memberships, profile and whether the profile is complete.
#[utoipa::path(get, path = "/auth/me", tag = "auth", security(("bearer" = [])),
    responses(
        (status = 200, body = UserView),
        (status = 401, description = "UNAUTHORIZED", body = ErrorBody),
        (status = 403, description = "USER_BANNED", body = ErrorBody),
    ))]
async fn get_me(State(app): State<AppState>, AuthUser(user): AuthUser) -> AppResult<Json<UserView>> {
    Ok(Json(user_view(&app.reads, user).await?))
}
