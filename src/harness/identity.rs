//! What a run is planned with, its identity (`run.json`): the config without where
//! runs go, a digest of every spec and planned trial, the binaries the trials will
//! run, and where each task stands against the committed audit. A resumed run, and
//! every nextest process of a run, checks its own against it.

use std::path::Path;

use crate::config::Config;
use crate::plan::Suites;
use crate::spec::Suite;

/// The binaries every trial of `suites` may start: the agent, the reaper, and those
/// each suite names (an app built by this package). The run's identity fingerprints
/// them, and a run refuses to start without them.
pub fn trial_binaries(suites: &Suites) -> Vec<&str> {
    let mut bins: std::collections::BTreeSet<&str> = Suite::ALL
        .into_iter()
        .flat_map(|s| crate::suites::runner(s).binaries(suites))
        .collect();
    bins.extend(["gauntlet-agent", crate::sys::warm::REAPER]);
    bins.into_iter().collect()
}

/// What this process would plan a run with: its config (without where runs go) and a
/// digest of every spec, for `run.json` and for checking a resumed run against it.
/// Each suite's runner names its own entries: the harness knows no suite's data.
pub fn run_identity(
    cfg: &Config,
    suites: &Suites,
) -> std::io::Result<crate::record::identity::RunIdentity> {
    let mut config = serde_json::to_value(cfg).map_err(std::io::Error::other)?;
    if let Some(map) = config.as_object_mut() {
        map.remove("out_dir");
        // The data directories as the repository names them: two machines (two
        // partitions of one run) check out the same repository at different paths.
        let root = crate::binaries::repo_root();
        for value in map.values_mut() {
            if let serde_json::Value::String(dir) = value {
                if let Ok(inside) = Path::new(dir.as_str()).strip_prefix(&root) {
                    *dir = inside.display().to_string();
                }
            }
        }
    }
    let mut specs = std::collections::BTreeMap::new();
    for s in Suite::ALL {
        specs.extend(crate::suites::runner(s).specs(suites, cfg)?);
    }
    let mut harness = std::collections::BTreeMap::new();
    harness.insert(
        "commit".into(),
        crate::record::gauntlet_commit(cfg).unwrap_or_else(|| "unknown".into()),
    );
    harness.insert(
        "agent_version".into(),
        crate::agent::adapter_for(&cfg.agent).version(),
    );
    for name in ["gauntlet-seal", "gauntlet-cli-relay"]
        .into_iter()
        .chain(trial_binaries(suites))
    {
        harness.insert(
            format!("bin:{name}"),
            fingerprint(&crate::binaries::bin_path(name)),
        );
    }
    let tasks = task_hashes(suites, &crate::suites::plan(suites, cfg, None, || None))?;
    Ok(crate::record::identity::RunIdentity {
        gauntlet_version: crate::VERSION.into(),
        config,
        specs,
        harness,
        placement: None,
        hackability: Some(run_hackability(cfg, &tasks)),
    })
}

/// The hash of each task of `plan` (a trial's name without its repeat), in plan order,
/// with its suite: what `run.json` holds each task's audit standing by, and what a
/// hackability audit pins ([`crate::record::identity::task_hash`] of the parts its
/// suite's runner names). A trial that names data not loaded has no hash.
pub fn task_hashes(
    suites: &Suites,
    plan: &[crate::plan::Trial],
) -> std::io::Result<Vec<(String, Suite, String)>> {
    use crate::record::hackability::task_of;
    let mut seen = std::collections::BTreeSet::new();
    let firsts: Vec<&crate::plan::Trial> = plan
        .iter()
        .filter(|t| seen.insert(task_of(&t.name)))
        .collect();
    let mut hashes: Vec<Option<String>> = vec![None; firsts.len()];
    for s in Suite::ALL {
        let (at, tasks): (Vec<usize>, Vec<&crate::plan::Trial>) = firsts
            .iter()
            .enumerate()
            .filter(|(_, t)| t.suite == s)
            .map(|(i, t)| (i, *t))
            .unzip();
        let parts = crate::suites::runner(s).task_parts(suites, &tasks)?;
        for (i, parts) in at.into_iter().zip(parts) {
            hashes[i] = parts.map(|p| crate::record::identity::task_hash(&p));
        }
    }
    Ok(firsts
        .into_iter()
        .zip(hashes)
        .filter_map(|(t, h)| Some((task_of(&t.name).to_string(), t.suite, h?)))
        .collect())
}

