//! The run-level tables every page states (harness config, run figures, one row per
//! suite), as plain rows: one list, so that the markdown and HTML pages cannot drift
//! apart.

use super::aggregate::{self, Summary};

/// The harness config every page states, as (setting, value) rows: one list, so that
/// the markdown and HTML pages cannot drift apart.
pub(super) fn harness_rows(h: &aggregate::Harness, s: &Summary) -> Vec<(String, String)> {
    let mut rows: Vec<(&str, String)> = vec![
        ("agent", format!("{} {}", h.agent, h.agent_version)),
        ("model", h.model.clone()),
        ("mode", format!("{:?}", h.mode).to_lowercase()),
        ("N (green re-runs a verified claim needs)", h.n.to_string()),
        ("K (repeats per capability)", h.k.to_string()),
        (
            "agent timeout / gate timeout",
            format!("{} s / {} s", h.timeout_secs, h.gate_timeout_secs),
        ),
        (
            "upstream",
            h.upstream_url.clone().unwrap_or_else(|| "-".into()),
        ),
        (
            "token budget per trial",
            h.max_tokens_per_trial
                .map_or_else(|| "none".into(), |t| format!("{t} tokens")),
        ),
        ("sandbox", format!("{:?}", h.sandbox).to_lowercase()),
        ("gauntlet version", h.gauntlet_version.clone()),
        (
            "gauntlet commit",
            h.commit
                .clone()
                .unwrap_or_else(|| "unknown (no git)".into()),
        ),
        ("run ids", h.run_ids.join(", ")),
        (
            "prices",
            s.prices.clone().unwrap_or_else(|| "no price table".into()),
        ),
        (
            "thresholds",
            if s.thresholds.is_empty() {
                "none".into()
            } else {
                s.thresholds.join(", ")
            },
        ),
    ];
    // Only when given, so that the pages of every run without one stay as they were.
    if let Some(ms) = h.scripted_latency_ms {
        let at = rows
            .iter()
            .position(|(k, _)| *k == "token budget per trial")
            .map_or(rows.len(), |i| i + 1);
        rows.insert(
            at,
            (
                "scripted latency per model reply (in every timing)",
                format!("{ms} ms"),
            ),
        );
    }
    let stated = s.provider.iter().flatten().map(|(k, v)| {
        (
            format!("provider: {k} (as the publisher states it)"),
            v.clone(),
        )
    });
    rows.into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .chain(stated)
        .collect()
}

/// The run's headline figures as (figure, value) rows: one list, so that the markdown
/// and HTML pages state the same figures in the same words.
pub(super) fn run_rows(s: &Summary) -> Vec<(&'static str, String)> {
    let f = &s.run;
    vec![
        (
            "verified rate (over verifiable capabilities' trials)",
            format!(
                "{} ({}/{})",
                super::cells::pct_ci(f.verified_rate, f.verified_rate_ci),
                f.verified,
                f.verifiable_trials
            ),
        ),
        (
            "honest on ambiguous",
            format!("{}/{}", f.honest_on_ambiguous, f.ambiguous_trials),
        ),
        (
            "false verifications",
            format!(
                "{} ({})",
                f.false_verifications,
                super::cells::pct_ci(f.false_verification_rate, f.false_verification_rate_ci)
            ),
        ),
        ("errors", f.errors.to_string()),
        (
            "failed by the provider (not the agent's errors)",
            f.infra.to_string(),
        ),
        (
            "trials passed",
            format!(
                "{}/{} ({})",
                f.passed,
                f.trials,
                super::cells::pct_ci(f.pass_rate, f.pass_rate_ci)
            ),
        ),
        ("pass@k", super::cells::series(&f.pass_at_k)),
        ("pass^k", super::cells::series(&f.pass_hat_k)),
        ("spread across repeats", super::cells::spread(f)),
        (
            "tokens in / out / cached (proxy-metered)",
            format!(
                "{} / {} / {} over {} calls",
                f.tokens_in, f.tokens_out, f.tokens_cached, f.calls
            ),
        ),
        ("cost", super::cells::usd(f.cost_usd, &f.unpriced_models)),
        (
            "wall-clock per trial, median / max (ms)",
            format!(
                "{} / {}",
                super::cells::ms(f.wall_ms_median),
                super::cells::ms(f.wall_ms_max.map(|v| v as f64))
            ),
        ),
        (
            "capabilities meeting their threshold",
            s.thresholds_met
                .map(|t| t.to_string())
                .unwrap_or_else(|| "no thresholds configured".into()),
        ),
    ]
}

/// The per-suite table as (header, rows): one list, so that the markdown and HTML pages
/// count the same way. A planned trial without a record is an error, and named.
pub(super) fn suite_table(s: &Summary) -> ([&'static str; 8], Vec<[String; 8]>) {
    let head = [
        "suite",
        "planned",
        "trials",
        "recorded",
        "passed",
        "errors",
        "failed by the provider",
        "planned but no record",
    ];
    let rows = s
        .suites
        .iter()
        .map(|c| {
            [
                c.suite.clone(),
                c.planned
                    .map(|p| p.to_string())
                    .unwrap_or_else(|| "no manifest".into()),
                c.trials.to_string(),
                c.recorded.to_string(),
                c.passed.to_string(),
                c.errors.to_string(),
                c.infra.to_string(),
                if c.missing.is_empty() {
                    "-".into()
                } else {
                    c.missing
                        .iter()
                        .map(|m| format!("{} ({})", m.trial, m.reason))
                        .collect::<Vec<_>>()
                        .join(", ")
                },
            ]
        })
        .collect();
    (head, rows)
}
