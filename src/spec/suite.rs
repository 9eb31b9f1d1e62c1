//! The three suites gauntlet runs, as one value: every planned trial, manifest line
//! and record says which suite it belongs to with this, and every name starts with it.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum Suite {
    /// Autonomous-QA agents against the frozen apps under `apps/`.
    Qa,
    /// Task challenges under instruction profiles, `challenges/<id>/`.
    Challenge,
    /// The autonomy scorecard's probes, `challenges/scorecard/`.
    Scorecard,
}

impl Suite {
    /// In the order `gauntlet run` plans them.
    pub const ALL: [Suite; 3] = [Suite::Qa, Suite::Challenge, Suite::Scorecard];

    /// The name in records and the first segment of every trial name.
    pub fn as_str(self) -> &'static str {
        match self {
            Suite::Qa => "qa",
            Suite::Challenge => "challenge",
            Suite::Scorecard => "scorecard",
        }
    }

    /// The suite named `s`, or `None`.
    pub fn parse(s: &str) -> Option<Suite> {
        Suite::ALL.into_iter().find(|x| x.as_str() == s)
    }

    /// The suite of a trial name, from its first segment (`qa::api-ledger::health`).
    pub fn of_trial(name: &str) -> Option<Suite> {
        Suite::parse(name.split("::").next().unwrap_or(""))
    }
}

impl std::fmt::Display for Suite {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_a_trial_name_says_its_suite() {
        for s in Suite::ALL {
            assert_eq!(Suite::parse(s.as_str()), Some(s));
            assert_eq!(serde_json::to_string(&s).unwrap(), format!("\"{s}\""));
        }
        assert_eq!(
            Suite::of_trial("challenge::x::none"),
            Some(Suite::Challenge)
        );
        assert_eq!(Suite::of_trial("qaa::x"), None);
    }
}
