//! The background jobs run as of an injected time: tournament reminders (once per person and
//! window, whoever runs them), the claim of a tick by one node, and the manual rerun.

use chrono::{DateTime, Duration, DurationRound, Utc};
use floor::domain::jobs::JobName;
use floor::domain::jobs::reminders::{PERIOD, slot_of};
use floor::domain::jobs::{self, Leftovers, Tick};
use floor_entities::job_runs;
use futures::future::join_all;
use sea_orm::{EntityTrait, Set};
use serde_json::json;
use uuid::Uuid;

use crate::fake_fcm::FakeFcm;
use crate::helpers::{Backend, Club, Session, TestApp, on_both_databases, spawn_app, spawn_app_with};
use crate::staffing::id_of;

on_both_databases!(
    a_tick_and_a_manual_rerun_in_its_window_send_each_reminder_once,
    a_24_hour_cancel_deadline_sends_both_reminders_in_one_run,
    only_accounts_holding_a_seat_in_a_tournament_of_the_window_are_reminded,
    of_two_nodes_one_claims_a_tick_and_runs_it,
    the_command_line_rerun_sends_nothing_a_tick_already_sent,
    a_failed_run_is_kept_with_its_claim_and_the_next_tick_runs,
    a_run_that_fails_for_a_moment_is_tried_again_within_its_tick,
    a_reminder_is_pushed_in_russian_once_to_the_players_device,
    a_tick_that_fell_while_no_node_ran_is_run_once_at_boot,
    a_claim_abandoned_by_a_node_that_died_is_run_again_by_one_node,
    a_failed_tick_is_run_again_at_boot,
    a_node_on_a_fresh_database_runs_no_tick_late,
);

/// A tournament of the club starting at `starts_at`, made through the API.
async fn tournament_at(app: &TestApp, club: &Club, capacity: i32, starts_at: DateTime<Utc>) -> Uuid {
    let location = app.create_location(club).await;
    let mut body = app.tournament_body(location, capacity, Duration::days(1));
    body["startsAt"] = json!(starts_at.to_rfc3339());
    let reply = app.post(&format!("/organizers/{}/tournaments", club.id), Some(&club.owner.access_token), body).await;
    id_of(&reply.assert_ok()["id"])
}

/// An hour well in the future: its reminders fall on slot boundaries.
fn round_start() -> DateTime<Utc> {
    (Utc::now() + Duration::days(3)).duration_trunc(Duration::hours(1)).expect("a whole hour")
}

/// The tick whose window ends at `moment`, the last one before it.
fn tick_before(moment: DateTime<Utc>) -> DateTime<Utc> {
    moment - PERIOD
}

async fn register(app: &TestApp, tournament: Uuid, player: &Session) -> Uuid {
    let reply = app.post(&format!("/tournaments/{tournament}/register"), Some(&player.access_token), json!({})).await;
    id_of(&reply.assert_ok()["id"])
}

async fn run_tick(app: &TestApp, tick_at: DateTime<Utc>) -> Tick {
    jobs::run_tick(app.db(), &app.state.notifier, JobName::TournamentReminders, tick_at, &[])
        .await
        .expect("the tick runs")
}

/// Reminders journaled for `user`, optionally only those of one tournament's window.
async fn reminders(app: &TestApp, user: Uuid, tournament: Option<Uuid>, window: Option<&str>) -> i64 {
    let key = format!(
        "tournament.reminder:{}:{}",
        tournament.map_or("%".to_owned(), |id| id.to_string()),
        window.unwrap_or("%")
    );
    app.count(&format!(
        "SELECT COUNT(*) FROM notifications WHERE kind = 'tournament.reminder' AND user_id = {} AND dedup_key LIKE '{key}'",
        app.uuid_literal(user)
    ))
    .await
}

