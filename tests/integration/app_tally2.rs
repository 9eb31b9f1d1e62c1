//! The frozen app `cli-tally-2`, the second version of `cli-tally`: everything
//! `app_tally` checks of the first (loader, hash, each flow's test green on the app, red
//! on its own mutant and green on every other, the corpus's behaviour), the same answers
//! as the first version wherever a capability is at stake, and what the new version is
//! for: nothing but a capability's own behaviour tells a mutant from the app. The first
//! version let clap parse `--mutant`, so a usage error named the mutant
//! (`Usage: cli-tally --mutant <CAPABILITY>`); the probe check below shows that it
//! still does, so the check can fail.

use super::app_notes::describe;
use super::app_tally::{
    bin, every_flow_proves_its_capability_on, loader_accepts_it_and_its_flows_claim_shell_tests,
    mutant_flags_are_accepted_and_the_ambiguous_one_refused_by, tally,
    the_tool_does_what_the_corpus_says_in, MUTANTS,
};

const APP: &str = "cli-tally-2";
const OLD: &str = "cli-tally";

#[test]
fn loader_accepts_cli_tally_2_and_its_flows_claim_shell_tests() {
    loader_accepts_it_and_its_flows_claim_shell_tests(APP);
}

#[test]
fn every_flow_of_cli_tally_2_proves_its_capability_and_fails_only_on_its_own_mutant() {
    every_flow_proves_its_capability_on(APP);
}

#[test]
fn cli_tally_2_accepts_its_mutant_flags_and_refuses_the_ambiguous_one() {
    mutant_flags_are_accepted_and_the_ambiguous_one_refused_by(APP);
}

#[test]
fn cli_tally_2_does_what_the_corpus_says() {
    the_tool_does_what_the_corpus_says_in(APP);
}

/// The corpus the agent is shown is the first version's, but for the app's name; so are
/// the flows, which the first version's gate results were earned with.
#[test]
fn cli_tally_2_shows_agents_what_cli_tally_showed() {
    let read = |app: &str, file: &str| -> serde_json::Value {
        let path = super::app_notes::app_dir(app).join(file);
        let text =
            std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
    };
    let mut old = read(OLD, "corpus.json");
    let mut new = read(APP, "corpus.json");
    assert_eq!(old["app"], OLD);
    assert_eq!(new["app"], APP);
    old["app"] = serde_json::Value::Null;
    new["app"] = serde_json::Value::Null;
    assert_eq!(old, new, "corpus.json differs beyond `app`");
    for cap in MUTANTS.iter().chain(&["pleasant-output"]) {
        let flow = format!("flows/{cap}.json");
        assert_eq!(read(OLD, &flow), read(APP, &flow), "{flow}");
    }
}

/// The same answer from both versions, the app and each mutant, wherever a capability
/// is at stake: the new version changes how a mutant is selected, not what it does.
#[test]
fn cli_tally_2_answers_as_cli_tally_did() {
    let (old, new) = (bin(OLD), bin(APP));
    let requests: &[(&[&str], &str)] = &[
        (&["--version"], ""),
        (&["-V"], ""),
        (&["sum", "1", "2", "3.5"], ""),
        (&["sum", "-1.25", "4"], ""),
        (&["sum", "2", "5", "10"], ""),
        (&["sum"], "4 6\n 0.5\n"),
        (&["sum"], ""),
        (&["stats", "4", "9", "-2", "3", "0"], ""),
        (&["stats", "1", "2", "2"], ""),
        (&["stats"], ""),
        (&["--json", "sum", "1", "2.5"], ""),
        (&["stats", "4", "1", "--json", "7"], ""),
        (&["sum", "1", "abc", "2"], ""),
        (&["stats", "1e3"], ""),
        (&["sum"], "1 x2 3"),
    ];
    let mut differ = Vec::new();
    for target in std::iter::once(None).chain(MUTANTS.iter().map(Some)) {
        for (args, stdin) in requests {
            let mut argv: Vec<&str> = target.map(|m| vec!["--mutant", *m]).unwrap_or_default();
            argv.extend_from_slice(args);
            let (a, b) = (tally(&old, &argv, stdin), tally(&new, &argv, stdin));
            if (a.status.code(), &a.stdout, &a.stderr) != (b.status.code(), &b.stdout, &b.stderr) {
                differ.push(format!(
                    "{argv:?} (stdin {stdin:?}): {OLD} {}; {APP} {}",
                    describe(&a),
                    describe(&b)
                ));
            }
        }
    }
    assert!(differ.is_empty(), "{}", differ.join("\n"));
}

