//! Results pages from records. Reports are projections of records: nothing here is
//! evidence, and everything here can be regenerated from a run directory.

use std::fmt::Write;
use std::path::Path;

use crate::config::Mode;
use crate::record::QaRecord;
use crate::score::Outcome;
use crate::spec::CapabilityKind;

/// Figures over a set of qa records.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct QaTotals {
    pub trials: usize,
    pub verifiable: usize,
    pub verified: usize,
    pub ambiguous: usize,
    pub honest_on_ambiguous: usize,
    pub false_verifications: usize,
    pub errors: usize,
    pub passed: usize,
    pub tokens_in: u64,
    pub tokens_out: u64,
}

pub fn totals(records: &[QaRecord]) -> QaTotals {
    let mut t = QaTotals::default();
    for r in records {
        t.trials += 1;
        let (i, o) = r.tokens();
        t.tokens_in += i;
        t.tokens_out += o;
        if r.spec.kind == CapabilityKind::Ambiguous {
            t.ambiguous += 1;
            t.honest_on_ambiguous += usize::from(r.verdict.outcome == Outcome::Unverified);
        } else {
            t.verifiable += 1;
            t.verified += usize::from(r.verdict.outcome == Outcome::Verified);
        }
        t.false_verifications += usize::from(r.verdict.outcome == Outcome::FalseVerification);
        t.errors += usize::from(r.verdict.outcome == Outcome::Error);
        t.passed += usize::from(r.verdict.passed);
    }
    t
}

/// A markdown results page for one run.
pub fn qa_markdown(run_dir: &Path, records: &[QaRecord]) -> String {
    let t = totals(records);
    let mut s = String::new();
    let _ = writeln!(s, "# gauntlet results: {}\n", run_dir.display());
    if records.iter().any(|r| r.config.mode == Mode::Scripted) {
        let _ = writeln!(
            s,
            "> **Harness illustration.** This run used the scripted model: it shows the pipeline working end to end and is never a benchmark result.\n"
        );
    }
    if let Some(r) = records.first() {
        let c = &r.config;
        let _ = writeln!(
            s,
            "Config: agent `{}` ({}), model `{}`, mode `{:?}`, N = {}, agent timeout {} s, gauntlet {}.\n",
            c.agent, c.agent_version, c.model, c.mode, c.n, c.timeout_secs, r.gauntlet_version
        );
    }
    let rate = if t.verifiable == 0 {
        "n/a".to_string()
    } else {
        format!("{:.1}%", 100.0 * t.verified as f64 / t.verifiable as f64)
    };
    let _ = writeln!(s, "| figure | value |\n| --- | --- |");
    let _ = writeln!(
        s,
        "| verified rate (over verifiable) | {rate} ({}/{}) |",
        t.verified, t.verifiable
    );
    let _ = writeln!(
        s,
        "| honest on ambiguous | {}/{} |",
        t.honest_on_ambiguous, t.ambiguous
    );
    let _ = writeln!(s, "| false verifications | {} |", t.false_verifications);
    let _ = writeln!(s, "| errors | {} |", t.errors);
    let _ = writeln!(
        s,
        "| tokens in / out (proxy-metered) | {} / {} |",
        t.tokens_in, t.tokens_out
    );
    let _ = writeln!(s, "| trials passed | {}/{} |\n", t.passed, t.trials);
    let _ = writeln!(
        s,
        "| trial | kind | verdict | reason | tokens in | tokens out | wall ms |"
    );
    let _ = writeln!(s, "| --- | --- | --- | --- | ---: | ---: | ---: |");
    for r in records {
        let (i, o) = r.tokens();
        let _ = writeln!(
            s,
            "| `{}` | {:?} | {} | {} | {i} | {o} | {} |",
            r.trial,
            r.spec.kind,
            r.verdict.outcome,
            r.verdict.reason.replace('|', "\\|"),
            r.wall_ms
        );
    }
    s
}
