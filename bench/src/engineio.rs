//! Engine.IO v4 / Socket.IO v5 packets of the `/live` namespace as bytes: the few a watcher
//! sends, and the little it reads from what comes back (kind, ack id, event name, `version`).
//! Reading never parses the JSON: a LiveState is ~65 KB and arrives at every socket, so the
//! watcher looks only at the packet's first bytes.

use std::sync::LazyLock;

use memchr::memmem::Finder;

/// Where floor serves Engine.IO: socketioxide's default path, beside the API.
pub const ENGINE_IO_PATH: &str = "/socket.io/";
/// The Socket.IO namespace of the live broadcasts.
const NAMESPACE: &str = "/live";
/// Engine.IO's answer to the server's ping.
pub const PONG: &[u8] = b"3";
/// The ack id of the watcher's one `join`.
pub const JOIN_ACK_ID: u64 = 1;
/// Separates the packets of one long-polling payload.
const RECORD_SEPARATOR: u8 = 0x1e;

/// What an incoming packet is, with borrowed slices of the part that matters.
#[derive(Debug, PartialEq, Eq)]
pub enum Packet<'a> {
    /// Engine.IO open, `0{"sid":...}`: the JSON after the type.
    Open(&'a [u8]),
    /// Engine.IO ping (`2`): answer with [`PONG`].
    Ping,
    /// Engine.IO close (`1`).
    Close,
    /// Socket.IO connect to `/live` accepted, `40/live,{"sid":...}`.
    Connected,
    /// Socket.IO connect to `/live` refused, `44/live,{"message":...}`: the JSON.
    ConnectError(&'a [u8]),
    /// Socket.IO disconnect of `/live`, `41/live,`.
    Disconnected,
    /// An ack, `43/live,<id>[...]`: the id and the JSON array.
    Ack { id: u64, args: &'a [u8] },
    /// An event, `42/live,["<name>",...]`: the name and the JSON from the first argument on.
    Event { name: &'a [u8], args: &'a [u8] },
    /// Anything else (pong, noop, upgrade, other namespaces, binary).
    Other,
}

/// Reads the kind of one packet from its first bytes (it may be cut short after them).
pub fn parse(packet: &[u8]) -> Packet<'_> {
    match packet.split_first() {
        Some((b'0', open)) => Packet::Open(open),
        Some((b'1', _)) => Packet::Close,
        Some((b'2', _)) => Packet::Ping,
        Some((b'4', message)) => parse_socket_io(message),
        _ => Packet::Other,
    }
}

/// A Socket.IO packet of the `/live` namespace (the part after Engine.IO's `4`).
fn parse_socket_io(message: &[u8]) -> Packet<'_> {
    let Some((&kind, rest)) = message.split_first() else { return Packet::Other };
    let Some(rest) = rest.strip_prefix(NAMESPACE.as_bytes()).and_then(|rest| rest.strip_prefix(b",")) else {
        return Packet::Other;
    };
    match kind {
        b'0' => Packet::Connected,
        b'1' => Packet::Disconnected,
        b'4' => Packet::ConnectError(rest),
        b'3' => {
            let digits = rest.iter().take_while(|byte| byte.is_ascii_digit()).count();
            match parse_u64(&rest[..digits]) {
                Some(id) => Packet::Ack { id, args: &rest[digits..] },
                None => Packet::Other,
            }
        }
        b'2' => {
            // An event the server sends has no ack id: `["name",...]`.
            let Some(quoted) = rest.strip_prefix(b"[\"") else { return Packet::Other };
            let Some(end) = memchr::memchr(b'"', quoted) else { return Packet::Other };
            let args = quoted[end + 1..].strip_prefix(b",").unwrap_or(&quoted[end + 1..]);
            Packet::Event { name: &quoted[..end], args }
        }
        _ => Packet::Other,
    }
}

fn parse_u64(digits: &[u8]) -> Option<u64> {
    if digits.is_empty() || digits.len() > 18 {
        return None;
    }
    Some(digits.iter().fold(0, |value, digit| value * 10 + u64::from(digit - b'0')))
}

static TOURNAMENT_ID_KEY: LazyLock<Finder<'static>> = LazyLock::new(|| Finder::new(b"\"tournamentId\""));
static VERSION_KEY: LazyLock<Finder<'static>> = LazyLock::new(|| Finder::new(b"\"version\":"));

