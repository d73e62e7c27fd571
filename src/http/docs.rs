//! `/docs`: the reference a developer opens in a browser, served entirely from the binary
//! (Swagger UI's files are built in), so it works on a machine without the internet, with the
//! two documents it links: the OpenAPI contract of the HTTP API and the AsyncAPI contract of
//! the Socket.IO namespace `/live`, each generated at startup from the code that `floor
//! openapi` and `floor asyncapi` print from.

use std::sync::Arc;

use axum::Router;
use axum::http::HeaderValue;
use axum::http::header::{CONTENT_SECURITY_POLICY, CONTENT_TYPE};
use axum::middleware;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use utoipa::Modify;
use utoipa::openapi::OpenApi;
use utoipa_swagger_ui::{Config, SwaggerUi};

use crate::infra::error::AppError;

/// Where the page is.
pub const PAGE: &str = "/docs";
/// The OpenAPI document the page renders (JSON, as Swagger UI fetches it).
pub const OPENAPI: &str = "/docs/openapi.json";
/// The AsyncAPI document of `/live` (YAML, as `asyncapi.yaml` is committed).
pub const ASYNCAPI: &str = "/docs/asyncapi.yaml";

/// Ends the contract's description with links to both documents, which the page shows under
/// its title (relative links: they lead to the server the page came from).
pub struct DocumentLinks;

impl Modify for DocumentLinks {
    fn modify(&self, openapi: &mut OpenApi) {
        let links = format!(
            "The contracts, as this server serves them: [openapi.json]({OPENAPI}) (this HTTP API, OpenAPI 3.1) and \
             [asyncapi.yaml]({ASYNCAPI}) (the Socket.IO namespace `/live`, AsyncAPI 3.0)."
        );
        let description = openapi.info.description.get_or_insert_default();
        if !description.is_empty() {
            description.push_str("\n\n");
        }
        description.push_str(&links);
    }
}

/// The page, its files and both documents. Swagger UI's own validator badge would ask a
/// server on the internet about the document: it is off.
pub fn docs_router(openapi: OpenApi) -> Router {
    let config = Config::new([OPENAPI]).display_operation_id(true).validator_url("none");
    let asyncapi: Arc<Result<String, String>> =
        Arc::new(crate::domain::live::asyncapi::asyncapi().to_yaml().map_err(|err| err.to_string()));
    if let Err(err) = asyncapi.as_ref() {
        tracing::error!(error = %err, "the AsyncAPI document does not render: {ASYNCAPI} answers 500");
    }
    Router::from(SwaggerUi::new(PAGE).url(OPENAPI, openapi).config(config))
        .route(ASYNCAPI, get(move || serve_asyncapi(asyncapi.clone())))
        .layer(middleware::map_response(same_origin_only))
        // Swagger UI's script is over a megabyte.
        .layer(super::compression::compression())
}

/// The browser itself keeps the page on its origin: nothing it loads or asks for comes from
/// another host (Swagger UI styles its elements inline and draws some icons as `data:`).
const POLICY: &str = "default-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; base-uri 'none'; frame-ancestors 'none'";

async fn same_origin_only(mut response: Response) -> Response {
    response.headers_mut().insert(CONTENT_SECURITY_POLICY, HeaderValue::from_static(POLICY));
    response
}

async fn serve_asyncapi(yaml: Arc<Result<String, String>>) -> Response {
    match yaml.as_ref() {
        Ok(yaml) => ([(CONTENT_TYPE, HeaderValue::from_static("application/yaml"))], yaml.clone()).into_response(),
        Err(err) => AppError::Internal(anyhow::anyhow!("rendering the AsyncAPI document: {err}")).into_response(),
    }
}
