//! Which releases the nodes on the bus run, so that a node sends a kind of note an older
//! release cannot follow only once no node of that release listens (the idea of CockroachDB's
//! cluster version, without its finalization: a rollback brings an older node back, and the
//! gate closes again by itself, since nothing but hints travels on the bus).
//!
//! Every [`ANNOUNCE_EVERY`] each node sets `floor:release:<node>` to its release for
//! [`ANNOUNCED_FOR`] and adds itself to the set `floor:releases`, then reads the key of every
//! node in the set (dropping from it those whose word expired) and how many connections listen
//! on the bus's channel. The set keeps the reading to the nodes' own keys: a scan of the
//! keyspace would cost each node a pass over every key in Redis each second. A listener that
//! announces nothing runs a release from before announcements (0.2.0 and earlier): while there
//! is one, or while Redis cannot say, the lowest release is unknown and every gate stays closed.

use std::sync::{Arc, RwLock};
use std::time::Duration;

use semver::Version;

use super::channel::CHANNEL;
use super::link::Link;

/// How often a node says its release and reads the others'.
const ANNOUNCE_EVERY: Duration = Duration::from_secs(1);
/// How long a node's word holds: a node gone stops counting after it.
const ANNOUNCED_FOR: Duration = Duration::from_secs(5);
/// Where each node says its release.
const KEY_PREFIX: &str = "floor:release:";
/// The nodes that said their release, each until its word expires.
const NODES: &str = "floor:releases";

/// The lowest release among the nodes listening on the bus.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Lowest {
    /// Every listener said its release; this is the lowest.
    Known(Version),
    /// A listener said nothing (a release before announcements), or Redis could not say.
    Unknown,
}

impl Lowest {
    /// Judges what the nodes `announced` against how many connections `listen` on the bus.
    pub fn of(announced: &[String], listening: usize) -> Self {
        if announced.len() < listening {
            return Self::Unknown;
        }
        let releases: Option<Vec<Version>> = announced.iter().map(|release| Version::parse(release).ok()).collect();
        releases.and_then(|releases| releases.into_iter().min()).map_or(Self::Unknown, Self::Known)
    }

    /// Whether every node runs `release` or newer; a build of a release to come
    /// (`0.3.0-dev`) counts as that release, so nodes built from one main agree.
    pub fn all_run(&self, release: &Version) -> bool {
        let line = |version: &Version| (version.major, version.minor, version.patch);
        matches!(self, Self::Known(lowest) if line(lowest) >= line(release))
    }
}

/// This node's view of the releases on the bus; cheap to clone.
#[derive(Clone)]
pub struct Releases(Arc<RwLock<Lowest>>);

impl Releases {
    /// Starts saying `release` as node `node` over `link` and reading the others', for as long
    /// as the runtime runs; unknown until the first reading.
    pub fn start(link: Link, node: uuid::Uuid, release: &'static str) -> Self {
        let releases = Self(Arc::new(RwLock::new(Lowest::Unknown)));
        let kept = releases.clone();
        tokio::spawn(async move {
            let mut ticks = tokio::time::interval(ANNOUNCE_EVERY);
            ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                ticks.tick().await;
                let lowest = read(&link, node, release).await.unwrap_or(Lowest::Unknown);
                *kept.0.write().unwrap_or_else(|poisoned| poisoned.into_inner()) = lowest;
            }
        });
        releases
    }

    /// The lowest release on the bus, as last read.
    pub fn lowest(&self) -> Lowest {
        self.0.read().unwrap_or_else(|poisoned| poisoned.into_inner()).clone()
    }
}

/// Says this node's release, then reads every node's and counts the bus's listeners; `None`
/// when Redis does not answer one of the questions.
async fn read(link: &Link, node: uuid::Uuid, release: &str) -> Option<Lowest> {
    let mut say = redis::cmd("SET");
    say.arg(format!("{KEY_PREFIX}{node}")).arg(release).arg("PX").arg(ANNOUNCED_FOR.as_millis().to_string());
    link.ask::<()>(&say).await?;
    link.ask::<()>(redis::cmd("SADD").arg(NODES).arg(node.to_string())).await?;
    let nodes: Vec<String> = link.ask(redis::cmd("SMEMBERS").arg(NODES)).await?;
    let keys: Vec<String> = nodes.iter().map(|node| format!("{KEY_PREFIX}{node}")).collect();
    let words: Vec<Option<String>> = link.ask(redis::cmd("MGET").arg(&keys)).await?;
    // A node whose word expired is gone: not counted, and no longer read.
    let gone: Vec<&String> =
        nodes.iter().zip(&words).filter(|(_, word)| word.is_none()).map(|(node, _)| node).collect();
    if !gone.is_empty() {
        link.ask::<()>(redis::cmd("SREM").arg(NODES).arg(gone)).await?;
    }
    let announced: Vec<String> = words.into_iter().flatten().collect();
    let mut numsub = redis::cmd("PUBSUB");
    numsub.arg("NUMSUB").arg(CHANNEL);
    let (_, listening): (String, usize) = link.ask(&numsub).await?;
    Some(Lowest::of(&announced, listening))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn said(releases: &[&str]) -> Vec<String> {
        releases.iter().map(|release| (*release).to_owned()).collect()
    }

    #[test]
    fn the_lowest_release_is_known_only_when_every_listener_said_its_own() {
        let v = |text: &str| Version::parse(text).expect("a version");
        assert_eq!(Lowest::of(&said(&["0.3.0", "0.4.1"]), 2), Lowest::Known(v("0.3.0")));
        // A node gone whose word still holds: more said than listening.
        assert_eq!(Lowest::of(&said(&["0.3.0", "0.4.1", "0.4.1"]), 2), Lowest::Known(v("0.3.0")));
        assert_eq!(Lowest::of(&said(&["0.4.1"]), 2), Lowest::Unknown, "a 0.2.0 node listens and says nothing");
        assert_eq!(Lowest::of(&said(&["0.4.1", "soon"]), 2), Lowest::Unknown);
        assert_eq!(Lowest::of(&said(&[]), 0), Lowest::Unknown);
    }

    #[test]
    fn a_gate_opens_when_every_node_runs_its_release_or_a_build_of_it() {
        let v = |text: &str| Version::parse(text).expect("a version");
        let gate = v("0.3.0");
        assert!(Lowest::Known(v("0.3.0")).all_run(&gate));
        assert!(Lowest::Known(v("0.3.0-dev")).all_run(&gate), "main's build of the release to come");
        assert!(Lowest::Known(v("1.0.0")).all_run(&gate));
        assert!(!Lowest::Known(v("0.2.9")).all_run(&gate));
        assert!(!Lowest::Unknown.all_run(&gate));
    }
}
