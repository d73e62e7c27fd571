//! Phone numbers as the service keeps them: E.164, validated once at the edge against
//! libphonenumber's metadata (the `phonenumber` port), so a number that cannot exist is refused
//! and the kind of line a number is (mobile, fixed, toll-free…) is known before a sign-in code
//! is sent to it.

use std::fmt;

use phonenumber::metadata::DATABASE;
use phonenumber::{PhoneNumber, Type};

/// A phone number that can exist, in E.164 form (`+79991234567`), with the kind of line
/// libphonenumber says it is.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Phone {
    e164: String,
    /// Decided from the number alone, so it never disagrees with `e164`.
    kind: Type,
}

/// Why a phone input was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum InvalidPhone {
    /// Not `+` and digits at all.
    #[error("a phone is + and at most 15 digits; spaces, dashes and brackets are allowed")]
    Malformed,
    /// Shaped like a phone, but no number of its country is written like that.
    #[error("no such number can exist: check the country code and the digits")]
    Impossible,
}

/// The most digits E.164 allows, country code included.
const MAX_DIGITS: usize = 15;

impl Phone {
    /// Strips spaces, dashes and brackets, requires `+` and at most 15 digits, then asks
    /// libphonenumber whether such a number can exist. Keeps the number as libphonenumber writes
    /// it in E.164, so `+44 (0)20…` and `+44 20…` are one phone.
    ///
    /// The port strips a national prefix written after the country code even where the digits
    /// need it (whisperfish/rust-phonenumber#76): `+7 812…` (Saint Petersburg), `+7 800…` or
    /// `+375 800…` come out a digit short and so impossible. Only fixed and special lines
    /// begin with 8 there (mobiles are 9xx in Russia, 7xx in Kazakhstan, 2x to 4x in Belarus),
    /// and none of them could take a sign-in code anyway.
    pub fn parse(input: &str) -> Result<Self, InvalidPhone> {
        let written: String = input.chars().filter(|c| !matches!(c, ' ' | '-' | '(' | ')' | '\t' | '\u{a0}')).collect();
        let digits = written.strip_prefix('+').ok_or(InvalidPhone::Malformed)?;
        // The length beyond the maximum is libphonenumber's to judge: some countries' numbers
        // are short (the Faroes' have six digits after +298). The shape is checked here first
        // because the port also reads letters (`1-800-FLOWERS`), which we never accept.
        let well_formed = !digits.is_empty()
            && digits.len() <= MAX_DIGITS
            && digits.bytes().all(|b| b.is_ascii_digit())
            && !digits.starts_with('0');
        if !well_formed {
            return Err(InvalidPhone::Malformed);
        }
        let number = phonenumber::parse(None, &written).map_err(|_| InvalidPhone::Impossible)?;
        if !phonenumber::is_valid(&number) {
            return Err(InvalidPhone::Impossible);
        }
        Ok(Self { e164: e164(&number), kind: number.number_type(&DATABASE) })
    }

    pub fn as_str(&self) -> &str {
        &self.e164
    }

    pub fn into_string(self) -> String {
        self.e164
    }

    /// Whether a sign-in code may be sent here: libphonenumber calls the number a mobile, or
    /// a number that may be one (the US and Canada cannot be told apart by the number).
    /// Everything else is refused, which also keeps SMS pumping off the ranges it favours:
    /// fixed lines, toll-free, premium-rate, shared-cost and company (UAN) numbers, personal
    /// numbers (forwarded, often at a premium), VoIP, voicemail access, and pagers (one-way
    /// paging networks, mostly switched off, that no SMS gateway can rely on).
    pub fn receives_codes(&self) -> bool {
        matches!(self.kind, Type::Mobile | Type::FixedLineOrMobile)
    }

    /// What kind of line the number is, in words, for messages.
    pub fn kind_in_words(&self) -> &'static str {
        match self.kind {
            Type::Mobile => "a mobile number",
            Type::FixedLineOrMobile => "a fixed or mobile number",
            Type::FixedLine => "a fixed line",
            Type::TollFree => "a toll-free number",
            Type::PremiumRate => "a premium-rate number",
            Type::SharedCost => "a shared-cost number",
            Type::PersonalNumber => "a personal (forwarding) number",
            Type::Voip => "a VoIP number",
            Type::Pager => "a pager number",
            Type::Uan => "a company (UAN) number",
            Type::Voicemail => "a voicemail access number",
            _ => "not a mobile number",
        }
    }

    /// The lock key that serialises every transaction creating or linking something under one
    /// phone (codes, accounts, guests), so concurrent callers converge on one row. Takes the
    /// phone as stored, so a guest's phone read back from the database needs no parsing.
    pub fn lock_key(phone: &str) -> String {
        format!("phone:{phone}")
    }
}

/// `+`, the country code and the national number with its leading zeros (an Italian fixed
/// line keeps its 0). Written here rather than with the port's formatter, whose `Display`
/// fails (and `to_string` panics) for a country code it has no metadata for.
fn e164(number: &PhoneNumber) -> String {
    format!("+{}{}", number.code().value(), number.national())
}

