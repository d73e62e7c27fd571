//! `/account/delete`: deleting one's account without the app, the address the store listings
//! give. In Russian, or English (`?lang=en`, or the browser's `Accept-Language`); rendered on
//! the server from plain forms, with no script and nothing from another host. It says what is
//! deleted and what stays anonymised, asks for the phone and sends it a code (`POST` with
//! `phone`), then deletes on the right code (`POST` with `phone` and `code`) as
//! `POST /me/delete` does. Every refusal is this page again, with a line saying why in the
//! reader's language and the status of its contract code.
//!
//! Both steps spend the API's budgets of their address: a form without a code those of code
//! requests, one with a code that of code checks (`http::limits`). A refusal of those budgets
//! is this page too, rather than the API's JSON.

use std::sync::{Arc, LazyLock};

use axum::extract::rejection::FormRejection;
use axum::extract::{Form, Request, State};
use axum::http::header::{
    CACHE_CONTROL, CONTENT_SECURITY_POLICY, CONTENT_TYPE, REFERRER_POLICY, RETRY_AFTER, X_CONTENT_TYPE_OPTIONS,
};
use axum::http::{HeaderName, HeaderValue, StatusCode};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use base64::Engine;
use maud::{DOCTYPE, Markup, PreEscaped, html};
use serde::Deserialize;
use sha2::{Digest, Sha256};

use super::PAGE_STYLE;
use super::language::Lang;
use crate::domain::auth::otp;
use crate::domain::players::deletion::{self, Asked, PAGE_ROUTE};
use crate::http::cached;
use crate::http::limits::{self, AbuseLimits};
use crate::http::me::after_deletion;
use crate::http::state::AppState;
use crate::infra::error::{ErrorCode, RETRY_UNAVAILABLE_AFTER};
use crate::values::Phone;

pub fn account_deletion_router(state: AppState, abuse_limits: Arc<AbuseLimits>) -> axum::Router {
    axum::Router::new()
        .route(PAGE_ROUTE, get(show_page).post(take_step))
        // A deletion gives places back: the kept public reads go, as after any API write.
        .route_layer(middleware::from_fn_with_state(state.clone(), cached::drop_on_change))
        .route_layer(middleware::from_fn_with_state(abuse_limits, limits::limit_abuse))
        .route_layer(middleware::from_fn(abuse_refusal_as_page))
        .with_state(state)
}

/// The page's own style, after the pages' shared one.
const STYLE: &str = ".lang{text-align:right;margin:0}ul{padding-left:1.2rem}li{margin:.25rem 0}\
label{display:block;font-weight:bold;margin:.2rem 0 .4rem}\
input{box-sizing:border-box;width:100%;font-size:1.3rem;padding:.6rem;border:1px solid #9fb3a6;border-radius:.4rem;background:#f4f1e8;color:#0b1a12}\
#code{letter-spacing:.3em;text-align:center}\
button{box-sizing:border-box;width:100%;margin-top:.8rem;font-size:1.1rem;font-weight:bold;padding:.8rem;border:0;border-radius:.6rem;background:#f2c14e;color:#1b1405}\
button.danger{background:#e5484d;color:#fff}.warning{color:#ffb4a9;font-weight:bold}\
.problem{background:#4a1a1a;border-left:4px solid #e5484d;border-radius:.4rem;padding:.6rem .8rem}";

