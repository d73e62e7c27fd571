//! This node's one connection to Redis, for everything that passes between nodes: the
//! Socket.IO adapter's pub/sub (the link is its driver) and the bus's notes. It reconnects by
//! itself, and it never holds this node back: while Redis is unreachable a message for the
//! other nodes is dropped at once (the adapter then delivers to this node's own sockets as
//! usual), the outage is logged once and shown by [`Link::is_up`], and when Redis answers
//! again every channel is subscribed anew and [`Link::recoveries`] tells the node to make up
//! for what the other nodes missed.
//!
//! socketioxide-redis's own driver keeps the one connection it made at start: after a Redis
//! restart every publish failed with "broken pipe" for good, and because the adapter
//! publishes before it delivers locally, even the watchers on the node that made a change
//! stopped hearing it.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, RwLock};
use std::time::Duration;

use redis::aio::MultiplexedConnection;
use redis::{AsyncConnectionConfig, PushInfo, PushKind};
use socketioxide_redis::drivers::{ChanItem, Driver, MessageStream};
use tokio::sync::{Notify, mpsc, watch};
use tokio::time::Instant;

/// How often a healthy link asks Redis whether it is there.
const CHECK_EVERY: Duration = Duration::from_secs(1);
/// The first wait before connecting again to a Redis that was lost; it doubles up to
/// [`RETRY_AT_MOST`].
const RETRY_FIRST: Duration = Duration::from_millis(250);
const RETRY_AT_MOST: Duration = Duration::from_secs(2);
/// The longest a question to Redis (a connection, a check, a subscription) may take before
/// Redis counts as gone.
const ANSWER_WITHIN: Duration = Duration::from_secs(1);
/// The longest a publish may hold its sender (the fan-out of a tournament, before its own
/// sockets hear the change): past it the link is in doubt (see [`Health::doubt`]).
const PUBLISH_WITHIN: Duration = Duration::from_millis(500);
/// How many checks in a row may go unanswered (each within [`ANSWER_WITHIN`]) before Redis
/// counts as gone: a node too busy to read the answers (a thousand phones reconnecting to it)
/// must not take itself for cut off. A refused or closed connection is an outage at once.
const DOUBT_CHECKS: u32 = 3;

type Channels = RwLock<HashMap<String, mpsc::Sender<ChanItem>>>;

/// This node's connection to Redis; cheap to clone.
#[derive(Clone)]
pub struct Link(Arc<Inner>);

struct Inner {
    client: redis::Client,
    /// The connection now: replaced by the link's keeper when Redis comes back.
    connection: RwLock<Option<MultiplexedConnection>>,
    /// Where the messages of each subscribed channel go.
    channels: Arc<Channels>,
    /// The link's health, shared with the push handler that learns first of a lost connection.
    health: Arc<Health>,
    /// Counts the times Redis came back; each consumer of [`Link::recoveries`] sees it move.
    recoveries: watch::Sender<u64>,
    /// Where a test holds a reconnection between its subscriptions and the link going up.
    #[cfg(test)]
    pause_before_up: std::sync::Mutex<Option<Arc<tokio::sync::Barrier>>>,
}

/// Whether the link works, and how many times it stopped working.
#[derive(Default)]
struct Health {
    up: AtomicBool,
    outages: AtomicU64,
    /// A publish was not answered in time and the check that tells a slow Redis (or a node too
    /// busy to hear it) from a gone one has not answered yet: publishes are dropped meanwhile.
    doubting: AtomicBool,
    /// How many times the link was in doubt: what was sent before may not have arrived.
    doubts: AtomicU64,
    /// Which connection is the link's now: a closing connection the link has already
    /// replaced says nothing of the new one.
    connection: AtomicU64,
    /// Wakes the keeper: the connection was just lost.
    check_now: Notify,
}

impl Health {
    /// Redis is gone: said once per outage.
    fn lost(&self, why: &dyn std::fmt::Display) {
        if self.up.swap(false, Ordering::SeqCst) {
            self.outages.fetch_add(1, Ordering::SeqCst);
            tracing::error!(
                error = %why,
                "lost Redis: live changes reach only this node's own watchers until it is back"
            );
        }
        self.doubting.store(false, Ordering::SeqCst);
        self.check_now.notify_one();
    }

