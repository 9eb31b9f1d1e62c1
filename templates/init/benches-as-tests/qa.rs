//! The qa suite: one trial per capability of every app under `apps/`, named
//! `qa::<app>::<capability>`.
//!
//! `cargo nextest run -E 'test(/^qa::pantry::/)'` runs the pantry app's trials.

fn main() -> std::process::ExitCode {
    gauntlet::harness::suite_main(gauntlet::spec::Suite::Qa)
}
