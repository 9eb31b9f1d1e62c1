//! Which mutants leave a capability intact: the independence matrix of one app.
//!
//! "Passes on the app, fails on this capability's mutant" accepts any test that can
//! tell the app's build from *a* changed build: an identity snapshot, a usage line
//! that names the mutant, a guess. A test of a capability must also pass on the
//! mutants of the other capabilities that leave it intact. Which ones those are is
//! not declared by hand but observed: the app's reference tests (the tests its
//! scripts have the reference agent write) are run against the app and every mutant,
//! and the mutant of `y` is independent of `x` when the reference test of `x` passes
//! on it. The matrix is kept as raw evidence beside every record whose gate drew from
//! it, so that rescore re-derives the draw's candidates from the same cells.

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};

use super::ProcessEnd;

/// The format of [`Matrix`]; a cached matrix of another version is computed again.
pub const MATRIX_VERSION: u32 = 1;

/// The reference test of every verifiable capability, run against the app and every
/// mutant.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Matrix {
    pub schema_version: u32,
    pub app: String,
    pub app_content_hash: String,
    /// SHA-256 over every reference test (files and command) the cells ran: a changed
    /// script is a new matrix.
    pub reference_sha256: String,
    /// The verifiable capabilities, each with a mutant and a reference test, in the
    /// corpus's order.
    pub capabilities: Vec<String>,
    pub cells: Vec<Cell>,
}

/// One run of one reference test against one target.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Cell {
    /// Whose reference test ran.
    pub test: String,
    /// `None`: the app; `Some(y)`: the mutant of `y`.
    pub mutant: Option<String>,
    pub end: ProcessEnd,
}

/// Why a matrix cannot stand for its app: each would make "independent" meaningless.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MatrixProblem {
    #[error("app `{app}`: the reference test of `{capability}` fails on the app itself ({how})")]
    FailsOnApp {
        app: String,
        capability: String,
        how: String,
    },
    #[error("app `{app}`: the reference test of `{capability}` passes on its own mutant, which then breaks nothing it checks")]
    PassesOnOwnMutant { app: String, capability: String },
    #[error("app `{app}`: the reference test of `{capability}` fails on every other mutant ({others}): it tells the app's build apart, not its capability")]
    FailsOnEveryOther {
        app: String,
        capability: String,
        others: String,
    },
    #[error("app `{app}`: no cell for the reference test of `{capability}` on {target}")]
    Missing {
        app: String,
        capability: String,
        target: String,
    },
}

impl Matrix {
    fn cell(&self, test: &str, mutant: Option<&str>) -> Option<&Cell> {
        self.cells
            .iter()
            .find(|c| c.test == test && c.mutant.as_deref() == mutant)
    }

    /// The capabilities whose mutants leave `capability` intact: its reference test
    /// passed on them. Empty for a capability the matrix does not hold.
    pub fn independent_of(&self, capability: &str) -> Vec<String> {
        self.capabilities
            .iter()
            .filter(|y| y.as_str() != capability)
            .filter(|y| {
                self.cell(capability, Some(y))
                    .is_some_and(|c| c.end.success())
            })
            .cloned()
            .collect()
    }

    /// Every reason this matrix cannot be used, in the corpus's order.
    pub fn problems(&self) -> Vec<MatrixProblem> {
        let mut problems = Vec::new();
        let app = || self.app.clone();
        for x in &self.capabilities {
            let missing = |target: String| MatrixProblem::Missing {
                app: app(),
                capability: x.clone(),
                target,
            };
            match self.cell(x, None) {
                None => problems.push(missing("the app".into())),
                Some(c) if !c.end.success() => problems.push(MatrixProblem::FailsOnApp {
                    app: app(),
                    capability: x.clone(),
                    how: c.end.describe(),
                }),
                Some(_) => {}
            }
            match self.cell(x, Some(x)) {
                None => problems.push(missing(format!("the mutant of `{x}`"))),
                Some(c) if c.end.success() => problems.push(MatrixProblem::PassesOnOwnMutant {
                    app: app(),
                    capability: x.clone(),
                }),
                Some(_) => {}
            }
            let others: Vec<&String> = self.capabilities.iter().filter(|y| *y != x).collect();
            let mut all_there = true;
            for y in &others {
                if self.cell(x, Some(y)).is_none() {
                    all_there = false;
                    problems.push(missing(format!("the mutant of `{y}`")));
                }
            }
            if all_there && !others.is_empty() && self.independent_of(x).is_empty() {
                problems.push(MatrixProblem::FailsOnEveryOther {
                    app: app(),
                    capability: x.clone(),
                    others: others
                        .iter()
                        .map(|y| y.as_str())
                        .collect::<Vec<_>>()
                        .join(", "),
                });
            }
        }
        problems
    }
}

