//! The migrations go up, down to zero and up again, and the schema enforces its keys, on
//! SQLite always and on PostgreSQL when it is reachable (required when `CI` is set).

use std::time::Duration;

use floor_migrations::{Migrator, MigratorTrait, TABLES};
use sea_orm_migration::SchemaManager;
use sea_orm_migration::sea_orm::{
    ConnectOptions, ConnectionTrait, Database, DatabaseConnection, DbErr, ExecResult, Statement,
    sea_query::{Alias, Expr, ExprTrait, Query},
};
use uuid::Uuid;

/// Admin connection for creating throwaway databases; `TEST_POSTGRES_URL` overrides it.
const POSTGRES_ADMIN_URL: &str = "postgres://postgres@127.0.0.1:5432/test";

#[derive(Clone, Copy, Debug)]
enum Scenario {
    RoundTrip,
    Constraints,
    ClaimedGuests,
    DoubleResults,
    PushTokensPerAccount,
}

async fn connect(url: &str) -> Result<DatabaseConnection, DbErr> {
    let mut options = ConnectOptions::new(url);
    options.connect_timeout(Duration::from_secs(5)).sqlx_logging(false);
    Database::connect(options).await
}

async fn run(scenario: Scenario, db: &DatabaseConnection) {
    match scenario {
        Scenario::RoundTrip => round_trip(db).await,
        Scenario::Constraints => constraints(db).await,
        Scenario::ClaimedGuests => claimed_guests(db).await,
        Scenario::DoubleResults => double_results(db).await,
        Scenario::PushTokensPerAccount => push_tokens_per_account(db).await,
    }
}

async fn on_sqlite(scenario: Scenario) {
    let dir = tempfile::tempdir().expect("temp dir");
    let url = format!("sqlite://{}?mode=rwc", dir.path().join("floor.db").display());
    let db = connect(&url).await.expect("open sqlite");
    let fk = db
        .query_one_raw(Statement::from_string(db.get_database_backend(), "PRAGMA foreign_keys"))
        .await
        .expect("read pragma")
        .expect("pragma row");
    assert_eq!(fk.try_get_by_index::<i32>(0).expect("pragma value"), 1, "sqlx-sqlite connections enforce foreign keys");
    run(scenario, &db).await;
    db.close().await.expect("close sqlite");
}

async fn on_postgres(scenario: Scenario) {
    let admin_url = std::env::var("TEST_POSTGRES_URL").unwrap_or_else(|_| POSTGRES_ADMIN_URL.to_owned());
    let admin = match connect(&admin_url).await {
        Ok(admin) => admin,
        Err(err) if std::env::var_os("CI").is_none() => {
            eprintln!("skipping the PostgreSQL run of {scenario:?}: {admin_url} unreachable: {err}");
            return;
        }
        Err(err) => panic!("PostgreSQL is required when CI is set: {admin_url}: {err}"),
    };
    let name = format!("floor_mig_{}", Uuid::new_v4().simple());
    admin.execute_unprepared(&format!("CREATE DATABASE {name}")).await.expect("create database");
    let (server, _) = admin_url.rsplit_once('/').expect("url with a database");
    let url = format!("{server}/{name}");

    // Run in a task so that a failed assertion still reaches the DROP below.
    let outcome = tokio::spawn(async move {
        let db = connect(&url).await.expect("open test database");
        run(scenario, &db).await;
        db.close().await.expect("close test database");
    })
    .await;

    admin.execute_unprepared(&format!("DROP DATABASE {name} WITH (FORCE)")).await.expect("drop database");
    admin.close().await.expect("close admin");
    if let Err(err) = outcome {
        std::panic::resume_unwind(err.into_panic());
    }
}

async fn assert_tables(db: &DatabaseConnection, present: bool) {
    let manager = SchemaManager::new(db);
    for table in TABLES {
        assert_eq!(manager.has_table(table).await.expect("probe table"), present, "table {table} present");
    }
}

