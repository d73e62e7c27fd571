//! The `fake` channel, outside production only: it keeps the last code per phone for the
//! tests and, with `OTP_LOG_CODES`, prints it.

use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, Mutex, PoisonError};

/// Last code the `fake` channel "sent" to each phone; lets tests sign in without a provider.
///
/// Cloning shares the same outbox.
#[derive(Clone, Default)]
pub struct FakeOutbox {
    codes: Arc<Mutex<HashMap<String, String>>>,
}

impl FakeOutbox {
    /// The last code sent to `phone`, if any.
    pub fn last_code(&self, phone: &str) -> Option<String> {
        // A poisoned lock only means another thread panicked mid-insert; the map is still
        // a valid map, so keep serving it rather than failing every later sign-in.
        self.codes.lock().unwrap_or_else(PoisonError::into_inner).get(phone).cloned()
    }

    pub(super) fn record(&self, phone: &str, code: &str) {
        self.codes.lock().unwrap_or_else(PoisonError::into_inner).insert(phone.to_owned(), code.to_owned());
    }
}

impl fmt::Debug for FakeOutbox {
    // Codes are secrets until used: show only how many phones have one.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let phones = self.codes.lock().unwrap_or_else(PoisonError::into_inner).len();
        f.debug_struct("FakeOutbox").field("phones", &phones).finish()
    }
}

pub(super) struct Fake {
    pub(super) outbox: FakeOutbox,
    pub(super) log_codes: bool,
}

impl Fake {
    pub(super) fn deliver(&self, phone: &str, code: &str) {
        self.outbox.record(phone, code);
        if self.log_codes {
            // Opt-in (OTP_LOG_CODES) and never built in production: the one place a code is
            // written anywhere, on stdout rather than through tracing so it never reaches
            // log shipping.
            println!("OTP {phone} {code}");
        }
    }
}
