//! `TournamentActor`: the one owner of a live tournament. It takes the tournament's
//! commands one at a time, checks each against the game, has the store persist the change,
//! applies it, publishes the new LiveState and broadcasts it, then answers. Its own timer
//! moves the clock on when a segment runs out.

use std::sync::Arc;

use chrono::{DateTime, Utc};
use ractor::{Actor, ActorProcessingErr, ActorRef, RpcReplyPort};
use tokio::sync::watch;
use tokio::task::JoinHandle;
use tracing::field::Empty;
use tracing::{Instrument as _, Span};
use uuid::Uuid;

use crate::error::{LiveError, LiveResult};
use crate::live::command::{self, Command, Order, Timed};
use crate::live::game::{Change, Game, Made};
use crate::live::state::{LiveState, Snapshot, began_segment};
use crate::live::store::{Broadcaster, LiveStore, Persisted};
use crate::rules::balance::BalanceHint;
pub use crate::rules::clock::to_millis;

/// Where the actor reads the time; tests hand in tokio's paused clock.
pub type TimeSource = fn() -> DateTime<Utc>;

/// A recorded elimination, as the elimination response shows it.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Elimination {
    pub registration_id: Uuid,
    pub place: i32,
    pub eliminated_at: DateTime<Utc>,
}

/// What a command answers: the state after it, and for an elimination the elimination and
/// the balance hint; for a replayed queue, what each of its commands came to, in order.
#[derive(Debug)]
pub struct Outcome {
    pub state: Snapshot,
    pub elimination: Option<(Elimination, Option<BalanceHint<Uuid>>)>,
    pub queue: Vec<LiveResult<i64>>,
}

/// A command's place in its caller's trace: the span it was sent from, and the span of its
/// wait in the actor's mailbox, which ends when the actor takes it.
pub struct Traced {
    caller: Span,
    queued: Span,
}

impl Traced {
    /// An order for `tournament_id` about to be sent from the current span.
    pub fn waiting(tournament_id: Uuid, order: &Order) -> Self {
        let queued = tracing::info_span!("live.queue", %tournament_id, command = order.name());
        Self { caller: Span::current(), queued }
    }

    /// Ends the wait; the span the order is handled in, beside it under the caller's.
    fn taken(self, tournament_id: Uuid, order: &Order) -> Span {
        drop(self.queued);
        tracing::info_span!(
            parent: &self.caller,
            "live.command",
            %tournament_id,
            command = order.name(),
            version = Empty,
            otel.status_code = Empty,
        )
    }
}

pub enum TournamentMsg {
    /// A command, or a queue of them made offline, of a member of the club (`by`), and where
    /// it stands in its caller's trace.
    Command { order: Order, by: Uuid, reply: RpcReplyPort<LiveResult<Outcome>>, traced: Traced },
    /// The tournament changed outside the actor, on another node: read it again.
    CatchUp,
    /// This node changed the tournament outside the actor (a cancel, an edit): read it
    /// again, broadcast it, and answer once the new state is published.
    Announce { reply: Option<RpcReplyPort<()>> },
    /// The current segment may have run out.
    SegmentTimer,
}

/// The actor of one tournament; its ports are shared by every tournament actor.
pub struct TournamentActor<S, B> {
    pub store: Arc<S>,
    pub broadcaster: Arc<B>,
    pub now: TimeSource,
}

/// What the actor owns while it lives.
pub struct TournamentState {
    /// The game as last persisted: the source of every rule check.
    game: Game,
    /// The latest LiveState, read by the registry without asking the actor.
    published: watch::Sender<Snapshot>,
    /// The pending end-of-segment wake-up, replaced at every change.
    timer: Option<JoinHandle<()>>,
    /// Set when a committed change could not be read back: the actor then fails, and its
    /// supervisor rebuilds it from the database.
    out_of_step: bool,
}

/// How long the actor waits before trying a clock write again after a failure.
const RETRY_AFTER: std::time::Duration = std::time::Duration::from_secs(5);

