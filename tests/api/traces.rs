//! Traces across nodes: a press taken by the node that does not run its tournament is one
//! trace from its request (linked to the client's `traceparent`) through the hand-over to the
//! owner, its actor, its transaction and the fan-out to the watchers; and the nodes' log lines
//! carry the trace. Floor decides what it traces: a client's `traceparent` neither forces a
//! trace nor is continued unless the operator trusts its caller, and no secret of a path
//! reaches a span or a log line.

use std::path::Path;
use std::time::Duration;

use serde_json::{Value, json};
use uuid::Uuid;

use crate::fake_collector::{Collector, Span, SpanKind};
use crate::helpers::{Backend, spawn_app_with, test_redis_url};
use crate::live::ready;
use crate::live::version;
use crate::nodes::{Node, live_actors, press, send_press_with};

// What the server's spans are called and carry. Kept together so that renaming a span in
// src/ is one change here.
/// The press, as the `http.route` of its server span on the node that takes it.
const PRESS_ROUTE: &str = "/api/v1/tournaments/{id}/pause";
/// The hand-over, as the `http.route` of its server span on the owner.
const INTERNAL_ROUTE: &str = "/internal/live/{id}";
/// The client side of the hand-over, on the node that took the press.
const FORWARD_SPAN: &str = "live.forward";
/// The command's wait for its turn at the owner's actor.
const QUEUE_SPAN: &str = "live.queue";
/// The actor running the command.
const COMMAND_SPAN: &str = "live.command";
/// The command's database transaction.
const TRANSACTION_SPAN: &str = "live.transaction";
/// How the names of the database's statement spans begin.
const STATEMENT_SPAN_PREFIX: &str = "sea_orm.";
/// The new state sent to the watchers.
const FANOUT_SPAN: &str = "live.fanout";
const ROUTE: &str = "http.route";
const STATEMENT: &str = "db.statement";
const TOURNAMENT_ID: &str = "tournament_id";
const VERSION: &str = "version";
const SOCKETS: &str = "sockets";
/// The keys of a JSON log line that join it to its span.
const LOG_TRACE_ID: &str = "trace_id";
const LOG_SPAN_ID: &str = "span_id";
/// What both nodes run with besides the collector's endpoint: batches every 200 ms rather
/// than 5 s, JSON log lines, and the log filter (which spans are exported does not follow it).
const NODE_ENV: [(&str, &str); 3] = [("OTEL_BSP_SCHEDULE_DELAY", "200"), ("LOG_FORMAT", "json"), ("RUST_LOG", "info")];
/// The longest a test waits for spans or log lines: several batches, on a slow CI machine.
const WAIT: Duration = Duration::from_secs(20);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_press_on_the_node_that_does_not_own_the_tournament_is_one_trace_across_both() {
    let Some(redis) = test_redis_url().await else { return };
    let collector = Collector::start().await;
    let Some(setup) = spawn_app_with(Backend::Postgres, &[]).await else { return };
    let game = ready(&setup, "+79990009700", 970, 2).await;
    let logs = tempfile::tempdir().expect("a folder for the logs");
    let mut env = vec![("OTEL_EXPORTER_OTLP_ENDPOINT", collector.endpoint.as_str())];
    env.extend(NODE_ENV);
    let first = Node::start_with(&setup.database_url, Some(redis), logs.path(), "first", &env).await;
    let second = Node::start_with(&setup.database_url, Some(redis), logs.path(), "second", &env).await;
    let client = reqwest::Client::new();
    let (status, started) = press(&client, &first, &game, &game.path("start"), json!({}), "start").await.expect("sent");
    assert_eq!(status, 200, "{started}");
    assert_eq!(live_actors(&client, &first).await, Some(1.0), "the first node runs the tournament");

    // The client's own trace: the press begins a trace of Floor's own, linked to it.
    let (client_trace_id, client_span_id, traceparent) = client_trace(true);
    let headers = [("traceparent", traceparent.as_str())];
    let paused = send_press_with(&client, &second, &game, &game.path("pause"), json!({}), "pause", &headers)
        .await
        .expect("sent");
    assert_eq!(paused.status, 200, "{}", paused.body);
    let answered = version(&paused.body).to_string();
    let tournament_id = game.id.to_string();

    // First the press's own span, then the rest of its trace (the fan-out may end after the
    // answer, and each node sends its batches on its own).
    eprintln!("waiting for a span linked to the client's span {client_span_id} (trace {client_trace_id})");
    let linked = |span: &Span| span.links_to(&client_trace_id, &client_span_id);
    let spans = collector.spans_until(WAIT, |spans| spans.iter().any(linked)).await;
    let trace_id = one(&spans, "the span linked to the client's", linked).trace_id.clone();
    assert_ne!(trace_id, client_trace_id, "the client's trace is not continued");
    eprintln!("waiting for the rest of trace {trace_id}");
    let spans = collector.spans_until(WAIT, |spans| whole_trace_arrived(&of_trace(spans, &trace_id))).await;
    let spans = of_trace(&spans, &trace_id);
    let names: Vec<&str> = spans.iter().map(|span| span.name.as_str()).collect();
    eprintln!("the press's trace:\n{}", crate::fake_collector::tree(&spans));

    let request = one(&spans, "the press's request span", linked);
    assert!(request.parent_span_id.is_empty(), "the request begins Floor's trace: {request}");
    assert_eq!(request.kind, SpanKind::Server, "{request}");
    assert_eq!(request.attribute(ROUTE), Some(PRESS_ROUTE), "{request}");
    assert_eq!(request.name, format!("POST {PRESS_ROUTE}"), "named by its route: {request}");
    assert_eq!(request.instance(), Some(second.base.as_str()), "taken by the second node: {request}");

    let forward = one(&spans, FORWARD_SPAN, |span| span.name == FORWARD_SPAN);
    assert_eq!(forward.kind, SpanKind::Client, "{forward}");
    assert_eq!(forward.instance(), Some(second.base.as_str()), "{forward}");
    assert!(is_descendant(&spans, forward, request), "{FORWARD_SPAN} under the press's request: {names:?}");
    assert!(
        request.start_nanos <= forward.start_nanos && forward.end_nanos <= request.end_nanos,
        "the hand-over within the press's request: {request} / {forward}"
    );

    let internal = one(&spans, "the hand-over's request span", |span| span.attribute(ROUTE) == Some(INTERNAL_ROUTE));
    assert_eq!(internal.kind, SpanKind::Server, "{internal}");
    assert_eq!(internal.instance(), Some(first.base.as_str()), "taken by the owner: {internal}");
    assert_ne!(internal.instance(), request.instance(), "the two request spans come from two nodes");
    assert!(is_descendant(&spans, internal, forward), "the hand-over's request under {FORWARD_SPAN}: {names:?}");

    let queue = one(&spans, QUEUE_SPAN, |span| span.name == QUEUE_SPAN);
    let command = one(&spans, COMMAND_SPAN, |span| span.name == COMMAND_SPAN);
    for span in [queue, command] {
        assert_eq!(span.instance(), Some(first.base.as_str()), "on the owner: {span}");
        assert!(is_descendant(&spans, span, internal), "{} under the hand-over's request: {names:?}", span.name);
        assert_eq!(span.attribute(TOURNAMENT_ID), Some(tournament_id.as_str()), "{span}");
    }
    assert_eq!(command.attribute(VERSION), Some(answered.as_str()), "the version the press answered: {command}");

    let transaction = one(&spans, TRANSACTION_SPAN, |span| span.name == TRANSACTION_SPAN);
    assert!(is_descendant(&spans, transaction, command), "{TRANSACTION_SPAN} under {COMMAND_SPAN}: {names:?}");
    // Statement spans only: a span of the transaction itself (begin, commit) has no SQL.
    let statements: Vec<(&Span, &str)> = spans
        .iter()
        .filter(|span| span.name.starts_with(STATEMENT_SPAN_PREFIX) && is_descendant(&spans, span, transaction))
        .filter_map(|span| Some((span, span.attribute(STATEMENT)?)))
        .collect();
    assert!(
        !statements.is_empty(),
        "no {STATEMENT_SPAN_PREFIX}* span with {STATEMENT} under {TRANSACTION_SPAN}: {names:?}"
    );
    for (span, sql) in statements {
        let words = sql.to_ascii_uppercase();
        assert!(["SELECT", "INSERT", "UPDATE", "DELETE"].iter().any(|verb| words.contains(verb)), "not SQL: {span}");
        // Bound parameters only: a value in a statement would leak players' data into traces.
        assert!(!sql.contains(&tournament_id), "the tournament's id is a literal of the statement: {span}");
    }

    let fanout = one(&spans, FANOUT_SPAN, |span| span.name == FANOUT_SPAN);
    assert!(is_descendant(&spans, fanout, command), "{FANOUT_SPAN} under {COMMAND_SPAN}: {names:?}");
    assert_eq!(fanout.attribute(VERSION), Some(answered.as_str()), "{fanout}");
    let sockets = fanout.attribute(SOCKETS).and_then(|count| count.parse::<i64>().ok());
    assert!(sockets.is_some_and(|count| count >= 0), "a count of sockets: {fanout}");

    for span in [request, forward, internal, queue, command, transaction, fanout] {
        assert_eq!(span.trace_id, trace_id, "one trace: {span}");
    }

    // Logs joined to traces: a line of the press, on either node, names the trace and a span.
    let line = logged_line_of_trace(logs.path(), &["first", "second"], &trace_id).await;
    let span_id = span_id_beside(&line, &trace_id).unwrap_or_default();
    assert!(span_id.len() == 16 && span_id.bytes().all(|byte| byte.is_ascii_hexdigit()), "a span id: {line}");
}

