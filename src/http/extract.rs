//! Extractors: request bodies, paths and queries that reject in the contract's error shape,
//! and the guards every endpoint uses: who is signed in, which platform permission they
//! hold, which role they have in the club a path names.

use std::marker::PhantomData;

use axum::extract::rejection::{PathRejection, QueryRejection};
use axum::extract::{FromRequest, FromRequestParts, RawPathParams, Request};
use axum::http::header::{AUTHORIZATION, CONTENT_TYPE};
use axum::http::request::Parts;
use axum::response::{IntoResponse, Response};
use bytes_body::read_body;
use floor_entities::enums::MemberRole;
use floor_entities::{organizers, tournaments, users};
use sea_orm::EntityTrait;
use serde::Serialize;
use serde::de::DeserializeOwned;
use uuid::Uuid;

use crate::app::AppState;
use crate::auth::permissions::{ClubRule, Permission, has_permission};
use crate::auth::sessions::{signed_in_user, verified};
use crate::error::{AppError, ErrorCode, FieldProblem};
use crate::objects_only::ObjectsOnly;

/// A JSON body. Malformed JSON, a missing or mistyped field (an array where the schema says
/// object among them) give `400 VALIDATION_ERROR` with the field's path in `details`; a body
/// that is not JSON gives `415`.
pub struct Json<T>(pub T);

impl<T: DeserializeOwned, S: Send + Sync> FromRequest<S> for Json<T> {
    type Rejection = AppError;

    async fn from_request(req: Request, state: &S) -> Result<Self, AppError> {
        if !is_json(&req) {
            return Err(not_json());
        }
        let bytes = read_body(req, state).await?;
        parse(&bytes).map(Json)
    }
}

/// A body that may be left out (`Option<Json<T>>`): an empty body (or JSON's `null`) is
/// `None`, as a command that takes no body has always been sent; one that is there is read as
/// [`Json`] reads it.
impl<T: DeserializeOwned, S: Send + Sync> axum::extract::OptionalFromRequest<S> for Json<T> {
    type Rejection = AppError;

    async fn from_request(req: Request, state: &S) -> Result<Option<Self>, AppError> {
        let json = is_json(&req);
        let bytes = read_body(req, state).await?;
        if bytes.trim_ascii().is_empty() || (json && bytes.trim_ascii() == b"null") {
            return Ok(None);
        }
        if !json {
            return Err(not_json());
        }
        parse(&bytes).map(|value| Some(Json(value)))
    }
}

/// Whether the request says its body is JSON.
fn is_json(req: &Request) -> bool {
    req.headers()
        .get(CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.split(';').next())
        .is_some_and(|mime| {
            let mime = mime.trim();
            mime.eq_ignore_ascii_case("application/json") || mime.ends_with("+json")
        })
}

fn not_json() -> AppError {
    AppError::new(ErrorCode::UnsupportedMediaType, "the body must be JSON with Content-Type: application/json")
}

/// A JSON body read into `T`, each problem named by its field.
fn parse<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, AppError> {
    let mut document: serde_json::Value = serde_json::from_slice(bytes).map_err(|err| {
        let message = err.to_string();
        let problem = message.split(" at line ").next().unwrap_or(&message);
        AppError::invalid_field("body", format!("malformed JSON: {problem}"))
    })?;
    if let Some(field) = text_with_nul(&document, String::new()) {
        return Err(AppError::invalid_field(field, "must not contain the NUL character (U+0000)"));
    }
    whole_numbers_as_integers(&mut document);
    serde_path_to_error::deserialize(ObjectsOnly(document))
        .map_err(|err| AppError::validation(vec![json_problem(&err)]))
}

/// The path of a text (a value or a key) holding U+0000, which PostgreSQL cannot store in
/// text: refused from every body, on both databases alike.
fn text_with_nul(value: &serde_json::Value, path: String) -> Option<String> {
    use serde_json::Value;
    let at = |key: &str| if path.is_empty() { key.to_owned() } else { format!("{path}.{key}") };
    match value {
        Value::String(text) if text.contains('\0') => Some(if path.is_empty() { "body".to_owned() } else { path }),
        Value::Array(items) => {
            items.iter().enumerate().find_map(|(index, item)| text_with_nul(item, format!("{path}[{index}]")))
        }
        Value::Object(fields) => fields
            .iter()
            .find_map(|(key, item)| if key.contains('\0') { Some(at("<key>")) } else { text_with_nul(item, at(key)) }),
        _ => None,
    }
}

