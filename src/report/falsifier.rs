//! The claim the project was founded on, and the test that would break it, judged on
//! every publish from the published real runs.
//!
//! The claim: the reference agent is the better autonomous-QA agent. It holds only
//! until another agent beats it here, and what "beats" means is fixed before any
//! result: a higher verified rate than the reference agent's best real run on the
//! same model and the same capabilities (same frozen apps, corpora and scorer), with a
//! false-verification rate no higher and no more than twice the metered tokens per
//! trial. Illustrations and unsealed runs never count either way: the caller passes
//! ranked (real, sealed) runs only.

use super::aggregate::Summary;

/// The agent the claim is about, as records name it.
pub const REFERENCE_AGENT: &str = "reference";

/// How much more a competitor may spend per trial and still be "comparable cost".
pub const TOKEN_FACTOR: f64 = 2.0;

/// The falsifier, in gauntlet's own words, for the top of the published index.
pub const STATEMENT: &str = "The reference agent is claimed to be the better autonomous-QA agent only until another agent beats it here, and what beating it means is fixed in advance: if any other agent's real run posts a higher verified rate than the reference agent's best real run, on the same model and the same capabilities (the same frozen apps, corpora and scorer), with a false-verification rate no higher and at most twice the metered tokens per trial, then the reference agent is not better, and the line below says so whoever published the runs. Scripted runs are harness illustrations and unsealed runs could have seen around the gate: neither can make or break the claim.";

/// One published real run, as the falsifier compares it.
#[derive(Debug, Clone, PartialEq)]
pub struct Contender {
    pub label: String,
    pub agent: String,
    pub model: String,
    pub verified_rate: Option<f64>,
    pub false_verification_rate: Option<f64>,
    pub tokens_per_trial: f64,
    /// `app::capability`, sorted: runs compare only over the same set.
    pub capabilities: Vec<String>,
}

impl Contender {
    pub fn of(label: &str, s: &Summary) -> Option<Contender> {
        let h = s.harness.as_ref()?;
        let f = &s.run;
        let mut capabilities: Vec<String> = s
            .capabilities
            .iter()
            .map(|c| format!("{}::{}", c.app, c.capability))
            .collect();
        capabilities.sort();
        capabilities.dedup();
        Some(Contender {
            label: label.to_string(),
            agent: h.agent.clone(),
            model: h.model.clone(),
            verified_rate: f.verified_rate,
            false_verification_rate: f.false_verification_rate,
            tokens_per_trial: if f.trials == 0 {
                0.0
            } else {
                (f.tokens_in + f.tokens_out) as f64 / f.trials as f64
            },
            capabilities,
        })
    }
}

fn pct(x: Option<f64>) -> String {
    x.map_or_else(|| "n/a".into(), |v| format!("{:.1}%", v * 100.0))
}

/// Whether `other` beats `reference` by the rule stated above.
fn beats(other: &Contender, reference: &Contender) -> bool {
    let (Some(theirs), Some(ours)) = (other.verified_rate, reference.verified_rate) else {
        return false;
    };
    let honest = other.false_verification_rate.unwrap_or(0.0)
        <= reference.false_verification_rate.unwrap_or(0.0);
    let cheap = other.tokens_per_trial <= TOKEN_FACTOR * reference.tokens_per_trial.max(1.0);
    other.model == reference.model
        && other.capabilities == reference.capabilities
        && theirs > ours
        && honest
        && cheap
}

