//! The fan-out, off the command's path. A tournament's actor answers a command once the
//! change is stored and published; sending the LiveState to every watcher (ten thousand
//! socket queues in a full venue, a Redis round trip with several nodes) is handed to a
//! worker of that tournament, which sends the states one after another in the order the
//! actor published them. So the club's press is answered without waiting for the room, and
//! every watcher still sees the versions in order.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use tokio::sync::mpsc;
use tracing::field::Empty;
use tracing::{Instrument as _, Span};
use uuid::Uuid;

use super::ports::Broadcaster;
use super::state::Snapshot;

/// States of one tournament waiting for its room. Beyond this the actor waits for the room
/// before it answers again: a room that cannot keep up slows its own tournament's commands
/// rather than piling states up in memory.
pub const WAITING_STATES: usize = 64;

/// A [`Broadcaster`] that hands each state to its tournament's worker and returns; the
/// worker passes it on to `B`, one state at a time.
pub struct Fanout<B> {
    room: Arc<B>,
    queues: Mutex<HashMap<Uuid, mpsc::Sender<Queued>>>,
}

/// A state waiting for its room, whether its change began a segment, and the span of its
/// fan-out (in the trace of the change), which ends when the room has it.
type Queued = (Snapshot, bool, Span);

impl<B: Broadcaster> Fanout<B> {
    pub fn new(room: Arc<B>) -> Self {
        Self { room, queues: Mutex::new(HashMap::new()) }
    }

    /// The tournament's queue, with its worker started on first use. A finished or cancelled
    /// tournament publishes nothing more: its queue is let go, and its worker ends once it has
    /// sent what is queued.
    fn queue(&self, state: &Snapshot) -> mpsc::Sender<Queued> {
        let mut queues = self.queues.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        let queue = queues.entry(state.tournament_id).or_insert_with(|| self.start_worker()).clone();
        if state.status.is_over() {
            queues.remove(&state.tournament_id);
        }
        queue
    }

    fn start_worker(&self) -> mpsc::Sender<Queued> {
        let (queue, mut states) = mpsc::channel::<Queued>(WAITING_STATES);
        let room = self.room.clone();
        tokio::spawn(async move {
            // Boxed: the worker waits for the tournament's life, and its future would hold
            // room for the largest send whether one runs or not.
            while let Some((state, began, span)) = states.recv().await {
                if began {
                    Box::pin(room.broadcast_began(state)).instrument(span).await;
                } else {
                    Box::pin(room.broadcast(state)).instrument(span).await;
                }
            }
        });
        queue
    }

    async fn enqueue(&self, state: Snapshot, began: bool) {
        let tournament_id = state.tournament_id;
        // Its sockets are counted by the room that sends it (`sockets`).
        let span = tracing::info_span!("live.fanout", %tournament_id, version = state.version, sockets = Empty);
        if self.queue(&state).send((state, began, span)).await.is_err() {
            // Only if the worker's task is gone (the runtime is shutting down).
            tracing::warn!(%tournament_id, "the fan-out worker has stopped; a LiveState was not sent");
        }
    }

    /// How many tournaments have a worker (for tests and metrics).
    pub fn workers(&self) -> usize {
        self.queues.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).len()
    }
}

impl<B: Broadcaster> Broadcaster for Fanout<B> {
    async fn broadcast(&self, state: Snapshot) {
        self.enqueue(state, false).await;
    }

    async fn broadcast_began(&self, state: Snapshot) {
        self.enqueue(state, true).await;
    }