async fn round_trip(db: &DatabaseConnection) {
    Migrator::up(db, None).await.expect("migrate up");
    assert_tables(db, true).await;
    assert!(Migrator::get_pending_migrations(db).await.expect("status").is_empty());

    Migrator::down(db, None).await.expect("migrate down");
    assert_tables(db, false).await;
    assert!(Migrator::get_applied_migrations(db).await.expect("status").is_empty());

    Migrator::up(db, None).await.expect("migrate up again");
    assert_tables(db, true).await;
}

/// Inserts one row; `values` are expressions so literals coerce to json/date on PostgreSQL.
async fn insert(db: &DatabaseConnection, table: &str, values: Vec<(&str, Expr)>) -> Result<ExecResult, DbErr> {
    let (cols, vals): (Vec<_>, Vec<_>) = values.into_iter().unzip();
    let stmt = Query::insert()
        .into_table(Alias::new(table))
        .columns(cols.into_iter().map(Alias::new))
        .values_panic(vals)
        .to_owned();
    db.execute(&stmt).await
}

async fn update(db: &DatabaseConnection, table: &str, set: (&str, Expr), id: Uuid) -> Result<ExecResult, DbErr> {
    let stmt = Query::update()
        .table(Alias::new(table))
        .value(Alias::new(set.0), set.1)
        .and_where(Expr::col(Alias::new("id")).eq(id))
        .to_owned();
    db.execute(&stmt).await
}

async fn count(db: &DatabaseConnection, table: &str) -> i64 {
    let row = db
        .query_one_raw(Statement::from_string(db.get_database_backend(), format!("SELECT COUNT(*) AS n FROM {table}")))
        .await
        .expect("count")
        .expect("count row");
    row.try_get::<i64>("", "n").expect("count value")
}

fn now() -> Expr {
    Expr::current_timestamp()
}

fn seat(id: Uuid, tournament: Uuid, registration: Uuid, table_no: i32, seat_no: i32) -> Vec<(&'static str, Expr)> {
    vec![
        ("id", Expr::val(id)),
        ("tournament_id", Expr::val(tournament)),
        ("registration_id", Expr::val(registration)),
        ("table_no", Expr::val(table_no)),
        ("seat_no", Expr::val(seat_no)),
        ("created_at", now()),
        ("updated_at", now()),
    ]
}

/// What [`a_running_tournament`] made.
struct RunningTournament {
    city: Uuid,
    tournament: Uuid,
}

/// A running tournament of a club at a venue in Moscow, with its season and blind template.
async fn a_running_tournament(db: &DatabaseConnection) -> RunningTournament {
    let city = Uuid::new_v4();
    let organizer = Uuid::new_v4();
    let location = Uuid::new_v4();
    let season = Uuid::new_v4();
    let template = Uuid::new_v4();
    let tournament = Uuid::new_v4();
    let setup: Vec<(&str, Vec<(&str, Expr)>)> = vec![
        ("cities", vec![("id", Expr::val(city)), ("slug", Expr::val("moscow")), ("created_at", now())]),
        (
            "organizers",
            vec![
                ("id", Expr::val(organizer)),
                ("name", Expr::val("Club")),
                ("created_at", now()),
                ("updated_at", now()),
            ],
        ),
        (
            "locations",
            vec![
                ("id", Expr::val(location)),
                ("organizer_id", Expr::val(organizer)),
                ("name", Expr::val("Hall")),
                ("city_slug", Expr::val("moscow")),
                ("address", Expr::val("Street 1")),
                ("timezone", Expr::val("Europe/Moscow")),
                ("lat", Expr::val(55.75)),
                ("lng", Expr::val(37.61)),
                ("created_at", now()),
                ("updated_at", now()),
            ],
        ),
        (
            "seasons",
            vec![
                ("id", Expr::val(season)),
                ("starts_on", Expr::cust("'2026-10-01'")),
                ("ends_on", Expr::cust("'2026-12-31'")),
                ("status", Expr::val("current")),
                ("created_at", now()),
            ],
        ),
        (
            "blind_templates",
            vec![
                ("id", Expr::val(template)),
                ("name", Expr::val("T")),
                ("levels", Expr::cust("'[]'")),
                ("starting_stack", Expr::val(20000_i64)),
                ("created_at", now()),
            ],
        ),
        (
            "tournaments",
            vec![
                ("id", Expr::val(tournament)),
                ("organizer_id", Expr::val(organizer)),
                ("location_id", Expr::val(location)),
                ("season_id", Expr::val(season)),
                ("blind_template_id", Expr::val(template)),
                ("tournament_type", Expr::val("mtt")),
                ("starts_at", now()),
                ("capacity", Expr::val(18)),
                ("status", Expr::val("running")),
                ("created_at", now()),
                ("updated_at", now()),
            ],
        ),
    ];
    for (table, values) in setup {
        insert(db, table, values).await.unwrap_or_else(|err| panic!("insert into {table}: {err}"));
    }
    RunningTournament { city, tournament }
}

