//! The key the nodes present to one another on their own door (`/internal/live`) and with a
//! `traceparent` they hand on: a digest of the shared `JWT_SECRET`.

use axum::http::HeaderName;
use sha2::{Digest, Sha256};

/// The header that carries the nodes' key.
pub const NODE_KEY: HeaderName = HeaderName::from_static("x-floor-node-key");

/// The key every node presents to the others: a digest of the shared `JWT_SECRET`, so the
/// secret itself never travels.
pub fn node_key(jwt_secret: &str) -> String {
    let digest = Sha256::new().chain_update(b"floor-node-key\0").chain_update(jwt_secret.as_bytes()).finalize();
    digest.iter().map(|byte| format!("{byte:02x}")).collect()
}

/// Whether `presented` is the nodes' key, compared as digests so the time taken says nothing
/// about how much of it matched.
pub fn is_node_key(presented: &str, key: &str) -> bool {
    Sha256::digest(presented.as_bytes()) == Sha256::digest(key.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_key_is_a_digest_that_only_the_same_secret_matches() {
        let key = node_key("a-secret");
        assert_eq!(key.len(), 64);
        assert!(!key.contains("a-secret"));
        assert!(is_node_key(&key, &node_key("a-secret")));
        assert!(!is_node_key(&node_key("another"), &key));
        assert!(!is_node_key("", &key));
    }
}
