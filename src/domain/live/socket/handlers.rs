//! The `/live` namespace's handlers: the handshake that admits a socket, and the client
//! events `join`, `leave` and `auth`.

use std::sync::Arc;

use sea_orm::DatabaseConnection;
use serde::Deserialize;
use socketioxide::adapter::Adapter;
use socketioxide::extract::{AckSender, SocketRef, State, TryData};
use uuid::Uuid;

use super::join_acks::JoinAcks;
use super::registry::LiveRegistry;
use crate::domain::auth::sessions::signed_in;
use crate::domain::auth::tokens::JwtKeys;
use crate::domain::live::events::{
    AuthAck, ClientEvent, ConnectRefused, Handshake, JoinAck, RoomRequest, compact_room, room, user_room,
};
use crate::domain::live::known::KnownTournaments;
use crate::domain::live::socket_guards::{Session, SessionEnds, SocketGuards};
use crate::infra::error::{AppError, ErrorCode};
use crate::infra::objects_only::ObjectsOnly;

/// What the socket handlers need.
#[derive(Clone)]
pub(super) struct LiveHub {
    pub(super) live: LiveRegistry,
    pub(super) jwt: Arc<JwtKeys>,
    /// Reads only (the handshake's account check): the readers, beside the writer.
    pub(super) reads: DatabaseConnection,
    pub(super) guards: Arc<SocketGuards>,
    pub(super) tournaments: Arc<KnownTournaments>,
    /// What joins are acked with, made once per state.
    pub(super) acks: Arc<JoinAcks>,
}

/// Admits a socket whose `auth.token` is a valid access token of an active account, as an
/// HTTP request would be admitted, within the caps of sockets per account and per address;
/// puts it in its account's room, notes when its token runs out, and gives every client event
/// its handler. All of it happens here, before socketioxide sends the namespace's connect
/// packet: the connect handler runs later, in a task of its own, and a client that emits
/// `join` the moment it is connected could otherwise reach a socket with no `join` handler
/// yet, and never get its ack.
pub(super) async fn authenticate<A: Adapter>(
    socket: SocketRef<A>,
    TryData(handshake): TryData<Handshake>,
    State(hub): State<LiveHub>,
) -> Result<(), ConnectRefused> {
    let handshake = handshake.map_err(|_| ConnectRefused::Unauthorized)?;
    let (user_id, ends) = hub.account_of(&handshake.token).await.map_err(ConnectRefused::of)?;
    hub.guards.admit(&socket, user_id, ends)?;
    socket.on_disconnect(gone::<A>);
    socket.join(user_room(user_id));
    for event in ClientEvent::ALL {
        match event {
            ClientEvent::Join => socket.on(event.name(), join),
            ClientEvent::Leave => socket.on(event.name(), leave),
            ClientEvent::Auth => socket.on(event.name(), renew),
        }
    }
    Ok(())
}

impl LiveHub {
    /// The active account an access token signs in, and when the token runs out.
    async fn account_of(&self, token: &str) -> Result<(Uuid, SessionEnds), AppError> {
        match signed_in(&self.reads, &self.jwt, token).await {
            Ok((user, claims)) => Ok((user.id, SessionEnds(claims.exp))),
            Err(AppError::Internal(cause)) => {
                tracing::warn!(error = ?cause, "could not read the account of a live connection");
                Err(AppError::Internal(cause))
            }
            Err(refused) => Err(refused),
        }
    }
}

/// A socket that disconnected gives its places back at once.
async fn gone<A: Adapter>(socket: SocketRef<A>) {
    if let Some(session) = Session::of(&socket) {
        session.release();
    }
}

/// Everything a connection needs is set up by [`authenticate`], before the client hears it is
/// connected; socketioxide still wants a connect handler.
pub(super) async fn on_connect<A: Adapter>(_: SocketRef<A>) {}

