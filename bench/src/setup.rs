//! The tournament under measurement, prepared over the API as a club would: the platform
//! admin signs in, opens a club, a hall and a tournament, seats `players` walk-ins, starts it
//! and eliminates `eliminated` of them (so the LiveState has its usual size, ~65 KB with
//! 470/100). Then the triggers of the rounds: pause and resume, answered with the LiveState.

use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use futures_util::{StreamExt, TryStreamExt};
use reqwest::Method;
use serde::Deserialize;
use serde_json::{Value, json};

use crate::server::{ADMIN_PHONE, Server};

/// Walk-ins sent at once: each is a small transaction, and SQLite writes one at a time anyway.
const WALK_INS_AT_ONCE: usize = 8;

/// The API as the platform admin.
pub struct Api {
    http: reqwest::Client,
    /// `http://host:port/api/v1`.
    base: String,
    /// The admin's access token: it also passes `/live`.
    pub token: String,
}

/// The prepared tournament.
pub struct Tournament {
    pub id: String,
    /// Where it is played: more tournaments may be scheduled there ([`Api::schedule`]).
    pub venue: Venue,
    /// Size of `GET /tournaments/{id}/live`: the LiveState every `state` event carries.
    pub live_bytes: usize,
    pub version: i64,
}

/// A club's hall and the blind template its tournaments use.
#[derive(Clone)]
pub struct Venue {
    pub club: String,
    hall: Value,
    template: Value,
}

/// The part of a LiveState a trigger's answer is read for.
#[derive(Deserialize)]
struct Versioned {
    version: i64,
}

impl Api {
    /// Signs the platform admin in with the code the server prints.
    pub async fn sign_in(server: &mut Server, origin: &str) -> anyhow::Result<Self> {
        let http = reqwest::Client::builder().timeout(Duration::from_secs(60)).build()?;
        let mut api = Self { http, base: format!("{origin}/api/v1"), token: String::new() };
        api.call(Method::POST, "/auth/otp/request", Some(json!({ "phone": ADMIN_PHONE }))).await?;
        let code = server.sign_in_code(ADMIN_PHONE).await?;
        let tokens =
            api.call(Method::POST, "/auth/otp/verify", Some(json!({ "phone": ADMIN_PHONE, "code": code }))).await?;
        api.token = tokens["accessToken"].as_str().context("no accessToken in the sign-in answer")?.to_owned();
        Ok(api)
    }

    /// A club with a hall and a blind template, for tournaments to be scheduled at.
    pub async fn venue(&self) -> anyhow::Result<Venue> {
        let club = self
            .call(Method::POST, "/admin/organizers", Some(json!({ "name": "Perf club", "ownerPhone": ADMIN_PHONE })))
            .await?;
        let club = text(&club["id"])?;
        let cities = self.call(Method::GET, "/cities", None).await?;
        let city = text(&cities["items"][0]["slug"])?;
        let hall = json!({ "name": "Perf hall", "citySlug": city, "address": "1 Main st",
            "timezone": "Europe/Moscow", "lat": 55.75, "lng": 37.61 });
        let hall = self.call(Method::POST, &format!("/organizers/{club}/locations"), Some(hall)).await?;
        let templates = self.call(Method::GET, &format!("/organizers/{club}/blind-templates"), None).await?;
        Ok(Venue { club, hall: hall["id"].clone(), template: templates["items"][0]["id"].clone() })
    }

    /// Prepares the tournament like `../shared/perf/setup-floor.py`.
    pub async fn prepare(&self, players: usize, eliminated: usize) -> anyhow::Result<Tournament> {
        let venue = self.venue().await?;
        let id = self.schedule(&venue, chrono::Duration::hours(6), players.max(2), "Замер").await?;

        let walk_in = format!("/tournaments/{id}/walk-in");
        futures_util::stream::iter(0..players)
            .map(|i| {
                let player =
                    json!({ "phone": format!("+7990{i:07}"), "name": format!("Игрок Номер {i:04} из турнира") });
                self.call(Method::POST, &walk_in, Some(player))
            })
            .buffer_unordered(WALK_INS_AT_ONCE)
            .try_for_each(|_| std::future::ready(Ok(())))
            .await?;
        let started = self.call(Method::POST, &format!("/tournaments/{id}/start"), None).await?;
        let seated = started["tables"].as_array().into_iter().flatten().flat_map(|table| {
            table["seats"].as_array().into_iter().flatten().filter_map(|seat| seat["registrationId"].as_str())
        });
        for registration in seated.take(eliminated) {
            let elimination = json!({ "tournamentId": id, "registrationId": registration });
            self.call(Method::POST, "/eliminations", Some(elimination)).await?;
        }

        let (live_bytes, version) = self.live(&id).await?;
        Ok(Tournament { id, venue, live_bytes, version })
    }

    /// Schedules a tournament at `venue`, `starts_in` from now, open for registration; its id.
    pub async fn schedule(
        &self,
        venue: &Venue,
        starts_in: chrono::Duration,
        capacity: usize,
        title: &str,
    ) -> anyhow::Result<String> {
        let starts_at = (chrono::Utc::now() + starts_in).format("%Y-%m-%dT%H:%M:%S%.3fZ").to_string();
        let tournament = json!({
            "locationId": venue.hall, "blindTemplateId": venue.template, "type": "mtt",
            "startsAt": starts_at, "capacity": capacity,
            "prizes": "Кубок клуба и место в финале сезона",
            "translations": {
                "ru": { "title": title, "subtitle": "нагрузка" },
                "en": { "title": format!("{title} (en)"), "subtitle": "load" },
            },
        });
        let club = &venue.club;
        let tournament = self.call(Method::POST, &format!("/organizers/{club}/tournaments"), Some(tournament)).await?;
        text(&tournament["id"])
    }

