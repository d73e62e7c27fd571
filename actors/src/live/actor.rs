//! `TournamentActor`: the one owner of a live tournament. It takes the tournament's
//! commands one at a time, checks each against the game, has the store persist the change,
//! applies it, publishes the new LiveState and broadcasts it, then answers. Its own timer
//! moves the clock on when a segment runs out.

use std::sync::Arc;

use chrono::{DateTime, DurationRound, TimeDelta, Utc};
use ractor::{Actor, ActorProcessingErr, ActorRef, RpcReplyPort};
use tokio::sync::watch;
use tokio::task::JoinHandle;
use tracing::field::Empty;
use tracing::{Instrument as _, Span};
use uuid::Uuid;

use crate::error::{LiveError, LiveResult};
use crate::live::game::{Change, Game, Seat};
use crate::live::state::{LiveState, Snapshot, began_segment};
use crate::live::store::{Broadcaster, LiveStore, Persisted};
use crate::rules::balance::BalanceHint;
use crate::rules::clock::Direction;

/// Where the actor reads the time; tests hand in tokio's paused clock.
pub type TimeSource = fn() -> DateTime<Utc>;

/// The live commands of the contract, sent by `owner` or `td` (and handed between nodes in
/// this JSON form).
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(tag = "kind", content = "args", rename_all = "camelCase")]
pub enum Command {
    Start,
    Pause,
    Resume,
    Level(Direction),
    Eliminate(Uuid),
    Undo,
    Reorder(Vec<Uuid>),
    Reseat(Uuid, Seat),
    /// Several moves at once, all or none (a table broken).
    ReseatBatch(Vec<(Uuid, Seat)>),
    ConfirmResults,
}

impl Command {
    /// The command's name, as metrics and logs call it.
    pub fn name(&self) -> &'static str {
        match self {
            Self::Start => "start",
            Self::Pause => "pause",
            Self::Resume => "resume",
            Self::Level(_) => "level",
            Self::Eliminate(_) => "eliminate",
            Self::Undo => "undo",
            Self::Reorder(_) => "reorder",
            Self::Reseat(..) => "reseat",
            Self::ReseatBatch(_) => "reseat_batch",
            Self::ConfirmResults => "confirm_results",
        }
    }
}

/// A recorded elimination, as the elimination response shows it.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Elimination {
    pub registration_id: Uuid,
    pub place: i32,
    pub eliminated_at: DateTime<Utc>,
}

/// What a command answers: the state after it, and for an elimination the elimination and
/// the balance hint.
#[derive(Clone, Debug)]
pub struct Outcome {
    pub state: Snapshot,
    pub elimination: Option<(Elimination, Option<BalanceHint<Uuid>>)>,
}

/// A command's place in its caller's trace: the span it was sent from, and the span of its
/// wait in the actor's mailbox, which ends when the actor takes it.
pub struct Traced {
    caller: Span,
    queued: Span,
}

impl Traced {
    /// A command of `tournament_id` about to be sent from the current span.
    pub fn waiting(tournament_id: Uuid, command: &Command) -> Self {
        let queued = tracing::info_span!("live.queue", %tournament_id, command = command.name());
        Self { caller: Span::current(), queued }
    }

    /// Ends the wait; the span the command is handled in, beside it under the caller's.
    fn taken(self, tournament_id: Uuid, command: &Command) -> Span {
        drop(self.queued);
        tracing::info_span!(
            parent: &self.caller,
            "live.command",
            %tournament_id,
            command = command.name(),
            version = Empty,
            otel.status_code = Empty,
        )
    }
}

