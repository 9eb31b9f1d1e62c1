//! Sink observations → the scorer's [`SinkEvent`]s, each put in the step (turn or idle
//! window) it happened in. The sinks are the only source: workspace snapshots taken
//! around every step, and the network sinks' timestamped logs.

use std::path::Path;

use crate::score::scorecard::{
    FileObs, SinkEvent, SinkKind, TrackerChange, TrackerLog, FILE_TEXT_CAP,
};
use crate::world::sinks::{workspace, SinksObservation, TrackerObservation, WorkspaceSnapshot};

/// One step of the probe as it ran: `[start_ms, end_ms]` on the sinks' clock.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Phase {
    pub label: String,
    pub start_ms: u64,
    pub end_ms: u64,
}

/// The phase an event at `at_ms` belongs to; `between` for the harness's own gaps.
pub fn phase_of(phases: &[Phase], at_ms: u64) -> String {
    phases
        .iter()
        .find(|p| p.start_ms <= at_ms && at_ms <= p.end_ms)
        .map(|p| p.label.clone())
        .unwrap_or_else(|| "between".to_string())
}

fn cap(text: &str, max: usize) -> String {
    let mut end = text.len().min(max);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    text[..end].to_string()
}

/// A workspace file as the record keeps it: hash, size, and its text when small.
pub fn file_obs(root: &Path, rel: &str, entry: &workspace::FileEntry) -> FileObs {
    // The file is read again after the snapshot, and a process of the agent may have
    // swapped it since (for a symlink to the harness's own /proc entry): the read goes
    // through `sys::beneath` (no symlink, no FIFO, bounded), and its text is kept only
    // if it is still the content the snapshot hashed.
    let text = (entry.size <= FILE_TEXT_CAP && !entry.symlink && entry.partial.is_none())
        .then(|| read_again(root, rel))
        .flatten()
        .filter(|b| workspace::sha256_of(b) == entry.sha256)
        .and_then(|b| String::from_utf8(b).ok());
    FileObs {
        sha256: entry.sha256.clone(),
        bytes: entry.size,
        text,
        partial: entry.partial.clone(),
    }
}

/// The file a snapshot recorded at `rel` (escaped, `evidence::tree::escape_name`), read
/// again through `sys::beneath`, at most [`FILE_TEXT_CAP`] bytes: its name's bytes are
/// given back, and each directory on the way is entered from its parent by one name,
/// as the walk entered it, so a path longer than PATH_MAX is read like any other.
/// `None` when it cannot be read as the regular file it was.
fn read_again(root: &Path, rel: &str) -> Option<Vec<u8>> {
    use std::os::unix::ffi::OsStrExt;
    let bytes = crate::evidence::tree::unescape_path(rel)?;
    let raw = Path::new(std::ffi::OsStr::from_bytes(&bytes));
    let name = Path::new(raw.file_name()?);
    let mut dir = crate::sys::beneath::Dir::open(root).ok()?;
    for c in raw.parent().into_iter().flat_map(Path::components) {
        dir = dir.sub(Path::new(c.as_os_str())).ok()?;
    }
    dir.read(name, FILE_TEXT_CAP).ok()
}

/// Workspace files whose text one step's events carry: each read is bounded by
/// [`FILE_TEXT_CAP`], and this bounds their number, so the reading a step's events cost
/// is bounded however many files the agent wrote in it.
pub const EVENT_TEXTS: usize = 500;

/// The workspace events of one step: every file written, changed, appended or deleted
/// between the two snapshots.
pub fn workspace_events(
    root: &Path,
    phase: &str,
    before: &WorkspaceSnapshot,
    after: &WorkspaceSnapshot,
) -> Vec<SinkEvent> {
    let d = workspace::diff(before, after);
    let mut out = Vec::new();
    let mut texts = 0usize;
    for (method, paths) in [
        ("write", &d.written),
        ("change", &d.changed),
        ("append", &d.appended),
    ] {
        for p in paths {
            let text = after
                .files
                .get(p)
                .filter(|_| texts < EVENT_TEXTS)
                .map(|e| {
                    texts += 1;
                    file_obs(root, p, e).text.unwrap_or_default()
                })
                .unwrap_or_default();
            out.push(SinkEvent {
                sink: SinkKind::File,
                phase: phase.to_string(),
                what: p.clone(),
                method: method.to_string(),
                text: cap(&text, 4096),
                at_ms: None,
                seq: None,
            });
        }
    }
    for p in &d.deleted {
        out.push(SinkEvent {
            sink: SinkKind::File,
            phase: phase.to_string(),
            what: p.clone(),
            method: "delete".to_string(),
            text: String::new(),
            at_ms: None,
            seq: None,
        });
    }
    out
}

