//! Formats the contracts assert. In OpenAPI 3.1 (JSON Schema 2020-12) and AsyncAPI's schemas
//! (JSON Schema draft 7) `format` is only an annotation: a generated client or a validator may
//! take `""` for a `uuid`. The server reads these fields strictly, so each such string also
//! carries the pattern of what it accepts, in `openapi.yaml` and `asyncapi.yaml` alike.

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

/// The canonical, hyphenated form (what every id in an answer is).
const UUID: &str = "^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$";
/// RFC 3339, as answers write it.
const DATE_TIME: &str = "^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(\\.[0-9]+)?(Z|[+-][0-9]{2}:[0-9]{2})$";
const DATE: &str = "^[0-9]{4}-[0-9]{2}-[0-9]{2}$";

/// `schemas` (a whole contract, or some of its schemas) with every `uuid`, `date-time` and
/// `date` string given the pattern of its format, unless it has a pattern of its own.
pub fn with_patterns<T: Serialize + DeserializeOwned>(schemas: T) -> T {
    // The documents are built from the code: one that does not round-trip is a bug, not input.
    let mut tree = serde_json::to_value(schemas).expect("the schemas serialise");
    add_patterns(&mut tree);
    serde_json::from_value(tree).expect("the schemas read back")
}

fn add_patterns(node: &mut Value) {
    match node {
        Value::Object(fields) => {
            let pattern = match fields.get("format").and_then(Value::as_str) {
                Some("uuid") => Some(UUID),
                Some("date-time") => Some(DATE_TIME),
                Some("date") => Some(DATE),
                _ => None,
            };
            if let Some(pattern) = pattern {
                fields.entry("pattern").or_insert_with(|| Value::from(pattern));
            }
            fields.values_mut().for_each(add_patterns);
        }
        Value::Array(items) => items.iter_mut().for_each(add_patterns),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_formatted_string_gets_its_pattern_and_keeps_its_own() {
        let mut tree = serde_json::json!({
            "id": {"type": "string", "format": "uuid"},
            "nested": [{"type": ["string", "null"], "format": "date-time"}],
            "own": {"type": "string", "format": "date", "pattern": "^[0-9]{4}-01-01$"},
        });
        add_patterns(&mut tree);
        assert_eq!(tree["id"]["pattern"], UUID);
        assert_eq!(tree["nested"][0]["pattern"], DATE_TIME);
        assert_eq!(tree["own"]["pattern"], "^[0-9]{4}-01-01$");
    }
}