async fn constraints(db: &DatabaseConnection) {
    Migrator::up(db, None).await.expect("migrate up");

    let missing_city = insert(
        db,
        "city_translations",
        vec![("city_id", Expr::val(Uuid::new_v4())), ("locale", Expr::val("ru")), ("name", Expr::val("Нигде"))],
    )
    .await;
    assert!(missing_city.is_err(), "a translation needs its city");

    let RunningTournament { city, tournament } = a_running_tournament(db).await;
    let (alice, bob) = (Uuid::new_v4(), Uuid::new_v4());
    let (reg_alice, reg_bob) = (Uuid::new_v4(), Uuid::new_v4());
    let (seat_alice, seat_bob) = (Uuid::new_v4(), Uuid::new_v4());

    let setup: Vec<(&str, Vec<(&str, Expr)>)> = vec![
        (
            "users",
            vec![
                ("id", Expr::val(alice)),
                ("phone", Expr::val("+79990000001")),
                ("city_slug", Expr::val("moscow")),
                ("created_at", now()),
                ("updated_at", now()),
            ],
        ),
        (
            "users",
            vec![
                ("id", Expr::val(bob)),
                ("phone", Expr::val("+79990000002")),
                ("created_at", now()),
                ("updated_at", now()),
            ],
        ),
        (
            "registrations",
            vec![
                ("id", Expr::val(reg_alice)),
                ("tournament_id", Expr::val(tournament)),
                ("user_id", Expr::val(alice)),
                ("status", Expr::val("checked_in")),
                ("source", Expr::val("app")),
                ("created_at", now()),
                ("updated_at", now()),
            ],
        ),
        (
            "registrations",
            vec![
                ("id", Expr::val(reg_bob)),
                ("tournament_id", Expr::val(tournament)),
                ("user_id", Expr::val(bob)),
                ("status", Expr::val("checked_in")),
                ("source", Expr::val("app")),
                ("created_at", now()),
                ("updated_at", now()),
            ],
        ),
        ("table_seats", seat(seat_alice, tournament, reg_alice, 1, 1)),
    ];
    for (table, values) in setup {
        insert(db, table, values).await.unwrap_or_else(|err| panic!("insert into {table}: {err}"));
    }

    let same_phone = insert(
        db,
        "users",
        vec![
            ("id", Expr::val(Uuid::new_v4())),
            ("phone", Expr::val("+79990000001")),
            ("created_at", now()),
            ("updated_at", now()),
        ],
    )
    .await;
    assert!(same_phone.is_err(), "a phone belongs to one account");

    assert!(
        insert(db, "table_seats", seat(seat_bob, tournament, reg_bob, 1, 1)).await.is_err(),
        "two active players cannot share a seat"
    );
    update(db, "table_seats", ("active", Expr::val(false)), seat_alice).await.expect("eliminate alice");
    insert(db, "table_seats", seat(seat_bob, tournament, reg_bob, 1, 1))
        .await
        .expect("a player may take the seat of an eliminated one");
    assert!(
        update(db, "table_seats", ("active", Expr::val(true)), seat_alice).await.is_err(),
        "undo cannot put alice back into a seat that is taken"
    );

    insert(
        db,
        "results",
        vec![
            ("id", Expr::val(Uuid::new_v4())),
            ("tournament_id", Expr::val(tournament)),
            ("registration_id", Expr::val(reg_bob)),
            ("user_id", Expr::val(bob)),
            ("place", Expr::val(1)),
            ("season_points", Expr::val(10)),
            ("xp", Expr::val(10)),
            ("created_at", now()),
        ],
    )
    .await
    .expect("insert result");
    assert!(
        insert(
            db,
            "results",
            vec![
                ("id", Expr::val(Uuid::new_v4())),
                ("tournament_id", Expr::val(tournament)),
                ("registration_id", Expr::val(reg_alice)),
                ("user_id", Expr::val(alice)),
                ("place", Expr::val(1)),
                ("season_points", Expr::val(10)),
                ("xp", Expr::val(10)),
                ("created_at", now()),
            ],
        )
        .await
        .is_err(),
        "a place is given once per tournament"
    );

    for dedup in ["reminder:24h", "reminder:24h"] {
        let _ = insert(
            db,
            "notifications",
            vec![
                ("id", Expr::val(Uuid::new_v4())),
                ("user_id", Expr::val(alice)),
                ("kind", Expr::val("tournament.reminder")),
                ("payload", Expr::cust("'{}'")),
                ("dedup_key", Expr::val(dedup)),
                ("created_at", now()),
            ],
        )
        .await;
    }
    for _ in 0..2 {
        insert(
            db,
            "notifications",
            vec![
                ("id", Expr::val(Uuid::new_v4())),
                ("user_id", Expr::val(alice)),
                ("kind", Expr::val("admin_custom")),
                ("payload", Expr::cust("'{}'")),
                ("created_at", now()),
            ],
        )
        .await
        .expect("notifications without a dedup key never collide");
    }
    assert_eq!(count(db, "notifications").await, 3, "a dedup key is used once per user");

    // A slug rename follows into users and venues.
    let rename = Query::update()
        .table(Alias::new("cities"))
        .value(Alias::new("slug"), "msk")
        .and_where(Expr::col(Alias::new("id")).eq(city))
        .to_owned();
    db.execute(&rename).await.expect("rename city slug");
    let slugs = db
        .query_one_raw(Statement::from_string(
            db.get_database_backend(),
            "SELECT (SELECT city_slug FROM users WHERE phone = '+79990000001') AS u, \
             (SELECT city_slug FROM locations) AS l",
        ))
        .await
        .expect("read slugs")
        .expect("slug row");
    assert_eq!(slugs.try_get::<String>("", "u").expect("user slug"), "msk");
    assert_eq!(slugs.try_get::<String>("", "l").expect("location slug"), "msk");

    // Deleting a tournament takes its registrations, seats and results with it.
    let delete = Query::delete()
        .from_table(Alias::new("tournaments"))
        .and_where(Expr::col(Alias::new("id")).eq(tournament))
        .to_owned();
    db.execute(&delete).await.expect("delete tournament");
    for table in ["registrations", "table_seats", "results"] {
        assert_eq!(count(db, table).await, 0, "{table} emptied by the cascade");
    }

    // A city with a venue cannot be deleted.
    let delete_city =
        Query::delete().from_table(Alias::new("cities")).and_where(Expr::col(Alias::new("id")).eq(city)).to_owned();
    assert!(db.execute(&delete_city).await.is_err(), "a venue keeps its city");
}

