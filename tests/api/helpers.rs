//! `spawn_app`: a fresh database, the application on port 0, and typed helpers to drive it.

use std::collections::HashMap;

use floor::domain::auth::delivery::FakeOutbox;
use floor::{AppState, Application, Config};
use reqwest::{Method, StatusCode};
use sea_orm::{ConnectionTrait, DatabaseConnection, DatabaseTransaction, Statement, TransactionTrait};
use serde_json::{Value, json};
use uuid::Uuid;

pub use crate::test_database::TestDatabase;

/// The phone listed in `PLATFORM_ADMIN_PHONES` of every test app.
pub const PLATFORM_ADMIN_PHONE: &str = "+79000000001";
pub const TEST_JWT_SECRET: &str = "test-secret-test-secret-test-secret!";
/// The abuse limits of a test app: far more than any test sends.
const GENEROUS_LIMIT: &str = "1000000/1s";

/// The connection caps of a test app: far more than any test opens.
const GENEROUS_CAP: &str = "1000000";

/// What every test node runs with, in process or as a `floor serve` of its own. Tests sign
/// many people in and open many sockets from one address: the abuse limits and the caps stay
/// out of their way unless a test sets its own (`""` keeps a production default).
pub const TEST_ENV: [(&str, &str); 14] = [
    ("APP_ENV", "test"),
    ("JWT_SECRET", TEST_JWT_SECRET),
    ("OTP_CHANNELS", "fake"),
    ("RATE_LIMIT_CODE_REQUESTS", GENEROUS_LIMIT),
    ("RATE_LIMIT_CODE_REQUESTS_GLOBAL", GENEROUS_LIMIT),
    ("RATE_LIMIT_CODE_CHECKS", GENEROUS_LIMIT),
    ("RATE_LIMIT_REFRESHES", GENEROUS_LIMIT),
    ("RATE_LIMIT_PUBLIC_READS", GENEROUS_LIMIT),
    ("RATE_LIMIT_REGISTRATIONS", GENEROUS_LIMIT),
    ("MAX_CONNECTIONS_PER_ADDRESS", GENEROUS_CAP),
    ("MAX_SCREEN_STREAMS_PER_ADDRESS", GENEROUS_CAP),
    ("MAX_SCREEN_STREAMS_PER_TOURNAMENT", GENEROUS_CAP),
    ("MAX_LIVE_SOCKETS_PER_ACCOUNT", GENEROUS_CAP),
    ("MAX_LIVE_SOCKETS_PER_ADDRESS", GENEROUS_CAP),
];

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Backend {
    Sqlite,
    Postgres,
}

/// Runs each named test body once on SQLite and once on PostgreSQL, as
/// `<name>::sqlite` and `<name>::postgres`.
macro_rules! on_both_databases {
    ($($name:ident),* $(,)?) => {$(
        mod $name {
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn sqlite() {
                super::$name($crate::helpers::Backend::Sqlite).await
            }
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn postgres() {
                super::$name($crate::helpers::Backend::Postgres).await
            }
        }
    )*};
}
pub(crate) use on_both_databases;

/// A running application and what a test needs to reach into it.
pub struct TestApp {
    pub base: String,
    /// The database this app runs on, for a second process to share.
    pub database_url: String,
    pub client: reqwest::Client,
    pub state: AppState,
    pub outbox: FakeOutbox,
    /// The database this app made (dropped with it); a second node shares the first's.
    _database: Option<TestDatabase>,
}

/// Starts the application on a fresh database of `backend`. `None` only when PostgreSQL is
/// unreachable outside CI (in CI that is a failure).
pub async fn spawn_app(backend: Backend) -> Option<TestApp> {
    spawn_app_with(backend, &[]).await
}

/// Like [`spawn_app`], with extra environment variables.
pub async fn spawn_app_with(backend: Backend, extra: &[(&str, &str)]) -> Option<TestApp> {
    let database = TestDatabase::migrated(backend).await?;
    Some(start_on_database(database, extra).await)
}

