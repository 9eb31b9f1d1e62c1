//! Where this process runs, as a run directory records it: the host, and — when the
//! process is a trial started by nextest — the `--partition` and `--archive-file` that
//! nextest was given.
//!
//! nextest hands a test its run id but not its partition or archive, so they are read
//! from nextest's own command line: the nearest ancestor process that is
//! `cargo-nextest … run`. That is the command the user typed, so a partition recorded
//! here cannot disagree with the one that chose the trials; nothing has to be said
//! twice in a CI job, and nothing can be forgotten.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

/// How many ancestors to look through for nextest (a target runner or a wrapper may sit
/// between nextest and the trial).
const MAX_DEPTH: usize = 6;

/// What the nextest run that started this process was asked to do.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Invocation {
    /// `--partition`, as given (`count:1/2`, `hash:3/4`, `slice:…`).
    pub partition: Option<String>,
    /// `--archive-file`, made absolute against nextest's working directory.
    pub archive: Option<PathBuf>,
}

/// The nextest invocation above this process, when nextest started it (`NEXTEST` is
/// set) and its command line is readable.
pub fn invocation() -> Option<Invocation> {
    std::env::var_os("NEXTEST")?;
    let mut pid = std::os::unix::process::parent_id();
    for _ in 0..MAX_DEPTH {
        if pid <= 1 {
            return None;
        }
        let proc_dir = PathBuf::from(format!("/proc/{pid}"));
        let args = cmdline(&proc_dir.join("cmdline"))?;
        if is_nextest_run(&args) {
            let cwd = std::fs::read_link(proc_dir.join("cwd")).unwrap_or_default();
            return Some(parse(&args, &cwd));
        }
        pid = parent_of(&proc_dir.join("stat"))?;
    }
    None
}

fn cmdline(file: &Path) -> Option<Vec<OsString>> {
    use std::os::unix::ffi::OsStrExt;
    let bytes = std::fs::read(file).ok()?;
    Some(
        bytes
            .split(|b| *b == 0)
            .filter(|a| !a.is_empty())
            .map(|a| std::ffi::OsStr::from_bytes(a).to_os_string())
            .collect(),
    )
}

/// The parent pid from `/proc/<pid>/stat`: the field after the command name, which is
/// parenthesised and may itself hold spaces and parentheses.
fn parent_of(stat: &Path) -> Option<u32> {
    let text = std::fs::read_to_string(stat).ok()?;
    let after = &text[text.rfind(')')? + 1..];
    after.split_whitespace().nth(1)?.parse().ok()
}

/// `cargo-nextest nextest run …` (as `cargo nextest run` execs it) or `cargo-nextest run`.
fn is_nextest_run(args: &[OsString]) -> bool {
    let Some(program) = args.first() else {
        return false;
    };
    let program = Path::new(program);
    program
        .file_name()
        .is_some_and(|n| n.to_string_lossy().starts_with("cargo-nextest"))
        && args.iter().skip(1).take(2).any(|a| a == "run" || a == "r")
}

/// `--partition X` / `--partition=X` and `--archive-file X` / `--archive-file=X`; the
/// last occurrence wins, as in clap.
pub fn parse(args: &[OsString], cwd: &Path) -> Invocation {
    let mut found = Invocation::default();
    let mut it = args.iter().skip(1);
    while let Some(arg) = it.next() {
        let arg = arg.to_string_lossy();
        let (flag, inline) = match arg.split_once('=') {
            Some((f, v)) if f.starts_with("--") => (f.to_string(), Some(v.to_string())),
            _ => (arg.to_string(), None),
        };
        if flag == "--" {
            break;
        }
        let mut value = || {
            inline
                .clone()
                .or_else(|| it.next().map(|v| v.to_string_lossy().into_owned()))
        };
        match flag.as_str() {
            "--partition" => found.partition = value(),
            "--archive-file" => found.archive = value().map(|v| cwd.join(v)),
            _ => {}
        }
    }
    found
}

/// This machine's name.
pub fn host() -> String {
    nix::unistd::gethostname()
        .map(|h| h.to_string_lossy().into_owned())
        .unwrap_or_else(|_| "unknown".into())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(a: &[&str]) -> Vec<OsString> {
        a.iter().map(OsString::from).collect()
    }

    #[test]
    fn both_spellings_of_the_flags_are_read_and_relative_archives_made_absolute() {
        let cwd = Path::new("/src/tree");
        let inv = parse(
            &args(&[
                "/root/.cargo/bin/cargo-nextest",
                "nextest",
                "run",
                "--archive-file",
                "ship/g.tar.zst",
                "--partition=count:2/3",
                "--",
                "--partition",
                "count:9/9",
            ]),
            cwd,
        );
        assert_eq!(inv.partition.as_deref(), Some("count:2/3"));
        assert_eq!(inv.archive, Some(PathBuf::from("/src/tree/ship/g.tar.zst")));
        let plain = parse(&args(&["cargo-nextest", "nextest", "run"]), cwd);
        assert_eq!(plain, Invocation::default());
    }

    #[test]
    fn only_a_nextest_run_is_taken_for_one() {
        assert!(is_nextest_run(&args(&[
            "/x/cargo-nextest",
            "nextest",
            "run"
        ])));
        assert!(!is_nextest_run(&args(&[
            "/x/cargo-nextest",
            "nextest",
            "list"
        ])));
        assert!(!is_nextest_run(&args(&["/bin/sh", "-c", "run"])));
    }

    #[test]
    fn the_parent_is_read_past_a_command_name_with_parentheses() {
        let dir = tempfile::tempdir().unwrap();
        let stat = dir.path().join("stat");
        std::fs::write(&stat, "42 (we (i) rd) S 17 42 42 0").unwrap();
        assert_eq!(parent_of(&stat), Some(17));
    }
}
