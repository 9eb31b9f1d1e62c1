//! Policy from observation: the path categories applied to what the kernel saw the
//! trial's processes open, and the comparison with the agent's account (the paths its
//! event stream names, [`super::policy::assess`]).
//!
//! Pure. The observation decides `evaluation_validity`; the account is kept beside it,
//! and where the two disagree, in either direction, the paths are listed: a read the
//! stream never mentioned (a quiet command agent, a read hidden in an opaque shell
//! line, a helper process) and a read the stream claims but the kernel never saw (a
//! path that does not exist in the sandbox, a `stat` without an open, a false report).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::observed::{Observation, OpenAccess};
use super::policy::{
    answer_key, classify, Access, PathCategory, PolicyFindings, Roots, MAX_FINDINGS,
};
use crate::spec::challenge::Profile;

/// Host directories whose files are every program's runtime: what a process opens
/// there says nothing about the product. `/run/gauntlet` holds the locators of the app
/// under test.
const RUNTIME_PREFIXES: &[&str] = &[
    "/usr",
    "/bin",
    "/sbin",
    "/lib",
    "/lib32",
    "/lib64",
    "/libx32",
    "/etc",
    "/opt",
    "/proc",
    "/sys",
    "/dev",
    "/run/gauntlet",
];

/// The kernel's suffix for a path whose file was removed after it was opened.
const DELETED: &str = " (deleted)";

/// One observed open, classified.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ClassifiedOpen {
    pub path: String,
    pub access: OpenAccess,
    pub category: PathCategory,
    pub allowed: bool,
    pub ms: u64,
    pub pid: i32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub process: Option<String>,
    /// Opened through a mount of the agent's own; `path` is the file's real one.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub foreign_mount: bool,
}

/// Where the account and the observation disagree, by path.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Discrepancies {
    /// Opened (outside the runtime), never named by the stream.
    pub observed_not_reported: Vec<String>,
    /// Named by the stream, never seen opened.
    pub reported_not_observed: Vec<String>,
    /// Paths past [`MAX_FINDINGS`] of either list, counted.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub not_kept: u64,
}

impl Discrepancies {
    pub fn is_empty(&self) -> bool {
        self.observed_not_reported.is_empty()
            && self.reported_not_observed.is_empty()
            && self.not_kept == 0
    }
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// An answer key the kernel saw opened, and why it is one ([`answer_key`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct AnswerKeyRead {
    pub path: String,
    pub why: String,
}

/// Everything the observation shows under the trial's profile.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ObservedPolicy {
    /// Why the observation cannot show that nothing else was opened; `None`: complete.
    pub incomplete: Option<String>,
    /// Mount points watched, and those not (with why).
    pub watched: Vec<String>,
    pub unwatched: Vec<String>,
    /// Observed opens outside the runtime, in order (bounded by [`MAX_FINDINGS`]).
    pub opens: Vec<ClassifiedOpen>,
    /// Distinct paths per category, runtime included.
    pub by_category: BTreeMap<String, u64>,
    /// Distinct paths opened against the profile's rules, in order.
    pub disallowed_reads: Vec<String>,
    /// Of those, the answer keys no profile allows, each with why, in order. Absent
    /// when there are none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub answer_keys: Vec<AnswerKeyRead>,
    /// Whether any example, test or product source was opened.
    pub escalated_to_product_code: bool,
    pub discrepancies: Discrepancies,
    /// Opens past [`MAX_FINDINGS`] not listed in `opens` (all are classified).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub opens_not_kept: u64,
}

/// The category of an observed path. The trial's own directories come first, then the
/// runtime (the system, the agent's own binary and packages, the app under test's
/// locators), then the rules every account path is classified by. The sandbox's
/// private `/tmp` is the trial's own.
pub fn classify_observed(roots: &Roots, p: &Path) -> PathCategory {
    if p.starts_with(&roots.skills) {
        return PathCategory::SuppliedSkills;
    }
    if p.starts_with(&roots.trial_dir) {
        return PathCategory::TrialWorkspace;
    }
    // An answer key is never the agent's runtime, whatever its command line names.
    if answer_key(roots, p).is_some() {
        return PathCategory::AnswerKey;
    }
    if is_runtime(roots, p) {
        return PathCategory::Runtime;
    }
    match classify(roots, p) {
        PathCategory::Outside if p.starts_with("/tmp") => PathCategory::TrialWorkspace,
        c => c,
    }
}

