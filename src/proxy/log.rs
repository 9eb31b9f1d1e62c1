//! The usage log shared by every wire protocol.
//!
//! A call gets its sequence number when it arrives but is recorded when it ends (a
//! stream's usage is only known at its end), so the snapshot sorts by sequence number to
//! give arrival order regardless of which call finished first.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard, OnceLock};
use std::time::Instant;

use bytes::Bytes;

use crate::evidence::usage::{Totals, UsageEntry};

#[derive(Debug, Default)]
pub(crate) struct UsageLog {
    next_seq: AtomicU64,
    /// Input plus output tokens of every recorded call: what a token budget is
    /// checked against, kept apart so the check does not walk the log.
    metered: AtomicU64,
    entries: Mutex<Entries>,
    /// Request bodies by sequence number, kept only once [`UsageLog::keep_bodies`] was
    /// called (tests that check what an agent sent, e.g. a resumed conversation);
    /// `None`, the default, keeps nothing, so a trial's memory does not grow with them.
    bodies: Mutex<Option<Vec<(u64, Bytes)>>>,
    /// Where each entry is also written as one JSON line the moment its call ends (the
    /// standalone proxy's `--usage-log`), so a proxy killed mid-run loses no call that
    /// finished; a call's line is only built when there is a file.
    sink: OnceLock<Sink>,
}

/// The recorded calls, and their totals.
#[derive(Debug, Default)]
struct Entries {
    kept: Vec<UsageEntry>,
    totals: Totals,
    /// Set by [`UsageLog::keep_totals_only`]: entries are added to the totals only.
    totals_only: bool,
}

/// The usage-log file, opened for appending, and the first write that failed (after
/// which nothing more is written: a log with a hole would read as complete).
///
/// Lines are written without a lock: a call's line is one `write` to a file opened
/// with `O_APPEND`, which the kernel places at the end as a whole, so the lines of
/// calls ending at once on different threads never interleave. A lock around the write
/// made those threads wait on each other's system call, which cost calls per second
/// under many connections (README.md, "Status").
#[derive(Debug)]
struct Sink {
    file: std::fs::File,
    error: OnceLock<std::io::Error>,
}

impl UsageLog {
    /// Open an entry for a call that just arrived.
    pub(crate) fn begin(&self, protocol: &str, path: &str) -> Pending {
        Pending {
            entry: UsageEntry {
                seq: self.next_seq.fetch_add(1, Ordering::SeqCst),
                protocol: protocol.to_owned(),
                path: path.to_owned(),
                ..UsageEntry::default()
            },
            started: Instant::now(),
        }
    }

    pub(crate) fn record(&self, pending: Pending) {
        let mut entry = pending.entry;
        entry.duration_ms =
            u64::try_from(pending.started.elapsed().as_millis()).unwrap_or(u64::MAX);
        let tokens = entry
            .input_tokens
            .unwrap_or(0)
            .saturating_add(entry.output_tokens.unwrap_or(0));
        // Built and written outside the entries' lock, which every call's budget check,
        // snapshot and record take: no call waits on another's file write. Written
        // before the entry is pushed, so a snapshot (the summary on SIGTERM) never
        // counts a call whose line is not yet in the file.
        if let Some(sink) = self.sink.get() {
            sink.write(&Sink::line(&entry));
        }
        let mut entries = self.lock();
        // Under the lock, so a snapshot never shows entries the total does not count.
        self.metered.fetch_add(tokens, Ordering::SeqCst);
        entries.totals.add(&entry);
        if !entries.totals_only {
            entries.kept.push(entry);
        }
    }

    /// From now on, keep no entries, only their [`Totals`] (and the tee file's lines):
    /// for a proxy that may run for days, whose memory must not grow with its calls.
    pub(crate) fn keep_totals_only(&self) {
        self.lock().totals_only = true;
    }

    /// Every call recorded so far, added up (kept entries or not).
    pub(crate) fn totals(&self) -> Totals {
        self.lock().totals.clone()
    }

    /// From now on, also write every entry to `file`, opened for appending, as one
    /// JSON line; only the first file given is written.
    pub(crate) fn tee_to(&self, file: std::fs::File) {
        let _ = self.sink.set(Sink {
            file,
            error: OnceLock::new(),
        });
    }

    /// The first write to the tee file that failed, if any.
    pub(crate) fn tee_error(&self) -> Option<String> {
        self.sink
            .get()
            .and_then(|s| s.error.get().map(|e| e.to_string()))
    }

    /// Input plus output tokens of every call recorded so far.
    pub(crate) fn metered(&self) -> u64 {
        self.metered.load(Ordering::SeqCst)
    }

    /// From now on, keep the body of every model call.
    pub(crate) fn keep_bodies(&self) {
        let mut bodies = lock(&self.bodies);
        if bodies.is_none() {
            *bodies = Some(Vec::new());
        }
    }

    /// Keep `body` as the request of call `seq`, when bodies are kept.
    pub(crate) fn body(&self, seq: u64, body: &Bytes) {
        if let Some(bodies) = lock(&self.bodies).as_mut() {
            bodies.push((seq, body.clone()));
        }
    }

