//! The registration desk: one queue per tournament for every change of who takes part while
//! registration is open (a player registers or cancels, the club checks a player in or
//! cancels a check-in). The desk decides them in the order they arrived, many to a
//! transaction: whatever arrived while a group was being written is the next group. A rush
//! of thousands of registrations is tens of transactions, each taking the tournament's lock
//! once, instead of thousands queueing for it one by one.
//!
//! A group is decided in one write transaction holding the tournament's lock, as a single
//! change always was, so another node's desk (or a walk-in) waits for it and then sees it:
//! the lock, not the node, keeps capacity and one place per person, whichever node took the
//! request. A change that is refused (banned, already registered, a wrong status) is
//! answered with its error and writes nothing; a club change that fails is rolled back to
//! its savepoint and the group goes on. An answer is sent only once its group has
//! committed, and a group that cannot commit is refused as a whole: nothing of it was
//! written, so nothing acknowledged is lost. A `COMMIT` whose answer never came (the
//! connection lost on the way) may have committed or not: the desk looks (the group writes
//! a row of its own, [`registration_groups`]), and answers what it finds, or that the
//! outcome is unknown when it cannot look. The public reads that show the registrations are
//! built again before the group is answered (dropped, when the database cannot say what they
//! should show), the other nodes told, and the notices pushed, once per group.
//!
//! A new registration's `createdAt` (its place in the queue) is after every registration the
//! tournament holds, read under its lock ([`Stamps`]), so a node whose clock runs behind
//! another's never queues a later decision before an earlier one.
//!
//! A desk lives while changes come: it is started by the first and ends after [`IDLE_AFTER`]
//! without one, holding nothing but its queue meanwhile.

use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use chrono::{DateTime, Utc};
use floor_actors::rules::strikes::is_banned;
use floor_entities::enums::{RegistrationSource, RegistrationStatus, TournamentStatus, UserStatus};
use floor_entities::{player_profiles, registration_groups, registrations, tournaments, users};
use futures_util::future::BoxFuture;
use sea_orm::sea_query::{Expr, Func};
use sea_orm::{
    ActiveModelTrait, ColumnTrait, DatabaseConnection, DatabaseTransaction, EntityTrait, QueryFilter, QueryOrder,
    QuerySelect, Set, TransactionTrait,
};
use tokio::sync::{mpsc, oneshot};
use tracing::Instrument;
use uuid::Uuid;

use super::registrations::{
    LIVE, Stamps, already_registered, cancel, cancel_check_in, check_in, closed, fill_free_seats, followers_of_each,
    new_registration, reregistration, tell_followers, waitlist_positions,
};
use super::{SeatCounts, display_title, lock, seat_counts};
use crate::domain::accounts::{account_gone, ensure_not_banned};
use crate::domain::notifications::{Journaled, Notifier};
use crate::infra::db::{self, IDS_PER_STATEMENT, insert_in_chunks_of, padded};
use crate::infra::error::{AppError, AppResult, ErrorCode};

/// A desk with nothing to decide for this long ends.
pub const IDLE_AFTER: Duration = Duration::from_secs(30);
/// The most changes decided in one transaction.
const MOST_PER_GROUP: usize = 2_000;
/// Changes that may wait at a desk; past it, callers wait for room (the HTTP server's own
/// limits bound how many do).
const QUEUE: usize = 10_000;
/// The longest a desk looks for whether a group whose `COMMIT` went unanswered was written;
/// past it the outcome is unknown.
const LOOK_UP_WITHIN: Duration = Duration::from_secs(10);
/// How long the rows of a tournament's groups are kept for such a look (which comes within
/// [`LOOK_UP_WITHIN`] of the commit): a desk that ends deletes those older.
const KEEP_GROUPS_FOR: chrono::Duration = chrono::Duration::minutes(1);

/// A change of who takes part.
#[derive(Clone, Copy, Debug)]
pub enum Change {
    /// The player registers: a seat while any is free, else the waitlist.
    Register { user_id: Uuid },
    /// The player cancels their registration.
    Cancel { user_id: Uuid },
    /// The club marks a registered player arrived.
    CheckIn { registration_id: Uuid },
    /// The club takes the arrival mark back.
    CancelCheckIn { registration_id: Uuid },
}

/// A decided change: the registration as it now is, and its place in the waitlist (1 =
/// next) when it is on it.
#[derive(Clone, Debug)]
pub struct Decided {
    pub registration: registrations::Model,
    pub waitlist_position: Option<i64>,
}