fn is_runtime(roots: &Roots, p: &Path) -> bool {
    p == Path::new("/")
        || RUNTIME_PREFIXES.iter().any(|r| p.starts_with(r))
        || roots.runtime.iter().any(|r| p.starts_with(r))
}

/// Classify every observed open under `profile` and compare it with the account.
pub fn assess(
    observation: &Observation,
    roots: &Roots,
    profile: Profile,
    account: &PolicyFindings,
) -> ObservedPolicy {
    let mut out = ObservedPolicy {
        incomplete: observation.incomplete(),
        watched: observation.watched.clone(),
        unwatched: observation.unwatched.clone(),
        ..ObservedPolicy::default()
    };
    let mut distinct: BTreeMap<&'static str, BTreeSet<&str>> = BTreeMap::new();
    let mut disallowed = BTreeSet::new();
    let mut observed_paths: BTreeSet<PathBuf> = BTreeSet::new();
    for open in &observation.opens {
        let path = open.path.strip_suffix(DELETED).unwrap_or(&open.path);
        // The sandbox's own tmpfs holds what the trial put there (and the mount points
        // of its own directories): its scratch, wherever it is mounted.
        let category = if open.private {
            PathCategory::TrialWorkspace
        } else {
            classify_observed(roots, Path::new(path))
        };
        distinct.entry(category.as_str()).or_default().insert(path);
        if category == PathCategory::Runtime {
            continue;
        }
        // A write is the trial's doing, not a read of what it must not see; every
        // write the view allows is to the trial's own directories anyway.
        let allowed = open.access == OpenAccess::Write || category.allowed_under(profile);
        if !allowed && disallowed.insert(path) {
            out.disallowed_reads.push(path.to_owned());
            if let Some(why) = (category == PathCategory::AnswerKey)
                .then(|| answer_key(roots, Path::new(path)))
                .flatten()
                .filter(|_| out.answer_keys.len() < MAX_FINDINGS)
            {
                out.answer_keys.push(AnswerKeyRead {
                    path: path.to_owned(),
                    why: why.to_owned(),
                });
            }
        }
        out.escalated_to_product_code |=
            open.access != OpenAccess::Write && category.is_implementation();
        observed_paths.insert(PathBuf::from(path));
        if out.opens.len() < MAX_FINDINGS {
            out.opens.push(ClassifiedOpen {
                path: path.to_owned(),
                access: open.access,
                category,
                allowed,
                ms: open.ms,
                pid: open.pid,
                process: open.process.clone(),
                foreign_mount: open.foreign_mount,
            });
        } else {
            out.opens_not_kept += 1;
        }
    }
    out.by_category = distinct
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v.len() as u64))
        .collect();
    out.discrepancies = discrepancies(&observed_paths, roots, account);
    out
}

