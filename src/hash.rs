//! SHA-256 helpers. Hashes are written as `sha256:<hex>` so that a reader knows the
//! algorithm without a schema.

use sha2::{Digest, Sha256};

/// Hex digest of `bytes`, prefixed with the algorithm.
pub fn sha256(bytes: &[u8]) -> String {
    format!("sha256:{}", hex(&Sha256::digest(bytes)))
}

/// Lowercase hex of arbitrary bytes.
pub fn hex(bytes: &[u8]) -> String {
    // A table, not `write!` per byte: every raw file of every record is hashed on each
    // rescore, and formatting dominated the hex.
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut s = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        s.push(char::from(DIGITS[usize::from(b >> 4)]));
        s.push(char::from(DIGITS[usize::from(b & 0xf)]));
    }
    s
}

/// An incremental hasher for content that arrives in pieces (files streamed to disk).
#[derive(Default)]
pub struct Sha256Stream(Sha256);

impl Sha256Stream {
    pub fn update(&mut self, bytes: &[u8]) {
        self.0.update(bytes);
    }
    pub fn finish(self) -> String {
        format!("sha256:{}", hex(&self.0.finalize()))
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn known_vector() {
        assert_eq!(
            super::sha256(b"abc"),
            "sha256:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }
}
