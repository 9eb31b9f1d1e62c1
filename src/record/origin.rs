//! Where this process's records come from: the run it belongs to and the gauntlet
//! source it was built from, each computed once per process.

use std::path::Path;

/// The gauntlet commit this process runs from (a record config's `commit`), computed
/// once per process from the repository root; `None` when git or the repository is
/// absent (an installed binary, a source tarball). What the runs themselves write under
/// `out_dir` does not make the tree dirty: a run resumed in the repository would
/// otherwise never match its own first process.
pub fn gauntlet_commit(out_dir: &Path) -> Option<String> {
    static COMMIT: std::sync::OnceLock<Option<String>> = std::sync::OnceLock::new();
    COMMIT
        .get_or_init(|| {
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
        })
        .clone()
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
