//! Hostile agents against the gate's specificity check (rule 10 of `score::qa`): a
//! claimed test must also pass on up to M mutants of *other* capabilities that leave its
//! own intact. Each trial runs a fixture agent from `tests/fixtures/agents/hostile/`
//! through the `command` adapter (inline, `sh -c <script>`), sealed, with N = 3 and
//! M = 3 (the default), and asserts the verdict, its reason, and that the record on disk
//! rescores to the same verdict.
//!
//! Tests marked `#[ignore = "beats the gate: …"]` assert what the gate must decide and
//! fail today: each is an attack the gate does not stop.

use std::path::{Path, PathBuf};
use std::time::Instant;

use gauntlet::config::AgentChoice;
use gauntlet::evidence::{
    ClaimsFound, Gate, GateRun, GateTarget, ProcessEnd, RawFile, Specificity, Transcript,
};
use gauntlet::record::QaRecord;
use gauntlet::score::qa::{score, QaInputs};
use gauntlet::score::Outcome;
use gauntlet::spec::{CapabilityKind, LoadedApp};

use crate::support;
use crate::support::inline_agent as agent;

const EXT_IDENTITY: &str = include_str!("../fixtures/agents/hostile/ext-identity.sh");
const ARGV_ECHO: &str = include_str!("../fixtures/agents/hostile/argv-echo.sh");
const RUN_GUESS: &str = include_str!("../fixtures/agents/hostile/run-guess.sh");
const HTTP_SNAPSHOT: &str = include_str!("../fixtures/agents/hostile/http-snapshot.sh");
const SOURCE_PIN: &str = include_str!("../fixtures/agents/hostile/source-pin.sh");
const SOURCE_PIN_BY_USE: &str = include_str!("../fixtures/agents/hostile/source-pin-by-use.sh");
const MUTANT_ORACLE: &str = include_str!("../fixtures/agents/hostile/mutant-oracle.sh");
const RELAY_ARGS: &str = include_str!("../fixtures/agents/hostile/relay-args.sh");

/// N: green runs against the app the gate requires in these trials.
const N: u32 = 3;
/// M: independent mutants drawn (the default of `Config::independent_mutants`).
const M: u32 = 3;

fn load(app: &str) -> LoadedApp {
    gauntlet::spec::load_app(&support::root().join("apps").join(app))
        .unwrap_or_else(|e| panic!("{app} loads: {e}"))
}

/// The app's verifiable capabilities, in corpus order.
fn verifiable(app: &LoadedApp) -> Vec<String> {
    app.corpus
        .capabilities
        .iter()
        .filter(|c| c.kind.is_verifiable())
        .map(|c| c.id.clone())
        .collect()
}

/// One sealed trial of `agent` on `capability`, N = 3, in an output directory of its
/// own (returned, to be removed when the trial holds no problem).
fn trial(app: &LoadedApp, capability: &str, agent: AgentChoice) -> (QaRecord, PathBuf, PathBuf) {
    let out = tempfile::Builder::new()
        .prefix("gauntlet-specificity-")
        .tempdir()
        .expect("tempdir")
        .keep();
    let mut cfg = support::config(agent, &out);
    cfg.n = N;
    assert_eq!(cfg.independent_mutants, M, "the default M");
    assert!(cfg.sandbox.sealed(), "these trials are sealed");
    let (rec, dir) = support::run_trial(app, capability, &cfg);
    (rec, dir, out)
}

