//! Access tokens (HS256 JWTs with `sub` and `adm`, 15 minutes) and refresh tokens (32 random
//! bytes, 30 days), and the hashing that keeps only a token's SHA-256 in the database.

use chrono::{DateTime, Duration, Utc};
use jsonwebtoken::{Algorithm, DecodingKey, EncodingKey, Header, Validation};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use uuid::Uuid;

use crate::infra::config::Secret;

pub const ACCESS_TOKEN_TTL: Duration = Duration::minutes(15);
pub const REFRESH_TOKEN_TTL: Duration = Duration::days(30);
/// The one algorithm accepted: a token signed with anything else (or with `none`) is refused,
/// which shuts the algorithm-confusion door.
const ALGORITHM: Algorithm = Algorithm::HS256;
const ISSUER: &str = "floor";
/// Seconds of clock difference forgiven on `exp`, `nbf` and `iat`.
const LEEWAY_SECONDS: u64 = 5;

/// The claims of an access token.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct Claims {
    /// The user id.
    pub sub: Uuid,
    /// Whether the user had a platform admin role when the token was issued. A hint for
    /// clients only: the server reads the current role from the database.
    pub adm: bool,
    pub iat: i64,
    pub exp: i64,
    pub iss: String,
}

/// Signs and checks access tokens with one secret.
#[derive(Clone)]
pub struct JwtKeys {
    encoding: EncodingKey,
    decoding: DecodingKey,
    validation: Validation,
}

impl std::fmt::Debug for JwtKeys {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("JwtKeys(***)")
    }
}

impl JwtKeys {
    pub fn new(secret: &Secret) -> Self {
        let mut validation = Validation::new(ALGORITHM);
        validation.algorithms = vec![ALGORITHM];
        validation.set_issuer(&[ISSUER]);
        validation.set_required_spec_claims(&["exp", "sub", "iss"]);
        // A `nbf` is not ours to write, but one in the future is honoured.
        validation.validate_nbf = true;
        validation.leeway = LEEWAY_SECONDS;
        Self {
            encoding: EncodingKey::from_secret(secret.expose().as_bytes()),
            decoding: DecodingKey::from_secret(secret.expose().as_bytes()),
            validation,
        }
    }

    /// A fresh access token for `user_id`, and when it expires.
    pub fn issue(&self, user_id: Uuid, adm: bool, now: DateTime<Utc>) -> anyhow::Result<(String, DateTime<Utc>)> {
        let expires_at = now + ACCESS_TOKEN_TTL;
        let claims =
            Claims { sub: user_id, adm, iat: now.timestamp(), exp: expires_at.timestamp(), iss: ISSUER.to_owned() };
        let token = jsonwebtoken::encode(&Header::new(ALGORITHM), &claims, &self.encoding)?;
        Ok((token, expires_at))
    }

    /// The claims of a valid, unexpired token signed by us with HS256; `None` otherwise. Beyond
    /// the signature, a token must look like one we issue: not issued in the future, and
    /// living no longer than [`ACCESS_TOKEN_TTL`] (a token minted with a leaked secret for a
    /// hundred years is still refused).
    pub fn verify(&self, token: &str) -> Option<Claims> {
        let claims = jsonwebtoken::decode::<Claims>(token, &self.decoding, &self.validation).ok()?.claims;
        let now = Utc::now().timestamp();
        let issued_in_the_past = claims.iat <= now + LEEWAY_SECONDS.cast_signed();
        let lives_as_ours_do = claims.exp - claims.iat <= ACCESS_TOKEN_TTL.num_seconds();
        (issued_in_the_past && lives_as_ours_do).then_some(claims)
    }
}

/// A new refresh token: 32 random bytes, hex-encoded for the client.
pub fn new_refresh_token() -> String {
    let mut bytes = [0u8; 32];
    rand::fill(&mut bytes);
    hex::encode(bytes)
}

