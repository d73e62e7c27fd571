//! Which tournament ids exist, asked before a `join` or a live read may start a tournament's
//! actor, and before a registration or a club's change may start a tournament's registration
//! desk: opening an actor takes one of the node's few cold-start places, a desk lives its idle
//! time, and a client sending random ids must not take them from the real tournaments. An id is looked
//! up once (a primary-key read on the readers) and remembered: a known one for an hour (a
//! tournament is never deleted), an unknown one for half a minute.

use std::time::Duration;

use floor_entities::tournaments;
use moka::future::Cache;
use sea_orm::{DatabaseConnection, DbErr, EntityTrait, QuerySelect};
use uuid::Uuid;

const REMEMBERED: u64 = 100_000;
const KNOWN_FOR: Duration = Duration::from_secs(60 * 60);
const UNKNOWN_FOR: Duration = Duration::from_secs(30);

pub struct KnownTournaments {
    reads: DatabaseConnection,
    known: Cache<Uuid, ()>,
    unknown: Cache<Uuid, ()>,
}

impl KnownTournaments {
    pub fn new(reads: DatabaseConnection) -> Self {
        Self {
            reads,
            known: Cache::builder().max_capacity(REMEMBERED).time_to_live(KNOWN_FOR).build(),
            unknown: Cache::builder().max_capacity(REMEMBERED).time_to_live(UNKNOWN_FOR).build(),
        }
    }

    /// Whether a tournament of this id exists.
    pub async fn exists(&self, tournament_id: Uuid) -> Result<bool, DbErr> {
        if self.known.contains_key(&tournament_id) {
            return Ok(true);
        }
        if self.unknown.contains_key(&tournament_id) {
            return Ok(false);
        }
        let found = tournaments::Entity::find_by_id(tournament_id)
            .select_only()
            .column(tournaments::Column::Id)
            .into_tuple::<Uuid>()
            .one(&self.reads)
            .await?
            .is_some();
        let remembered = if found { &self.known } else { &self.unknown };
        remembered.insert(tournament_id, ()).await;
        Ok(found)
    }
}
