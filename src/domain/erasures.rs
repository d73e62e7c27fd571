//! Erasures: a deleted account's name leaves every read, on every node, before the deletion
//! is answered, Redis up or down. The deletion's transaction moves one stored count on (the
//! `erasures` row); a kept answer that names people (a leaderboard) is kept under the count
//! read after its reader asked (`http::cached::answer_naming_people`), so a reader after a
//! deletion never gets an answer built before it, nor `304` to its tag. The bus's note that
//! the reads changed only frees the memory sooner.
//!
//! The readers of a node share the reads of the count ([`Rounds`]): one indexed row per round
//! trip to the database while readers keep asking, none while nobody does.

use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};

use floor_actors::live::CHECK_WITHIN;
use floor_actors::rounds::Rounds;
use floor_entities::erasures::{self, ROW};
use sea_orm::sea_query::{Expr, ExprTrait, OnConflict};
use sea_orm::{ConnectionTrait, DatabaseConnection, EntityTrait, QuerySelect, Set};

use crate::infra::error::AppResult;

/// This node's reads of the count of erasures.
pub struct Erasures {
    /// The reads of the stored count; `None` on a node alone, which makes every deletion itself
    /// and counts it here ([`Erasures::erased_here`]).
    rounds: Option<Arc<Rounds<Option<i64>>>>,
    /// The latest count read, for a read while the database cannot be asked.
    last: Arc<AtomicI64>,
}

impl Erasures {
    /// Reads of the count on `db`, when other nodes erase too (`shared`).
    pub fn new(db: DatabaseConnection, shared: bool) -> Self {
        let last = Arc::new(AtomicI64::new(0));
        let rounds = shared.then(|| {
            Rounds::new(CHECK_WITHIN, {
                let last = last.clone();
                move || {
                    let (db, last) = (db.clone(), last.clone());
                    async move {
                        let read = count(&db).await;
                        if let Ok(count) = &read {
                            last.fetch_max(*count, Ordering::AcqRel);
                        }
                        read.ok()
                    }
                }
            })
        });
        Self { rounds, last }
    }

    /// A deletion on this node has ended, committed or not (a commit whose answer was lost may
    /// have been made): on a node alone the count moves on here, so no answer built before it
    /// is served after it. With other nodes the stored count tells.
    pub fn erased_here(&self) {
        if self.rounds.is_none() {
            self.last.fetch_add(1, Ordering::AcqRel);
        }
    }

    /// The count as stored after this call began. While the database cannot be asked (or does
    /// not answer within [`CHECK_WITHIN`]), the latest count read: nothing can be erased
    /// meanwhile, and the kept answers are what still answers (`docs/operations.md`, "When
    /// PostgreSQL blinks").
    pub async fn count(&self) -> i64 {
        let Some(rounds) = &self.rounds else { return self.last.load(Ordering::Acquire) };
        match rounds.read().await.flatten() {
            Some(count) => count,
            None => self.last.load(Ordering::Acquire),
        }
    }
}

/// Counts one more erasure, in the transaction of the deletion that makes it.
pub async fn record(tx: &impl ConnectionTrait) -> AppResult<()> {
    let generation = (erasures::Entity, erasures::Column::Generation);
    erasures::Entity::insert(erasures::ActiveModel { id: Set(ROW), generation: Set(1) })
        .on_conflict(
            OnConflict::column(erasures::Column::Id)
                .value(erasures::Column::Generation, Expr::col(generation).add(1))
                .to_owned(),
        )
        .exec_without_returning(tx)
        .await?;
    Ok(())
}

/// The count as stored: 0 before the first deletion.
async fn count(db: &impl ConnectionTrait) -> AppResult<i64> {
    let stored: Option<i64> = erasures::Entity::find_by_id(ROW)
        .select_only()
        .column(erasures::Column::Generation)
        .into_tuple()
        .one(db)
        .await?;
    Ok(stored.unwrap_or(0))
}