pub enum TournamentMsg {
    /// A command of a member of the club (`by`), and where it stands in its caller's trace.
    Command { command: Command, by: Uuid, reply: RpcReplyPort<LiveResult<Outcome>>, traced: Traced },
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

/// Times are kept to the millisecond, as the database and JSON keep them, so a rebuilt
/// actor shows exactly what the old one did.
pub fn to_millis(time: DateTime<Utc>) -> DateTime<Utc> {
    time.duration_trunc(TimeDelta::milliseconds(1)).unwrap_or(time)
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
        command: Command,
        by: Uuid,
    ) -> LiveResult<Outcome> {
        let tournament_id = state.game.tournament_id;
        let mut elimination = None;
        match command {
            Command::Start | Command::ConfirmResults => {
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
            }
            command => {
                // A segment that ran out before this command is moved on first, so a press
                // acts on the segment that is really running.
                self.catch_up(myself, state).await?;
                // A stale game (changed outside the actor: a cancel, another node) is reloaded
                // and checked once more. A write finds out by its version guard; a refusal or a
                // no-change answer, which writes nothing, asks for the stored version first.
                let mut settled = false;
                for _ in 0..2 {
                    let change = match self.decide(&state.game, &command) {
                        Ok(Some(change)) => change,
                        Ok(None) | Err(LiveError::Refused { .. }) if self.is_stale(&state.game).await? => {
                            self.reload(myself, state, false).await?;
                            continue;
                        }
                        Ok(None) => {
                            settled = true;
                            break;
                        }
                        Err(err) => return Err(err),
                    };
                    match self.store.persist(&state.game, &change, Some(by)).await? {
                        Persisted::Written => {
                            state.game.apply(&change);
                            self.publish(myself, state).await;
                            if let Change::Eliminate { registration_id, eliminated_at, place } = change {
                                let hint = state.game.balance();
                                elimination = Some((Elimination { registration_id, place, eliminated_at }, hint));
                            }
                            settled = true;
                            break;
                        }
                        Persisted::Stale => self.reload(myself, state, false).await?,
                    }
                }
                if !settled {
                    return Err(LiveError::Internal(anyhow::anyhow!("the tournament kept changing under the command")));
                }
            }
        }
        Ok(Outcome { state: state.published.borrow().clone(), elimination })
    }

    /// Whether the stored tournament has moved on from `game`.
    async fn is_stale(&self, game: &Game) -> LiveResult<bool> {
        Ok(self.store.version(game.tournament_id).await? != Some(game.version))
    }

    /// The change a command makes, or `None` when it changes nothing (a pause while paused).
    fn decide(&self, game: &Game, command: &Command) -> LiveResult<Option<Change>> {
        let now = self.now();
        match command {
            Command::Pause => game.pause(now),
            Command::Resume => game.resume(now),
            Command::Level(direction) => game.step_level(*direction, now).map(Some),
            Command::Eliminate(registration_id) => game.eliminate(*registration_id, now).map(Some),
            Command::Undo => game.undo().map(Some),
            Command::Reorder(ids) => game.reorder(ids).map(Some),
            Command::Reseat(registration_id, seat) => game.reseat(*registration_id, *seat),
            Command::ReseatBatch(moves) => game.reseat_batch(moves),
            Command::Start | Command::ConfirmResults => Ok(None),
        }
    }

    /// Moves the clock past every segment that ran out, in one change.
    async fn catch_up(&self, myself: &ActorRef<TournamentMsg>, state: &mut TournamentState) -> LiveResult<()> {
        for _ in 0..2 {
            let Some(change) = state.game.elapsed_segments(self.now()) else { return Ok(()) };
            match self.store.persist(&state.game, &change, None).await? {
                Persisted::Written => {
                    state.game.apply(&change);
                    self.publish(myself, state).await;
                    return Ok(());
                }
                Persisted::Stale => self.reload(myself, state, false).await?,
            }
        }
        Ok(())
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
            TournamentMsg::Command { command, by, reply, traced } => {
                let tournament_id = state.game.tournament_id;
                let span = traced.taken(tournament_id, &command);
                // A caller that gave up waiting (its request timed out) has been told it
                // failed; doing the command now would surprise it when it presses again.
                if reply.is_closed() {
                    span.in_scope(
                        || tracing::warn!(%tournament_id, ?command, "a command whose caller gave up was dropped"),
                    );
                    return Ok(());
                }
                let name = command.name();
                // Boxed, here and below: the actor's message loop is one future kept for the
                // actor's life, as large as the largest future awaited in it. A command's
                // future (its transaction and the fan-out) lives on the heap while it runs
                // instead, and an idle tournament holds a small loop.
                let outcome = Box::pin(self.run(&myself, state, command, by)).instrument(span.clone()).await;
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
