//! The registry of tournament actors as the server runs it. Its type names the broadcaster the
//! actors' states go through, and the sockets read states from it (a join's ack, a catch-up
//! after Redis was lost): so it is named here, and the broadcaster reaches it only through
//! [`StoredStates`].

use floor_actors::error::LiveResult;
use floor_actors::live::{Fanout, Registry, Snapshot};
use uuid::Uuid;

use super::broadcaster::SocketBroadcaster;
use super::recovery::StoredStates;
use crate::domain::live::store::SeaOrmStore;

/// The registry of tournament actors as the server runs it: each actor hands its states to
/// the fan-out and answers; the fan-out sends them to the Socket.IO rooms in order.
pub type LiveRegistry = Registry<SeaOrmStore, Fanout<SocketBroadcaster>>;

impl StoredStates for LiveRegistry {
    async fn read_again(&self, tournament_id: Uuid) -> LiveResult<Option<Snapshot>> {
        Registry::read_again(self, tournament_id).await
    }
}