async fn a_tick_and_a_manual_rerun_in_its_window_send_each_reminder_once(backend: Backend) {
    let Some(app) = spawn_app(backend).await else { return };
    let club = app.create_club("Aces", "+79990700001").await;
    let starts_at = round_start();
    let id = tournament_at(&app, &club, 10, starts_at).await;
    let players = app.sign_in_players(701, 2).await;
    for player in &players {
        register(&app, id, player).await;
    }

    let day_tick = tick_before(starts_at - Duration::hours(24));
    assert_eq!(run_tick(&app, day_tick).await, Tick::Ran);
    jobs::run_once(app.db(), &app.state.notifier, JobName::TournamentReminders, day_tick + Duration::minutes(3))
        .await
        .expect("the manual run works");
    assert_eq!(run_tick(&app, day_tick).await, Tick::ClaimedElsewhere, "a tick runs once");
    for player in &players {
        assert_eq!(reminders(&app, player.user_id, Some(id), Some("24h")).await, 1);
        assert_eq!(reminders(&app, player.user_id, None, None).await, 1, "the deadline is not due yet");
    }

    let deadline_tick = tick_before(starts_at - Duration::hours(3));
    assert_eq!(run_tick(&app, deadline_tick).await, Tick::Ran);
    jobs::run_once(app.db(), &app.state.notifier, JobName::TournamentReminders, deadline_tick + Duration::seconds(299))
        .await
        .expect("the manual run works");
    for player in &players {
        assert_eq!(reminders(&app, player.user_id, Some(id), Some("deadline")).await, 1);
        assert_eq!(reminders(&app, player.user_id, None, None).await, 2);
    }

    let list = app.get("/me/notifications", Some(&players[0].access_token)).await;
    let items = list.assert_ok()["items"].as_array().expect("items").clone();
    let windows: Vec<&str> = items.iter().map(|item| item["payload"]["window"].as_str().unwrap_or("")).collect();
    assert_eq!(windows, ["deadline", "24h"], "newest first");
    let payload = &items[1]["payload"];
    assert_eq!(items[1]["kind"], "tournament.reminder");
    assert_eq!(payload["tournamentId"], id.to_string());
    assert_eq!(payload["title"], "Турнир выходного дня", "the Russian title");
    let payload_start: DateTime<Utc> = payload["startsAt"].as_str().and_then(|at| at.parse().ok()).expect("startsAt");
    assert_eq!(payload_start, starts_at);
}

async fn a_24_hour_cancel_deadline_sends_both_reminders_in_one_run(backend: Backend) {
    let Some(app) = spawn_app(backend).await else { return };
    let club = app.create_club("Aces", "+79990700101").await;
    app.patch(&format!("/organizers/{}", club.id), Some(&club.owner.access_token), json!({"cancelDeadlineHours": 24}))
        .await
        .assert_ok();
    let starts_at = round_start() + Duration::minutes(2);
    let id = tournament_at(&app, &club, 10, starts_at).await;
    let player = app.sign_in("+79990700102").await;
    register(&app, id, &player).await;

    // The moment is 2 minutes into the slot's window.
    jobs::run_once(
        app.db(),
        &app.state.notifier,
        JobName::TournamentReminders,
        starts_at - Duration::hours(24) - Duration::minutes(2),
    )
    .await
    .expect("the run works");
    assert_eq!(reminders(&app, player.user_id, Some(id), Some("24h")).await, 1);
    assert_eq!(reminders(&app, player.user_id, Some(id), Some("deadline")).await, 1);
}

async fn only_accounts_holding_a_seat_in_a_tournament_of_the_window_are_reminded(backend: Backend) {
    let Some(app) = spawn_app(backend).await else { return };
    let club = app.create_club("Aces", "+79990700201").await;
    let starts_at = round_start();
    let id = tournament_at(&app, &club, 2, starts_at).await;
    let later = tournament_at(&app, &club, 10, starts_at + Duration::hours(1)).await;
    let [registered, checked_in, waiting, cancelled, elsewhere] =
        <[Session; 5]>::try_from(app.sign_in_players(702, 5).await).expect("five players");
    register(&app, id, &registered).await;
    let seat = register(&app, id, &checked_in).await;
    app.post(&format!("/tournaments/{id}/check-in"), Some(&club.owner.access_token), json!({"registrationId": seat}))
        .await
        .assert_ok();
    register(&app, id, &waiting).await;
    register(&app, id, &cancelled).await;
    app.post(&format!("/tournaments/{id}/cancel-registration"), Some(&cancelled.access_token), json!({}))
        .await
        .assert_ok();
    let guest = app
        .post(
            &format!("/tournaments/{id}/walk-in"),
            Some(&club.owner.access_token),
            json!({"phone": "+79990700299", "name": "Гость"}),
        )
        .await;
    assert!(guest.assert_ok()["userId"].is_null(), "a guest without an account");
    register(&app, later, &elsewhere).await;
    let statuses = app
        .count(&format!(
            "SELECT COUNT(*) FROM registrations WHERE status = 'waitlist' AND tournament_id = {}",
            app.uuid_literal(id)
        ))
        .await;
    assert_eq!(statuses, 1, "the capacity of two put one player on the waitlist");

    assert_eq!(run_tick(&app, tick_before(starts_at - Duration::hours(24))).await, Tick::Ran);
    assert_eq!(reminders(&app, registered.user_id, Some(id), Some("24h")).await, 1);
    assert_eq!(reminders(&app, checked_in.user_id, Some(id), Some("24h")).await, 1);
    for nobody in [&waiting, &cancelled, &elsewhere] {
        assert_eq!(reminders(&app, nobody.user_id, None, None).await, 0);
    }
    assert_eq!(
        app.count("SELECT COUNT(*) FROM notifications WHERE kind = 'tournament.reminder'").await,
        2,
        "the guest has no journal"
    );
}

