//! Where this process's records come from: the run it belongs to and the gauntlet
//! source it was built from, each computed once per run.

use std::path::{Path, PathBuf};

use crate::config::Config;

/// The gauntlet commit this process runs from (a record config's `commit`), computed
/// from the repository root once per run; `None` when git or the repository is absent
/// (an installed binary, a source tarball). What the runs themselves write under
/// `out_dir` does not make the tree dirty: a run resumed in the repository would
/// otherwise never match its own first process.
///
/// Under nextest every trial is a process of its own, and asking git (`git status`
/// reads every tracked file's metadata) was a share of each trial's CPU time. The
/// processes of one nextest run share the answer through the cache directory, in a
/// file named from the run's id ([`run_file`]): every process of a run then
/// records the same commit, and a later run (a resume is one) asks git again.
pub fn gauntlet_commit(cfg: &Config) -> Option<String> {
    static COMMIT: std::sync::OnceLock<Option<String>> = std::sync::OnceLock::new();
    COMMIT
        .get_or_init(|| {
            let file = run_file(cfg, "commits");
            shared(file.as_deref(), || ask_git(&cfg.out_dir))
        })
        .clone()
}

/// Where the processes of this nextest run keep what each would otherwise find out for
/// itself, under `what` in the cache directory; `None` outside nextest, where one
/// process runs every trial of its run. The file is named by a digest of the run's id,
/// the repository and the output directory: processes of one run that write elsewhere
/// (or a test that sets a fixed run id, each time into a fresh directory) do not share,
/// and no run id, whatever it holds, names a path outside `what`.
pub fn run_file(cfg: &Config, what: &str) -> Option<PathBuf> {
    std::env::var_os("NEXTEST_RUN_ID")
        .filter(|id| !id.is_empty())
        .map(|_| run_file_in(&cfg.cache_dir.join(what), run_id(), &cfg.out_dir))
}

fn run_file_in(dir: &Path, run_id: &str, out_dir: &Path) -> PathBuf {
    let key = format!(
        "{run_id}\0{}\0{}",
        crate::binaries::repo_root().display(),
        out_dir.display()
    );
    let digest = crate::hash::sha256(key.as_bytes());
    dir.join(digest.trim_start_matches("sha256:"))
}

/// What git said, and whether every question was answered: an answer pieced together
/// from a failed `git status` (taken as a clean tree) is this process's alone.
struct Asked {
    commit: Option<String>,
    whole: bool,
}

/// The commit kept in `file` by an earlier process of the run, or `ask`'s, then kept
/// there for the next when git answered it whole. What the file holds is taken only if
/// it is what [`ask_git`] gives (a hex object id, perhaps `-dirty`); anything else is
/// asked again and replaced. No commit is never kept: a process that could not ask git
/// (a fork refused under load) does not speak for the run. The file is written whole
/// and renamed into place, so a reader never sees half of it; processes that start
/// together may each ask, and agree.
fn shared(file: Option<&Path>, ask: impl FnOnce() -> Asked) -> Option<String> {
    if let Some(text) = file.and_then(|f| std::fs::read_to_string(f).ok()) {
        if is_commit(&text) {
            return Some(text);
        }
    }
    let asked = ask();
    if let (Some(file), Some(commit), true) = (file, &asked.commit, asked.whole) {
        // Not kept (a read-only cache): the next process asks git too.
        let _ = replace_whole(file, commit.as_bytes());
    }
    asked.commit
}

/// Write `bytes` as the whole of `file` (making its directory), through a file beside
/// it and a rename: a reader sees the old file or the new one, never half of it. The
/// one way a file that others read while it may be rewritten (a report, a leaderboard,
/// what the processes of a run share) is written.
pub fn replace_whole(file: &Path, bytes: &[u8]) -> std::io::Result<()> {
    if let Some(dir) = file.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let mut tmp = file.as_os_str().to_owned();
    tmp.push(format!(".{}.tmp", std::process::id()));
    std::fs::write(&tmp, bytes)?;
    std::fs::rename(&tmp, file).inspect_err(|_| {
        let _ = std::fs::remove_file(&tmp);
    })
}

/// `<hex object id>` or `<hex object id>-dirty`, as [`ask_git`] makes it.
fn is_commit(text: &str) -> bool {
    let id = text.strip_suffix("-dirty").unwrap_or(text);
    (40..=64).contains(&id.len()) && id.bytes().all(|b| b.is_ascii_hexdigit())
}

/// The commit as git says it now, `-dirty` when the tree differs from it outside
/// `out_dir`; not whole when `git status` failed (the tree is then taken as clean).
fn ask_git(out_dir: &Path) -> Asked {
    let none = Asked {
        commit: None,
        whole: false,
    };
    let root = crate::binaries::repo_root();
    let git = |args: &[&str]| {
        std::process::Command::new("git")
            .args(args)
            .current_dir(&root)
            .stderr(std::process::Stdio::null())
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
    };
    let Some(rev) = git(&["rev-parse", "HEAD"]).filter(|r| !r.is_empty()) else {
        return none;
    };
    // Absolute, as git's paths are made below (the run directory may not exist yet).
    let out = std::fs::canonicalize(out_dir).unwrap_or_else(|_| {
        std::env::current_dir()
            .map(|d| d.join(out_dir))
            .unwrap_or_else(|_| out_dir.to_path_buf())
    });
    let root_abs = std::fs::canonicalize(&root).unwrap_or_else(|_| root.clone());
    let status = git(&["status", "--porcelain"]);
    let dirty = status.as_deref().is_some_and(|s| {
        s.lines().any(|l| {
            // `XY path` (or `XY from -> to`); a directory ends in `/`.
            let path = l
                .get(3..)
                .unwrap_or_default()
                .rsplit(" -> ")
                .next()
                .unwrap_or_default();
            let abs = root_abs.join(path.trim_end_matches('/'));
            !(abs.starts_with(&out) || out.starts_with(&abs))
        })
    });
    Asked {
        commit: Some(if dirty { format!("{rev}-dirty") } else { rev }),
        whole: status.is_some(),
    }
}