    /// The kept request bodies, in arrival order.
    pub(crate) fn bodies(&self) -> Vec<(u64, Bytes)> {
        let mut bodies = lock(&self.bodies).clone().unwrap_or_default();
        bodies.sort_by_key(|(seq, _)| *seq);
        bodies
    }

    pub(crate) fn snapshot(&self) -> Vec<UsageEntry> {
        let mut entries = self.lock().kept.clone();
        entries.sort_by_key(|e| e.seq);
        entries
    }

    /// A panic while holding the lock cannot leave a half-written entry (pushes are
    /// atomic), so a poisoned lock is still safe to use: never lose the other entries.
    fn lock(&self) -> MutexGuard<'_, Entries> {
        lock(&self.entries)
    }
}

impl Sink {
    /// `entry` as one JSON line.
    fn line(entry: &UsageEntry) -> Vec<u8> {
        // Plain data: serializing cannot fail.
        let mut line = Vec::with_capacity(256);
        let _ = serde_json::to_writer(&mut line, entry);
        line.push(b'\n');
        line
    }

    fn write(&self, line: &[u8]) {
        use std::io::Write;
        if self.error.get().is_some() {
            return;
        }
        // One write per line; a short one (a full disk) ends the log rather than
        // finishing the line in a second write another thread's line could precede.
        let failed = match (&self.file).write(line) {
            Ok(n) if n == line.len() => return,
            Ok(n) => std::io::Error::new(
                std::io::ErrorKind::WriteZero,
                format!("only {n} of a line's {} bytes were written", line.len()),
            ),
            Err(e) => e,
        };
        let _ = self.error.set(failed);
    }
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// An entry being filled in while its call runs.
#[derive(Debug)]
pub(crate) struct Pending {
    pub(crate) entry: UsageEntry,
    started: Instant,
}

/// Token counts of one call, however they were obtained.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Tokens {
    pub(crate) input: Option<u64>,
    pub(crate) output: Option<u64>,
    pub(crate) cached_input: Option<u64>,
    pub(crate) reasoning: Option<u64>,
    pub(crate) cache_write: Option<u64>,
}

impl Pending {
    pub(crate) fn set_tokens(&mut self, tokens: Tokens) {
        self.entry.input_tokens = tokens.input;
        self.entry.output_tokens = tokens.output;
        self.entry.cached_input_tokens = tokens.cached_input;
        self.entry.reasoning_tokens = tokens.reasoning;
        self.entry.cache_write_tokens = tokens.cache_write;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_log_keeping_totals_only_keeps_no_entry_and_still_counts_every_call() {
        let log = UsageLog::default();
        let call = |tokens: u64| {
            let mut pending = log.begin("chat", "/v1/chat/completions");
            pending.set_tokens(Tokens {
                input: Some(tokens),
                ..Tokens::default()
            });
            log.record(pending);
        };
        call(5);
        log.keep_totals_only();
        call(7);
        call(11);
        assert_eq!(log.snapshot().len(), 1, "entries kept after totals only");
        assert_eq!(log.totals().calls(), 3);
        assert_eq!(log.metered(), 23, "the budget's count missed a call");
        assert!(
            log.totals()
                .to_string()
                .contains("tokens in / out / cached: 23 / 0 / 0"),
            "{}",
            log.totals()
        );
    }

    #[test]
    fn lines_written_from_many_threads_at_once_never_interleave() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("usage.jsonl");
        let file = std::fs::OpenOptions::new()
            .create_new(true)
            .append(true)
            .open(&path)
            .unwrap();
        let log = std::sync::Arc::new(UsageLog::default());
        log.tee_to(file);
        let threads: Vec<_> = (0..8)
            .map(|_| {
                let log = std::sync::Arc::clone(&log);
                std::thread::spawn(move || {
                    for _ in 0..500 {
                        // Long enough lines that a torn write would show.
                        let mut pending = log.begin("chat", &"/v1/chat/completions".repeat(40));
                        pending.set_tokens(Tokens {
                            input: Some(3),
                            ..Tokens::default()
                        });
                        log.record(pending);
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        assert_eq!(log.tee_error(), None);
        let text = std::fs::read_to_string(&path).unwrap();
        let mut seqs: Vec<u64> = text
            .lines()
            .map(|l| {
                serde_json::from_str::<UsageEntry>(l)
                    .unwrap_or_else(|e| panic!("a torn line ({e}): {l}"))
                    .seq
            })
            .collect();
        seqs.sort_unstable();
        assert_eq!(seqs, (0..4000).collect::<Vec<_>>());
    }

    #[test]
    fn bodies_are_kept_only_once_asked_and_in_arrival_order() {
        let log = UsageLog::default();
        log.body(0, &Bytes::from_static(b"before"));
        assert!(log.bodies().is_empty(), "kept without being asked");
        log.keep_bodies();
        log.body(2, &Bytes::from_static(b"second"));
        log.body(1, &Bytes::from_static(b"first"));
        log.keep_bodies();
        let kept = log.bodies();
        assert_eq!(
            kept,
            [
                (1, Bytes::from_static(b"first")),
                (2, Bytes::from_static(b"second"))
            ]
        );
    }
}
