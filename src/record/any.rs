//! The one loader: a record file of any suite, read by its header's suite tag, and the
//! one check every reader of a run applies to it (rescore, report, merge, publish,
//! the leaderboard): every raw file it names verified, its verdict re-derived from
//! them and compared with the stored one.

use std::path::Path;

use super::challenge::ChallengeRecord;
use super::header::{io, load_header_bytes, trial_of_bytes, Header, RecordError, RECORD_FILE};
use super::qa::QaRecord;
use super::raw::PlainFile;
use super::row::RescoreRow;
use super::scorecard::ScorecardRecord;
use super::suite::{SuiteFigures, SuiteRecord};
use crate::spec::Suite;

/// A record of any suite.
///
/// The record layer's registry is the matches here: [`AnyRecord::as_suite`], which
/// hands a record to what every reader asks of it ([`SuiteRecord`]);
/// [`AnyRecord::project`], which gives a page section or an export written per suite
/// the record of its own suite; the `into_*` accessors, for a reader that concerns one
/// suite alone (the leaderboard ranks probes); and [`load_any_bytes`], which reads a
/// file as the record its suite tag names. A suite's record is registered by a
/// variant and an arm in each, and by a field of [`Projection`], so the compiler names
/// every projection a new suite must be given.
///
/// Serialized as the suite's own record (the tag is in its header).
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
#[serde(untagged)]
pub enum AnyRecord {
    Qa(Box<QaRecord>),
    Challenge(Box<ChallengeRecord>),
    Scorecard(Box<ScorecardRecord>),
}

impl AnyRecord {
    /// The record as its suite's [`SuiteRecord`].
    pub fn as_suite(&self) -> &dyn SuiteRecord {
        match self {
            AnyRecord::Qa(r) => r.as_ref(),
            AnyRecord::Challenge(r) => r.as_ref(),
            AnyRecord::Scorecard(r) => r.as_ref(),
        }
    }

    pub fn header(&self) -> &Header {
        self.as_suite().header()
    }

    /// The signal that stopped the trial part-way, read from its evidence.
    pub fn interrupted(&self) -> Option<&str> {
        self.as_suite().interrupted()
    }

    /// The stored verdict passed.
    pub fn passed(&self) -> bool {
        self.as_suite().passed()
    }

    /// The trial could not be judged: its verdict is `error` (a challenge's verdict
    /// has two axes and no error outcome).
    pub fn errored(&self) -> bool {
        self.as_suite().errored()
    }

    /// The record's line for JUnit `system-out`.
    pub fn summary_line(&self) -> String {
        self.as_suite().summary_line()
    }

    /// What `p` makes of this record, by the function for its suite.
    pub fn project<T, Q, C, S>(&self, p: Projection<Q, C, S>) -> T
    where
        Q: FnOnce(&QaRecord) -> T,
        C: FnOnce(&ChallengeRecord) -> T,
        S: FnOnce(&ScorecardRecord) -> T,
    {
        match self {
            AnyRecord::Qa(r) => (p.qa)(r),
            AnyRecord::Challenge(r) => (p.challenge)(r),
            AnyRecord::Scorecard(r) => (p.scorecard)(r),
        }
    }

    /// The qa record, or the record of another suite back.
    pub fn into_qa(self) -> Result<Box<QaRecord>, AnyRecord> {
        match self {
            AnyRecord::Qa(r) => Ok(r),
            other => Err(other),
        }
    }

    /// The challenge record, if this is one.
    pub fn into_challenge(self) -> Option<Box<ChallengeRecord>> {
        match self {
            AnyRecord::Challenge(r) => Some(r),
            _ => None,
        }
    }

    /// The scorecard record, if this is one.
    pub fn into_scorecard(self) -> Option<Box<ScorecardRecord>> {
        match self {
            AnyRecord::Scorecard(r) => Some(r),
            _ => None,
        }
    }
}

/// One function per suite, for what a reader writes differently for each (a
/// transcript's body, an export's view of a trial): [`AnyRecord::project`] calls the
/// one for the record's suite. A struct rather than a trait so that each function can
/// borrow what the caller has at hand.
pub struct Projection<Q, C, S> {
    pub qa: Q,
    pub challenge: C,
    pub scorecard: S,
}

/// What `suite`'s figures are beyond the pass rate: declared beside its record.
pub fn figures(suite: Suite) -> &'static SuiteFigures {
    match suite {
        Suite::Qa => &super::qa::QA_FIGURES,
        Suite::Challenge | Suite::Scorecard => &SuiteFigures::PASS_RATE_ONLY,
    }
}

/// Read `file` as the record its `suite` says it is.
pub fn load_any(file: &Path) -> Result<AnyRecord, RecordError> {
    let bytes = std::fs::read(file).map_err(io(file))?;
    load_any_bytes(file, &bytes)
}

