//! What `sum` and `stats` compute, and how each is written as text or JSON.
//!
//! Computation is exact and mutant-free; the mutants live in the renderers, so that
//! breaking one output (say the text of `sum`) leaves the others (the JSON of `sum`)
//! correct, as one bug in one code path would.

use crate::mutant::Mutant;
use crate::number::Decimal;

/// The summary of a non-empty list of numbers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stats {
    pub count: usize,
    pub sum: Decimal,
    pub min: Decimal,
    pub max: Decimal,
    pub mean: Decimal,
    /// The first number given; only the `stats` mutant reports it.
    pub first: Decimal,
}

pub fn sum(numbers: &[Decimal]) -> Decimal {
    numbers.iter().fold(Decimal::zero(), |acc, n| acc.add(*n))
}

/// `None` for an empty list: there is no minimum or mean of nothing.
pub fn stats(numbers: &[Decimal]) -> Option<Stats> {
    let first = *numbers.first()?;
    let sum = sum(numbers);
    Some(Stats {
        count: numbers.len(),
        sum,
        min: numbers.iter().copied().min()?,
        max: numbers.iter().copied().max()?,
        mean: sum.div_round(numbers.len())?,
        first,
    })
}

/// `sum` as text: the total alone on one line.
pub fn sum_text(numbers: &[Decimal], mutant: Option<Mutant>) -> String {
    let counted = if mutant == Some(Mutant::Sum) {
        &numbers[..numbers.len().saturating_sub(1)]
    } else {
        numbers
    };
    format!("{}\n", sum(counted))
}

/// `stats` as text: one `name: value` line per figure.
pub fn stats_text(s: &Stats, mutant: Option<Mutant>) -> String {
    let min = if mutant == Some(Mutant::Stats) {
        s.first
    } else {
        s.min
    };
    format!(
        "count: {}\nsum: {}\nmin: {min}\nmax: {}\nmean: {}\n",
        s.count, s.sum, s.max, s.mean
    )
}

/// One JSON object on one line. Values are exact decimals written as JSON numbers;
/// they are formatted here rather than through `f64`, which would round them.
fn json_object(fields: &[(&str, String)], command: &str, mutant: Option<Mutant>) -> String {
    let mut out = format!("{{\"command\":\"{command}\"");
    for (key, value) in fields {
        if mutant == Some(Mutant::JsonOutput) {
            out.push_str(&format!(",\"{key}\":\"{value}\""));
        } else {
            out.push_str(&format!(",\"{key}\":{value}"));
        }
    }
    out.push_str("}\n");
    out
}

pub fn sum_json(numbers: &[Decimal], mutant: Option<Mutant>) -> String {
    json_object(
        &[
            ("count", numbers.len().to_string()),
            ("sum", sum(numbers).to_string()),
        ],
        "sum",
        mutant,
    )
}

pub fn stats_json(s: &Stats, mutant: Option<Mutant>) -> String {
    json_object(
        &[
            ("count", s.count.to_string()),
            ("sum", s.sum.to_string()),
            ("min", s.min.to_string()),
            ("max", s.max.to_string()),
            ("mean", s.mean.to_string()),
        ],
        "stats",
        mutant,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn nums(list: &[&str]) -> Vec<Decimal> {
        list.iter()
            .map(|s| Decimal::parse(s).unwrap_or_else(|| panic!("{s} parses")))
            .collect()
    }

    #[test]
    fn sums_and_summarises() {
        let n = nums(&["4", "-1.5", "10", "0.25"]);
        assert_eq!(sum_text(&n, None), "12.75\n");
        assert_eq!(sum_text(&[], None), "0\n");
        let s = stats(&n).unwrap_or_else(|| panic!("stats of 4 numbers"));
        assert_eq!(
            stats_text(&s, None),
            "count: 4\nsum: 12.75\nmin: -1.5\nmax: 10\nmean: 3.1875\n"
        );
        assert_eq!(stats(&[]), None);
    }

    #[test]
    fn json_is_valid_and_numeric() {
        let n = nums(&["4", "-1.5", "10", "0.25"]);
        let v: serde_json::Value =
            serde_json::from_str(&sum_json(&n, None)).unwrap_or_else(|e| panic!("sum json: {e}"));
        assert_eq!(
            v,
            serde_json::json!({"command": "sum", "count": 4, "sum": 12.75})
        );
        let s = stats(&n).unwrap_or_else(|| panic!("stats"));
        let v: serde_json::Value = serde_json::from_str(&stats_json(&s, None))
            .unwrap_or_else(|e| panic!("stats json: {e}"));
        assert_eq!(
            v,
            serde_json::json!({"command": "stats", "count": 4, "sum": 12.75,
                               "min": -1.5, "max": 10, "mean": 3.1875})
        );
    }

    #[test]
    fn each_mutant_breaks_only_its_renderer() {
        let n = nums(&["3", "1", "2"]);
        let s = stats(&n).unwrap_or_else(|| panic!("stats"));
        assert_eq!(sum_text(&n, Some(Mutant::Sum)), "4\n");
        assert_eq!(sum_json(&n, Some(Mutant::Sum)), sum_json(&n, None));
        assert!(stats_text(&s, Some(Mutant::Stats)).contains("min: 3\n"));
        assert_eq!(stats_json(&s, Some(Mutant::Stats)), stats_json(&s, None));
        assert_eq!(
            sum_json(&n, Some(Mutant::JsonOutput)),
            "{\"command\":\"sum\",\"count\":\"3\",\"sum\":\"6\"}\n"
        );
        assert_eq!(sum_text(&n, Some(Mutant::JsonOutput)), "6\n");
    }
}
