//! The path the contract's API is served under: every route of the API router starts with
//! it, and so does every path the abuse limits and `Idempotency-Key` take from the contract.

/// Every HTTP path of the API lives under this prefix.
pub const API_PREFIX: &str = "/api/v1";