impl<S: LiveStore, B: Broadcaster> TournamentActor<S, B> {
    fn now(&self) -> DateTime<Utc> {
        to_millis((self.now)())
    }

    async fn run(
        &self,
        myself: &ActorRef<TournamentMsg>,
        state: &mut TournamentState,
        order: Order,
        by: Uuid,
    ) -> LiveResult<Outcome> {
        match order {
            Order::One(Timed { command: command @ (Command::Start | Command::ConfirmResults), .. }) => {
                let tournament_id = state.game.tournament_id;
                if command == Command::Start {
                    self.store.start(tournament_id, by, self.now()).await?;
                } else {
                    self.store.confirm(tournament_id, by, self.now()).await?;
                }
                // Committed: an actor that cannot read it back is out of step and is rebuilt.
                // The command was done, so its caller is not told it was refused (a database
                // out of reach just then would otherwise say "nothing done, try again").
                if let Err(err) = self.reload(myself, state, true).await {
                    state.out_of_step = true;
                    return Err(LiveError::Internal(anyhow::anyhow!(
                        "the command was applied but the tournament could not be read back ({err}); read the live state"
                    )));
                }
                Ok(self.outcome(state, None, Vec::new()))
            }
            Order::One(timed) => {
                let mut answers = self.apply_in_turn(myself, state, std::slice::from_ref(&timed), by).await?;
                let answer = answers.pop().unwrap_or_else(|| Err(LiveError::Internal(anyhow::anyhow!("no answer"))));
                let elimination = match answer?.0 {
                    Some(Change::Eliminate { registration_id, eliminated_at, place }) => {
                        Some((Elimination { registration_id, place, eliminated_at }, state.game.balance()))
                    }
                    _ => None,
                };
                Ok(self.outcome(state, elimination, Vec::new()))
            }
            Order::Queue(queue) => {
                let answers = self.apply_in_turn(myself, state, &queue, by).await?;
                let queue = answers.into_iter().map(|answer| answer.map(|(_, version)| version)).collect();
                Ok(self.outcome(state, None, queue))
            }
        }
    }

    /// Decides `timed` in order on the game, each on its own (a refused one is left out),
    /// writes every change in one transaction and publishes the result once. A stale game
    /// (changed outside the actor: a cancel, another node) is read again and the whole turn
    /// decided once more: a write finds out by its version guard, and a refusal, which writes
    /// nothing, asks for the stored version first. Each answer is the change its command
    /// made (`None` when it changed nothing) with the version after it, or why it was refused.
    async fn apply_in_turn(
        &self,
        myself: &ActorRef<TournamentMsg>,
        state: &mut TournamentState,
        queue: &[Timed],
        by: Uuid,
    ) -> LiveResult<Vec<LiveResult<(Option<Change>, i64)>>> {
        for _ in 0..2 {
            let now = self.now();
            let mut game = state.game.clone();
            let mut writes: Vec<(Change, Option<Made>)> = Vec::new();
            // A segment that ran out before the commands is moved on first, in the same write
            // (one broadcast), so a press acts on the segment that is really running.
            if let Some(moved) = game.elapsed_segments(now) {
                game.apply(&moved);
                writes.push((moved, None));
            }
            let mut answers = Vec::with_capacity(queue.len());
            for timed in queue {
                match command::decide(&game, timed, by, now) {
                    Ok((Some(change), made)) => {
                        game.apply(&change);
                        game.record(made);
                        writes.push((change.clone(), Some(made)));
                        answers.push(Ok((Some(change), game.version)));
                    }
                    Ok((None, _)) => answers.push(Ok((None, game.version))),
                    Err(err) => answers.push(Err(err)),
                }
            }
            let refused = answers.iter().any(|answer| matches!(answer, Err(LiveError::Refused { .. })));
            if writes.is_empty() {
                if (refused || answers.iter().any(|answer| matches!(answer, Ok((None, _)))))
                    && self.is_stale(&state.game).await?
                {
                    self.reload(myself, state, false).await?;
                    continue;
                }
                return Ok(answers);
            }
            match self.store.persist(&state.game, &writes).await? {
                Persisted::Written => {
                    state.game = game;
                    self.publish(myself, state).await;
                    return Ok(answers);
                }
                Persisted::Stale => self.reload(myself, state, false).await?,
            }
        }
        Err(LiveError::Internal(anyhow::anyhow!("the tournament kept changing under the command")))
    }

