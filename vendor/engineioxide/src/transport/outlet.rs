//! PATCH (floor): a message written to its WebSocket by the task that sends it.
//!
//! Upstream, every message goes through the socket's channel to the socket's writer task. A
//! broadcast to 10,000 sockets woke 10,000 tasks, and each took its message from its channel,
//! framed it and wrote it, with the scheduler's and the channel's work around every write: a
//! quarter of the fan-out's CPU was in user space, most of it there, and the two workers woke
//! each other about 900 times per broadcast (a `perf` profile, 2026-11-29).
//!
//! Here a message is written at once by the task that sends it (a broadcast's one task, socket
//! after socket, as Node's socket.io does), when nothing is before it: the channel holds
//! nothing, the writer's task holds nothing, and the connection took the last bytes whole. In
//! any other case, or when its frame is not ready (a compression under way), it goes through
//! the channel as before. What the connection does not take at once stays in tungstenite's
//! buffer, and the writer's task is woken to write it, with its own waker, before anything
//! else; until then every message goes through the channel, so none overtakes another.

use std::future::{Future, poll_fn};
use std::sync::Mutex;
use std::task::{Context, Poll, Waker};

use engineioxide_core::{Packet, Str};
use futures_util::{SinkExt, stream::SplitSink};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::mpsc::Receiver;
use tokio_tungstenite::{WebSocketStream, tungstenite::Message};

use super::frames::{self, Framing};
use crate::socket::Queued;

/// Where a sender writes a message at once when it can (see the module's text).
pub(crate) trait Outlet: Send + Sync {
    /// Writes engine.io's message packet of `message` now, if nothing is before it. `false`:
    /// it was not written, and goes through the channel. The caller has seen the channel empty.
    fn write_now(&self, message: &Str) -> bool;
}

/// The writing half of a WebSocket, shared by its writer's task and the senders.
pub(crate) struct WsOutlet<S> {
    state: Mutex<State<S>>,
}

struct State<S> {
    /// `None` once the writer's task closed it.
    sink: Option<SplitSink<WebSocketStream<S>, Message>>,
    framing: Framing,
    /// The writer's task has the sink: it holds packets it took from the channel and has not
    /// written whole yet, or a direct write left bytes that it must write.
    writer_owns: bool,
    /// The writer's task, while it waits for work.
    writer: Option<Waker>,
}

impl<S> WsOutlet<S>
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    pub(crate) fn new(sink: SplitSink<WebSocketStream<S>, Message>, framing: Framing) -> Self {
        let state = State { sink: Some(sink), framing, writer_owns: false, writer: None };
        Self { state: Mutex::new(state) }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State<S>> {
        self.state.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// The writer's task: waits for the channel's next packets, first writing what a direct
    /// write left. They are taken under the lock, so from then on, until [`Self::flush`] is
    /// done, no sender writes before them.
    pub(crate) async fn take(&self, rx: &mut Receiver<Queued>) -> Option<Queued> {
        poll_fn(|cx| {
            let mut state = self.lock();
            if state.writer_owns {
                std::task::ready!(state.poll_flush(cx));
            }
            match rx.poll_recv(cx) {
                Poll::Ready(packets) => {
                    state.writer_owns = packets.is_some();
                    Poll::Ready(packets)
                }
                Poll::Pending => {
                    state.writer = Some(cx.waker().clone());
                    Poll::Pending
                }
            }
        })
        .await
    }

    /// The writer's task takes the sink for packets it got elsewhere (a volatile message).
    pub(crate) fn own(&self) {
        self.lock().writer_owns = true;
    }

    /// The writer's task hands `message` to the sink.
    pub(crate) async fn feed(&self, message: Message) {
        let mut message = Some(message);
        poll_fn(|cx| {
            let mut state = self.lock();
            let Some(sink) = state.sink.as_mut() else { return Poll::Ready(()) };
            if let Err(_e) = std::task::ready!(sink.poll_ready_unpin(cx)) {
                #[cfg(feature = "tracing")]
                tracing::debug!("error sending packet: {}", _e);
                return Poll::Ready(());
            }
            if let Some(message) = message.take() {
                if let Err(_e) = sink.start_send_unpin(message) {
                    #[cfg(feature = "tracing")]
                    tracing::debug!("error sending packet: {}", _e);
                }
            }
            Poll::Ready(())
        })
        .await
    }

    /// The writer's task writes everything handed over; then senders may write directly again.
    pub(crate) async fn flush(&self) {
        poll_fn(|cx| self.lock().poll_flush(cx)).await
    }

    /// The writer's task ends: the connection's writing half is taken away from the senders
    /// (they go through the channel from now on, and nobody reads it), written out, closed
    /// and dropped.
    pub(crate) async fn close(&self) {
        let sink = self.lock().sink.take();
        if let Some(mut sink) = sink {
            sink.flush().await.ok();
            sink.close().await.ok();
        }
    }
}

impl<S> State<S>
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    /// Writes what the sink holds; the sink is nobody's once it is written.
    fn poll_flush(&mut self, cx: &mut Context<'_>) -> Poll<()> {
        if let Some(sink) = self.sink.as_mut() {
            // An error ends the connection: the reading half sees it and closes the session.
            let _ = std::task::ready!(sink.poll_flush_unpin(cx));
        }
        self.writer_owns = false;
        Poll::Ready(())
    }
}

impl<S> Outlet for WsOutlet<S>
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    fn write_now(&self, message: &Str) -> bool {
        // A writer's task or another sender at work: through the channel.
        let Ok(mut state) = self.state.try_lock() else { return false };
        if state.writer_owns {
            return false;
        }
        let message = if message.len() >= frames::THRESHOLD {
            match state.framing.frame_now(message) {
                Some(frame) => Message::Frame(frame),
                None => return false,
            }
        } else {
            Message::Text(String::from(Packet::Message(message.clone())).into())
        };
        let State { sink, writer_owns, writer, .. } = &mut *state;
        let Some(sink) = sink.as_mut() else { return false };
        // No task waits on this write: what is left of it goes to the writer's task below.
        let mut cx = Context::from_waker(Waker::noop());
        // Outside tokio's budget of operations per task turn: a broadcast's one task writes to
        // every socket in one turn, and past the budget (128) each write would come back
        // pending, its frame copied into the connection's buffer for the writer's task.
        let mut message = Some(message);
        let mut write = std::pin::pin!(tokio::task::unconstrained(poll_fn(|cx| {
            let Some(message) = message.take() else { return Poll::Ready(None) };
            match sink.poll_ready_unpin(cx) {
                Poll::Ready(Ok(())) => {}
                Poll::Ready(Err(_)) | Poll::Pending => return Poll::Ready(None),
            }
            if sink.start_send_unpin(message).is_err() {
                // The connection is broken: its reading half closes the session.
                return Poll::Ready(Some(true));
            }
            Poll::Ready(Some(sink.poll_flush_unpin(cx).is_ready()))
        })));
        let written = match write.as_mut().poll(&mut cx) {
            Poll::Ready(written) => written,
            Poll::Pending => None,
        };
        match written {
            None => false,
            Some(whole) => {
                if !whole {
                    *writer_owns = true;
                    if let Some(writer) = writer.take() {
                        writer.wake();
                    }
                }
                true
            }
        }
    }
}