#[tokio::test]
async fn migrations_go_up_down_and_up_again_on_sqlite() {
    on_sqlite(Scenario::RoundTrip).await;
}

#[tokio::test]
async fn migrations_go_up_down_and_up_again_on_postgres() {
    on_postgres(Scenario::RoundTrip).await;
}

#[tokio::test]
async fn schema_enforces_its_keys_and_one_player_per_occupied_seat_on_sqlite() {
    on_sqlite(Scenario::Constraints).await;
}

#[tokio::test]
async fn schema_enforces_its_keys_and_one_player_per_occupied_seat_on_postgres() {
    on_postgres(Scenario::Constraints).await;
}

/// The migrations before `m20261124_000010_keep_one_place_per_person`.
const BEFORE_ONE_PLACE_PER_PERSON: u32 = 9;

fn user(id: Uuid, phone: &str) -> (&'static str, Vec<(&'static str, Expr)>) {
    ("users", vec![("id", Expr::val(id)), ("phone", Expr::val(phone)), ("created_at", now()), ("updated_at", now())])
}

fn registration(
    id: Uuid,
    tournament: Uuid,
    user: Option<Uuid>,
    guest: Option<Uuid>,
) -> (&'static str, Vec<(&'static str, Expr)>) {
    (
        "registrations",
        vec![
            ("id", Expr::val(id)),
            ("tournament_id", Expr::val(tournament)),
            ("user_id", Expr::val(user)),
            ("guest_id", Expr::val(guest)),
            ("status", Expr::val("checked_in")),
            ("source", Expr::val("walk_in")),
            ("created_at", now()),
            ("updated_at", now()),
        ],
    )
}