/// A node on `database`, which it drops when it is dropped.
pub async fn start_on_database(database: TestDatabase, extra: &[(&str, &str)]) -> TestApp {
    let url = database.url.clone();
    start_node(&url, extra, Some(database)).await
}

/// The configuration of a test node on `database_url`, with `extra` variables.
pub fn test_config(database_url: &str, extra: &[(&str, &str)]) -> Config {
    let mut vars: HashMap<String, String> = TEST_ENV
        .into_iter()
        .chain([("PORT", "0"), ("PLATFORM_ADMIN_PHONES", PLATFORM_ADMIN_PHONE)])
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect();
    vars.insert("DATABASE_URL".to_owned(), database_url.to_owned());
    for (key, value) in extra {
        vars.insert((*key).to_owned(), (*value).to_owned());
    }
    Config::from_lookup(|name| vars.get(name).cloned()).expect("test configuration")
}

/// Builds and serves one node of the application on `database_url`.
async fn start_node(database_url: &str, extra: &[(&str, &str)], database: Option<TestDatabase>) -> TestApp {
    let application = Application::build(test_config(database_url, extra)).await.expect("the application builds");
    let base = format!("http://127.0.0.1:{}", application.port());
    let state = application.state();
    let outbox = state.sign_in.codes.fake_outbox().expect("a fake channel outside production");
    tokio::spawn(application.run_until(std::future::pending()));
    TestApp {
        base,
        database_url: database_url.to_owned(),
        client: reqwest::Client::new(),
        state,
        outbox,
        _database: database,
    }
}

/// A node on a database that exists already (a restored backup, say); the test keeps the
/// database.
pub async fn spawn_on(database_url: &str) -> TestApp {
    spawn_on_with(database_url, &[]).await
}

/// Like [`spawn_on`], with extra environment variables: a node reaching the database another
/// way (through a proxy) than the node that made it.
pub async fn spawn_on_with(database_url: &str, extra: &[(&str, &str)]) -> TestApp {
    start_node(database_url, extra, None).await
}

impl TestApp {
    /// Another node of the same service: the same database, its own port and process state.
    pub async fn second_node(&self, extra: &[(&str, &str)]) -> TestApp {
        start_node(&self.database_url, extra, None).await
    }
}

/// The test Redis, when reachable; outside CI an unreachable Redis skips (in CI it fails).
pub async fn test_redis_url() -> Option<&'static str> {
    const URL: &str = "redis://127.0.0.1:6379/?protocol=resp3";
    let reachable = match redis::Client::open(URL) {
        Ok(client) => client.get_multiplexed_async_connection().await.is_ok(),
        Err(_) => false,
    };
    if reachable {
        return Some(URL);
    }
    assert!(std::env::var_os("CI").is_none(), "Redis must be reachable in CI");
    eprintln!("skipping: Redis is unreachable and CI is not set");
    None
}

/// What a signed-in test user holds.
#[derive(Clone, Debug)]
pub struct Session {
    pub user_id: Uuid,
    pub access_token: String,
    pub refresh_token: String,
}

/// A response: status and JSON body (`Value::Null` when empty or not JSON).
#[derive(Debug)]
pub struct Reply {
    pub status: StatusCode,
    pub body: Value,
    pub headers: reqwest::header::HeaderMap,
}

impl Reply {
    /// The status, headers and JSON body (null when there is none) of `response`.
    pub async fn read(response: reqwest::Response) -> Self {
        let status = response.status();
        let headers = response.headers().clone();
        let bytes = response.bytes().await.expect("a body");
        Self { status, body: serde_json::from_slice(&bytes).unwrap_or(Value::Null), headers }
    }

    /// The contract's error code, when the body is an error.
    pub fn code(&self) -> &str {
        self.body["error"]["code"].as_str().unwrap_or("")
    }

    #[track_caller]
    pub fn assert_error(&self, status: u16, code: &str) {
        assert_eq!(self.status.as_u16(), status, "unexpected reply {self:?}");
        assert_eq!(self.code(), code, "unexpected reply {self:?}");
        assert!(self.body["error"]["message"].is_string(), "an error carries a message: {self:?}");
    }

