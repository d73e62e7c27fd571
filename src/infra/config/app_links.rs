//! Which apps may open the share links (`APPLE_APP_IDS`, `ANDROID_APP_PACKAGE`,
//! `ANDROID_CERT_SHA256`); the verification files built from them are `http::pages::app_links`.

use super::error::ConfigError;
use super::variables::{Refused, comma_separated, read};

const APPLE_APP_ID_EXPECTED: &str = "comma-separated <Team ID>.<bundle id>, as ABCDE12345.club.floor.player: a Team ID \
     of 10 uppercase letters and digits, a dot, a bundle id of letters, digits, '-' and '.'";
const ANDROID_PACKAGE_EXPECTED: &str = "an Android application id, as club.floor.player: two or more parts joined by \
     dots, each a letter followed by letters, digits or '_'";
const FINGERPRINT_EXPECTED: &str = "comma-separated SHA-256 fingerprints of the signing certificates, 32 bytes in hex, \
     as AA:BB:…:FF (64 hex digits, with or without the colons, in either case)";

/// The variables of the apps that open the share links (`/t/{id}`) when installed.
#[derive(clap::Args)]
pub struct AppLinkVariables {
    /// Comma-separated `<Team ID>.<bundle id>` of the iOS apps that open share links
    /// (`ABCDE12345.club.floor.player`); unset: `/.well-known/apple-app-site-association` is a
    /// `404`.
    // `std::vec::Vec`, spelled out, is one value to clap: the list is one variable.
    #[arg(long, env = "APPLE_APP_IDS", value_parser = apple_app_ids)]
    pub apple_app_ids: Option<std::vec::Vec<String>>,
    /// The Android app that opens share links (`club.floor.player`); set only with
    /// `ANDROID_CERT_SHA256`, and then `/.well-known/assetlinks.json` is served.
    #[arg(long, env = "ANDROID_APP_PACKAGE", value_parser = android_package)]
    pub android_app_package: Option<String>,
    /// Comma-separated SHA-256 fingerprints of that app's signing certificates; set only with
    /// `ANDROID_APP_PACKAGE`.
    #[arg(long, env = "ANDROID_CERT_SHA256", value_parser = fingerprints)]
    pub android_cert_sha256: Option<std::vec::Vec<String>>,
}

/// The apps the share links (`/t/{id}`) open when installed.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct AppLinkSettings {
    /// The iOS apps as Apple names them, `<Team ID>.<bundle id>`; empty: iOS opens the links in a
    /// browser.
    pub apple_app_ids: Vec<String>,
    /// The Android app; `None`: Android opens the links in a browser.
    pub android: Option<AndroidApp>,
}

/// An Android app and the certificates it is signed with, which Android checks before it lets
/// the app open the links.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AndroidApp {
    /// The application id, as `club.floor.player`.
    pub package: String,
    /// Fingerprints as Google writes them: 32 uppercase hex pairs joined by colons.
    pub cert_sha256: Vec<String>,
}

impl AppLinkSettings {
    /// Reads the three settings through `get`; blank values count as unset. A value that does
    /// not read so, or a package without fingerprints (or the reverse), refuses to start.
    pub fn from_env(get: impl Fn(&str) -> Option<String>) -> Result<Self, ConfigError> {
        Self::from_variables(read(&get)?)
    }

    pub(super) fn from_variables(variables: AppLinkVariables) -> Result<Self, ConfigError> {
        let cert_sha256 = variables.android_cert_sha256.unwrap_or_default();
        let android = match (variables.android_app_package, cert_sha256.is_empty()) {
            (None, true) => None,
            (Some(package), false) => Some(AndroidApp { package, cert_sha256 }),
            (Some(_), true) => return Err(unpaired("ANDROID_APP_PACKAGE", "ANDROID_CERT_SHA256")),
            (None, false) => return Err(unpaired("ANDROID_CERT_SHA256", "ANDROID_APP_PACKAGE")),
        };
        Ok(Self { apple_app_ids: variables.apple_app_ids.unwrap_or_default(), android })
    }
}

fn unpaired(set: &'static str, missing: &'static str) -> ConfigError {
    ConfigError::Unpaired {
        set,
        missing,
        why: "Android opens links in an app only for its package signed by a listed certificate",
    }
}