/// What a group did beside its answers, for the node to act on: the reads that show the
/// registrations, and the count of groups.
pub trait Committed: Send + Sync + 'static {
    /// A group on the registrations of `tournament_id` ended, written or not: the public
    /// reads that show them are to be ready again here before the group is answered, and the
    /// other nodes told to drop theirs.
    fn renew(&self, tournament_id: Uuid) -> BoxFuture<'_, ()>;
    /// A group may have been written, and the database cannot say: the reads are dropped here
    /// and on the other nodes (building them again needs the database).
    fn drop_reads(&self);
    /// A group of `changes` ended: `committed`, `failed` (nothing of it written) or `unknown`.
    fn count(&self, outcome: &'static str, changes: usize);
}

/// How a group's transaction ended, as far as the desk can tell.
enum Ended {
    /// Written; or it had nothing to write, so its answers stand either way.
    Committed,
    /// Not written: refused before its commit, or found unwritten after a lost `COMMIT`.
    NotCommitted(AppError),
    /// Its `COMMIT` went unanswered and the desk could not look.
    Unknown,
}

struct Ask {
    change: Change,
    answer: oneshot::Sender<AppResult<Decided>>,
}

/// The desks of this node, one per tournament that has changes coming.
#[derive(Clone)]
pub struct Desks {
    open: Arc<Mutex<HashMap<Uuid, mpsc::Sender<Ask>>>>,
    db: DatabaseConnection,
    notifier: Notifier,
    committed: Arc<dyn Committed>,
}

impl Desks {
    pub fn new(db: DatabaseConnection, notifier: Notifier, committed: Arc<dyn Committed>) -> Self {
        Self { open: Arc::default(), db, notifier, committed }
    }

    /// Decides `change` at the tournament's desk, in its turn, and answers once it is written.
    pub async fn decide(&self, tournament_id: Uuid, change: Change) -> AppResult<Decided> {
        // A desk that has just ended refuses the change untaken: the next one takes it.
        for _ in 0..3 {
            let desk = self.desk(tournament_id);
            let (answer, answered) = oneshot::channel();
            if desk.send(Ask { change, answer }).await.is_err() {
                self.ended(tournament_id, &desk);
                continue;
            }
            return answered.await.unwrap_or_else(|_| {
                Err(AppError::Internal(anyhow::anyhow!("the registration desk stopped before it answered")))
            });
        }
        Err(AppError::Internal(anyhow::anyhow!("the registration desk could not be reached")))
    }

    /// How many desks are open now.
    pub fn open_count(&self) -> usize {
        self.open().len()
    }

    /// The open desks. The map stays whole whatever panicked while holding it (single inserts
    /// and removals), so a poisoned lock is taken over.
    fn open(&self) -> MutexGuard<'_, HashMap<Uuid, mpsc::Sender<Ask>>> {
        self.open.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// The queue of the tournament's desk, started if none runs.
    fn desk(&self, tournament_id: Uuid) -> mpsc::Sender<Ask> {
        let mut open = self.open();
        if let Some(desk) = open.get(&tournament_id)
            && !desk.is_closed()
        {
            return desk.clone();
        }
        let (desk, queue) = mpsc::channel(QUEUE);
        open.insert(tournament_id, desk.clone());
        tokio::spawn(self.clone().serve(tournament_id, queue));
        desk
    }

    /// Forgets `desk` if it is still the one listed for the tournament.
    fn ended(&self, tournament_id: Uuid, desk: &mpsc::Sender<Ask>) {
        let mut open = self.open();
        if open.get(&tournament_id).is_some_and(|listed| listed.same_channel(desk)) {
            open.remove(&tournament_id);
        }
    }

    /// A desk: takes what has arrived, decides it as one group, and again, until it sits idle.
    async fn serve(self, tournament_id: Uuid, mut queue: mpsc::Receiver<Ask>) {
        loop {
            let first = match tokio::time::timeout(IDLE_AFTER, queue.recv()).await {
                Ok(Some(ask)) => ask,
                // Closed, and what came before it decided.
                Ok(None) => return self.forget_groups(tournament_id).await,
                Err(_idle) => {
                    // Closed and unlisted at once (a caller finding it closed would list a new
                    // one); no change comes in after, and the queue still yields what came
                    // before, then ends.
                    let mut open = self.open();
                    queue.close();
                    open.remove(&tournament_id);
                    continue;
                }
            };
            let mut group = vec![first];
            while group.len() < MOST_PER_GROUP {
                match queue.try_recv() {
                    Ok(ask) => group.push(ask),
                    Err(_) => break,
                }
            }
            let span = tracing::info_span!("registration.group", %tournament_id, changes = group.len());
            self.run_group(tournament_id, group).instrument(span).await;
        }
    }