    fn adopted(&self, state: &Snapshot) {
        self.room.adopted(state);
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use floor_entities::enums::TournamentStatus;
    use tokio::sync::Semaphore;

    use super::*;
    use crate::live::state::{ClockView, LiveState};

    /// A room that records what it sends, each send waiting for a permit.
    struct GatedRoom {
        gate: Semaphore,
        sent: Mutex<Vec<(Uuid, i64)>>,
    }

    impl GatedRoom {
        fn new(open: bool) -> Arc<Self> {
            let permits = if open { Semaphore::MAX_PERMITS } else { 0 };
            Arc::new(Self { gate: Semaphore::new(permits), sent: Mutex::new(Vec::new()) })
        }

        fn sent(&self) -> Vec<(Uuid, i64)> {
            self.sent.lock().map(|sent| sent.clone()).unwrap_or_default()
        }

        async fn sent_eventually(&self, count: usize) -> Vec<(Uuid, i64)> {
            for _ in 0..500 {
                if self.sent().len() >= count {
                    break;
                }
                tokio::time::sleep(Duration::from_millis(2)).await;
            }
            self.sent()
        }
    }

    impl Broadcaster for GatedRoom {
        async fn broadcast(&self, state: Snapshot) {
            if let Ok(permit) = self.gate.acquire().await {
                permit.forget();
            }
            if let Ok(mut sent) = self.sent.lock() {
                sent.push((state.tournament_id, state.version));
            }
        }
    }

    fn state(tournament_id: Uuid, version: i64, status: TournamentStatus) -> Snapshot {
        Arc::new(LiveState {
            tournament_id,
            version,
            status,
            server_time: chrono::Utc::now(),
            clock: ClockView { current_level_idx: 0, level_started_at: None, paused_at: None, levels: Vec::new() },
            remaining: 0,
            entrants: 0,
            chips_in_play: 0,
            avg_stack: 0,
            tables: Vec::new(),
            eliminations: Vec::new(),
        })
    }

    #[tokio::test]
    async fn a_broadcast_returns_while_the_room_is_still_sending() {
        let room = GatedRoom::new(false);
        let fanout = Fanout::new(room.clone());
        let tournament = Uuid::new_v4();
        let handed_over = tokio::time::timeout(
            Duration::from_secs(5),
            fanout.broadcast(state(tournament, 1, TournamentStatus::Running)),
        )
        .await;
        assert!(handed_over.is_ok(), "the actor waited for the room");
        assert!(room.sent().is_empty(), "the room has not sent yet");
        room.gate.add_permits(1);
        assert_eq!(room.sent_eventually(1).await, vec![(tournament, 1)]);
    }

    #[tokio::test]
    async fn each_tournament_sends_its_states_in_the_order_they_came() {
        let room = GatedRoom::new(true);
        let fanout = Fanout::new(room.clone());
        let (first, second) = (Uuid::new_v4(), Uuid::new_v4());
        for version in 1..=40 {
            fanout.broadcast(state(first, version, TournamentStatus::Running)).await;
            fanout.broadcast(state(second, 100 + version, TournamentStatus::Running)).await;
        }
        let sent = room.sent_eventually(80).await;
        let versions_of =
            |tournament| -> Vec<i64> { sent.iter().filter(|(id, _)| *id == tournament).map(|(_, v)| *v).collect() };
        assert_eq!(versions_of(first), (1..=40).collect::<Vec<i64>>());
        assert_eq!(versions_of(second), (101..=140).collect::<Vec<i64>>());
    }

    #[tokio::test]
    async fn a_room_that_cannot_keep_up_holds_its_own_tournament_back_only() {
        let room = GatedRoom::new(false);
        let fanout = Arc::new(Fanout::new(room.clone()));
        let stuck = Uuid::new_v4();
        // The worker takes one state and waits in the room; WAITING_STATES more fit the queue.
        for version in 0..=WAITING_STATES as i64 {
            fanout.broadcast(state(stuck, version, TournamentStatus::Running)).await;
        }
        let one_more = {
            let fanout = fanout.clone();
            tokio::spawn(async move { fanout.broadcast(state(stuck, 1000, TournamentStatus::Running)).await })
        };
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert!(!one_more.is_finished(), "a full queue makes the actor wait");

        // Another tournament is not behind it: its worker is its own (its send waits for a
        // permit of the shared gate only because this test room has one gate).
        let other = Uuid::new_v4();
        let handed_over =
            tokio::time::timeout(Duration::from_secs(5), fanout.broadcast(state(other, 1, TournamentStatus::Running)))
                .await;
        assert!(handed_over.is_ok(), "another tournament waited for a stuck room");

        room.gate.add_permits(Semaphore::MAX_PERMITS / 2);
        assert!(tokio::time::timeout(Duration::from_secs(5), one_more).await.is_ok());
        assert_eq!(room.sent_eventually(WAITING_STATES + 3).await.len(), WAITING_STATES + 3);
    }

    #[tokio::test]
    async fn a_finished_tournament_lets_its_worker_go_after_its_last_state() {
        let room = GatedRoom::new(true);
        let fanout = Fanout::new(room.clone());
        let tournament = Uuid::new_v4();
        fanout.broadcast(state(tournament, 1, TournamentStatus::Running)).await;
        assert_eq!(fanout.workers(), 1);
        fanout.broadcast(state(tournament, 2, TournamentStatus::Finished)).await;
        assert_eq!(fanout.workers(), 0);
        assert_eq!(room.sent_eventually(2).await, vec![(tournament, 1), (tournament, 2)]);
    }
}