impl fmt::Display for Phone {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.e164)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn phone(input: &str) -> Phone {
        Phone::parse(input).unwrap_or_else(|err| panic!("{input} is a phone: {err}"))
    }

    #[test]
    fn a_phone_locks_under_one_key_however_it_was_typed() {
        let typed = phone("+7 (999) 123-45-67");
        assert_eq!(Phone::lock_key(typed.as_str()), Phone::lock_key("+79991234567"));
        assert_eq!(Phone::lock_key("+79991234567"), "phone:+79991234567");
    }

    #[test]
    fn separators_are_stripped() {
        assert_eq!(phone("+7 (999) 123-45-67").as_str(), "+79991234567");
        assert_eq!(phone("+7\u{a0}999\t123 45 67").as_str(), "+79991234567");
    }

    #[test]
    fn a_phone_without_plus_is_refused() {
        assert_eq!(Phone::parse("89991234567"), Err(InvalidPhone::Malformed));
    }

    #[test]
    fn letters_and_other_symbols_are_refused() {
        assert_eq!(Phone::parse("+7999123456a"), Err(InvalidPhone::Malformed));
        assert_eq!(Phone::parse("+7.999.123.45.67"), Err(InvalidPhone::Malformed));
        assert_eq!(Phone::parse("++79991234567"), Err(InvalidPhone::Malformed));
        assert_eq!(Phone::parse("+1 800 FLOWERS"), Err(InvalidPhone::Malformed));
    }

    #[test]
    fn more_than_15_digits_are_refused() {
        assert_eq!(Phone::parse("+7999123456789012"), Err(InvalidPhone::Malformed));
    }

    #[test]
    fn a_country_code_never_starts_with_zero() {
        assert_eq!(Phone::parse("+0123456789"), Err(InvalidPhone::Malformed));
    }

    #[test]
    fn the_plus_must_come_first() {
        assert_eq!(Phone::parse("7+9991234567"), Err(InvalidPhone::Malformed));
        assert_eq!(Phone::parse(""), Err(InvalidPhone::Malformed));
        assert_eq!(Phone::parse("+"), Err(InvalidPhone::Malformed));
    }

    #[test]
    fn mobiles_of_the_countries_we_serve_are_kept_as_written() {
        for mobile in [
            "+79991234567",   // Russia
            "+79001234567",   // Russia
            "+77011234567",   // Kazakhstan, sharing +7
            "+77471234567",   // Kazakhstan
            "+375291234567",  // Belarus
            "+375447654321",  // Belarus
            "+12025550123",   // United States (fixed or mobile)
            "+447911123456",  // United Kingdom
            "+4915112345678", // Germany
            "+4917612345678", // Germany
        ] {
            let parsed = phone(mobile);
            assert_eq!(parsed.as_str(), mobile);
            assert!(parsed.receives_codes(), "{mobile} takes codes");
        }
    }

    #[test]
    fn numbers_that_cannot_exist_are_refused() {
        for impossible in [
            "+79 1",           // far too short
            "+70000000000",    // no Russian number starts with 0
            "+70000000001",    // nor this one
            "+7999000000",     // a Russian mobile one digit short
            "+799912345678",   // and one digit long
            "+1 555 0100 000", // 555 is no North American area code
            "+15550001111",    // nor here
            "+375251234567",   // no Belarusian operator code 25x of this length
            "+447700900123",   // Ofcom's range reserved for drama
            "+999123456789",   // no country has code 999
            "+3455512345",     // a Spanish number one digit short
            "+861381234567",   // a Chinese mobile one digit short
        ] {
            assert_eq!(Phone::parse(impossible), Err(InvalidPhone::Impossible), "{impossible}");
        }
    }

    #[test]
    fn a_national_prefix_after_the_country_code_is_dropped() {
        // People write the trunk prefix they dial at home: the number is the same.
        assert_eq!(phone("+44 (0)20 7946 0958").as_str(), "+442079460958");
        assert_eq!(phone("+7 8 999 123-45-67").as_str(), "+79991234567");
    }

    #[test]
    fn lines_that_cannot_take_a_code_are_told_apart() {
        for (number, kind) in [
            ("+74951234567", "a fixed line"),           // Moscow
            ("+77172123456", "a fixed line"),           // Astana
            ("+375172123456", "a fixed line"),          // Minsk
            ("+442079460958", "a fixed line"),          // London
            ("+493012345678", "a fixed line"),          // Berlin
            ("+18005550123", "a toll-free number"),     // United States
            ("+448001234567", "a toll-free number"),    // United Kingdom
            ("+19005550123", "a premium-rate number"),  // United States
            ("+448712345678", "a premium-rate number"), // United Kingdom
            ("+491801234567", "a shared-cost number"),  // Germany
            ("+447012345678", "a personal (forwarding) number"),
            ("+447623123456", "a pager number"),
            ("+443001234567", "a company (UAN) number"),
        ] {
            let parsed = phone(number);
            assert_eq!(parsed.kind_in_words(), kind, "{number}");
            assert!(!parsed.receives_codes(), "{number} takes no codes");
        }
    }

    #[test]
    fn russian_numbers_beginning_with_8_never_take_a_code() {
        // The port misreads them (see `Phone::parse`): whether it refuses them as impossible
        // or, once fixed, reads them as fixed, toll-free or premium lines, no code goes there.
        for number in ["+78121234567", "+78432123456", "+78005553535", "+78095551234", "+375800111111"] {
            assert!(Phone::parse(number).map_or(true, |parsed| !parsed.receives_codes()), "{number}");
        }
    }
}