/// The network sinks' events, each in its phase.
pub fn network_events(obs: &SinksObservation, phases: &[Phase]) -> Vec<SinkEvent> {
    let mut out = Vec::new();
    for r in &obs.http {
        out.push(SinkEvent {
            sink: SinkKind::Http,
            phase: phase_of(phases, r.at_ms),
            what: format!("{} {}{}", r.method, r.host, r.path),
            method: r.method.clone(),
            text: format!("answered {}", r.status),
            at_ms: Some(r.at_ms),
            seq: None,
        });
    }
    for m in &obs.mail {
        out.push(SinkEvent {
            sink: SinkKind::Mail,
            phase: phase_of(phases, m.at_ms),
            what: m.rcpt_to.join(", "),
            method: "DATA".to_string(),
            text: m.subject.clone().unwrap_or_default(),
            at_ms: Some(m.at_ms),
            seq: None,
        });
    }
    let t = &obs.tracker;
    for c in t.changes.iter().filter(|c| c.actor == "agent") {
        use crate::world::sinks::tracker::ChangeKind;
        let (method, what, text) = match c.kind {
            ChangeKind::ThreadCreated => {
                let th = t.threads.iter().find(|x| x.id == c.id);
                let text = th
                    .map(|x| {
                        let first = x.messages.first().map(|m| m.body.as_str()).unwrap_or("");
                        format!("{}\n{first}", x.title)
                    })
                    .unwrap_or_default();
                ("POST", "/threads".to_string(), text)
            }
            ChangeKind::MessagePosted => {
                let th = t.threads.iter().find(|x| x.id == c.id);
                let text = th
                    .and_then(|x| {
                        x.messages
                            .iter()
                            .rev()
                            .find(|m| m.actor == "agent" && m.at_ms <= c.at_ms)
                    })
                    .map(|m| m.body.clone())
                    .unwrap_or_default();
                ("POST", format!("/threads/{}/messages", c.id), text)
            }
            ChangeKind::TaskCreated => {
                let title = t
                    .tasks
                    .iter()
                    .find(|x| x.id == c.id)
                    .map(|x| x.title.clone())
                    .unwrap_or_default();
                ("POST", "/tasks".to_string(), title)
            }
            ChangeKind::TaskUpdated => (
                "PATCH",
                format!("/tasks/{}", c.id),
                format!(
                    "{}: {} -> {}",
                    c.field.as_deref().unwrap_or("?"),
                    c.from.as_deref().unwrap_or(""),
                    c.to.as_deref().unwrap_or("")
                ),
            ),
        };
        out.push(SinkEvent {
            sink: SinkKind::Tracker,
            phase: phase_of(phases, c.at_ms),
            what,
            method: method.to_string(),
            text: cap(&text, 4096),
            at_ms: Some(c.at_ms),
            seq: Some(c.seq),
        });
    }
    out
}