    /// The `ETag` of `GET path`.
    pub async fn etag(&self, path: &str) -> anyhow::Result<String> {
        let response =
            self.http.get(format!("{}{path}", self.base)).send().await.with_context(|| format!("GET {path}"))?;
        let tag = response.headers().get("etag").and_then(|tag| tag.to_str().ok()).map(str::to_owned);
        tag.with_context(|| format!("GET {path}: no ETag"))
    }

    /// Signs in a player for each of `phones` (codes asked for `AT_ONCE` at a time, then
    /// checked): their access tokens, in the order of `phones`.
    pub async fn sign_in_players(&self, server: &mut Server, phones: &[String]) -> anyhow::Result<Vec<String>> {
        let answers = self.sign_in_answers(server, phones).await?;
        answers.iter().map(|tokens| text(&tokens["accessToken"])).collect()
    }

    /// [`Api::sign_in_players`]: each whole answer of the code's check (`accessToken`, `user`).
    pub async fn sign_in_answers(&self, server: &mut Server, phones: &[String]) -> anyhow::Result<Vec<Value>> {
        const AT_ONCE: usize = 16;
        futures_util::stream::iter(phones)
            .map(|phone| self.call(Method::POST, "/auth/otp/request", Some(json!({ "phone": phone }))))
            .buffer_unordered(AT_ONCE)
            .try_for_each(|_| std::future::ready(Ok(())))
            .await?;
        let codes = server.sign_in_codes(phones).await?;
        futures_util::stream::iter(phones)
            .map(|phone| async {
                let phone: &String = phone;
                let code = codes.get(phone).with_context(|| format!("no code for {phone}"))?;
                let body = json!({ "phone": phone, "code": code });
                self.call(Method::POST, "/auth/otp/verify", Some(body)).await
            })
            .buffered(AT_ONCE)
            .try_collect()
            .await
    }

    /// A server at `origin` that takes `token` as it is, signed in by no one (the Node peer).
    pub fn holding(origin: &str, token: &str) -> anyhow::Result<Self> {
        let http = reqwest::Client::builder().timeout(Duration::from_secs(60)).build()?;
        Ok(Self { http, base: format!("{origin}/api/v1"), token: token.to_owned() })
    }

    /// The same admin on another node at `origin`.
    pub fn at(&self, origin: &str) -> Self {
        Self { http: self.http.clone(), base: format!("{origin}/api/v1"), token: self.token.clone() }
    }

    /// The same server, as the holder of `token` (a player).
    pub fn as_holder_of(&self, token: &str) -> Self {
        Self { http: self.http.clone(), base: self.base.clone(), token: token.to_owned() }
    }

    /// The version of the tournament's LiveState now.
    pub async fn live_version(&self, tournament_id: &str) -> anyhow::Result<i64> {
        Ok(self.live(tournament_id).await?.1)
    }

    /// The size of the tournament's LiveState now, and its version.
    pub async fn live(&self, tournament_id: &str) -> anyhow::Result<(usize, i64)> {
        let answer = self.request(Method::GET, &format!("/tournaments/{tournament_id}/live"), None).await?;
        let version = serde_json::from_slice::<Versioned>(&answer).context("GET …/live: no version")?.version;
        Ok((answer.len(), version))
    }

    /// `POST path` (a clock command): the version of the LiveState it answers with, and when
    /// the whole answer had come.
    pub async fn trigger(&self, path: &str) -> anyhow::Result<(i64, Instant)> {
        let answer = self.request(Method::POST, path, None).await?;
        let answered = Instant::now();
        let version =
            serde_json::from_slice::<Versioned>(&answer).with_context(|| format!("POST {path}: no version"))?;
        Ok((version.version, answered))
    }

    pub async fn call(&self, method: Method, path: &str, body: Option<Value>) -> anyhow::Result<Value> {
        let answer = self.request(method.clone(), path, body).await?;
        if answer.is_empty() {
            return Ok(Value::Null);
        }
        serde_json::from_slice(&answer).with_context(|| format!("{method} {path}: not JSON"))
    }

    /// One request as the admin; the body of a 2xx answer.
    async fn request(&self, method: Method, path: &str, body: Option<Value>) -> anyhow::Result<Vec<u8>> {
        let mut request = self.http.request(method.clone(), format!("{}{path}", self.base));
        if !self.token.is_empty() {
            request = request.bearer_auth(&self.token);
        }
        if let Some(body) = body {
            request = request.json(&body);
        }
        let response = request.send().await.with_context(|| format!("{method} {path}"))?;
        let status = response.status();
        let answer = response.bytes().await.with_context(|| format!("{method} {path}"))?;
        if !status.is_success() {
            let excerpt = String::from_utf8_lossy(&answer[..answer.len().min(300)]).into_owned();
            bail!("{method} {path}: {status} {excerpt}");
        }
        Ok(answer.into())
    }
}

fn text(value: &Value) -> anyhow::Result<String> {
    value.as_str().map(str::to_owned).with_context(|| format!("expected a string, got {value}"))
}