fn result(
    id: Uuid,
    tournament: Uuid,
    registration: Uuid,
    user: Uuid,
    place: i32,
) -> (&'static str, Vec<(&'static str, Expr)>) {
    (
        "results",
        vec![
            ("id", Expr::val(id)),
            ("tournament_id", Expr::val(tournament)),
            ("registration_id", Expr::val(registration)),
            ("user_id", Expr::val(user)),
            ("place", Expr::val(place)),
            ("season_points", Expr::val(10)),
            ("xp", Expr::val(10)),
            ("created_at", now()),
        ],
    )
}

async fn insert_all(db: &DatabaseConnection, rows: Vec<(&str, Vec<(&str, Expr)>)>) {
    for (table, values) in rows {
        insert(db, table, values).await.unwrap_or_else(|err| panic!("insert into {table}: {err}"));
    }
}

/// The registrations that carry both an account and a guest.
async fn claimed_places(db: &DatabaseConnection) -> i64 {
    let row = db
        .query_one_raw(Statement::from_string(
            db.get_database_backend(),
            "SELECT COUNT(*) AS n FROM registrations WHERE user_id IS NOT NULL AND guest_id IS NOT NULL",
        ))
        .await
        .expect("count")
        .expect("count row");
    row.try_get::<i64>("", "n").expect("count value")
}

/// Places of guests claimed before the migration move to their accounts, except where that
/// would give an account a second place; then an account holds one result per tournament.
async fn claimed_guests(db: &DatabaseConnection) {
    Migrator::up(db, Some(BEFORE_ONE_PLACE_PER_PERSON)).await.expect("migrate up to the job runs");
    let RunningTournament { tournament, .. } = a_running_tournament(db).await;
    let (anna, boris) = (Uuid::new_v4(), Uuid::new_v4());
    let (guest_anna, guest_boris) = (Uuid::new_v4(), Uuid::new_v4());
    let (place_anna, place_guest_boris, place_boris) = (Uuid::new_v4(), Uuid::new_v4(), Uuid::new_v4());
    let guest = |id: Uuid, phone: &'static str, claimed_by: Uuid| {
        (
            "guest_players",
            vec![
                ("id", Expr::val(id)),
                ("phone", Expr::val(phone)),
                ("name", Expr::val("Guest")),
                ("claimed_by_user_id", Expr::val(claimed_by)),
                ("created_at", now()),
            ],
        )
    };
    insert_all(
        db,
        vec![
            user(anna, "+79990000011"),
            user(boris, "+79990000012"),
            guest(guest_anna, "+79990000011", anna),
            guest(guest_boris, "+79990000012", boris),
            registration(place_anna, tournament, None, Some(guest_anna)),
            registration(place_guest_boris, tournament, None, Some(guest_boris)),
            registration(place_boris, tournament, Some(boris), None),
        ],
    )
    .await;

    Migrator::up(db, None).await.expect("migrate up");
    assert_eq!(claimed_places(db).await, 1, "Anna's guest place is hers now; Boris already had one, his stays apart");
    insert_all(db, vec![result(Uuid::new_v4(), tournament, place_anna, anna, 1)]).await;
    let second = result(Uuid::new_v4(), tournament, place_boris, anna, 2);
    assert!(insert(db, second.0, second.1).await.is_err(), "one result per account and tournament");
}