    #[track_caller]
    pub fn assert_ok(&self) -> &Value {
        assert!(self.status.is_success(), "unexpected reply {self:?}");
        &self.body
    }
}

impl TestApp {
    /// The `floor_refusals_total` of `limit` in this node's `/metrics` (0 when none yet).
    pub async fn refusals(&self, limit: &str) -> u64 {
        let text = reqwest::get(format!("{}/metrics", self.base)).await.expect("metrics").text().await.expect("text");
        let series = format!("floor_refusals_total{{limit=\"{limit}\"}} ");
        text.lines().find_map(|line| line.strip_prefix(&series)).and_then(|count| count.parse().ok()).unwrap_or(0)
    }

    pub fn url(&self, path: &str) -> String {
        format!("{}/api/v1{path}", self.base)
    }

    pub fn db(&self) -> &DatabaseConnection {
        &self.state.db
    }

    /// Sends `method path` with an optional JSON body and bearer token.
    pub async fn call(&self, method: Method, path: &str, token: Option<&str>, body: Option<Value>) -> Reply {
        self.call_with(method, path, token, body, &[]).await
    }

    /// [`Self::call`] with extra request headers.
    pub async fn call_with(
        &self,
        method: Method,
        path: &str,
        token: Option<&str>,
        body: Option<Value>,
        headers: &[(&str, &str)],
    ) -> Reply {
        let mut request = self.client.request(method, self.url(path));
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        if let Some(token) = token {
            request = request.bearer_auth(token);
        }
        if let Some(body) = body {
            request = request.json(&body);
        }
        Reply::read(request.send().await.expect("the server answers")).await
    }

    pub async fn get(&self, path: &str, token: Option<&str>) -> Reply {
        self.call(Method::GET, path, token, None).await
    }

    pub async fn post(&self, path: &str, token: Option<&str>, body: Value) -> Reply {
        self.call(Method::POST, path, token, Some(body)).await
    }

    pub async fn request_code(&self, phone: &str) -> Reply {
        self.post("/auth/otp/request", None, json!({"phone": phone})).await
    }

    pub async fn verify(&self, phone: &str, code: &str) -> Reply {
        self.post("/auth/otp/verify", None, json!({"phone": phone, "code": code})).await
    }

    /// The last code the fake channel delivered to `phone`.
    pub fn last_code(&self, phone: &str) -> String {
        self.outbox.last_code(phone).expect("a code was delivered")
    }

    /// Requests a code and verifies it: a full sign-in.
    pub async fn sign_in(&self, phone: &str) -> Session {
        self.request_code(phone).await.assert_ok();
        let reply = self.verify(phone, &self.last_code(phone)).await;
        let body = reply.assert_ok();
        Session {
            user_id: body["user"]["id"].as_str().and_then(|id| id.parse().ok()).expect("a user id"),
            access_token: body["accessToken"].as_str().expect("an access token").to_owned(),
            refresh_token: body["refreshToken"].as_str().expect("a refresh token").to_owned(),
        }
    }

    /// Signs in and gives the account `role` straight in the database.
    pub async fn sign_in_as_admin(&self, phone: &str, role: &str) -> Session {
        let session = self.sign_in(phone).await;
        self.exec(&format!("UPDATE users SET admin_role = '{role}' WHERE id = {}", self.uuid_literal(session.user_id)))
            .await;
        let me = self.get("/auth/me", Some(&session.access_token)).await;
        assert_eq!(me.body["adminRole"], role, "the role was granted: {me:?}");
        session
    }

    /// Runs one SQL statement written to work on both databases. Like any change made
    /// behind the API's back, it then drops the cached public reads (else they would show it
    /// only after `read_cache::LONGEST_KEPT`).
    pub async fn exec(&self, sql: &str) {
        self.db().execute_unprepared(sql).await.expect("the statement runs");
        self.state.reads_changed();
    }