/// [`load_any`] of a record file already read into `bytes`: the other half of the
/// record layer's registry (see [`AnyRecord`]).
///
/// Most records of a run are qa records: the bytes are read as one first, and only a
/// file that is not a qa record is read for its header and then as its suite's record
/// (a qa record that loads has a header that loads, and says `qa`; every other file gets
/// the answer, and the error, the header-first reading gives).
pub fn load_any_bytes(file: &Path, bytes: &[u8]) -> Result<AnyRecord, RecordError> {
    if let Ok(rec) = super::qa::load_bytes(file, bytes) {
        if rec.header.suite == Suite::Qa {
            return Ok(AnyRecord::Qa(Box::new(rec)));
        }
    }
    match load_header_bytes(file, bytes)?.suite {
        Suite::Qa => super::qa::load_bytes(file, bytes).map(|r| AnyRecord::Qa(Box::new(r))),
        Suite::Challenge => {
            super::challenge::load_bytes(file, bytes).map(|r| AnyRecord::Challenge(Box::new(r)))
        }
        Suite::Scorecard => {
            super::scorecard::load_bytes(file, bytes).map(|r| AnyRecord::Scorecard(Box::new(r)))
        }
    }
}

/// A record and what checking it found.
pub struct Checked {
    /// The record, `None` when the file is not one gauntlet can read (the row's
    /// `derived` says why).
    pub record: Option<AnyRecord>,
    pub row: RescoreRow,
    /// The record's `trial` field as [`super::header::trial_of`] reads it (a record too
    /// broken to load may still name its trial); `None` when it names none.
    pub named_trial: Option<String>,
}

/// Load `file` and check it: re-derive its verdict from its raw files with the parser
/// of the agent that made it, verify every raw file it names, hash it.
///
/// The file is read once: every question asked of it (its header, the record, the raw
/// files it names, its hash, its trial) is answered from the same bytes, so a run of ten
/// thousand records costs ten thousand reads, not fifty thousand.
pub fn check(file: &Path) -> Checked {
    check_read(file, read_sized(file))
}

/// [`check`] of `file`, read (or not) already.
fn check_read(file: &Path, read: std::io::Result<Vec<u8>>) -> Checked {
    let bytes = match read {
        Ok(b) => b,
        Err(e) => {
            return Checked {
                record: None,
                row: RescoreRow::unreadable(file, io(file)(e)),
                named_trial: None,
            }
        }
    };
    let mut known = Vec::new();
    let (record, mut row) = match load_any_bytes(file, &bytes) {
        Err(e) => (None, RescoreRow::unreadable(file, e)),
        Ok(record) => {
            let (row, hashed) = record.as_suite().rescore_row(file);
            known.extend(hashed);
            (Some(record), row)
        }
    };
    // A record that is not JSON at all is already an unreadable verdict.
    let listed = record.as_ref().and_then(|r| r.as_suite().raw_files());
    if let Ok(check) = super::raw::verify_record_bytes(file, &bytes, &known, listed.as_deref()) {
        row.raw_files = check.checked;
        row.raw_problems = check.problems.iter().map(|p| p.to_string()).collect();
    }
    // The trial a record names fixes the directory it is written in: a record copied
    // beside another trial's evidence, or renamed to stand for another trial, is not
    // that trial's.
    if let (Some(rec), Some(dir)) = (&record, file.parent().and_then(|d| d.file_name())) {
        let dir = dir.to_string_lossy();
        let trial = &rec.header().trial;
        if !super::files::is_trial_dir_of(trial, &dir) {
            row.raw_problems.push(format!(
                "{}: the record of `{trial}` is in directory `{dir}`, not one the harness writes it in",
                RECORD_FILE
            ));
        }
    }
    // The trial a record names must be the one its spec gives: a genuine record of
    // one capability, renamed and moved, is not a record of another.
    if let Some(rec) = &record {
        let want = rec.as_suite().spec_trial_name();
        let trial = &rec.header().trial;
        if *trial != want {
            row.raw_problems.push(format!(
                "{}: the record names trial `{trial}`, but its spec is that of `{want}`",
                RECORD_FILE
            ));
        }
    }
    row.record_sha256 = Some(crate::hash::sha256(&bytes));
    // A record that loaded names its trial in its header, the same `trial` field.
    let named_trial = match &record {
        Some(rec) => Some(rec.header().trial.clone()),
        None => trial_of_bytes(file, &bytes).ok(),
    };
    Checked {
        record,
        row,
        named_trial,
    }
}

/// The bytes of `file`, without the read that would only say it ended
/// ([`PlainFile`]; `std::fs::read` makes it, and a run of ten thousand records is ten
/// thousand system calls less).
///
/// Opened without blocking: a FIFO put where a record was expected reads as no record
/// instead of waiting for a writer (a regular file's reads ignore the flag).
fn read_sized(file: &Path) -> std::io::Result<Vec<u8>> {
    read_to_end(open_sized(file)?.file)
}