/// The page's headers: never kept by any cache (it carries a phone), no address of it sent on,
/// and a policy that allows its one inline style (by hash) and forms to itself, nothing else.
static HEADERS: LazyLock<[(HeaderName, HeaderValue); 5]> = LazyLock::new(|| {
    let digest = Sha256::digest(format!("{PAGE_STYLE}{STYLE}").as_bytes());
    let style = base64::engine::general_purpose::STANDARD.encode(digest);
    let policy = format!(
        "default-src 'none'; style-src 'sha256-{style}'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
    );
    [
        (CONTENT_TYPE, HeaderValue::from_static("text/html; charset=utf-8")),
        (CACHE_CONTROL, HeaderValue::from_static("no-store")),
        (
            CONTENT_SECURITY_POLICY,
            HeaderValue::try_from(policy).unwrap_or(HeaderValue::from_static("default-src 'none'")),
        ),
        (REFERRER_POLICY, HeaderValue::from_static("no-referrer")),
        (X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff")),
    ]
});

/// What the page's forms send. A `code` makes it the second step, as it does for the abuse
/// limits.
#[derive(Deserialize)]
struct DeletionForm {
    phone: Option<String>,
    code: Option<String>,
}

/// Where the reader stands.
enum Step<'a> {
    /// Asked for the phone (with what was typed, after a refusal).
    Phone(&'a str),
    /// A code went to the phone: asked for it.
    Code(&'a Phone),
    /// The account is deleted.
    Done,
}

/// Why a step was refused, as the reader is told.
#[derive(Clone, Copy, Debug)]
enum Problem {
    /// Not a phone that can exist.
    NotAPhone,
    /// A phone that cannot take a code (a fixed line, toll-free…).
    NotAMobile,
    /// Not six digits.
    NotACode,
    /// The form could not be read at all.
    BadForm,
    /// Any other refusal, by its contract code.
    Refused(ErrorCode),
}

impl Problem {
    fn status(self) -> StatusCode {
        match self {
            Self::NotAPhone | Self::NotAMobile | Self::NotACode | Self::BadForm => StatusCode::BAD_REQUEST,
            Self::Refused(code) => code.status(),
        }
    }

    fn text(self, texts: &Texts) -> &'static str {
        match self {
            Self::NotAPhone => texts.not_a_phone,
            Self::NotAMobile => texts.not_a_mobile,
            Self::NotACode => texts.not_a_code,
            Self::BadForm => texts.bad_form,
            Self::Refused(ErrorCode::InvalidOtp) => texts.invalid_code,
            Self::Refused(ErrorCode::OtpRateLimited) => texts.too_many_codes,
            Self::Refused(ErrorCode::NotFound) => texts.no_account,
            Self::Refused(ErrorCode::SoleOwner) => texts.sole_owner,
            Self::Refused(ErrorCode::PlayingNow) => texts.playing_now,
            Self::Refused(ErrorCode::UserBanned) => texts.banned,
            Self::Refused(ErrorCode::ServiceUnavailable) => texts.unavailable,
            Self::Refused(_) => texts.failed,
        }
    }
}

async fn show_page(lang: Lang) -> Response {
    respond(lang, StatusCode::OK, &Step::Phone(""), None)
}

/// One step of the form: with a code, the deletion; without one, the code to the phone.
async fn take_step(
    State(app): State<AppState>,
    lang: Lang,
    form: Result<Form<DeletionForm>, FormRejection>,
) -> Response {
    let Ok(Form(form)) = form else { return refuse(lang, &Step::Phone(""), Problem::BadForm) };
    let typed = form.phone.unwrap_or_default();
    let Ok(phone) = Phone::parse(&typed) else { return refuse(lang, &Step::Phone(&typed), Problem::NotAPhone) };
    match form.code {
        None => send_code(&app, lang, &phone).await,
        Some(code) => delete(&app, lang, &phone, &code).await,
    }
}

async fn send_code(app: &AppState, lang: Lang, phone: &Phone) -> Response {
    match otp::request_code(&app.db, &app.sign_in, phone).await {
        Ok(_) => respond(lang, StatusCode::OK, &Step::Code(phone), None),
        Err(err) => {
            let problem = match err.into_public().0 {
                ErrorCode::ValidationError => Problem::NotAMobile,
                code => Problem::Refused(code),
            };
            refuse(lang, &Step::Phone(phone.as_str()), problem)
        }
    }
}

async fn delete(app: &AppState, lang: Lang, phone: &Phone, code: &str) -> Response {
    let Ok(code) = otp::parse_code(code) else { return refuse(lang, &Step::Code(phone), Problem::NotACode) };
    match deletion::delete_account(&app.db, &app.erasures, &app.notifier, phone, code, Asked::OnTheWeb).await {
        Ok(deleted) => {
            after_deletion(app, deleted).await;
            respond(lang, StatusCode::OK, &Step::Done, None)
        }
        Err(err) => {
            let code = err.into_public().0;
            // Without an account, or with one that may not ask here, the phone was the problem.
            // Otherwise the code step again, its phone kept: a mistyped code is typed again, and
            // a refusal (an only owner, a player now) spent no code, so it serves once mended.
            let step = match code {
                ErrorCode::NotFound | ErrorCode::UserBanned => Step::Phone(phone.as_str()),
                _ => Step::Code(phone),
            };
            refuse(lang, &step, Problem::Refused(code))
        }
    }
}

fn refuse(lang: Lang, step: &Step, problem: Problem) -> Response {
    let mut response = respond(lang, problem.status(), step, Some(problem.text(texts(lang))));
    if matches!(problem, Problem::Refused(ErrorCode::ServiceUnavailable)) {
        response.headers_mut().insert(RETRY_AFTER, HeaderValue::from(RETRY_UNAVAILABLE_AFTER));
    }
    response
}

fn respond(lang: Lang, status: StatusCode, step: &Step, problem: Option<&str>) -> Response {
    (status, HEADERS.clone(), render(lang, step, problem).into_string()).into_response()
}

/// The abuse limits answer in the API's JSON: on this page their `429` becomes the page, its
/// `Retry-After` kept, asking for the phone again (the form is gone by then).
async fn abuse_refusal_as_page(lang: Lang, request: Request, next: Next) -> Response {
    let response = next.run(request).await;
    let is_json =
        response.headers().get(CONTENT_TYPE).is_some_and(|kind| kind.as_bytes().starts_with(b"application/json"));
    if response.status() != StatusCode::TOO_MANY_REQUESTS || !is_json {
        return response;
    }
    let retry_after = response.headers().get(RETRY_AFTER).cloned();
    let seconds = retry_after.as_ref().and_then(|value| value.to_str().ok()?.parse::<u64>().ok()).unwrap_or(60);
    let problem = too_many_tries(lang, seconds.div_ceil(60).max(1));
    let mut page = respond(lang, StatusCode::TOO_MANY_REQUESTS, &Step::Phone(""), Some(&problem));
    if let Some(value) = retry_after {
        page.headers_mut().insert(RETRY_AFTER, value);
    }
    page
}

fn too_many_tries(lang: Lang, minutes: u64) -> String {
    match lang {
        Lang::Ru => format!("Слишком много попыток с вашего адреса. Попробуйте снова через {minutes} мин."),
        Lang::En => format!("Too many attempts from your network. Try again in {minutes} min."),
    }
}

/// Where the forms go: this page, in the reader's language.
fn action(lang: Lang) -> String {
    format!("{PAGE_ROUTE}?lang={}", lang.code())
}

fn render(lang: Lang, step: &Step, problem: Option<&str>) -> Markup {
    let texts = texts(lang);
    html! {
        (DOCTYPE)
        html lang=(lang.code()) {
            head {
                meta charset="utf-8";
                meta name="viewport" content="width=device-width, initial-scale=1";
                title { (texts.title) " · Floor" }
                style { (PreEscaped(PAGE_STYLE)) (PreEscaped(STYLE)) }
            }
            body {
                main {
                    @if let Step::Phone(_) = step {
                        p.lang { a #other-language href=(action(lang.other())) hreflang=(lang.other().code()) lang=(lang.other().code()) { (texts.other_language) } }
                    }
                    h1 { @if let Step::Done = step { (texts.done_title) } @else { (texts.title) } }
                    @if let Some(problem) = problem {
                        p.problem #problem role="alert" { (problem) }
                    }
                    @match step {
                        Step::Phone(typed) => {
                            p { (texts.intro) }
                            (explanation(texts))
                            (phone_form(lang, texts, typed))
                        }
                        Step::Code(phone) => {
                            (code_form(lang, texts, phone))
                            (explanation(texts))
                        }
                        Step::Done => {
                            p #done { (texts.done) }
                            p.muted { (texts.afresh) }
                        }
                    }
                }
            }
        }
    }
}

/// What is deleted, what stays anonymised, when the deletion is refused, and what comes after.
fn explanation(texts: &Texts) -> Markup {
    html! {
        section {
            h2 { (texts.deleted_heading) }
            ul { @for line in texts.deleted { li { (line) } } }
        }
        section {
            h2 { (texts.kept_heading) }
            ul { @for line in texts.kept { li { (line) } } }
        }
        section {
            h2 { (texts.refused_heading) }
            ul { @for line in texts.refused { li { (line) } } }
        }
        p.muted { (texts.afresh) " " (texts.in_the_app) }
    }
}

fn phone_form(lang: Lang, texts: &Texts, typed: &str) -> Markup {
    html! {
        section {
            form method="post" action=(action(lang)) {
                label for="phone" { (texts.phone_label) }
                input #phone type="tel" name="phone" autocomplete="tel" inputmode="tel" required
                    placeholder="+7 900 123-45-67" value=(typed);
                p.muted { (texts.phone_hint) }
                button #send type="submit" { (texts.send_code) }
            }
        }
    }
}

fn code_form(lang: Lang, texts: &Texts, phone: &Phone) -> Markup {
    html! {
        section {
            form method="post" action=(action(lang)) {
                p { (texts.code_sent) " " strong #sent-to { (phone.as_str()) } }
                input type="hidden" name="phone" value=(phone.as_str());
                label for="code" { (texts.code_label) }
                input #code type="text" name="code" inputmode="numeric" autocomplete="one-time-code"
                    pattern="[0-9]{6}" minlength="6" maxlength="6" required autofocus;
                p.warning { (texts.warning) }
                button.danger #delete type="submit" { (texts.delete) }
            }
            p { a href=(action(lang)) { (texts.start_again) } }
        }
    }
}

/// Everything the page says, in one language.
struct Texts {
    other_language: &'static str,
    title: &'static str,
    intro: &'static str,
    deleted_heading: &'static str,
    deleted: &'static [&'static str],
    kept_heading: &'static str,
    kept: &'static [&'static str],
    refused_heading: &'static str,
    refused: &'static [&'static str],
    afresh: &'static str,
    in_the_app: &'static str,
    phone_label: &'static str,
    phone_hint: &'static str,
    send_code: &'static str,
    code_sent: &'static str,
    code_label: &'static str,
    warning: &'static str,
    delete: &'static str,
    start_again: &'static str,
    done_title: &'static str,
    done: &'static str,
    not_a_phone: &'static str,
    not_a_mobile: &'static str,
    not_a_code: &'static str,
    bad_form: &'static str,
    invalid_code: &'static str,
    too_many_codes: &'static str,
    no_account: &'static str,
    sole_owner: &'static str,
    playing_now: &'static str,
    banned: &'static str,
    unavailable: &'static str,
    failed: &'static str,
}

