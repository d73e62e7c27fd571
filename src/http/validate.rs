//! Field checks for request bodies: collect every problem, then answer them all in one
//! `VALIDATION_ERROR`, so a client fixes its form in one round trip.

use crate::infra::error::{AppError, AppResult, FieldProblem};
use crate::values::Phone;

/// What a text is trimmed of: ASCII white space, the set every regular-expression engine
/// agrees on, so the schema's patterns mean here what they mean to a client.
pub const BLANK: [char; 6] = [' ', '\t', '\n', '\u{b}', '\u{c}', '\r'];

/// What a text may hold between its first and last visible characters. Texts end up in
/// formats made of lines (a calendar feed, a CSV export, a log line), where a control
/// character is read as structure: a bare CR in a title split one calendar event in two.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Lines {
    /// A name, a title, an address: no C0 control (U+0000 to U+001F) and no DEL.
    One,
    /// A description, a message's body: tabs and line breaks (TAB, LF, CR), no other control.
    Several,
}

impl Lines {
    /// Whether a text of this kind may not hold `c` (once trimmed of [`BLANK`]).
    pub fn refuses(self, c: char) -> bool {
        c.is_ascii_control() && !(self == Lines::Several && matches!(c, '\t' | '\n' | '\r'))
    }

    fn problem(self) -> &'static str {
        match self {
            Lines::One => "must not contain control characters such as line breaks",
            Lines::Several => "must not contain control characters other than tabs and line breaks",
        }
    }
}

/// The problems found so far in one request.
#[derive(Default)]
pub struct Problems(Vec<FieldProblem>);

impl Problems {
    pub fn add(&mut self, field: &str, problem: impl Into<String>) {
        self.0.push(FieldProblem::new(field, problem));
    }

    /// Trims `value` of [`BLANK`] and records a problem unless it keeps at least `min`
    /// characters and was sent with at most `max`, or when what is kept holds a control
    /// character (see [`Lines::One`]). The bounds are the ones a schema can state exactly:
    /// `maxLength: max` and, for `min`, a pattern (the tests hold the fields to the patterns
    /// of their kind).
    pub fn text(&mut self, field: &str, value: &str, min: usize, max: usize) -> String {
        self.checked_text(field, value, min, max, Lines::One)
    }

    /// Like [`Problems::text`] for a text of several lines (a description, a message's body):
    /// tabs and line breaks may stay inside it (see [`Lines::Several`]).
    pub fn multiline_text(&mut self, field: &str, value: &str, min: usize, max: usize) -> String {
        self.checked_text(field, value, min, max, Lines::Several)
    }

    fn checked_text(&mut self, field: &str, value: &str, min: usize, max: usize, lines: Lines) -> String {
        let trimmed = value.trim_matches(BLANK).to_owned();
        if trimmed.chars().count() < min || value.chars().count() > max {
            self.add(field, format!("must be {min} to {max} characters"));
        }
        if trimmed.chars().any(|c| lines.refuses(c)) {
            self.add(field, lines.problem());
        }
        trimmed
    }

    /// Parses a phone in E.164; records a problem when it is not one.
    pub fn phone(&mut self, field: &str, value: &str) -> Option<Phone> {
        match Phone::parse(value) {
            Ok(phone) => Some(phone),
            Err(err) => {
                self.add(field, err.to_string());
                None
            }
        }
    }

    /// `Ok` when nothing was found, else one `VALIDATION_ERROR` listing everything.
    pub fn into_result(self) -> AppResult<()> {
        if self.0.is_empty() { Ok(()) } else { Err(AppError::validation(self.0)) }
    }
}

/// A nullable text: `None` stays `None`, a value is checked like [`Problems::text`].
pub fn optional_text(
    problems: &mut Problems,
    field: &str,
    value: Option<String>,
    min: usize,
    max: usize,
) -> Option<String> {
    value.map(|text| problems.text(field, &text, min, max))
}

/// A nullable text of several lines: `None` stays `None`, a value is checked like
/// [`Problems::multiline_text`].
pub fn optional_multiline_text(
    problems: &mut Problems,
    field: &str,
    value: Option<String>,
    min: usize,
    max: usize,
) -> Option<String> {
    value.map(|text| problems.multiline_text(field, &text, min, max))
}

