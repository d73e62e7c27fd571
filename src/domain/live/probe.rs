//! Whether a node that is slow to answer a call is frozen or merely busy: a look at its
//! liveness (`GET /api/v1/health`, answered by the process whatever its database does). A
//! command may rightly keep a healthy owner for seconds (a lock wait, a slow disk), and an
//! owner taken for frozen is handed nothing for a lease's length; so before this node shuns an
//! owner it asks whether that node answers anything at all. A frozen node (a stalled host, a
//! paused VM) still accepts the connection in its kernel and answers nothing: it is the only
//! one found [`Liveness::Silent`], after [`SILENT_LOOKS`] looks in a row got no answer (a
//! healthy node starved of CPU for a second is not taken for frozen).
//!
//! What a look finds is kept a moment and shared: a burst of presses waiting on one owner
//! looks once, and the ones that ask while a look is under way wait for it instead of looking
//! again.

use std::time::Duration;

use moka::future::Cache;

/// What a look asks a node for: the API's health, which answers whenever its process runs
/// (the HTTP layer's test holds it to the route it serves).
pub const LIVENESS_PATH: &str = "/api/v1/health";
/// The longest a look waits for any answer: a healthy node answers its liveness in
/// milliseconds, however busy its tournaments' actors are.
const LOOK_WITHIN: Duration = Duration::from_secs(1);
/// How many looks in a row must get no answer before a node is taken for frozen.
const SILENT_LOOKS: usize = 2;
/// How long what a look found stands.
pub const FOUND_FOR: Duration = Duration::from_millis(500);
/// The most nodes remembered at once (a deployment has a handful).
const REMEMBERED: u64 = 256;

/// What a look at a node found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Liveness {
    /// It answered (whatever it answered): its process runs.
    Answers,
    /// It took the connection, or did not take it, and said nothing in time: frozen, or out of
    /// reach behind a partition.
    Silent,
    /// It refused the connection or broke it: dead, which a call to it finds out by itself.
    Gone,
}

/// Looks at the nodes' liveness.
pub struct Probes {
    client: reqwest::Client,
    found: Cache<String, Liveness>,
}

impl Probes {
    pub fn new(client: reqwest::Client) -> Self {
        Self { client, found: Cache::builder().max_capacity(REMEMBERED).time_to_live(FOUND_FOR).build() }
    }

    /// Whether the node at `node` (its `NODE_URL`) answers: what a look found within
    /// [`FOUND_FOR`], or a new look, shared by every caller that asks while it is under way.
    pub async fn liveness(&self, node: &str) -> Liveness {
        self.found.get_with_by_ref(node, look(&self.client, node)).await
    }
}

/// [`SILENT_LOOKS`] looks in a row, or fewer when one gets an answer or a refusal.
async fn look(client: &reqwest::Client, node: &str) -> Liveness {
    for _ in 1..SILENT_LOOKS {
        let found = look_once(client, node).await;
        if found != Liveness::Silent {
            return found;
        }
    }
    look_once(client, node).await
}

async fn look_once(client: &reqwest::Client, node: &str) -> Liveness {
    let span = tracing::info_span!("live.probe", otel.kind = "client", node);
    let answer = client.get(format!("{node}{LIVENESS_PATH}")).timeout(LOOK_WITHIN).send();
    found(tracing::Instrument::instrument(answer, span).await)
}

/// What an answer to a look says: any answer at all (even a refusal) is a live process.
fn found(answer: reqwest::Result<reqwest::Response>) -> Liveness {
    match answer {
        Ok(_) => Liveness::Answers,
        Err(err) if err.is_timeout() => Liveness::Silent,
        Err(_) => Liveness::Gone,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
    use tokio::net::TcpListener;

    /// A node that accepts connections and answers each with `answer`, or never answers (as a
    /// frozen one does) when it is empty.
    async fn node(answer: &'static [u8]) -> (String, tokio::task::JoinHandle<()>) {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("a port");
        let url = format!("http://{}", listener.local_addr().expect("an address"));
        let held = tokio::spawn(async move {
            let mut taken = Vec::new();
            while let Ok((mut stream, _)) = listener.accept().await {
                let mut buffer = [0; 1024];
                let _ = stream.read(&mut buffer).await;
                let _ = stream.write_all(answer).await;
                taken.push(stream);
            }
        });
        (url, held)
    }

    async fn frozen_node() -> (String, tokio::task::JoinHandle<()>) {
        node(b"").await
    }

    #[tokio::test]
    async fn any_answer_is_a_live_node_silence_a_frozen_one_and_a_closed_port_a_dead_one() {
        let probes = Probes::new(reqwest::Client::new());
        // Any answer is a live process, a refusal included.
        let (busy, answering) = node(b"HTTP/1.1 503 Service Unavailable\r\ncontent-length: 0\r\n\r\n").await;
        assert_eq!(probes.liveness(&busy).await, Liveness::Answers);
        answering.abort();

        let (frozen, held) = frozen_node().await;
        let started = tokio::time::Instant::now();
        assert_eq!(probes.liveness(&frozen).await, Liveness::Silent);
        assert!(started.elapsed() >= LOOK_WITHIN * 2, "it looked twice, waiting its while each time");

        let closed = TcpListener::bind("127.0.0.1:0").await.expect("a port");
        let gone = format!("http://{}", closed.local_addr().expect("an address"));
        drop(closed);
        assert_eq!(probes.liveness(&gone).await, Liveness::Gone);
        held.abort();
    }

    #[tokio::test]
    async fn callers_that_ask_together_share_one_look_and_its_finding_stands_a_moment() {
        let probes = Probes::new(reqwest::Client::new());
        let (frozen, held) = frozen_node().await;
        let started = tokio::time::Instant::now();
        let together = futures_util::future::join_all((0..8).map(|_| probes.liveness(&frozen))).await;
        assert!(together.iter().all(|found| *found == Liveness::Silent), "{together:?}");
        assert!(started.elapsed() < LOOK_WITHIN * 3, "one look for all: {:?}", started.elapsed());
        let again = tokio::time::Instant::now();
        assert_eq!(probes.liveness(&frozen).await, Liveness::Silent);
        assert!(again.elapsed() < LOOK_WITHIN / 2, "kept, not looked again");
        held.abort();
    }
}