/// Two results of one account in one tournament cannot be settled by a migration: it stops
/// and names them.
async fn double_results(db: &DatabaseConnection) {
    Migrator::up(db, Some(BEFORE_ONE_PLACE_PER_PERSON)).await.expect("migrate up to the job runs");
    let RunningTournament { tournament, .. } = a_running_tournament(db).await;
    let anna = Uuid::new_v4();
    let (first, second) = (Uuid::new_v4(), Uuid::new_v4());
    insert_all(
        db,
        vec![
            user(anna, "+79990000021"),
            registration(first, tournament, Some(anna), None),
            registration(second, tournament, None, None),
            result(Uuid::new_v4(), tournament, first, anna, 1),
            result(Uuid::new_v4(), tournament, second, anna, 2),
        ],
    )
    .await;
    let refused = Migrator::up(db, None).await.expect_err("the migration stops");
    let text = refused.to_string();
    assert!(text.contains("two results in one tournament") && text.contains(&anna.to_string()), "{text}");
}

#[tokio::test]
async fn claimed_guests_places_move_to_their_accounts_on_sqlite() {
    on_sqlite(Scenario::ClaimedGuests).await;
}

#[tokio::test]
async fn claimed_guests_places_move_to_their_accounts_on_postgres() {
    on_postgres(Scenario::ClaimedGuests).await;
}

#[tokio::test]
async fn two_results_of_one_account_stop_the_migration_on_sqlite() {
    on_sqlite(Scenario::DoubleResults).await;
}

#[tokio::test]
async fn two_results_of_one_account_stop_the_migration_on_postgres() {
    on_postgres(Scenario::DoubleResults).await;
}

/// The migrations before `m20261126_000018_keep_push_tokens_per_account`.
const BEFORE_PUSH_TOKENS_PER_ACCOUNT: u32 = 16;

fn push_token(user: Uuid, token: &str, registered: &str) -> (&'static str, Vec<(&'static str, Expr)>) {
    let at = Expr::cust(format!("'{registered}'"));
    (
        "push_tokens",
        vec![
            ("token", Expr::val(token)),
            ("user_id", Expr::val(user)),
            ("platform", Expr::val("android")),
            ("created_at", at.clone()),
            ("updated_at", at),
        ],
    )
}

/// How many rows `push_tokens` holds for `token`.
async fn rows_of_token(db: &DatabaseConnection, token: &str) -> i64 {
    let stmt = Query::select()
        .expr(Expr::col(Alias::new("token")).count())
        .from(Alias::new("push_tokens"))
        .and_where(Expr::col(Alias::new("token")).eq(token))
        .to_owned();
    let row = db.query_one(&stmt).await.expect("count").expect("count row");
    row.try_get_by_index::<i64>(0).expect("count value")
}