    /// A publish or a check was not answered in time: whether a publish reached Redis is
    /// unknown. Not an outage yet (a node busy with a thousand phones reconnecting reads the
    /// answers late, and Redis is fine): the link drops publishes, so this node's own sockets
    /// are not held up, and the node follows the other nodes' tournaments from the database,
    /// until the keeper's checks say which it was. Said once per doubt.
    fn doubt(&self, why: &dyn std::fmt::Display) {
        if self.up.load(Ordering::SeqCst) && !self.doubting.swap(true, Ordering::SeqCst) {
            self.doubts.fetch_add(1, Ordering::SeqCst);
            tracing::warn!(
                error = %why,
                "Redis was slow to answer: the other nodes may miss changes until a check answers"
            );
        }
        self.check_now.notify_one();
    }

    /// Whether messages go to Redis now: the link is up and not in doubt.
    fn carries(&self) -> bool {
        self.up.load(Ordering::SeqCst) && !self.doubting.load(Ordering::SeqCst)
    }
}

/// When a message was sent, as [`Link::mark`] took it: whether the link then carried messages,
/// and how many outages and doubts it had had.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Mark {
    carried: bool,
    outages: u64,
    doubts: u64,
}

impl Link {
    /// The link to `client` (RESP3, for the subscriptions' push messages), connected if Redis
    /// answers at once; otherwise it keeps trying in the background: a node starts while Redis
    /// is unreachable. Lives as long as the runtime.
    pub async fn start(client: redis::Client) -> anyhow::Result<Self> {
        let link = Self(Arc::new(Inner {
            client,
            connection: RwLock::new(None),
            channels: Arc::default(),
            health: Arc::default(),
            recoveries: watch::Sender::new(0),
            #[cfg(test)]
            pause_before_up: std::sync::Mutex::default(),
        }));
        if let Err(err) = link.connect().await {
            tracing::error!(error = %err, "Redis does not answer: this node serves its own watchers and keeps trying");
        }
        tokio::spawn(link.clone().keep());
        Ok(link)
    }

    /// Whether Redis answers now.
    pub fn is_up(&self) -> bool {
        self.0.health.up.load(Ordering::SeqCst)
    }

    /// Whether a message sent now goes to Redis: it answers and the link is not in doubt.
    pub fn carries(&self) -> bool {
        self.0.health.carries()
    }

    /// How many times the link has been lost so far.
    pub fn outages(&self) -> u64 {
        self.0.health.outages.load(Ordering::SeqCst)
    }

    /// The link's state before a message is sent: [`Self::carried_since`] then tells whether
    /// the other nodes can have missed it.
    pub fn mark(&self) -> Mark {
        // The counts first: a loss or a doubt in between then shows as a changed count.
        let (outages, doubts) = self.counts();
        Mark { carried: self.carries(), outages, doubts }
    }

    /// Whether everything sent since `mark` reached Redis: the link carried messages then and
    /// now, and was neither lost nor in doubt in between.
    pub fn carried_since(&self, mark: Mark) -> bool {
        mark.carried && self.carries() && self.counts() == (mark.outages, mark.doubts)
    }

    fn counts(&self) -> (u64, u64) {
        let health = &self.0.health;
        (health.outages.load(Ordering::SeqCst), health.doubts.load(Ordering::SeqCst))
    }

    /// Changes each time Redis answers again after an outage (and when it first answers, if
    /// it did not at start): what the other nodes sent meanwhile is lost, and they lost what
    /// this one sent.
    pub fn recoveries(&self) -> watch::Receiver<u64> {
        self.0.recoveries.subscribe()
    }

    /// The connection now, while Redis answers.
    fn connection(&self) -> Option<MultiplexedConnection> {
        if !self.is_up() {
            return None;
        }
        self.0.connection.read().unwrap_or_else(|poisoned| poisoned.into_inner()).clone()
    }

    /// Publishes `message` on `channel`, or drops it at once while Redis is unreachable or the
    /// link is in doubt (a sender that must know takes a [`Self::mark`] first).
    pub async fn send(&self, channel: String, message: Vec<u8>) {
        if !self.carries() {
            return;
        }
        let Some(mut connection) = self.connection() else { return };
        let mut command = redis::cmd("PUBLISH");
        command.arg(channel).arg(message);
        match tokio::time::timeout(PUBLISH_WITHIN, command.query_async::<i64>(&mut connection)).await {
            Ok(Ok(_)) => {}
            Ok(Err(err)) if !err.is_timeout() => self.0.health.lost(&err),
            Ok(Err(_)) | Err(_) => {
                self.0.health.doubt(&format_args!("a publish was not answered within {PUBLISH_WITHIN:?}"));
            }
        }
    }