    /// Deletes the rows of the tournament's groups too old to be looked up again.
    async fn forget_groups(&self, tournament_id: Uuid) {
        let forgotten = registration_groups::Entity::delete_many()
            .filter(registration_groups::Column::TournamentId.eq(tournament_id))
            .filter(registration_groups::Column::DecidedAt.lt(Utc::now() - KEEP_GROUPS_FOR))
            .exec(&self.db)
            .await;
        if let Err(err) = forgotten {
            tracing::warn!(%tournament_id, error = %err, "the rows of old registration groups stay until the next desk ends");
        }
    }

    /// Decides a group, commits it and answers each change of it: as written when it was,
    /// refused when it was not, and unknown when the desk cannot tell. The reads are renewed
    /// (or dropped) and the other nodes told whichever way it ended.
    async fn run_group(&self, tournament_id: Uuid, group: Vec<Ask>) {
        let changes: Vec<Change> = group.iter().map(|ask| ask.change).collect();
        let group_id = Uuid::now_v7();
        let decided = async {
            let tx = db::begin_write(&self.db).await?;
            let decided = decide_group(&tx, &self.notifier, tournament_id, group_id, &changes).await?;
            Ok::<_, AppError>((tx, decided))
        }
        .await;
        let (decisions, ended) = match decided {
            Ok((tx, decisions)) => {
                let ended = self.commit(tx, tournament_id, group_id, decisions.written).await;
                (Some(decisions), ended)
            }
            Err(err) => (None, Ended::NotCommitted(err)),
        };
        match (decisions, ended) {
            (Some(decisions), Ended::Committed) => {
                let decided = decisions.answers.iter().filter(|answer| answer.is_ok()).count();
                if decisions.written {
                    self.committed.renew(tournament_id).await;
                }
                self.committed.count("committed", decided);
                self.notifier.push_in_background(&self.db, decisions.notices);
                for (ask, answer) in group.into_iter().zip(decisions.answers) {
                    let _ = ask.answer.send(answer);
                }
            }
            (decisions, Ended::NotCommitted(err)) => {
                if matches!(err, AppError::Internal(_)) && err.code() != ErrorCode::ServiceUnavailable {
                    tracing::error!(%tournament_id, error = %err, changes = group.len(), "a registration group failed");
                }
                if decisions.is_some() {
                    // Found unwritten after its commit was lost: nothing changed, and the
                    // reads are made sure of all the same.
                    self.committed.renew(tournament_id).await;
                }
                self.refuse(group, err);
            }
            (_, Ended::Unknown) => {
                tracing::error!(%tournament_id, %group_id, changes = group.len(), "a registration group's commit went unanswered and could not be looked up: its outcome is unknown");
                self.committed.drop_reads();
                self.committed.count("unknown", group.len());
                for ask in group {
                    let _ = ask.answer.send(Err(outcome_unknown()));
                }
            }
            (None, Ended::Committed) => {
                self.refuse(
                    group,
                    AppError::Internal(anyhow::anyhow!("a registration group ended without its decisions")),
                );
            }
        }
    }

    /// Refuses every change of a group that was not written with `err`.
    fn refuse(&self, group: Vec<Ask>, err: AppError) {
        self.committed.count("failed", group.len());
        let err = Arc::new(err);
        for ask in group {
            let _ = ask.answer.send(Err(AppError::shared(err.clone())));
        }
    }