/// Where each of `tasks` stands against the repository's audit
/// (`redteam/audited.json`): a missing or unreadable audit leaves every task
/// unaudited, saying why, rather than failing the run.
fn run_hackability(
    cfg: &Config,
    tasks: &[(String, Suite, String)],
) -> crate::record::hackability::RunHackability {
    use crate::record::hackability::{Hackability, RunHackability, AUDITED_FILE};
    let file = cfg.redteam_dir.join(AUDITED_FILE);
    let shown = file
        .strip_prefix(crate::binaries::repo_root())
        .unwrap_or(&file)
        .display()
        .to_string();
    let audit = match std::fs::read(&file) {
        Ok(bytes) => serde_json::from_slice::<Hackability>(&bytes)
            .map(|a| (a, crate::hash::sha256(&bytes)))
            .map_err(|e| format!("{shown}: not an audit: {e}")),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Err(format!(
            "no audit at {shown}: `gauntlet redteam --write-audited` makes one"
        )),
        Err(e) => Err(format!("{shown}: {e}")),
    };
    let catalogue = crate::spec::redteam::Catalogue::load(&cfg.redteam_dir)
        .map(|c| c.id())
        .map_err(|e| e.to_string());
    RunHackability::of(&shown, audit, catalogue, tasks)
}

/// Where this process runs: the host and, under nextest, the partition and archive it
/// was given. Hashing an archive reads all of it (a debug build's is a gigabyte), so
/// only the process that writes a run's `run.json` asks.
pub(super) fn placement() -> crate::record::identity::Placement {
    let nextest = crate::sys::nextest::invocation().unwrap_or_default();
    crate::record::identity::Placement {
        host: crate::sys::nextest::host(),
        partition: nextest.partition,
        archive: nextest
            .archive
            .map(|file| match crate::record::digest::file_sha256(&file) {
                Ok(digest) => digest,
                Err(e) => format!("unreadable: {e}"),
            }),
    }
}

/// A binary as a resume can tell it apart cheaply: its size and modification time (a
/// debug build is hundreds of megabytes, and every trial process takes the identity).
fn fingerprint(bin: &Path) -> String {
    match std::fs::metadata(bin) {
        Ok(m) => {
            let modified = m
                .modified()
                .ok()
                .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
                .map_or(0, |d| d.as_nanos());
            format!("{} bytes, modified {modified} ns", m.len())
        }
        Err(_) => "absent".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::hackability::{Hackability, AUDITED_FILE};

    /// How a task is hashed is part of what the committed audit vouches for: a change
    /// to it, rather than to a task, would leave every task unaudited. So the
    /// repository's own tasks, hashed the way `run.json` and the audit hash them, must
    /// be the committed audit's, each at its pinned hash.
    #[test]
    fn the_repository_identity_keeps_the_committed_audit_hashes() {
        let out = tempfile::tempdir().unwrap();
        let cfg = Config {
            out_dir: out.path().to_path_buf(),
            ..Config::default()
        };
        let suites = crate::suites::load(&cfg).unwrap();
        let audit = Hackability::read(&cfg.redteam_dir.join(AUDITED_FILE)).unwrap();
        let plan = crate::suites::plan(&suites, &cfg, None, || None);
        let tasks = task_hashes(&suites, &plan).unwrap();
        let now: Vec<(&str, Suite, &str)> = tasks
            .iter()
            .map(|(t, s, h)| (t.as_str(), *s, h.as_str()))
            .collect();
        let audited: Vec<(&str, Suite, &str)> = audit
            .tasks
            .iter()
            .map(|t| (t.task.as_str(), t.suite, t.hash.as_str()))
            .collect();
        assert_eq!(now, audited);
        for s in Suite::ALL {
            assert!(
                now.iter().any(|t| t.1 == s),
                "no {s} task in the repository"
            );
        }
        let id = run_identity(&cfg, &suites).unwrap();
        assert!(id.pins_trials());
        let recorded = id.hackability.unwrap();
        assert_eq!(recorded.tasks.len(), audited.len());
        for (task, _, _) in &audited {
            assert_eq!(
                recorded.tasks[*task].standing,
                crate::record::hackability::Standing::Audited,
                "{task}"
            );
        }
    }
}
