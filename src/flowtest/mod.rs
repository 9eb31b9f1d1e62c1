//! `gauntlet flow run <flow.json>`: declarative test flows (docs/test-flows.md).
//!
//! An agent that verifies a browser page or an extension's badge cannot easily write
//! a shell test for it; a flow is the test it writes instead, and gauntlet runs it, so
//! the harness re-runs it N times and against the mutant like any other test command.
//! Exit 0: every expectation held; 1: a step failed (named on stderr); 2: the file is
//! not a valid flow (file and field named on stderr).

pub mod check;
pub mod run;
pub mod spec;

use std::path::Path;
use std::process::ExitCode;

pub use run::{run_flow, StepFailed, Target};
pub use spec::{TestFlow, TestFlowError};

/// The whole `flow run` command: parse, run against the environment's target, exit.
pub fn main(file: &Path) -> ExitCode {
    let flow = match TestFlow::load(file) {
        Ok(f) => f,
        Err(e) => {
            eprintln!("error: invalid flow: {e}");
            return ExitCode::from(2);
        }
    };
    let rt = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("error: {}: cannot start a runtime: {e}", file.display());
            return ExitCode::FAILURE;
        }
    };
    let target = Target::from_env();
    let mut stdout = std::io::stdout();
    let result = rt.block_on(run_flow(
        &flow,
        &target,
        crate::world::browser::LaunchOptions::default(),
        &mut stdout,
    ));
    match result {
        Ok(()) => {
            println!("{}: {} steps passed", file.display(), flow.steps.len());
            ExitCode::SUCCESS
        }
        Err(failed) => {
            eprintln!("error: {}: {failed}", file.display());
            ExitCode::FAILURE
        }
    }
}