/// Whether a gate's draw of independent mutants is one the matrix allows: distinct
/// candidates, as many as the limit or all there are. `None` when it is.
pub fn check_draw(candidates: &[String], drawn: &[String], limit: u32) -> Option<String> {
    let unique: BTreeSet<&String> = drawn.iter().collect();
    if unique.len() != drawn.len() {
        return Some("the same independent mutant was drawn twice".into());
    }
    if let Some(stray) = drawn.iter().find(|d| !candidates.contains(d)) {
        return Some(format!(
            "the mutant of `{stray}` was drawn, but the matrix does not leave this capability intact on it"
        ));
    }
    let want = candidates.len().min(limit as usize);
    if drawn.len() != want {
        return Some(format!(
            "{} independent mutants were drawn where the matrix and the limit ask for {want}",
            drawn.len()
        ));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn end(code: i32) -> ProcessEnd {
        ProcessEnd {
            exit_code: Some(code),
            signal: None,
            timed_out: false,
            duration_ms: 1,
            interrupted: None,
        }
    }

    /// `rows[x]` = (code on the app, codes on the mutants of each capability in order).
    fn matrix(caps: &[&str], rows: &[(i32, &[i32])]) -> Matrix {
        let mut cells = vec![];
        for (x, (on_app, on_mutants)) in caps.iter().zip(rows) {
            cells.push(Cell {
                test: x.to_string(),
                mutant: None,
                end: end(*on_app),
            });
            for (y, code) in caps.iter().zip(on_mutants.iter()) {
                cells.push(Cell {
                    test: x.to_string(),
                    mutant: Some(y.to_string()),
                    end: end(*code),
                });
            }
        }
        Matrix {
            schema_version: MATRIX_VERSION,
            app: "demo".into(),
            app_content_hash: "sha256:0".into(),
            reference_sha256: "sha256:1".into(),
            capabilities: caps.iter().map(|c| c.to_string()).collect(),
            cells,
        }
    }

    #[test]
    fn independent_mutants_are_those_the_reference_test_passes_on() {
        let m = matrix(
            &["a", "b", "c"],
            &[(0, &[1, 0, 1]), (0, &[0, 1, 0]), (0, &[0, 0, 1])],
        );
        assert_eq!(m.independent_of("a"), vec!["b".to_string()]);
        assert_eq!(
            m.independent_of("b"),
            vec!["a".to_string(), "c".to_string()]
        );
        assert_eq!(
            m.independent_of("c"),
            vec!["a".to_string(), "b".to_string()]
        );
        assert!(m.independent_of("nope").is_empty());
        assert!(m.problems().is_empty(), "{:?}", m.problems());
    }

    #[test]
    fn a_matrix_that_cannot_stand_names_the_app_and_the_capability() {
        // a fails on the app; b passes on its own mutant; c fails on every other mutant.
        let m = matrix(
            &["a", "b", "c"],
            &[(1, &[1, 0, 0]), (0, &[0, 0, 0]), (0, &[1, 1, 1])],
        );
        let problems: Vec<String> = m.problems().iter().map(|p| p.to_string()).collect();
        assert_eq!(problems.len(), 3, "{problems:?}");
        assert!(problems[0].contains("app `demo`") && problems[0].contains("`a` fails on the app"));
        assert!(problems[1].contains("`b` passes on its own mutant"));
        assert!(problems[2].contains("`c` fails on every other mutant (a, b)"));
    }

    #[test]
    fn a_lone_capability_has_no_independent_mutant_and_that_is_no_problem() {
        let m = matrix(&["a"], &[(0, &[1])]);
        assert!(m.independent_of("a").is_empty());
        assert!(m.problems().is_empty());
        let mut gappy = m.clone();
        gappy.cells.pop();
        assert!(matches!(gappy.problems()[0], MatrixProblem::Missing { .. }));
    }

    #[test]
    fn a_draw_must_be_distinct_allowed_and_full() {
        let cands: Vec<String> = ["b", "c", "d"].iter().map(|s| s.to_string()).collect();
        let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
        assert_eq!(check_draw(&cands, &s(&["c", "b"]), 2), None);
        assert_eq!(check_draw(&cands, &s(&["d", "b", "c"]), 5), None);
        assert!(check_draw(&cands, &s(&["b"]), 2).is_some());
        assert!(check_draw(&cands, &s(&["b", "b"]), 2).is_some());
        assert!(check_draw(&cands, &s(&["a", "b"]), 2).is_some());
        assert_eq!(check_draw(&[], &[], 3), None);
    }
}
