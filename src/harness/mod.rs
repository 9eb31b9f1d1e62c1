//! The entry layer, under the commands: the libtest-mimic entry points of the `benches-as-tests/`
//! targets and the one run loop `gauntlet run` uses. Both turn a planned
//! [`crate::plan::Trial`] into a finished trial through [`run_trial`], which asks the
//! trial's suite ([`crate::suites::runner`]) to execute it, so a trial under
//! `cargo test`, under nextest and under the CLI takes one code path, whatever its
//! suite.

pub mod identity;
mod libtest;
pub mod lifecycle;
mod run_loop;

pub use crate::suites::{Finished, TrialError};
pub use identity::{run_identity, task_hashes, trial_binaries};
pub use libtest::{listed, run, suite_main};
pub use lifecycle::{
    failed_by_the_provider, manifest_line, no_browser, open_run, progress, resume_plan,
    resume_skips, unfinished_trials, Progress, ResumeError, ResumePlan,
};
pub use run_loop::{run_all, run_trial, Jobs};