/// The claim's status over the published real runs, as one sentence.
pub fn status(runs: &[Contender]) -> String {
    let best_of = |rs: Vec<&Contender>| -> Option<Contender> {
        rs.into_iter()
            .max_by(|a, b| {
                a.verified_rate
                    .unwrap_or(-1.0)
                    .total_cmp(&b.verified_rate.unwrap_or(-1.0))
                    .then(b.label.cmp(&a.label))
            })
            .cloned()
    };
    let others: Vec<&Contender> = runs.iter().filter(|r| r.agent != REFERENCE_AGENT).collect();
    let mut models: Vec<&str> = runs
        .iter()
        .filter(|r| r.agent == REFERENCE_AGENT)
        .map(|r| r.model.as_str())
        .collect();
    models.sort();
    models.dedup();
    if models.is_empty() {
        return "Untested: no real run of the reference agent is published, so there is no claim to break yet.".into();
    }
    let mut lines = Vec::new();
    for model in models {
        let Some(reference) = best_of(
            runs.iter()
                .filter(|r| r.agent == REFERENCE_AGENT && r.model == model)
                .collect(),
        ) else {
            continue;
        };
        let rivals: Vec<&Contender> = others
            .iter()
            .copied()
            .filter(|r| r.model == model && r.capabilities == reference.capabilities)
            .collect();
        let head = format!(
            "on `{model}`, the reference agent's best real run is `{}` (verified rate {}, false verifications {}, {:.0} tokens per trial)",
            reference.label,
            pct(reference.verified_rate),
            pct(reference.false_verification_rate),
            reference.tokens_per_trial
        );
        let line = if rivals.is_empty() {
            format!("Untested {head}: no other agent has a real run on that model and those capabilities.")
        } else if let Some(winner) = best_of(
            rivals
                .iter()
                .copied()
                .filter(|r| beats(r, &reference))
                .collect(),
        ) {
            format!(
                "Falsified {head}: `{}` ({}) has verified rate {} at false verifications {} and {:.0} tokens per trial. The reference agent is not better on this model.",
                winner.label,
                winner.agent,
                pct(winner.verified_rate),
                pct(winner.false_verification_rate),
                winner.tokens_per_trial
            )
        } else {
            format!(
                "Stands {head}: {} real run(s) of other agents, none with a higher verified rate at comparable honesty and cost.",
                rivals.len()
            )
        };
        lines.push(line);
    }
    lines.join("\n\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(label: &str, agent: &str, verified: f64, false_rate: f64, tokens: f64) -> Contender {
        Contender {
            label: label.into(),
            agent: agent.into(),
            model: "m".into(),
            verified_rate: Some(verified),
            false_verification_rate: Some(false_rate),
            tokens_per_trial: tokens,
            capabilities: vec!["api-ledger::balance".into()],
        }
    }

    #[test]
    fn nothing_to_break_without_a_reference_run() {
        assert!(status(&[]).starts_with("Untested: no real run"));
        assert!(
            status(&[run("o", "opencode", 0.9, 0.0, 10.0)]).starts_with("Untested: no real run")
        );
    }

    #[test]
    fn a_lone_reference_run_is_untested_not_a_win() {
        let s = status(&[run("r", REFERENCE_AGENT, 0.1, 0.0, 100.0)]);
        assert!(s.starts_with("Untested on `m`"), "{s}");
        assert!(s.contains("`r` (verified rate 10.0%"), "{s}");
    }

    #[test]
    fn a_better_comparable_rival_falsifies_the_claim() {
        let r = run("r", REFERENCE_AGENT, 0.5, 0.1, 100.0);
        let s = status(&[r.clone(), run("o", "opencode", 0.6, 0.1, 150.0)]);
        assert!(s.starts_with("Falsified on `m`"), "{s}");
        assert!(s.contains("`o` (opencode) has verified rate 60.0%"), "{s}");
    }

    #[test]
    fn a_rival_that_buys_its_rate_with_dishonesty_or_tokens_does_not() {
        let r = run("r", REFERENCE_AGENT, 0.5, 0.1, 100.0);
        for rival in [
            run("lies", "opencode", 0.9, 0.2, 100.0),
            run("spends", "opencode", 0.9, 0.0, 201.0),
            run("worse", "opencode", 0.4, 0.0, 50.0),
            run("equal", "opencode", 0.5, 0.0, 50.0),
        ] {
            let s = status(&[r.clone(), rival.clone()]);
            assert!(s.starts_with("Stands on `m`"), "{}: {s}", rival.label);
        }
    }

    #[test]
    fn only_the_same_model_and_capabilities_compare() {
        let r = run("r", REFERENCE_AGENT, 0.5, 0.0, 100.0);
        let mut other_model = run("o", "opencode", 0.9, 0.0, 100.0);
        other_model.model = "bigger".into();
        let mut other_caps = run("c", "opencode", 0.9, 0.0, 100.0);
        other_caps.capabilities.push("cli-tally::sum".into());
        let s = status(&[r, other_model, other_caps]);
        assert!(s.starts_with("Untested on `m`"), "{s}");
    }

    #[test]
    fn the_reference_agents_best_run_is_the_one_compared() {
        let s = status(&[
            run("r1", REFERENCE_AGENT, 0.2, 0.0, 100.0),
            run("r2", REFERENCE_AGENT, 0.7, 0.0, 100.0),
            run("o", "opencode", 0.6, 0.0, 100.0),
        ]);
        assert!(s.starts_with("Stands") && s.contains("`r2`"), "{s}");
    }
}
