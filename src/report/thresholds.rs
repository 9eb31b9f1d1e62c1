//! Per-capability pass thresholds, such as "must pass 3 of 3".
//!
//! A rule is `PATTERN=NEED/OF` where PATTERN is `app::capability`, `app::*` or `*`;
//! the most specific rule wins. A capability meets `NEED/OF` when it has at least OF
//! repeats and at least NEED of repeats 1..=OF passed (the honest best outcome).

use std::str::FromStr;

use serde::Serialize;

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Rule {
    pub pattern: String,
    pub need: u32,
    pub of: u32,
}

/// A threshold rule that does not parse, and why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("threshold `{rule}`: {why} (expected PATTERN=NEED/OF, e.g. `*=3/3` or `api-ledger::balance=2/3`)")]
pub struct BadRule {
    pub rule: String,
    pub why: &'static str,
}

impl FromStr for Rule {
    type Err = BadRule;
    fn from_str(s: &str) -> Result<Rule, BadRule> {
        let bad = |why: &'static str| BadRule {
            rule: s.to_owned(),
            why,
        };
        let (pattern, ratio) = s.split_once('=').ok_or_else(|| bad("no `=`"))?;
        let (need, of) = ratio.split_once('/').ok_or_else(|| bad("no `/`"))?;
        let need: u32 = need
            .trim()
            .parse()
            .map_err(|_| bad("NEED is not a number"))?;
        let of: u32 = of.trim().parse().map_err(|_| bad("OF is not a number"))?;
        if of == 0 || need > of {
            return Err(bad("expected 0 <= NEED <= OF and OF >= 1"));
        }
        let pattern = pattern.trim();
        let ok = pattern == "*"
            || pattern
                .split_once("::")
                .is_some_and(|(a, c)| !a.is_empty() && !c.is_empty() && !c.contains("::"));
        if !ok {
            return Err(bad("PATTERN must be `*`, `app::*` or `app::capability`"));
        }
        Ok(Rule {
            pattern: pattern.to_string(),
            need,
            of,
        })
    }
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Thresholds {
    pub rules: Vec<Rule>,
}

impl Thresholds {
    pub fn parse_all<S: AsRef<str>>(rules: &[S]) -> Result<Thresholds, BadRule> {
        let rules = rules
            .iter()
            .map(|r| r.as_ref().parse())
            .collect::<Result<Vec<Rule>, BadRule>>()?;
        Ok(Thresholds { rules })
    }

    /// The rule that applies to a capability, if any.
    pub fn for_capability(&self, app: &str, capability: &str) -> Option<&Rule> {
        let exact = format!("{app}::{capability}");
        let app_wide = format!("{app}::*");
        let found = [exact.as_str(), app_wide.as_str(), "*"]
            .into_iter()
            .find_map(|p| self.rules.iter().rev().find(|r| r.pattern == p));
        found
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_most_specific_rule_wins() {
        let t = Thresholds::parse_all(&["*=1/1", "a::*=2/3", "a::x=3/3"]).unwrap();
        assert_eq!(t.for_capability("a", "x").map(|r| r.need), Some(3));
        assert_eq!(t.for_capability("a", "y").map(|r| r.need), Some(2));
        assert_eq!(t.for_capability("b", "y").map(|r| r.need), Some(1));
        assert!(Thresholds::default().for_capability("a", "x").is_none());
    }

    #[test]
    fn bad_rules_are_refused_with_the_rule() {
        for bad in ["*", "*=3", "*=4/3", "*=1/0", "x=1/1", "a::b::c=1/1"] {
            let e = bad.parse::<Rule>().unwrap_err();
            assert!(e.to_string().contains(bad), "{e}");
        }
    }
}