    /// Runs `command` and reads its answer; `None` while Redis is unreachable, when it does not
    /// answer within [`ANSWER_WITHIN`] (a doubt, as for a publish: a busy node reads answers
    /// late), or when it refuses the command (logged).
    pub async fn ask<T: redis::FromRedisValue>(&self, command: &redis::Cmd) -> Option<T> {
        let mut connection = self.connection()?;
        match tokio::time::timeout(ANSWER_WITHIN, command.query_async::<T>(&mut connection)).await {
            Ok(Ok(answer)) => Some(answer),
            Ok(Err(err)) if err.is_timeout() => {
                self.0.health.doubt(&err);
                None
            }
            Ok(Err(err)) if err.is_io_error() || err.is_connection_dropped() => {
                self.0.health.lost(&err);
                None
            }
            Ok(Err(err)) => {
                tracing::warn!(error = %err, "Redis refused a command");
                None
            }
            Err(_) => {
                self.0.health.doubt(&format_args!("a command was not answered within {ANSWER_WITHIN:?}"));
                None
            }
        }
    }

    /// The messages of `channel` from now on, through every reconnection.
    pub async fn listen(&self, channel: String, buffer: usize) -> MessageStream<ChanItem> {
        let (sender, messages) = mpsc::channel(buffer);
        self.0.channels.write().unwrap_or_else(|poisoned| poisoned.into_inner()).insert(channel.clone(), sender);
        // While Redis is away the keeper subscribes when it is back.
        if let Some(mut connection) = self.connection()
            && let Err(err) = within(connection.subscribe(&channel)).await
        {
            self.0.health.lost(&err);
        }
        MessageStream::new(messages)
    }

    /// Makes a new connection, subscribed to every channel this node listens on, makes it the
    /// link's and marks the link up.
    async fn connect(&self) -> anyhow::Result<()> {
        let generation = self.0.health.connection.fetch_add(1, Ordering::SeqCst) + 1;
        let pushes = {
            let (channels, health) = (self.0.channels.clone(), self.0.health.clone());
            move |push: PushInfo| {
                match push.kind {
                    PushKind::Disconnection if health.connection.load(Ordering::SeqCst) == generation => {
                        health.lost(&"the connection closed");
                    }
                    PushKind::Message => hand_on(&channels, push),
                    _ => {}
                }
                Ok::<(), std::convert::Infallible>(())
            }
        };
        let config = AsyncConnectionConfig::new()
            .set_push_sender(pushes)
            .set_connection_timeout(Some(ANSWER_WITHIN))
            .set_response_timeout(Some(ANSWER_WITHIN));
        let mut connection = within(self.0.client.get_multiplexed_async_connection_with_config(&config)).await?;
        let known = self.channels();
        if !known.is_empty() {
            // One call for them all: Redis confirms each channel of a SUBSCRIBE on its own,
            // which only the client's own subscribe expects.
            within(connection.subscribe(known.clone())).await?;
        }
        *self.0.connection.write().unwrap_or_else(|poisoned| poisoned.into_inner()) = Some(connection.clone());
        #[cfg(test)]
        self.pause_for_test().await;
        self.0.health.up.store(true, Ordering::SeqCst);
        // A channel listened to since the list was read found the link down and left its
        // subscription to this connection: `listen` adds to the list before it looks at the
        // link, and this reads the list again after marking it up, so each such channel is
        // subscribed here, by `listen` itself, or by both (which Redis takes as one).
        let missed: Vec<String> = self.channels().into_iter().filter(|channel| !known.contains(channel)).collect();
        if !missed.is_empty()
            && let Err(err) = within(connection.subscribe(missed)).await
        {
            self.0.health.lost(&err);
            return Err(err);
        }
        Ok(())
    }

    /// The channels this node listens on.
    fn channels(&self) -> Vec<String> {
        self.0.channels.read().unwrap_or_else(|poisoned| poisoned.into_inner()).keys().cloned().collect()
    }

