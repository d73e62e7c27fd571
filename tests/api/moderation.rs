//! Player moderation.
