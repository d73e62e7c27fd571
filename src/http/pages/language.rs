//! The language a page is written in for its reader: Russian, or English when the address
//! asks for it (`?lang=en`) or, without that, when the browser's `Accept-Language` prefers
//! English to Russian. Russian is the service's language, so anything else reads Russian.

use std::convert::Infallible;

use axum::extract::FromRequestParts;
use axum::http::header::ACCEPT_LANGUAGE;
use axum::http::request::Parts;

/// A page's language.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Lang {
    Ru,
    En,
}

/// The query parameter that chooses the language.
const PARAMETER: &str = "lang";

impl Lang {
    /// The language's tag, for `<html lang>` and for `?lang=` in links and form actions.
    pub fn code(self) -> &'static str {
        match self {
            Self::Ru => "ru",
            Self::En => "en",
        }
    }

    /// The language a link offers to switch to.
    pub fn other(self) -> Self {
        match self {
            Self::Ru => Self::En,
            Self::En => Self::Ru,
        }
    }

    /// `ru` or `en`, whatever the case, with or without a region (`en-GB`).
    fn from_tag(tag: &str) -> Option<Self> {
        let primary = tag.trim().split(['-', '_']).next().unwrap_or_default();
        if primary.eq_ignore_ascii_case("ru") {
            Some(Self::Ru)
        } else if primary.eq_ignore_ascii_case("en") {
            Some(Self::En)
        } else {
            None
        }
    }

    /// The language of a request: `?lang=` first, then `Accept-Language`, else Russian.
    pub fn choose(query: Option<&str>, accept_language: Option<&str>) -> Self {
        let asked = query.and_then(|query| {
            url::form_urlencoded::parse(query.as_bytes())
                .find(|(name, _)| name == PARAMETER)
                .and_then(|(_, value)| Self::from_tag(&value))
        });
        asked.or_else(|| accept_language.and_then(preferred)).unwrap_or(Self::Ru)
    }
}

/// Of Russian and English, the one `Accept-Language` weighs most (the first named on a tie);
/// `None` when it names neither, or refuses both (`q=0`).
fn preferred(accept_language: &str) -> Option<Lang> {
    let mut best: Option<(Lang, f32)> = None;
    for range in accept_language.split(',') {
        let mut parts = range.split(';');
        let Some(lang) = parts.next().and_then(Lang::from_tag) else { continue };
        let weight = parts
            .find_map(|parameter| parameter.trim().strip_prefix("q="))
            .map_or(Some(1.0), |q| q.trim().parse::<f32>().ok())
            .unwrap_or(0.0);
        if weight > 0.0 && best.is_none_or(|(_, most)| weight > most) {
            best = Some((lang, weight));
        }
    }
    best.map(|(lang, _)| lang)
}

/// Any page's handler may take its reader's language as an argument.
impl<S: Send + Sync> FromRequestParts<S> for Lang {
    type Rejection = Infallible;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, Infallible> {
        let accept_language = parts.headers.get(ACCEPT_LANGUAGE).and_then(|value| value.to_str().ok());
        Ok(Self::choose(parts.uri.query(), accept_language))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_address_chooses_first() {
        assert_eq!(Lang::choose(Some("lang=en"), Some("ru")), Lang::En);
        assert_eq!(Lang::choose(Some("x=1&lang=RU"), Some("en-US,en")), Lang::Ru);
        assert_eq!(Lang::choose(Some("lang=de"), Some("en")), Lang::En, "an unknown choice is no choice");
    }

    #[test]
    fn the_browser_chooses_by_weight_between_russian_and_english() {
        assert_eq!(Lang::choose(None, Some("en-GB,en;q=0.9")), Lang::En);
        assert_eq!(Lang::choose(None, Some("de-DE,de;q=0.9,en;q=0.8,ru;q=0.7")), Lang::En);
        assert_eq!(Lang::choose(None, Some("en;q=0.5, ru-RU;q=0.8")), Lang::Ru);
        assert_eq!(Lang::choose(None, Some("ru, en")), Lang::Ru, "the first on a tie");
        assert_eq!(Lang::choose(None, Some("en;q=0, fr")), Lang::Ru, "refused English is not chosen");
        assert_eq!(Lang::choose(None, Some("*")), Lang::Ru);
        assert_eq!(Lang::choose(None, Some("en;q=junk")), Lang::Ru, "an unreadable weight counts as none");
    }

    #[test]
    fn russian_is_the_default() {
        assert_eq!(Lang::choose(None, None), Lang::Ru);
        assert_eq!(Lang::choose(Some(""), Some("")), Lang::Ru);
        assert_eq!(Lang::choose(None, Some("zh-CN")), Lang::Ru);
    }
}