    /// Holds this reconnection where a test asked it to, twice at its barrier: once to say it
    /// has subscribed what it knew, once to go on.
    #[cfg(test)]
    async fn pause_for_test(&self) {
        let pause = self.0.pause_before_up.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).take();
        if let Some(pause) = pause {
            pause.wait().await;
            pause.wait().await;
        }
    }

    /// Checks the link every [`CHECK_EVERY`] (at once when the connection is lost or in doubt),
    /// and while Redis is gone connects again with a growing pause; when it answers again, or
    /// answers a doubt, tells the node.
    async fn keep(self) {
        let health = self.0.health.clone();
        let mut retry = RETRY_FIRST;
        let mut lost_at = (!self.is_up()).then(Instant::now);
        // Checks gone unanswered in a row, for a doubt.
        let mut unanswered = 0;
        loop {
            if let Some(mut connection) = self.connection() {
                tokio::select! {
                    () = tokio::time::sleep(CHECK_EVERY) => {}
                    () = health.check_now.notified() => {}
                }
                // A doubt raised while this check was on its way is not answered by it: the
                // publish may have gone after the PING.
                let doubts = health.doubts.load(Ordering::SeqCst);
                let ping = redis::cmd("PING");
                match tokio::time::timeout(ANSWER_WITHIN, ping.query_async::<String>(&mut connection)).await {
                    Ok(Err(err)) if !err.is_timeout() => {
                        unanswered = 0;
                        health.lost(&err);
                    }
                    Ok(Err(_)) | Err(_) => {
                        unanswered += 1;
                        if unanswered >= DOUBT_CHECKS {
                            unanswered = 0;
                            health.lost(&format_args!(
                                "{DOUBT_CHECKS} checks in a row unanswered within {ANSWER_WITHIN:?}"
                            ));
                        } else {
                            health.doubt(&format_args!("a check was not answered within {ANSWER_WITHIN:?}"));
                        }
                    }
                    Ok(Ok(_)) => {
                        unanswered = 0;
                        if health.doubts.load(Ordering::SeqCst) == doubts
                            && health.doubting.swap(false, Ordering::SeqCst)
                        {
                            tracing::warn!("Redis answers: it was slow, not gone; the other nodes catch up");
                            self.0.recoveries.send_modify(|count| *count += 1);
                        }
                    }
                }
                continue;
            }
            unanswered = 0;
            let since = *lost_at.get_or_insert_with(Instant::now);
            tokio::time::sleep(retry).await;
            match self.connect().await {
                Ok(()) => {
                    retry = RETRY_FIRST;
                    lost_at = None;
                    tracing::info!(after = ?since.elapsed(), "Redis answers again; the other nodes catch up");
                    self.0.recoveries.send_modify(|count| *count += 1);
                }
                Err(err) => {
                    tracing::debug!(error = %err, "Redis is still unreachable");
                    retry = (retry * 2).min(RETRY_AT_MOST);
                }
            }
        }
    }
}

/// `question`, answered within [`ANSWER_WITHIN`].
async fn within<T>(question: impl Future<Output = redis::RedisResult<T>>) -> anyhow::Result<T> {
    match tokio::time::timeout(ANSWER_WITHIN, question).await {
        Ok(answer) => answer.map_err(Into::into),
        Err(_) => Err(anyhow::anyhow!("Redis did not answer within {ANSWER_WITHIN:?}")),
    }
}

/// The link's subscriptions arrive as RESP3 push messages; a URL that names no protocol gets
/// RESP3.
pub fn with_resp3(url: &str) -> String {
    if url.contains("protocol=") {
        url.to_owned()
    } else if url.contains('?') {
        format!("{url}&protocol=resp3")
    } else {
        format!("{url}?protocol=resp3")
    }
}

/// Hands a message to its channel's listener. A listener that is this far behind misses it
/// (the push handler must not block the connection).
fn hand_on(channels: &Channels, push: PushInfo) {
    let mut data = push.data.into_iter();
    let (Some(channel), Some(message)) = (data.next(), data.next()) else { return };
    let (Ok(channel), Ok(message)) =
        (redis::from_redis_value::<String>(channel), redis::from_redis_value::<Vec<u8>>(message))
    else {
        tracing::warn!("an unreadable message from Redis");
        return;
    };
    let channels = channels.read().unwrap_or_else(|poisoned| poisoned.into_inner());
    if let Some(listener) = channels.get(&channel)
        && listener.try_send((channel, message)).is_err()
    {
        tracing::warn!("a listener of Redis is too far behind; a message is dropped");
    }
}

/// The link as socketioxide-redis's driver. A publish while Redis is unreachable is dropped
/// and reported as done, not failed: the adapter publishes before it delivers to this node's
/// sockets and gives up at the first error, so failing would keep this node's own watchers in
/// the dark. Whoever sends through the adapter tells a dropped message by [`Link::mark`].
impl Driver for Link {
    type Error = std::convert::Infallible;

