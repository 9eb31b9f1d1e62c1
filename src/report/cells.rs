//! The cells every page writes the same way, whatever its format: rates with their
//! intervals, costs, durations, per-k series, a capability's outcomes and spread.

use super::aggregate::Figures;

/// Repeats listed one by one up to this many; beyond it they are counted.
pub const SHOWN_REPEATS: usize = 10;

pub fn pct(x: Option<f64>) -> String {
    x.map(|v| format!("{:.1}%", 100.0 * v))
        .unwrap_or_else(|| "n/a".into())
}

pub fn usd(cost: Option<f64>, unpriced: &[String]) -> String {
    match cost {
        Some(c) => format!("${c:.6}"),
        None if unpriced.is_empty() => "unknown".into(),
        None => format!("unknown (no price for {})", unpriced.join(", ")),
    }
}

pub fn ms(x: Option<f64>) -> String {
    x.map(|v| format!("{v:.0}")).unwrap_or_else(|| "-".into())
}

/// A rate with its 95% interval: `83.3% [70.1–91.8%]`.
pub fn pct_ci(x: Option<f64>, ci: Option<crate::score::interval::Interval>) -> String {
    match (x, ci) {
        (Some(_), Some(i)) => format!("{} [{:.1}–{:.1}%]", pct(x), 100.0 * i.low, 100.0 * i.high),
        _ => pct(x),
    }
}

/// The last value of a per-k series (k = K), as a percentage.
pub fn at_k(v: &[super::aggregate::KValue]) -> String {
    v.last()
        .map(|kv| format!("{} (k={})", pct_ci(Some(kv.value), kv.ci), kv.k))
        .unwrap_or_else(|| "n/a".into())
}

/// Outcomes of a capability's repeats: each in order for a few, counted for many.
pub fn outcomes(v: &[crate::score::Outcome]) -> String {
    if v.len() <= SHOWN_REPEATS {
        return v.iter().map(|o| o.as_str()).collect::<Vec<_>>().join(", ");
    }
    let mut counts: std::collections::BTreeMap<&str, usize> = Default::default();
    for o in v {
        *counts.entry(o.as_str()).or_default() += 1;
    }
    let parts: Vec<String> = counts.iter().map(|(o, n)| format!("{n} {o}")).collect();
    format!("{} of {} repeats", parts.join(", "), v.len())
}

pub(super) fn spread(f: &Figures) -> String {
    match f.spread {
        Some(sp) if f.per_repeat_pass_rate.len() > SHOWN_REPEATS => format!(
            "{} (pass rate per repeat from {} to {}, over {} repeats)",
            pct(Some(sp)),
            pct(f.per_repeat_pass_rate.iter().copied().reduce(f64::min)),
            pct(f.per_repeat_pass_rate.iter().copied().reduce(f64::max)),
            f.per_repeat_pass_rate.len()
        ),
        Some(sp) => format!(
            "{} ({})",
            pct(Some(sp)),
            f.per_repeat_pass_rate
                .iter()
                .map(|r| pct(Some(*r)))
                .collect::<Vec<_>>()
                .join(" / ")
        ),
        None => "n/a (one repeat)".into(),
    }
}

/// A per-k series, the shown values of k each with its interval.
pub fn series(v: &[super::aggregate::KValue]) -> String {
    if v.is_empty() {
        return "n/a".into();
    }
    let shown = crate::score::interval::shown_ks(v.last().map_or(0, |kv| kv.k));
    v.iter()
        .filter(|kv| shown.contains(&kv.k))
        .map(|kv| format!("k={}: {}", kv.k, pct_ci(Some(kv.value), kv.ci)))
        .collect::<Vec<_>>()
        .join(", ")
}
