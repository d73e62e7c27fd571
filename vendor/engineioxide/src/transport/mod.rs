//! All transports modules available in engineioxide

use engineioxide_core::{OpenPacket, Sid, TransportType};

use crate::config::EngineIoConfig;

/// PATCH (floor): permessage-deflate, one compression per message.
pub(crate) mod deflate;
/// PATCH (floor): a large message's frame made once for every socket.
pub(crate) mod frames;
/// PATCH (floor): a message written by the task that sends it, when nothing is before it.
pub(crate) mod outlet;
pub mod polling;
pub mod ws;

fn make_open_packet(transport: TransportType, id: Sid, config: &EngineIoConfig) -> OpenPacket {
    let upgrades = if transport == TransportType::Polling {
        smallvec::smallvec![TransportType::Websocket]
    } else {
        smallvec::smallvec![]
    };
    OpenPacket {
        sid: id,
        upgrades,
        ping_timeout: config.ping_timeout,
        ping_interval: config.ping_interval,
        max_payload: config.max_payload,
    }
}