    /// The first column of the first row of `sql`, as text.
    pub async fn scalar(&self, sql: &str) -> Option<String> {
        let backend = self.db().get_database_backend();
        let row =
            self.db().query_one_raw(Statement::from_string(backend, sql.to_owned())).await.expect("query runs")?;
        row.try_get_by_index::<String>(0)
            .ok()
            .or_else(|| row.try_get_by_index::<i64>(0).ok().map(|n| n.to_string()))
            .or_else(|| row.try_get_by_index::<Uuid>(0).ok().map(|u| u.to_string()))
    }

    /// The first column of the first row of `sql`, a timestamp.
    pub async fn timestamp(&self, sql: &str) -> chrono::DateTime<chrono::Utc> {
        let backend = self.db().get_database_backend();
        let row = self.db().query_one_raw(Statement::from_string(backend, sql.to_owned())).await.expect("query runs");
        row.expect("a row").try_get_by_index(0).expect("a timestamp")
    }

    /// Waits (up to two seconds) for `sql` to count `expected`, for effects that happen in the
    /// background after the answer (notifications); returns the last count.
    pub async fn eventually_count(&self, sql: &str, expected: i64) -> i64 {
        let mut last = self.count(sql).await;
        for _ in 0..100 {
            if last == expected {
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
            last = self.count(sql).await;
        }
        last
    }

    pub async fn count(&self, sql: &str) -> i64 {
        self.scalar(sql).await.and_then(|text| text.parse().ok()).expect("a count")
    }

    /// A transaction of the test's own holding the rows `locking` selects (`… FOR UPDATE`)
    /// until it ends, as a long write of another process does. Its session may sit idle in it
    /// as long as the test needs, which the serving connections' sessions may not
    /// ([`floor::infra::db::lift_idle_limit`]).
    pub async fn hold(&self, locking: &str) -> DatabaseTransaction {
        let tx = self.db().begin().await.expect("a transaction");
        floor::infra::db::lift_idle_limit(&tx).await.expect("no idle limit");
        tx.execute_unprepared(locking).await.unwrap_or_else(|err| panic!("{locking}: {err}"));
        tx
    }

    /// [`Self::hold`] of a tournament's row, which every write of its live game locks.
    pub async fn hold_tournament_row(&self, tournament_id: Uuid) -> DatabaseTransaction {
        self.hold(&format!("SELECT id FROM tournaments WHERE id = {} FOR UPDATE", self.uuid_literal(tournament_id)))
            .await
    }

    /// `id` as a SQL literal of the column type sea-orm uses: `uuid` on PostgreSQL, a
    /// 16-byte blob on SQLite.
    pub fn uuid_literal(&self, id: Uuid) -> String {
        match self.db().get_database_backend() {
            sea_orm::DbBackend::Postgres => format!("'{id}'::uuid"),
            _ => format!("X'{}'", id.simple()),
        }
    }
}

/// A club made through the platform API, with its owner signed in.
#[derive(Clone, Debug)]
pub struct Club {
    pub id: Uuid,
    pub owner: Session,
}

impl TestApp {
    pub async fn patch(&self, path: &str, token: Option<&str>, body: Value) -> Reply {
        self.call(Method::PATCH, path, token, Some(body)).await
    }

    pub async fn put(&self, path: &str, token: Option<&str>, body: Value) -> Reply {
        self.call(Method::PUT, path, token, Some(body)).await
    }

    pub async fn delete(&self, path: &str, token: Option<&str>) -> Reply {
        self.call(Method::DELETE, path, token, None).await
    }

    /// The platform's super_admin (the phone in `PLATFORM_ADMIN_PHONES`), signed in.
    pub async fn platform_admin(&self) -> Session {
        self.sign_in(PLATFORM_ADMIN_PHONE).await
    }

    /// Creates a club named `name` whose owner has `owner_phone`, and signs the owner in.
    pub async fn create_club(&self, name: &str, owner_phone: &str) -> Club {
        self.create_club_by(&self.platform_admin().await, name, owner_phone).await
    }

