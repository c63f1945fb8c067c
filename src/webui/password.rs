//! The Web API password: a salted PBKDF2-HMAC-SHA256 hash (RFC 8018) as `ratorrent passwd`
//! writes it, `pbkdf2-sha256$ITERATIONS$SALT$KEY` (salt and key in standard base64), or a
//! plain password; and checking what a client sent against either, in constant time.

use sha2::Sha256;
use subtle::ConstantTimeEq;

/// How a hash written by `ratorrent passwd` starts.
pub const PREFIX: &str = "pbkdf2-sha256$";

/// PBKDF2 iterations of a new hash (OWASP's figure for PBKDF2-HMAC-SHA256 is 600,000; a
/// low-power seedbox pays it once per login, and logins are rare: tools keep their cookie).
pub const ITERATIONS: u32 = 600_000;

/// Most iterations a hash may ask for (a config edited by hand cannot make one login cost
/// minutes).
pub const MAX_ITERATIONS: u32 = 10_000_000;

/// Salt bytes of a new hash.
const SALT_LEN: usize = 16;
/// Key bytes (the SHA-256 output size).
const KEY_LEN: usize = 32;

/// A password as configured, ready to check logins against.
#[derive(Clone)]
pub enum Password {
    /// A PBKDF2 hash: iterations, salt, derived key.
    Hashed {
        /// PBKDF2 iterations.
        iterations: u32,
        /// The salt.
        salt: Vec<u8>,
        /// The derived key ([`KEY_LEN`] bytes).
        key: Vec<u8>,
    },
    /// A plain password from the config (kept as its SHA-256, so that the comparison has a
    /// fixed length).
    Plain([u8; 32]),
}

impl std::fmt::Debug for Password {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Password::Hashed { iterations, .. } => write!(f, "Password::Hashed({iterations})"),
            Password::Plain(_) => f.write_str("Password::Plain"),
        }
    }
}

/// Whether `text` reads as a hash written by `ratorrent passwd`.
pub fn is_hash(text: &str) -> bool {
    parse_hash(text).is_some()
}

fn parse_hash(text: &str) -> Option<Password> {
    let rest = text.strip_prefix(PREFIX)?;
    let mut parts = rest.split('$');
    let iterations: u32 = parts.next()?.parse().ok()?;
    let salt = data_encoding::BASE64
        .decode(parts.next()?.as_bytes())
        .ok()?;
    let key = data_encoding::BASE64
        .decode(parts.next()?.as_bytes())
        .ok()?;
    if parts.next().is_some()
        || !(1..=MAX_ITERATIONS).contains(&iterations)
        || salt.is_empty()
        || key.len() != KEY_LEN
    {
        return None;
    }
    Some(Password::Hashed {
        iterations,
        salt,
        key,
    })
}

impl Password {
    /// The configured value: a hash when it reads as one, else the plain password.
    pub fn from_config(text: &str) -> Password {
        parse_hash(text).unwrap_or_else(|| Password::Plain(sha256(text.as_bytes())))
    }

    /// Whether the configured value was a hash (a plain one is warned about in the log).
    pub fn is_hashed(&self) -> bool {
        matches!(self, Password::Hashed { .. })
    }

    /// Whether `given` is the password. Constant time in the bytes compared; a hash costs
    /// its iterations of HMAC-SHA256 (run it off the async workers).
    pub fn verify(&self, given: &str) -> bool {
        match self {
            Password::Hashed {
                iterations,
                salt,
                key,
            } => {
                let mut out = [0u8; KEY_LEN];
                pbkdf2::pbkdf2_hmac::<Sha256>(given.as_bytes(), salt, *iterations, &mut out);
                out.ct_eq(key.as_slice()).into()
            }
            Password::Plain(digest) => sha256(given.as_bytes()).ct_eq(digest).into(),
        }
    }
}

/// A new hash of `password` with a random salt and [`ITERATIONS`]:
/// `pbkdf2-sha256$600000$SALT$KEY`.
pub fn hash(password: &str) -> String {
    hash_with(password, &rand::random::<[u8; SALT_LEN]>(), ITERATIONS)
}

/// The hash of `password` with `salt` and `iterations` (tests use few iterations).
pub fn hash_with(password: &str, salt: &[u8], iterations: u32) -> String {
    let mut key = [0u8; KEY_LEN];
    pbkdf2::pbkdf2_hmac::<Sha256>(password.as_bytes(), salt, iterations, &mut key);
    format!(
        "{PREFIX}{iterations}${}${}",
        data_encoding::BASE64.encode(salt),
        data_encoding::BASE64.encode(&key)
    )
}

/// Constant-time equality of two texts (the user name): equal length compared byte by
/// byte without an early exit (a different length answers at once, as every
/// constant-time compare of unequal lengths does).
pub fn same_text(a: &str, b: &str) -> bool {
    a.as_bytes().ct_eq(b.as_bytes()).into()
}

fn sha256(bytes: &[u8]) -> [u8; 32] {
    use sha2::Digest;
    Sha256::digest(bytes).into()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_hash_verifies_its_password_only() {
        let h = hash_with("correct horse", b"0123456789abcdef", 1000);
        assert!(h.starts_with("pbkdf2-sha256$1000$"), "{h}");
        assert!(is_hash(&h));
        let p = Password::from_config(&h);
        assert!(p.is_hashed());
        assert!(p.verify("correct horse"));
        assert!(!p.verify("correct horse "));
        assert!(!p.verify(""));
    }

    #[test]
    fn rfc_7914_test_vector() {
        // PBKDF2-HMAC-SHA256, P = "passwd", S = "salt", c = 1 (RFC 7914 §11), first 32 bytes
        let h = hash_with("passwd", b"salt", 1);
        let key = h.rsplit('$').next().unwrap();
        let key = data_encoding::BASE64.decode(key.as_bytes()).unwrap();
        assert_eq!(
            data_encoding::HEXLOWER.encode(&key),
            "55ac046e56e3089fec1691c22544b605f94185216dde0465e68b9d57c20dacbc"
        );
    }

    #[test]
    fn new_hashes_are_salted() {
        // few iterations would do, but this is the real thing once
        let a = hash("pw");
        let b = hash("pw");
        assert_ne!(a, b);
        assert!(Password::from_config(&a).verify("pw"));
    }

    #[test]
    fn anything_else_is_a_plain_password() {
        for text in [
            "hunter2",
            "pbkdf2-sha256$",
            "pbkdf2-sha256$x$AAAA$AAAA",
            "pbkdf2-sha256$0$AAAA$AAAA",
            "pbkdf2-sha256$99999999999$AAAA$AAAA",
        ] {
            assert!(!is_hash(text), "{text}");
            let p = Password::from_config(text);
            assert!(!p.is_hashed());
            assert!(p.verify(text));
            assert!(!p.verify("other"));
        }
        assert!(!format!("{:?}", Password::from_config("hunter2")).contains("hunter2"));
    }

    #[test]
    fn text_compare() {
        assert!(same_text("admin", "admin"));
        assert!(!same_text("admin", "admin2"));
        assert!(!same_text("admin", "Admin"));
    }
}
