//! One owner per tournament across the nodes: a node runs a tournament's actor only while it
//! holds the tournament's lease, a row of `tournament_leases` that lasts [`LEASE_FOR`] unless
//! its node renews it (every [`RENEW_EVERY`], by the keeper). A node takes a lease that nobody
//! holds or whose holder stopped renewing it; each change of hands grows its `epoch`, and every
//! write of the live game checks, under a row lock, that its node still holds the epoch it
//! took ([`Leases::fence`]): a node that lost its lease without noticing (a long pause, a
//! partition) cannot write. The `live_version` guard stays the last line behind it.
//!
//! Expiry is judged by the clock of the node that reads it: nodes keep their clocks in step
//! (NTP), and a skew shorter than the lease only delays a takeover.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use chrono::Utc;
use floor_actors::live::Owner;
use floor_entities::enums::TournamentStatus;
use floor_entities::{tournament_leases, tournaments};
use sea_orm::sea_query::{Expr, ExprTrait, OnConflict, Query};
use sea_orm::{ColumnTrait, ConnectionTrait, DatabaseConnection, EntityTrait, QueryFilter, QuerySelect, Set};
use uuid::Uuid;

use crate::infra::error::AppResult;
use crate::infra::metrics::Metrics;

/// How long a lease holds without renewal: how long a dead node's tournaments wait for
/// another node (plus up to one [`RENEW_EVERY`]).
pub const LEASE_FOR: Duration = Duration::from_secs(5);
/// How often a node renews its leases and looks for running tournaments nobody holds.
pub const RENEW_EVERY: Duration = Duration::from_secs(1);

/// This node's leases.
pub struct Leases {
    db: DatabaseConnection,
    node_id: Uuid,
    node_url: String,
    /// The epoch of each lease this node holds.
    held: Mutex<HashMap<Uuid, i64>>,
    /// Set at shutdown: no new lease is taken.
    leaving: AtomicBool,
    /// Counts the leases taken and lost (churn means nodes flap).
    metrics: Arc<Metrics>,
}

impl Leases {
    /// A new node (a fresh id: a restarted process never mistakes its old leases for its own)
    /// reached at `node_url`.
    pub fn new(db: DatabaseConnection, node_url: String, metrics: Arc<Metrics>) -> Self {
        Self { db, node_id: Uuid::new_v4(), node_url, held: Mutex::default(), leaving: AtomicBool::new(false), metrics }
    }

    pub fn node_url(&self) -> &str {
        &self.node_url
    }

    fn held(&self) -> std::sync::MutexGuard<'_, HashMap<Uuid, i64>> {
        self.held.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Takes the tournament's lease unless another node holds it, and says who runs it. A lease
    /// another node holds is only read, never written: the holder's writes lock its row (their
    /// fence) until they commit, and a node asking who runs the tournament for every command
    /// it hands over must not queue behind them.
    pub async fn claim(&self, tournament_id: Uuid) -> AppResult<Owner> {
        let holder = tournament_leases::Entity::find_by_id(tournament_id).one(&self.db).await?;
        if let Some(lease) = holder
            && lease.node_id != self.node_id
            && lease.expires_at > Utc::now()
        {
            return Ok(Owner::Node(lease.node_url));
        }
        let leaving = self.leaving.load(Ordering::SeqCst);
        if !leaving {
            let now = Utc::now();
            let until = now + LEASE_FOR;
            let lease = tournament_leases::ActiveModel {
                tournament_id: Set(tournament_id),
                node_id: Set(self.node_id),
                node_url: Set(self.node_url.clone()),
                epoch: Set(1),
                expires_at: Set(until),
            };
            let table = tournament_leases::Entity;
            let mut take_over = OnConflict::column(tournament_leases::Column::TournamentId);
            take_over
                .update_columns([
                    tournament_leases::Column::NodeId,
                    tournament_leases::Column::NodeUrl,
                    tournament_leases::Column::ExpiresAt,
                ])
                .value(tournament_leases::Column::Epoch, Expr::col((table, tournament_leases::Column::Epoch)).add(1))
                .action_and_where(
                    Expr::col((table, tournament_leases::Column::NodeId)).eq(self.node_id).or(Expr::col((
                        table,
                        tournament_leases::Column::ExpiresAt,
                    ))
                    .lt(now)),
                );
            tournament_leases::Entity::insert(lease).on_conflict(take_over).exec_without_returning(&self.db).await?;
        }
        let holder = tournament_leases::Entity::find_by_id(tournament_id).one(&self.db).await?;
        Ok(match holder {
            // Leaving, this node's own lease is about to go: it starts nothing on it.
            Some(lease) if lease.node_id == self.node_id && leaving => Owner::Nobody,
            Some(lease) if lease.node_id == self.node_id => {
                if self.held().insert(tournament_id, lease.epoch).is_none() {
                    self.metrics.lease_change("taken");
                }
                Owner::Here
            }
            Some(lease) if lease.expires_at > Utc::now() => Owner::Node(lease.node_url),
            _ => Owner::Nobody,
        })
    }

