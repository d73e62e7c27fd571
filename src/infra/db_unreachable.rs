//! What tells a database out of reach (`503 SERVICE_UNAVAILABLE`, try again) from every other
//! failure of a statement (`500`): read by the requests' errors, the live store and the
//! lookout ([`crate::infra::db_watch`]).

use sea_orm::DbErr;

/// The database could not be reached, as text: an error shared between callers keeps only its
/// text, and this keeps it an unreachable database ([`is_unreachable`]).
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct Unreachable(pub String);

/// Whether `cause` is the database being out of reach: no connection within the acquire
/// timeout, a closed pool, a connection lost or refused (I/O, TLS, a broken protocol stream,
/// a server that sent nothing within the deadline), PostgreSQL shutting down or not yet
/// accepting (SQLSTATE 57P01, 57P02, 57P03, class 08), or a statement it cancelled at its
/// deadline (57014: it did not get through in time, under a lock or a load).
/// The one place that tells an outage (`503 SERVICE_UNAVAILABLE`, try again) from every other
/// failure of a statement (a constraint, a bad query: `500` as before). Looks through the
/// whole chain, so a `DbErr` under context is found.
pub fn is_unreachable(cause: &anyhow::Error) -> bool {
    cause.chain().any(|err| {
        if err.is::<Unreachable>() {
            return true;
        }
        if let Some(err) = err.downcast_ref::<DbErr>() {
            return db_err_is_unreachable(err);
        }
        err.downcast_ref::<sea_orm::sqlx::Error>().is_some_and(sqlx_is_unreachable)
    })
}

/// [`is_unreachable`] of one `DbErr`.
pub fn db_err_is_unreachable(err: &DbErr) -> bool {
    use sea_orm::RuntimeErr::SqlxError;
    match err {
        DbErr::ConnectionAcquire(_) => true,
        DbErr::Conn(SqlxError(err)) | DbErr::Exec(SqlxError(err)) | DbErr::Query(SqlxError(err)) => {
            sqlx_is_unreachable(err)
        }
        _ => false,
    }
}

pub(crate) fn sqlx_is_unreachable(err: &sea_orm::sqlx::Error) -> bool {
    use sea_orm::sqlx::Error;
    match err {
        Error::PoolTimedOut | Error::PoolClosed | Error::Io(_) | Error::Tls(_) | Error::Protocol(_) => true,
        Error::Database(err) => err.code().is_some_and(|state| is_lost_connection_state(&state)),
        _ => false,
    }
}

/// PostgreSQL's SQLSTATEs of a server that went away, does not take connections now, or did
/// not get through a statement in time: `57P01` admin shutdown, `57P02` crash shutdown, `57P03`
/// cannot connect now (starting up), `57014` a statement cancelled (at `statement_timeout`),
/// `25P03` a session ended while idle in a transaction (at
/// `idle_in_transaction_session_timeout`: the node stalled; its transaction was rolled back),
/// and class `08`, connection exceptions. SQLite's codes are numbers and never match.
fn is_lost_connection_state(state: &str) -> bool {
    matches!(state, "57P01" | "57P02" | "57P03" | "57014" | "25P03") || (state.len() == 5 && state.starts_with("08"))
}

#[cfg(test)]
mod tests {
    use sea_orm::{ConnectionTrait, Database};

    use super::*;

    fn sqlx_in_db_err(err: sea_orm::sqlx::Error) -> DbErr {
        DbErr::Exec(sea_orm::RuntimeErr::SqlxError(std::sync::Arc::new(err)))
    }

    #[test]
    fn a_database_out_of_reach_is_told_from_other_failures() {
        use sea_orm::sqlx::Error;
        let io = |kind| Error::Io(std::io::Error::new(kind, "gone"));
        let unreachable = [
            DbErr::ConnectionAcquire(sea_orm::ConnAcquireErr::Timeout),
            DbErr::ConnectionAcquire(sea_orm::ConnAcquireErr::ConnectionClosed),
            DbErr::Conn(sea_orm::RuntimeErr::SqlxError(std::sync::Arc::new(Error::PoolTimedOut))),
            sqlx_in_db_err(Error::PoolClosed),
            sqlx_in_db_err(io(std::io::ErrorKind::ConnectionRefused)),
            DbErr::Query(sea_orm::RuntimeErr::SqlxError(std::sync::Arc::new(io(std::io::ErrorKind::ConnectionReset)))),
            sqlx_in_db_err(io(std::io::ErrorKind::UnexpectedEof)),
            sqlx_in_db_err(Error::Tls("handshake interrupted".into())),
            sqlx_in_db_err(Error::Protocol("unexpected end of stream".to_owned())),
        ];
        for err in unreachable {
            assert!(db_err_is_unreachable(&err), "{err:?}");
            assert!(is_unreachable(&anyhow::Error::new(err.clone())), "{err:?}");
            assert!(
                is_unreachable(&anyhow::Error::new(err.clone()).context("reading the agenda")),
                "{err:?} under context"
            );
        }
        assert!(is_unreachable(&anyhow::Error::new(Error::PoolTimedOut)), "a bare sqlx error");
        assert!(is_unreachable(&anyhow::Error::new(Unreachable("shared".to_owned()))));

        let others = [
            DbErr::RecordNotFound("tournament".to_owned()),
            DbErr::Custom("no".to_owned()),
            DbErr::Conn(sea_orm::RuntimeErr::Internal("a setting".to_owned())),
            sqlx_in_db_err(Error::RowNotFound),
            sqlx_in_db_err(Error::ColumnNotFound("id".to_owned())),
        ];
        for err in others {
            assert!(!db_err_is_unreachable(&err), "{err:?}");
            assert!(!is_unreachable(&anyhow::Error::new(err.clone()).context("a write")), "{err:?}");
        }
        // An I/O error of something else (a file, an upload) is not the database's.
        assert!(!is_unreachable(&anyhow::Error::new(std::io::Error::other("disk full"))));
        assert!(!is_unreachable(&anyhow::anyhow!("connection refused, said as text")));
    }

    #[test]
    fn postgresql_s_states_of_a_server_gone_or_starting_are_outages() {
        for state in ["57P01", "57P02", "57P03", "57014", "25P03", "08000", "08003", "08006", "08001", "08P01"] {
            assert!(is_lost_connection_state(state), "{state}");
        }
        // A unique or foreign-key violation, a serialization failure, a deadlock, too many
        // connections, and SQLite's busy (5) and constraint (2067, 787) codes stay what they are.
        for state in ["23505", "23503", "40001", "40P01", "53300", "5", "2067", "787", "08"] {
            assert!(!is_lost_connection_state(state), "{state}");
        }
    }

    #[tokio::test]
    async fn a_constraint_violation_of_a_real_database_is_not_an_outage() {
        let db = Database::connect("sqlite::memory:").await.expect("an in-memory database");
        db.execute_unprepared("CREATE TABLE t (id INTEGER PRIMARY KEY)").await.expect("a table");
        db.execute_unprepared("INSERT INTO t VALUES (1)").await.expect("a row");
        let err = db.execute_unprepared("INSERT INTO t VALUES (1)").await.expect_err("a duplicate");
        assert!(matches!(err.sql_err(), Some(sea_orm::SqlErr::UniqueConstraintViolation(_))), "{err:?}");
        assert!(!db_err_is_unreachable(&err), "{err:?}");
        let err = db.execute_unprepared("SELECT nothing FROM nowhere").await.expect_err("a bad query");
        assert!(!db_err_is_unreachable(&err), "{err:?}");
    }
}