/// The `version` of the LiveState (or `clock` update) in `json`: the first `"version":` key
/// after the first `"tournamentId"`, which is how floor serialises both (`tournamentId`, then
/// `version`). A key inside a string value cannot match: its quotes would be escaped.
pub fn live_version(json: &[u8]) -> Option<i64> {
    let after_id = TOURNAMENT_ID_KEY.find(json)?;
    let rest = &json[after_id..];
    let at = VERSION_KEY.find(rest)? + VERSION_KEY.needle().len();
    let number = rest[at..].trim_ascii_start();
    let (negative, digits) = match number.strip_prefix(b"-") {
        Some(digits) => (true, digits),
        None => (false, number),
    };
    let len = digits.iter().take_while(|byte| byte.is_ascii_digit()).count();
    let value = i64::try_from(parse_u64(&digits[..len])?).ok()?;
    Some(if negative { -value } else { value })
}

/// Whether a join's ack says `ok: true` (floor serialises `ok` first).
pub fn ack_is_ok(args: &[u8]) -> bool {
    args.starts_with(b"[{\"ok\":true")
}

/// The `code` of a refused join's ack, `[{"ok":false,"error":{"code":"NOT_FOUND",...}}]`.
pub fn ack_error_code(args: &[u8]) -> Option<&str> {
    string_field(args, b"\"code\":\"")
}

/// The `message` of a `connect_error`, `{"message":"UNAUTHORIZED"}`.
pub fn connect_error_message(json: &[u8]) -> Option<&str> {
    string_field(json, b"\"message\":\"")
}

/// The `sid` of an Engine.IO open packet's JSON.
pub fn open_sid(json: &[u8]) -> Option<&str> {
    string_field(json, b"\"sid\":\"")
}

/// The value of the first `"key":"value"` whose opening (`"key":"`) is `prefix`; values with
/// escapes are not expected here (ids and error codes).
fn string_field<'a>(json: &'a [u8], prefix: &[u8]) -> Option<&'a str> {
    let start = memchr::memmem::find(json, prefix)? + prefix.len();
    let len = memchr::memchr(b'"', &json[start..])?;
    std::str::from_utf8(&json[start..start + len]).ok()
}

/// The first packet of a long-polling payload (a `GET`'s answer, packets separated by
/// `\x1e`) and the rest after its separator.
pub fn split_first_packet(payload: &[u8]) -> (&[u8], &[u8]) {
    match memchr::memchr(RECORD_SEPARATOR, payload) {
        Some(end) => (&payload[..end], &payload[end + 1..]),
        None => (payload, &[]),
    }
}

/// Socket.IO connect to `/live` with the access token as `auth`.
pub fn connect(token: &str) -> String {
    format!("40{NAMESPACE},{}", serde_json::json!({ "token": token }))
}