/// Checks that `slug` names an active city; records a problem otherwise.
pub async fn active_city(
    conn: &impl sea_orm::ConnectionTrait,
    problems: &mut Problems,
    field: &str,
    slug: &str,
) -> AppResult<()> {
    use floor_entities::cities;
    use sea_orm::{ColumnTrait, EntityTrait, QueryFilter};
    let known = cities::Entity::find()
        .filter(cities::Column::Slug.eq(slug))
        .filter(cities::Column::IsActive.eq(true))
        .one(conn)
        .await?;
    if known.is_none() {
        problems.add(field, "is not an active city");
    }
    Ok(())
}

/// An absolute http(s) address of at most 2048 visible ASCII characters but `[`, `\` and `]`
/// (an address with other characters travels percent-encoded; no IPv6 literal host), or the `url` an upload answered (`/files/<key>`,
/// relative to the service's own origin): the pattern every address field of the schema has
/// (the tests hold them to it).
pub fn url(problems: &mut Problems, field: &str, value: &str) -> String {
    let value = value.to_owned();
    if value.strip_prefix(crate::domain::uploads::FILES_PATH).and_then(crate::domain::uploads::parse_key).is_some() {
        return value;
    }
    let scheme_ok = value.starts_with("https://") || value.starts_with("http://");
    let has_host = value.split("://").nth(1).is_some_and(|rest| !rest.is_empty() && !rest.starts_with('/'));
    if !scheme_ok
        || !has_host
        || value.len() > 2048
        || !value.bytes().all(|byte| byte.is_ascii_graphic() && !matches!(byte, b'[' | b'\\' | b']'))
    {
        problems.add(field, "must be an http(s) address of at most 2048 characters");
    }
    value
}

#[cfg(test)]
mod tests {
    use regex::Regex;

    use super::*;

    /// The schema's patterns of the texts [`Problems::text`] and [`Problems::multiline_text`]
    /// accept, by the kind of text and the fewest characters it keeps (written in each field's
    /// `#[schema(pattern = ...)]`, which takes only a literal). [`BLANK`] may surround the kept
    /// text; the kept text starts and ends with a character that is neither blank nor a
    /// control, and holds no control inside but, on several lines, tab, LF and CR. Written in
    /// the syntax ECMA-262, Rust's `regex` and Python's `re` read alike.
    const ONE_LINE_OR_BLANK: &str =
        "^[\\t\\n\\v\\f\\r ]*([^\\x00-\\x20\\x7F][^\\x00-\\x1F\\x7F]*)?[\\t\\n\\v\\f\\r ]*$";
    const ONE_LINE: &str = "^[\\t\\n\\v\\f\\r ]*[^\\x00-\\x20\\x7F][^\\x00-\\x1F\\x7F]*[\\t\\n\\v\\f\\r ]*$";
    const TWO_ON_ONE_LINE: &str =
        "^[\\t\\n\\v\\f\\r ]*[^\\x00-\\x20\\x7F][^\\x00-\\x1F\\x7F]*[^\\x00-\\x20\\x7F][\\t\\n\\v\\f\\r ]*$";
    const SEVERAL_LINES_OR_BLANK: &str =
        "^[\\t\\n\\v\\f\\r ]*([^\\x00-\\x20\\x7F][^\\x00-\\x08\\x0B\\x0C\\x0E-\\x1F\\x7F]*)?[\\t\\n\\v\\f\\r ]*$";
    const SEVERAL_LINES: &str =
        "^[\\t\\n\\v\\f\\r ]*[^\\x00-\\x20\\x7F][^\\x00-\\x08\\x0B\\x0C\\x0E-\\x1F\\x7F]*[\\t\\n\\v\\f\\r ]*$";