async fn of_two_nodes_one_claims_a_tick_and_runs_it(backend: Backend) {
    let Some(app) = spawn_app(backend).await else { return };
    let second = app.second_node(&[]).await;
    let club = app.create_club("Aces", "+79990700301").await;
    let starts_at = round_start();
    let id = tournament_at(&app, &club, 10, starts_at).await;
    let player = app.sign_in("+79990700302").await;
    register(&app, id, &player).await;

    let tick = tick_before(starts_at - Duration::hours(24));
    let nodes = [&app, &second, &app, &second, &app, &second];
    let outcomes = join_all(nodes.iter().map(|node| run_tick(node, tick))).await;
    assert_eq!(outcomes.iter().filter(|tick| **tick == Tick::Ran).count(), 1, "{outcomes:?}");
    assert_eq!(reminders(&app, player.user_id, Some(id), Some("24h")).await, 1);
    assert_eq!(app.count("SELECT COUNT(*) FROM job_runs WHERE finished_at IS NOT NULL AND failure IS NULL").await, 1);

    let next = tick + PERIOD;
    assert_eq!(run_tick(&second, next).await, Tick::Ran, "the next tick is a new claim");
    assert_eq!(run_tick(&app, next).await, Tick::ClaimedElsewhere);
    assert_eq!(app.count("SELECT COUNT(*) FROM job_runs WHERE job = 'tournament-reminders'").await, 2);
}

async fn the_command_line_rerun_sends_nothing_a_tick_already_sent(backend: Backend) {
    let Some(app) = spawn_app(backend).await else { return };
    let club = app.create_club("Aces", "+79990700401").await;
    // The command runs at its own clock: whether it lands in this slot or the next one, a tick
    // has run there, for a tournament whose day-before moment ends that slot's window.
    let slot = slot_of(Utc::now());
    let ticks = [slot, slot + PERIOD];
    let mut tournaments = Vec::new();
    for tick in ticks {
        tournaments.push(tournament_at(&app, &club, 10, tick + PERIOD + Duration::hours(24)).await);
    }
    let early = app.sign_in("+79990700402").await;
    for id in &tournaments {
        register(&app, *id, &early).await;
    }
    for tick in ticks {
        assert_eq!(run_tick(&app, tick).await, Tick::Ran);
    }
    let late = app.sign_in("+79990700403").await;
    for id in &tournaments {
        register(&app, *id, &late).await;
    }

    let database_url = app.database_url.clone();
    let output = tokio::task::spawn_blocking(move || {
        crate::cli::floor().args(["job", "tournament-reminders"]).env("DATABASE_URL", database_url).output()
    })
    .await
    .expect("the command ends")
    .expect("floor runs");
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));

    for id in &tournaments {
        assert_eq!(reminders(&app, early.user_id, Some(*id), Some("24h")).await, 1, "nothing again");
    }
    assert_eq!(reminders(&app, late.user_id, None, None).await, 1, "the rerun covered one window: its own");
}