    async fn publish(&self, channel: String, message: Vec<u8>) -> Result<(), Self::Error> {
        self.send(channel, message).await;
        Ok(())
    }

    async fn subscribe(&self, channel: String, buffer: usize) -> Result<MessageStream<ChanItem>, Self::Error> {
        Ok(self.listen(channel, buffer).await)
    }

    async fn unsubscribe(&self, channel: String) -> Result<(), Self::Error> {
        self.0.channels.write().unwrap_or_else(|poisoned| poisoned.into_inner()).remove(&channel);
        if let Some(mut connection) = self.connection()
            && let Err(err) = within(connection.unsubscribe(&channel)).await
        {
            tracing::debug!(error = %err, channel, "could not unsubscribe");
        }
        Ok(())
    }

    /// The nodes listening on `channel`; one (this one) while Redis is unreachable, so what
    /// waits for the other nodes' answers does not wait for nobody.
    async fn num_serv(&self, channel: &str) -> Result<u16, Self::Error> {
        let Some(mut connection) = self.connection() else { return Ok(1) };
        let mut command = redis::cmd("PUBSUB");
        command.arg("NUMSUB").arg(channel);
        Ok(within(command.query_async::<(String, u16)>(&mut connection)).await.map_or(1, |(_, count)| count))
    }
}

#[cfg(test)]
mod tests {
    use futures_util::StreamExt;

    use super::*;

