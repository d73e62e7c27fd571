//! The error statuses an operation answers because of how it is built rather than what it
//! does: a parameter or a body that does not parse, a body of the wrong type or size, a
//! token, a path that names nothing, and a fault of the server. Handlers document their own
//! rules; this adds the rest to every operation, so the contract lists every status a client
//! can meet, each an `ErrorBody` whose description names the codes it carries.

use utoipa::openapi::header::Header;
use utoipa::openapi::path::{Operation, ParameterIn};
use utoipa::openapi::schema::{ObjectBuilder, Type};
use utoipa::openapi::{ContentBuilder, OpenApi as OpenApiDoc, Ref, RefOr, Response, ResponseBuilder};

use crate::infra::error::ErrorCode;

/// The largest JSON body a handler reads (axum's default limit); uploads have their own.
const JSON_BODY_LIMIT: &str = "2 MiB";

/// The operations that never read the database: the liveness check answers whatever its
/// dependencies do. Every other one may meet the database out of reach.
const WITHOUT_DATABASE: [&str; 1] = ["/health"];

/// Adds the statuses each operation's shape implies to every operation of `contract`.
pub fn document(contract: &mut OpenApiDoc) {
    for (path, item) in contract.paths.paths.iter_mut() {
        let names_something = path.contains('{');
        let needs_database = !WITHOUT_DATABASE.contains(&path.as_str());
        let operations =
            [item.get.as_mut(), item.put.as_mut(), item.post.as_mut(), item.delete.as_mut(), item.patch.as_mut()];
        for operation in operations.into_iter().flatten() {
            document_operation(operation, names_something, needs_database);
        }
    }
}

fn document_operation(operation: &mut Operation, names_something: bool, needs_database: bool) {
    let parameters = operation.parameters.iter().flatten().filter_map(|parameter| match parameter {
        RefOr::T(parameter) => Some(parameter),
        RefOr::Ref(_) => None,
    });
    let parses_input = parameters.filter(|parameter| parameter.parameter_in != ParameterIn::Cookie).count() > 0
        || operation.request_body.is_some();
    let json_body = match &operation.request_body {
        Some(RefOr::T(body)) => body.content.contains_key("application/json"),
        _ => false,
    };
    let takes_token = serde_json::to_value(&operation.security)
        .is_ok_and(|security| security.as_array().is_some_and(|any| any.iter().any(|one| one.get("bearer").is_some())));

    if parses_input {
        answers(operation, ErrorCode::ValidationError, "a parameter or a field that does not match its schema");
    }
    if json_body {
        answers(operation, ErrorCode::UnsupportedMediaType, "the body is not `Content-Type: application/json`");
        answers(operation, ErrorCode::PayloadTooLarge, &format!("the body is over {JSON_BODY_LIMIT}"));
    }
    if takes_token {
        answers(operation, ErrorCode::Unauthorized, "the token is missing, malformed, expired or of a deleted account");
        answers(operation, ErrorCode::UserBanned, "the account is banned");
    }
    if names_something {
        answers(operation, ErrorCode::NotFound, "nothing has the id the path names");
    }
    if needs_database {
        answers(
            operation,
            ErrorCode::ServiceUnavailable,
            "the database is unreachable; try again after `Retry-After` seconds",
        );
        if let Some(RefOr::T(response)) = operation.responses.responses.get_mut("503") {
            let seconds = ObjectBuilder::new().schema_type(Type::Integer).minimum(Some(1));
            let mut header = Header::new(seconds);
            header.description = Some("Seconds after which the request may succeed again.".to_owned());
            response.headers.insert("Retry-After".to_owned(), RefOr::T(header));
        }
    }
    answers(operation, ErrorCode::InternalError, "a fault of the server (logged, with the request id)");
}

/// Documents that `operation` may answer `code` (its status, an `ErrorBody`), and why. A
/// status already documented keeps its description and gains the code when it lacks it.
pub fn answers(operation: &mut Operation, code: ErrorCode, why: &str) {
    let status = code.status().as_u16().to_string();
    let line = format!("{code}: {why}");
    let responses = &mut operation.responses.responses;
    match responses.get_mut(&status) {
        Some(RefOr::T(response)) => {
            if !names_code(&response.description, code) {
                response.description = format!("{}; {line}", response.description);
            }
            if response.content.is_empty() {
                response.content.insert("application/json".to_owned(), RefOr::T(error_body()));
            }
        }
        Some(RefOr::Ref(_)) => {}
        None => {
            let response: Response =
                ResponseBuilder::new().description(line).content("application/json", error_body()).build();
            responses.insert(status, RefOr::T(response));
        }
    }
}

/// The codes a response's description names: the words that are error codes.
pub fn codes_named(description: &str) -> Vec<ErrorCode> {
    description.split(|c: char| !(c.is_ascii_uppercase() || c == '_')).filter_map(|word| word.parse().ok()).collect()
}

fn names_code(description: &str, code: ErrorCode) -> bool {
    codes_named(description).contains(&code)
}

fn error_body() -> utoipa::openapi::Content {
    ContentBuilder::new().schema(Some(Ref::from_schema_name("ErrorBody"))).build()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_description_names_the_codes_in_it_and_nothing_else() {
        use ErrorCode::*;
        assert_eq!(codes_named("REGISTRATION_CLOSED, ALREADY_REGISTERED"), [RegistrationClosed, AlreadyRegistered]);
        assert_eq!(codes_named("FORBIDDEN: needs club:owner; USER_BANNED: banned"), [Forbidden, UserBanned]);
        assert_eq!(codes_named("VALIDATION_ERROR: an id is not a UUID"), [ValidationError]);
        assert!(codes_named("the body is over 2 MiB").is_empty());
    }

    #[test]
    fn a_code_joins_its_status_once() {
        let mut operation = Operation::new();
        answers(&mut operation, ErrorCode::Forbidden, "needs content.manage");
        answers(&mut operation, ErrorCode::UserBanned, "the account is banned");
        answers(&mut operation, ErrorCode::UserBanned, "said twice");
        let Some(RefOr::T(forbidden)) = operation.responses.responses.get("403") else { panic!("a 403") };
        assert_eq!(forbidden.description, "FORBIDDEN: needs content.manage; USER_BANNED: the account is banned");
        assert!(forbidden.content.contains_key("application/json"));
    }
}
