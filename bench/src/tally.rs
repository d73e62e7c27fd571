//! Whether every watcher got every change exactly once and in order, judged from the versions
//! it read after its join and the versions the triggers made.

use serde::Serialize;

/// Deliveries summed over watchers (and, in a report, over the whole run).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Counts {
    /// One per joined watcher and change made after its join.
    pub expected: u64,
    /// `state` (or `clock`) events read after the join.
    pub received: u64,
    /// Changes a watcher never got.
    pub missing: u64,
    /// A version the watcher had already got.
    pub duplicate: u64,
    /// A version older than one the watcher already had (and not a duplicate).
    pub out_of_order: u64,
    /// A version no newer than the one the watcher's join ack carried.
    pub stale: u64,
    /// A newer version that no trigger made: a change the benchmark did not ask for.
    pub unexpected: u64,
}

impl Counts {
    pub fn add(&mut self, other: &Self) {
        self.expected += other.expected;
        self.received += other.received;
        self.missing += other.missing;
        self.duplicate += other.duplicate;
        self.out_of_order += other.out_of_order;
        self.stale += other.stale;
        self.unexpected += other.unexpected;
    }

    /// Every change once, in order, nothing else.
    pub fn is_perfect(&self) -> bool {
        *self == Self { expected: self.expected, received: self.expected, ..Self::default() }
    }
}

/// Judges one watcher: `joined` is its ack's version, `received` the versions in the order it
/// read them, `made` the versions the triggers answered with, in order.
pub fn judge(joined: i64, received: &[i64], made: &[i64]) -> Counts {
    let expected: Vec<i64> = made.iter().copied().filter(|&version| version > joined).collect();
    let mut counts = Counts { expected: count(expected.len()), received: count(received.len()), ..Counts::default() };
    let mut highest = joined;
    for (i, &version) in received.iter().enumerate() {
        if version <= joined {
            counts.stale += 1;
        } else if received[..i].contains(&version) {
            counts.duplicate += 1;
        } else if version < highest {
            counts.out_of_order += 1;
        } else if !made.contains(&version) {
            counts.unexpected += 1;
        }
        highest = highest.max(version);
    }
    counts.missing = count(expected.iter().filter(|version| !received.contains(version)).count());
    counts
}

fn count(n: usize) -> u64 {
    u64::try_from(n).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_change_once_in_order_is_perfect() {
        let counts = judge(10, &[11, 12, 13], &[11, 12, 13]);
        assert_eq!(counts, Counts { expected: 3, received: 3, ..Counts::default() });
        assert!(counts.is_perfect());
    }

    #[test]
    fn a_missing_change_is_counted_and_spoils_the_run() {
        let counts = judge(10, &[11, 13], &[11, 12, 13]);
        assert_eq!(counts.missing, 1);
        assert!(!counts.is_perfect());
    }

    #[test]
    fn duplicates_stale_and_out_of_order_versions_are_told_apart() {
        let counts = judge(10, &[10, 11, 13, 12, 13, 9], &[11, 12, 13]);
        assert_eq!(
            counts,
            Counts { expected: 3, received: 6, missing: 0, duplicate: 1, out_of_order: 1, stale: 2, unexpected: 0 }
        );
    }

    #[test]
    fn a_change_nobody_triggered_is_unexpected() {
        let counts = judge(10, &[11, 12, 13], &[11, 13]);
        assert_eq!(counts.unexpected, 1);
        assert!(!counts.is_perfect());
    }

    #[test]
    fn counts_add_up_over_watchers() {
        let mut total = Counts::default();
        total.add(&judge(1, &[2, 3], &[2, 3]));
        total.add(&judge(1, &[2], &[2, 3]));
        assert_eq!(total, Counts { expected: 4, received: 3, missing: 1, ..Counts::default() });
    }
}
