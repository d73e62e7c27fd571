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

use crate::error::{LiveError, LiveResult, Refusal};
use crate::live::command::{self, Command, Order, Timed};
use crate::live::game::{Change, Game, Made};
use crate::live::keys::{Answer, Elimination, First, KeyRecord, Recorded, key_reused};
use crate::live::ports::{Broadcaster, Keys, LiveStore, Persisted, Settled};
use crate::live::state::{LiveState, Snapshot, began_segment};
use crate::rules::balance::BalanceHint;
pub use crate::rules::clock::to_millis;

/// Where the actor reads the time; tests hand in tokio's paused clock.
pub type TimeSource = fn() -> DateTime<Utc>;

/// What a command answers: the state after it, for an elimination the elimination and the
/// balance hint, and what each command of the order came to, in order (one for a single
/// command; a replayed queue's each).
#[derive(Debug)]
pub struct Outcome {
    pub state: Snapshot,
    pub elimination: Option<(Elimination, Option<BalanceHint<Uuid>>)>,
    pub answers: Vec<Answer>,
}

impl Outcome {
    /// Whether the single command's answer is the record of an earlier sending of it.
    pub fn replayed(&self) -> bool {
        self.answers.first().is_some_and(|answer| answer.replayed)
    }
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
    /// A read found the tournament stored at version `stored`, past the state published. The
    /// actor publishes its own changes as it commits them, so if its game is older, the
    /// tournament changed beside it (a deleted player's name) and nobody may have told its
    /// watchers (the note was lost with Redis): it reads the game again and tells them. Answered
    /// once the state published is as new as the game.
    Freshen { stored: i64, reply: RpcReplyPort<()> },
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
            Order::One(timed @ Timed { command: Command::Start | Command::ConfirmResults, .. }) => {
                self.pass_gate(myself, state, timed, by).await
            }
            Order::One(timed) => {
                let mut answers = self.apply_in_turn(myself, state, std::slice::from_ref(&timed), by).await?;
                let answer = answers.pop().ok_or_else(|| LiveError::Internal(anyhow::anyhow!("no answer")))?;
                // A refusal of this sending is the command's error; one kept from an earlier
                // sending is answered as a replay, which the caller tells apart.
                if !answer.replayed
                    && let Some(err) = answer.recorded.error()
                {
                    return Err(err);
                }
                let elimination = match &answer.recorded {
                    Recorded::Applied { elimination: Some(elimination), .. } => {
                        Some((elimination.clone(), state.game.balance()))
                    }
                    _ => None,
                };
                Ok(self.outcome(state, elimination, vec![answer]))
            }
            Order::Queue(queue) => {
                let answers = self.apply_in_turn(myself, state, &queue, by).await?;
                Ok(self.outcome(state, None, answers))
            }
        }
    }

    /// A start or a confirmation: the store's own transaction, with the command's key kept in
    /// it. A key kept before answers as it was kept.
    async fn pass_gate(
        &self,
        myself: &ActorRef<TournamentMsg>,
        state: &mut TournamentState,
        timed: Timed,
        by: Uuid,
    ) -> LiveResult<Outcome> {
        let tournament_id = state.game.tournament_id;
        match self.firsts(tournament_id, by, std::slice::from_ref(&timed)).await?.pop().flatten() {
            Some(First::Same(recorded)) => {
                return Ok(self.outcome(state, None, vec![Answer { recorded, replayed: true }]));
            }
            Some(First::Other) => return Err(key_reused()),
            None => {}
        }
        let applied = Recorded::Applied { version: None, elimination: None };
        let record = timed.key.as_ref().map(|key| KeyRecord {
            key: key.clone(),
            command: timed.command.clone(),
            stated: false,
            recorded: applied,
        });
        let done = if timed.command == Command::Start {
            self.store.start(tournament_id, by, self.now(), record.as_ref()).await
        } else {
            self.store.confirm(tournament_id, by, self.now(), record.as_ref()).await
        };
        if let Err(err) = done {
            // A rule's refusal is what the command came to: kept with its key, so the same
            // key sent again is refused the same way, however the tournament moved meanwhile.
            if let (Some(record), Some(recorded)) = (record, Recorded::refusal(&err)) {
                let records = [KeyRecord { recorded, ..record }];
                if self.store.keep(tournament_id, Keys { by, records: &records }).await? == Persisted::KeyTaken {
                    return Err(key_reused());
                }
            }
            return Err(err);
        }
        // Committed: an actor that cannot read it back is out of step and is rebuilt. The
        // command was done, so its caller is not told it was refused (a database out of reach
        // just then would otherwise say "nothing done, try again").
        if let Err(err) = self.reload(myself, state, true).await {
            state.out_of_step = true;
            return Err(LiveError::Internal(anyhow::anyhow!(
                "the command was applied but the tournament could not be read back ({err}); read the live state"
            )));
        }
        let recorded = Recorded::Applied { version: Some(state.game.version), elimination: None };
        Ok(self.outcome(state, None, vec![Answer { recorded, replayed: false }]))
    }

    /// What was kept with the keys of `queue`, in order; nothing is read for a queue without keys.
    async fn firsts(&self, tournament_id: Uuid, by: Uuid, queue: &[Timed]) -> LiveResult<Vec<Option<First>>> {
        if queue.iter().all(|timed| timed.key.is_none()) {
            return Ok(vec![None; queue.len()]);
        }
        self.store.recorded(tournament_id, by, queue).await
    }

    /// Decides `queue` in order on the game, each on its own (a refused one is left out),
    /// writes every change in one transaction with the keys of the commands and what they came
    /// to, and publishes the result once. A command whose key was kept before is not decided
    /// again: its answer is what was kept. A stale game (changed outside the actor: a cancel,
    /// another node) is read again and the whole turn decided once more: a write finds out by
    /// its version guard, and a refusal, which writes nothing, asks for the stored version
    /// first. A commit that goes unanswered is looked at before the turn is answered.
    async fn apply_in_turn(
        &self,
        myself: &ActorRef<TournamentMsg>,
        state: &mut TournamentState,
        queue: &[Timed],
        by: Uuid,
    ) -> LiveResult<Vec<Answer>> {
        let tournament_id = state.game.tournament_id;
        for _ in 0..3 {
            let firsts = self.firsts(tournament_id, by, queue).await?;
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
            let mut records = Vec::new();
            // Whether a command of this sending changed nothing (refused, or a pause while
            // paused): decided on a game that may be stale.
            let mut unchanged = false;
            for (timed, first) in queue.iter().zip(firsts) {
                let recorded = match first {
                    Some(First::Same(recorded)) => {
                        answers.push(Answer { recorded, replayed: true });
                        continue;
                    }
                    Some(First::Other) => {
                        answers.push(Answer { recorded: Recorded::key_reused(), replayed: false });
                        continue;
                    }
                    None => match command::decide(&game, timed, by, now) {
                        Ok((Some(change), made)) => {
                            game.apply(&change);
                            game.record(made);
                            let elimination = match change {
                                Change::Eliminate { registration_id, eliminated_at, place } => {
                                    Some(Elimination { registration_id, place, eliminated_at })
                                }
                                _ => None,
                            };
                            writes.push((change, Some(made)));
                            Recorded::Applied { version: Some(game.version), elimination }
                        }
                        Ok((None, _)) => {
                            unchanged = true;
                            Recorded::Applied { version: Some(game.version), elimination: None }
                        }
                        Err(err) => {
                            unchanged = true;
                            Recorded::refusal(&err).ok_or(err)?
                        }
                    },
                };
                if let Some(key) = &timed.key {
                    records.push(KeyRecord {
                        key: key.clone(),
                        command: timed.command.clone(),
                        stated: timed.occurred_at.is_some(),
                        recorded: recorded.clone(),
                    });
                }
                answers.push(Answer { recorded, replayed: false });
            }
            let keys = Keys { by, records: &records };
            if writes.is_empty() {
                if unchanged && self.is_stale(&state.game).await? {
                    self.reload(myself, state, false).await?;
                    continue;
                }
                if !records.is_empty() && self.store.keep(tournament_id, keys).await? == Persisted::KeyTaken {
                    continue;
                }
                return Ok(answers);
            }
            match self.store.persist(&state.game, &writes, keys).await {
                Ok(Persisted::Written) => {}
                Ok(Persisted::Stale) => {
                    self.reload(myself, state, false).await?;
                    continue;
                }
                Ok(Persisted::KeyTaken) => continue,
                Err(LiveError::Internal(cause)) => {
                    self.settle(&state.game, writes.len(), cause).await?;
                }
                Err(err) => return Err(err),
            }
            state.game = game;
            self.publish(myself, state).await;
            return Ok(answers);
        }
        Err(LiveError::Internal(anyhow::anyhow!("the tournament kept changing under the command")))
    }

    /// Looks at a write of `changes` on `game` that failed with `cause`, perhaps at its commit:
    /// `Ok` when it committed (the turn stands), a `503` when it did not (nothing was done), and
    /// the failure itself, which says the outcome is unknown, when the store cannot tell.
    async fn settle(&self, game: &Game, changes: usize, cause: anyhow::Error) -> LiveResult<()> {
        let changes = i64::try_from(changes).unwrap_or(i64::MAX);
        match self.store.settle(game, changes).await {
            Ok(Settled::Committed) => Ok(()),
            Ok(Settled::RolledBack) => {
                tracing::warn!(tournament_id = %game.tournament_id, error = %cause, "a live change failed and was not written");
                Err(LiveError::refused(
                    Refusal::Unavailable,
                    "the change could not be written, and nothing of it was; try again",
                ))
            }
            Err(looked) => Err(LiveError::Internal(cause.context(format!(
                "the outcome of this change is unknown (looking at it failed: {looked}); read the live state"
            )))),
        }
    }

    /// The answer of an order: the state published now.
    fn outcome(
        &self,
        state: &TournamentState,
        elimination: Option<(Elimination, Option<BalanceHint<Uuid>>)>,
        answers: Vec<Answer>,
    ) -> Outcome {
        Outcome { state: state.published.borrow().clone(), elimination, answers }
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
            TournamentMsg::Freshen { stored, reply } => {
                if state.game.version < stored
                    && let Err(err) = Box::pin(self.reload(&myself, state, true)).await
                {
                    tracing::warn!(tournament_id = %state.game.tournament_id, error = %err, "could not read a changed tournament again");
                }
                let _ = reply.send(());
            }
            TournamentMsg::SegmentTimer => Box::pin(self.on_segment_timer(&myself, state)).await,
        }
        Ok(())
    }
}
