//! What a client sends, told back in the contract's words when it is wrong: the texts no
//! database of Floor may be handed, and serde's complaints about a field as a
//! [`FieldProblem`] naming that field, never a parser's wording (a Rust type, `Failed to
//! deserialize …`). The HTTP extractors (bodies, paths, queries) and `/live`'s payloads read
//! through it, so a bad input is `400 VALIDATION_ERROR` the same way wherever it comes in.

use crate::infra::error::FieldProblem;

/// The problem of a text holding U+0000: PostgreSQL cannot store it in `text` (SQLite can, and
/// both databases must answer alike), so it is refused wherever a client's text comes in.
pub const HOLDS_NUL: &str = "must not contain the NUL character (U+0000)";

/// The problem of a path or query parameter whose percent-encoded bytes are not UTF-8.
pub const NOT_UTF8: &str = "must be UTF-8 text once percent-decoded";

/// Why `text` may not go on to the work, if it may not: it holds U+0000. (Text in Rust is
/// UTF-8 already and cannot hold a lone surrogate; those are refused where bytes become text.)
pub fn refusal_of_text(text: &str) -> Option<&'static str> {
    text.contains('\0').then_some(HOLDS_NUL)
}

/// A serde error (`message`) about the value at `path` (serde_path_to_error's, `.` or empty
/// for the whole input) as the field problem a client reads. `whole` names the input when the
/// error is about all of it (`body`, `query`). A missing field is named itself, as the client
/// would send it (`levels[2].bigBlind`).
pub fn field_problem(whole: &str, path: &str, message: &str) -> FieldProblem {
    let parent = if path == "." || path.is_empty() { "" } else { path };
    let under = |name: &str| if parent.is_empty() { name.to_owned() } else { format!("{parent}.{name}") };
    // serde_json appends " at line L column C"; the field already locates the problem.
    let message = message.split(" at line ").next().unwrap_or(message);
    if let Some(field) = quoted_after(message, "missing field ") {
        return FieldProblem::new(under(field), "is required");
    }
    if let Some(field) = quoted_after(message, "duplicate field ") {
        return FieldProblem::new(under(field), "is given more than once");
    }
    let field = if parent.is_empty() { whole.to_owned() } else { parent.to_owned() };
    FieldProblem::new(field, plain_problem(message))
}

/// What a serde or parser message about one value means, in words for the client: the kind of
/// value the field takes, never a Rust type. A message Floor wrote itself (a phone's number
/// plan) is already such words and stays as it is.
pub fn plain_problem(message: &str) -> String {
    if let Some(rest) = message.strip_prefix("unknown variant ") {
        return one_of(rest.rsplit_once("`, expected ").map_or("", |(_, expected)| expected));
    }
    for prefix in ["invalid type: ", "invalid value: "] {
        if let Some((_, expected)) = message.strip_prefix(prefix).and_then(|rest| rest.rsplit_once(", expected ")) {
            return format!("must be {}", plain_kind(expected));
        }
    }
    if let Some(rest) = message.strip_prefix("invalid length ") {
        let count = rest.split(',').next().unwrap_or(rest);
        return format!("has the wrong number of items ({count})");
    }
    if message.starts_with("UUID parsing failed")
        || message.starts_with("invalid character: expected an optional prefix")
    {
        return format!("must be {}", plain_kind("a UUID string"));
    }
    if message.starts_with("data did not match any variant of ") {
        return "matches none of the shapes this field takes".to_owned();
    }
    if CHRONO_PARSE_ERRORS.contains(&message) {
        return format!("is not a date or time as RFC 3339 writes them (2026-11-20, 2026-11-20T18:00:00Z): {message}");
    }
    match message {
        // The standard library's `FromStr` of numbers and booleans (query strings read so).
        "invalid digit found in string"
        | "cannot parse integer from empty string"
        | "number too large to fit in target type"
        | "number too small to fit in target type" => "must be a whole number".to_owned(),
        "invalid float literal" => "must be a number".to_owned(),
        "provided string was not `true` or `false`" => "must be true or false".to_owned(),
        "number out of range" => "is out of range".to_owned(),
        _ => message.to_owned(),
    }
}

/// chrono's reasons a text is not a date or a time (`ParseError`'s texts).
const CHRONO_PARSE_ERRORS: [&str; 7] = [
    "input is out of range",
    "no possible date and time matching input",
    "input is not enough for unique date and time",
    "input contains invalid characters",
    "premature end of input",
    "trailing input",
    "bad or unsupported format string",
];

