//! The `floor` binary: reads the configuration, sets up telemetry, runs one command.

use std::process::ExitCode;

use anyhow::Context;
use chrono::Utc;
use clap::Parser;
use floor::cli::{Cli, Command};
use floor::domain::notifications::Notifier;
use floor::domain::{jobs, seed};
use floor::infra::db;
use floor::infra::db::MigrationState;
use floor::infra::telemetry::{self, TelemetrySettings};
use floor::{Application, Config};

#[tokio::main]
async fn main() -> ExitCode {
    let cli = Cli::parse();
    match &cli.command {
        Command::Openapi => return print_openapi(),
        Command::Asyncapi => return print_asyncapi(),
        // Before the configuration: a probe needs none, and logs nothing but its verdict.
        Command::Healthcheck { url } => return check_ready(url.as_deref()).await,
        _ => {}
    }
    let config = match Config::from_env() {
        Ok(config) => config,
        Err(err) => {
            eprintln!("floor: refusing to start: {err}");
            return ExitCode::from(2);
        }
    };
    let settings = TelemetrySettings {
        config: config.telemetry.clone(),
        service_name: "floor",
        // A node without NODE_URL is one alone (or one whose peers reach it by its address);
        // a random id still tells its spans from another process's.
        instance_id: config.node_url.clone().unwrap_or_else(|| uuid::Uuid::new_v4().to_string()),
    };
    let _telemetry = match telemetry::init(&settings) {
        Ok(guard) => guard,
        Err(err) => {
            eprintln!("floor: telemetry: {err:#}");
            return ExitCode::from(2);
        }
    };
    match run(cli.command, config).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            tracing::error!(error = ?err, "floor stopped with an error");
            eprintln!("floor: {err:#}");
            ExitCode::FAILURE
        }
    }
}

async fn run(command: Command, config: Config) -> anyhow::Result<()> {
    match command {
        Command::Serve => {
            let application = Application::build(config).await?;
            application.spawn_jobs();
            application.run_until(shutdown_signal()).await
        }
        Command::Migrate { status: true } => {
            let db = db::connect(&config.database_url).await?;
            let migrations = db::migration_status(&db).await.context("reading the applied migrations")?;
            let count = |state| migrations.iter().filter(|(_, of)| *of == state).count();
            for (name, state) in &migrations {
                let word = match state {
                    MigrationState::Applied => "applied",
                    MigrationState::Pending => "pending",
                    MigrationState::Newer => "newer",
                };
                println!("{word} {name}");
            }
            let (applied, pending) = (count(MigrationState::Applied), count(MigrationState::Pending));
            match count(MigrationState::Newer) {
                0 => println!("{applied} applied, {pending} pending"),
                newer => println!("{applied} applied, {pending} pending, {newer} from a newer release"),
            }
            Ok(())
        }
        Command::Migrate { status: false } => {
            let db = db::connect(&config.database_url).await?;
            db::with_schema_lock(&db, async { db::migrate(&db).await.context("migrating") }).await?;
            tracing::info!("migrations applied");
            Ok(())
        }
        Command::Seed => {
            let db = db::connect(&config.database_url).await?;
            let report = db::with_schema_lock(&db, async { seed::seed(&db).await.context("seeding") }).await?;
            tracing::info!(?report, "reference data seeded");
            Ok(())
        }
        Command::Backup { to } => {
            let db = db::connect(&config.database_url).await?;
            db::back_up(&db, &to).await?;
            tracing::info!(to = %to.display(), "database copied");
            Ok(())
        }
        Command::Job { name, at } => {
            let db = db::connect(&config.database_url).await?;
            let notifier = Notifier::from_settings(config.fcm.as_ref())?;
            jobs::run_once(&db, &notifier, name, at.unwrap_or_else(Utc::now)).await
        }
        Command::Openapi | Command::Asyncapi | Command::Healthcheck { .. } => Ok(()),
    }
}

/// How long the health check waits for the server's answer.
const HEALTHCHECK_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(3);

/// `floor healthcheck`: success when `url` (the local `/ready` by default) answers 200.
async fn check_ready(url: Option<&str>) -> ExitCode {
    let url = match url {
        Some(url) => url.to_owned(),
        None => match Config::port_from_env() {
            Ok(port) => format!("http://127.0.0.1:{port}/ready"),
            Err(err) => {
                eprintln!("floor healthcheck: {err}");
                return ExitCode::FAILURE;
            }
        },
    };
    let answer = match floor::infra::outbound::client(HEALTHCHECK_TIMEOUT) {
        Ok(client) => client.get(&url).send().await,
        Err(err) => {
            eprintln!("floor healthcheck: {err}");
            return ExitCode::FAILURE;
        }
    };
    match answer {
        Ok(answer) if answer.status().is_success() => ExitCode::SUCCESS,
        Ok(answer) => {
            eprintln!("floor healthcheck: {url} answered {}", answer.status());
            ExitCode::FAILURE
        }
        Err(err) => {
            eprintln!("floor healthcheck: {url}: {}", floor::infra::outbound::transport_reason(err));
            ExitCode::FAILURE
        }
    }
}

fn print_openapi() -> ExitCode {
    match floor::http::openapi().to_yaml() {
        Ok(yaml) => {
            print!("{yaml}");
            ExitCode::SUCCESS
        }
        Err(err) => {
            eprintln!("floor: rendering the OpenAPI document: {err}");
            ExitCode::FAILURE
        }
    }
}

fn print_asyncapi() -> ExitCode {
    match floor::domain::live::asyncapi::asyncapi().to_yaml() {
        Ok(yaml) => {
            print!("{yaml}");
            ExitCode::SUCCESS
        }
        Err(err) => {
            eprintln!("floor: rendering the AsyncAPI document: {err}");
            ExitCode::FAILURE
        }
    }
}

/// Completes on Ctrl-C or SIGTERM (what a container runtime sends).
async fn shutdown_signal() {
    let ctrl_c = async {
        if let Err(err) = tokio::signal::ctrl_c().await {
            tracing::error!(%err, "cannot listen for Ctrl-C");
            std::future::pending::<()>().await;
        }
    };
    #[cfg(unix)]
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut signal) => {
                signal.recv().await;
            }
            Err(err) => {
                tracing::error!(%err, "cannot listen for SIGTERM");
                std::future::pending::<()>().await;
            }
        }
    };
    #[cfg(not(unix))]
    let terminate = std::future::pending::<()>();
    tokio::select! {
        () = ctrl_c => {}
        () = terminate => {}
    }
    tracing::info!("shutting down");
}