/// Two nodes that keep no trace of their own (`parentbased_traceidratio` at 0): one trusts the
/// test's address as a caller, the other does not. Requests carrying a sampled `traceparent`
/// are traced on the first, as its caller decided, and on the second not at all.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_cannot_make_a_node_trace_its_requests_unless_the_node_trusts_it() {
    let collector = Collector::start().await;
    let Some(setup) = spawn_app_with(Backend::Postgres, &[]).await else { return };
    let logs = tempfile::tempdir().expect("a folder for the logs");
    let mut env = vec![
        ("OTEL_EXPORTER_OTLP_ENDPOINT", collector.endpoint.as_str()),
        ("OTEL_TRACES_SAMPLER", "parentbased_traceidratio"),
        ("OTEL_TRACES_SAMPLER_ARG", "0"),
    ];
    env.extend(NODE_ENV);
    let untrusting = Node::start_with(&setup.database_url, None, logs.path(), "untrusting", &env).await;
    env.push(("TRACE_TRUSTED_CALLERS", "127.0.0.1/32, ::1"));
    let trusting = Node::start_with(&setup.database_url, None, logs.path(), "trusting", &env).await;
    let client = reqwest::Client::new();
    let mut forced = Vec::new();
    let mut followed = Vec::new();
    for (node, sent) in [(&untrusting, &mut forced), (&trusting, &mut followed)] {
        for _ in 0..10 {
            let (trace_id, span_id, traceparent) = client_trace(true);
            let answer = client.get(node.url("/cities")).header("traceparent", traceparent).send().await;
            assert_eq!(answer.expect("an answer").status(), 200);
            sent.push((trace_id, span_id));
        }
    }

    // The trusting node's spans arrive, each continuing its caller's span.
    let continued = |spans: &[Span]| {
        followed.iter().all(|(trace_id, span_id)| {
            spans.iter().any(|span| span.trace_id == *trace_id && span.parent_span_id == *span_id)
        })
    };
    collector.spans_until(WAIT, continued).await;
    // Several of the untrusting node's batches later, nothing of it has come.
    tokio::time::sleep(Duration::from_secs(2)).await;
    let spans = collector.spans();
    let from_untrusting: Vec<&Span> =
        spans.iter().filter(|span| span.instance() == Some(untrusting.base.as_str())).collect();
    assert!(from_untrusting.is_empty(), "a client forced {} spans: {:?}", from_untrusting.len(), from_untrusting);
    assert!(
        forced.iter().all(|(trace_id, _)| spans.iter().all(|span| span.trace_id != *trace_id)),
        "no span of a forced trace"
    );
}

