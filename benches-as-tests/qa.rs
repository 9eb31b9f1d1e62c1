//! The qa suite: one test per capability of every app under `apps/`.
//!
//! `cargo test --test qa -- balance` runs one trial;
//! `cargo nextest run -E 'test(api-ledger)'` runs an app's.

fn main() -> std::process::ExitCode {
    gauntlet::harness::suite_main(gauntlet::spec::Suite::Qa)
}
