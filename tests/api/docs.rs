//! `/docs` in headless Chromium that can reach nothing but this machine: the reference renders
//! from the binary alone, links both contracts, and no request of the page leaves the origin.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use chromiumoxide::cdp::browser_protocol::network::EventRequestWillBeSent;
use chromiumoxide::page::ScreenshotParams;
use futures::StreamExt;
use serde_json::Value;

use crate::helpers::{Backend, spawn_app};
use crate::screen::{chromium, eval, screenshot_path};

/// The links of the page that are on screen, as absolute URLs.
const VISIBLE_LINKS: &str =
    "Array.from(document.querySelectorAll('a[href]')).filter(a => a.getClientRects().length > 0).map(a => a.href)";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_reference_renders_offline_and_links_both_contracts() {
    let Some(browser) = chromium().await else { return };
    let Some(app) = spawn_app(Backend::Sqlite).await else { return };
    let page = browser.browser.new_page("about:blank").await.expect("a page");
    let mut sent = page.event_listener::<EventRequestWillBeSent>().await.expect("the page's requests");
    let requested = Arc::new(Mutex::new(Vec::<String>::new()));
    let recorder = {
        let requested = requested.clone();
        tokio::spawn(async move {
            while let Some(request) = sent.next().await {
                requested.lock().expect("the list").push(request.request.url.clone());
            }
        })
    };

    page.goto(format!("{}/docs", app.base)).await.expect("the page opens");
    let since = Instant::now();
    while eval(&page, "document.body.innerText.includes('register_player')").await != Value::Bool(true) {
        assert!(since.elapsed() < Duration::from_secs(20), "the reference renders its operations");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    page.save_screenshot(ScreenshotParams::builder().build(), screenshot_path("docs-1920x1080.png"))
        .await
        .expect("a screenshot");

    let links = eval(&page, VISIBLE_LINKS).await;
    let links: Vec<&str> = links.as_array().expect("a list").iter().filter_map(Value::as_str).collect();
    let link = |path: &str| {
        let url = format!("{}{path}", app.base);
        assert!(links.contains(&url.as_str()), "the page links {url}: {links:?}");
        url
    };
    let (openapi, asyncapi) = (link("/docs/openapi.json"), link("/docs/asyncapi.yaml"));

    // Both documents, fetched by the page as a reader's click would: what the code generates.
    let fetched =
        |url: &str| format!("fetch('{url}').then(answer => answer.ok ? answer.text() : 'HTTP ' + answer.status)");
    let openapi = eval(&page, &fetched(&openapi)).await;
    let openapi: Value = serde_json::from_str(openapi.as_str().expect("text")).expect("the OpenAPI document is JSON");
    assert_eq!(openapi["openapi"], "3.1.0");
    assert_eq!(openapi, serde_json::to_value(floor::http::openapi()).expect("json"), "the generated contract");
    let asyncapi = eval(&page, &fetched(&asyncapi)).await;
    let asyncapi = asyncapi.as_str().expect("text");
    let parsed: Value = yaml_serde::from_str(asyncapi).expect("the AsyncAPI document is YAML");
    assert_eq!(parsed["asyncapi"], "3.0.0");
    assert_eq!(
        asyncapi,
        floor::domain::live::asyncapi::asyncapi().to_yaml().expect("renders"),
        "the generated contract"
    );

    recorder.abort();
    let requested = requested.lock().expect("the list").clone();
    assert!(requested.iter().any(|url| url.ends_with("/docs/swagger-ui-bundle.js")), "{requested:?}");
    let elsewhere: Vec<&String> = requested
        .iter()
        .filter(|url| !url.starts_with(&format!("{}/", app.base)) && !url.starts_with("data:"))
        .collect();
    assert!(elsewhere.is_empty(), "every request of the page stays on its origin: {elsewhere:?}");
}