    /// Each pattern with the kind and the fewest characters of the texts it describes.
    const TEXT_PATTERNS: [(Lines, usize, &str); 5] = [
        (Lines::One, 0, ONE_LINE_OR_BLANK),
        (Lines::One, 1, ONE_LINE),
        (Lines::One, 2, TWO_ON_ONE_LINE),
        (Lines::Several, 0, SEVERAL_LINES_OR_BLANK),
        (Lines::Several, 1, SEVERAL_LINES),
    ];

    /// The search's query (a parameter, not stored): two characters that are not blank.
    const SEARCH_QUERY: &str = "[^\\t\\n\\v\\f\\r ][\\s\\S]*[^\\t\\n\\v\\f\\r ]";

    /// Texts at the edges of the rules: blanks trimmed or kept, controls inside and at the
    /// ends, the one CR that split a calendar event, characters beyond ASCII.
    const TRICKY_TEXTS: [&str; 40] = [
        "",
        " ",
        "\t\n",
        "\u{b}\u{c}",
        "a",
        " a ",
        "ab",
        "a b",
        " a  b ",
        "Ёж",
        "🂡",
        "🂡🂡",
        "\u{a0}",
        "\u{a0}a\u{a0}",
        "a\u{85}b",
        "a\u{2028}b",
        "\r\na\r\n",
        "\u{b}a\u{c}",
        "a\rb",
        "a\rEND:VEVENT\rBEGIN:VEVENT\rUID:x",
        "a\nb",
        "a\r\nb",
        "a\r\n\r\nb\r\n",
        "a\tb",
        "a \t b",
        "a\u{b}b",
        "a\u{c}b",
        "a\n\u{b}b",
        "a\n\u{b}",
        "a\u{7f}",
        "\u{7f}a",
        "a\u{7f}b",
        "\u{7f}",
        "\u{0}",
        "a\u{0}b",
        "a\u{0}",
        "a\u{1b}[31mb",
        "a\u{1f}",
        "\u{1}a",
        "Ёж\u{8}",
    ];

    /// The schema's pattern of [`url`] (with `maxLength: 2048`).
    const URL_PATTERN: &str = "^(https?://[!-.0-Z^-~][!-Z^-~]*|/files/[0-9a-f-]{1,64}\\.(png|jpg|webp))$";

    #[test]
    fn the_schema_patterns_accept_what_the_checks_accept() {
        for (lines, min, pattern) in TEXT_PATTERNS {
            let schema = Regex::new(pattern).expect("a pattern");
            for text in TRICKY_TEXTS {
                let mut problems = Problems::default();
                match lines {
                    Lines::One => problems.text("name", text, min, 80),
                    Lines::Several => problems.multiline_text("name", text, min, 80),
                };
                assert_eq!(problems.0.is_empty(), schema.is_match(text), "{lines:?}, at least {min}: {text:?}");
            }
        }
        let address = Regex::new(URL_PATTERN).expect("a pattern");
        for value in [
            "https://club.example/a?b=1#c",
            "http://0",
            "https:///x",
            "ftp://x",
            "https://a b",
            " https://a",
            "https://[::1]/",
            "https://a\\b",
            "https://пример.рф",
            "/files/0a-1.png",
            "/files/0a-1.gif",
            "/files/X.png",
        ] {
            let mut problems = Problems::default();
            url(&mut problems, "photoUrl", value);
            assert_eq!(problems.0.is_empty(), address.is_match(value), "{value:?}");
        }
    }

    #[test]
    fn the_contract_writes_these_patterns() {
        fn patterns(node: &serde_json::Value, found: &mut Vec<String>) {
            match node {
                serde_json::Value::Object(fields) => {
                    if let Some(pattern) = fields.get("pattern").and_then(|p| p.as_str()) {
                        found.push(pattern.to_owned());
                    }
                    fields.values().for_each(|value| patterns(value, found));
                }
                serde_json::Value::Array(items) => items.iter().for_each(|item| patterns(item, found)),
                _ => {}
            }
        }
        let mut found = Vec::new();
        patterns(&serde_json::to_value(crate::http::openapi()).expect("the contract serialises"), &mut found);
        let addresses: Vec<&String> = found.iter().filter(|p| p.contains("https?")).collect();
        assert!(addresses.len() >= 10, "every address field has the pattern");
        assert!(addresses.iter().all(|p| *p == URL_PATTERN), "{addresses:?}");
        // Every pattern about blanks is one of the texts' (or the search's).
        let texts: Vec<&String> = found.iter().filter(|p| p.contains("\\t\\n\\v\\f\\r ]")).collect();
        let known: Vec<&str> = TEXT_PATTERNS.iter().map(|(_, _, pattern)| *pattern).chain([SEARCH_QUERY]).collect();
        assert!(texts.iter().all(|p| known.contains(&p.as_str())), "{texts:?}");
        for (lines, min, pattern) in TEXT_PATTERNS {
            assert!(texts.iter().any(|p| *p == pattern), "a text of {lines:?}, at least {min}, is in the contract");
        }
        assert!(texts.iter().filter(|p| **p == ONE_LINE).count() >= 15, "every trimmed text has the pattern");
    }

