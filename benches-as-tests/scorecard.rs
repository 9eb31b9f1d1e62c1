//! The scorecard suite: one test per autonomy probe, `scorecard::<dimension>::<probe>`,
//! each run against a fresh agent (challenges/scorecard/).
//!
//! `cargo nextest run -E 'test(/^scorecard::memory::/)'` runs the memory probes;
//! `GAUNTLET_SCORECARD_IDLE_SECS=24` compresses the probes' 24-hour idle windows (such
//! runs are marked compressed and never ranked).

fn main() -> std::process::ExitCode {
    gauntlet::harness::suite_main(gauntlet::spec::Suite::Scorecard)
}
