//! The harness's own verification of a claimed test: N runs against the app and one
//! against the mutant, each blind (docs/sealing.md, "The blind gate").

use std::future::Future;
use std::path::{Component, Path, PathBuf};
use std::time::Instant;

use futures_util::stream::{FuturesOrdered, StreamExt};

use super::gate_run::{GateContext, GateSlot, MAX_TEST_DIR_BYTES, TEST_DIR_LIMITS};
use super::independence::Kept;
use crate::config::Config;
use crate::evidence::{Gate, GateTarget, RawFile, Specificity};
use crate::spec::LoadedApp;
use crate::world::target::Target;

/// Why the gate does not run a claimed test directory. Recorded as the gate's
/// `not_run`, so the claim cannot pass.
#[derive(Debug, thiserror::Error)]
pub enum TestDirError {
    #[error("test dir `{dir}` is not a relative path inside the workspace")]
    NotRelative { dir: String },
    #[error("test dir `{dir}`: {source}")]
    Unreadable {
        dir: String,
        #[source]
        source: std::io::Error,
    },
    #[error("workspace: {0}")]
    Workspace(#[source] std::io::Error),
    #[error("test dir `{dir}` leaves the workspace")]
    Leaves { dir: String },
    #[error("test dir `{dir}` is not a directory")]
    NotADirectory { dir: String },
    #[error("test dir {} holds {total} bytes, over the gate's limit of {limit}", .path.display())]
    TooLarge {
        path: PathBuf,
        total: u64,
        limit: u64,
    },
    #[error("test dir {} holds more than {limit} entries, the gate's limit", .path.display())]
    TooMany { path: PathBuf, limit: usize },
    #[error("test dir {} nests deeper than {limit} directories, the gate's limit", .path.display())]
    TooDeep { path: PathBuf, limit: usize },
    #[error("test dir {}: measuring it {cut}", .path.display())]
    Stopped {
        path: PathBuf,
        cut: crate::evidence::tree::Cut,
    },
    #[error("test dir: {0}")]
    Walk(#[source] crate::sys::walk::WalkError),
}

/// The claimed test directory, if it is a directory inside the workspace.
pub fn resolve_test_dir(workspace: &Path, dir: &str) -> Result<PathBuf, TestDirError> {
    let rel = Path::new(dir);
    if rel.is_absolute() || rel.components().any(|c| matches!(c, Component::ParentDir)) {
        return Err(TestDirError::NotRelative { dir: dir.into() });
    }
    let full = workspace.join(rel);
    let canon = full
        .canonicalize()
        .map_err(|source| TestDirError::Unreadable {
            dir: dir.into(),
            source,
        })?;
    let ws = workspace.canonicalize().map_err(TestDirError::Workspace)?;
    if !canon.starts_with(&ws) {
        return Err(TestDirError::Leaves { dir: dir.into() });
    }
    if !canon.is_dir() {
        return Err(TestDirError::NotADirectory { dir: dir.into() });
    }
    Ok(canon)
}

/// The harness's own verification: N runs against the app, one against the mutant, and
/// one against each of at most M mutants of other capabilities that leave this one
/// intact (drawn from `independence`, the app's matrix as kept in the trial directory),
/// in an order drawn at run time. Each run is blind: a freshly started target reached
/// through the same locators, a fresh copy of the test directory at the path the
/// agent wrote it, a fresh HOME and TMPDIR, and (sealed) a sandbox of its own; nothing
/// a run can see names its target or carries over from another run.
#[allow(clippy::too_many_arguments)]
pub(super) async fn gate(
    app: &LoadedApp,
    capability: &str,
    test: &crate::evidence::ClaimTest,
    workspace: &Path,
    cfg: &Config,
    trial_dir: &Path,
    independence: &Kept,
    world_logs: &mut Vec<RawFile>,
) -> Gate {
    let independent = independence.matrix.independent_of(capability);
    let drawn = draw_sample(&independent, cfg.independent_mutants);
    let order = draw_order(cfg.n, drawn.len());
    let mut gate = Gate {
        required: cfg.n,
        runs: vec![],
        not_run: None,
        order: order.clone(),
        interrupted: None,
        specificity: Some(Specificity {
            matrix: independence.raw.clone(),
            independent,
            limit: cfg.independent_mutants,
            drawn: drawn.clone(),
        }),
    };
    let dir = match resolve_test_dir(workspace, &test.dir).and_then(|d| {
        check_test_size(&d, Instant::now() + cfg.gate_timeout)?;
        Ok(d)
    }) {
        Ok(d) => d,
        Err(e) => {
            gate.not_run = Some(e.to_string());
            return gate;
        }
    };
    let gate_dir = trial_dir.join("gate");
    let logs = gate_dir.join("logs");
    if let Err(e) = std::fs::create_dir_all(&logs) {
        gate.not_run = Some(format!("{}: {e}", logs.display()));
        return gate;
    }
    let mut attempts = [0u32; 3];
    let mut independents = drawn.iter();
    let runs: Vec<_> = order
        .iter()
        .copied()
        .enumerate()
        .map(|(position, target)| {
            let (slot, mutant) = match target {
                GateTarget::App => (0, None),
                GateTarget::Mutant => (1, Some(capability.to_string())),
                GateTarget::Independent => (2, independents.next().cloned()),
            };
            attempts[slot] += 1;
            GateSlot {
                position,
                target,
                mutant,
                attempt: attempts[slot],
            }
        })
        .collect();
    let ctx = GateContext {
        app,
        test,
        dir: &dir,
        cfg,
        trial_dir,
        gate_dir: &gate_dir,
        logs: &logs,
    };
    // A finished run's target is stopped while the next run goes on: it is out of
    // every later run's reach (a sandbox's network answers only its own run's ports).
    let mut stopping = FuturesOrdered::new();
    let mut stopped = Vec::new();
    // One run at a time, never side by side: runs that overlap could find each other
    // through what every sandbox shares read-only (a lock on a system file, the
    // machine's load) and compare what they saw, which tells the mutant's run apart
    // without knowing anything about the capability. And nothing a run can see is
    // made before the run before it has ended: a target started, or a test copy made,
    // while an earlier run went on would carry that run's length in its timestamps
    // (its age when this run starts), a channel from one run to the next.
    for slot in &runs {
        // A run asked to stop starts no further target: the gate is unfinished.
        if let Some(stop) = crate::sys::shutdown::requested() {
            gate.interrupted = Some(stop.name().into());
            break;
        }
        let world = match alongside(ctx.prepare(slot), &mut stopping, &mut stopped).await {
            Ok(w) => w,
            Err(why) => {
                gate.not_run = Some(why);
                break;
            }
        };
        let outcome = alongside(ctx.run(slot, &world), &mut stopping, &mut stopped).await;
        stopping.push_back(stop_target(world, trial_dir));
        match outcome {
            Ok(run) if run.end.interrupted.is_some() => {
                gate.interrupted.clone_from(&run.end.interrupted);
                gate.runs.push(run);
                break;
            }
            Ok(run) => gate.runs.push(run),
            Err(why) => {
                gate.not_run = Some(why);
                break;
            }
        }
    }
    stopped.extend(stopping.collect::<Vec<_>>().await);
    world_logs.extend(stopped.into_iter().flatten());
    gate
}

/// Drive `work` to its end while the targets in `stopping` stop, keeping each stopped
/// target's logs in the order the targets ran.
async fn alongside<T, S>(
    work: impl Future<Output = T>,
    stopping: &mut FuturesOrdered<S>,
    stopped: &mut Vec<Vec<RawFile>>,
) -> T
where
    S: Future<Output = Vec<RawFile>>,
{
    tokio::pin!(work);
    loop {
        tokio::select! {
            biased;
            out = &mut work => return out,
            Some(logs) = stopping.next(), if !stopping.is_empty() => stopped.push(logs),
        }
    }
}

/// Stop a gate run's target; its logs, hashed, relative to the trial directory.
async fn stop_target(mut world: Target, trial_dir: &Path) -> Vec<RawFile> {
    world.stop(trial_dir).await
}

/// N app runs, one mutant run and `independent` runs against other capabilities'
/// mutants, shuffled with the OS's entropy, so that no test can know which run is which
/// by counting: every order of the runs is equally likely.
fn draw_order(n: u32, independent: usize) -> Vec<GateTarget> {
    let mut order = vec![GateTarget::App; n as usize];
    order.push(GateTarget::Mutant);
    order.extend(std::iter::repeat_n(GateTarget::Independent, independent));
    shuffle(&mut order);
    order
}

/// At most `limit` of `candidates`, each subset of that size equally likely, in a random
/// order.
fn draw_sample(candidates: &[String], limit: u32) -> Vec<String> {
    let mut all = candidates.to_vec();
    shuffle(&mut all);
    all.truncate(limit as usize);
    all
}

/// Fisher–Yates with the OS's entropy.
fn shuffle<T>(items: &mut [T]) {
    for i in (1..items.len()).rev() {
        let j = (random_u64() % (i as u64 + 1)) as usize;
        items.swap(i, j);
    }
}

fn random_u64() -> u64 {
    use std::io::Read;
    let mut bytes = [0u8; 8];
    match std::fs::File::open("/dev/urandom").and_then(|mut f| f.read_exact(&mut bytes)) {
        Ok(()) => u64::from_le_bytes(bytes),
        // No entropy source: the clock's low bits still vary from run to run.
        Err(_) => u64::from(chrono::Utc::now().timestamp_subsec_nanos()),
    }
}

/// Measure a claimed test directory against the gate's limits by the sizes its files
/// state, reading none of them, and stopping at the first limit it passes or at
/// `deadline`.
fn check_test_size(dir: &Path, deadline: Instant) -> Result<(), TestDirError> {
    use crate::evidence::tree::CutWhy;
    let mut total = 0u64;
    let walked = crate::sys::walk::walk(dir, &TEST_DIR_LIMITS, Some(deadline), |item| {
        if let crate::sys::walk::ItemKind::File(f) = item.kind {
            total = total.saturating_add(f.size());
            if total > MAX_TEST_DIR_BYTES {
                return Err(crate::sys::walk::WalkError::TreeTooLarge {
                    path: dir.to_path_buf(),
                    limit: MAX_TEST_DIR_BYTES,
                });
            }
        }
        Ok(())
    });
    let path = dir.to_path_buf();
    match walked {
        Err(crate::sys::walk::WalkError::TreeTooLarge { limit, .. }) => {
            Err(TestDirError::TooLarge { path, total, limit })
        }
        Err(e) => Err(TestDirError::Walk(e)),
        Ok(w) => match w.cut {
            None => Ok(()),
            Some(cut) => Err(match cut.why {
                CutWhy::Entries { limit } => TestDirError::TooMany { path, limit },
                CutWhy::Depth { limit, .. } => TestDirError::TooDeep { path, limit },
                CutWhy::Deadline | CutWhy::Shutdown { .. } | CutWhy::Unreadable { .. } => {
                    TestDirError::Stopped { path, cut }
                }
            }),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::super::gate_run::{MAX_TEST_DIR_DEPTH, MAX_TEST_DIR_ENTRIES};
    use super::*;

    fn later() -> Instant {
        Instant::now() + std::time::Duration::from_secs(60)
    }

    /// A test dir holding a terabyte of holes is refused by the size its file states,
    /// none of it read; so are one with too many entries and one nested too deep.
    #[test]
    fn a_test_dir_past_the_gate_limits_is_refused_without_reading_it() {
        let d = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        std::fs::write(d.path().join("run.sh"), "exit 0\n").unwrap_or_else(|e| panic!("{e}"));
        assert!(check_test_size(d.path(), later()).is_ok());
        let f = std::fs::File::create(d.path().join("holes")).unwrap_or_else(|e| panic!("{e}"));
        f.set_len(1 << 40).unwrap_or_else(|e| panic!("{e}"));
        let e = check_test_size(d.path(), later()).err();
        assert!(matches!(e, Some(TestDirError::TooLarge { .. })), "{e:?}");

        let many = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        for i in 0..=MAX_TEST_DIR_ENTRIES {
            std::fs::write(many.path().join(format!("f{i}")), "").unwrap_or_else(|e| panic!("{e}"));
        }
        let e = check_test_size(many.path(), later()).err();
        assert!(matches!(e, Some(TestDirError::TooMany { .. })), "{e:?}");

        let deep = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let chain: PathBuf = (0..=MAX_TEST_DIR_DEPTH).map(|_| "d").collect();
        std::fs::create_dir_all(deep.path().join(chain)).unwrap_or_else(|e| panic!("{e}"));
        let e = check_test_size(deep.path(), later()).err();
        assert!(matches!(e, Some(TestDirError::TooDeep { .. })), "{e:?}");

        let past = Instant::now()
            .checked_sub(std::time::Duration::from_millis(1))
            .unwrap_or_else(Instant::now);
        let e = check_test_size(d.path(), past).err();
        assert!(matches!(e, Some(TestDirError::Stopped { .. })), "{e:?}");
    }
}