async fn a_failed_run_is_kept_with_its_claim_and_the_next_tick_runs(backend: Backend) {
    let Some(app) = spawn_app(backend).await else { return };
    let midnight = Utc::now().duration_trunc(Duration::days(1)).expect("a whole day");
    let first = midnight + Duration::days(1) + Duration::minutes(5);
    app.exec("ALTER TABLE seasons RENAME TO seasons_away").await;
    let failed = jobs::run_tick(app.db(), &app.state.notifier, JobName::SeasonRollover, first, &[]).await;
    assert!(failed.is_err(), "{failed:?}");
    app.exec("ALTER TABLE seasons_away RENAME TO seasons").await;
    assert_eq!(
        app.count("SELECT COUNT(*) FROM job_runs WHERE job = 'season-rollover' AND finished_at IS NOT NULL AND failure IS NOT NULL").await,
        1,
        "the claim keeps why the run failed"
    );
    let next =
        jobs::run_tick(app.db(), &app.state.notifier, JobName::SeasonRollover, first + Duration::days(1), &[]).await;
    assert_eq!(next.ok(), Some(Tick::Ran));
    assert_eq!(app.count("SELECT COUNT(*) FROM job_runs WHERE failure IS NULL AND finished_at IS NOT NULL").await, 1);
}

async fn a_run_that_fails_for_a_moment_is_tried_again_within_its_tick(backend: Backend) {
    let Some(app) = spawn_app(backend).await else { return };
    let midnight = Utc::now().duration_trunc(Duration::days(1)).expect("a whole day");
    let tick = midnight + Duration::days(1) + Duration::minutes(5);
    app.exec("ALTER TABLE seasons RENAME TO seasons_away").await;
    let db = app.db().clone();
    let notifier = app.state.notifier.clone();
    let run = tokio::spawn(async move {
        jobs::run_tick(&db, &notifier, JobName::SeasonRollover, tick, &[std::time::Duration::from_secs(3)]).await
    });
    // The first try fails at once; the table is back well before the second.
    tokio::time::sleep(std::time::Duration::from_secs(1)).await;
    app.exec("ALTER TABLE seasons_away RENAME TO seasons").await;
    let outcome = run.await.expect("the run ends");
    assert_eq!(outcome.ok(), Some(Tick::Ran));
    assert_eq!(
        app.count("SELECT COUNT(*) FROM job_runs WHERE job = 'season-rollover' AND failure IS NULL AND finished_at IS NOT NULL").await,
        1,
        "the claim records the success of the second try"
    );
}

async fn a_reminder_is_pushed_in_russian_once_to_the_players_device(backend: Backend) {
    let fcm = FakeFcm::start().await;
    let env = fcm.env();
    let vars: Vec<(&str, &str)> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    let Some(app) = spawn_app_with(backend, &vars).await else { return };
    let club = app.create_club("Aces", "+79990700501").await;
    let starts_at = round_start();
    let id = tournament_at(&app, &club, 10, starts_at).await;
    let player = app.sign_in("+79990700502").await;
    register(&app, id, &player).await;
    let device = json!({"token": "player-phone", "platform": "android"});
    assert_eq!(app.post("/me/push-tokens", Some(&player.access_token), device).await.status.as_u16(), 201);

    let deadline_tick = tick_before(starts_at - Duration::hours(3));
    assert_eq!(run_tick(&app, deadline_tick).await, Tick::Ran);
    jobs::run_once(app.db(), &app.state.notifier, JobName::TournamentReminders, deadline_tick)
        .await
        .expect("the manual run works");

    let messages = fcm.messages();
    assert_eq!(messages.len(), 1, "pushed once: {messages:?}");
    assert_eq!(messages[0]["token"], "player-phone");
    assert_eq!(messages[0]["notification"]["title"], "Бесплатная отмена заканчивается");
    assert_eq!(
        messages[0]["notification"]["body"],
        "«Турнир выходного дня»: отменить регистрацию без штрафа можно ещё несколько минут."
    );
    assert_eq!(messages[0]["data"]["kind"], "tournament.reminder");
    assert_eq!(messages[0]["data"]["window"], "deadline");
    assert_eq!(messages[0]["data"]["tournamentId"], id.to_string());
}

/// Catches up `job` on `app` as a node booting (or ticking) at `now` would.
async fn catch_up(app: &TestApp, job: JobName, now: DateTime<Utc>, leftovers: Leftovers) -> Vec<DateTime<Utc>> {
    jobs::catch_up_with(app.db(), &app.state.notifier, job, now, leftovers, &[]).await.expect("the catch-up runs")
}