/// A record file opened without blocking, and whether it is a regular file (its
/// metadata taken from the open file, so asking costs no look-up of its path).
struct Opened {
    file: PlainFile,
    regular: bool,
}

fn open_sized(file: &Path) -> std::io::Result<Opened> {
    use std::os::unix::fs::OpenOptionsExt;
    let opened = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(file)?;
    let meta = opened.metadata()?;
    Ok(Opened {
        regular: meta.is_file(),
        file: PlainFile::sized(opened, meta.len()),
    })
}

fn read_to_end(mut f: PlainFile) -> std::io::Result<Vec<u8>> {
    use std::io::Read;
    let mut buf = Vec::with_capacity(usize::try_from(f.size()).unwrap_or(0).saturating_add(1));
    f.read_to_end(&mut buf)?;
    Ok(buf)
}

/// [`check`] of the files among `files` that are regular files (as [`Path::is_file`]
/// says: a link to one is, and is read through like any record); `None` for a path with
/// no such file. In their order, on as many threads as the machine has cores: records
/// are independent, and checking one is mostly the kernel opening and reading its raw
/// files, which one thread leaves the other cores idle for.
///
/// A run directory's entries are asked whether they hold a record here, as each is
/// opened to be checked, rather than one by one before the checks (rescore and the
/// report's loader alike).
pub fn check_present(files: &[std::path::PathBuf]) -> Vec<Option<Checked>> {
    on_every_core(files, |f| {
        let read = match open_sized(f) {
            Ok(opened) if !opened.regular => return None,
            Ok(opened) => read_to_end(opened.file),
            // What `Path::is_file` says no file for: nothing there, a path through a
            // file, a loop of links.
            Err(e)
                if e.kind() == std::io::ErrorKind::NotFound
                    || matches!(e.raw_os_error(), Some(libc::ENOTDIR | libc::ELOOP)) =>
            {
                return None
            }
            Err(e) => Err(e),
        };
        Some(check_read(f, read))
    })
}

/// `work` of every item of `items`, in their order, spread over the machine's cores.
fn on_every_core<T: Sync, R: Send>(items: &[T], work: impl Fn(&T) -> R + Sync) -> Vec<R> {
    let threads = std::thread::available_parallelism()
        .map_or(1, usize::from)
        .min(items.len().max(1));
    if threads <= 1 {
        return items.iter().map(&work).collect();
    }
    let next = std::sync::atomic::AtomicUsize::new(0);
    let mut done: Vec<(usize, R)> = std::thread::scope(|scope| {
        let workers: Vec<_> = (0..threads)
            .map(|_| {
                scope.spawn(|| {
                    let mut mine = Vec::new();
                    loop {
                        let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                        let Some(item) = items.get(i) else { break };
                        mine.push((i, work(item)));
                    }
                    mine
                })
            })
            .collect();
        // A worker that panicked lost its items: they are worked again here, where the
        // panic shows as the caller's.
        workers
            .into_iter()
            .flat_map(|w| w.join().unwrap_or_default())
            .collect()
    });
    done.sort_by_key(|(i, _)| *i);
    let mut out = Vec::with_capacity(items.len());
    let mut have = done.into_iter().peekable();
    for (i, item) in items.iter().enumerate() {
        match have.next_if(|(j, _)| *j == i) {
            Some((_, r)) => out.push(r),
            None => out.push(work(item)),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_regular_file_is_a_present_record_and_anything_else_is_none() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        let at = |name: &str| d.join(name).join(super::super::RECORD_FILE);
        let names = [
            "file",
            "dir",
            "fifo",
            "through-file",
            "loop",
            "linked",
            "missing",
        ];
        for name in names {
            if name != "through-file" {
                std::fs::create_dir(d.join(name)).unwrap();
            }
        }
        std::fs::write(at("file"), b"not a record").unwrap();
        std::fs::create_dir(at("dir")).unwrap();
        nix::unistd::mkfifo(&at("fifo"), nix::sys::stat::Mode::S_IRWXU).unwrap();
        std::fs::write(d.join("through-file"), b"a file, not a directory").unwrap();
        std::os::unix::fs::symlink(at("loop"), at("loop")).unwrap();
        std::os::unix::fs::symlink(at("file"), at("linked")).unwrap();
        let files: Vec<_> = names.iter().map(|n| at(n)).collect();
        let checked = check_present(&files);
        let present: Vec<&str> = names
            .iter()
            .zip(&checked)
            .filter(|(_, c)| c.is_some())
            .map(|(n, _)| *n)
            .collect();
        // As `Path::is_file` says: a link to a regular file is one (and is then checked
        // like any record); a FIFO is not, and is never read (that would block).
        assert_eq!(present, ["file", "linked"]);
        for c in checked.into_iter().flatten() {
            assert!(c.record.is_none(), "garbage loaded as a record");
            assert!(c.row.derived.is_err());
        }
    }
}