/// The SHA-256 of a secret (a one-time code, a refresh token, an invite code), hex-encoded:
/// the only form such a secret is stored in.
pub fn sha256_hex(secret: &str) -> String {
    hex::encode(Sha256::digest(secret.as_bytes()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keys() -> JwtKeys {
        JwtKeys::new(&Secret::new("0123456789abcdef0123456789abcdef"))
    }

    #[test]
    fn an_issued_token_verifies_with_its_claims() {
        let user = Uuid::new_v4();
        let (token, expires_at) = keys().issue(user, true, Utc::now()).expect("signed");
        let claims = keys().verify(&token).expect("valid");
        assert_eq!(claims.sub, user);
        assert!(claims.adm);
        assert_eq!(claims.exp, expires_at.timestamp());
    }

    #[test]
    fn an_access_token_lives_fifteen_minutes() {
        let now = Utc::now();
        let (_, expires_at) = keys().issue(Uuid::new_v4(), false, now).expect("signed");
        assert_eq!(expires_at - now, Duration::minutes(15));
    }

    #[test]
    fn an_expired_token_is_refused() {
        let issued = Utc::now() - Duration::minutes(16);
        let (token, _) = keys().issue(Uuid::new_v4(), false, issued).expect("signed");
        assert!(keys().verify(&token).is_none());
    }

    /// A token of ours with `claims` as given, and `nbf` when set.
    fn signed(claims: serde_json::Value) -> String {
        let secret = EncodingKey::from_secret(b"0123456789abcdef0123456789abcdef");
        jsonwebtoken::encode(&Header::new(ALGORITHM), &claims, &secret).expect("signed")
    }

    fn claims(iat: DateTime<Utc>, exp: DateTime<Utc>) -> serde_json::Value {
        serde_json::json!({"sub": Uuid::new_v4(), "adm": false, "iat": iat.timestamp(), "exp": exp.timestamp(), "iss": ISSUER})
    }

    #[test]
    fn a_token_issued_in_the_future_is_refused() {
        let soon = Utc::now() + Duration::minutes(1);
        assert!(keys().verify(&signed(claims(soon, soon + Duration::minutes(10)))).is_none());
        let now = Utc::now();
        assert!(keys().verify(&signed(claims(now, now + Duration::minutes(10)))).is_some(), "the same, issued now");
    }

    #[test]
    fn a_token_living_longer_than_ours_is_refused() {
        let now = Utc::now();
        assert!(keys().verify(&signed(claims(now, now + Duration::days(36_500)))).is_none(), "a hundred years");
        assert!(keys().verify(&signed(claims(now, now + Duration::minutes(16)))).is_none());
        assert!(keys().verify(&signed(claims(now, now + ACCESS_TOKEN_TTL))).is_some());
    }

    #[test]
    fn a_token_not_yet_valid_is_refused() {
        let now = Utc::now();
        let mut early = claims(now, now + Duration::minutes(10));
        early["nbf"] = serde_json::json!((now + Duration::minutes(2)).timestamp());
        assert!(keys().verify(&signed(early.clone())).is_none());
        early["nbf"] = serde_json::json!(now.timestamp());
        assert!(keys().verify(&signed(early)).is_some(), "valid from now");
    }

    #[test]
    fn a_token_signed_with_another_secret_is_refused() {
        let other = JwtKeys::new(&Secret::new("another-secret-another-secret-xx"));
        let (token, _) = other.issue(Uuid::new_v4(), false, Utc::now()).expect("signed");
        assert!(keys().verify(&token).is_none());
    }

    #[test]
    fn a_token_signed_with_another_hmac_algorithm_is_refused() {
        let claims = Claims {
            sub: Uuid::new_v4(),
            adm: true,
            iat: Utc::now().timestamp(),
            exp: (Utc::now() + Duration::minutes(5)).timestamp(),
            iss: ISSUER.to_owned(),
        };
        let secret = EncodingKey::from_secret(b"0123456789abcdef0123456789abcdef");
        for alg in [Algorithm::HS384, Algorithm::HS512] {
            let token = jsonwebtoken::encode(&Header::new(alg), &claims, &secret).expect("signed");
            assert!(keys().verify(&token).is_none(), "{alg:?} accepted");
        }
    }

    #[test]
    fn an_unsigned_token_is_refused() {
        use base64_url_like::encode;
        let header = encode(br#"{"alg":"none","typ":"JWT"}"#);
        let exp = (Utc::now() + Duration::minutes(5)).timestamp();
        let body = encode(
            format!(r#"{{"sub":"{}","adm":true,"exp":{exp},"iat":0,"iss":"floor"}}"#, Uuid::new_v4()).as_bytes(),
        );
        assert!(keys().verify(&format!("{header}.{body}.")).is_none());
    }

    #[test]
    fn refresh_tokens_are_32_random_bytes() {
        let a = new_refresh_token();
        let b = new_refresh_token();
        assert_eq!(a.len(), 64);
        assert_ne!(a, b);
    }

    #[test]
    fn hashes_are_hex_sha256() {
        assert_eq!(sha256_hex("123456"), "8d969eef6ecad3c29a3a629280e686cf0c3f5d5a86aff3ca12020c923adc6c92");
    }

    /// Unpadded base64url, enough to forge a token by hand.
    mod base64_url_like {
        pub fn encode(bytes: &[u8]) -> String {
            const TABLE: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
            let mut out = String::new();
            for chunk in bytes.chunks(3) {
                let n = chunk.iter().enumerate().fold(0u32, |acc, (i, b)| acc | (u32::from(*b) << (16 - 8 * i)));
                for i in 0..=chunk.len() {
                    out.push(char::from(TABLE[((n >> (18 - 6 * i)) & 63) as usize]));
                }
            }
            out
        }
    }
}
