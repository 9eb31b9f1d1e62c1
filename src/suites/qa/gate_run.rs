//! One blind gate run: a fresh copy of the test directory, a freshly started target,
//! and the test's command against it, sealed when the run is. The gate's runs, the
//! independence matrix's cells and the tells' probes are all such runs, and each must
//! be run exactly as the others are: so the run is its own file, which imports none
//! of theirs.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Instant;

use crate::agent::Invocation;
use crate::config::Config;
use crate::evidence::{GateRun, GateTarget};
use crate::phases::{timed, timed_sync, Phase};
use crate::spec::LoadedApp;
use crate::sys::process;
use crate::sys::sandbox::View;
use crate::trial::{Context, Streams};
use crate::world::cli_relay::AppRunBounds;
use crate::world::target::Target;

/// Bytes kept of each stream of a gate run.
const GATE_OUTPUT_CAP: u64 = 1 << 20;

/// The most a claimed test directory may hold: it is copied once per gate run, by the
/// harness, walking it. Bytes bound the copy's disk, entries its time (a million empty
/// files are as costly as their bytes are not), depth the walk's stack.
pub(super) const MAX_TEST_DIR_BYTES: u64 = 64 << 20;
pub(super) const MAX_TEST_DIR_ENTRIES: usize = 20_000;
pub(super) const MAX_TEST_DIR_DEPTH: usize = 64;

/// The gate's walks of a test directory (`sys::walk`). A file is copied whole or not
/// at all; the sizes files state are checked first (the gate's `check_test_size`), so
/// every byte a copy reads, holes of a sparse file included, is within the limit.
pub(super) const TEST_DIR_LIMITS: crate::evidence::tree::Limits = crate::evidence::tree::Limits {
    file_bytes: MAX_TEST_DIR_BYTES,
    sparse_bytes: MAX_TEST_DIR_BYTES,
    total_bytes: MAX_TEST_DIR_BYTES,
    entries: MAX_TEST_DIR_ENTRIES,
    depth: MAX_TEST_DIR_DEPTH,
};

/// One gate run's place: its position in the drawn order, the target (whose mutant,
/// if any) and its attempt at that kind of target.
pub(super) struct GateSlot {
    pub position: usize,
    pub target: GateTarget,
    /// The capability whose mutant answers; `None` for the app.
    pub mutant: Option<String>,
    pub attempt: u32,
}

/// What every gate run of one trial shares (and every run of the independence matrix:
/// the app's reference tests run exactly as a claimed test does).
pub(super) struct GateContext<'a> {
    pub app: &'a LoadedApp,
    pub test: &'a crate::evidence::ClaimTest,
    /// The test directory as written, where each run sees its fresh copy.
    pub dir: &'a Path,
    pub cfg: &'a Config,
    /// Where the runs' streams are kept (`gate/<label>-<attempt>.*`).
    pub trial_dir: &'a Path,
    pub gate_dir: &'a Path,
    pub logs: &'a Path,
}

impl GateContext<'_> {
    /// What the run at `position` can see lives under a name that says only its
    /// position.
    fn run_dir(&self, slot: &GateSlot) -> PathBuf {
        self.gate_dir.join(format!("run-{}", slot.position + 1))
    }

    fn label(slot: &GateSlot) -> &'static str {
        match slot.target {
            GateTarget::App => "app",
            GateTarget::Mutant => "mutant",
            GateTarget::Independent => "independent",
        }
    }

    /// Copy the test directory for the run and start its fresh target.
    pub async fn prepare(&self, slot: &GateSlot) -> Result<Target, String> {
        let label = Self::label(slot);
        let run_dir = self.run_dir(slot);
        let copy = run_dir.join("test");
        let deadline = Instant::now() + self.cfg.gate_timeout;
        let copied = timed_sync(Phase::Workspace, || {
            crate::sys::walk::copy_tree(self.dir, &copy, &TEST_DIR_LIMITS, Some(deadline))
        });
        let problem = match copied {
            Ok(w) => w.cut.map(|cut| format!("the copy is incomplete: {cut}")),
            Err(e) => Some(e.to_string()),
        };
        if let Some(e) = problem {
            return Err(format!(
                "cannot copy the test dir for run {}: {e}",
                slot.position + 1
            ));
        }
        Target::start_bounded(
            &self.app.app,
            slot.mutant.as_deref(),
            &run_dir.join("target"),
            self.logs,
            &format!("{label}-{}", slot.attempt),
            AppRunBounds::within(self.cfg.gate_timeout),
        )
        .await
        .map_err(|e| format!("{label} failed to start: {e}"))
    }

    /// Run the test against `world`, the target [`GateContext::prepare`] started for
    /// this run.
    pub async fn run(&self, slot: &GateSlot, world: &Target) -> Result<GateRun, String> {
        let GateSlot {
            position,
            target,
            attempt,
            ..
        } = *slot;
        let label = Self::label(slot);
        let stem = format!("{label}-{attempt}");
        let run_dir = self.run_dir(slot);
        let copy = run_dir.join("test");
        let sealed = self.cfg.sandbox.sealed();
        let (home, tmp, cwd) = if sealed {
            // The sandbox's private /tmp is fresh for every run.
            (
                PathBuf::from("/tmp"),
                PathBuf::from("/tmp"),
                self.dir.to_path_buf(),
            )
        } else {
            let home = run_dir.join("home");
            let tmp = run_dir.join("tmp");
            for d in [&home, &tmp] {
                let _ = std::fs::create_dir_all(d);
            }
            (home, tmp, copy.clone())
        };
        // Each run is a kernel context of its own: fresh HOME, TMPDIR and test copy.
        let kernel = Context {
            cfg: self.cfg,
            trial_dir: self.trial_dir,
            home: &home,
            tmp: &tmp,
            cwd: &cwd,
        };
        let env = kernel.env(BTreeMap::new(), world.env_for(sealed), None);
        let inv = Invocation {
            program: PathBuf::from("sh"),
            args: vec!["-c".into(), self.test.command.clone()],
        };
        let streams = Streams {
            stem: &format!("gate/{stem}"),
            tag: Some(&format!("gate-{}", position + 1)),
        };
        let seal = sealed.then(|| View::new().bind(&copy, self.dir, true).extend(world.view()));
        let spec = kernel.spec(
            inv,
            env,
            &streams,
            self.cfg.gate_timeout,
            GATE_OUTPUT_CAP,
            seal,
        );
        match timed(Phase::Gate, process::run(spec)).await {
            Ok(o) => Ok(GateRun {
                target,
                mutant_of: (target == GateTarget::Independent)
                    .then(|| slot.mutant.clone())
                    .flatten(),
                attempt,
                command: self.test.command.clone(),
                end: o.end,
                stdout: o.stdout,
                stderr: o.stderr,
                // Kept before the test heard of them: complete once the test has ended.
                exceeded: world
                    .app_runs()
                    .map(|runs| runs.exceeded.iter().map(ToString::to_string).collect())
                    .unwrap_or_default(),
            }),
            Err(e) => Err(format!("{label} run {attempt}: {e}")),
        }
    }
}