/// A claim of a reminders tick as a node leaves it: unfinished, or ended with `failure`.
async fn leave_claim(app: &TestApp, tick_at: DateTime<Utc>, claimed_at: DateTime<Utc>, failure: Option<&str>) {
    let claim = job_runs::ActiveModel {
        job: Set(jobs::name(JobName::TournamentReminders).to_owned()),
        tick_at: Set(tick_at),
        claimed_at: Set(claimed_at),
        finished_at: Set(failure.map(|_| claimed_at)),
        failure: Set(failure.map(str::to_owned)),
    };
    job_runs::Entity::insert(claim).exec_without_returning(app.db()).await.expect("the claim is stored");
}

async fn a_tick_that_fell_while_no_node_ran_is_run_once_at_boot(backend: Backend) {
    let Some(app) = spawn_app(backend).await else { return };
    let second = app.second_node(&[]).await;
    let club = app.create_club("Aces", "+79990700601").await;
    let starts_at = round_start();
    let missed = tournament_at(&app, &club, 10, starts_at).await;
    // Its day-before moment fell seven hours before the boot: older than the catch-up window.
    let too_old = tournament_at(&app, &club, 10, starts_at - Duration::hours(7)).await;
    let player = app.sign_in("+79990700602").await;
    register(&app, missed, &player).await;
    register(&app, too_old, &player).await;

    // Every node was down from well before the day-before moment until half an hour after it.
    let moment = starts_at - Duration::hours(24);
    let boot = moment + Duration::minutes(30);
    let booted = [&app, &second, &app, &second];
    let ran = join_all(
        booted.iter().map(|node| catch_up(node, JobName::TournamentReminders, boot, Leftovers::AbandonedOrFailed)),
    )
    .await;
    let ran: Vec<DateTime<Utc>> = ran.into_iter().flatten().collect();
    assert!(ran.contains(&tick_before(moment)), "{ran:?}");
    let window = jobs::catch_up(JobName::TournamentReminders);
    assert_eq!(
        ran.len() as i64,
        window.num_minutes() / PERIOD.num_minutes(),
        "each tick of the window ran once, on one node"
    );
    assert!(ran.iter().all(|tick| *tick > boot - window && *tick <= boot), "{ran:?}");
    assert_eq!(reminders(&app, player.user_id, Some(missed), Some("24h")).await, 1, "sent once, late");
    assert_eq!(reminders(&app, player.user_id, Some(too_old), None).await, 0, "older than the window");

    assert!(
        catch_up(&app, JobName::TournamentReminders, boot, Leftovers::AbandonedOrFailed).await.is_empty(),
        "a second boot runs nothing"
    );
    assert_eq!(reminders(&app, player.user_id, None, None).await, 1);
}

async fn a_claim_abandoned_by_a_node_that_died_is_run_again_by_one_node(backend: Backend) {
    let Some(app) = spawn_app(backend).await else { return };
    let second = app.second_node(&[]).await;
    let club = app.create_club("Aces", "+79990700701").await;
    let starts_at = round_start();
    let id = tournament_at(&app, &club, 10, starts_at).await;
    let player = app.sign_in("+79990700702").await;
    register(&app, id, &player).await;

    // A node claimed the day-before tick and died before it sent anything; a younger claim is
    // of a node still running its tick.
    let tick = tick_before(starts_at - Duration::hours(24));
    let now = tick + jobs::ABANDONED_AFTER + Duration::minutes(1);
    leave_claim(&app, tick, tick, None).await;
    let running = tick + PERIOD * 3;
    leave_claim(&app, running, now - Duration::minutes(1), None).await;

    let nodes = [&app, &second, &app, &second];
    let ran =
        join_all(nodes.iter().map(|node| catch_up(node, JobName::TournamentReminders, now, Leftovers::Abandoned)))
            .await;
    let ran: Vec<DateTime<Utc>> = ran.into_iter().flatten().collect();
    assert_eq!(ran, [tick], "one node runs the abandoned tick; the running one is left to its node");
    assert_eq!(reminders(&app, player.user_id, Some(id), Some("24h")).await, 1);
    assert_eq!(
        app.count("SELECT COUNT(*) FROM job_runs WHERE finished_at IS NOT NULL AND failure IS NULL").await,
        1,
        "the claim records the run"
    );
    assert_eq!(app.count("SELECT COUNT(*) FROM job_runs WHERE finished_at IS NULL").await, 1);
}

/// Moves the database's making `hours` back, as if it had been made then.
async fn made_hours_ago(app: &TestApp, hours: i64) {
    app.exec(&format!("UPDATE seaql_migrations SET applied_at = applied_at - {}", hours * 3600)).await;
}

