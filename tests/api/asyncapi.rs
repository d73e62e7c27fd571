//! The contract of `/live`: the committed `asyncapi.yaml` is exactly what the code generates,
//! and it describes every event of the protocol.

use floor::domain::live::events::{ClientEvent, ServerEventKind};
use serde_json::Value;

fn document() -> Value {
    serde_json::to_value(floor::domain::live::asyncapi::asyncapi()).expect("the document serialises")
}

#[test]
fn the_committed_asyncapi_yaml_matches_the_generated_one() {
    let generated = floor::domain::live::asyncapi::asyncapi().to_yaml().expect("the document renders");
    let committed = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/asyncapi.yaml"))
        .expect("asyncapi.yaml is committed at the root");
    assert!(
        committed == generated,
        "asyncapi.yaml is stale: regenerate it with `cargo run -- asyncapi > asyncapi.yaml`"
    );
}

/// The operation `name` on the channel `/live`, carrying the event `name` as a message.
fn assert_described(doc: &Value, name: &str, action: &str) {
    let message = &doc["components"]["messages"][name];
    assert_eq!(message["name"], name, "the message {name} names its event");
    assert!(message["payload"]["$ref"].is_string(), "the message {name} has a payload schema");
    assert_eq!(doc["channels"]["live"]["messages"][name]["$ref"], format!("#/components/messages/{name}"));
    let operation = &doc["operations"][name];
    assert_eq!(operation["action"], action, "the operation {name}");
    assert_eq!(operation["channel"]["$ref"], "#/channels/live");
    assert_eq!(operation["messages"][0]["$ref"], format!("#/channels/live/messages/{name}"));
}

#[test]
fn every_client_and_server_event_is_a_message_and_an_operation() {
    let doc = document();
    assert_eq!(doc["asyncapi"], "3.0.0");
    assert_eq!(doc["channels"]["live"]["address"], "/live");
    for event in ClientEvent::ALL {
        assert_described(&doc, event.name(), "receive");
    }
    for event in ServerEventKind::ALL {
        assert_described(&doc, event.name(), "send");
    }
    assert_described(&doc, "connect_error", "send");
    let ack = &doc["operations"]["join"]["reply"]["messages"][0]["$ref"];
    assert_eq!(ack, "#/channels/live/messages/joinAck", "join is acked");
    assert!(doc["operations"]["leave"].get("reply").is_none(), "leave has no ack");
    let ack = &doc["operations"]["auth"]["reply"]["messages"][0]["$ref"];
    assert_eq!(ack, "#/channels/live/messages/authAck", "auth is acked");
    let events = ClientEvent::ALL.len() + ServerEventKind::ALL.len() + 1;
    let operations = doc["operations"].as_object().expect("operations");
    assert_eq!(operations.len(), events, "nothing but the events: {:?}", operations.keys());
}

#[test]
fn the_payloads_keep_their_wire_names() {
    let doc = document();
    let schemas = &doc["components"]["schemas"];
    let required = |schema: &str| -> Vec<String> {
        let names = schemas[schema]["required"].as_array().unwrap_or_else(|| panic!("{schema} lists its fields"));
        names.iter().map(|name| name.as_str().expect("a name").to_owned()).collect()
    };
    assert_eq!(required("RoomRequest"), ["tournamentId"], "compact may be left out");
    assert!(schemas["RoomRequest"]["properties"]["compact"].is_object());
    assert_eq!(required("Handshake"), ["token"]);
    assert_eq!(
        schemas["ConnectError"]["properties"]["message"]["enum"],
        serde_json::json!(["UNAUTHORIZED", "RATE_LIMITED", "SERVICE_UNAVAILABLE"])
    );
    assert_eq!(required("SessionExpired"), ["code", "message"]);
    assert_eq!(required("ClockUpdate"), ["tournamentId", "version", "serverTime", "clock", "status"]);
    assert_eq!(required("ClockTimes"), ["currentLevelIdx", "levelStartedAt", "pausedAt"]);
    assert_eq!(required("StatePatch"), ["tournamentId", "fromVersion", "version", "ops"]);
    assert_eq!(schemas["StatePatch"]["properties"]["ops"]["items"]["$ref"], "#/components/schemas/PatchOperation");
    let operations = schemas["PatchOperation"]["oneOf"].as_array().expect("an operation is one of three");
    let ops: Vec<&Value> = operations.iter().map(|op| &op["properties"]["op"]["enum"][0]).collect();
    assert_eq!(ops, ["add", "remove", "replace"]);
    assert_eq!(required("LevelStarted"), ["tournamentId", "version", "currentLevelIdx", "kind", "startedAt"]);
    assert_eq!(schemas["SegmentKind"]["enum"], serde_json::json!(["level", "break"]));
    assert_eq!(required("AnnouncementMade"), ["tournamentId", "text", "createdAt"]);
    assert_eq!(required("LiveState")[0], "tournamentId");

    // The ack is one of three shapes: a refusal told apart by `ok`, the state or the patch
    // by their field.
    let shapes = schemas["JoinAck"]["oneOf"].as_array().expect("the ack is one of three shapes");
    let oks: Vec<&Value> = shapes.iter().map(|shape| &shape["properties"]["ok"]["enum"]).collect();
    let (yes, no) = (serde_json::json!([true]), serde_json::json!([false]));
    assert_eq!(oks, [&yes, &yes, &no]);
    assert_eq!(shapes[0]["properties"]["state"]["$ref"], "#/components/schemas/LiveState");
    assert_eq!(shapes[1]["properties"]["patch"]["$ref"], "#/components/schemas/StatePatch");
    assert_eq!(shapes[2]["properties"]["error"]["$ref"], "#/components/schemas/AckError");
}

#[test]
fn the_live_state_is_the_same_schema_as_in_openapi_yaml() {
    let asyncapi = document();
    let openapi = serde_json::to_value(floor::http::openapi()).expect("the document serialises");
    for name in ["LiveState", "ClockView", "TableView", "SeatView", "EliminationView", "TournamentStatus", "ErrorCode"]
    {
        let described = &asyncapi["components"]["schemas"][name];
        assert!(described.is_object(), "{name} is in asyncapi.yaml");
        assert_eq!(described, &openapi["components"]["schemas"][name], "{name} differs from openapi.yaml's");
    }
}
