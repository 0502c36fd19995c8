//! Content hashes: SHA-256 as lower-case hex.
//!
//! Owns: the one way redjury names content (prompts, documents, cache
//! keys, check fingerprints). A vocabulary module: it depends on nothing in
//! the crate and every stage may use it. Must never hash a secret: API keys
//! are not content.

use sha2::{Digest, Sha256};

/// Lower-case hex of bytes.
pub(crate) fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write;
    let mut out = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        let _ = write!(out, "{b:02x}");
    }
    out
}

/// SHA-256 of a string, hex.
pub(crate) fn sha256_hex(s: &str) -> String {
    sha256_hex_bytes(s.as_bytes())
}

/// SHA-256 of bytes, hex.
pub(crate) fn sha256_hex_bytes(b: &[u8]) -> String {
    hex(&Sha256::digest(b))
}

/// SHA-256 over several parts, each followed by a 0x1f separator, so that
/// ("ab", "c") and ("a", "bc") never collide.
pub(crate) fn sha256_hex_parts<'a>(parts: impl IntoIterator<Item = &'a [u8]>) -> String {
    let mut h = Sha256::new();
    for part in parts {
        h.update(part);
        h.update([0x1f]);
    }
    hex(&h.finalize())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_digests() {
        assert_eq!(
            sha256_hex(""),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        );
        assert_eq!(hex(&[0, 15, 255]), "000fff");
        assert_ne!(
            sha256_hex_parts([b"ab".as_slice(), b"c"]),
            sha256_hex_parts([b"a".as_slice(), b"bc"])
        );
    }
}