/// A calendar feed fetched from a node that keeps every trace and writes every request's log
/// line: the feed's secret is in no exported span and no log line, while both show the
/// request.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_calendar_feed_s_secret_reaches_neither_a_trace_nor_a_log_line() {
    let collector = Collector::start().await;
    let Some(setup) = spawn_app_with(Backend::Postgres, &[]).await else { return };
    let player = setup.sign_in("+79990009801").await;
    let link = setup.post("/me/calendar-link", Some(&player.access_token), json!({})).await;
    let url = link.assert_ok()["url"].as_str().expect("the feed's address").to_owned();
    let path = url.split_once("/calendar/").map(|(_, file)| format!("/calendar/{file}")).expect("a feed path");
    let secret = path.trim_start_matches("/calendar/").trim_end_matches(".ics").to_owned();
    assert!(secret.len() >= 32, "{path}");
    let logs = tempfile::tempdir().expect("a folder for the logs");
    let env = [
        ("OTEL_EXPORTER_OTLP_ENDPOINT", collector.endpoint.as_str()),
        ("OTEL_BSP_SCHEDULE_DELAY", "200"),
        ("LOG_FORMAT", "json"),
        // tower-http's line for every answer, with the request's span and its fields.
        ("RUST_LOG", "info,tower_http=debug"),
    ];
    let node = Node::start_with(&setup.database_url, None, logs.path(), "node", &env).await;
    let client = reqwest::Client::new();
    let feed = client.get(format!("{}{path}", node.base)).send().await.expect("the feed");
    assert_eq!(feed.status(), 200);
    // An address no route takes, still holding the secret: a mistyped or probed link.
    let stray = client.get(format!("{}{path}/x?secret={secret}", node.base)).send().await.expect("an answer");
    assert_eq!(stray.status(), 404);

    let shown = "/calendar/{secret}.ics";
    let arrived = |spans: &[Span]| {
        spans.iter().filter(|span| span.attribute("path").is_some_and(|path| path.starts_with(shown))).count() >= 2
    };
    let spans = collector.spans_until(WAIT, arrived).await;
    for span in &spans {
        let text = format!("{span} {:?} {:?}", span.attributes, span.links);
        assert!(!text.contains(&secret), "the secret in an exported span: {text}");
    }
    let log = std::fs::read_to_string(logs.path().join("node.log")).expect("the node's log");
    assert!(log.contains(shown), "the request is in the log, its secret hidden");
    assert!(!log.contains(&secret), "the secret in the log");
}

