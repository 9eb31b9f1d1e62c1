//! The challenge suite: one trial per challenge under `challenges/` and instruction
//! profile (`none`, `skills`, `all`), named `challenge::<id>::<profile>`.
//!
//! `cargo nextest run -E 'test(/^challenge::/)'` runs them all.

fn main() -> std::process::ExitCode {
    gauntlet::harness::suite_main(gauntlet::spec::Suite::Challenge)
}