/// The id of the run this process belongs to: nextest's run id when under nextest
/// (every test process of one run shares it), otherwise one generated per process.
pub fn run_id() -> &'static str {
    static ID: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    ID.get_or_init(|| match std::env::var("NEXTEST_RUN_ID") {
        Ok(id) if !id.is_empty() => id,
        _ => format!(
            "local-{}-{}",
            chrono::Utc::now().format("%Y%m%dT%H%M%SZ"),
            std::process::id()
        ),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_replaced_file_is_whole_and_leaves_nothing_beside_it() {
        let d = tempfile::tempdir().unwrap();
        let file = d.path().join("made/on/the/way/report.md");
        super::replace_whole(&file, b"first").unwrap();
        super::replace_whole(&file, b"second").unwrap();
        assert_eq!(std::fs::read(&file).unwrap(), b"second");
        let beside: Vec<_> = std::fs::read_dir(file.parent().unwrap())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(beside, vec![std::ffi::OsString::from("report.md")]);
        // A directory where the file should be: an error, and no temporary file left.
        let dir_in_the_way = d.path().join("taken");
        std::fs::create_dir_all(dir_in_the_way.join("x")).unwrap();
        assert!(super::replace_whole(&dir_in_the_way, b"x").is_err());
        assert_eq!(std::fs::read_dir(d.path()).unwrap().count(), 2);
    }

    const REV: &str = "92fbcbc2e0f4a1f1a6d0c5a8f2e7b9d3c4e5f6a7";

    fn whole(commit: &str) -> Asked {
        Asked {
            commit: Some(commit.into()),
            whole: true,
        }
    }

    #[test]
    fn the_first_process_of_a_run_asks_and_the_others_read_its_answer() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("runs");
        let file = run_file_in(dir.path(), "run-1", &out);
        let asked = std::cell::Cell::new(0);
        let ask = || {
            asked.set(asked.get() + 1);
            whole(&format!("{REV}-dirty"))
        };
        assert_eq!(shared(Some(&file), ask), Some(format!("{REV}-dirty")));
        assert_eq!(shared(Some(&file), ask), Some(format!("{REV}-dirty")));
        assert_eq!(asked.get(), 1, "the second process asked git again");
        // Another run, or the same run id writing elsewhere, asks for itself.
        for other in [
            run_file_in(dir.path(), "run-2", &out),
            run_file_in(dir.path(), "run-1", &dir.path().join("elsewhere")),
        ] {
            assert_ne!(other, file);
            assert_eq!(shared(Some(&other), || whole(REV)), Some(REV.into()));
        }
        assert_eq!(asked.get(), 1);
    }

    #[test]
    fn a_run_id_names_no_path_outside_its_folder() {
        let dir = std::path::Path::new("/cache/commits");
        for id in ["../../etc/passwd", "a/b", "/abs", ""] {
            let file = run_file_in(dir, id, std::path::Path::new("out"));
            assert_eq!(file.parent(), Some(dir), "{id:?}");
        }
    }

    #[test]
    fn an_answer_git_did_not_give_whole_is_not_kept() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("run");
        // No commit (git could not be asked, or no repository): the next process asks.
        let none = || Asked {
            commit: None,
            whole: false,
        };
        assert_eq!(shared(Some(&file), none), None);
        assert!(!file.exists());
        // A commit whose `git status` failed is this process's alone.
        let partial = || Asked {
            commit: Some(REV.into()),
            whole: false,
        };
        assert_eq!(shared(Some(&file), partial), Some(REV.into()));
        assert!(!file.exists());
        assert_eq!(
            shared(Some(&file), || whole(&format!("{REV}-dirty"))),
            Some(format!("{REV}-dirty"))
        );
    }

    #[test]
    fn a_file_that_is_not_a_commit_is_asked_again_and_replaced() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("run");
        for junk in [
            "",
            "not a commit",
            "abc",
            &format!("{REV}\n-dirty"),
            &format!("{REV}-clean"),
        ] {
            std::fs::write(&file, junk).unwrap();
            assert_eq!(
                shared(Some(&file), || whole(REV)),
                Some(REV.into()),
                "{junk:?}"
            );
            assert_eq!(std::fs::read_to_string(&file).unwrap(), REV);
        }
    }

    #[test]
    fn without_a_file_every_process_asks() {
        let asked = std::cell::Cell::new(0);
        for _ in 0..2 {
            shared(None, || {
                asked.set(asked.get() + 1);
                whole(REV)
            });
        }
        assert_eq!(asked.get(), 2);
    }
}