    /// Commits the group's transaction. A `COMMIT` that fails may have committed on the
    /// server all the same (its answer lost with the connection): then the group's own row
    /// says. A group that wrote nothing stands whatever its commit did.
    async fn commit(&self, tx: DatabaseTransaction, tournament_id: Uuid, group_id: Uuid, written: bool) -> Ended {
        let err = match tx.commit().await {
            Ok(()) => return Ended::Committed,
            Err(_) if !written => return Ended::Committed,
            Err(err) => err,
        };
        tracing::warn!(%tournament_id, %group_id, error = %err, "a registration group's commit failed: looking whether it was written");
        match tokio::time::timeout(LOOK_UP_WITHIN, was_written(&self.db, tournament_id, group_id)).await {
            Ok(Ok(true)) => Ended::Committed,
            Ok(Ok(false)) => Ended::NotCommitted(not_written()),
            Ok(Err(looking)) => {
                tracing::warn!(%tournament_id, %group_id, error = %looking, "a registration group could not be looked up");
                Ended::Unknown
            }
            Err(_elapsed) => Ended::Unknown,
        }
    }
}

/// Whether the group `group_id` of the tournament was written: its row is there. Read under
/// the tournament's lock, which the group's transaction holds to its very end, so a `COMMIT`
/// the server is still working through is waited for, not taken for one that failed.
async fn was_written(db: &DatabaseConnection, tournament_id: Uuid, group_id: Uuid) -> AppResult<bool> {
    let tx = db::begin_write(db).await?;
    lock(&tx, tournament_id).await?;
    let written = registration_groups::Entity::find_by_id(group_id).one(&tx).await?.is_some();
    tx.rollback().await?;
    Ok(written)
}

/// The answer to a change of a group found unwritten after its `COMMIT` was lost.
fn not_written() -> AppError {
    AppError::new(
        ErrorCode::ServiceUnavailable,
        "the connection to the database was lost before this change was written: nothing of it was kept; try again",
    )
}

/// The answer to a change of a group whose `COMMIT` went unanswered and that could not be
/// looked up: neither a refusal nor an acknowledgement.
fn outcome_unknown() -> AppError {
    AppError::new(
        ErrorCode::InternalError,
        "the connection to the database was lost as this change was being written, and whether it was is unknown: \
         read your registration before trying again",
    )
}

/// New registrations per `INSERT`: a size every group repeats, so PostgreSQL plans it once.
const ROWS_PER_STATEMENT: usize = 64;

/// What the group has decided to write of the registrations not yet written.
#[derive(Default)]
struct Pending {
    inserts: Vec<registrations::ActiveModel>,
}

impl Pending {
    async fn write(&mut self, tx: &DatabaseTransaction) -> AppResult<()> {
        insert_in_chunks_of(tx, std::mem::take(&mut self.inserts), ROWS_PER_STATEMENT).await?;
        Ok(())
    }
}

/// A group decided and not yet committed.
struct Decisions {
    /// An answer for each change, in order.
    answers: Vec<AppResult<Decided>>,
    /// The notices they owe, to push once committed.
    notices: Vec<Journaled>,
    /// Whether the group wrote anything (its own row with it); one that did not stands
    /// whatever its commit does.
    written: bool,
}

/// Decides `changes` in order inside `tx`, writing the group's row `group_id`: an answer for
/// each, and the notices they owe. An error is the group's: nothing of it may be committed.
async fn decide_group(
    tx: &DatabaseTransaction,
    notifier: &Notifier,
    tournament_id: Uuid,
    group_id: Uuid,
    changes: &[Change],
) -> AppResult<Decisions> {
    let registering = players_registering(changes);
    // The accounts before the tournament, as every transaction takes them (`docs/concurrency.md`):
    // a deletion holds its account from its start and locks tournaments after it, so neither
    // slips in beside the other, nor waits in a circle.
    let accounts = hold_accounts(tx, &registering).await?;
    let refused = |refusal: &dyn Fn() -> AppError| Decisions {
        answers: refuse_all(changes, &accounts, refusal),
        notices: Vec::new(),
        written: false,
    };
    let tournament = match lock(tx, tournament_id).await {
        Ok(tournament) if tournament.status == TournamentStatus::Registration => tournament,
        Ok(_) => return Ok(refused(&closed)),
        Err(err) if err.code() == ErrorCode::NotFound => return Ok(refused(&|| AppError::not_found("tournament"))),
        Err(err) => return Err(err),
    };
    let row = registration_groups::ActiveModel {
        id: Set(group_id),
        tournament_id: Set(tournament_id),
        decided_at: Set(Utc::now()),
    };
    registration_groups::Entity::insert(row).exec_without_returning(tx).await?;
    let mut group = Group::open(tx, notifier, tournament, accounts, &registering).await?;
    let mut answers = Vec::with_capacity(changes.len());
    for change in changes {
        let answer = match *change {
            Change::Register { user_id } => group.register(user_id, Utc::now()).await?,
            club_or_cancel => group.decide_other(club_or_cancel, Utc::now()).await?,
        };
        answers.push(answer);
    }
    let notices = group.close().await?;
    Ok(Decisions { answers, notices, written: true })
}

