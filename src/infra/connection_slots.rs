//! Connection slots: how many connections, event streams or live sockets each key (a client
//! address, an account, a tournament) holds now, with a cap per key. A
//! [`Slot`] is given back when dropped, so whatever holds the connection holds its slot, and
//! no path out of it can forget to give it back.

use std::collections::HashMap;
use std::hash::Hash;
use std::sync::{Arc, Mutex, MutexGuard};

/// The slots held under a cap, per key.
pub struct Slots<K: Hash + Eq + Clone> {
    held: Arc<Mutex<HashMap<K, usize>>>,
    cap: usize,
}

impl<K: Hash + Eq + Clone> Slots<K> {
    /// At most `cap` slots per key.
    pub fn new(cap: usize) -> Self {
        Self { held: Arc::default(), cap }
    }

    /// A slot for `key`, or `None` when it holds `cap` already.
    pub fn take(&self, key: K) -> Option<Slot<K>> {
        let mut held = locked(&self.held);
        let count = held.entry(key.clone()).or_insert(0);
        if *count >= self.cap {
            if *count == 0 {
                held.remove(&key);
            }
            return None;
        }
        *count += 1;
        Some(Slot { held: self.held.clone(), key })
    }

    /// How many slots `key` holds now.
    #[cfg(test)]
    pub fn held(&self, key: &K) -> usize {
        locked(&self.held).get(key).copied().unwrap_or(0)
    }
}

/// One slot of a key, given back when dropped.
pub struct Slot<K: Hash + Eq + Clone> {
    held: Arc<Mutex<HashMap<K, usize>>>,
    key: K,
}

impl<K: Hash + Eq + Clone> Drop for Slot<K> {
    fn drop(&mut self) {
        let mut held = locked(&self.held);
        if let Some(count) = held.get_mut(&self.key) {
            *count = count.saturating_sub(1);
            if *count == 0 {
                held.remove(&self.key);
            }
        }
    }
}

/// The counts change by one under the lock, so a panic elsewhere leaves them consistent and a
/// poisoned lock is taken over.
fn locked<K>(held: &Mutex<HashMap<K, usize>>) -> MutexGuard<'_, HashMap<K, usize>> {
    held.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_holds_at_most_its_cap_and_gets_places_back_when_dropped() {
        let slots = Slots::new(2);
        let first = slots.take("a").expect("a first slot");
        let second = slots.take("a").expect("a second slot");
        assert!(slots.take("a").is_none(), "the cap is 2");
        assert!(slots.take("b").is_some(), "another key has its own slots");
        drop(first);
        assert_eq!(slots.held(&"a"), 1);
        let third = slots.take("a").expect("a slot given back is free again");
        drop((second, third));
        assert_eq!(slots.held(&"a"), 0);
        assert!(locked(&slots.held).is_empty(), "a key with no slot is forgotten");
    }

    #[test]
    fn a_cap_of_zero_refuses_everyone_and_remembers_no_one() {
        let slots = Slots::new(0);
        assert!(slots.take(1).is_none());
        assert!(locked(&slots.held).is_empty());
    }
}