async fn a_node_on_a_fresh_database_runs_no_tick_late(backend: Backend) {
    let Some(app) = spawn_app(backend).await else { return };
    let now = Utc::now();
    for job in [JobName::TournamentReminders, JobName::SeasonRollover] {
        let ran = catch_up(&app, job, now, Leftovers::AbandonedOrFailed).await;
        assert!(ran.is_empty(), "no tick fell while the database existed: {ran:?}");
    }
    assert_eq!(app.count("SELECT COUNT(*) FROM job_runs").await, 0);

    // Two hours later, with no node having run meanwhile: the ticks of those two hours.
    made_hours_ago(&app, 2).await;
    let ran = catch_up(&app, JobName::TournamentReminders, now, Leftovers::AbandonedOrFailed).await;
    assert!((23..=24).contains(&ran.len()), "two hours of five-minute ticks: {}", ran.len());
    assert!(ran.iter().all(|tick| *tick > now - Duration::hours(2)), "{ran:?}");
}

async fn a_failed_tick_is_run_again_at_boot(backend: Backend) {
    let Some(app) = spawn_app(backend).await else { return };
    let club = app.create_club("Aces", "+79990700801").await;
    let starts_at = round_start();
    let id = tournament_at(&app, &club, 10, starts_at).await;
    let player = app.sign_in("+79990700802").await;
    register(&app, id, &player).await;

    let tick = tick_before(starts_at - Duration::hours(24));
    leave_claim(&app, tick, tick, Some("the database was away")).await;
    let now = tick + Duration::minutes(20);
    assert!(catch_up(&app, JobName::TournamentReminders, now, Leftovers::Abandoned).await.is_empty(), "not on a tick");
    assert_eq!(reminders(&app, player.user_id, None, None).await, 0);

    let ran = catch_up(&app, JobName::TournamentReminders, now, Leftovers::AbandonedOrFailed).await;
    assert!(ran.contains(&tick), "{ran:?}");
    assert_eq!(reminders(&app, player.user_id, Some(id), Some("24h")).await, 1);
    assert_eq!(
        app.count("SELECT COUNT(*) FROM job_runs WHERE failure IS NOT NULL").await,
        0,
        "the claim now records the success"
    );
}

/// A graceful shutdown finishes the job ticks under way (their claims end done or failed,
/// never abandoned for another node to take over 15 minutes later) and starts no new one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_shutdown_lets_the_ticks_under_way_finish_and_starts_none() {
    use sea_orm::ConnectionTrait;

    use crate::helpers::{TestDatabase, test_config};
    let Some(database) = TestDatabase::create(Backend::Sqlite).await else { return };
    let application = floor::Application::build(test_config(&database.url, &[])).await.expect("the node builds");
    let db = application.state().db.clone();
    // A database made a day ago on which no node ran: at boot the schedules catch up on its
    // day of ticks, dozens of claims.
    let made_a_day_ago = "UPDATE seaql_migrations SET applied_at = applied_at - 86400";
    db.execute_unprepared(made_a_day_ago).await.expect("the database backdated");
    application.spawn_jobs();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let serving = tokio::spawn(application.run_until(async move {
        let _ = stopped.await;
    }));
    let count = |sql: &'static str| {
        let db = db.clone();
        async move {
            let row = db.query_one_raw(sea_orm::Statement::from_string(db.get_database_backend(), sql)).await;
            row.expect("query").and_then(|row| row.try_get_by_index::<i64>(0).ok()).unwrap_or(0)
        }
    };
    for _ in 0..200 {
        if count("SELECT COUNT(*) FROM job_runs").await > 0 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    assert!(count("SELECT COUNT(*) FROM job_runs").await > 0, "the catch-up had begun");
    let _ = stop.send(());
    let served = tokio::time::timeout(std::time::Duration::from_secs(30), serving).await;
    served.expect("the node stops within the grace").expect("joined").expect("served");
    assert_eq!(count("SELECT COUNT(*) FROM job_runs WHERE finished_at IS NULL").await, 0, "no claim left abandoned");
    let ran = count("SELECT COUNT(*) FROM job_runs").await;
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    assert_eq!(count("SELECT COUNT(*) FROM job_runs").await, ran, "nothing runs after the node stopped");
}