/// The players of `changes` who register.
fn players_registering(changes: &[Change]) -> Vec<Uuid> {
    changes
        .iter()
        .filter_map(|change| match change {
            Change::Register { user_id } => Some(*user_id),
            _ => None,
        })
        .collect()
}

/// A group being decided in its transaction, on the tournament it holds locked: what it read
/// once for all its changes, and what it has decided so far. Each decision returns the
/// change's answer inside the group's own result, whose error fails the whole group.
struct Group<'a> {
    tx: &'a DatabaseTransaction,
    notifier: &'a Notifier,
    tournament: tournaments::Model,
    /// The registering players' accounts, held until the commit.
    accounts: HashMap<Uuid, users::Model>,
    /// The registering players' bans: until when, if any.
    bans: HashMap<Uuid, Option<DateTime<Utc>>>,
    /// The registrations of the players the group has seen, as the group left them.
    held: HashMap<Uuid, registrations::Model>,
    /// Seats taken and places in the waitlist, counting the group's own decisions.
    taken: i64,
    waiting: i64,
    /// The `createdAt` of the group's registrations, after every one the tournament held.
    stamps: Stamps,
    /// New registrations decided and not yet written.
    pending: Pending,
    /// The players the group registered, whose followers are told at the close.
    registered: Vec<Uuid>,
    notices: Vec<Journaled>,
}

impl<'a> Group<'a> {
    /// Reads what the group's changes need of the locked `tournament`, after giving the seats
    /// freed earlier to the waitlist: they go to the queue before a newcomer.
    async fn open(
        tx: &'a DatabaseTransaction,
        notifier: &'a Notifier,
        tournament: tournaments::Model,
        accounts: HashMap<Uuid, users::Model>,
        registering: &[Uuid],
    ) -> AppResult<Self> {
        let mut notices = Vec::new();
        if !registering.is_empty() {
            notices.extend(fill_free_seats(tx, notifier, &tournament, None).await?);
        }
        let bans = bans_of(tx, registering).await?;
        let held = registrations_of(tx, tournament.id, registering).await?;
        let (counts, latest) = queue_of(tx, tournament.id).await?;
        Ok(Self {
            tx,
            notifier,
            tournament,
            accounts,
            bans,
            held,
            taken: counts.taken,
            waiting: counts.waitlist,
            stamps: Stamps::after(latest),
            pending: Pending::default(),
            registered: Vec::new(),
            notices,
        })
    }

    /// The player registers at `now` (this node's clock): a seat while one is free, else the
    /// waitlist; the row is the earlier one taken up again, or a new one written with the
    /// group's others, stamped after every registration before it.
    async fn register(&mut self, user_id: Uuid, now: DateTime<Utc>) -> AppResult<AppResult<Decided>> {
        let previous = match register(
            self.accounts.get(&user_id),
            self.bans.get(&user_id).copied().flatten(),
            self.held.get(&user_id),
            now,
        ) {
            Err(refused) => return Ok(Err(refused)),
            Ok(previous) => previous,
        };
        let status = self.next_place();
        let stamp = self.stamps.next(now);
        let row = match previous {
            Some(row) => reregistration(row, status, stamp).update(self.tx).await?,
            None => {
                let row =
                    new_registration(self.tournament.id, Some(user_id), None, status, RegistrationSource::App, stamp);
                self.pending.inserts.push(row.clone());
                model_of(row)?
            }
        };
        self.held.insert(user_id, row.clone());
        self.registered.push(user_id);
        let waitlist_position = (status == RegistrationStatus::Waitlist).then_some(self.waiting);
        Ok(Ok(Decided { registration: row, waitlist_position }))
    }

    /// Takes the next place for a registration: a seat while any is free, else the waitlist.
    fn next_place(&mut self) -> RegistrationStatus {
        if self.taken < i64::from(self.tournament.capacity) {
            self.taken += 1;
            RegistrationStatus::Registered
        } else {
            self.waiting += 1;
            RegistrationStatus::Waitlist
        }
    }

