//! The command line: `floor serve | migrate [--status] | seed | job <name> | backup <file> | openapi |
//! asyncapi | healthcheck`.

use clap::{Parser, Subcommand};

use crate::domain::jobs::JobName;

#[derive(Parser, Debug)]
#[command(name = "floor", version = crate::infra::release::DESCRIBED, about = "Floor: the backend for sport-poker clubs")]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand, Debug, PartialEq, Eq)]
pub enum Command {
    /// Migrate, seed, start the background jobs and serve the API on PORT.
    Serve,
    /// Apply pending database migrations, then exit.
    Migrate {
        /// List each migration as `applied` or `pending` instead, changing nothing.
        #[arg(long)]
        status: bool,
    },
    /// Insert the reference data that is missing (idempotent), then exit.
    Seed,
    /// Run one background job now (the manual rerun; it never repeats what a tick sent).
    Job {
        #[arg(value_enum)]
        name: JobName,
        /// Run as of this moment (RFC 3339, e.g. 2026-11-22T15:55:00Z) instead of now: covers
        /// the window of a tick that failed. What was sent already is not sent again.
        #[arg(long)]
        at: Option<chrono::DateTime<chrono::Utc>>,
    },
    /// Print the OpenAPI contract (YAML) to standard output.
    Openapi,
    /// Print the AsyncAPI contract of the Socket.IO namespace `/live` (YAML) to standard output.
    Asyncapi,
    /// Write an online, consistent copy of the SQLite database to FILE while the server runs
    /// (SQLite's `VACUUM INTO`); on PostgreSQL use `pg_dump` (see deploy/README.md).
    Backup {
        /// Where the copy goes; it must not exist yet.
        to: std::path::PathBuf,
    },
    /// Exit 0 when the local server is ready (`GET /ready` answers 200), else 1: the
    /// container's health check, since the image has no shell or curl.
    Healthcheck {
        /// What to ask [default: `http://127.0.0.1:$PORT/ready`, on the port the server reads].
        #[arg(long)]
        url: Option<String>,
    },
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> Result<Command, clap::Error> {
        Cli::try_parse_from(std::iter::once("floor").chain(args.iter().copied())).map(|cli| cli.command)
    }

    #[test]
    fn every_command_of_the_contract_parses() {
        assert_eq!(parse(&["serve"]).ok(), Some(Command::Serve));
        assert_eq!(parse(&["migrate"]).ok(), Some(Command::Migrate { status: false }));
        assert_eq!(parse(&["migrate", "--status"]).ok(), Some(Command::Migrate { status: true }));
        assert_eq!(parse(&["seed"]).ok(), Some(Command::Seed));
        assert_eq!(parse(&["openapi"]).ok(), Some(Command::Openapi));
        assert_eq!(parse(&["asyncapi"]).ok(), Some(Command::Asyncapi));
        assert_eq!(parse(&["healthcheck"]).ok(), Some(Command::Healthcheck { url: None }));
        assert_eq!(parse(&["backup", "copy.db"]).ok(), Some(Command::Backup { to: "copy.db".into() }));
        assert!(parse(&["backup"]).is_err(), "a backup needs a file");
        let url = Some("http://127.0.0.1:9000/ready".to_owned());
        assert_eq!(
            parse(&["healthcheck", "--url", "http://127.0.0.1:9000/ready"]).ok(),
            Some(Command::Healthcheck { url })
        );
        assert_eq!(
            parse(&["job", "season-rollover"]).ok(),
            Some(Command::Job { name: JobName::SeasonRollover, at: None })
        );
        assert_eq!(
            parse(&["job", "tournament-reminders"]).ok(),
            Some(Command::Job { name: JobName::TournamentReminders, at: None })
        );
        let at = "2026-11-22T15:55:00Z".parse().ok();
        assert_eq!(
            parse(&["job", "tournament-reminders", "--at", "2026-11-22T15:55:00Z"]).ok(),
            Some(Command::Job { name: JobName::TournamentReminders, at })
        );
        assert!(parse(&["job", "tournament-reminders", "--at", "yesterday"]).is_err());
    }

    #[test]
    fn an_unknown_job_is_refused() {
        assert!(parse(&["job", "make-coffee"]).is_err());
        assert!(parse(&[]).is_err());
    }
}