/// One invocation a test may make whose answer is not a capability's, except on the
/// mutants named in `differs_on`, where it must differ (so the probes see the mutants).
struct Probe {
    args: &'static [&'static str],
    stdin: &'static str,
    differs_on: &'static [&'static str],
}

const fn probe(args: &'static [&'static str], stdin: &'static str) -> Probe {
    Probe {
        args,
        stdin,
        differs_on: &[],
    }
}

const PROBES: &[Probe] = &[
    probe(&["--help"], ""),
    probe(&["-h"], ""),
    probe(&["help"], ""),
    probe(&["sum", "--help"], ""),
    Probe {
        args: &["--version"],
        stdin: "",
        differs_on: &["version"],
    },
    Probe {
        args: &["-V"],
        stdin: "",
        differs_on: &["version"],
    },
    probe(&["--bogus"], ""),
    probe(&["--json", "--bogus"], ""),
    probe(&["-x"], ""),
    probe(&[], ""),
    probe(&["--json"], ""),
    probe(&["sum"], ""),
    probe(&["stats"], ""),
    // JSON of nothing: the JSON output's own behaviour.
    Probe {
        args: &["--json", "sum"],
        stdin: "",
        differs_on: &["json-output"],
    },
    probe(&["sum", "--bogus"], ""),
    probe(&["frobnicate"], ""),
];

/// What tells `app`'s mutants apart other than their capability's behaviour: every probe
/// a mutant answers otherwise than the app (stdout, stderr or exit code) where its
/// capability is not at stake — or the same where it is — and every answer that names
/// mutants at all. The binary is run as the CLI relay runs it: `--mutant <capability>`
/// first, then the test's arguments.
fn tells(app: &str) -> Vec<String> {
    let bin = bin(app);
    let mut found = Vec::new();
    for p in PROBES {
        let want = tally(&bin, p.args, p.stdin);
        let mut answers = vec![("app".to_string(), want.clone())];
        for m in MUTANTS {
            let mut argv = vec!["--mutant", m];
            argv.extend_from_slice(p.args);
            let got = tally(&bin, &argv, p.stdin);
            let same = (got.status.code(), &got.stdout, &got.stderr)
                == (want.status.code(), &want.stdout, &want.stderr);
            let own = p.differs_on.contains(&m);
            if same == own {
                found.push(format!(
                    "{app} {:?} (stdin {:?}) on the `{m}` mutant: {}, on the app: {}",
                    p.args,
                    p.stdin,
                    describe(&got),
                    describe(&want)
                ));
            }
            answers.push((format!("`{m}` mutant"), got));
        }
        for (target, out) in answers {
            let text = format!(
                "{}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
            if text.to_lowercase().contains("mutant") {
                found.push(format!(
                    "{app} {:?} on the {target} names mutants: {text:?}",
                    p.args
                ));
            }
        }
    }
    found
}

#[test]
fn nothing_but_a_capability_tells_a_mutant_of_cli_tally_2_unlike_cli_tally() {
    let new = tells(APP);
    assert!(new.is_empty(), "{}", new.join("\n"));
    // The same check on the first version finds what cli-tally-2 removed: on every
    // mutant, an unknown flag's usage line names the mutant flag; and `--help` lists it.
    let old = tells(OLD);
    for m in MUTANTS {
        assert!(
            old.iter().any(|t| t.starts_with(&format!(
                "{OLD} [\"--bogus\"] (stdin \"\") on the `{m}` mutant"
            )) && t.contains("--mutant <CAPABILITY>")),
            "the probes no longer catch cli-tally's `{m}` mutant naming itself:\n{}",
            old.join("\n")
        );
    }
    assert!(
        old.iter()
            .any(|t| t.starts_with(&format!("{OLD} [\"--help\"] on the app names mutants"))),
        "{}",
        old.join("\n")
    );
}