/// Whether `push_tokens` has its index on `user_id`, and its index on `token`.
async fn push_token_indexes(db: &DatabaseConnection) -> (bool, bool) {
    let manager = SchemaManager::new(db);
    let has = |name: &'static str| {
        let manager = &manager;
        async move { manager.has_index("push_tokens", name).await.expect("probe index") }
    };
    (has("ix_push_tokens_user_id").await, has("ix_push_tokens_token").await)
}

/// The devices registered under the older key (one row per token) are all kept; afterwards a
/// token is keyed per account: a second account gets a row of its own, the same account none.
/// Down keeps the most recently registered row of each token.
async fn push_tokens_per_account(db: &DatabaseConnection) {
    Migrator::up(db, Some(BEFORE_PUSH_TOKENS_PER_ACCOUNT)).await.expect("migrate up to consent and deletion");
    let (anna, boris) = (Uuid::new_v4(), Uuid::new_v4());
    insert_all(
        db,
        vec![
            user(anna, "+79990000031"),
            user(boris, "+79990000032"),
            push_token(anna, "anna-phone", "2026-11-01 10:00:00+00:00"),
            push_token(anna, "anna-tablet", "2026-11-01 10:00:00+00:00"),
            push_token(boris, "boris-phone", "2026-11-01 10:00:00+00:00"),
        ],
    )
    .await;
    let second_owner = push_token(boris, "anna-phone", "2026-11-02 10:00:00+00:00");
    assert!(insert(db, second_owner.0, second_owner.1).await.is_err(), "before: one row per token");

    Migrator::up(db, None).await.expect("migrate up");
    assert_eq!(count(db, "push_tokens").await, 3, "every device is kept");
    assert_eq!(push_token_indexes(db).await, (false, true), "the key leads with the account; the token has an index");
    insert_all(db, vec![push_token(boris, "anna-phone", "2026-11-02 10:00:00+00:00")]).await;
    assert_eq!(rows_of_token(db, "anna-phone").await, 2, "a row per account");
    let again = push_token(anna, "anna-phone", "2026-11-03 10:00:00+00:00");
    assert!(insert(db, again.0, again.1).await.is_err(), "one row per account and token");
    // Deleting an account takes its rows and leaves the others' rows of the same token.
    let delete =
        Query::delete().from_table(Alias::new("users")).and_where(Expr::col(Alias::new("id")).eq(anna)).to_owned();
    db.execute(&delete).await.expect("delete anna");
    assert_eq!(rows_of_token(db, "anna-phone").await, 1, "Boris's row stays");
    assert_eq!(count(db, "push_tokens").await, 2);

    insert_all(db, vec![user(anna, "+79990000031"), push_token(anna, "boris-phone", "2026-11-04 10:00:00+00:00")])
        .await;
    // Down to where the migration was the newest, then down that one step.
    let after = u32::try_from(Migrator::migrations().len()).expect("a count") - BEFORE_PUSH_TOKENS_PER_ACCOUNT - 1;
    Migrator::down(db, Some(after)).await.expect("migrate down the later migrations");
    Migrator::down(db, Some(1)).await.expect("migrate down one step");
    assert_eq!(rows_of_token(db, "boris-phone").await, 1, "one row per token again");
    assert_eq!(push_token_indexes(db).await, (true, false));
    let owner = Query::select()
        .column(Alias::new("user_id"))
        .from(Alias::new("push_tokens"))
        .and_where(Expr::col(Alias::new("token")).eq("boris-phone"))
        .to_owned();
    let row = db.query_one(&owner).await.expect("read owner").expect("owner row");
    assert_eq!(row.try_get_by_index::<Uuid>(0).expect("owner"), anna, "the latest registration stays");
    assert_eq!(count(db, "push_tokens").await, 2);
}

#[tokio::test]
async fn push_tokens_are_kept_and_keyed_per_account_on_sqlite() {
    on_sqlite(Scenario::PushTokensPerAccount).await;
}

#[tokio::test]
async fn push_tokens_are_kept_and_keyed_per_account_on_postgres() {
    on_postgres(Scenario::PushTokensPerAccount).await;
}