/// JSON has one number type: `1068.0` is the integer 1068 to JSON Schema, and to many JSON
/// writers (JavaScript's among them, for a computed value). Such a number is made an integer
/// before the body is read into its type, so an integer field takes it; a float field takes
/// an integer as well.
fn whole_numbers_as_integers(value: &mut serde_json::Value) {
    use serde_json::Value;
    match value {
        Value::Number(number) if number.is_f64() => {
            let Some(float) = number.as_f64() else { return };
            // Beyond 2^53 a float no longer tells neighbouring integers apart.
            const EXACT: f64 = 9_007_199_254_740_992.0;
            if float.fract() == 0.0 && float.abs() <= EXACT {
                #[allow(clippy::cast_possible_truncation)] // whole and within ±2^53: exact
                let integer = float as i64;
                *value = Value::from(integer);
            }
        }
        Value::Array(items) => items.iter_mut().for_each(whole_numbers_as_integers),
        Value::Object(fields) => fields.values_mut().for_each(whole_numbers_as_integers),
        _ => {}
    }
}

impl<T: Serialize> IntoResponse for Json<T> {
    fn into_response(self) -> Response {
        axum::Json(self.0).into_response()
    }
}

/// Names the field a serde error is about, including the field a "missing field" error
/// names (serde reports those at the parent's path).
fn json_problem(err: &serde_path_to_error::Error<serde_json::Error>) -> FieldProblem {
    let inner = err.inner();
    let path = err.path().to_string();
    let parent = if path == "." { String::new() } else { path };
    let message = inner.to_string();
    // serde_json appends " at line L column C"; the field path already locates the problem.
    let problem = message.split(" at line ").next().unwrap_or(&message).to_owned();
    if let Some(missing) = problem.strip_prefix("missing field `").and_then(|rest| rest.split('`').next()) {
        let field = if parent.is_empty() { missing.to_owned() } else { format!("{parent}.{missing}") };
        return FieldProblem::new(field, "is required");
    }
    FieldProblem::new(if parent.is_empty() { "body".to_owned() } else { parent }, problem)
}

mod bytes_body {
    use axum::body::Bytes;
    use axum::extract::rejection::{BytesRejection, FailedToBufferBody};
    use axum::extract::{FromRequest, Request};

    use crate::error::{AppError, ErrorCode};

    /// Reads the body within axum's default limit; over it is `413 PAYLOAD_TOO_LARGE`.
    pub async fn read_body<S: Send + Sync>(req: Request, state: &S) -> Result<Bytes, AppError> {
        Bytes::from_request(req, state).await.map_err(|rejection| match rejection {
            BytesRejection::FailedToBufferBody(FailedToBufferBody::LengthLimitError(_)) => {
                AppError::new(ErrorCode::PayloadTooLarge, "the request body is too large")
            }
            BytesRejection::FailedToBufferBody(FailedToBufferBody::UnknownBodyError(err))
                if crate::http::paced_body::came_too_slowly(&err) =>
            {
                crate::http::paced_body::request_timeout()
            }
            other => AppError::invalid_field("body", other.body_text()),
        })
    }
}

/// Path parameters; one that does not parse (a malformed id) is `400 VALIDATION_ERROR`.
#[derive(FromRequestParts)]
#[from_request(via(axum::extract::Path), rejection(AppError))]
pub struct Path<T>(pub T);

impl From<PathRejection> for AppError {
    fn from(rejection: PathRejection) -> Self {
        use axum::extract::path::ErrorKind;
        match rejection {
            PathRejection::FailedToDeserializePathParams(err) => {
                let field = match err.kind() {
                    ErrorKind::ParseErrorAtKey { key, .. } | ErrorKind::InvalidUtf8InPathParam { key } => key.clone(),
                    ErrorKind::DeserializeError { key, .. } => key.clone(),
                    _ => "path".to_owned(),
                };
                AppError::invalid_field(field, err.body_text())
            }
            other => AppError::Internal(anyhow::anyhow!(other)),
        }
    }
}

/// Query parameters; bad ones are `400 VALIDATION_ERROR`.
#[derive(FromRequestParts)]
#[from_request(via(axum::extract::Query), rejection(AppError))]
pub struct Query<T>(pub T);

impl From<QueryRejection> for AppError {
    fn from(rejection: QueryRejection) -> Self {
        AppError::invalid_field("query", rejection.body_text())
    }
}

/// The signed-in caller: a valid access token of an existing, unbanned account. The account
/// is read fresh on every request, so a role change or a ban takes effect at once.
#[derive(Clone, Debug)]
pub struct AuthUser(pub users::Model);

impl AuthUser {
    pub fn id(&self) -> Uuid {
        self.0.id
    }
}

impl FromRequestParts<AppState> for AuthUser {
    type Rejection = AppError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, AppError> {
        match MaybeAuthUser::from_request_parts(parts, state).await? {
            MaybeAuthUser(Some(user)) => Ok(user),
            MaybeAuthUser(None) => Err(sign_in_first()),
        }
    }
}