fn texts(lang: Lang) -> &'static Texts {
    match lang {
        Lang::Ru => &RU,
        Lang::En => &EN,
    }
}

const RU: Texts = Texts {
    other_language: "English",
    title: "Удаление аккаунта",
    intro: "Здесь можно удалить свой аккаунт Floor без приложения: нужен только телефон, с которым вы входите.",
    deleted_heading: "Что удаляется",
    deleted: &[
        "номер телефона, имя, никнейм, аватар и город;",
        "входы на всех устройствах и устройства для уведомлений;",
        "ссылка на ваш календарь турниров;",
        "подписки на игроков и ваши подписчики;",
        "членство в клубах;",
        "профиль дилера и приглашения дилером;",
        "уведомления;",
        "записи о согласии на обработку персональных данных;",
        "штрафы за неявки и поздние отмены;",
        "места в турнирах, которые ещё не начались: они освобождаются без штрафа, и очередь ожидания сдвигается.",
    ],
    kept_heading: "Что остаётся, без вашего имени",
    kept: &[
        "Результаты и вылеты в сыгранных турнирах остаются на своих местах под именем «Удалённый игрок», без телефона и других ваших данных.",
        "Рейтинги других игроков не меняются.",
    ],
    refused_heading: "Когда удалить нельзя",
    refused: &[
        "Вы единственный владелец клуба: сначала сделайте владельцем кого-то другого.",
        "Вы играете в идущем турнире: удалите аккаунт после его окончания.",
    ],
    afresh: "Позже с тем же номером можно зарегистрироваться снова — это будет новый аккаунт, без прежней истории.",
    in_the_app: "В приложении то же самое есть в профиле.",
    phone_label: "Номер телефона",
    phone_hint: "Мы отправим на него код, чтобы убедиться, что номер ваш.",
    send_code: "Получить код",
    code_sent: "Код отправлен на номер",
    code_label: "Код из 6 цифр",
    warning: "Удаление нельзя отменить: аккаунт и всё перечисленное ниже будет удалено сразу.",
    delete: "Удалить аккаунт",
    start_again: "Другой номер или новый код",
    done_title: "Аккаунт удалён",
    done: "Ваш аккаунт Floor удалён. Результаты сыгранных турниров остаются под именем «Удалённый игрок».",
    not_a_phone: "Это не похоже на номер телефона. Введите его в международном формате, с кодом страны: +7 900 123-45-67.",
    not_a_mobile: "На этот номер нельзя отправить код: коды приходят только на мобильные номера.",
    not_a_code: "Введите код — шесть цифр.",
    bad_form: "Форму не удалось прочитать. Начните, пожалуйста, заново.",
    invalid_code: "Код неверный, устарел или уже использован. Проверьте его или запросите новый.",
    too_many_codes: "На этот номер уже отправлено три кода за 10 минут. Попробуйте позже.",
    no_account: "С этим номером нет аккаунта Floor — удалять нечего.",
    sole_owner: "Вы единственный владелец клуба. Сначала сделайте владельцем клуба кого-то другого, затем удалите аккаунт.",
    playing_now: "Вы играете в идущем турнире. Удалить аккаунт можно после его окончания.",
    banned: "Этот аккаунт заблокирован, и удалить его здесь нельзя. Напишите в клуб или в поддержку Floor.",
    unavailable: "Сервис сейчас недоступен. Попробуйте через минуту.",
    failed: "Что-то пошло не так на нашей стороне. Попробуйте позже.",
};

