//! `GET /t/{tournamentId}`: the public page behind the links the apps share (a phone with the
//! app opens the app instead where the app links are configured: `app_links`). Russian,
//! readable on a phone, with Open Graph tags so a messenger shows a card: title, club, venue
//! and address, start in the venue's zone, structure, prizes, seats, status, the live screen
//! while it runs and the final standings after. Rendered on the server (crawlers run no
//! script), every text escaped by maud.

use axum::extract::{Path, State};
use axum::http::HeaderValue;
use axum::http::StatusCode;
use axum::http::header::CONTENT_TYPE;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use floor_actors::live::LiveState;
use floor_actors::rules::structure::Segment;
use floor_entities::enums::TournamentStatus;
use floor_entities::{locations, tournaments};
use maud::{DOCTYPE, Markup, html};
use sea_orm::EntityTrait;
use uuid::Uuid;

use super::{PAGE_HEADERS, PAGE_STYLE};
use crate::domain::tournaments::{screen_path, share_path};
use crate::http::state::AppState;
use crate::http::tournaments::{TournamentView, tournament_view};
use crate::infra::error::AppResult;
use crate::values::local_time;

pub fn share_router(state: AppState) -> axum::Router {
    axum::Router::new().route("/t/{id}", get(page)).with_state(state)
}

/// The share page's own style, after the pages' shared one.
const STYLE: &str = ".club{color:#9fb3a6}.status{display:inline-block;padding:.2rem .6rem;border-radius:.4rem;background:#f2c14e;color:#1b1405;font-weight:bold}\
table{border-collapse:collapse;width:100%}td,th{text-align:left;padding:.15rem .6rem .15rem 0}.break td{color:#7fd1ff}\
.screen{display:block;text-align:center;font-size:1.2rem;font-weight:bold;padding:.8rem;border:2px solid #f2c14e;border-radius:.6rem;text-decoration:none}\
ol{padding-left:1.4rem}";

async fn page(State(app): State<AppState>, Path(id): Path<String>) -> Response {
    let found = match Uuid::parse_str(&id) {
        Ok(id) => load(&app, id).await,
        Err(_) => Ok(None),
    };
    let html_type = [(CONTENT_TYPE, HeaderValue::from_static("text/html; charset=utf-8"))];
    match found {
        Ok(Some(shown)) => {
            (PAGE_HEADERS, html_type, render(&app.config.public_url, &shown).into_string()).into_response()
        }
        Ok(None) => (StatusCode::NOT_FOUND, PAGE_HEADERS, html_type, not_found().into_string()).into_response(),
        Err(err) => {
            tracing::error!(error = %err, "could not show a share page");
            (StatusCode::INTERNAL_SERVER_ERROR, PAGE_HEADERS, html_type, "Ошибка сервера").into_response()
        }
    }
}

/// What the page shows of a tournament.
struct Shown {
    card: TournamentView,
    venue: Option<locations::Model>,
    live: Option<LiveState>,
}

async fn load(app: &AppState, id: Uuid) -> AppResult<Option<Shown>> {
    let Some(model) = tournaments::Entity::find_by_id(id).one(&app.reads).await? else { return Ok(None) };
    let venue = locations::Entity::find_by_id(model.location_id).one(&app.reads).await?;
    let card = tournament_view(&app.reads, model).await?;
    // The structure, the count of players and the standings, as the live screen shows them.
    let live = app.live.snapshot(id).await.ok().map(|state| (*state).clone());
    Ok(Some(Shown { card, venue, live }))
}

fn title_of(card: &TournamentView) -> String {
    let texts = &card.translations;
    texts.ru.as_ref().or(texts.en.as_ref()).map_or_else(|| "Турнир".to_owned(), |text| text.title.clone())
}

fn status_name(status: TournamentStatus) -> &'static str {
    match status {
        TournamentStatus::Announced => "Анонс",
        TournamentStatus::Registration => "Идёт регистрация",
        TournamentStatus::Running => "Идёт игра",
        TournamentStatus::Finished => "Завершён",
        TournamentStatus::Cancelled => "Отменён",
    }
}

fn absolute(public_url: &str, url: &str) -> String {
    if url.starts_with('/') { format!("{public_url}{url}") } else { url.to_owned() }
}