/// Joins the tournament's room and acks the current LiveState, or the patch to it from the
/// version the client said it holds ([`JoinAcks`]). The socket joins before the state is
/// read, so a change in between reaches it as an event; clients keep the highest `version`.
/// An id that names no tournament is answered before any actor starts, and a socket joining
/// faster than its pace is refused.
async fn join<A: Adapter>(
    socket: SocketRef<A>,
    TryData(payload): TryData<serde_json::Value>,
    ack: AckSender<A>,
    State(hub): State<LiveHub>,
) {
    if !Session::of(&socket).is_some_and(|session| session.may_join()) {
        hub.guards.metrics.refused("live_joins");
        let _ = ack.send(&JoinAck::refused(ErrorCode::RateLimited, "too many joins; slow down"));
        return;
    }
    let sent = match payload.map_err(|_| RoomRequest::unreadable()).and_then(RoomRequest::read) {
        Err(problem) => ack.send(&refusal(AppError::validation(vec![problem]))),
        Ok(RoomRequest { tournament_id, compact, version }) => match hub.tournaments.exists(tournament_id).await {
            Ok(false) => ack.send(&refusal(AppError::not_found("tournament"))),
            Err(err) => ack.send(&refusal(err.into())),
            Ok(true) => {
                let watchers = if compact { compact_room(tournament_id) } else { room(tournament_id) };
                socket.join(watchers.clone());
                let made = match hub.live.snapshot_since(tournament_id, version).await {
                    Ok(state) => hub.acks.made(&state, version).await.map_err(|err| AppError::Internal(err.into())),
                    Err(err) => Err(err.into()),
                };
                match made {
                    // The moment of the answer: what the app corrects its clock by.
                    Ok(made) => ack.send(&made.ack(chrono::Utc::now())),
                    Err(err) => {
                        socket.leave(watchers);
                        ack.send(&refusal(err))
                    }
                }
            }
        },
    };
    // A client that asked for no ack simply gets none.
    let _ = sent;
}

/// Moves the socket's end to that of a fresh access token of the same account.
async fn renew<A: Adapter>(
    socket: SocketRef<A>,
    TryData(payload): TryData<serde_json::Value>,
    ack: AckSender<A>,
    State(hub): State<LiveHub>,
) {
    let token = payload.ok().and_then(|payload| Handshake::deserialize(ObjectsOnly(payload)).ok());
    let answer = match token {
        None => AuthAck::refused(ErrorCode::ValidationError, "send {token: <access token>}"),
        Some(Handshake { token }) => match hub.account_of(&token).await {
            Ok((user_id, ends)) if Session::of(&socket).is_some_and(|session| session.renew(user_id, ends)) => {
                match chrono::DateTime::from_timestamp(ends.0, 0) {
                    Some(expires_at) => AuthAck::renewed(expires_at),
                    None => AuthAck::refused(ErrorCode::Unauthorized, "the token's end is not a time"),
                }
            }
            Ok(_) => AuthAck::refused(ErrorCode::Forbidden, "the token is of another account"),
            Err(err) => {
                let (code, message, _) = err.into_public();
                AuthAck::refused(code, message)
            }
        },
    };
    let _ = ack.send(&answer);
}

/// The ack of a join that failed, told as an HTTP answer would tell it: an unexpected failure
/// is logged and not described, and a database out of reach is `SERVICE_UNAVAILABLE`.
fn refusal(err: AppError) -> JoinAck<'static> {
    let (code, message, _) = err.into_public();
    JoinAck::refused(code, message)
}

/// Leaves both rooms of the tournament, plain and compact.
async fn leave<A: Adapter>(socket: SocketRef<A>, TryData(payload): TryData<serde_json::Value>) {
    if let Some(RoomRequest { tournament_id, .. }) = payload.ok().and_then(|payload| RoomRequest::read(payload).ok()) {
        socket.leave(room(tournament_id));
        socket.leave(compact_room(tournament_id));
    }
}