/// "must be one of: a, b" from serde's list of variants (`` `a` or `b` ``, `` one of `a`, `b` ``).
fn one_of(expected: &str) -> String {
    let names: Vec<&str> = expected.split('`').skip(1).step_by(2).collect();
    match names.as_slice() {
        [] => "is not one of the values this field takes".to_owned(),
        [one] => format!("must be {one}"),
        many => format!("must be one of: {}", many.join(", ")),
    }
}

/// The name after `prefix` in serde's `` prefix`name` ``.
fn quoted_after<'a>(message: &'a str, prefix: &str) -> Option<&'a str> {
    message.strip_prefix(prefix)?.strip_prefix('`')?.split('`').next()
}

/// The kind of value serde's `expected …` (or a Rust type's name) stands for, in the
/// contract's words.
pub fn plain_kind(expected: &str) -> String {
    let name = expected.rsplit("::").next().unwrap_or(expected);
    let whole = |min: i128, max: u128| format!("a whole number from {min} to {max}");
    match name {
        "u8" => whole(0, u8::MAX.into()),
        "u16" => whole(0, u16::MAX.into()),
        "u32" => whole(0, u32::MAX.into()),
        "u64" | "usize" => whole(0, u64::MAX.into()),
        "i8" => whole(i8::MIN.into(), i8::MAX.unsigned_abs().into()),
        "i16" => whole(i16::MIN.into(), i16::MAX.unsigned_abs().into()),
        "i32" => whole(i32::MIN.into(), i32::MAX.unsigned_abs().into()),
        "i64" | "isize" => whole(i64::MIN.into(), i64::MAX.unsigned_abs().into()),
        "u128" | "i128" => "a whole number".to_owned(),
        "f32" | "f64" => "a number".to_owned(),
        "bool" | "a boolean" => "true or false".to_owned(),
        "char" | "a character" => "a single character".to_owned(),
        "a string" | "a borrowed string" | "String" | "str" | "string or map" => "a string".to_owned(),
        "Uuid" | "a UUID string" | "a formatted UUID string" => "a UUID".to_owned(),
        "an RFC 3339 formatted date and time string"
        | "a formatted date and time string or a unix timestamp"
        | "DateTime<Utc>" => "an RFC 3339 time (2026-11-20T18:00:00Z)".to_owned(),
        "a formatted date string" | "NaiveDate" => "an RFC 3339 date (2026-11-20)".to_owned(),
        "a map" | "a JSON object" => "an object".to_owned(),
        "a sequence" => "an array".to_owned(),
        "unit" => "null".to_owned(),
        "variant identifier" => "one of the values this field takes".to_owned(),
        _ if name.starts_with("struct ") || name.starts_with("internally tagged enum ") => "an object".to_owned(),
        _ if name.starts_with("tuple") || name.starts_with("an array of length ") => "an array".to_owned(),
        _ if name.starts_with("enum ") => "one of the values this field takes".to_owned(),
        _ if name.starts_with("a ") || name.starts_with("an ") => name.to_owned(),
        _ => "a value of the type its schema gives".to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use serde::Deserialize;
    use serde_json::{Value, json};

    use super::*;
    use crate::infra::objects_only::ObjectsOnly;

    #[derive(Debug, Deserialize, PartialEq, Eq)]
    #[serde(rename_all = "lowercase")]
    enum Status {
        Running,
        Finished,
    }

    #[derive(Debug, Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct Level {
        #[allow(dead_code)]
        big_blind: u32,
    }

    /// A field of each kind a request of Floor takes.
    #[derive(Debug, Deserialize)]
    #[serde(rename_all = "camelCase")]
    #[allow(dead_code)]
    struct Form {
        q: Option<String>,
        capacity: Option<u32>,
        version: Option<i64>,
        lat: Option<f64>,
        compact: Option<bool>,
        id: Option<uuid::Uuid>,
        starts_at: Option<chrono::DateTime<chrono::Utc>>,
        starts_on: Option<chrono::NaiveDate>,
        status: Option<Status>,
        level: Option<Level>,
        tags: Option<Vec<String>>,
    }

    #[derive(Debug, Deserialize)]
    #[allow(dead_code)]
    struct Search {
        q: String,
    }

    fn from_json<T: for<'de> Deserialize<'de> + std::fmt::Debug>(body: Value) -> FieldProblem {
        let err = serde_path_to_error::deserialize::<_, T>(ObjectsOnly(body)).expect_err("refused");
        field_problem("body", &err.path().to_string(), &err.inner().to_string())
    }

    fn from_query<T: for<'de> Deserialize<'de> + std::fmt::Debug>(query: &str) -> FieldProblem {
        let pairs = url::form_urlencoded::parse(query.as_bytes());
        let err =
            serde_path_to_error::deserialize::<_, T>(serde_urlencoded::Deserializer::new(pairs)).expect_err("refused");
        field_problem("query", &err.path().to_string(), &err.inner().to_string())
    }

    /// No Rust type, serde wording or quoting reaches the client.
    fn assert_plain(problem: &FieldProblem) {
        for internal in
            ["expected", "invalid type", "invalid value", "::", "u32", "i64", "f64", "`", "Failed", "struct"]
        {
            assert!(!problem.problem.contains(internal), "{internal:?} in {problem:?}");
        }
    }

    const WHOLE_U32: &str = "must be a whole number from 0 to 4294967295";
    const WHOLE_I64: &str = "must be a whole number from -9223372036854775808 to 9223372036854775807";
    const DATE_OR_TIME: &str = "is not a date or time as RFC 3339 writes them (2026-11-20, 2026-11-20T18:00:00Z)";

    #[test]
    fn a_body_field_of_the_wrong_kind_is_named_and_told_in_words() {
        let cases: [(Value, &str, &str); 17] = [
            (json!({"capacity": "ten"}), "capacity", WHOLE_U32),
            (json!({"capacity": -1}), "capacity", WHOLE_U32),
            (json!({"capacity": 1.5}), "capacity", WHOLE_U32),
            (json!({"version": "41"}), "version", WHOLE_I64),
            (json!({"lat": "north"}), "lat", "must be a number"),
            (json!({"compact": 1}), "compact", "must be true or false"),
            (json!({"id": "nope"}), "id", "must be a UUID"),
            (json!({"id": 5}), "id", "must be a UUID"),
            (json!({"startsAt": 5}), "startsAt", "must be an RFC 3339 time (2026-11-20T18:00:00Z)"),
            (json!({"startsOn": false}), "startsOn", "must be an RFC 3339 date (2026-11-20)"),
            (json!({"status": "paused"}), "status", "must be one of: running, finished"),
            (json!({"status": 3}), "status", "must be a string"),
            (json!({"q": 5}), "q", "must be a string"),
            (json!({"level": {}}), "level.bigBlind", "is required"),
            (json!({"level": [1]}), "level", "must be an object"),
            (json!({"tags": "a"}), "tags", "must be an array"),
            (json!([1]), "body", "must be an object"),
        ];
        for (body, field, problem) in cases {
            let found = from_json::<Form>(body.clone());
            assert_eq!(found, FieldProblem::new(field, problem), "{body}");
            assert_plain(&found);
        }
        let time = from_json::<Form>(json!({"startsAt": "tomorrow"}));
        assert_eq!(time.field, "startsAt");
        assert!(time.problem.starts_with(DATE_OR_TIME), "{time:?}");
        let date = from_json::<Form>(json!({"startsOn": "2026-13-01"}));
        assert_eq!((date.field.as_str(), date.problem.starts_with(DATE_OR_TIME)), ("startsOn", true), "{date:?}");
    }

    #[test]
    fn a_query_parameter_of_the_wrong_kind_is_named_and_told_in_words() {
        let cases: [(&str, &str, &str); 7] = [
            ("capacity=ten", "capacity", "must be a whole number"),
            ("version=4.5", "version", "must be a whole number"),
            ("lat=north", "lat", "must be a number"),
            ("compact=yes", "compact", "must be true or false"),
            ("id=x", "id", "must be a UUID"),
            ("status=paused", "status", "must be one of: running, finished"),
            ("q=a&q=b", "q", "is given more than once"),
        ];
        for (query, field, problem) in cases {
            let found = from_query::<Form>(query);
            assert_eq!(found, FieldProblem::new(field, problem), "{query}");
            assert_plain(&found);
        }
        let time = from_query::<Form>("startsAt=tomorrow");
        assert_eq!((time.field.as_str(), time.problem.starts_with(DATE_OR_TIME)), ("startsAt", true), "{time:?}");
        assert_eq!(from_query::<Search>(""), FieldProblem::new("q", "is required"));
        assert_eq!(from_query::<Search>("other=1"), FieldProblem::new("q", "is required"));
    }

    #[test]
    fn words_of_floor_s_own_pass_as_they_are() {
        let own = "a fixed line cannot get a code: give a mobile number";
        assert_eq!(plain_problem(own), own);
        assert_eq!(field_problem("body", "phone", own), FieldProblem::new("phone", own));
    }

    #[test]
    fn only_nul_is_refused_of_the_texts_rust_holds() {
        assert_eq!(refusal_of_text("ab\0"), Some(HOLDS_NUL));
        assert_eq!(refusal_of_text("\u{1}\u{7f}\u{fffd}\u{fffe}\u{10ffff} иван 🂡"), None);
    }
}
