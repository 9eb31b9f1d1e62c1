//! SHA-256 helpers. Hashes are written as `sha256:<hex>` so that a reader knows the
//! algorithm without a schema.

use std::path::Path;

use sha2::{Digest, Sha256};

/// Hex digest of `bytes`, prefixed with the algorithm.
pub fn sha256(bytes: &[u8]) -> String {
    format!("sha256:{}", hex(&Sha256::digest(bytes)))
}

/// [`sha256`] of no bytes: what an empty raw file is checked against, without hashing
/// nothing once per empty file of a run.
pub const EMPTY_SHA256: &str =
    "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";

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

/// One digest over every entry under `dir` (relative path and bytes, in path order).
/// Links are not followed: a link is its target's name, so a link that loops (or points
/// out of the specs) is digested as what it is instead of hanging or reading elsewhere.
pub fn dir_digest(dir: &Path) -> std::io::Result<String> {
    dir_digest_of(dir, |_| true)
}

/// [`dir_digest`] over the entries whose path relative to `dir` `keep` accepts (a
/// directory it refuses is not entered).
pub fn dir_digest_of(dir: &Path, keep: impl Fn(&Path) -> bool) -> std::io::Result<String> {
    let at = |p: &Path| {
        let p = p.to_path_buf();
        move |e: std::io::Error| std::io::Error::new(e.kind(), format!("{}: {e}", p.display()))
    };
    let mut files = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).map_err(at(&d))? {
            let e = e.map_err(at(&d))?;
            let path = e.path();
            if !keep(path.strip_prefix(dir).unwrap_or(&path)) {
                continue;
            }
            let kind = e.file_type().map_err(at(&path))?;
            if kind.is_dir() {
                stack.push(path);
            } else {
                files.push((path, kind.is_symlink()));
            }
        }
    }
    files.sort();
    let mut h = Sha256Stream::default();
    for (f, link) in files {
        let bytes = if link {
            let target = std::fs::read_link(&f).map_err(at(&f))?;
            format!("-> {}", target.display()).into_bytes()
        } else {
            std::fs::read(&f).map_err(at(&f))?
        };
        h.update(
            f.strip_prefix(dir)
                .unwrap_or(&f)
                .to_string_lossy()
                .as_bytes(),
        );
        h.update(&[0]);
        h.update(&(bytes.len() as u64).to_le_bytes());
        h.update(&bytes);
    }
    Ok(h.finish())
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

    #[test]
    fn the_empty_hash_is_the_hash_of_no_bytes() {
        assert_eq!(super::sha256(&[]), super::EMPTY_SHA256);
        let mut stream = super::Sha256Stream::default();
        stream.update(b"");
        assert_eq!(stream.finish(), super::EMPTY_SHA256);
    }

    #[test]
    fn a_spec_digest_reads_links_as_links_and_sees_every_change() {
        let d = tempfile::tempdir().unwrap();
        std::fs::create_dir(d.path().join("sub")).unwrap();
        std::fs::write(d.path().join("sub/a.json"), "1").unwrap();
        // A loop: followed, it would never end.
        std::os::unix::fs::symlink("..", d.path().join("sub/up")).unwrap();
        let first = super::dir_digest(d.path()).unwrap();
        assert_eq!(
            super::dir_digest(d.path()).unwrap(),
            first,
            "the digest is stable"
        );
        std::fs::write(d.path().join("sub/a.json"), "2").unwrap();
        let edited = super::dir_digest(d.path()).unwrap();
        assert_ne!(edited, first, "an edited file changes the digest");
        std::fs::remove_file(d.path().join("sub/up")).unwrap();
        std::os::unix::fs::symlink("/etc", d.path().join("sub/up")).unwrap();
        assert_ne!(
            super::dir_digest(d.path()).unwrap(),
            edited,
            "a link's target is part of the digest"
        );
    }
}