    /// [`Self::create_club`] by a platform admin signed in already: a test making many clubs
    /// stays under the codes' limit per phone.
    pub async fn create_club_by(&self, admin: &Session, name: &str, owner_phone: &str) -> Club {
        let reply = self
            .post("/admin/organizers", Some(&admin.access_token), json!({"name": name, "ownerPhone": owner_phone}))
            .await;
        assert_eq!(reply.status, StatusCode::CREATED, "{reply:?}");
        let id = reply.body["id"].as_str().and_then(|id| id.parse().ok()).expect("a club id");
        Club { id, owner: self.sign_in(owner_phone).await }
    }
}

/// The seeded platform blind template every club may use.
pub const PLATFORM_TEMPLATE_ID: &str = "f1000000-0000-4000-8000-000000000001";

impl TestApp {
    /// Adds a venue in Moscow to the club, as its owner.
    pub async fn create_location(&self, club: &Club) -> Uuid {
        let reply = self
            .post(
                &format!("/organizers/{}/locations", club.id),
                Some(&club.owner.access_token),
                json!({"name": "Main hall", "citySlug": "moscow", "address": "Tverskaya 1", "timezone": "Europe/Moscow", "lat": 55.75, "lng": 37.61}),
            )
            .await;
        assert_eq!(reply.status, StatusCode::CREATED, "{reply:?}");
        reply.body["id"].as_str().and_then(|id| id.parse().ok()).expect("a location id")
    }

    /// A tournament body for the club's venue, starting `starts_in` from now.
    pub fn tournament_body(&self, location_id: Uuid, capacity: i32, starts_in: chrono::Duration) -> Value {
        json!({
            "locationId": location_id,
            "blindTemplateId": PLATFORM_TEMPLATE_ID,
            "type": "mtt",
            "startsAt": (chrono::Utc::now() + starts_in).to_rfc3339(),
            "capacity": capacity,
            "translations": {"ru": {"title": "Турнир выходного дня"}, "en": {"title": "Weekend tournament"}},
        })
    }

    /// Creates a tournament of the club (as its owner) with a venue made for it.
    pub async fn create_tournament(&self, club: &Club, capacity: i32, starts_in: chrono::Duration) -> Uuid {
        let location = self.create_location(club).await;
        let body = self.tournament_body(location, capacity, starts_in);
        let reply =
            self.post(&format!("/organizers/{}/tournaments", club.id), Some(&club.owner.access_token), body).await;
        assert_eq!(reply.status, StatusCode::CREATED, "{reply:?}");
        reply.body["id"].as_str().and_then(|id| id.parse().ok()).expect("a tournament id")
    }

    /// `count` accounts made straight in the database (phones `+7998{prefix}NNNN`), each
    /// with an access token: for tests that need a crowd rather than its sign-ins. They hold
    /// no refresh token.
    pub async fn crowd(&self, prefix: u32, count: u32) -> Vec<Session> {
        assert!(prefix < 1000 && count <= 10_000, "three digits of prefix and four of count make a Russian mobile");
        let tx = floor::infra::db::begin_write(self.db()).await.expect("a transaction");
        let mut accounts = Vec::new();
        for n in 0..count {
            let phone = floor::values::Phone::parse(&format!("+7998{prefix:03}{n:04}")).expect("a phone");
            accounts
                .push(floor::domain::players::signup::find_or_create_account(&tx, &phone).await.expect("an account"));
        }
        tx.commit().await.expect("committed");
        let jwt = &self.state.sign_in.jwt;
        accounts
            .into_iter()
            .map(|user| Session {
                user_id: user.id,
                access_token: jwt.issue(user.id, false, chrono::Utc::now()).expect("a token").0,
                refresh_token: String::new(),
            })
            .collect()
    }

    /// Signs in `count` new players with phones derived from `prefix` (`+7999{prefix}NNNN`).
    pub async fn sign_in_players(&self, prefix: u32, count: u32) -> Vec<Session> {
        assert!(prefix < 1000 && count <= 10_000, "three digits of prefix and four of count make a Russian mobile");
        let mut players = Vec::new();
        for n in 0..count {
            players.push(self.sign_in(&format!("+7999{prefix:03}{n:04}")).await);
        }
        players
    }
}
