//! Whether the database answers, as this node last found: asked every second in the
//! background, so readiness, liveness and `/metrics` read a flag instead of waiting on a
//! database that may hang.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use sea_orm::DatabaseConnection;
use tokio_util::sync::CancellationToken;

/// How often the database is asked.
const ASK_EVERY: Duration = Duration::from_secs(1);
/// The longest an answer may take before the database counts as unreachable.
const ANSWER_WITHIN: Duration = Duration::from_secs(2);

/// The database's state as last found; cheap to clone.
#[derive(Clone)]
pub struct DbWatch(Arc<AtomicBool>);

impl DbWatch {
    /// Starts asking `db` until `shutdown`; the database answered a moment ago (the node has
    /// just migrated it), so it starts up.
    pub fn start(db: DatabaseConnection, shutdown: CancellationToken) -> Self {
        let watch = Self(Arc::new(AtomicBool::new(true)));
        tokio::spawn(watch.clone().keep(db, shutdown));
        watch
    }

    /// Whether the database answered the last question.
    pub fn is_up(&self) -> bool {
        self.0.load(Ordering::SeqCst)
    }

    async fn keep(self, db: DatabaseConnection, shutdown: CancellationToken) {
        loop {
            tokio::select! {
                () = shutdown.cancelled() => return,
                () = tokio::time::sleep(ASK_EVERY) => {}
            }
            let answered = tokio::time::timeout(ANSWER_WITHIN, db.ping()).await;
            let up = matches!(answered, Ok(Ok(())));
            let was = self.0.swap(up, Ordering::SeqCst);
            match (was, up, answered) {
                (true, false, Ok(Err(err))) => tracing::error!(error = %err, "the database does not answer"),
                (true, false, _) => tracing::error!("the database does not answer within {ANSWER_WITHIN:?}"),
                (false, true, _) => tracing::info!("the database answers again"),
                _ => {}
            }
        }
    }
}
