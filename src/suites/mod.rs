//! Executing trials: world + proxy + agent → evidence → verdict → record.
//!
//! The libtest-mimic harness and the `gauntlet run` command both call [`qa::execute`],
//! so a trial under `cargo test` and under the CLI take one code path.

pub mod challenge;
pub mod qa;
pub mod scorecard;