    /// The machine's Redis; `None` outside CI when it does not answer.
    async fn test_redis() -> Option<redis::Client> {
        let client = redis::Client::open(with_resp3("redis://127.0.0.1:6379/")).ok()?;
        if within(client.get_multiplexed_async_connection()).await.is_ok() {
            return Some(client);
        }
        assert!(std::env::var_os("CI").is_none(), "Redis must be reachable in CI");
        None
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_channel_listened_to_while_the_link_reconnects_is_subscribed() -> anyhow::Result<()> {
        let Some(client) = test_redis().await else { return Ok(()) };
        let link = Link::start(client.clone()).await?;
        assert!(link.is_up());
        let pause = Arc::new(tokio::sync::Barrier::new(2));
        *link.0.pause_before_up.lock().unwrap_or_else(|poisoned| poisoned.into_inner()) = Some(pause.clone());
        link.0.health.lost(&"the test drops the link");

        // The keeper has reconnected and subscribed the channels it knew, and is not yet up.
        pause.wait().await;
        let channel = format!("floor:test:{}", uuid::Uuid::new_v4());
        let mut messages = link.listen(channel.clone(), 16).await;
        pause.wait().await;

        let deadline = Instant::now() + Duration::from_secs(5);
        while !link.is_up() {
            assert!(Instant::now() < deadline, "the link came back");
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        let mut publisher = client.get_multiplexed_async_connection().await?;
        let heard = async {
            loop {
                let mut publish = redis::cmd("PUBLISH");
                publish.arg(&channel).arg("hello");
                let _: i64 = publish.query_async(&mut publisher).await?;
                if let Ok(Some((_, message))) = tokio::time::timeout(Duration::from_millis(100), messages.next()).await
                {
                    return anyhow::Ok(message);
                }
            }
        };
        let message = tokio::time::timeout(Duration::from_secs(3), heard)
            .await
            .map_err(|_| anyhow::anyhow!("a channel listened to during the reconnection is never subscribed"))??;
        assert_eq!(message, b"hello");
        Ok(())
    }

    /// A `redis-server` of the test's own on a free port, so that pausing it holds up no other
    /// test; `None` outside CI when it is not installed. Killed when dropped.
    struct OwnServer(std::process::Child, u16);

    impl OwnServer {
        async fn start() -> Option<Self> {
            let port = std::net::TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()).ok()?.port();
            let child = std::process::Command::new("redis-server")
                .args(["--bind", "127.0.0.1", "--port", &port.to_string(), "--save", "", "--appendonly", "no"])
                .stdout(std::process::Stdio::null())
                .spawn();
            let Ok(child) = child else {
                assert!(std::env::var_os("CI").is_none(), "redis-server must be installed in CI");
                return None;
            };
            let server = Self(child, port);
            for _ in 0..100 {
                if tokio::net::TcpStream::connect(("127.0.0.1", port)).await.is_ok() {
                    return Some(server);
                }
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            panic!("redis-server did not listen on {port}");
        }

        fn client(&self) -> redis::Client {
            redis::Client::open(with_resp3(&format!("redis://127.0.0.1:{}/", self.1))).expect("a URL")
        }

        /// Holds every client's writes (PUBLISH among them) for `millis`; PING still answers.
        async fn pause_writes(&self, millis: u64) -> anyhow::Result<()> {
            self.pause(millis, "WRITE").await
        }

        /// Holds every client's commands, reads and PING too, for `millis`.
        async fn pause_all(&self, millis: u64) -> anyhow::Result<()> {
            self.pause(millis, "ALL").await
        }

        async fn pause(&self, millis: u64, which: &str) -> anyhow::Result<()> {
            let mut connection = self.client().get_multiplexed_async_connection().await?;
            redis::cmd("CLIENT").arg("PAUSE").arg(millis).arg(which).query_async::<()>(&mut connection).await?;
            Ok(())
        }
    }

    impl Drop for OwnServer {
        fn drop(&mut self) {
            self.0.kill().ok();
            self.0.wait().ok();
        }
    }

    /// Waits for the link's next recovery, at most `within`.
    async fn recovered(link: &Link, recoveries: &mut watch::Receiver<u64>, within: Duration) -> anyhow::Result<()> {
        tokio::time::timeout(within, recoveries.changed())
            .await
            .map_err(|_| anyhow::anyhow!("no recovery within {within:?}; up: {}", link.is_up()))??;
        Ok(())
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_publish_redis_is_slow_to_take_puts_the_link_in_doubt_not_out() -> anyhow::Result<()> {
        let Some(server) = OwnServer::start().await else { return Ok(()) };
        let link = Link::start(server.client()).await?;
        let mut recoveries = link.recoveries();
        let before = link.mark();
        server.pause_writes(900).await?;
        link.send("floor:test:slow".into(), b"one".to_vec()).await;

        assert!(link.is_up(), "a slow publish is no outage");
        assert_eq!(link.outages(), 0);
        assert!(!link.carries(), "in doubt, the link drops what it is given");
        assert!(!link.carried_since(before), "what was sent may not have arrived");
        let during = link.mark();
        link.send("floor:test:slow".into(), b"two".to_vec()).await;
        assert!(!link.carried_since(during), "a message dropped in doubt is not carried");

        recovered(&link, &mut recoveries, Duration::from_secs(5)).await?;
        assert!(link.carries(), "Redis answered the check: the doubt is cleared");
        assert_eq!(link.outages(), 0, "and it was never counted as lost");
        let after = link.mark();
        link.send("floor:test:slow".into(), b"three".to_vec()).await;
        assert!(link.carried_since(after));
        Ok(())
    }

    /// The nodes' release heartbeat asks Redis every second: a busy node reading the answer
    /// late took it for an outage, an ERROR in the rolling restart (2026-11-29).
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_question_redis_is_slow_to_answer_is_a_doubt_not_an_outage() -> anyhow::Result<()> {
        let Some(server) = OwnServer::start().await else { return Ok(()) };
        let link = Link::start(server.client()).await?;
        let mut recoveries = link.recoveries();
        server.pause_all(1_500).await?;
        let answer: Option<(u64, Vec<String>)> = link.ask(redis::cmd("SCAN").arg(0)).await;

        assert_eq!(answer, None, "no answer within {ANSWER_WITHIN:?}");
        assert!(link.is_up(), "a slow answer is no outage");
        assert!(!link.carries(), "in doubt until a check answers");
        recovered(&link, &mut recoveries, Duration::from_secs(5)).await?;
        assert!(link.carries(), "Redis answered the check: the doubt is cleared");
        assert_eq!(link.outages(), 0, "and it was never counted as lost");
        Ok(())
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_doubt_the_checks_cannot_clear_is_an_outage_and_heals_when_redis_answers() -> anyhow::Result<()> {
        let Some(server) = OwnServer::start().await else { return Ok(()) };
        let link = Link::start(server.client()).await?;
        let mut recoveries = link.recoveries();
        // The checks' PINGs wait behind the held publish on the same connection.
        server.pause_writes(6_000).await?;
        link.send("floor:test:frozen".into(), b"one".to_vec()).await;
        assert!(!link.carries());

        let deadline = Instant::now() + Duration::from_secs(6);
        while link.outages() == 0 {
            assert!(Instant::now() < deadline, "checks that go unanswered make the doubt an outage");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        assert!(!link.is_up());
        recovered(&link, &mut recoveries, Duration::from_secs(10)).await?;
        assert!(link.carries(), "the link is back once Redis answers");
        Ok(())
    }
}