/// A client's trace as an instrumented app would send it: its trace id, its span's id and the
/// `traceparent` naming them, `sampled` or not.
fn client_trace(sampled: bool) -> (String, String, String) {
    let trace_id = Uuid::new_v4().simple().to_string();
    let span_id = Uuid::new_v4().simple().to_string()[..16].to_owned();
    let flags = if sampled { "01" } else { "00" };
    let traceparent = format!("00-{trace_id}-{span_id}-{flags}");
    (trace_id, span_id, traceparent)
}

/// The spans of one trace.
fn of_trace(spans: &[Span], trace_id: &str) -> Vec<Span> {
    spans.iter().filter(|span| span.trace_id == trace_id).cloned().collect()
}

/// Whether every span the test looks at has arrived; what is missing shows in the collector's
/// dump when they never do.
fn whole_trace_arrived(spans: &[Span]) -> bool {
    let named = |name: &str| spans.iter().any(|span| span.name == name);
    [FORWARD_SPAN, QUEUE_SPAN, COMMAND_SPAN, TRANSACTION_SPAN, FANOUT_SPAN].into_iter().all(named)
        && spans.iter().any(|span| span.attribute(ROUTE) == Some(INTERNAL_ROUTE))
        && spans.iter().any(|span| span.name.starts_with(STATEMENT_SPAN_PREFIX))
}

/// The one span that `is_it`, with every span's name when there is none or several.
fn one<'a>(spans: &'a [Span], what: &str, is_it: impl Fn(&Span) -> bool) -> &'a Span {
    let found: Vec<&Span> = spans.iter().filter(|span| is_it(span)).collect();
    let names: Vec<&str> = spans.iter().map(|span| span.name.as_str()).collect();
    match found[..] {
        [span] => span,
        [] => panic!("no {what} in the trace; its spans: {names:?}"),
        _ => panic!("{} spans taken for {what}; the trace's spans: {names:?}", found.len()),
    }
}

/// Whether `ancestor` is `child`'s parent, or its parent's, and so on up the parent links.
fn is_descendant(spans: &[Span], child: &Span, ancestor: &Span) -> bool {
    let mut parent = child.parent_span_id.as_str();
    // A trace is a tree; the bound only keeps a malformed one from looping.
    for _ in 0..spans.len() {
        if parent == ancestor.span_id {
            return true;
        }
        match spans.iter().find(|span| span.span_id == parent) {
            Some(span) => parent = span.parent_span_id.as_str(),
            // The parent is not here: the client's span, or the root.
            None => return false,
        }
    }
    false
}

/// The first JSON line of the nodes' logs that holds `"trace_id": trace_id` (at its top level
/// or inside one of its objects); panics after [`WAIT`] with each log's last lines.
async fn logged_line_of_trace(logs: &Path, nodes: &[&str], trace_id: &str) -> Value {
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        let mut tails = String::new();
        for node in nodes {
            let text = std::fs::read_to_string(logs.join(format!("{node}.log"))).expect("the node's log");
            let found = text
                .lines()
                .filter_map(|line| serde_json::from_str::<Value>(line).ok())
                .find(|line| span_id_beside(line, trace_id).is_some());
            if let Some(line) = found {
                return line;
            }
            let lines: Vec<&str> = text.lines().collect();
            let tail = lines[lines.len().saturating_sub(10)..].join("\n");
            tails.push_str(&format!("--- {node}.log, last lines:\n{tail}\n"));
        }
        assert!(tokio::time::Instant::now() < deadline, "no JSON log line with {LOG_TRACE_ID} {trace_id}\n{tails}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// The `span_id` of the object in `line` whose `trace_id` is `trace_id`, however deep.
fn span_id_beside(line: &Value, trace_id: &str) -> Option<String> {
    let Value::Object(fields) = line else { return None };
    if fields.get(LOG_TRACE_ID).and_then(Value::as_str) == Some(trace_id) {
        return Some(fields.get(LOG_SPAN_ID).and_then(Value::as_str).unwrap_or_default().to_owned());
    }
    fields.values().find_map(|inner| span_id_beside(inner, trace_id))
}
