//! A command's key kept with the command: a command sent again is answered by what it came to
//! the first time and never applied twice, a key stands for one command of one tournament, and
//! a commit whose answer was lost is looked at before the turn is answered.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use uuid::Uuid;

use super::clock_tests::{MemoryStore, live_on, paused_now, running_game, version_or_refusal};
use crate::error::{LiveError, Refusal};
use crate::live::{Command, Order, Recorded, Timed};
use crate::rules::clock::Direction;

const BY: Uuid = Uuid::from_u128(99);

fn keyed(command: Command, key: &str) -> Timed {
    Timed::from(command).keyed(Some(key.to_owned()))
}

fn one(command: Command, key: &str) -> Order {
    Order::One(keyed(command, key))
}

#[tokio::test(start_paused = true)]
async fn a_keyed_command_sent_twice_is_applied_once_and_answered_alike() {
    let (registry, _broadcasts, id, _) = live_on(Arc::default(), running_game(paused_now())).await;
    let first = registry.command(id, one(Command::Level(Direction::Next), "k"), BY).await.expect("applied");
    assert!(!first.replayed());
    let again = registry.command(id, one(Command::Level(Direction::Next), "k"), BY).await.expect("answered");
    assert!(again.replayed());
    assert_eq!(again.state.version, first.state.version, "not applied twice");
    assert_eq!(again.state.clock.current_level_idx, 1, "one level on, not two");
    assert_eq!(again.answers.iter().map(version_or_refusal).collect::<Vec<_>>(), vec![Ok(first.state.version)]);
    // The same key of another account is that account's own.
    let other = registry.command(id, one(Command::Level(Direction::Next), "k"), Uuid::from_u128(98)).await;
    assert_eq!(other.expect("applied").state.clock.current_level_idx, 2);
}

#[tokio::test(start_paused = true)]
async fn a_key_kept_for_another_command_or_tournament_refuses_and_applies_nothing() {
    let store = Arc::new(MemoryStore::default());
    let (registry, _broadcasts, id, store) = live_on(store, running_game(paused_now())).await;
    registry.command(id, one(Command::Pause, "k"), BY).await.expect("paused");
    registry.command(id, Command::Resume, BY).await.expect("resumed");
    let version = registry.snapshot(id).await.expect("a state").version;
    let reused = registry.command(id, one(Command::Eliminate(Uuid::from_u128(1)), "k"), BY).await;
    assert!(matches!(reused, Err(LiveError::Refused { refusal: Refusal::KeyReused, .. })), "{reused:?}");
    // Kept for a pause of another tournament: not this tournament's pause.
    store.keys.lock().expect("a lock").insert((BY, "t".to_owned()), (Uuid::from_u128(8), Command::Pause, applied(2)));
    let elsewhere = registry.command(id, one(Command::Pause, "t"), BY).await;
    assert!(matches!(elsewhere, Err(LiveError::Refused { refusal: Refusal::KeyReused, .. })), "{elsewhere:?}");
    let state = registry.snapshot(id).await.expect("a state");
    assert_eq!(state.version, version, "nothing applied");
    assert!(state.eliminations.is_empty() && state.clock.paused_at.is_none());
}

#[tokio::test(start_paused = true)]
async fn a_refusal_is_kept_and_answered_again_though_the_game_moved_on() {
    let (registry, _broadcasts, id, _) = live_on(Arc::default(), running_game(paused_now())).await;
    let refused = registry.command(id, one(Command::Undo, "u"), BY).await;
    assert!(matches!(refused, Err(LiveError::Refused { refusal: Refusal::NothingToUndo, .. })), "{refused:?}");
    registry.command(id, Command::Eliminate(Uuid::from_u128(1)), BY).await.expect("out");
    // Now there is an elimination to undo, but the key's command was refused: it stays so.
    let again = registry.command(id, one(Command::Undo, "u"), BY).await.expect("answered");
    assert!(again.replayed());
    assert!(matches!(again.answers[0].recorded, Recorded::Refused { refusal: Refusal::NothingToUndo, .. }));
    assert_eq!(again.state.eliminations.len(), 1, "the elimination stands");
}

#[tokio::test(start_paused = true)]
async fn a_queue_sent_again_applies_only_what_it_had_not() {
    let (registry, _broadcasts, id, _) = live_on(Arc::default(), running_game(paused_now())).await;
    let first = vec![keyed(Command::Pause, "a"), keyed(Command::Resume, "b")];
    registry.command(id, Order::Queue(first), BY).await.expect("applied");
    let queue = vec![
        keyed(Command::Pause, "a"),
        keyed(Command::Resume, "b"),
        keyed(Command::Level(Direction::Next), "c"),
        keyed(Command::Undo, "d"),
    ];
    let outcome = registry.command(id, Order::Queue(queue.clone()), BY).await.expect("answered");
    let replayed: Vec<bool> = outcome.answers.iter().map(|answer| answer.replayed).collect();
    assert_eq!(replayed, vec![true, true, false, false]);
    let answers: Vec<_> = outcome.answers.iter().map(version_or_refusal).collect();
    assert_eq!(answers, vec![Ok(2), Ok(3), Ok(4), Err(Some(Refusal::NothingToUndo))]);
    // The whole queue once more: every command as it was kept, nothing applied.
    let again = registry.command(id, Order::Queue(queue), BY).await.expect("answered");
    assert!(again.answers.iter().all(|answer| answer.replayed));
    assert_eq!(again.answers.iter().map(version_or_refusal).collect::<Vec<_>>(), answers);
    assert_eq!(again.state.version, 4);
    assert_eq!(again.state.clock.current_level_idx, 1, "one level on");
}

#[tokio::test(start_paused = true)]
async fn a_commit_whose_answer_was_lost_is_looked_at_and_answered_as_it_went() {
    let store = Arc::new(MemoryStore::default());
    let (registry, _broadcasts, id, store) = live_on(store, running_game(paused_now())).await;
    store.lost_commits.store(1, Ordering::SeqCst);
    let outcome = registry.command(id, one(Command::Level(Direction::Next), "k"), BY).await.expect("it committed");
    assert_eq!(outcome.state.version, 2);
    assert_eq!(outcome.state.clock.current_level_idx, 1);
    let again = registry.command(id, one(Command::Level(Direction::Next), "k"), BY).await.expect("answered");
    assert!(again.replayed());
    assert_eq!(again.state.clock.current_level_idx, 1, "applied once");
}

#[tokio::test(start_paused = true)]
async fn a_write_that_failed_without_committing_says_nothing_was_done_and_keeps_no_key() {
    let store = Arc::new(MemoryStore::default());
    let (registry, _broadcasts, id, store) = live_on(store, running_game(paused_now())).await;
    store.failing_writes.store(1, Ordering::SeqCst);
    let failed = registry.command(id, one(Command::Level(Direction::Next), "k"), BY).await;
    assert!(matches!(failed, Err(LiveError::Refused { refusal: Refusal::Unavailable, .. })), "{failed:?}");
    // Sent again with its key, it runs now, once.
    let outcome = registry.command(id, one(Command::Level(Direction::Next), "k"), BY).await.expect("applied");
    assert!(!outcome.replayed());
    assert_eq!(outcome.state.clock.current_level_idx, 1);
}

fn applied(version: i64) -> Recorded {
    Recorded::Applied { version: Some(version), elimination: None }
}
