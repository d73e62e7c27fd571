//! The polling transport module handles polling, post and init requests
use std::sync::Arc;

use bytes::Bytes;
use engineioxide_core::payload::{self, Payload};
use futures_util::{StreamExt, stream};
use http::{Request, Response, StatusCode, header::CONTENT_TYPE};
use http_body::Body;
use http_body_util::Full;
use tokio_util::future::FutureExt as _;

use engineioxide_core::{Packet, ProtocolVersion, Sid, TransportType};

use crate::{
    DisconnectReason, body::ResponseBody, engine::EngineIo, errors::Error,
    handler::EngineIoHandler, socket::InternalRx, transport::make_open_packet,
};

/// Create a response for http request
fn http_response<B, D>(code: StatusCode, data: D, is_binary: bool) -> Response<ResponseBody<B>>
where
    D: Into<Bytes>,
{
    use http::header::*;
    let body: Bytes = data.into();
    let res = Response::builder()
        .status(code)
        .header(CONTENT_LENGTH, body.len());
    if is_binary {
        res.header(CONTENT_TYPE, "application/octet-stream")
    } else {
        res.header(CONTENT_TYPE, "text/plain; charset=UTF-8")
    }
    .body(ResponseBody::custom_response(Full::new(body)))
    .unwrap()
}

pub fn open_req<H, B, R>(
    engine: Arc<EngineIo<H>>,
    protocol: ProtocolVersion,
    req: Request<R>,
    supports_binary: bool,
) -> Result<Response<ResponseBody<B>>, Error>
where
    H: EngineIoHandler,
    B: Send + 'static,
{
    let socket = engine.create_session(
        protocol,
        TransportType::Polling,
        req.into_parts().0,
        supports_binary,
    );

    let packet = make_open_packet(TransportType::Polling, socket.id, &engine.config);

    socket.spawn_heartbeat(engine.config.ping_interval, engine.config.ping_timeout);

    let packet: String = Packet::Open(Box::new(packet)).into();
    let packet = {
        #[cfg(feature = "v3")]
        {
            let mut packet = packet;
            // The V3 protocol requires the packet length to be prepended to the packet.
            // It doesn't use a packet separator like the V4 protocol (and up).
            if protocol == ProtocolVersion::V3 {
                packet = format!("{}:{}", packet.chars().count(), packet);
            }
            packet
        }
        #[cfg(not(feature = "v3"))]
        packet
    };
    Ok(http_response(StatusCode::OK, packet, false))
}

/// Handle http polling request
///
/// If there is packet in the socket buffer, it will be sent immediately
/// Otherwise it will wait for the next packet to be sent from the socket
pub async fn polling_req<B, H>(
    engine: Arc<EngineIo<H>>,
    protocol: ProtocolVersion,
    sid: Sid,
) -> Result<Response<ResponseBody<B>>, Error>
where
    B: Send + 'static,
    H: EngineIoHandler,
{
    let socket = engine.get_socket(sid).ok_or(Error::UnknownSessionID(sid))?;
    if !socket.is_http() {
        return Err(Error::TransportMismatch);
    }

    if socket.is_upgrading() {
        #[cfg(feature = "tracing")]
        tracing::debug!(?sid, "socket is upgrading, sending NOOP packet");

        let data = payload::packet_encoder(Packet::Noop, socket.protocol, socket.supports_binary);

        let is_binary = false; // The noop packet is guaranteed to be serialized as text
        return Ok(http_response(StatusCode::OK, data, is_binary));
    }

    // If the socket is already locked, it means that the socket is being used by another request
    // In case of multiple http polling, session should be closed
    let mut rx = match socket.internal_rx.try_lock() {
        Ok(s) => s,
        Err(_) => {
            socket.close(DisconnectReason::MultipleHttpPollingError);
            return Err(Error::MultipleHttpPolling);
        }
    };

    #[cfg(feature = "tracing")]
    tracing::debug!(%sid, %protocol, supports_binary = socket.supports_binary, "polling request");

    let max_payload = engine.config.max_payload;
    let payload = {
        let InternalRx {
            buffered_rx,
            peeked_packet,
        } = &mut *rx;

        // Prepend the packet peeked during the previous
        // polling request so it is encoded first, ahead of the newly received packets.
        let rx_stream = stream::iter(peeked_packet.take())
            .chain(
                rx_stream::EncoderStream::new(buffered_rx, || socket.take_volatile(), &socket.volatile_ready)
                    .map(|queued| *queued),
            );

        // Stop waiting for the next packet as soon as the session is closed. The combinator is biased
        // towards the encoder completion, so any buffered close packet is still flushed to the client.
        payload::encoder(rx_stream, protocol, socket.supports_binary, max_payload)
            .with_cancellation_token(&socket.cancellation_token)
            .await
    };

    let Some(Payload {
        data,
        has_binary,
        peeked,
    }) = payload
    else {
        #[cfg(feature = "tracing")]
        tracing::debug!(%sid, "session closed while polling, returning empty payload");
        return Ok(http_response(StatusCode::OK, "", false));
    };

    // set back the peeked packet so it can be read again
    // on the next polling request
    rx.peeked_packet = peeked;

    #[cfg(feature = "tracing")]
    tracing::trace!(%sid, %protocol, supports_binary = socket.supports_binary, "sending data: {:?}", data);

    Ok(http_response(StatusCode::OK, data, has_binary))
}

