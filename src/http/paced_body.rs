//! A request body that must keep up a minimum rate: after a grace period (the header
//! timeout), the bytes received must average at least `HTTP_BODY_MIN_RATE` a second, else the
//! body ends in [`TooSlow`] and the request is answered `408 REQUEST_TIMEOUT`. A client that
//! announces 100 MB and sends 8 bytes, or a byte every five seconds, is cut at the end of the
//! grace; an avatar over a poor mobile link is not.

use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use axum::body::Bytes;
use http_body::{Body, Frame, SizeHint};
use tokio::time::{Instant, Sleep};

/// Why a body ended early: it came slower than the minimum rate.
#[derive(Debug, thiserror::Error)]
#[error("the request body came slower than {min_rate} bytes a second")]
pub struct TooSlow {
    pub min_rate: u32,
}

/// A body read under [`deadline`].
pub struct PacedBody<B> {
    inner: B,
    started: Instant,
    grace: Duration,
    min_rate: u32,
    received: u64,
    /// Armed at the deadline of what was received so far; `None` until the first poll.
    timer: Option<Pin<Box<Sleep>>>,
}

impl<B> PacedBody<B> {
    pub fn new(inner: B, grace: Duration, min_rate: u32) -> Self {
        Self { inner, started: Instant::now(), grace, min_rate, received: 0, timer: None }
    }
}

/// When a body that began at `started` and has `received` bytes so far must have sent more.
pub fn deadline(started: Instant, grace: Duration, min_rate: u32, received: u64) -> Instant {
    let earned = Duration::from_secs_f64(received as f64 / f64::from(min_rate.max(1)));
    started + grace.saturating_add(earned)
}

impl<B> Body for PacedBody<B>
where
    B: Body<Data = Bytes> + Unpin,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    type Data = Bytes;
    type Error = Box<dyn std::error::Error + Send + Sync>;

    fn poll_frame(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        let this = &mut *self;
        match Pin::new(&mut this.inner).poll_frame(cx) {
            Poll::Ready(Some(Ok(frame))) => {
                if let Some(data) = frame.data_ref() {
                    this.received = this.received.saturating_add(data.len() as u64);
                    let next = deadline(this.started, this.grace, this.min_rate, this.received);
                    if let Some(timer) = this.timer.as_mut() {
                        timer.as_mut().reset(next);
                    }
                }
                Poll::Ready(Some(Ok(frame)))
            }
            Poll::Ready(Some(Err(err))) => Poll::Ready(Some(Err(err.into()))),
            Poll::Ready(None) => Poll::Ready(None),
            Poll::Pending => {
                let (started, grace, min_rate, received) = (this.started, this.grace, this.min_rate, this.received);
                let timer = this.timer.get_or_insert_with(|| {
                    Box::pin(tokio::time::sleep_until(deadline(started, grace, min_rate, received)))
                });
                match timer.as_mut().poll(cx) {
                    Poll::Ready(()) => Poll::Ready(Some(Err(Box::new(TooSlow { min_rate })))),
                    Poll::Pending => Poll::Pending,
                }
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

/// Whether a body read failed because it came too slowly: the cause travels boxed inside
/// axum's and hyper's errors, so the chain of sources is searched.
pub fn came_too_slowly(err: &(dyn std::error::Error + 'static)) -> bool {
    let mut cause = Some(err);
    while let Some(err) = cause {
        if err.is::<TooSlow>() {
            return true;
        }
        cause = err.source();
    }
    false
}

/// The answer to a request whose body came too slowly.
pub fn request_timeout() -> crate::infra::error::AppError {
    crate::infra::error::AppError::new(
        crate::infra::error::ErrorCode::RequestTimeout,
        "the request body came too slowly; send it again on a better connection",
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_deadline_moves_by_one_second_per_min_rate_bytes() {
        let started = Instant::now();
        let grace = Duration::from_secs(10);
        assert_eq!(deadline(started, grace, 1024, 0), started + grace);
        assert_eq!(deadline(started, grace, 1024, 2048), started + Duration::from_secs(12));
        assert_eq!(deadline(started, grace, 0, 5), started + Duration::from_secs(15), "a rate of 0 counts as 1");
    }

    /// A body of `chunks` bytes each, one every `every`.
    fn trickle(chunks: usize, bytes: usize, every: Duration) -> axum::body::Body {
        let stream = futures_util::stream::unfold(0, move |sent| async move {
            if sent == chunks {
                return None;
            }
            tokio::time::sleep(every).await;
            Some((Ok::<_, std::io::Error>(Bytes::from(vec![b'x'; bytes])), sent + 1))
        });
        axum::body::Body::from_stream(stream)
    }

    async fn read(body: axum::body::Body, min_rate: u32) -> Result<usize, axum::Error> {
        let paced = PacedBody::new(body, Duration::from_secs(10), min_rate);
        axum::body::to_bytes(axum::body::Body::new(paced), usize::MAX).await.map(|bytes| bytes.len())
    }

    #[tokio::test(start_paused = true)]
    async fn a_body_a_byte_every_five_seconds_is_cut_after_the_grace() {
        let started = Instant::now();
        let err = read(trickle(100, 1, Duration::from_secs(5)), 1024).await.expect_err("too slow");
        assert!(came_too_slowly(&err), "{err}");
        let took = started.elapsed();
        assert!(took >= Duration::from_secs(10) && took < Duration::from_secs(11), "{took:?}");
    }

    #[tokio::test(start_paused = true)]
    async fn a_body_that_keeps_the_rate_arrives_whole_however_long_it_takes() {
        // 2 KiB a second for a minute: twice the minimum.
        let read = read(trickle(60, 2048, Duration::from_secs(1)), 1024).await.expect("whole");
        assert_eq!(read, 60 * 2048);
    }

    #[tokio::test(start_paused = true)]
    async fn a_body_announced_large_that_stops_early_is_cut() {
        use futures_util::StreamExt;
        let eight_bytes =
            futures_util::stream::once(async { Ok::<_, std::io::Error>(Bytes::from_static(b"12345678")) });
        let stalled = axum::body::Body::from_stream(eight_bytes.chain(futures_util::stream::pending()));
        let err = read(stalled, 1024).await.expect_err("stalled");
        assert!(came_too_slowly(&err), "{err}");
    }
}