    use crate::infra::error::ErrorCode;

    #[test]
    fn every_problem_is_reported_at_once() {
        let mut problems = Problems::default();
        problems.text("name", "", 1, 80);
        url(&mut problems, "avatarUrl", "javascript:alert(1)");
        let err = problems.into_result().expect_err("two problems");
        match err {
            AppError::Api { code, details: Some(crate::infra::error::ErrorDetails::Fields(details)), .. } => {
                assert_eq!(code, ErrorCode::ValidationError);
                let fields: Vec<_> = details.iter().map(|d| d.field.as_str()).collect();
                assert_eq!(fields, ["name", "avatarUrl"]);
            }
            other => panic!("unexpected {other:?}"),
        }
    }

    #[test]
    fn text_is_trimmed_and_counted_in_characters() {
        let mut problems = Problems::default();
        assert_eq!(problems.text("nickname", "  Ёж  ", 2, 32), "Ёж");
        assert!(problems.into_result().is_ok());
    }

    #[test]
    fn a_control_inside_a_text_is_refused_and_only_several_lines_keep_breaks() {
        let problems_of = |lines: Lines, text: &str| {
            let mut problems = Problems::default();
            let kept = match lines {
                Lines::One => problems.text("title", text, 1, 200),
                Lines::Several => problems.multiline_text("title", text, 1, 200),
            };
            (kept, problems.0.into_iter().map(|p| p.problem).collect::<Vec<_>>())
        };
        let (kept, found) = problems_of(Lines::One, "a\rEND:VEVENT\rBEGIN:VEVENT\rUID:x");
        assert_eq!(found, ["must not contain control characters such as line breaks"], "{kept:?}");
        assert_eq!(problems_of(Lines::One, "\r\n Final \r\n"), ("Final".to_owned(), vec![]), "ends are trimmed");
        assert_eq!(problems_of(Lines::Several, " Day 1\r\n\tDay 2\n"), ("Day 1\r\n\tDay 2".to_owned(), vec![]));
        for refused in ["a\u{b}b", "a\u{7f}", "a\u{1b}[2J"] {
            let (_, found) = problems_of(Lines::Several, refused);
            assert_eq!(found, ["must not contain control characters other than tabs and line breaks"], "{refused:?}");
        }
    }

    #[test]
    fn addresses_need_a_scheme_and_a_host() {
        for bad in ["ftp://x", "https://", "https:///path", "no scheme", "https://a b"] {
            let mut problems = Problems::default();
            url(&mut problems, "u", bad);
            assert!(problems.into_result().is_err(), "{bad}");
        }
        let mut problems = Problems::default();
        url(&mut problems, "u", "https://cdn.example.org/a.png");
        assert!(problems.into_result().is_ok());
    }

    #[test]
    fn the_url_of_an_upload_is_an_address_too() {
        let mut problems = Problems::default();
        url(&mut problems, "u", "/files/0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b.png");
        assert!(problems.into_result().is_ok());
        for bad in ["/files/", "/files/../floor.db", "/files/a.gif", "/elsewhere/0190a1b2.png", "files/0190a1b2.png"] {
            let mut problems = Problems::default();
            url(&mut problems, "u", bad);
            assert!(problems.into_result().is_err(), "{bad}");
        }
    }
}
