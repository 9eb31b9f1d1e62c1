//! Executing trials: world + proxy + agent → evidence → verdict → record.
//!
//! The libtest-mimic harness and the `gauntlet run` command both call [`qa::execute`],
//! so a trial under `cargo test` and under the CLI take one code path.

pub mod challenge;
pub mod qa;
pub mod scorecard;

/// One line per trial that nextest keeps in JUnit `system-out`, for dashboards. It ends
/// with the record's own hash (`record_sha256=`, the last field of every suite's line),
/// from which, with the trial name, the run digest can be recomputed
/// ([`crate::record::digest::run_digest`]).
pub fn summary_line(rec: &crate::record::QaRecord) -> String {
    let (tin, tout) = rec.tokens();
    let mut line = format!(
        "gauntlet: {} verdict={} passed={} tokens_in={tin} tokens_out={tout} wall_ms={} reason={:?}",
        rec.trial, rec.verdict.outcome, rec.verdict.passed, rec.wall_ms, rec.verdict.reason
    );
    line.push_str(unsealed_tag(&rec.config));
    if let Some(limit) = &rec.evidence.budget_hit {
        line.push_str(&format!(" budget_hit={limit:?}"));
    }
    line.push_str(&format!(
        " record_sha256={}",
        crate::record::digest::value_sha256(rec)
    ));
    line
}

/// ` sandbox=off` for a trial that ran unsealed, appended to every suite's summary line
/// so that JUnit says so; empty for a sealed one.
pub fn unsealed_tag(config: &crate::record::RecordConfig) -> &'static str {
    if config.sandbox.sealed() {
        ""
    } else {
        " sandbox=off"
    }
}