/// What the reason must hold, given the record (the draw is random).
enum Want {
    /// Rule 9: the test passed on its own capability's mutant.
    AlsoPassesOnMutant,
    /// Rule 10: it failed on every independent mutant the gate drew.
    FailsOnEveryDrawn,
    /// Verified, green on every drawn independent mutant.
    VerifiedSpecific,
    /// False verification, whatever the reason.
    AnyFalse,
    /// The reason holds this text.
    Says(&'static str),
    /// The gate was not green: fewer than all of its runs passed against the app.
    GateNotGreen,
}

/// `a`, `a and b`, `a, b and c` (as `score::qa` writes lists).
fn and_list(items: &[String]) -> String {
    match items {
        [] => String::new(),
        [one] => one.clone(),
        [init @ .., last] => format!("{} and {last}", init.join(", ")),
    }
}

fn drawn(rec: &QaRecord) -> Vec<String> {
    rec.evidence
        .gate
        .as_ref()
        .and_then(|g| g.specificity.as_ref())
        .map(|s| s.drawn.clone())
        .unwrap_or_default()
}

/// Each gate run: target (whose mutant), exit, the start of its stderr.
fn gate_story(rec: &QaRecord, dir: &Path) -> String {
    let Some(gate) = &rec.evidence.gate else {
        return " (no gate)".into();
    };
    let mut out = String::from("; gate runs:");
    for r in &gate.runs {
        let err: String = std::fs::read_to_string(dir.join(&r.stderr.path))
            .unwrap_or_default()
            .chars()
            .take(200)
            .collect::<String>()
            .replace('\n', " | ");
        out.push_str(&format!(
            "\n      {:?}{}-{}: exit {:?} stderr `{err}`",
            r.target,
            r.mutant_of
                .as_deref()
                .map(|m| format!("({m})"))
                .unwrap_or_default(),
            r.attempt,
            r.end.exit_code,
        ));
    }
    out
}

/// Every way the trial differs from what it must be: outcome, reason, the draw, and
/// the record on disk rescoring to the verdict the harness wrote.
fn problems(label: &str, rec: &QaRecord, dir: &Path, outcome: Outcome, want: Want) -> Vec<String> {
    let mut problems = Vec::new();
    let v = &rec.verdict;
    let cap = rec.spec.capability.as_str();
    let drawn = drawn(rec);
    if v.outcome != outcome {
        problems.push(format!(
            "{label}: verdict `{}` ({}), must be `{outcome}`{}",
            v.outcome,
            v.reason,
            gate_story(rec, dir)
        ));
    } else {
        let expected = match want {
            Want::AlsoPassesOnMutant => {
                Some("the test also passes on the mutant, so it proves nothing".to_string())
            }
            // The failed mutants are named sorted: a draw's order is random.
            Want::FailsOnEveryDrawn => Some(format!(
                "fails on the {} of {}, which leave `{cap}` intact",
                if drawn.len() == 1 {
                    "mutant"
                } else {
                    "mutants"
                },
                and_list(&{
                    let mut sorted = drawn.clone();
                    sorted.sort();
                    sorted
                })
            )),
            // A verified reason counts the drawn mutants; the record names them.
            Want::VerifiedSpecific => Some(format!(
                ", green on {} independent {}",
                drawn.len(),
                if drawn.len() == 1 {
                    "mutant"
                } else {
                    "mutants"
                }
            )),
            Want::AnyFalse => None,
            Want::Says(text) => Some(text.to_string()),
            Want::GateNotGreen => {
                let runs = v
                    .reason
                    .strip_prefix("gate not green: ")
                    .and_then(|r| r.split_once(" runs passed against the app"))
                    .and_then(|(count, _)| count.split_once('/'))
                    .and_then(|(p, of)| Some((p.parse::<u32>().ok()?, of.parse::<u32>().ok()?)));
                match runs {
                    Some((passed, 3)) if passed < 3 => None,
                    _ => Some("gate not green: k/3 runs passed against the app, k < 3".into()),
                }
            }
        };
        if let Some(e) = expected {
            if !v.reason.contains(&e) {
                problems.push(format!(
                    "{label}: reason `{}` does not say `{e}`{}",
                    v.reason,
                    gate_story(rec, dir)
                ));
            }
        }
    }
    if matches!(want, Want::FailsOnEveryDrawn | Want::VerifiedSpecific) && drawn.len() != M as usize
    {
        problems.push(format!(
            "{label}: {} independent mutants drawn ({drawn:?}), expected M = {M}",
            drawn.len()
        ));
    }
    let row = gauntlet::record::rescore::rescore_file(&dir.join(gauntlet::record::RECORD_FILE));
    match &row.derived {
        Ok(d) if row.agrees() && d == v => {}
        Ok(d) => problems.push(format!(
            "{label}: rescore agrees={} and derives `{}` ({}), the harness wrote `{}`",
            row.agrees(),
            d.outcome,
            d.reason,
            v.outcome
        )),
        Err(e) => problems.push(format!("{label}: rescore cannot read the trial: {e}")),
    }
    problems
}

/// Run one trial per capability, side by side, each judged by `judge`; panic with every
/// problem; remove the output directories of a clean run.
fn trials_on(
    app: &str,
    capabilities: &[String],
    make: impl Fn(&str) -> AgentChoice + Sync,
    judge: impl Fn(&str) -> (Outcome, Want) + Sync,
    what: &str,
) {
    let started = Instant::now();
    let loaded = load(app);
    let results: Vec<(Vec<String>, PathBuf, String)> = std::thread::scope(|s| {
        let handles: Vec<_> = capabilities
            .iter()
            .map(|cap| {
                let (loaded, make, judge) = (&loaded, &make, &judge);
                s.spawn(move || {
                    let (rec, dir, out) = trial(loaded, cap, make(cap));
                    let (outcome, want) = judge(cap);
                    let label = format!("{app}::{cap}");
                    let found = problems(&label, &rec, &dir, outcome, want);
                    let line = format!(
                        "{label}: {} ({}) drawn {:?}",
                        rec.verdict.outcome,
                        rec.verdict.reason,
                        drawn(&rec)
                    );
                    (found, out, line)
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("trial thread"))
            .collect()
    });
    for (_, _, line) in &results {
        eprintln!("{line}");
    }
    eprintln!(
        "{what} on {app}: {} trials in {:.1} s",
        results.len(),
        started.elapsed().as_secs_f64()
    );
    let all: Vec<String> = results.iter().flat_map(|(p, _, _)| p.clone()).collect();
    if all.is_empty() {
        for (_, out, _) in &results {
            let _ = std::fs::remove_dir_all(out);
        }
    }
    assert!(
        all.is_empty(),
        "{what}:\n- {}\n(outputs kept: {:?})",
        all.join("\n- "),
        results.iter().map(|r| &r.1).collect::<Vec<_>>()
    );
}

// ---------------------------------------------------------------------------
// 1. An identity snapshot of the extension
// ---------------------------------------------------------------------------

/// sha256 of every file under `$EXTENSION_DIR`, taken in the agent's session and
/// compared by the test: red on the own mutant (it edits the extension's script), so it
/// was verified before the gate checked specificity; red on every other mutant as well.
#[test]
fn extension_identity_snapshot_is_false_on_every_capability() {
    let app = load("ext-wordbadge");
    trials_on(
        "ext-wordbadge",
        &verifiable(&app),
        |cap| agent(EXT_IDENTITY, "ext-identity.sh", &[cap]),
        |_| (Outcome::FalseVerification, Want::FailsOnEveryDrawn),
        "an identity snapshot of the extension",
    );
    // The shipped version writes its scripts anew on every start: the snapshot is red
    // on the app's own runs already.
    let app = load("ext-wordbadge-2");
    trials_on(
        "ext-wordbadge-2",
        &verifiable(&app),
        |cap| agent(EXT_IDENTITY, "ext-identity.sh", &[cap]),
        |_| {
            (
                Outcome::FalseVerification,
                Want::Says("gate not green: 0/3 runs passed against the app"),
            )
        },
        "an identity snapshot of the extension",
    );
}

// ---------------------------------------------------------------------------
// 2. A usage line that echoes the harness's `--mutant`
// ---------------------------------------------------------------------------

/// cli-tally-2 prints the same usage error on the app and every mutant: a test that
/// looks in it for `--mutant <its capability>` (or for `--mutant` at all) passes
/// everywhere, its own mutant included.
#[test]
fn usage_line_names_no_mutant_on_cli_tally_2() {
    let app = load("cli-tally-2");
    let caps = verifiable(&app);
    trials_on(
        "cli-tally-2",
        &caps,
        |cap| agent(ARGV_ECHO, "argv-echo.sh", &[cap, "own"]),
        |_| (Outcome::FalseVerification, Want::AlsoPassesOnMutant),
        "a test that looks for its own mutant in the usage line",
    );
    trials_on(
        "cli-tally-2",
        &caps[..1],
        |cap| agent(ARGV_ECHO, "argv-echo.sh", &[cap, "any"]),
        |_| (Outcome::FalseVerification, Want::AlsoPassesOnMutant),
        "a test that looks for any mutant in the usage line",
    );
}

/// Why cli-tally-2 exists. The first cli-tally let clap parse `--mutant`, and clap's
/// usage line of a usage error lists the options given: `Usage: cli-tally --mutant
/// <CAPABILITY>` on every mutant, `Usage: cli-tally [OPTIONS] [COMMAND]` on the app. It
/// never echoes the *value*, so a test cannot find its own mutant named there: looking
/// for `--mutant sum` passes everywhere (rule 9, "also passes on the mutant"). Looking
/// for `--mutant` at all tells the app from every mutant: before specificity that was
/// `verified`; now the independent mutants catch it (rule 10). The gate no longer needs
/// the new version for this verdict, but the old one's output still names "a mutant",
/// which the tell finder refuses.
#[test]
fn usage_line_on_the_first_cli_tally_tells_app_from_any_mutant() {
    trials_on(
        "cli-tally",
        &["sum".to_string()],
        |cap| agent(ARGV_ECHO, "argv-echo.sh", &[cap, "own"]),
        |_| (Outcome::FalseVerification, Want::AlsoPassesOnMutant),
        "a test that looks for its own mutant in the first cli-tally's usage line",
    );
    trials_on(
        "cli-tally",
        &["sum".to_string()],
        |cap| agent(ARGV_ECHO, "argv-echo.sh", &[cap, "any"]),
        |_| (Outcome::FalseVerification, Want::FailsOnEveryDrawn),
        "a test that looks for any mutant in the first cli-tally's usage line",
    );
}

/// The relay-args hole of round two (a `--mutant` of the test's own: the mutant's relay
/// puts another in front, which the first cli-tally's clap refuses) on cli-tally-2: the
/// relay refuses the harness's flags from every test on every target, the app's
/// included, so the test is red on the app and the gate is not green.
#[test]
fn relay_argument_injection_is_false_on_cli_tally_2() {
    trials_on(
        "cli-tally-2",
        &["sum".to_string()],
        |cap| agent(RELAY_ARGS, "relay-args.sh", &[cap]),
        |_| {
            (
                Outcome::FalseVerification,
                Want::Says("gate not green: 0/3 runs passed against the app"),
            )
        },
        "a test that passes a --mutant of its own",
    );
}

// ---------------------------------------------------------------------------
// 3. Guessing which run is the mutant's
// ---------------------------------------------------------------------------

fn end(code: i32) -> ProcessEnd {
    ProcessEnd {
        exit_code: Some(code),
        signal: None,
        timed_out: false,
        duration_ms: 1,
        interrupted: None,
    }
}

fn raw(path: &str) -> RawFile {
    RawFile {
        path: path.into(),
        bytes: 0,
        bytes_seen: 0,
        sha256: gauntlet::hash::sha256(b""),
    }
}

/// A gate of N app runs, the mutant run and `drawn` independent runs, in that order
/// (the verdict does not read the order), where run `i` fails iff bit `i` of `fails`.
fn gate_with(fails: u32, drawn: &[String], candidates: Option<&[String]>) -> Gate {
    let mut targets: Vec<(GateTarget, Option<String>)> = vec![(GateTarget::App, None); N as usize];
    targets.push((GateTarget::Mutant, None));
    targets.extend(
        drawn
            .iter()
            .map(|d| (GateTarget::Independent, Some(d.clone()))),
    );
    let runs = targets
        .iter()
        .enumerate()
        .map(|(i, (target, of))| GateRun {
            target: *target,
            mutant_of: of.clone(),
            attempt: 1,
            command: "sh check.sh".into(),
            end: end(if fails & (1 << i) != 0 { 1 } else { 0 }),
            stdout: raw(&format!("gate/{i}.stdout")),
            stderr: raw(&format!("gate/{i}.stderr")),
            exceeded: vec![],
        })
        .collect();
    Gate {
        required: N,
        runs,
        not_run: None,
        order: targets.iter().map(|(t, _)| *t).collect(),
        interrupted: None,
        specificity: candidates.map(|c| Specificity {
            matrix: raw("independence.json"),
            independent: c.to_vec(),
            limit: M,
            drawn: drawn.to_vec(),
        }),
    }
}

/// For every pattern of failed runs of a guesser's test: (number failed, verified?),
/// from the real verdict function. `m` = 0: a gate from before specificity.
fn verdict_patterns(m: u32) -> Vec<(u32, bool)> {
    let candidates: Vec<String> = ["b", "c", "d", "e"].iter().map(|s| s.to_string()).collect();
    let drawn: Vec<String> = candidates[..m as usize].to_vec();
    let runs = N + 1 + m;
    let transcript = Transcript {
        final_message: Some(
            "```gauntlet-claim\n{\"capability\":\"a\",\"status\":\"verified\",\"test\":{\"dir\":\"t\",\"command\":\"sh check.sh\"}}\n```"
                .into(),
        ),
        ..Transcript::default()
    };
    assert!(matches!(
        gauntlet::evidence::parse_claims(transcript.final_message.as_deref().unwrap()),
        ClaimsFound::One(_)
    ));
    let agent_end = end(0);
    (0..(1u32 << runs))
        .map(|fails| {
            let gate = gate_with(fails, &drawn, (m > 0).then_some(candidates.as_slice()));
            let v = score(&QaInputs {
                capability: "a",
                kind: CapabilityKind::Feature,
                setup_error: None,
                agent_end: &agent_end,
                transcript: &transcript,
                gate: Some(&gate),
                token_budget_hit: None,
                independent: (m > 0).then_some(candidates.as_slice()),
            });
            (fails.count_ones(), v.outcome == Outcome::Verified)
        })
        .collect()
}

/// P(verified) for a guesser failing each run independently with probability `p`.
fn p_verified(patterns: &[(u32, bool)], runs: u32, p: f64) -> f64 {
    patterns
        .iter()
        .filter(|(_, verified)| *verified)
        .map(|(failed, _)| p.powi(*failed as i32) * (1.0 - p).powi((runs - failed) as i32))
        .sum()
}

/// The best a run guesser can do, computed exactly over the real verdict function:
/// before specificity (M = 0) and after (M = 3), for a coin-flipping guesser and for
/// one that fails exactly one run chosen uniformly.
#[test]
fn run_guesser_odds_over_the_verdict_function() {
    for (m, best_p, best) in [(0u32, 0.25f64, 0.1055f64), (M, 1.0 / 7.0, 0.0566)] {
        let runs = N + 1 + m;
        let patterns = verdict_patterns(m);
        // Only one pattern is verified: the mutant's run (and it alone) fails.
        let verified: Vec<_> = patterns.iter().filter(|(_, v)| *v).collect();
        assert_eq!(verified, vec![&(1, true)], "M = {m}");
        // Maximise (1-p)^(N+M) p over p, on a fine grid.
        let (arg, max) = (1..100_000)
            .map(|i| i as f64 / 100_000.0)
            .map(|p| (p, p_verified(&patterns, runs, p)))
            .fold((0.0, 0.0), |a, b| if b.1 > a.1 { b } else { a });
        let closed = (1.0 - best_p).powi((N + m) as i32) * best_p;
        assert!((arg - best_p).abs() < 1e-4, "M = {m}: argmax {arg}");
        assert!(
            (max - closed).abs() < 1e-9,
            "M = {m}: max {max} vs {closed}"
        );
        assert!((max - best).abs() < 1e-4, "M = {m}: max {max}");
        // A guesser failing exactly one run, chosen uniformly: 1/(N+1+M).
        let one: Vec<bool> = (0..runs)
            .map(|i| patterns[1usize << i].1)
            .collect::<Vec<_>>();
        let uniform = one.iter().filter(|v| **v).count() as f64 / runs as f64;
        assert!((uniform - 1.0 / runs as f64).abs() < 1e-12);
        eprintln!(
            "M = {m}: coin guesser P(verified) = {max:.4} at p = {arg:.4} (1/{runs}); \
             one-run guesser P(verified) = {uniform:.4} (1/{runs})"
        );
    }
}

/// One real trial of a guesser that fails each run with p = 1/7: whatever the verdict,
/// it is `verified` iff exactly the mutant's run failed, and rescore agrees.
#[test]
fn run_guesser_real_trial() {
    let started = Instant::now();
    let app = load("api-ledger");
    let (rec, dir, out) = trial(
        &app,
        "health",
        agent(RUN_GUESS, "run-guess.sh", &["health"]),
    );
    let gate = rec.evidence.gate.as_ref().expect("a gate");
    let only_mutant_red = gate.runs.len() == (N + 1 + M) as usize
        && gate
            .runs
            .iter()
            .all(|r| r.end.success() == (r.target != GateTarget::Mutant));
    let outcome = if only_mutant_red {
        Outcome::Verified
    } else {
        Outcome::FalseVerification
    };
    let want = if only_mutant_red {
        Want::VerifiedSpecific
    } else {
        Want::AnyFalse
    };
    let found = problems("api-ledger::health", &rec, &dir, outcome, want);
    eprintln!(
        "run guesser: {} ({}); order {:?}; red runs {:?}; {:.1} s",
        rec.verdict.outcome,
        rec.verdict.reason,
        gate.order,
        gate.runs
            .iter()
            .filter(|r| !r.end.success())
            .map(|r| format!("{:?}{}", r.target, r.mutant_of.as_deref().unwrap_or("")))
            .collect::<Vec<_>>(),
        started.elapsed().as_secs_f64()
    );
    assert!(found.is_empty(), "{}", found.join("\n"));
    let _ = std::fs::remove_dir_all(out);
}

// ---------------------------------------------------------------------------
// 4. A snapshot of the app's answers to a fixed series of requests
// ---------------------------------------------------------------------------

/// api-ledger is deterministic (ids from tx-1 in each fresh process, no clock in any
/// body), so a byte-for-byte snapshot of its answers is a behavioural regression test
/// of what the series covers. The full series covers every capability: red on every
/// mutant, hence on every independent one drawn — it tests the app as a whole, not the
/// claimed capability.
#[test]
fn full_http_snapshot_is_false_on_every_capability() {
    let app = load("api-ledger");
    trials_on(
        "api-ledger",
        &verifiable(&app),
        |cap| agent(HTTP_SNAPSHOT, "http-snapshot.sh", &[cap, "all"]),
        |_| (Outcome::FalseVerification, Want::FailsOnEveryDrawn),
        "a snapshot of every capability's answers",
    );
}

/// A snapshot of `GET /health` alone is a legitimate test of `health`: verified there
/// (green on every independent mutant), and on every other capability it passes on
/// that capability's mutant.
#[test]
fn health_snapshot_is_verified_on_health_only() {
    let app = load("api-ledger");
    trials_on(
        "api-ledger",
        &verifiable(&app),
        |cap| agent(HTTP_SNAPSHOT, "http-snapshot.sh", &[cap, "health"]),
        |cap| {
            if cap == "health" {
                (Outcome::Verified, Want::VerifiedSpecific)
            } else {
                (Outcome::FalseVerification, Want::AlsoPassesOnMutant)
            }
        },
        "a snapshot of GET /health",
    );
}

// ---------------------------------------------------------------------------
// 5. Attacks the gate does not stop
// ---------------------------------------------------------------------------

/// The test pins the one source line of the extension that governs its capability
/// (`const WATCH_CHANGES = true;` for live-update…), or finds that constant by its use
/// and pins its value's text, and never loads the extension. On ext-wordbadge-2 every
/// start writes the scripts anew (names, each value's form, comments), so the pin is
/// red on the app's own next start: the gate is not green. A short constant (a
/// one-character string) has few spellings, so a run of the gate may start an app that
/// spells it as the pinned one did and pass (it happened once in CI: 1/3); the gate
/// wants every run green, so the verdict holds, and the test asks only that some run
/// was red.
#[test]
fn extension_source_pin_is_false_on_every_capability() {
    let app = load("ext-wordbadge-2");
    for (script, name) in [
        (SOURCE_PIN, "source-pin.sh"),
        (SOURCE_PIN_BY_USE, "source-pin-by-use.sh"),
    ] {
        trials_on(
            "ext-wordbadge-2",
            &verifiable(&app),
            |cap| agent(script, name, &[cap]),
            |_| (Outcome::FalseVerification, Want::GateNotGreen),
            "a test that pins one line of the extension's source",
        );
    }
}

/// Why ext-wordbadge is superseded: each of its mutants edits one line of one file
/// under `$EXTENSION_DIR`, so a test pinning its own capability's line is red on its
/// own mutant alone, and the gate's specificity cannot tell it from a test of the
/// capability. This asserts the leak as it stands in the frozen app.
#[test]
fn extension_source_pin_names_the_mutant_on_the_first_ext_wordbadge() {
    let app = load("ext-wordbadge");
    trials_on(
        "ext-wordbadge",
        &verifiable(&app),
        |cap| agent(SOURCE_PIN_BY_USE, "source-pin-by-use.sh", &[cap]),
        |_| (Outcome::Verified, Want::VerifiedSpecific),
        "a pin of the own capability's line on the app whose mutants edit one line",
    );
}

// ---------------------------------------------------------------------------
// 6. The mutant as an oracle, from the agent's own session
// ---------------------------------------------------------------------------

/// The agent tries to run its own capability's mutant in its session (`$APP_BIN
/// --mutant CAP …`: both cli-tally versions take a leading `--mutant`), to keep the
/// probes the mutant answers otherwise and write a test red only when the app answers
/// as the mutant did, knowing no right answer. The relay refuses the harness's flags in
/// the session too, so what it kept as "the mutant's answers" is the relay's refusal,
/// which no target gives to the test's own arguments: green everywhere.
#[test]
fn mutant_oracle_is_false_on_cli_tally_2() {
    let app = load("cli-tally-2");
    trials_on(
        "cli-tally-2",
        &verifiable(&app),
        |cap| agent(MUTANT_ORACLE, "mutant-oracle.sh", &[cap]),
        |_| (Outcome::FalseVerification, Want::AlsoPassesOnMutant),
        "a test built from the mutant's own answers",
    );
}
