//! An agent's raw stdout parsed again with its stream parser, streaming, and checked
//! byte for byte against the hash its record gives in the same read: a verdict is
//! never re-derived from output that is not what was recorded, and the raw-file check
//! need not read the file a second time.

use std::io::Read;
use std::path::Path;

use super::raw::{open_raw, Hashed};
use super::row::RescoreError;
use crate::evidence::normalize::{ReportedUsage, StreamParser};
use crate::evidence::{RawFile, Transcript};
use crate::hash::Sha256Stream;

/// Reads through to an inner reader, hashing every byte that passes.
struct HashingReader<R> {
    inner: R,
    hash: Sha256Stream,
    bytes: u64,
}

impl<R: Read> Read for HashingReader<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.hash.update(&buf[..n]);
        self.bytes += n as u64;
        Ok(n)
    }
}

/// Parse a raw evidence file as an event stream, streaming (never holding the file),
/// and check that it is byte for byte what was recorded.
pub(crate) fn parse_checked(
    trial_dir: &Path,
    raw: &RawFile,
    parser: StreamParser,
) -> Result<Transcript, RescoreError> {
    parse_hashed(trial_dir, raw, parser).0
}

/// [`parse_checked`], and what the file read as (its hash and length) when it was read
/// to the end, so that the raw-file check need not read it again.
pub(super) fn parse_hashed(
    trial_dir: &Path,
    raw: &RawFile,
    parser: StreamParser,
) -> (Result<Transcript, RescoreError>, Option<Hashed>) {
    let file = trial_dir.join(&raw.path);
    // Opened as the raw-file check opens it (never through a link, never a FIFO, which
    // would block the open forever), so that the check need not open it again.
    let f = match open_raw(trial_dir, &raw.path) {
        Ok(f) => f,
        Err(why) => {
            let source = std::io::Error::other(why);
            return (Err(RescoreError::Io { file, source }), None);
        }
    };
    let mut reader = std::io::BufReader::with_capacity(
        f.buffer_size(),
        HashingReader {
            inner: f,
            hash: Sha256Stream::default(),
            bytes: 0,
        },
    );
    let transcript = parser(&mut reader).transcript;
    // Drain whatever the parser left (it stops early only on an I/O error).
    if let Err(source) = std::io::copy(&mut reader, &mut std::io::sink()) {
        return (Err(RescoreError::Io { file, source }), None);
    }
    let read = reader.into_inner();
    let found = read.hash.finish();
    let hashed = Hashed {
        path: raw.path.clone(),
        sha256: found.clone(),
        bytes: read.bytes,
    };
    if found != raw.sha256 {
        let altered = RescoreError::Altered {
            file,
            recorded: raw.sha256.clone(),
            found,
        };
        return (Err(altered), Some(hashed));
    }
    (Ok(transcript), Some(hashed))
}

/// The stream parser of the agent named `agent` (as a record's config names it), or
/// why there is none.
pub(super) fn parser_named(agent: &str) -> Result<StreamParser, String> {
    crate::evidence::streams::AgentKind::from_name(agent)
        .map(crate::evidence::streams::parser)
        .ok_or_else(|| format!("no stream parser for agent `{agent}`"))
}

/// The usage an agent's stdout (a raw file of `trial_dir`) reports, summed.
pub(super) fn reported_in(
    trial_dir: &Path,
    raw: &RawFile,
    parser: StreamParser,
) -> Result<ReportedUsage, String> {
    let f = open_raw(trial_dir, &raw.path).map_err(|why| format!("{}: {why}", raw.path))?;
    let mut reader = std::io::BufReader::with_capacity(f.buffer_size(), f);
    Ok(parser(&mut reader).report.reported_usage)
}