/// The caller if a token is sent; a token that is sent but invalid is still `401`, so the
/// client knows to refresh.
#[derive(Clone, Debug)]
pub struct MaybeAuthUser(pub Option<AuthUser>);

impl FromRequestParts<AppState> for MaybeAuthUser {
    type Rejection = AppError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, AppError> {
        let Some(token) = bearer_token(parts)? else { return Ok(Self(None)) };
        let user = signed_in_user(&state.reads, &state.sign_in.jwt, token).await?;
        Ok(Self(Some(AuthUser(user))))
    }
}

/// The caller as a valid access token names them, the account not read: only for a route
/// whose own work reads the account in its transaction and refuses a deleted one (`401`) or
/// a banned one (`403 USER_BANNED`) as [`AuthUser`] does. A registration desk does, once for
/// its whole group, so a rush of thousands does not wait on a read per request before it.
#[derive(Clone, Copy, Debug)]
pub struct TokenCaller {
    pub user_id: Uuid,
}

impl FromRequestParts<AppState> for TokenCaller {
    type Rejection = AppError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, AppError> {
        let token = bearer_token(parts)?.ok_or_else(sign_in_first)?;
        Ok(Self { user_id: verified(&state.sign_in.jwt, token)?.sub })
    }
}

/// The access token of `Authorization: Bearer <token>`, if the header is sent.
fn bearer_token(parts: &Parts) -> Result<Option<&str>, AppError> {
    let Some(header) = parts.headers.get(AUTHORIZATION) else { return Ok(None) };
    header
        .to_str()
        .ok()
        .and_then(|value| value.strip_prefix("Bearer ").or_else(|| value.strip_prefix("bearer ")))
        .map(|token| Some(token.trim()))
        .ok_or_else(|| AppError::unauthorized("the Authorization header must be Bearer <accessToken>"))
}

fn sign_in_first() -> AppError {
    AppError::unauthorized("sign in: send Authorization: Bearer <accessToken>")
}

/// A platform permission as a type, so a handler's signature says what it needs.
pub trait RequiredPermission: Send + Sync {
    const PERMISSION: Permission;
}

/// A signed-in caller whose admin role carries `P`; others get `403 FORBIDDEN`.
pub struct Admin<P: RequiredPermission> {
    pub user: AuthUser,
    _permission: PhantomData<P>,
}

impl<P: RequiredPermission> FromRequestParts<AppState> for Admin<P> {
    type Rejection = AppError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, AppError> {
        let user = AuthUser::from_request_parts(parts, state).await?;
        if !has_permission(user.0.admin_role, P::PERMISSION) {
            return Err(AppError::forbidden());
        }
        Ok(Self { user, _permission: PhantomData })
    }
}

/// Marker types, one per platform permission, for [`Admin`].
pub mod perm {
    use super::{Permission, RequiredPermission};

    macro_rules! permissions {
        ($($name:ident),* $(,)?) => {$(
            pub struct $name;
            impl RequiredPermission for $name {
                const PERMISSION: Permission = Permission::$name;
            }
        )*};
    }

    permissions!(
        OrganizersManage,
        SeasonsManage,
        RatingConfigManage,
        Moderation,
        PushSend,
        MetricsView,
        AdminsManage,
        CitiesManage,
        ContentManage,
        TournamentsManage,
    );
}

/// A club rule as a type, for [`OrganizerAccess`] and [`TournamentAccess`].
pub trait RequiredClubRule: Send + Sync {
    const RULE: ClubRule;
}

/// Marker types for the club rules the contract uses.
pub mod club {
    use super::{ClubRule, MemberRole, Permission, RequiredClubRule};

    /// `club:owner`.
    pub struct Owner;
    impl RequiredClubRule for Owner {
        const RULE: ClubRule = ClubRule::OWNER;
    }
    /// `club:owner, club:td`.
    pub struct Staff;
    impl RequiredClubRule for Staff {
        const RULE: ClubRule = ClubRule::STAFF;
    }
    /// `club:owner, perm:organizers.manage`.
    pub struct OwnerOrOrganizersManage;
    impl RequiredClubRule for OwnerOrOrganizersManage {
        const RULE: ClubRule = ClubRule { roles: &[MemberRole::Owner], permission: Some(Permission::OrganizersManage) };
    }
    /// `club:owner, club:td, perm:tournaments.manage`.
    pub struct StaffOrTournamentsManage;
    impl RequiredClubRule for StaffOrTournamentsManage {
        const RULE: ClubRule =
            ClubRule { roles: &[MemberRole::Owner, MemberRole::Td], permission: Some(Permission::TournamentsManage) };
    }
}