    /// Lets go of a tournament this node holds.
    pub async fn release(&self, tournament_id: Uuid) -> AppResult<()> {
        self.held().remove(&tournament_id);
        tournament_leases::Entity::delete_many()
            .filter(tournament_leases::Column::TournamentId.eq(tournament_id))
            .filter(tournament_leases::Column::NodeId.eq(self.node_id))
            .exec(&self.db)
            .await?;
        Ok(())
    }

    /// Takes no lease from now on (the node is shutting down).
    pub fn leave(&self) {
        self.leaving.store(true, Ordering::SeqCst);
    }

    /// Renews every lease this node holds; answers those it has lost (another node took them
    /// after they ran out), whose actors must stop.
    pub async fn renew(&self) -> AppResult<Vec<Uuid>> {
        let before: HashMap<Uuid, i64> = self.held().clone();
        if before.is_empty() {
            return Ok(Vec::new());
        }
        tournament_leases::Entity::update_many()
            .col_expr(tournament_leases::Column::ExpiresAt, Expr::value(Utc::now() + LEASE_FOR))
            .filter(tournament_leases::Column::NodeId.eq(self.node_id))
            .exec(&self.db)
            .await?;
        let still: HashMap<Uuid, i64> = tournament_leases::Entity::find()
            .select_only()
            .columns([tournament_leases::Column::TournamentId, tournament_leases::Column::Epoch])
            .filter(tournament_leases::Column::NodeId.eq(self.node_id))
            .into_tuple::<(Uuid, i64)>()
            .all(&self.db)
            .await?
            .into_iter()
            .collect();
        let lost: Vec<Uuid> = before.keys().filter(|id| !still.contains_key(id)).copied().collect();
        let mut held = self.held();
        for id in &lost {
            // Unless taken again meanwhile (a newer epoch).
            if held.get(id) == before.get(id) {
                held.remove(id);
                self.metrics.lease_change("lost");
            }
        }
        Ok(lost)
    }

    /// The running tournaments whose lease nobody holds (their node died or handed them
    /// over): the keeper takes them, so their clocks keep moving.
    pub async fn orphans(&self) -> AppResult<Vec<Uuid>> {
        let held = Query::select()
            .column(tournament_leases::Column::TournamentId)
            .from(tournament_leases::Entity)
            .and_where(Expr::col(tournament_leases::Column::ExpiresAt).gt(Utc::now()))
            .to_owned();
        let orphans = tournaments::Entity::find()
            .select_only()
            .column(tournaments::Column::Id)
            .filter(tournaments::Column::Status.eq(TournamentStatus::Running))
            .filter(tournaments::Column::Id.not_in_subquery(held))
            .into_tuple()
            .all(&self.db)
            .await?;
        Ok(orphans)
    }

    /// Whether this node still holds the tournament, checked inside a write: the lease row is
    /// locked until the write commits (on PostgreSQL; SQLite has one writer at a time), so no
    /// node takes the tournament over between the check and the commit.
    pub async fn fence(&self, tx: &impl ConnectionTrait, tournament_id: Uuid) -> AppResult<bool> {
        let Some(epoch) = self.held().get(&tournament_id).copied() else { return Ok(false) };
        let lease = tournament_leases::Entity::find_by_id(tournament_id)
            .filter(tournament_leases::Column::NodeId.eq(self.node_id))
            .filter(tournament_leases::Column::Epoch.eq(epoch))
            .lock_exclusive()
            .one(tx)
            .await?;
        Ok(lease.is_some())
    }

    /// Lets go of every lease of this node at once (after a hand-over, those whose actor did
    /// not stop in time).
    pub async fn release_all(&self) -> AppResult<()> {
        self.held().clear();
        tournament_leases::Entity::delete_many()
            .filter(tournament_leases::Column::NodeId.eq(self.node_id))
            .exec(&self.db)
            .await?;
        Ok(())
    }
}