/// Handle http polling post request
///
/// Split the body into packets and send them to the internal socket
pub async fn post_req<R, B, H>(
    engine: Arc<EngineIo<H>>,
    protocol: ProtocolVersion,
    sid: Sid,
    req: Request<R>,
) -> Result<Response<ResponseBody<B>>, Error>
where
    H: EngineIoHandler,
    R: Body + Send + Unpin + 'static,
    <R as Body>::Error: std::fmt::Debug,
    <R as Body>::Data: Send,
    B: Send + 'static,
{
    let socket = engine.get_socket(sid).ok_or(Error::UnknownSessionID(sid))?;
    if !socket.is_http() {
        return Err(Error::TransportMismatch);
    }

    let (parts, body) = req.into_parts();
    let content_type = parts.headers.get(CONTENT_TYPE);
    let packets = payload::decoder(body, content_type, protocol, engine.config.max_payload);
    futures_util::pin_mut!(packets);

    while let Some(packet) = packets.next().await {
        match packet {
            Ok(Packet::Close) => {
                #[cfg(feature = "tracing")]
                tracing::debug!(%sid, "received close packet, closing session");
                socket.send(Packet::Noop).ok(); // if the send fails, let's forcefully close the socket
                engine.close_session(sid, DisconnectReason::TransportClose);
                break;
            }
            Ok(Packet::Pong | Packet::Ping) => {
                // PATCH (floor): one notice waits at most, as one pong did in the channel before.
                socket.heartbeat.notify_one();
                Ok(())
            }
            Ok(Packet::Message(msg)) => {
                engine.handler.on_message(msg, socket.clone());
                Ok(())
            }
            Ok(Packet::Binary(bin) | Packet::BinaryV3(bin)) => {
                engine.handler.on_binary(bin, socket.clone());
                Ok(())
            }
            Ok(p) => {
                #[cfg(feature = "tracing")]
                tracing::debug!(%sid, "invalid packet received: {:?}", &p);
                Err(Error::BadPacket(p))
            }
            Err(e) => {
                #[cfg(feature = "tracing")]
                tracing::debug!(%sid, "could not parse packet: {e}");
                engine.close_session(sid, DisconnectReason::PacketParsingError);
                return Err(e.into());
            }
        }?;
    }
    Ok(http_response(StatusCode::OK, "ok", false))
}

mod rx_stream {
    use std::{
        future::Future,
        pin::Pin,
        task::{Context, Poll, ready},
    };

    use futures_core::Stream;
    use pin_project_lite::pin_project;
    use tokio::sync::{Notify, futures::Notified, mpsc};

    /// [`ReceiverStream`] is a stream that wraps a [`mpsc::Receiver`] by reference.
    /// Allowing to use it as a stream even if it is behind a mutex.
    pub struct ReceiverStream<'a, T> {
        inner: &'a mut mpsc::Receiver<T>,
    }

    impl<'a, T> ReceiverStream<'a, T> {
        pub fn new(inner: &'a mut mpsc::Receiver<T>) -> Self {
            Self { inner }
        }
    }

    impl<'a, T> Stream for ReceiverStream<'a, T> {
        type Item = T;

        fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
            self.inner.poll_recv(cx)
        }
    }

    /// PATCH (floor): the socket's volatile slot as a [`Stream`]: each time its `Notify` is
    /// told, what the slot holds (the latest volatile message), taken. It replaces a stream over
    /// a `watch` channel; the slot and the `Notify` live in the socket.
    pub struct VolatileStream<'a, F> {
        take: F,
        ready: &'a Notify,
        notified: Pin<Box<Notified<'a>>>,
    }

    impl<'a, T, F: Fn() -> Option<T>> VolatileStream<'a, F> {
        pub fn new(take: F, ready: &'a Notify) -> Self {
            Self {
                take,
                ready,
                notified: Box::pin(ready.notified()),
            }
        }
    }

    impl<T, F: Fn() -> Option<T>> Stream for VolatileStream<'_, F> {
        type Item = T;

        fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
            loop {
                ready!(self.notified.as_mut().poll(cx));
                let ready = self.ready;
                self.notified.set(ready.notified());
                // A notice whose message a previous request already took is nothing.
                if let Some(value) = (self.take)() {
                    return Poll::Ready(Some(value));
                }
            }
        }
    }

    impl<F> Unpin for VolatileStream<'_, F> {}

    pin_project! {
        /// Combines a [`VolatileStream`] and a [`ReceiverStream`] into a single [`Stream`].
        pub struct EncoderStream<'a, T, F> {
            #[pin]
            volatile: VolatileStream<'a, F>,
            #[pin]
            rx: ReceiverStream<'a, T>,
        }
    }

    impl<'a, T, F: Fn() -> Option<T>> EncoderStream<'a, T, F> {
        pub fn new(rx: &'a mut mpsc::Receiver<T>, take_volatile: F, volatile_ready: &'a Notify) -> Self {
            Self {
                rx: ReceiverStream::new(rx),
                volatile: VolatileStream::new(take_volatile, volatile_ready),
            }
        }
    }

    impl<T, F: Fn() -> Option<T>> Stream for EncoderStream<'_, T, F> {
        type Item = T;

        fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
            let this = self.project();
            // low priority: poll the watch stream first, then the rx stream.
            // same than with ws transport
            match this.rx.poll_next(cx) {
                Poll::Ready(v) => Poll::Ready(v),
                Poll::Pending => match this.volatile.poll_next(cx) {
                    Poll::Ready(Some(v)) => Poll::Ready(Some(v)),
                    Poll::Ready(None) | Poll::Pending => Poll::Pending,
                },
            }
        }
    }
}