/// The caller's access to the organizer named by the path's `{id}`, checked against `R`:
/// unknown club `404`, not allowed `403`.
pub struct OrganizerAccess<R: RequiredClubRule> {
    pub user: AuthUser,
    pub organizer: organizers::Model,
    /// The caller's role in this club, when a member.
    pub role: Option<MemberRole>,
    _rule: PhantomData<R>,
}

impl<R: RequiredClubRule> FromRequestParts<AppState> for OrganizerAccess<R> {
    type Rejection = AppError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, AppError> {
        let id = path_id(parts, state).await?;
        let user = AuthUser::from_request_parts(parts, state).await?;
        let organizer = organizers::Entity::find_by_id(id)
            .one(&state.reads)
            .await?
            .ok_or_else(|| AppError::not_found("organizer"))?;
        let role = authorize_in_club::<R>(state, &user, organizer.id).await?;
        Ok(Self { user, organizer, role, _rule: PhantomData })
    }
}

/// The caller's access to the tournament named by the path's `{id}`, checked against `R` in
/// the tournament's club.
pub struct TournamentAccess<R: RequiredClubRule> {
    pub user: AuthUser,
    pub tournament: tournaments::Model,
    pub role: Option<MemberRole>,
    _rule: PhantomData<R>,
}

impl<R: RequiredClubRule> FromRequestParts<AppState> for TournamentAccess<R> {
    type Rejection = AppError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, AppError> {
        let id = path_id(parts, state).await?;
        let user = AuthUser::from_request_parts(parts, state).await?;
        let tournament = tournaments::Entity::find_by_id(id)
            .one(&state.reads)
            .await?
            .ok_or_else(|| AppError::not_found("tournament"))?;
        let role = authorize_in_club::<R>(state, &user, tournament.organizer_id).await?;
        Ok(Self { user, tournament, role, _rule: PhantomData })
    }
}

/// Applies `R` to the caller in the club `organizer_id`: `403` when it does not allow them;
/// else the caller's role there, when a member.
pub async fn authorize_in_club<R: RequiredClubRule>(
    state: &AppState,
    user: &AuthUser,
    organizer_id: Uuid,
) -> Result<Option<MemberRole>, AppError> {
    let role = club_role(state, organizer_id, user.id()).await?;
    if !R::RULE.allows(role, user.0.admin_role) {
        return Err(AppError::forbidden());
    }
    Ok(role)
}

/// The caller's role in a club, if a member.
pub async fn club_role(state: &AppState, organizer_id: Uuid, user_id: Uuid) -> Result<Option<MemberRole>, AppError> {
    Ok(crate::clubs::find_membership(&state.reads, organizer_id, user_id).await?.map(|member| member.role))
}

/// The `{id}` path parameter as a UUID.
async fn path_id(parts: &mut Parts, state: &AppState) -> Result<Uuid, AppError> {
    let params = RawPathParams::from_request_parts(parts, state)
        .await
        .map_err(|rejection| AppError::Internal(anyhow::anyhow!(rejection)))?;
    let raw = params
        .iter()
        .find_map(|(key, value)| (key == "id").then_some(value))
        .ok_or_else(|| AppError::Internal(anyhow::anyhow!("a club guard on a path without {{id}}")))?;
    Uuid::parse_str(raw).map_err(|_| AppError::invalid_field("id", "must be a UUID"))
}

/// For PATCH bodies: tells an absent field (`None`, leave as is) from an explicit `null`
/// (`Some(None)`, clear it). Use with `#[serde(default, deserialize_with = "double_option")]`.
pub fn double_option<'de, T, D>(deserializer: D) -> Result<Option<Option<T>>, D::Error>
where
    T: serde::Deserialize<'de>,
    D: serde::Deserializer<'de>,
{
    serde::Deserialize::deserialize(deserializer).map(Some)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::{text_with_nul, whole_numbers_as_integers};

    #[test]
    fn a_nul_anywhere_in_the_body_is_named_by_its_path() {
        assert_eq!(text_with_nul(&json!({"a": [{"b": "x\u{0}"}]}), String::new()).as_deref(), Some("a[0].b"));
        assert_eq!(text_with_nul(&json!({"k\u{0}": 1}), String::new()).as_deref(), Some("<key>"));
        assert_eq!(text_with_nul(&json!({"a": "fine", "n": 1}), String::new()), None);
    }

    #[test]
    fn a_whole_float_becomes_an_integer_anywhere_in_the_body() {
        let mut body = json!({"capacity": 1068.0, "levels": [{"bigBlind": 200.0}], "lat": 55.75, "big": 1e300});
        whole_numbers_as_integers(&mut body);
        assert_eq!(body, json!({"capacity": 1068, "levels": [{"bigBlind": 200}], "lat": 55.75, "big": 1e300}));
        assert!(body["capacity"].is_i64());
    }
}
