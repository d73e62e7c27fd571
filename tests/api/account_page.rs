//! The page that deletes an account without the app (`/account/delete`): its two languages,
//! its two steps sent as a browser's plain forms, every refusal as the page again with its
//! status, the API's budgets spent by its forms; and the whole of it in headless Chromium.

use std::time::{Duration, Instant};

use base64::Engine;
use chromiumoxide::Page as BrowserPage;
use chromiumoxide::cdp::browser_protocol::emulation::SetDeviceMetricsOverrideParams;
use chromiumoxide::page::ScreenshotParams;
use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::deletion::deletion_audit;
use crate::helpers::{Backend, TestApp, on_both_databases, spawn_app, spawn_app_with};
use crate::screen::{chromium, screenshot_path};

on_both_databases!(
    the_page_explains_the_deletion_in_russian_and_in_english,
    a_phone_then_its_code_deletes_the_account_on_the_web,
    a_wrong_code_is_the_code_step_again_and_deletes_nothing,
    the_only_owner_of_a_club_is_told_to_hand_it_over_first,
    a_phone_that_is_none_or_takes_no_codes_or_is_banned_is_the_first_step_again,
    a_right_code_for_a_phone_without_an_account_is_a_404_page,
    the_pages_forms_spend_the_apis_code_budgets_and_their_refusal_is_the_page,
);

const PAGE: &str = "/account/delete";
const ANNA: &str = "+79997500002";

/// The production abuse limits: a blank setting is its default. The tests' own are generous.
const PRODUCTION_LIMITS: [(&str, &str); 5] = [
    ("RATE_LIMIT_CODE_REQUESTS", ""),
    ("RATE_LIMIT_CODE_REQUESTS_GLOBAL", ""),
    ("RATE_LIMIT_CODE_CHECKS", ""),
    ("RATE_LIMIT_REFRESHES", ""),
    ("RATE_LIMIT_PUBLIC_READS", ""),
];

/// An answer of the page.
struct Shown {
    status: u16,
    headers: reqwest::header::HeaderMap,
    html: String,
}

impl Shown {
    async fn read(response: reqwest::Response) -> Self {
        let status = response.status().as_u16();
        let headers = response.headers().clone();
        Self { status, headers, html: response.text().await.expect("a page") }
    }

    /// The page, with `status`, saying `text`.
    #[track_caller]
    fn assert_says(&self, status: u16, text: &str) {
        assert_eq!(self.status, status, "{}", self.html);
        let kind = self.headers.get("content-type").and_then(|value| value.to_str().ok());
        assert_eq!(kind, Some("text/html; charset=utf-8"), "always the page, never JSON");
        assert!(self.html.contains(text), "«{text}» on the page: {}", self.html);
    }

    /// The step that asks for the code sent to `phone`, with the phone carried along.
    #[track_caller]
    fn assert_asks_for_the_code_of(&self, phone: &str) {
        for part in [
            r#"name="code""#.to_owned(),
            r#"inputmode="numeric""#.to_owned(),
            r#"autocomplete="one-time-code""#.to_owned(),
            format!(r#"type="hidden" name="phone" value="{phone}""#),
        ] {
            assert!(self.html.contains(&part), "{part} on the code step: {}", self.html);
        }
    }
}

async fn open(app: &TestApp, query: &str, headers: &[(&str, &str)]) -> Shown {
    let mut request = app.client.get(format!("{}{PAGE}{query}", app.base));
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    Shown::read(request.send().await.expect("the server answers")).await
}

/// Sends the page's form with `fields`, as a browser does (`?lang=` as the page's own action).
async fn submit(app: &TestApp, query: &str, fields: &[(&str, &str)]) -> Shown {
    let request = app.client.post(format!("{}{PAGE}{query}", app.base)).form(fields);
    Shown::read(request.send().await.expect("the server answers")).await
}

/// A code not `right`.
fn wrong(right: &str) -> &'static str {
    if right == "000000" { "111111" } else { "000000" }
}