    /// The answer of an order: the state published now.
    fn outcome(
        &self,
        state: &TournamentState,
        elimination: Option<(Elimination, Option<BalanceHint<Uuid>>)>,
        queue: Vec<LiveResult<i64>>,
    ) -> Outcome {
        Outcome { state: state.published.borrow().clone(), elimination, queue }
    }

    /// Whether the stored tournament has moved on from `game`.
    async fn is_stale(&self, game: &Game) -> LiveResult<bool> {
        Ok(self.store.version(game.tournament_id).await? != Some(game.version))
    }

    /// Moves the clock past every segment that ran out, in one change.
    async fn catch_up(&self, myself: &ActorRef<TournamentMsg>, state: &mut TournamentState) -> LiveResult<()> {
        self.apply_in_turn(myself, state, &[], Uuid::nil()).await.map(drop)
    }

    /// The timer's turn: catch up and wait for the next segment end. A failed write is not
    /// the end of the tournament: the actor tries again shortly instead of failing (which
    /// would only rebuild it to fail the same way).
    async fn on_segment_timer(&self, myself: &ActorRef<TournamentMsg>, state: &mut TournamentState) {
        match self.catch_up(myself, state).await {
            Ok(()) => self.schedule(myself, state),
            Err(err) => {
                tracing::warn!(tournament_id = %state.game.tournament_id, error = %err, "could not move the clock on; trying again");
                self.wake_after(myself, state, RETRY_AFTER);
            }
        }
    }

    /// Reads the game again. `announce`: this node made the change and tells the watchers,
    /// even when the actor had already caught up with it. Otherwise (catching up with a change
    /// whose maker told them) only the published state is refreshed.
    async fn reload(
        &self,
        myself: &ActorRef<TournamentMsg>,
        state: &mut TournamentState,
        announce: bool,
    ) -> LiveResult<()> {
        let tournament_id = state.game.tournament_id;
        let game = self.store.load(tournament_id).await?.ok_or_else(|| LiveError::not_found("tournament"))?;
        let changed = game != state.game;
        state.game = game;
        if announce {
            self.publish(myself, state).await;
        } else if changed {
            self.refresh(myself, state);
        }
        Ok(())
    }

    /// Publishes the current game and broadcasts it, saying so when it began a segment.
    async fn publish(&self, myself: &ActorRef<TournamentMsg>, state: &mut TournamentState) {
        let before = state.published.borrow().clone();
        let snapshot = self.refresh(myself, state);
        let span =
            tracing::info_span!("live.publish", tournament_id = %snapshot.tournament_id, version = snapshot.version);
        if began_segment(&before, &snapshot) {
            self.broadcaster.broadcast_began(snapshot).instrument(span).await;
        } else {
            self.broadcaster.broadcast(snapshot).instrument(span).await;
        }
    }

    /// Publishes the current game for reads (no broadcast) and sets the timer by it.
    fn refresh(&self, myself: &ActorRef<TournamentMsg>, state: &mut TournamentState) -> Snapshot {
        let snapshot = Arc::new(LiveState::of(&state.game, self.now()));
        state.published.send_replace(snapshot.clone());
        self.schedule(myself, state);
        snapshot
    }

    /// Sets the wake-up for the end of the running segment (none while paused or on the
    /// last segment).
    fn schedule(&self, myself: &ActorRef<TournamentMsg>, state: &mut TournamentState) {
        match state.game.next_segment_end() {
            Some(ends_at) => {
                let delay = (ends_at - self.now()).to_std().unwrap_or_default();
                self.wake_after(myself, state, delay);
            }
            None => {
                if let Some(timer) = state.timer.take() {
                    timer.abort();
                }
            }
        }
    }