    /// A cancellation or a club's change, under its own savepoint: refused, it is rolled back
    /// alone and the group goes on.
    async fn decide_other(&mut self, change: Change, now: DateTime<Utc>) -> AppResult<AppResult<Decided>> {
        // These read the registrations as written: what is pending goes first.
        self.pending.write(self.tx).await?;
        let savepoint = self.tx.begin().await?;
        let done = other_change(&savepoint, self.notifier, &self.tournament, change, now).await;
        let (row, promoted) = match done {
            Err(refused) => {
                savepoint.rollback().await?;
                return Ok(Err(refused));
            }
            Ok(done) => done,
        };
        savepoint.commit().await?;
        let tournament_id = self.tournament.id;
        let counts = seat_counts(self.tx, &[tournament_id]).await?.remove(&tournament_id).unwrap_or_default();
        (self.taken, self.waiting) = (counts.taken, counts.waitlist);
        self.notices.extend(promoted);
        if let Some(user_id) = row.user_id {
            self.held.insert(user_id, row.clone());
        }
        let waitlist_position = if row.status == RegistrationStatus::Waitlist {
            waitlist_positions(self.tx, tournament_id).await?.get(&row.id).copied()
        } else {
            None
        };
        Ok(Ok(Decided { registration: row, waitlist_position }))
    }

    /// Writes what is pending and tells the followers of the players registered: the notices
    /// the group owes.
    async fn close(mut self) -> AppResult<Vec<Journaled>> {
        self.pending.write(self.tx).await?;
        let told = tell_every_follower(self.tx, self.notifier, &self.tournament, &self.accounts, &self.registered);
        self.notices.extend(told.await?);
        Ok(self.notices)
    }
}

/// A registration's decision without I/O, for a player whose account is live or not, banned
/// until `ban_until`, holding `held` in the tournament: refused, or the player's earlier
/// (cancelled) registration to take up again, if any.
/// Why the account of a registering caller (as the group holds it: `None` once deleted)
/// cannot register at all, as the API refuses any request of it: deleted, or banned.
fn account_refusal(account: Option<&users::Model>) -> Option<AppError> {
    match account {
        None => Some(account_gone()),
        Some(user) => ensure_not_banned(user).err(),
    }
}

fn register(
    account: Option<&users::Model>,
    ban_until: Option<DateTime<Utc>>,
    held: Option<&registrations::Model>,
    now: DateTime<Utc>,
) -> AppResult<Option<registrations::Model>> {
    if let Some(refused) = account_refusal(account) {
        return Err(refused);
    }
    if is_banned(ban_until, now) {
        return Err(AppError::new(ErrorCode::RegistrationBanned, "registration is closed to you until your ban ends"));
    }
    match held {
        Some(row) if LIVE.contains(&row.status) => Err(already_registered()),
        previous => Ok(previous.cloned()),
    }
}

/// Every change refused with `refusal`, but a registration of an account deleted meanwhile
/// with `401` as a single registration was.
fn refuse_all(
    changes: &[Change],
    accounts: &HashMap<Uuid, users::Model>,
    refusal: impl Fn() -> AppError,
) -> Vec<AppResult<Decided>> {
    changes
        .iter()
        .map(|change| match change {
            Change::Register { user_id } => Err(account_refusal(accounts.get(user_id)).unwrap_or_else(&refusal)),
            _ => Err(refusal()),
        })
        .collect()
}

/// A cancellation or a club change, as a single change always ran.
async fn other_change(
    tx: &DatabaseTransaction,
    notifier: &Notifier,
    tournament: &tournaments::Model,
    change: Change,
    now: DateTime<Utc>,
) -> AppResult<(registrations::Model, Option<Journaled>)> {
    match change {
        Change::Cancel { user_id } => cancel(tx, notifier, tournament, user_id, now).await,
        Change::CheckIn { registration_id } => Ok((check_in(tx, tournament, registration_id, now).await?, None)),
        Change::CancelCheckIn { registration_id } => {
            cancel_check_in(tx, notifier, tournament, registration_id, now).await
        }
        Change::Register { .. } => Err(AppError::Internal(anyhow::anyhow!("a registration went the wrong way"))),
    }
}