/// The `join` of a tournament's room, asking for an ack; `held`: the version of the
/// LiveState the watcher holds from before (an app joining again after a reconnect).
pub fn join(tournament_id: &str, compact: bool, held: Option<i64>) -> String {
    let id = serde_json::Value::from(tournament_id);
    let compact = if compact { r#","compact":true"# } else { "" };
    let held = held.map(|version| format!(r#","version":{version}"#)).unwrap_or_default();
    format!(r#"42{NAMESPACE},{JOIN_ACK_ID}["join",{{"tournamentId":{id}{compact}{held}}}]"#)
}

#[cfg(test)]
mod tests {
    use super::*;

    const ID: &str = "0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b";

    #[test]
    fn engine_io_packets_are_told_apart_by_their_first_byte() {
        let open = br#"0{"sid":"abc","upgrades":[],"pingInterval":25000,"pingTimeout":20000,"maxPayload":100000}"#;
        assert_eq!(parse(open), Packet::Open(&open[1..]));
        assert_eq!(open_sid(&open[1..]), Some("abc"));
        assert_eq!(parse(b"2"), Packet::Ping);
        assert_eq!(parse(b"1"), Packet::Close);
        assert_eq!(parse(b"3"), Packet::Other);
        assert_eq!(parse(b"6"), Packet::Other);
        assert_eq!(parse(b""), Packet::Other);
    }

    #[test]
    fn socket_io_connect_and_its_refusal_are_read_for_the_live_namespace_only() {
        assert_eq!(parse(br#"40/live,{"sid":"x"}"#), Packet::Connected);
        assert_eq!(parse(br#"40{"sid":"x"}"#), Packet::Other, "the default namespace is not ours");
        let refused = br#"44/live,{"message":"UNAUTHORIZED"}"#;
        let Packet::ConnectError(json) = parse(refused) else { panic!("a connect error") };
        assert_eq!(connect_error_message(json), Some("UNAUTHORIZED"));
        assert_eq!(parse(b"41/live,"), Packet::Disconnected);
    }

    #[test]
    fn an_ack_gives_its_id_its_outcome_and_the_states_version() {
        let ok =
            format!(r#"43/live,1[{{"ok":true,"state":{{"tournamentId":"{ID}","version":42,"status":"running"}}}}]"#);
        let Packet::Ack { id, args } = parse(ok.as_bytes()) else { panic!("an ack") };
        assert_eq!(id, 1);
        assert!(ack_is_ok(args));
        assert_eq!(live_version(args), Some(42));

        let refused = br#"43/live,12[{"ok":false,"error":{"code":"NOT_FOUND","message":"no"}}]"#;
        let Packet::Ack { id, args } = parse(refused) else { panic!("an ack") };
        assert_eq!(id, 12);
        assert!(!ack_is_ok(args));
        assert_eq!(ack_error_code(args), Some("NOT_FOUND"));
        assert_eq!(parse(b"43/live,[]"), Packet::Other, "an ack without an id");
    }

    #[test]
    fn an_event_gives_its_name_and_the_version_even_cut_short() {
        let state = format!(r#"42/live,["state",{{"tournamentId":"{ID}","version":7,"clock":{{"version":1}}}}]"#);
        let Packet::Event { name, args } = parse(state.as_bytes()) else { panic!("an event") };
        assert_eq!(name, b"state");
        assert_eq!(live_version(args), Some(7));
        // The watcher keeps only a packet's first bytes.
        let head = &state.as_bytes()[..state.find("\"clock\"").expect("clock")];
        let Packet::Event { args, .. } = parse(head) else { panic!("an event") };
        assert_eq!(live_version(args), Some(7));

        let clock = format!(r#"42/live,["clock",{{"tournamentId":"{ID}","version": 8,"serverTime":"x"}}]"#);
        assert!(matches!(parse(clock.as_bytes()), Packet::Event { name: b"clock", .. }));
        assert_eq!(live_version(clock.as_bytes()), Some(8));

        let patch = format!(r#"42/live,["patch",{{"tournamentId":"{ID}","fromVersion":8,"version":9,"ops":[]}}]"#);
        assert!(matches!(parse(patch.as_bytes()), Packet::Event { name: b"patch", .. }));
        assert_eq!(live_version(patch.as_bytes()), Some(9), "the version, not fromVersion");
    }

    #[test]
    fn the_version_is_the_first_after_the_tournament_id_not_one_inside_a_string() {
        let json = format!(r#"{{"name":"\"version\":1","tournamentId":"{ID}","version":99,"x":{{"version":3}}}}"#);
        assert_eq!(live_version(json.as_bytes()), Some(99));
        assert_eq!(live_version(br#"{"version":3}"#), None, "no tournamentId");
        assert_eq!(live_version(br#"{"tournamentId":"x","version":"#), None, "cut before the number");
        assert_eq!(live_version(br#"{"tournamentId":"x","version":-2}"#), Some(-2));
    }

    #[test]
    fn a_polling_payload_splits_on_the_record_separator() {
        let mut payload: &[u8] = b"2\x1e42/live,[\"state\",{}]\x1e3";
        let mut packets = Vec::new();
        while !payload.is_empty() {
            let (packet, rest) = split_first_packet(payload);
            packets.push(packet);
            payload = rest;
        }
        assert_eq!(packets, [&b"2"[..], &b"42/live,[\"state\",{}]"[..], &b"3"[..]]);
        assert_eq!(split_first_packet(b"0{}"), (&b"0{}"[..], &b""[..]));
    }

    #[test]
    fn outgoing_packets_name_the_namespace_and_the_ack_id() {
        assert_eq!(connect("a.b.c"), r#"40/live,{"token":"a.b.c"}"#);
        assert_eq!(join(ID, false, None), format!(r#"42/live,1["join",{{"tournamentId":"{ID}"}}]"#));
        assert_eq!(join(ID, true, None), format!(r#"42/live,1["join",{{"tournamentId":"{ID}","compact":true}}]"#));
        assert_eq!(
            join(ID, true, Some(42)),
            format!(r#"42/live,1["join",{{"tournamentId":"{ID}","compact":true,"version":42}}]"#)
        );
    }
}