    fn wake_after(&self, myself: &ActorRef<TournamentMsg>, state: &mut TournamentState, delay: std::time::Duration) {
        if let Some(timer) = state.timer.take() {
            timer.abort();
        }
        let myself = myself.clone();
        state.timer = Some(tokio::spawn(async move {
            tokio::time::sleep(delay).await;
            let _ = myself.cast(TournamentMsg::SegmentTimer);
        }));
    }
}

impl<S: LiveStore, B: Broadcaster> Actor for TournamentActor<S, B> {
    type Msg = TournamentMsg;
    type State = TournamentState;
    /// The game as loaded, and the channel the registry reads the LiveState from.
    type Arguments = (Game, watch::Sender<Snapshot>);

    async fn pre_start(
        &self,
        _myself: ActorRef<Self::Msg>,
        (game, published): Self::Arguments,
    ) -> Result<Self::State, ActorProcessingErr> {
        Ok(TournamentState { game, published, timer: None, out_of_step: false })
    }

    /// A rebuilt actor first catches the clock up with the segments that ran out while it
    /// was gone.
    async fn post_start(&self, myself: ActorRef<Self::Msg>, state: &mut Self::State) -> Result<(), ActorProcessingErr> {
        self.on_segment_timer(&myself, state).await;
        Ok(())
    }

    async fn post_stop(&self, _myself: ActorRef<Self::Msg>, state: &mut Self::State) -> Result<(), ActorProcessingErr> {
        if let Some(timer) = state.timer.take() {
            timer.abort();
        }
        Ok(())
    }

    async fn handle(
        &self,
        myself: ActorRef<Self::Msg>,
        message: Self::Msg,
        state: &mut Self::State,
    ) -> Result<(), ActorProcessingErr> {
        match message {
            TournamentMsg::Command { order, by, reply, traced } => {
                let tournament_id = state.game.tournament_id;
                let span = traced.taken(tournament_id, &order);
                // A caller that gave up waiting (its request timed out) has been told it
                // failed; doing the command now would surprise it when it presses again.
                if reply.is_closed() {
                    span.in_scope(
                        || tracing::warn!(%tournament_id, ?order, "a command whose caller gave up was dropped"),
                    );
                    return Ok(());
                }
                let name = order.name();
                // Boxed, here and below: the actor's message loop is one future kept for the
                // actor's life, as large as the largest future awaited in it. A command's
                // future (its transaction and the fan-out) lives on the heap while it runs
                // instead, and an idle tournament holds a small loop.
                let outcome = Box::pin(self.run(&myself, state, order, by)).instrument(span.clone()).await;
                match &outcome {
                    Ok(done) => {
                        let version = done.state.version;
                        span.record("version", version);
                        span.in_scope(
                            || tracing::info!(%tournament_id, command = name, version, "a live command was applied"),
                        );
                    }
                    Err(LiveError::Internal(cause)) => {
                        span.record("otel.status_code", "ERROR");
                        span.in_scope(|| tracing::error!(%tournament_id, error = ?cause, "a live command failed"));
                    }
                    Err(_) => {}
                }
                // The caller may have gone away; the change stands either way.
                let _ = reply.send(outcome);
                if state.out_of_step {
                    return Err(anyhow::anyhow!("the actor lost step with the database").into());
                }
            }
            // A catch-up that fails leaves a state that is merely behind; one that was to
            // announce a change fails the actor, whose rebuild announces it.
            TournamentMsg::CatchUp => {
                if let Err(err) = Box::pin(self.reload(&myself, state, false)).await {
                    tracing::warn!(tournament_id = %state.game.tournament_id, error = %err, "could not catch up with a change");
                }
            }
            TournamentMsg::Announce { reply } => {
                Box::pin(self.reload(&myself, state, true)).await?;
                if let Some(reply) = reply {
                    let _ = reply.send(());
                }
            }
            TournamentMsg::SegmentTimer => Box::pin(self.on_segment_timer(&myself, state)).await,
        }
        Ok(())
    }
}