/// The registering players' accounts: the active ones held (`FOR SHARE`) until `tx` ends,
/// locked in id order as every transaction takes accounts (`docs/concurrency.md`, "The order
/// of locks"); the banned ones read without a lock, since they are refused and a moderator's
/// change of them need not wait for the group. A deleted or missing account is left out.
async fn hold_accounts(tx: &DatabaseTransaction, user_ids: &[Uuid]) -> AppResult<HashMap<Uuid, users::Model>> {
    let in_order: Vec<Uuid> = user_ids.iter().copied().collect::<BTreeSet<_>>().into_iter().collect();
    let mut accounts = HashMap::with_capacity(in_order.len());
    for chunk in in_order.chunks(IDS_PER_STATEMENT) {
        let rows = users::Entity::find()
            .filter(users::Column::Id.is_in(padded(chunk)))
            .filter(users::Column::Status.eq(UserStatus::Active))
            .order_by_asc(users::Column::Id)
            .lock_shared()
            .all(tx)
            .await?;
        accounts.extend(rows.into_iter().map(|user| (user.id, user)));
    }
    let unheld: Vec<Uuid> = in_order.into_iter().filter(|id| !accounts.contains_key(id)).collect();
    for chunk in unheld.chunks(IDS_PER_STATEMENT) {
        let rows = users::Entity::find()
            .filter(users::Column::Id.is_in(padded(chunk)))
            .filter(users::Column::Status.eq(UserStatus::Banned))
            .all(tx)
            .await?;
        accounts.extend(rows.into_iter().map(|user| (user.id, user)));
    }
    Ok(accounts)
}

/// The tournament's seats taken and places in the waitlist, and the latest `createdAt` of any
/// of its registrations, in one read.
async fn queue_of(tx: &DatabaseTransaction, tournament_id: Uuid) -> AppResult<(SeatCounts, Option<DateTime<Utc>>)> {
    let rows: Vec<(RegistrationStatus, i64, Option<DateTime<Utc>>)> = registrations::Entity::find()
        .select_only()
        .column(registrations::Column::Status)
        .column_as(Expr::from(Func::count(Expr::col(registrations::Column::Id))), "n")
        .column_as(Expr::from(Func::max(Expr::col(registrations::Column::CreatedAt))), "latest")
        .filter(registrations::Column::TournamentId.eq(tournament_id))
        .group_by(registrations::Column::Status)
        .into_tuple()
        .all(tx)
        .await?;
    let mut counts = SeatCounts::default();
    let mut latest = None;
    for (status, n, at) in rows {
        match status {
            RegistrationStatus::Waitlist => counts.waitlist += n,
            RegistrationStatus::Registered | RegistrationStatus::CheckedIn => counts.taken += n,
            RegistrationStatus::Cancelled | RegistrationStatus::NoShow => {}
        }
        latest = latest.max(at);
    }
    Ok((counts, latest))
}

/// The end of each player's ban, if they have a profile.
async fn bans_of(tx: &DatabaseTransaction, user_ids: &[Uuid]) -> AppResult<HashMap<Uuid, Option<DateTime<Utc>>>> {
    let mut bans = HashMap::new();
    for chunk in user_ids.chunks(IDS_PER_STATEMENT) {
        let rows: Vec<(Uuid, Option<DateTime<Utc>>)> = player_profiles::Entity::find()
            .select_only()
            .column(player_profiles::Column::UserId)
            .column(player_profiles::Column::BanUntil)
            .filter(player_profiles::Column::UserId.is_in(padded(chunk)))
            .into_tuple()
            .all(tx)
            .await?;
        bans.extend(rows);
    }
    Ok(bans)
}

/// The registrations of these players in the tournament, whatever their status.
async fn registrations_of(
    tx: &DatabaseTransaction,
    tournament_id: Uuid,
    user_ids: &[Uuid],
) -> AppResult<HashMap<Uuid, registrations::Model>> {
    let mut held = HashMap::new();
    for chunk in user_ids.chunks(IDS_PER_STATEMENT) {
        let rows = registrations::Entity::find()
            .filter(registrations::Column::TournamentId.eq(tournament_id))
            .filter(registrations::Column::UserId.is_in(padded(chunk)))
            .all(tx)
            .await?;
        held.extend(rows.into_iter().filter_map(|row| Some((row.user_id?, row))));
    }
    Ok(held)
}