fn apple_app_ids(text: &str) -> Result<Vec<String>, Refused> {
    comma_separated(text, APPLE_APP_ID_EXPECTED, |id| is_apple_app_id(id).then(|| id.to_owned()))
}

fn android_package(text: &str) -> Result<String, Refused> {
    if is_android_package(text) { Ok(text.to_owned()) } else { Err(Refused::expected(ANDROID_PACKAGE_EXPECTED)) }
}

fn fingerprints(text: &str) -> Result<Vec<String>, Refused> {
    comma_separated(text, FINGERPRINT_EXPECTED, normalise_fingerprint)
}

/// `ABCDE12345.club.floor.player`: Apple's Team ID (the application identifier prefix), then a
/// bundle id of ASCII letters, digits, `-` and `.`, with no empty part.
fn is_apple_app_id(id: &str) -> bool {
    let Some((team, bundle)) = id.split_once('.') else { return false };
    let team_ok = team.len() == 10 && team.bytes().all(|b| b.is_ascii_uppercase() || b.is_ascii_digit());
    let bundle_ok =
        bundle.split('.').all(|part| !part.is_empty() && part.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-'));
    team_ok && bundle_ok
}

/// An Android application id: at least two parts joined by dots, each an ASCII letter followed
/// by ASCII letters, digits or `_` (Android's own rule for `applicationId`).
fn is_android_package(package: &str) -> bool {
    let mut parts = 0;
    let parts_ok = package.split('.').all(|part| {
        parts += 1;
        let mut bytes = part.bytes();
        bytes.next().is_some_and(|first| first.is_ascii_alphabetic())
            && bytes.all(|b| b.is_ascii_alphanumeric() || b == b'_')
    });
    parts_ok && parts >= 2
}

/// A SHA-256 fingerprint in Google's form (`AA:BB:…`, uppercase, 32 pairs), from that form in
/// either case or from 64 hex digits without colons, as `keytool` and Play Console give it.
fn normalise_fingerprint(text: &str) -> Option<String> {
    let digits: String = if text.contains(':') {
        let pairs: Vec<&str> = text.split(':').collect();
        if pairs.len() != 32 || pairs.iter().any(|pair| pair.len() != 2) {
            return None;
        }
        pairs.concat()
    } else {
        text.to_owned()
    };
    if digits.len() != 64 || !digits.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    let upper = digits.to_ascii_uppercase();
    let pairs: Vec<&str> = (0..32).map(|i| &upper[2 * i..2 * i + 2]).collect();
    Some(pairs.join(":"))
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use super::*;

    const FINGERPRINT: &str =
        "14:6D:E9:83:C5:73:06:50:D8:EE:B9:95:2F:34:FC:64:16:A0:83:42:E6:1D:BE:A8:8A:04:96:B2:3F:CF:44:E5";

    fn settings(vars: &[(&str, &str)]) -> Result<AppLinkSettings, ConfigError> {
        let vars: HashMap<&str, &str> = vars.iter().copied().collect();
        AppLinkSettings::from_env(|name| vars.get(name).map(|value| (*value).to_owned()))
    }

    #[test]
    fn nothing_set_means_no_app_links() {
        assert_eq!(settings(&[]).expect("accepted"), AppLinkSettings::default());
    }

    #[test]
    fn apple_app_ids_are_a_list_of_team_and_bundle_ids() {
        let links = settings(&[("APPLE_APP_IDS", "ABCDE12345.club.floor.player, 9JA89QQLNQ.club.floor-beta,")])
            .expect("accepted");
        assert_eq!(links.apple_app_ids, ["ABCDE12345.club.floor.player", "9JA89QQLNQ.club.floor-beta"]);
        assert!(links.android.is_none(), "iOS alone is a whole setup");
    }

    #[test]
    fn a_bad_apple_app_id_is_refused_naming_the_variable_and_the_item() {
        for bad in [
            "club.floor.player",
            "abcde12345.club.floor.player",
            "ABCDE1234.club.floor.player",
            "ABCDE123456.club.floor.player",
            "ABCDE12345",
            "ABCDE12345.",
            "ABCDE12345.club..player",
            "ABCDE12345.club.floor.player.",
            "ABCDE12345.club/floor",
            "ABCDE12345.club_floor",
            "ABCDE12345.клуб",
        ] {
            let err = settings(&[("APPLE_APP_IDS", &format!("ABCDE12345.club.ok, {bad}"))]).expect_err(bad);
            assert!(err.to_string().starts_with(&format!("APPLE_APP_IDS has an invalid value {bad:?}")), "{err}");
        }
    }

    #[test]
    fn an_android_package_needs_its_fingerprints_and_the_reverse() {
        let err = settings(&[("ANDROID_APP_PACKAGE", "club.floor.player")]).expect_err("refused");
        assert_eq!(err.to_string().lines().count(), 1);
        assert!(err.to_string().starts_with("ANDROID_APP_PACKAGE is set but ANDROID_CERT_SHA256 is not"), "{err}");
        let err = settings(&[("ANDROID_CERT_SHA256", FINGERPRINT)]).expect_err("refused");
        assert!(err.to_string().starts_with("ANDROID_CERT_SHA256 is set but ANDROID_APP_PACKAGE is not"), "{err}");
        let err = settings(&[("ANDROID_APP_PACKAGE", "club.floor.player"), ("ANDROID_CERT_SHA256", " , ")])
            .expect_err("a list of nothing is no fingerprint");
        assert!(err.to_string().starts_with("ANDROID_APP_PACKAGE is set"), "{err}");
    }

    #[test]
    fn a_bad_android_package_is_refused() {
        for bad in ["floor", "club.", ".club.floor", "club..floor", "club.1floor", "club.floor-app", "club._floor"] {
            let err = settings(&[("ANDROID_APP_PACKAGE", bad), ("ANDROID_CERT_SHA256", FINGERPRINT)]).expect_err(bad);
            assert!(err.to_string().starts_with(&format!("ANDROID_APP_PACKAGE has an invalid value {bad:?}")), "{err}");
        }
        let links =
            settings(&[("ANDROID_APP_PACKAGE", "club.floor_app.Player2"), ("ANDROID_CERT_SHA256", FINGERPRINT)])
                .expect("underscores, digits and capitals after the first letter");
        assert_eq!(links.android.expect("android").package, "club.floor_app.Player2");
    }

    #[test]
    fn fingerprints_are_written_as_google_writes_them() {
        let lower = FINGERPRINT.to_ascii_lowercase();
        let bare = FINGERPRINT.replace(':', "");
        let mixed = format!("{}{}", &bare[..32].to_ascii_lowercase(), &bare[32..]);
        let other = "AB:CD:B5:5D:42:85:22:C0:BD:91:16:AA:7C:97:C8:2D:70:58:D7:AA:00:F6:2F:DB:70:EF:18:C4:65:3B:1A:DC";
        for (given, expected) in [
            (FINGERPRINT.to_owned(), vec![FINGERPRINT]),
            (lower, vec![FINGERPRINT]),
            (bare, vec![FINGERPRINT]),
            (mixed, vec![FINGERPRINT]),
            (format!("{FINGERPRINT}, {other}"), vec![FINGERPRINT, other]),
        ] {
            let links = settings(&[("ANDROID_APP_PACKAGE", "club.floor.player"), ("ANDROID_CERT_SHA256", &given)])
                .expect(&given);
            let android = links.android.expect("android");
            assert_eq!(android.cert_sha256, expected, "{given}");
        }
    }

    #[test]
    fn a_bad_fingerprint_is_refused_naming_the_item() {
        let short = &FINGERPRINT[..FINGERPRINT.len() - 3];
        let long = format!("{FINGERPRINT}:00");
        let not_hex = FINGERPRINT.replacen("14", "1G", 1);
        let uneven = FINGERPRINT.replacen("14:6D", "146:D", 1);
        let half_colons = FINGERPRINT.replacen(':', "", 1);
        let sha1 = "DA:39:A3:EE:5E:6B:4B:0D:32:55:BF:EF:95:60:18:90:AF:D8:07:09";
        for bad in [short, &long, &not_hex, &uneven, &half_colons, sha1, "SHA256: 14:6D"] {
            let err = settings(&[
                ("ANDROID_APP_PACKAGE", "club.floor.player"),
                ("ANDROID_CERT_SHA256", &format!("{FINGERPRINT},{bad}")),
            ])
            .expect_err(bad);
            assert!(err.to_string().starts_with(&format!("ANDROID_CERT_SHA256 has an invalid value {bad:?}")), "{err}");
        }
    }
}
