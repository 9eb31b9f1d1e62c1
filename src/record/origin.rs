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
/// processes of one nextest run share the answer through the cache directory, under
/// the run's id ([`shared`]): every process of a run then records the same commit, and
/// a later run (a resume is one) asks git again.
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
/// process runs every trial of its run.
pub fn run_file(cfg: &Config, what: &str) -> Option<PathBuf> {
    std::env::var_os("NEXTEST_RUN_ID")
        .filter(|id| !id.is_empty())
        .map(|_| cfg.cache_dir.join(what).join(run_id()))
}

/// The commit kept in `file` by an earlier process of the run, or `ask`'s, then kept
/// there for the next. What the file holds is taken only if it is what [`ask_git`]
/// gives (a hex object id, perhaps `-dirty`; empty for none); anything else is asked
/// again and replaced. The file is written whole and renamed into place, so a reader
/// never sees half of it; processes that start together may each ask, and agree.
fn shared(file: Option<&Path>, ask: impl FnOnce() -> Option<String>) -> Option<String> {
    if let Some(text) = file.and_then(|f| std::fs::read_to_string(f).ok()) {
        if text.is_empty() {
            return None;
        }
        if is_commit(&text) {
            return Some(text);
        }
    }
    let commit = ask();
    if let Some(file) = file {
        // Not kept (a read-only cache): the next process asks git too.
        let _ = keep_whole(file, commit.as_deref().unwrap_or_default());
    }
    commit
}

/// Write `text` as the whole of `file`, which a reader sees whole or not at all.
pub fn keep_whole(file: &Path, text: &str) -> std::io::Result<()> {
    if let Some(dir) = file.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let mut tmp = file.as_os_str().to_owned();
    tmp.push(format!(".{}.tmp", std::process::id()));
    std::fs::write(&tmp, text)?;
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
/// `out_dir`.
fn ask_git(out_dir: &Path) -> Option<String> {
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
    let rev = git(&["rev-parse", "HEAD"]).filter(|r| !r.is_empty())?;
    // Absolute, as git's paths are made below (the run directory may not exist yet).
    let out = std::fs::canonicalize(out_dir).unwrap_or_else(|_| {
        std::env::current_dir()
            .map(|d| d.join(out_dir))
            .unwrap_or_else(|_| out_dir.to_path_buf())
    });
    let root_abs = std::fs::canonicalize(&root).unwrap_or_else(|_| root.clone());
    let dirty = git(&["status", "--porcelain"]).is_some_and(|s| {
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
    Some(if dirty { format!("{rev}-dirty") } else { rev })
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

    const REV: &str = "92fbcbc2e0f4a1f1a6d0c5a8f2e7b9d3c4e5f6a7";

    #[test]
    fn the_first_process_of_a_run_asks_and_the_others_read_its_answer() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("run-1");
        let asked = std::cell::Cell::new(0);
        let ask = || {
            asked.set(asked.get() + 1);
            Some(format!("{REV}-dirty"))
        };
        assert_eq!(shared(Some(&file), ask), Some(format!("{REV}-dirty")));
        assert_eq!(shared(Some(&file), ask), Some(format!("{REV}-dirty")));
        assert_eq!(asked.get(), 1, "the second process asked git again");
        // Another run asks for itself.
        let other = dir.path().join("run-2");
        assert_eq!(shared(Some(&other), || Some(REV.into())), Some(REV.into()));
        assert_eq!(asked.get(), 1);
    }

    #[test]
    fn no_commit_is_shared_as_none() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("run");
        assert_eq!(shared(Some(&file), || None), None);
        assert_eq!(
            shared(Some(&file), || panic!("asked again")),
            None,
            "an empty file is the run's answer: no commit"
        );
    }

    #[test]
    fn a_file_that_is_not_a_commit_is_asked_again_and_replaced() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("run");
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        for junk in [
            "not a commit",
            "abc",
            &format!("{REV}\n-dirty"),
            &format!("{REV}-clean"),
        ] {
            std::fs::write(&file, junk).unwrap();
            assert_eq!(
                shared(Some(&file), || Some(REV.into())),
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
                Some(REV.into())
            });
        }
        assert_eq!(asked.get(), 2);
    }
}