async fn the_page_explains_the_deletion_in_russian_and_in_english(backend: Backend) {
    let Some(app) = spawn_app(backend).await else { return };
    let russian = open(&app, "", &[]).await;
    russian.assert_says(200, r#"<html lang="ru">"#);
    for text in [
        "Удаление аккаунта",
        "номер телефона, имя, никнейм, аватар и город",
        "профиль дилера и приглашения дилером",
        "места в турнирах, которые ещё не начались",
        "«Удалённый игрок»",
        "Рейтинги других игроков не меняются",
        "единственный владелец клуба",
        "в идущем турнире",
        "зарегистрироваться снова",
        "В приложении то же самое есть в профиле",
        r#"name="phone""#,
        r#"action="/account/delete?lang=ru""#,
        r#"href="/account/delete?lang=en""#,
    ] {
        assert!(russian.html.contains(text), "«{text}» on the Russian page");
    }
    for (query, headers) in [("?lang=en", &[][..]), ("", &[("Accept-Language", "en-GB,en;q=0.9,ru;q=0.5")][..])] {
        let english = open(&app, query, headers).await;
        english.assert_says(200, r#"<html lang="en">"#);
        for text in ["Delete your account", "What is deleted", "Deleted player", "The app has the same in its profile"]
        {
            assert!(english.html.contains(text), "«{text}» on the English page ({query} {headers:?})");
        }
        assert!(english.html.contains(r#"href="/account/delete?lang=ru""#), "a link back to Russian");
    }
    let chosen = open(&app, "?lang=ru", &[("Accept-Language", "en")]).await;
    chosen.assert_says(200, "Удаление аккаунта");

    // It carries a phone: kept by no cache, sent to no other site, and nothing from elsewhere.
    let headers = &russian.headers;
    let header = |name: &str| headers.get(name).and_then(|value| value.to_str().ok()).unwrap_or_default().to_owned();
    assert_eq!(header("cache-control"), "no-store");
    assert_eq!(header("referrer-policy"), "no-referrer");
    let policy = header("content-security-policy");
    for rule in ["default-src 'none'", "form-action 'self'", "frame-ancestors 'none'", "base-uri 'none'"] {
        assert!(policy.contains(rule), "{rule} in {policy}");
    }
    assert!(!policy.contains("unsafe-inline"), "{policy}");
    let style = russian.html.split("<style>").nth(1).and_then(|rest| rest.split("</style>").next()).expect("a style");
    let hash = base64::engine::general_purpose::STANDARD.encode(Sha256::digest(style.as_bytes()));
    assert!(policy.contains(&format!("style-src 'sha256-{hash}'")), "the style is allowed by its hash: {policy}");
    assert!(!russian.html.contains("http://") && !russian.html.contains("https://"), "no other host");
    assert!(!russian.html.contains("<script"), "no script");
    assert!(russian.html.contains(r#"name="viewport""#));
}

async fn a_phone_then_its_code_deletes_the_account_on_the_web(backend: Backend) {
    // The production limits: a deletion on the web fits well within them.
    let Some(app) = spawn_app_with(backend, &PRODUCTION_LIMITS).await else { return };
    let anna = app.sign_in(ANNA).await;
    let token = Some(anna.access_token.as_str());
    // Anna holds a seat; the tournament's card, a kept read, counts it.
    let club = app.create_club("Aces", "+79997500011").await;
    let tournament = app.create_tournament(&club, 10, chrono::Duration::days(2)).await;
    app.post(&format!("/tournaments/{tournament}/register"), token, serde_json::json!({})).await.assert_ok();
    let card = format!("/tournaments/{tournament}");
    assert_eq!(app.get(&card, None).await.assert_ok()["registeredCount"], 1);

    let asked = submit(&app, "?lang=ru", &[("phone", "+7 999 750-00-02")]).await;
    asked.assert_says(200, "Удаление нельзя отменить");
    asked.assert_asks_for_the_code_of(ANNA);
    assert_eq!(asked.headers.get("cache-control").map(|value| value.as_bytes()), Some(&b"no-store"[..]));
    let code = app.last_code(ANNA);
    let done = submit(&app, "?lang=ru", &[("phone", ANNA), ("code", &code)]).await;
    done.assert_says(200, "Аккаунт удалён");

    app.get("/auth/me", token).await.assert_error(401, "UNAUTHORIZED");
    assert_eq!(app.get(&card, None).await.assert_ok()["registeredCount"], 0, "the kept card was dropped");
    let audit = deletion_audit(&app, anna.user_id).await;
    assert_eq!(audit["asked"], "web", "{audit}");
    let status = app.scalar(&format!("SELECT status FROM users WHERE id = {}", app.uuid_literal(anna.user_id))).await;
    assert_eq!(status.as_deref(), Some("deleted"));
}

async fn a_wrong_code_is_the_code_step_again_and_deletes_nothing(backend: Backend) {
    let Some(app) = spawn_app(backend).await else { return };
    let anna = app.sign_in(ANNA).await;
    submit(&app, "", &[("phone", ANNA)]).await.assert_asks_for_the_code_of(ANNA);
    let right = app.last_code(ANNA);

    let refused = submit(&app, "", &[("phone", ANNA), ("code", wrong(&right))]).await;
    refused.assert_says(400, "Код неверный, устарел или уже использован");
    refused.assert_asks_for_the_code_of(ANNA);
    let malformed = submit(&app, "?lang=en", &[("phone", ANNA), ("code", "12")]).await;
    malformed.assert_says(400, "Enter the code: six digits.");
    malformed.assert_asks_for_the_code_of(ANNA);
    let me = app.get("/auth/me", Some(&anna.access_token)).await;
    assert_eq!(me.assert_ok()["status"], "active", "nothing was deleted");

    // The phone kept on the page, the right code still deletes.
    submit(&app, "", &[("phone", ANNA), ("code", &right)]).await.assert_says(200, "Аккаунт удалён");
}

async fn the_only_owner_of_a_club_is_told_to_hand_it_over_first(backend: Backend) {
    let Some(app) = spawn_app(backend).await else { return };
    let owner = "+79997500011";
    let club = app.create_club("Aces", owner).await;
    submit(&app, "", &[("phone", owner)]).await.assert_asks_for_the_code_of(owner);
    let code = app.last_code(owner);

    let refused = submit(&app, "", &[("phone", owner), ("code", &code)]).await;
    refused.assert_says(409, "Вы единственный владелец клуба");
    refused.assert_asks_for_the_code_of(owner);
    let english = submit(&app, "?lang=en", &[("phone", owner), ("code", &code)]).await;
    english.assert_says(409, "You are the only owner of a club");
    app.get("/auth/me", Some(&club.owner.access_token)).await.assert_ok();
}

async fn a_phone_that_is_none_or_takes_no_codes_or_is_banned_is_the_first_step_again(backend: Backend) {
    let Some(app) = spawn_app(backend).await else { return };
    let not_a_phone = submit(&app, "", &[("phone", "8 999 123")]).await;
    not_a_phone.assert_says(400, "Это не похоже на номер телефона");
    assert!(not_a_phone.html.contains(r#"value="8 999 123""#), "what was typed stays in the field");
    submit(&app, "?lang=en", &[]).await.assert_says(400, "This does not look like a phone number");
    // A Moscow landline takes no codes; nothing is sent.
    let landline = "+74951234567";
    submit(&app, "", &[("phone", landline)]).await.assert_says(400, "коды приходят только на мобильные номера");
    assert!(app.outbox.last_code(landline).is_none(), "no code to a landline");
    // A form the page cannot read at all.
    let garbled = app.client.post(format!("{}{PAGE}", app.base)).body("phone=1").send().await.expect("an answer");
    Shown::read(garbled).await.assert_says(400, "Форму не удалось прочитать");

    let banned = app.sign_in("+79997500021").await;
    app.exec(&format!("UPDATE users SET status = 'banned' WHERE id = {}", app.uuid_literal(banned.user_id))).await;
    let refused = submit(&app, "?lang=en", &[("phone", "+79997500021")]).await;
    refused.assert_says(403, "contact the club");
    assert!(refused.html.contains(r#"name="phone""#) && !refused.html.contains(r#"name="code""#));

    // A code asked before the ban deletes nothing after it.
    let later = app.sign_in("+79997500022").await;
    submit(&app, "", &[("phone", "+79997500022")]).await.assert_asks_for_the_code_of("+79997500022");
    let code = app.last_code("+79997500022");
    app.exec(&format!("UPDATE users SET status = 'banned' WHERE id = {}", app.uuid_literal(later.user_id))).await;
    submit(&app, "?lang=en", &[("phone", "+79997500022"), ("code", &code)]).await.assert_says(403, "contact the club");
    let row = format!("SELECT status FROM users WHERE id = {}", app.uuid_literal(later.user_id));
    assert_eq!(app.scalar(&row).await.as_deref(), Some("banned"), "the banned account stays as it was");
}

async fn a_right_code_for_a_phone_without_an_account_is_a_404_page(backend: Backend) {
    let Some(app) = spawn_app(backend).await else { return };
    let nobody = "+79997500031";
    submit(&app, "", &[("phone", nobody)]).await.assert_asks_for_the_code_of(nobody);
    let code = app.last_code(nobody);
    let refused = submit(&app, "", &[("phone", nobody), ("code", &code)]).await;
    refused.assert_says(404, "С этим номером нет аккаунта Floor");
    assert!(refused.html.contains(&format!(r#"value="{nobody}""#)), "the phone back in its field for a retry");
    assert_eq!(app.count(&format!("SELECT COUNT(*) FROM users WHERE phone = '{nobody}'")).await, 0, "no account made");
}

async fn the_pages_forms_spend_the_apis_code_budgets_and_their_refusal_is_the_page(backend: Backend) {
    let limits = [("RATE_LIMIT_CODE_REQUESTS", "1/1h"), ("RATE_LIMIT_CODE_CHECKS", "1/1h")];
    let Some(app) = spawn_app_with(backend, &limits).await else { return };
    // The form without a code is a code request: the address's one.
    submit(&app, "", &[("phone", ANNA)]).await.assert_asks_for_the_code_of(ANNA);
    let refused = submit(&app, "?lang=en", &[("phone", "+79997500041")]).await;
    refused.assert_says(429, "Too many attempts from your network");
    assert!(refused.headers.contains_key("retry-after"), "the limiter's Retry-After is kept");
    assert!(app.outbox.last_code("+79997500041").is_none(), "a refused request sends no code");
    app.request_code("+79997500042").await.assert_error(429, "RATE_LIMITED");
    // The form with a code is a code check: the address's one, shared with the API.
    let right = app.last_code(ANNA);
    submit(&app, "", &[("phone", ANNA), ("code", wrong(&right))]).await.assert_says(400, "Код неверный");
    let refused = submit(&app, "", &[("phone", ANNA), ("code", &right)]).await;
    refused.assert_says(429, "Слишком много попыток с вашего адреса");
    app.verify(ANNA, &right).await.assert_error(429, "RATE_LIMITED");
    // Reading the page is not limited, as the share page is not.
    open(&app, "", &[]).await.assert_says(200, "Удаление аккаунта");
}

/// Waits up to five seconds for `expression` to be true on `page`, across a navigation.
async fn until(page: &BrowserPage, expression: &str) {
    let since = Instant::now();
    loop {
        let value = page.evaluate(expression).await.ok().and_then(|value| value.into_value::<Value>().ok());
        if value == Some(Value::Bool(true)) {
            return;
        }
        assert!(since.elapsed() < Duration::from_secs(5), "{expression} within 5 s");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

async fn text_of(page: &BrowserPage, selector: &str) -> String {
    let element = page.find_element(selector).await.expect("the element");
    element.inner_text().await.expect("its text").unwrap_or_default()
}

/// Types `text` into the field `selector` and presses the button `button`.
async fn fill_and_send(page: &BrowserPage, selector: &str, text: &str, button: &str) {
    page.find_element(selector)
        .await
        .expect("the field")
        .click()
        .await
        .expect("focus")
        .type_str(text)
        .await
        .expect("typed");
    page.find_element(button).await.expect("the button").click().await.expect("pressed");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_person_deletes_their_account_in_a_browser_without_the_app() {
    let Some(browser) = chromium().await else { return };
    let Some(app) = spawn_app(Backend::Sqlite).await else { return };
    let anna = app.sign_in(ANNA).await;

    // Russian by the address: the browser's own Accept-Language may ask for English.
    let page = browser.browser.new_page(format!("{}{PAGE}?lang=ru", app.base)).await.expect("the page opens");
    page.wait_for_navigation().await.expect("the page loads");
    assert_eq!(text_of(&page, "h1").await, "Удаление аккаунта");
    shoot(&page, "account-delete-390x844.png").await;

    // The link switches to English, and the forms keep it.
    page.find_element("#other-language").await.expect("the language link").click().await.expect("pressed");
    until(&page, "document.documentElement.lang === 'en'").await;
    assert_eq!(text_of(&page, "h1").await, "Delete your account");
    fill_and_send(&page, "#phone", ANNA, "#send").await;
    until(&page, "!!document.getElementById('code')").await;
    assert_eq!(text_of(&page, "#sent-to").await, ANNA);
    assert!(text_of(&page, ".warning").await.contains("cannot be undone"));
    shoot(&page, "account-delete-code-390x844.png").await;
    let code = app.last_code(ANNA);
    fill_and_send(&page, "#code", &code, "#delete").await;
    until(&page, "!!document.getElementById('done')").await;
    assert_eq!(text_of(&page, "h1").await, "Account deleted");
    until(&page, "document.documentElement.lang === 'en'").await;

    app.get("/auth/me", Some(&anna.access_token)).await.assert_error(401, "UNAUTHORIZED");
    let status = app.scalar(&format!("SELECT status FROM users WHERE id = {}", app.uuid_literal(anna.user_id))).await;
    assert_eq!(status.as_deref(), Some("deleted"));
}

/// A screenshot of the whole page on a phone's screen, which it fits without scrolling sideways.
async fn shoot(page: &BrowserPage, name: &str) {
    page.execute(SetDeviceMetricsOverrideParams::new(390, 844, 1.0, true)).await.expect("a phone's screen");
    until(page, "document.documentElement.scrollWidth <= window.innerWidth").await;
    let whole = ScreenshotParams::builder().full_page(true).build();
    page.save_screenshot(whole, screenshot_path(name)).await.expect("a screenshot");
}
