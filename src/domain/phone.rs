//! Phone numbers as the service keeps them: E.164, validated once at the edge.

use std::fmt;

/// A phone number in E.164 form (`+79991234567`).
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Phone(String);

/// Why a phone input was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error("a phone is + and 10 to 15 digits; spaces, dashes and brackets are allowed")]
pub struct InvalidPhone;

impl Phone {
    /// Strips spaces, dashes and brackets, then requires `+` and 10 to 15 digits.
    pub fn parse(input: &str) -> Result<Self, InvalidPhone> {
        let kept: String = input.chars().filter(|c| !matches!(c, ' ' | '-' | '(' | ')' | '\t' | '\u{a0}')).collect();
        let digits = kept.strip_prefix('+').ok_or(InvalidPhone)?;
        let well_formed =
            (10..=15).contains(&digits.len()) && digits.bytes().all(|b| b.is_ascii_digit()) && !digits.starts_with('0');
        if well_formed { Ok(Self(kept)) } else { Err(InvalidPhone) }
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    pub fn into_string(self) -> String {
        self.0
    }

    /// The lock key that serialises every transaction creating or linking something under one
    /// phone (codes, accounts, guests), so concurrent callers converge on one row. Takes the
    /// phone as stored, so a guest's phone read back from the database needs no parsing.
    pub fn lock_key(phone: &str) -> String {
        format!("phone:{phone}")
    }
}

impl fmt::Display for Phone {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_phone_locks_under_one_key_however_it_was_typed() {
        let typed = Phone::parse("+7 (999) 123-45-67").expect("valid");
        assert_eq!(Phone::lock_key(typed.as_str()), Phone::lock_key("+79991234567"));
        assert_eq!(Phone::lock_key("+79991234567"), "phone:+79991234567");
    }

    #[test]
    fn separators_are_stripped() {
        let phone = Phone::parse("+7 (999) 123-45-67").expect("valid");
        assert_eq!(phone.as_str(), "+79991234567");
    }

    #[test]
    fn a_phone_without_plus_is_refused() {
        assert_eq!(Phone::parse("89991234567"), Err(InvalidPhone));
    }

    #[test]
    fn letters_and_other_symbols_are_refused() {
        assert_eq!(Phone::parse("+7999123456a"), Err(InvalidPhone));
        assert_eq!(Phone::parse("+7.999.123.45.67"), Err(InvalidPhone));
        assert_eq!(Phone::parse("++79991234567"), Err(InvalidPhone));
    }

    #[test]
    fn the_digit_count_is_bounded_to_10_through_15() {
        assert!(Phone::parse("+123456789").is_err());
        assert!(Phone::parse("+1234567890").is_ok());
        assert!(Phone::parse("+123456789012345").is_ok());
        assert!(Phone::parse("+1234567890123456").is_err());
    }

    #[test]
    fn a_country_code_never_starts_with_zero() {
        assert!(Phone::parse("+0123456789").is_err());
    }

    #[test]
    fn the_plus_must_come_first() {
        assert!(Phone::parse("7+9991234567").is_err());
        assert!(Phone::parse("").is_err());
        assert!(Phone::parse("+").is_err());
    }
}