/// Paths in one account or observation and not the other. A search of a directory
/// (`ls`, `grep -r`, a glob tool) names everything under it.
fn discrepancies(
    observed: &BTreeSet<PathBuf>,
    roots: &Roots,
    account: &PolicyFindings,
) -> Discrepancies {
    let mut reported: BTreeMap<PathBuf, bool> = BTreeMap::new();
    for p in &account.paths {
        let path = PathBuf::from(&p.resolved);
        if classify_observed(roots, &path) == PathCategory::Runtime {
            continue;
        }
        *reported.entry(path).or_default() |= p.access == Access::Search;
    }
    let named = |o: &Path| {
        reported.contains_key(o)
            || o.ancestors()
                .skip(1)
                .any(|a| reported.get(a).copied().unwrap_or(false))
    };
    let mut d = Discrepancies::default();
    let mut keep = |list: &mut Vec<String>, p: &Path| {
        if list.len() < MAX_FINDINGS {
            list.push(p.to_string_lossy().into_owned());
        } else {
            d.not_kept += 1;
        }
    };
    let (mut unreported, mut unobserved) = (Vec::new(), Vec::new());
    for o in observed.iter().filter(|o| !named(o)) {
        keep(&mut unreported, o);
    }
    for (r, search) in &reported {
        // Whatever is under `r` sorts right after it.
        let seen = observed.contains(r)
            || (*search
                && observed
                    .range::<PathBuf, _>(r.clone()..)
                    .next()
                    .is_some_and(|o| o.starts_with(r)));
        if !seen {
            keep(&mut unobserved, r);
        }
    }
    d.observed_not_reported = unreported;
    d.reported_not_observed = unobserved;
    d
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::evidence::observed::{End, Open};
    use crate::evidence::policy::ObservedPath;

    fn roots() -> Roots {
        Roots {
            workspace: "/out/run/t/workspace".into(),
            skills: "/out/run/t/workspace/.agent/skills".into(),
            trial_dir: "/out/run/t".into(),
            runs_dir: "/out".into(),
            repo: "/repo".into(),
            runtime: vec![
                "/repo/workspace".into(),
                "/repo/target/debug/gauntlet-agent".into(),
            ],
            challenge: None,
        }
    }

    fn obs(opens: &[(&str, OpenAccess)]) -> Observation {
        Observation {
            watched: vec!["/".into()],
            opens: opens
                .iter()
                .map(|(p, a)| Open {
                    ms: 0,
                    pid: 2,
                    process: None,
                    access: *a,
                    path: (*p).into(),
                    foreign_mount: false,
                    private: false,
                    unresolved: false,
                })
                .collect(),
            end: Some(End::default()),
            ..Observation::default()
        }
    }

    fn account(paths: &[(&str, Access)]) -> PolicyFindings {
        PolicyFindings {
            paths: paths
                .iter()
                .map(|(p, a)| ObservedPath {
                    call: 0,
                    path: (*p).into(),
                    resolved: (*p).into(),
                    category: classify(&roots(), Path::new(p)),
                    access: *a,
                    allowed: true,
                })
                .collect(),
            ..PolicyFindings::default()
        }
    }

    #[test]
    fn the_runtime_is_not_counted_and_the_trials_own_tmp_is_its_workspace() {
        let r = roots();
        for (p, c) in [
            ("/usr/lib/x86_64-linux-gnu/libc.so.6", PathCategory::Runtime),
            ("/proc/self/maps", PathCategory::Runtime),
            (
                "/repo/workspace/node_modules/x/cli.js",
                PathCategory::Runtime,
            ),
            ("/repo/target/debug/gauntlet-agent", PathCategory::Runtime),
            ("/repo/target/debug/other", PathCategory::AdjacentResults),
            ("/run/gauntlet/target/bin", PathCategory::Runtime),
            ("/", PathCategory::Runtime),
            ("/tmp/xyz", PathCategory::TrialWorkspace),
            (
                "/out/run/t/home/.claude/projects/x",
                PathCategory::TrialWorkspace,
            ),
            (
                "/repo/apps/cli-tally/src/tally.rs",
                PathCategory::ProductSource,
            ),
            ("/repo/tests/integration", PathCategory::Tests),
        ] {
            assert_eq!(classify_observed(&r, Path::new(p)), c, "{p}");
        }
    }

    #[test]
    fn a_silent_read_of_product_source_contaminates_none_and_skills_and_is_a_discrepancy() {
        let o = obs(&[
            ("/usr/bin/cat", OpenAccess::Exec),
            ("/out/run/t/workspace/m.txt", OpenAccess::Read),
            ("/repo/apps/cli-tally/src/tally.rs", OpenAccess::Read),
            ("/repo/tests", OpenAccess::List),
            ("/out/run/t/workspace/r.json", OpenAccess::Write),
        ]);
        let acc = account(&[
            ("/out/run/t/workspace/m.txt", Access::Read),
            ("/out/run/t/workspace/r.json", Access::Write),
            ("/usr/bin/cat", Access::Referenced),
        ]);
        for (profile, contaminated) in [
            (Profile::None, true),
            (Profile::Skills, true),
            (Profile::All, false),
        ] {
            let p = assess(&o, &roots(), profile, &acc);
            assert_eq!(p.incomplete, None);
            assert_eq!(!p.disallowed_reads.is_empty(), contaminated, "{profile}");
            assert!(p.escalated_to_product_code);
            assert_eq!(
                p.discrepancies.observed_not_reported,
                ["/repo/apps/cli-tally/src/tally.rs", "/repo/tests"],
                "{profile}"
            );
            assert!(p.discrepancies.reported_not_observed.is_empty());
            assert_eq!(p.by_category.get("runtime"), Some(&1));
            assert_eq!(p.opens.len(), 4);
        }
    }

    #[test]
    fn a_claimed_read_never_seen_is_a_discrepancy_and_a_search_covers_its_tree() {
        let o = obs(&[
            ("/repo/docs", OpenAccess::List),
            ("/repo/docs/a.md", OpenAccess::Read),
        ]);
        let acc = account(&[
            ("/repo/docs", Access::Search),
            ("/repo/apps/x/src/main.rs", Access::Read),
        ]);
        let p = assess(&o, &roots(), Profile::Skills, &acc);
        assert!(p.discrepancies.observed_not_reported.is_empty(), "{p:?}");
        assert_eq!(
            p.discrepancies.reported_not_observed,
            ["/repo/apps/x/src/main.rs"]
        );
        // The claim alone does not contaminate: the observation decides.
        assert!(p.disallowed_reads.is_empty());
    }

    #[test]
    fn an_incomplete_observation_still_keeps_what_it_saw() {
        let mut o = obs(&[("/repo/src/lib.rs", OpenAccess::Read)]);
        o.end = None;
        let p = assess(&o, &roots(), Profile::None, &PolicyFindings::default());
        assert!(p.incomplete.is_some());
        assert_eq!(p.disallowed_reads, ["/repo/src/lib.rs"]);
        // A file removed since it was opened is classified by its path.
        let o = obs(&[("/repo/src/lib.rs (deleted)", OpenAccess::Read)]);
        let p = assess(&o, &roots(), Profile::None, &PolicyFindings::default());
        assert_eq!(p.disallowed_reads, ["/repo/src/lib.rs"]);
    }

    /// Roots that name the trial's challenge, `tally-report`: its answer keys are
    /// classified, and no profile allows them.
    fn keyed() -> Roots {
        Roots {
            challenge: Some(crate::evidence::policy::OwnChallenge {
                dir: "/repo/challenges/tally-report".into(),
                handed: vec!["challenge-prompt.md".into(), "workspace_template".into()],
                whole_repository: true,
            }),
            ..roots()
        }
    }

    #[test]
    fn an_answer_key_contaminates_every_profile_and_says_why() {
        let keys = [
            (
                "/repo/challenges/tally-report/challenge.yaml",
                "the challenge's answer key",
            ),
            (
                "/repo/challenges/tally-report/flows/default.json",
                "the challenge's reference solution",
            ),
            (
                "/repo/challenges/tally-report/flows",
                "the challenge's reference solution",
            ),
            (
                "/repo/challenges/tally-report/README.md",
                "the challenge's own files",
            ),
            (
                "/repo/challenges/ledger-reconcile/challenge.yaml",
                "another challenge's directory",
            ),
            (
                "/repo/challenges/ledger-reconcile/challenge-prompt.md",
                "another challenge's directory",
            ),
            (
                "/repo/challenges/notes-cleanup/workspace_template/x",
                "another challenge's directory",
            ),
            (
                "/repo/challenges/scorecard/probes/p1-1.json",
                "the scorecard's probes",
            ),
            (
                "/repo/challenges/scorecard/scorecard.json",
                "the scorecard's rubric",
            ),
            (
                "/repo/apps/cli-tally/flows/stats.json",
                "an app's reference tests",
            ),
            ("/repo/apps/cli-tally/flows", "an app's reference tests"),
            (
                "/repo/tests/fixtures/challenge-streams/reference/tally-report.jsonl",
                "recorded solutions of the challenges",
            ),
            // The repository beyond its docs and product source (red team round seven):
            // its history holds every key by another name (`git show HEAD:…`), its tests
            // the reference's recorded runs and the expected values.
            (
                "/repo/.git/objects/pack/pack-1f2e.pack",
                "the repository's history",
            ),
            ("/repo/.git/objects/ab/cdef0123", "the repository's history"),
            ("/repo/.git/objects", "the repository's history"),
            ("/repo/.git/index", "the repository's history"),
            ("/repo/.git/HEAD", "the repository's history"),
            ("/repo/.git/refs/heads/main", "the repository's history"),
            ("/repo/.git/COMMIT_EDITMSG", "the repository's history"),
            (
                "/repo/tests/integration/snapshots/streams/reference__tally-report.snap",
                "the test suite",
            ),
            (
                "/repo/tests/integration/snapshots/streams/reference__ledger-reconcile.snap",
                "the test suite",
            ),
            ("/repo/tests/integration/snapshots", "the test suite"),
            ("/repo/tests/integration/challenge.rs", "the test suite"),
            (
                "/repo/tests/fixtures/agents/hostile/lump-ledger.sh",
                "the test suite",
            ),
            ("/repo/tests/fixtures/agents/x.sh", "the test suite"),
            (
                "/repo/benches-as-tests/challenge.rs",
                "a repository file that is neither",
            ),
            (
                "/repo/redteam/agents/copy-answers.sh",
                "a repository file that is neither",
            ),
            (
                "/repo/results/published/x/summary.json",
                "a repository file that is neither",
            ),
            (
                "/repo/target/debug/other",
                "a repository file that is neither",
            ),
        ];
        for profile in Profile::ALL {
            for (path, why) in keys {
                let o = obs(&[
                    ("/out/run/t/workspace/measurements.txt", OpenAccess::Read),
                    (path, OpenAccess::Read),
                ]);
                let p = assess(&o, &keyed(), profile, &PolicyFindings::default());
                assert_eq!(p.disallowed_reads, [path], "{profile} {path}");
                assert_eq!(p.answer_keys.len(), 1, "{profile} {path}");
                assert_eq!(p.answer_keys[0].path, path);
                assert!(
                    p.answer_keys[0].why.starts_with(why),
                    "{profile} {path}: {}",
                    p.answer_keys[0].why
                );
                assert_eq!(p.opens[1].category, PathCategory::AnswerKey);
                assert_eq!(p.by_category.get("answer_key"), Some(&1));
                // The agent's account classifies it the same way.
                let acc = crate::evidence::policy::assess(
                    &[crate::evidence::test_support::tool_call(
                        "c",
                        "read",
                        serde_json::json!({ "filePath": path }),
                    )],
                    &keyed(),
                    profile,
                );
                assert_eq!(acc.disallowed_reads, [path], "account {profile} {path}");
            }
        }
    }

    #[test]
    fn what_a_profile_hands_over_or_allows_stays_as_it_was() {
        // (path, allowed under none, skills, all)
        for (path, allowed) in [
            // Handed by every profile: the challenge's own prompt and template (a copy
            // is in the workspace), read where they lie like any repository file.
            (
                "/repo/challenges/tally-report/challenge-prompt.md",
                [false, false, true],
            ),
            (
                "/repo/challenges/tally-report/workspace_template/measurements.txt",
                [false, false, true],
            ),
            // Listings: names only.
            ("/repo/challenges", [false, false, true]),
            ("/repo/challenges/tally-report", [false, false, true]),
            ("/repo/challenges/ledger-reconcile", [false, false, true]),
            // The shared layers and the bundle, handed by profile.
            ("/repo/challenges/base-prompt.md", [false, true, true]),
            ("/repo/challenges/profiles/all.md", [false, true, true]),
            ("/repo/challenges/skills/cli-tally.md", [false, true, true]),
            ("/repo/challenges/scorecard/README.md", [false, false, true]),
            ("/repo/apps/cli-tally/corpus.json", [false, true, true]),
            // What `all` lets an agent inspect when it is blocked: docs, product source
            // (all of an app but its flows), the Cargo files, the README.
            ("/repo/apps/cli-tally/src/main.rs", [false, false, true]),
            (
                "/repo/apps/ext-wordbadge/extension/x.js",
                [false, false, true],
            ),
            ("/repo/docs/challenges.md", [false, true, true]),
            ("/repo/src/lib.rs", [false, false, true]),
            ("/repo/Cargo.toml", [false, false, true]),
            ("/repo/Cargo.lock", [false, false, true]),
            ("/repo/README.md", [false, true, true]),
            // Top-level entries themselves: a listing (names only), a top-level file.
            ("/repo", [false, false, true]),
            ("/repo/tests", [false, false, true]),
            ("/repo/.git", [false, false, true]),
            ("/repo/redteam", [false, false, true]),
            ("/repo/.gitignore", [false, false, true]),
            // The ignore rules a search tool reads on its way up.
            ("/repo/.git/info/exclude", [false, false, true]),
        ] {
            for (profile, allowed) in Profile::ALL.into_iter().zip(allowed) {
                let o = obs(&[(path, OpenAccess::Read)]);
                let p = assess(&o, &keyed(), profile, &PolicyFindings::default());
                assert_eq!(p.disallowed_reads.is_empty(), allowed, "{profile} {path}");
                assert!(p.answer_keys.is_empty(), "{profile} {path}");
            }
        }
        // A record made before answer keys were classified keeps its rule: under `all`
        // the manifest was allowed.
        let o = obs(&[(
            "/repo/challenges/tally-report/challenge.yaml",
            OpenAccess::Read,
        )]);
        let p = assess(&o, &roots(), Profile::All, &PolicyFindings::default());
        assert!(p.disallowed_reads.is_empty() && p.answer_keys.is_empty());
        assert_eq!(p.opens[0].category, PathCategory::Examples);
    }

    /// The agent's runtime in the repository (its own script, the pinned CLIs, the
    /// harness's binaries) is not the repository's answer key; its siblings are, and
    /// no runtime makes the history readable.
    #[test]
    fn the_agents_own_script_is_runtime_and_its_siblings_are_keys() {
        let mut r = keyed();
        r.runtime
            .push("/repo/tests/fixtures/agents/quiet-reader.sh".into());
        r.runtime.push("/repo/.git/objects".into());
        for (path, key) in [
            ("/repo/tests/fixtures/agents/quiet-reader.sh", false),
            ("/repo/workspace/node_modules/x/cli.js", false),
            ("/repo/target/debug/gauntlet-agent", false),
            ("/repo/tests/fixtures/agents/hostile/hand-tally.sh", true),
            ("/repo/.git/objects/pack/pack-1f2e.pack", true),
        ] {
            let o = obs(&[(path, OpenAccess::Read)]);
            for profile in Profile::ALL {
                let p = assess(&o, &r, profile, &PolicyFindings::default());
                assert_eq!(p.answer_keys.len(), usize::from(key), "{profile} {path}");
            }
        }
        // The runs directory keeps its category: other trials, hidden by the seal.
        let mut r = keyed();
        r.runs_dir = "/repo/results/runs".into();
        let o = obs(&[("/repo/results/runs/other/record.json", OpenAccess::Read)]);
        let p = assess(&o, &r, Profile::All, &PolicyFindings::default());
        assert!(p.answer_keys.is_empty());
        assert_eq!(p.opens[0].category, PathCategory::AdjacentResults);
        // Runs written above the repository do not make the whole of it another run's.
        r.runs_dir = "/".into();
        let o = obs(&[("/repo/tests/integration/challenge.rs", OpenAccess::Read)]);
        let p = assess(&o, &r, Profile::All, &PolicyFindings::default());
        assert_eq!(p.answer_keys.len(), 1);
    }

    #[test]
    fn a_record_made_before_round_seven_keeps_its_rule() {
        let mut r = keyed();
        if let Some(c) = r.challenge.as_mut() {
            c.whole_repository = false;
        }
        for (path, category) in [
            (
                "/repo/.git/objects/ab/cdef0123",
                PathCategory::ProductSource,
            ),
            (
                "/repo/tests/integration/snapshots/streams/reference__tally-report.snap",
                PathCategory::Tests,
            ),
        ] {
            let o = obs(&[(path, OpenAccess::Read)]);
            let p = assess(&o, &r, Profile::All, &PolicyFindings::default());
            assert!(p.disallowed_reads.is_empty(), "{path}");
            assert_eq!(p.opens[0].category, category, "{path}");
        }
        // Its own challenge's key stays one.
        let o = obs(&[(
            "/repo/challenges/tally-report/challenge.yaml",
            OpenAccess::Read,
        )]);
        let p = assess(&o, &r, Profile::All, &PolicyFindings::default());
        assert_eq!(p.answer_keys.len(), 1);
        // The field is absent from such a record, and reads back false.
        let c: crate::evidence::policy::OwnChallenge = serde_json::from_value(
            serde_json::json!({"dir": "/repo/challenges/tally-report", "handed": []}),
        )
        .expect("old roots");
        assert!(!c.whole_repository);
    }

    #[test]
    fn an_answer_key_is_never_the_agents_runtime() {
        let mut r = keyed();
        r.runtime
            .push("/repo/challenges/tally-report/flows/default.json".into());
        let o = obs(&[(
            "/repo/challenges/tally-report/flows/default.json",
            OpenAccess::Read,
        )]);
        let p = assess(&o, &r, Profile::All, &PolicyFindings::default());
        assert_eq!(p.answer_keys.len(), 1);
    }
}
