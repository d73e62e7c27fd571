//! Field checks for request bodies: collect every problem, then answer them all in one
//! `VALIDATION_ERROR`, so a client fixes its form in one round trip.

use crate::domain::Phone;
use crate::error::{AppError, AppResult, FieldProblem};

/// What a text is trimmed of: ASCII white space, the set every regular-expression engine
/// agrees on, so the schema's patterns mean here what they mean to a client.
pub const BLANK: [char; 6] = [' ', '\t', '\n', '\u{b}', '\u{c}', '\r'];

/// The problems found so far in one request.
#[derive(Default)]
pub struct Problems(Vec<FieldProblem>);

impl Problems {
    pub fn add(&mut self, field: &str, problem: impl Into<String>) {
        self.0.push(FieldProblem::new(field, problem));
    }

    /// Trims `value` of [`BLANK`] and records a problem unless it keeps at least `min`
    /// characters and was sent with at most `max`. The bounds are the ones a schema can state
    /// exactly: `maxLength: max` and, for `min`, a pattern of that many characters that are
    /// not blank (`[^\t\n\v\f\r ]` for one; the tests hold the fields to it).
    pub fn text(&mut self, field: &str, value: &str, min: usize, max: usize) -> String {
        let trimmed = value.trim_matches(BLANK).to_owned();
        if trimmed.chars().count() < min || value.chars().count() > max {
            self.add(field, format!("must be {min} to {max} characters"));
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
    if value.strip_prefix(crate::uploads::FILES_PATH).and_then(crate::uploads::parse_key).is_some() {
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

    /// The schema's pattern of a text with at least one character that is not [`BLANK`] (written
    /// in each field's `#[schema(pattern = ...)]`, which takes only a literal).
    const NOT_BLANK: &str = "[^\\t\\n\\v\\f\\r ]";

    /// The schema's pattern of [`url`] (with `maxLength: 2048`).
    const URL_PATTERN: &str = "^(https?://[!-.0-Z^-~][!-Z^-~]*|/files/[0-9a-f-]{1,64}\\.(png|jpg|webp))$";

    #[test]
    fn the_schema_patterns_accept_what_the_checks_accept() {
        let not_blank = Regex::new(NOT_BLANK).expect("a pattern");
        for text in ["a", " a ", "\t\n", " ", "", "\u{a0}", "\u{b}\u{c}", "Ёж"] {
            let mut problems = Problems::default();
            problems.text("name", text, 1, 80);
            assert_eq!(problems.0.is_empty(), not_blank.is_match(text), "{text:?}");
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
        let texts: Vec<&String> = found.iter().filter(|p| p.starts_with("[^\\t")).collect();
        assert!(texts.len() >= 15, "every trimmed text has the pattern");
        assert!(texts.iter().all(|p| p.starts_with(NOT_BLANK)), "{texts:?}");
    }
    use crate::error::ErrorCode;

    #[test]
    fn every_problem_is_reported_at_once() {
        let mut problems = Problems::default();
        problems.text("name", "", 1, 80);
        url(&mut problems, "avatarUrl", "javascript:alert(1)");
        let err = problems.into_result().expect_err("two problems");
        match err {
            AppError::Api { code, details: Some(details), .. } => {
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