/// Tells the followers of every player who registered in the group.
async fn tell_every_follower(
    tx: &DatabaseTransaction,
    notifier: &Notifier,
    tournament: &tournaments::Model,
    accounts: &HashMap<Uuid, users::Model>,
    registered: &[Uuid],
) -> AppResult<Vec<Journaled>> {
    let mut followers = followers_of_each(tx, registered).await?;
    if followers.is_empty() {
        return Ok(Vec::new());
    }
    let title = display_title(tx, tournament.id).await?;
    let mut journaled = Vec::new();
    for user_id in registered {
        if let (Some(recipients), Some(player)) = (followers.remove(user_id), accounts.get(user_id)) {
            journaled.push(tell_followers(tx, notifier, tournament.id, &title, player, recipients).await?);
        }
    }
    Ok(journaled)
}

/// The row an insert will write, as the model it becomes.
fn model_of(row: registrations::ActiveModel) -> AppResult<registrations::Model> {
    use sea_orm::TryIntoModel;
    row.try_into_model().map_err(|err| AppError::Internal(err.into()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(text: &str) -> DateTime<Utc> {
        DateTime::parse_from_rfc3339(text).map(|t| t.with_timezone(&Utc)).expect("a time")
    }

    fn held(status: RegistrationStatus) -> registrations::Model {
        let now = at("2026-11-28T12:00:00Z");
        let row = new_registration(Uuid::now_v7(), Some(Uuid::now_v7()), None, status, RegistrationSource::App, now);
        model_of(row).expect("a model")
    }

    fn account(status: UserStatus) -> users::Model {
        let now = at("2026-11-01T12:00:00Z");
        users::Model {
            id: Uuid::now_v7(),
            phone: "+79990000000".into(),
            name: None,
            nickname: None,
            avatar_url: None,
            city_slug: None,
            consent_accepted_at: None,
            consent_version: None,
            admin_role: None,
            status,
            merged_into_user_id: None,
            deleted_at: None,
            created_at: now,
            updated_at: now,
        }
    }

    fn code(decided: AppResult<Option<registrations::Model>>) -> Option<ErrorCode> {
        decided.err().map(|err| err.code())
    }

    #[test]
    fn a_newcomer_registers_with_a_new_row() {
        let decided = register(Some(&account(UserStatus::Active)), None, None, at("2026-11-28T12:00:00Z"));
        assert!(matches!(decided, Ok(None)));
    }

    #[test]
    fn a_deleted_account_is_refused_before_anything_else() {
        let live = held(RegistrationStatus::Registered);
        let now = at("2026-11-28T12:00:00Z");
        assert_eq!(
            code(register(None, Some(at("2027-01-01T00:00:00Z")), Some(&live), now)),
            Some(ErrorCode::Unauthorized)
        );
    }

    #[test]
    fn a_banned_account_is_refused_as_every_request_of_it_is() {
        let live = held(RegistrationStatus::Registered);
        let now = at("2026-11-28T12:00:00Z");
        let banned = account(UserStatus::Banned);
        assert_eq!(code(register(Some(&banned), None, None, now)), Some(ErrorCode::UserBanned));
        assert_eq!(
            code(register(Some(&banned), Some(at("2027-01-01T00:00:00Z")), Some(&live), now)),
            Some(ErrorCode::UserBanned),
            "before a registration ban or a place held"
        );
    }

    #[test]
    fn a_ban_refuses_until_it_ends() {
        let until = at("2026-12-01T00:00:00Z");
        assert_eq!(
            code(register(Some(&account(UserStatus::Active)), Some(until), None, at("2026-11-30T23:59:59Z"))),
            Some(ErrorCode::RegistrationBanned)
        );
        assert!(
            register(Some(&account(UserStatus::Active)), Some(until), None, until).is_ok(),
            "the ban ends at its end"
        );
    }

    #[test]
    fn every_place_held_refuses_a_second_registration() {
        let now = at("2026-11-28T12:00:00Z");
        for status in LIVE {
            assert_eq!(
                code(register(Some(&account(UserStatus::Active)), None, Some(&held(status)), now)),
                Some(ErrorCode::AlreadyRegistered),
                "{status:?}"
            );
        }
    }

    #[test]
    fn a_cancelled_or_no_show_registration_is_taken_up_again() {
        let now = at("2026-11-28T12:00:00Z");
        for status in [RegistrationStatus::Cancelled, RegistrationStatus::NoShow] {
            let row = held(status);
            let again = register(Some(&account(UserStatus::Active)), None, Some(&row), now)
                .expect("taken up")
                .expect("the same row");
            assert_eq!(again.id, row.id, "{status:?}");
        }
    }
}
