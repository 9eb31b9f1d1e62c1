//! A group of trials (an app, a capability) as the cells a page states for it: one
//! projection, so that `report.md` and `report.html` cannot state a row in different
//! words. Each page only escapes the cells and lays them out.

use super::aggregate::{CapabilityFigures, Figures};
use super::cells::{at_k, ms, outcomes, pct_ci, spread, usd};

/// The figures of a group of trials, as text.
pub(super) struct FigureCells {
    pub verified_rate: String,
    pub false_verifications: usize,
    pub errors: usize,
    pub pass_hat_k: String,
    pub pass_at_k: String,
    pub spread: String,
    pub tokens_in: u64,
    pub tokens_out: u64,
    pub cost: String,
    pub wall_ms_median: String,
    pub wall_ms_max: String,
}

impl FigureCells {
    pub fn of(f: &Figures) -> FigureCells {
        FigureCells {
            verified_rate: pct_ci(f.verified_rate, f.verified_rate_ci),
            false_verifications: f.false_verifications,
            errors: f.errors,
            pass_hat_k: at_k(&f.pass_hat_k),
            pass_at_k: at_k(&f.pass_at_k),
            spread: spread(f),
            tokens_in: f.tokens_in,
            tokens_out: f.tokens_out,
            cost: usd(f.cost_usd, &f.unpriced_models),
            wall_ms_median: ms(f.wall_ms_median),
            wall_ms_max: ms(f.wall_ms_max.map(|v| v as f64)),
        }
    }
}

/// One capability's row of the per-capability table.
pub(super) struct CapabilityRow<'a> {
    pub app: &'a str,
    pub capability: &'a str,
    pub kind: String,
    /// Its repeats' outcomes, in order or counted.
    pub outcomes: String,
    pub passed: usize,
    pub trials: usize,
    pub figures: FigureCells,
    /// Whether its threshold was met (`met 3/3 (need 2)`), or `-` without one.
    pub threshold: String,
}

impl CapabilityRow<'_> {
    pub fn of(c: &CapabilityFigures) -> CapabilityRow<'_> {
        let threshold = c
            .threshold
            .as_ref()
            .map(|t| {
                format!(
                    "{} {}/{} (need {})",
                    if t.met { "met" } else { "NOT met" },
                    t.passes,
                    t.of,
                    t.need
                )
            })
            .unwrap_or_else(|| "-".into());
        CapabilityRow {
            app: &c.app,
            capability: &c.capability,
            kind: format!("{:?}", c.kind),
            outcomes: outcomes(&c.outcomes),
            passed: c.figures.passed,
            trials: c.figures.trials,
            figures: FigureCells::of(&c.figures),
            threshold,
        }
    }
}