fn render(public_url: &str, shown: &Shown) -> Markup {
    let card = &shown.card;
    let title = title_of(card);
    let venue = shown.venue.as_ref();
    let starts = local_time::russian(card.starts_at, venue.map(|venue| venue.timezone.as_str()));
    let place = venue.map(|venue| venue.name.clone()).unwrap_or_default();
    let description = format!("{} · {starts} · {place}", card.organizer_name);
    let url = format!("{public_url}{}", share_path(card.id));
    html! {
        (DOCTYPE)
        html lang="ru" {
            head {
                meta charset="utf-8";
                meta name="viewport" content="width=device-width, initial-scale=1";
                title { (title) " · " (card.organizer_name) }
                meta name="description" content=(description);
                meta property="og:type" content="website";
                meta property="og:site_name" content="Floor";
                meta property="og:locale" content="ru_RU";
                meta property="og:title" content=(title);
                meta property="og:description" content=(description);
                meta property="og:url" content=(url);
                @if let Some(banner) = &card.banner_url {
                    meta property="og:image" content=(absolute(public_url, banner));
                }
                style { (maud::PreEscaped(PAGE_STYLE)) (maud::PreEscaped(STYLE)) }
            }
            body {
                main {
                    p { span.status { (status_name(card.status)) } }
                    h1 { (title) }
                    @if let Some(subtitle) = card.translations.ru.as_ref().and_then(|text| text.subtitle.as_ref()) {
                        p.muted { (subtitle) }
                    }
                    p.club { (card.organizer_name) }
                    section {
                        h2 { "Когда и где" }
                        p { "Начало " strong { (starts) } }
                        @if let Some(venue) = venue {
                            p { (venue.name) br; span.muted { (venue.address) } }
                        }
                        p { "Мест занято " strong { (card.registered_count) " из " (card.capacity) }
                            @if card.waitlist_count > 0 { span.muted { " · в листе ожидания " (card.waitlist_count) } } }
                    }
                    @if card.status == TournamentStatus::Running {
                        a.screen href=(screen_path(card.id)) { "Часы турнира — смотреть" }
                    }
                    @if let Some(prizes) = &card.prizes {
                        section { h2 { "Призы" } p { (prizes) } }
                    }
                    @if let Some(live) = &shown.live {
                        @if matches!(live.status, TournamentStatus::Finished) {
                            section { h2 { "Итоги" } (standings(live)) }
                        }
                        @if !live.clock.levels.is_empty() && !matches!(live.status, TournamentStatus::Finished | TournamentStatus::Cancelled) {
                            section { h2 { "Структура" } (structure(&live.clock.levels)) }
                        }
                    }
                }
            }
        }
    }
}

fn structure(levels: &[Segment]) -> Markup {
    let mut level = 0;
    html! {
        table {
            thead { tr { th { "№" } th { "Блайнды" } th { "Анте" } th { "Минут" } } }
            tbody {
                @for segment in levels {
                    @match segment {
                        Segment::Level { duration_min, small_blind, big_blind, ante, .. } => {
                            ({ level += 1; "" })
                            tr { td { (level) } td { (small_blind) " / " (big_blind) } td { (ante.filter(|a| *a > 0).map(|a| a.to_string()).unwrap_or_default()) } td { (duration_min) } }
                        }
                        Segment::Break { duration_min, .. } => {
                            tr.break { td {} td { "Перерыв" } td {} td { (duration_min) } }
                        }
                    }
                }
            }
        }
    }
}

/// The winner (still seated) first, then everyone out by place.
fn standings(live: &LiveState) -> Markup {
    let mut out: Vec<_> = live.eliminations.iter().collect();
    out.sort_by_key(|elimination| elimination.place);
    html! {
        ol {
            @for table in &live.tables { @for seat in &table.seats { li value="1" { (seat.name) } } }
            @for elimination in out { li value=(elimination.place) { (elimination.name) } }
        }
    }
}

fn not_found() -> Markup {
    html! {
        (DOCTYPE)
        html lang="ru" {
            head { meta charset="utf-8"; meta name="viewport" content="width=device-width, initial-scale=1"; title { "Турнир не найден" } style { (maud::PreEscaped(PAGE_STYLE)) (maud::PreEscaped(STYLE)) } }
            body { main { h1 { "Турнир не найден" } p.muted { "Ссылка неверна, или турнир удалён." } } }
        }
    }
}
