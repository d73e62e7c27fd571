//! The application's shared state: everything a request handler may reach, built once at
//! startup and shared by every request.

use std::ops::Deref;
use std::sync::Arc;

use sea_orm::DatabaseConnection;

use crate::auth::SignIn;
use crate::config::Config;
use crate::live::LiveRegistry;
use crate::live::json::LiveJson;
use crate::live::socket::SocketBroadcaster;
use crate::notifications::Notifier;
use crate::storage::Storage;

/// Everything a request handler may need, built once.
pub struct App {
    pub config: Config,
    pub db: DatabaseConnection,
    /// Token keys, code channels and the platform's admin phones.
    pub sign_in: SignIn,
    /// Present when `REDIS_URL` is set.
    pub redis: Option<redis::Client>,
    /// The one entry point for notifications: journal, then push.
    pub notifier: Notifier,
    /// Finds or starts the actor of a live tournament.
    pub live: LiveRegistry,
    /// The Socket.IO side of the live engine, for closing a banned account's connections.
    pub live_sockets: Arc<SocketBroadcaster>,
    /// The LiveState's JSON for HTTP reads, serialised once per published state.
    pub live_json: LiveJson,
    /// Where uploaded files are kept (`STORAGE_URL`).
    pub storage: Storage,
}

/// The handle handlers receive; cheap to clone.
#[derive(Clone)]
pub struct AppState(pub Arc<App>);

impl Deref for AppState {
    type Target = App;
    fn deref(&self) -> &App {
        &self.0
    }
}