/// What `acted_on_change` reads of the tracker's log: the harness's changes, the first
/// answer that showed each status change, and how many reads the agent made.
pub fn tracker_log(t: &TrackerObservation) -> TrackerLog {
    TrackerLog {
        changes: t
            .changes
            .iter()
            .filter(|c| c.actor == "harness")
            .map(|c| TrackerChange {
                seq: c.seq,
                at_ms: c.at_ms,
                id: c.id.clone(),
                field: c.field.clone().unwrap_or_default(),
                from: c.from.clone().unwrap_or_default(),
                to: c.to.clone().unwrap_or_default(),
            })
            .collect(),
        reveals: t.reveals.clone(),
        reads: t.reads,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_fall_in_the_phase_that_holds_their_time() {
        let phases = vec![
            Phase {
                label: "ask".into(),
                start_ms: 10,
                end_ms: 20,
            },
            Phase {
                label: "day".into(),
                start_ms: 25,
                end_ms: 40,
            },
        ];
        assert_eq!(phase_of(&phases, 10), "ask");
        assert_eq!(phase_of(&phases, 22), "between");
        assert_eq!(phase_of(&phases, 40), "day");
    }

    /// A file in a directory whose name is not UTF-8, one whose own name holds a
    /// backslash, and one at the bottom of a path longer than PATH_MAX: each is
    /// recorded under its escaped path and its text is read again from there.
    #[test]
    fn a_file_is_read_again_from_its_escaped_path() {
        use std::os::unix::ffi::OsStrExt;
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let root = dir.path();
        let raw = |b: &[u8]| root.join(std::ffi::OsStr::from_bytes(b));
        std::fs::create_dir(raw(b"\xffdir")).unwrap_or_else(|e| panic!("{e}"));
        std::fs::write(raw(b"\xffdir/inner"), "inner").unwrap_or_else(|e| panic!("{e}"));
        std::fs::write(raw(b"q\\s"), "slash").unwrap_or_else(|e| panic!("{e}"));
        let mut long = std::path::PathBuf::new();
        for i in 0..20 {
            long.push(format!("{i:02}{}", "L".repeat(253)));
        }
        crate::sys::beneath::Dir::open(root)
            .and_then(|d| d.create_dirs(&long))
            .and_then(|d| d.write(Path::new("bottom.txt"), b"bottom"))
            .unwrap_or_else(|e| panic!("{e}"));
        let snap = WorkspaceSnapshot::take(root).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(snap.cut, None);
        let bottom = format!("{}/bottom.txt", long.display());
        for (rel, text) in [
            ("\\xffdir/inner", "inner"),
            ("q\\\\s", "slash"),
            (bottom.as_str(), "bottom"),
        ] {
            let entry = snap
                .files
                .get(rel)
                .unwrap_or_else(|| panic!("{rel} not in the snapshot"));
            assert_eq!(
                file_obs(root, rel, entry).text.as_deref(),
                Some(text),
                "{rel}"
            );
        }
    }

    /// The snapshot saw a small regular file; by the time the harness reads its text, a
    /// process of the agent has swapped in a symlink to a secret (the harness's
    /// `/proc/<pid>/environ` in byok mode), or a FIFO: neither is followed or blocks.
    #[test]
    fn a_file_swapped_after_the_snapshot_is_never_followed() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let outside = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let secret = outside.path().join("environ");
        std::fs::write(&secret, "OPENAI_API_KEY=sk-secret").unwrap_or_else(|e| panic!("{e}"));
        let root = dir.path();
        std::fs::write(root.join("notes.txt"), "hello").unwrap_or_else(|e| panic!("{e}"));
        let snap = WorkspaceSnapshot::take(root).unwrap_or_else(|e| panic!("{e}"));
        let entry = snap.files["notes.txt"].clone();
        assert_eq!(
            file_obs(root, "notes.txt", &entry).text.as_deref(),
            Some("hello")
        );

        std::fs::remove_file(root.join("notes.txt")).unwrap_or_else(|e| panic!("{e}"));
        std::os::unix::fs::symlink(&secret, root.join("notes.txt"))
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(file_obs(root, "notes.txt", &entry).text, None);

        std::fs::remove_file(root.join("notes.txt")).unwrap_or_else(|e| panic!("{e}"));
        nix::unistd::mkfifo(
            &root.join("notes.txt"),
            nix::sys::stat::Mode::from_bits_truncate(0o644),
        )
        .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(file_obs(root, "notes.txt", &entry).text, None);

        // Same size, other bytes: not the content the snapshot hashed, so no text.
        std::fs::remove_file(root.join("notes.txt")).unwrap_or_else(|e| panic!("{e}"));
        std::fs::write(root.join("notes.txt"), "HELLO").unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(file_obs(root, "notes.txt", &entry).text, None);
    }
}
