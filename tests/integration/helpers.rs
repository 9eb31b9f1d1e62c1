//! gauntlet's own programs as a repository that adopts gauntlet has them: installed on
//! `PATH`, apart from the binaries of its build. A run finds them there and runs its
//! trials through them; a missing or older one stops the run before any trial, naming
//! the install command and both versions.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use gauntlet::binaries::{bin_dir, HELPERS, INSTALL_HELPERS};

/// `names` from this build's binaries into `dir`: hard links where they can be (the
/// same file system, no copy of a large binary), copies where they cannot.
fn place(names: &[&str], dir: &Path) {
    std::fs::create_dir_all(dir).expect("mkdir");
    for name in names {
        let from = bin_dir().join(name);
        let to = dir.join(name);
        if std::fs::hard_link(&from, &to).is_err() {
            std::fs::copy(&from, &to).unwrap_or_else(|e| panic!("{}: {e}", from.display()));
        }
    }
}

/// A scratch directory beside this build's binaries, so that they link rather than copy.
fn scratch() -> tempfile::TempDir {
    tempfile::tempdir_in(bin_dir()).expect("a scratch directory beside the binaries")
}

/// `gauntlet run` of one cheap trial, started from `installed`, with the sample apps
/// alone in `GAUNTLET_BIN_DIR` and `PATH` as given.
fn run(installed: &Path, apps: &Path, path: &str, out: &Path) -> Output {
    let mut cmd = Command::new(installed.join("gauntlet"));
    for (k, _) in std::env::vars_os() {
        let k = k.to_string_lossy().into_owned();
        if k.starts_with("GAUNTLET_") || k.starts_with("NEXTEST") || k.starts_with("CARGO") {
            cmd.env_remove(&k);
        }
    }
    cmd.args(["run", "--filter", "qa::api-ledger::health", "--jobs", "1"])
        .current_dir(crate::support::root())
        .env("PATH", path)
        .env("GAUNTLET_BIN_DIR", apps)
        .env("GAUNTLET_OUT", out)
        .env("GAUNTLET_N", "1")
        .output()
        .expect("gauntlet runs")
}

#[test]
fn helpers_installed_on_path_run_a_trial_and_a_missing_or_older_one_stops_the_run() {
    let tmp = scratch();
    // The sample apps this build holds (a run checks every app's binary is there).
    let apps = tmp.path().join("apps");
    let names: Vec<String> = std::fs::read_dir(crate::support::root().join("apps"))
        .expect("apps/")
        .filter_map(|e| Some(e.ok()?.file_name().to_string_lossy().into_owned()))
        .filter(|n| bin_dir().join(n).is_file())
        .collect();
    assert!(names.iter().any(|n| n == "api-ledger"), "{names:?}");
    place(&names.iter().map(String::as_str).collect::<Vec<_>>(), &apps);
    let installed = tmp.path().join("installed");
    place(HELPERS, &installed);
    let system = "/usr/local/bin:/usr/bin:/bin";

    // Installed on PATH: the trial runs through them, sandbox and agent included.
    let on_path = format!("{}:{system}", installed.display());
    let out = tmp.path().join("runs");
    let o = run(&installed, &apps, &on_path, &out);
    assert!(o.status.success(), "{}", crate::support::said(&o));
    let run_dir: PathBuf = std::fs::read_dir(&out)
        .expect("runs")
        .next()
        .expect("a run directory")
        .expect("entry")
        .path();
    let rec = gauntlet::record::load(&run_dir.join("qa.api-ledger.health/record.json"))
        .expect("the trial's record");
    assert_eq!(
        rec.verdict.outcome,
        gauntlet::score::Outcome::Verified,
        "{}",
        rec.verdict.reason
    );
    assert_eq!(
        rec.header.config.sandbox,
        gauntlet::config::Sandbox::Sealed,
        "the trial ran sealed"
    );

    // Not on PATH: the run stops before any trial, saying how to install them.
    let out = tmp.path().join("runs-missing");
    let o = run(&installed, &apps, system, &out);
    assert_eq!(o.status.code(), Some(2), "{}", crate::support::said(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("is neither in"), "{err}");
    assert!(err.contains(INSTALL_HELPERS), "{err}");
    assert!(
        !out.exists(),
        "no run directory for a run that never started"
    );

    // An older reaper: named, with both versions.
    let old = tmp.path().join("old");
    place(HELPERS, &old);
    let reap = old.join("gauntlet-reap");
    std::fs::remove_file(&reap).expect("rm");
    std::fs::write(&reap, "#!/bin/sh\necho 'gauntlet-reap 0.0.1'\n").expect("write");
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&reap, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    }
    let o = run(
        &installed,
        &apps,
        &format!("{}:{system}", old.display()),
        &tmp.path().join("runs-old"),
    );
    assert_eq!(o.status.code(), Some(2), "{}", crate::support::said(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("gauntlet-reap: is version `0.0.1`"), "{err}");
    assert!(err.contains(INSTALL_HELPERS), "{err}");
}
