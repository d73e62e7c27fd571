//! Extractors: request bodies, paths and queries that reject in the contract's error shape,
//! and the guards every endpoint uses: who is signed in, which platform permission they
//! hold, which role they have in the club a path names.

use std::marker::PhantomData;

use axum::extract::rejection::PathRejection;
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

use crate::domain::auth::permissions::{ClubRule, Permission, has_permission};
use crate::domain::auth::sessions::{signed_in_user, verified};
use crate::http::state::AppState;
use crate::infra::error::{AppError, ErrorCode, FieldProblem};
use crate::infra::input;
use crate::infra::objects_only::ObjectsOnly;

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
        return Err(AppError::invalid_field(field, input::HOLDS_NUL));
    }
    whole_numbers_as_integers(&mut document);
    serde_path_to_error::deserialize(ObjectsOnly(document)).map_err(|err| {
        AppError::validation(vec![input::field_problem("body", &err.path().to_string(), &err.inner().to_string())])
    })
}

/// The path of a text (a value or a key) holding U+0000, which PostgreSQL cannot store in
/// text: refused from every body, on both databases alike.
fn text_with_nul(value: &serde_json::Value, path: String) -> Option<String> {
    use serde_json::Value;
    let at = |key: &str| if path.is_empty() { key.to_owned() } else { format!("{path}.{key}") };
    match value {
        Value::String(text) if input::refusal_of_text(text).is_some() => {
            Some(if path.is_empty() { "body".to_owned() } else { path })
        }
        Value::Array(items) => {
            items.iter().enumerate().find_map(|(index, item)| text_with_nul(item, format!("{path}[{index}]")))
        }
        Value::Object(fields) => fields.iter().find_map(|(key, item)| {
            if input::refusal_of_text(key).is_some() { Some(at("<key>")) } else { text_with_nul(item, at(key)) }
        }),
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

mod bytes_body {
    use axum::body::Bytes;
    use axum::extract::rejection::{BytesRejection, FailedToBufferBody};
    use axum::extract::{FromRequest, Request};

    use crate::infra::error::{AppError, ErrorCode};

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

/// Path parameters, percent-decoded. A parameter that is not UTF-8 once decoded, or holds
/// U+0000, or does not parse into its type (a malformed id) is `400 VALIDATION_ERROR` naming
/// the parameter as the route does (`userId`), in the contract's words.
pub struct Path<T>(pub T);

impl<T: DeserializeOwned + Send, S: Send + Sync> FromRequestParts<S> for Path<T> {
    type Rejection = AppError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, AppError> {
        let names = path_params(parts, state).await?.into_iter().map(|(name, _)| name).collect::<Vec<_>>();
        axum::extract::Path::<T>::from_request_parts(parts, state)
            .await
            .map(|axum::extract::Path(value)| Self(value))
            .map_err(|rejection| path_problem(rejection, &names))
    }
}

/// The route's path parameters as (name, decoded value), each checked as every text a client
/// sends is ([`input::refusal_of_text`]).
async fn path_params<S: Send + Sync>(parts: &mut Parts, state: &S) -> Result<Vec<(String, String)>, AppError> {
    use axum::extract::rejection::RawPathParamsRejection;
    let params = RawPathParams::from_request_parts(parts, state).await.map_err(|rejection| match rejection {
        RawPathParamsRejection::InvalidUtf8InPathParam(err) => {
            // axum's text is "Invalid UTF-8 in `name`": the name is all that is taken from it.
            let text = err.body_text();
            let name = text.split('`').nth(1).unwrap_or("path");
            AppError::invalid_field(name, input::NOT_UTF8)
        }
        other => AppError::Internal(anyhow::anyhow!(other)),
    })?;
    params
        .iter()
        .map(|(name, value)| match input::refusal_of_text(value) {
            Some(problem) => Err(AppError::invalid_field(name, problem)),
            None => Ok((name.to_owned(), value.to_owned())),
        })
        .collect()
}

/// A path that does not read into its type, as the field problem of the parameter it is
/// about (`names` are the route's parameters, in order).
fn path_problem(rejection: PathRejection, names: &[String]) -> AppError {
    use axum::extract::path::ErrorKind;
    let PathRejection::FailedToDeserializePathParams(err) = rejection else {
        return AppError::Internal(anyhow::anyhow!(rejection));
    };
    // A lone parameter is the one any error is about.
    let only = || match names {
        [one] => one.clone(),
        _ => "path".to_owned(),
    };
    let (field, problem) = match err.into_kind() {
        ErrorKind::ParseErrorAtKey { key, expected_type, .. } => (key, must_be(expected_type)),
        ErrorKind::ParseErrorAtIndex { index, expected_type, .. } => {
            (names.get(index).cloned().unwrap_or_else(only), must_be(expected_type))
        }
        ErrorKind::ParseError { expected_type, .. } => (only(), must_be(expected_type)),
        ErrorKind::DeserializeError { key, message, .. } => (key, input::plain_problem(&message)),
        ErrorKind::InvalidUtf8InPathParam { key } => (key, input::NOT_UTF8.to_owned()),
        ErrorKind::Message(message) => (only(), input::plain_problem(&message)),
        // A route whose handler reads other parameters than it has: the code's mistake.
        other => return AppError::Internal(anyhow::anyhow!("path parameters: {other}")),
    };
    AppError::invalid_field(field, problem)
}

fn must_be(expected_type: &str) -> String {
    format!("must be {}", input::plain_kind(expected_type))
}

/// Query parameters. A name or value that is not UTF-8 once decoded, or holds U+0000, or a
/// value that does not read into its field's type is `400 VALIDATION_ERROR` naming the
/// parameter, in the contract's words. Read as axum's `Query` reads them (`serde_urlencoded`
/// over `form_urlencoded`), with each parameter checked first.
pub struct Query<T>(pub T);

impl<T: DeserializeOwned, S: Send + Sync> FromRequestParts<S> for Query<T> {
    type Rejection = AppError;

    async fn from_request_parts(parts: &mut Parts, _state: &S) -> Result<Self, AppError> {
        read_query(parts.uri.query().unwrap_or_default()).map(Query)
    }
}

/// `query` (the text after `?`) read into `T`.
fn read_query<T: DeserializeOwned>(query: &str) -> Result<T, AppError> {
    if let Some(problem) = query_problem(query) {
        return Err(AppError::validation(vec![problem]));
    }
    let pairs = url::form_urlencoded::parse(query.as_bytes());
    serde_path_to_error::deserialize(serde_urlencoded::Deserializer::new(pairs)).map_err(|err| {
        AppError::validation(vec![input::field_problem("query", &err.path().to_string(), &err.inner().to_string())])
    })
}

/// The first parameter of `query` that no work may be handed: bytes that are not UTF-8 once
/// percent-decoded (`form_urlencoded` would quietly put U+FFFD in their place) or a text
/// [`input::refusal_of_text`] refuses, in its name or its value.
fn query_problem(query: &str) -> Option<FieldProblem> {
    use percent_encoding::percent_decode_str;
    query.split('&').filter(|pair| !pair.is_empty()).find_map(|pair| {
        let (raw_name, raw_value) = pair.split_once('=').unwrap_or((pair, ""));
        let problem = match (percent_decode_str(raw_name).decode_utf8(), percent_decode_str(raw_value).decode_utf8()) {
            (Ok(name), Ok(value)) => input::refusal_of_text(&name).or_else(|| input::refusal_of_text(&value)),
            _ => Some(input::NOT_UTF8),
        }?;
        // The name as the client wrote it (a `+` is a space), whatever its bytes.
        let name: Vec<u8> = percent_decode_str(&raw_name.replace('+', " ")).collect();
        Some(FieldProblem::new(String::from_utf8_lossy(&name), problem))
    })
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
    Ok(crate::domain::clubs::find_membership(&state.reads, organizer_id, user_id).await?.map(|member| member.role))
}

/// The `{id}` path parameter as a UUID.
async fn path_id(parts: &mut Parts, state: &AppState) -> Result<Uuid, AppError> {
    let params = path_params(parts, state).await?;
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
    use axum::Router;
    use axum::body::Body;
    use axum::routing::get;
    use serde::Deserialize;
    use serde_json::{Value, json};
    use tower::ServiceExt;
    use uuid::Uuid;

    use super::{Path, Query, query_problem, text_with_nul, whole_numbers_as_integers};
    use crate::infra::error::FieldProblem;
    use crate::infra::input::{HOLDS_NUL, NOT_UTF8};

    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase")]
    #[allow(dead_code)]
    struct Filter {
        city: Option<String>,
        organizer_id: Option<Uuid>,
        from: Option<chrono::DateTime<chrono::Utc>>,
        limit: Option<u32>,
    }

    /// Routes reading their parameters as Floor's handlers do, each answering `ok`.
    fn routes() -> Router {
        Router::new()
            .route("/one/{userId}", get(|Path(_): Path<Uuid>| async { "ok" }))
            .route("/two/{id}/{memberId}", get(|Path(_): Path<(Uuid, Uuid)>| async { "ok" }))
            .route("/count/{n}", get(|Path(_): Path<u32>| async { "ok" }))
            .route("/token/{token}", get(|Path(_): Path<String>| async { "ok" }))
            .route("/list", get(|Query(_): Query<Filter>| async { "ok" }))
    }

    /// The status and the error's `details` of `GET uri`.
    async fn get_uri(uri: &str) -> (u16, Value) {
        let request = axum::http::Request::get(uri).body(Body::empty()).expect("a request");
        let response = routes().oneshot(request).await.expect("an answer");
        let status = response.status().as_u16();
        let bytes = axum::body::to_bytes(response.into_body(), 1 << 16).await.expect("a body");
        let body: Value = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
        (status, body["error"]["details"].clone())
    }

    #[tokio::test]
    async fn a_bad_path_or_query_parameter_is_named_in_the_contract_s_words() {
        let id = Uuid::nil();
        let cases = [
            ("/one/not-a-uuid".to_owned(), "userId", "must be a UUID"),
            ("/one/%00".to_owned(), "userId", HOLDS_NUL),
            (format!("/two/{id}/x"), "memberId", "must be a UUID"),
            ("/two/x/y".to_owned(), "id", "must be a UUID"),
            ("/count/ten".to_owned(), "n", "must be a whole number from 0 to 4294967295"),
            ("/count/-1".to_owned(), "n", "must be a whole number from 0 to 4294967295"),
            ("/token/ab%00cd".to_owned(), "token", HOLDS_NUL),
            ("/token/%FF".to_owned(), "token", NOT_UTF8),
            ("/list?city=mo%00".to_owned(), "city", HOLDS_NUL),
            ("/list?city=mo%C3".to_owned(), "city", NOT_UTF8),
            ("/list?organizerId=7".to_owned(), "organizerId", "must be a UUID"),
            ("/list?limit=many".to_owned(), "limit", "must be a whole number"),
            ("/list?city=a&city=b".to_owned(), "city", "is given more than once"),
        ];
        for (uri, field, problem) in cases {
            assert_eq!(get_uri(&uri).await, (400, json!([{"field": field, "problem": problem}])), "{uri}");
        }
        let (status, details) = get_uri("/list?from=tomorrow").await;
        assert_eq!((status, &details[0]["field"]), (400, &json!("from")));
        assert!(details[0]["problem"].as_str().is_some_and(|text| text.contains("RFC 3339")), "{details}");
        for fine in
            [format!("/one/{id}"), format!("/two/{id}/{id}"), "/count/7".to_owned(), "/token/a%2Fb+c".to_owned()]
        {
            assert_eq!(get_uri(&fine).await.0, 200, "{fine}");
        }
        assert_eq!(get_uri("/list?city=%D0%BC%D0%BE+x&limit=3&unknown=%00%00").await.0, 400, "every parameter");
        assert_eq!(get_uri("/list?city=%D0%BC%D0%BE+x&limit=3&unknown=1").await.0, 200);
    }

    #[test]
    fn a_query_is_checked_name_and_value_before_it_is_read() {
        let problem = |field: &str, problem: &str| Some(FieldProblem::new(field, problem));
        assert_eq!(query_problem("q=ab%00"), problem("q", HOLDS_NUL));
        assert_eq!(query_problem("a=1&b+c=%00"), problem("b c", HOLDS_NUL));
        assert_eq!(query_problem("x%00=1"), problem("x\0", HOLDS_NUL));
        assert_eq!(query_problem("q=%FF"), problem("q", NOT_UTF8));
        assert_eq!(query_problem("%FF=1"), problem("\u{fffd}", NOT_UTF8));
        assert_eq!(query_problem("q=%ED%A0%80"), problem("q", NOT_UTF8), "a surrogate's UTF-8 is not UTF-8");
        assert_eq!(query_problem("q=%D0%B8%D0%B2%D0%B0%D0%BD&empty=&flag&&z=%2500"), None);
        assert_eq!(query_problem(""), None);
    }

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