const EN: Texts = Texts {
    other_language: "Русский",
    title: "Delete your account",
    intro: "Here you can delete your Floor account without the app: all you need is the phone you sign in with.",
    deleted_heading: "What is deleted",
    deleted: &[
        "your phone number, name, nickname, avatar and city;",
        "your sign-ins on every device, and the devices that get notifications;",
        "the link to your tournament calendar;",
        "the players you follow and your followers;",
        "your club memberships;",
        "your dealer profile and dealer invitations;",
        "your notifications;",
        "the records of your consent to the processing of personal data;",
        "your strikes for no-shows and late cancellations;",
        "your places in tournaments that have not started yet: they are given back with no strike, and the waiting list moves up.",
    ],
    kept_heading: "What stays, without your name",
    kept: &[
        "Results and eliminations of tournaments you played keep their places under the name «Удалённый игрок» (\"Deleted player\"), with no phone or anything else of yours.",
        "Other players' ratings do not change.",
    ],
    refused_heading: "When it cannot be deleted",
    refused: &[
        "You are the only owner of a club: make someone else its owner first.",
        "You are playing in a running tournament: delete the account after it ends.",
    ],
    afresh: "Later, the same phone may sign up again: that makes a new account, with none of the old history.",
    in_the_app: "The app has the same in its profile.",
    phone_label: "Phone number",
    phone_hint: "We will send it a code, to make sure the number is yours.",
    send_code: "Send the code",
    code_sent: "The code went to",
    code_label: "The 6-digit code",
    warning: "Deletion cannot be undone: the account and everything listed below are deleted at once.",
    delete: "Delete my account",
    start_again: "Another number, or a new code",
    done_title: "Account deleted",
    done: "Your Floor account is deleted. Results of tournaments you played stay under the name «Удалённый игрок» (\"Deleted player\").",
    not_a_phone: "This does not look like a phone number. Enter it in international form, with the country code: +44 7400 123456.",
    not_a_mobile: "A code cannot be sent to this number: codes go only to mobile numbers.",
    not_a_code: "Enter the code: six digits.",
    bad_form: "The form could not be read. Please start again.",
    invalid_code: "The code is wrong, expired or used up. Check it, or ask for a new one.",
    too_many_codes: "Three codes have gone to this number in the last 10 minutes. Try again later.",
    no_account: "There is no Floor account with this number: nothing to delete.",
    sole_owner: "You are the only owner of a club. Make someone else its owner first, then delete the account.",
    playing_now: "You are playing in a running tournament. You can delete the account after it ends.",
    banned: "This account is banned and cannot be deleted here. Please contact the club or Floor's support.",
    unavailable: "The service is unavailable right now. Try again in a minute.",
    failed: "Something went wrong on our side. Please try again later.",
};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_page_names_deleted_players_as_the_service_does() {
        for texts in [&RU, &EN] {
            assert!(texts.kept[0].contains(&format!("«{}»", deletion::DELETED_PLAYER)), "{}", texts.kept[0]);
        }
        assert!(RU.done.contains(deletion::DELETED_PLAYER) && EN.done.contains(deletion::DELETED_PLAYER));
    }

    #[test]
    fn refusals_keep_the_contracts_statuses() {
        assert_eq!(Problem::NotAMobile.status(), StatusCode::BAD_REQUEST);
        assert_eq!(Problem::Refused(ErrorCode::InvalidOtp).status(), StatusCode::BAD_REQUEST);
        assert_eq!(Problem::Refused(ErrorCode::NotFound).status(), StatusCode::NOT_FOUND);
        assert_eq!(Problem::Refused(ErrorCode::UserBanned).status(), StatusCode::FORBIDDEN);
        assert_eq!(Problem::Refused(ErrorCode::SoleOwner).status(), StatusCode::CONFLICT);
        assert_eq!(Problem::Refused(ErrorCode::PlayingNow).status(), StatusCode::CONFLICT);
        assert_eq!(Problem::Refused(ErrorCode::OtpRateLimited).status(), StatusCode::TOO_MANY_REQUESTS);
        assert_eq!(Problem::Refused(ErrorCode::ServiceUnavailable).status(), StatusCode::SERVICE_UNAVAILABLE);
        assert_eq!(Problem::Refused(ErrorCode::InternalError).text(&EN), EN.failed);
    }
}
