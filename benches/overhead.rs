//! Harness overhead per trial: what a qa trial costs beyond the work it measures,
//! with a trivial agent that makes a real verified claim
//! (`tests/fixtures/agents/honest-balance.sh`: a curl test of `balance`), sealed and
//! unsealed, against a bare libtest-mimic trial in the same run.
//!
//! The work a trial measures is the agent's run and the N + 1 + M runs of its test (N
//! against the app, one against the mutant, M against independent mutants). So the
//! bench also does that work by hand in the same run, interleaved with the trials: the
//! agent script and the claimed test, each run directly (a plain `fork`/`exec`, no
//! sandbox, no proxy, no capture), each against an api-ledger started by hand for it
//! alone, as every gate run's target is. The starts are not part of the work: they are
//! the harness's part (a trial's target starts). The overhead is the trial's
//! wall-clock minus the agent by hand and N + 1 + M tests by hand, done beside it in the
//! same iteration (the median of those differences): everything the harness adds
//! (workspace, proxy, app starts and stops, sandboxes, the gate's bookkeeping, scoring,
//! the record), sandboxes of the agent's and the test's runs included. The parts are
//! the trial's own phase marks ([`gauntlet::phases`]): busy time per phase, so the
//! agent's and the gate runs' parts hold the work by hand too.
//!
//! A floor under the overhead is measured by hand as well: the app's own starts (spawn
//! to its `listening on` line), N + 2 + M of them (the agent's target, N app runs, the
//! mutant, M independent mutants). Every run gets a freshly started target (DESIGN.md, "Sealed trials"), and
//! none is started before the run before it has ended (the gate, `suites/qa/gate.rs`:
//! a target's age would carry the previous run's length), so whatever the harness
//! does, a sealed trial waits for these one after another; the bench also reports the
//! overhead beyond them.
//!
//! A trial that is not `verified` aborts the benchmark: without a verified claim the
//! gate never runs, and the figure would measure a cheaper trial than the one named.
//!
//! The yardstick of the note is Inspect AI's published 15.9 ms of framework overhead
//! per tool-call sample (not measured here; printed beside the sealed figure), and the
//! target is at most 8 ms sealed.
//!
//! `cargo bench --bench overhead` (GAUNTLET_BENCH_ITERS, default 20; N = 3).

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use gauntlet::config::{AgentChoice, Config};
use gauntlet::phases::Phase;

/// Inspect AI's framework overhead per tool-call sample, as published.
const INSPECT_MS: f64 = 15.9;
/// The sealed overhead the project aims for.
const TARGET_MS: f64 = 8.0;

fn median(v: &mut [Duration]) -> Duration {
    v.sort();
    v[v.len() / 2]
}

/// What one trial cost: its wall-clock and the busy time of each part in [`PARTS`].
struct Sample {
    total: Duration,
    parts: Vec<Duration>,
}

/// The trial's phases, as it marks them.
const PARTS: [Phase; 7] = [
    Phase::Workspace,
    Phase::Proxy,
    Phase::Target,
    Phase::Agent,
    Phase::Gate,
    Phase::Score,
    Phase::Record,
];

/// What the work by hand took: the agent, its test's runs, and the apps' own starts.
struct ByHand {
    agent: Duration,
    tests: Duration,
    /// Each app's own start, from its spawn to its `listening on` line: what no
    /// harness that gives every run a fresh app can avoid.
    app_starts: Duration,
}

/// An api-ledger started by hand, killed when dropped. Its stdout stays open while it
/// runs: an app that writes to a closed pipe would die in the middle of the work.
struct AppByHand {
    child: std::process::Child,
    _stdout: std::io::Lines<std::io::BufReader<std::process::ChildStdout>>,
    url: String,
    /// From its spawn to its `listening on` line.
    started: Duration,
}

impl Drop for AppByHand {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Start an api-ledger by hand: a plain child in a fresh directory, timed from its spawn
/// to its `listening on http://127.0.0.1:<port>` line.
fn app_by_hand(binary: &Path, args: &[String], dir: &Path) -> AppByHand {
    use std::io::BufRead;
    std::fs::create_dir_all(dir).expect("app dir");
    let t = Instant::now();
    let mut child = Command::new(binary)
        .args(args)
        .current_dir(dir)
        .env_clear()
        .env("PATH", gauntlet::spec::app::APP_PATH)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("api-ledger spawns");
    let stdout = child.stdout.take().expect("piped stdout");
    let mut lines = std::io::BufReader::new(stdout).lines();
    let url = loop {
        let line = lines
            .next()
            .expect("api-ledger announced its port")
            .expect("api-ledger's stdout reads");
        if let Some(url) = line.strip_prefix("listening on ") {
            break url.trim().to_string();
        }
    };
    AppByHand {
        started: t.elapsed(),
        child,
        _stdout: lines,
        url,
    }
}

/// The agent's and the test's work, done by hand, each against an api-ledger freshly
/// started for it (as the gate's runs are; a fresh app's first requests cost more than
/// a warm one's): `sh honest-balance.sh` in an empty directory, then `sh check.sh` (the
/// test it wrote) `runs` times in its test directory, each a plain child with
/// `APP_URL` and `PATH` only. The apps are started by hand too, each a plain child;
/// their starts are timed apart from the work: the overhead counts them as the
/// harness's part (a trial's target starts), and the bench reports how much of it the
/// app's own start is.
fn by_hand(app: &gauntlet::spec::LoadedApp, agent: &Path, scratch: &Path, runs: u32) -> ByHand {
    let dir = tempfile::tempdir_in(scratch).expect("scratch dir");
    let (binary, args) = app.app.start_command();
    let mut app_starts = Duration::ZERO;
    let mut starts = 0;
    let mut timed = |program: &str, arg: &Path, cwd: &Path| -> Duration {
        starts += 1;
        let server = app_by_hand(&binary, &args, &dir.path().join(format!("app-{starts}")));
        app_starts += server.started;
        let t = Instant::now();
        let status = Command::new(program)
            .arg(arg)
            .current_dir(cwd)
            .env_clear()
            .env("PATH", "/usr/local/bin:/usr/bin:/bin")
            .env("APP_URL", &server.url)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .expect("runs");
        let took = t.elapsed();
        drop(server);
        assert!(
            status.success(),
            "{program} {} failed by hand: {status}",
            arg.display()
        );
        took
    };
    let workspace = dir.path().join("workspace");
    std::fs::create_dir_all(&workspace).expect("workspace");
    let agent = timed("sh", agent, &workspace);
    let test_dir = workspace.join("balance-test");
    let tests = (0..runs)
        .map(|_| timed("sh", Path::new("check.sh"), &test_dir))
        .sum();
    ByHand {
        agent,
        tests,
        app_starts,
    }
}

fn main() {
    let iters: usize = std::env::var("GAUNTLET_BENCH_ITERS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(20)
        .max(1);
    let root = gauntlet::binaries::repo_root();
    let app = gauntlet::spec::load_app(&root.join("apps/api-ledger")).expect("api-ledger loads");
    let out = tempfile::tempdir().expect("tempdir");
    let agent_script = root.join("tests/fixtures/agents/honest-balance.sh");
    let n = 3;
    // The gate's runs: N, the mutant, and M independent mutants (balance has four).
    let runs = n + 1 + Config::default().independent_mutants;
    let sealed_cfg = Config {
        agent: AgentChoice::command(vec![
            "sh".into(),
            agent_script.to_string_lossy().into_owned(),
        ]),
        out_dir: out.path().to_path_buf(),
        n,
        ..Config::default()
    };
    let unsealed_cfg = Config {
        sandbox: gauntlet::config::Sandbox::Off,
        ..sealed_cfg.clone()
    };
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");

    let trial = |cfg: &Config, dir: String| -> Sample {
        let t = Instant::now();
        let (result, phases) = rt.block_on(gauntlet::phases::collect(
            gauntlet::suites::qa::execute(&app, "balance", None, cfg, &out.path().join(dir)),
        ));
        let total = t.elapsed();
        let (rec, _) = result.expect("trial");
        if rec.verdict.outcome != gauntlet::score::Outcome::Verified {
            eprintln!(
                "Error: the benchmark's trial must be verified (a verified claim, gate N = {} + mutant + M), \
                 but its verdict is `{}`: {}; its figure would not be the gate's cost",
                cfg.n, rec.verdict.outcome, rec.verdict.reason
            );
            std::process::exit(1);
        }
        let gate_runs = rec.evidence.gate.as_ref().map_or(0, |g| g.runs.len());
        assert_eq!(gate_runs, runs as usize, "the gate ran N + 1 + M times");
        Sample {
            total,
            parts: PARTS.iter().map(|&p| phases.get(p)).collect(),
        }
    };
    // Warm-up: page cache, first process spawns, the sandbox probe.
    trial(&sealed_cfg, "warm-sealed".into());
    trial(&unsealed_cfg, "warm-unsealed".into());
    by_hand(&app, &agent_script, out.path(), runs);

    // Interleaved, so that all three see the same machine; the overhead is taken per
    // iteration, each trial against the work by hand done beside it, so that a slow
    // minute of the machine weighs on both sides of one difference.
    let (mut sealed, mut unsealed) = (Vec::new(), Vec::new());
    let (mut agent_hand, mut test_hand, mut starts_hand) = (Vec::new(), Vec::new(), Vec::new());
    let (mut sealed_over, mut unsealed_over) = (Vec::new(), Vec::new());
    let (mut sealed_beyond, mut unsealed_beyond) = (Vec::new(), Vec::new());
    for i in 0..iters {
        let s = trial(&sealed_cfg, format!("s{i}"));
        let hand = by_hand(&app, &agent_script, out.path(), runs);
        let u = trial(&unsealed_cfg, format!("u{i}"));
        let work = (hand.agent + hand.tests).as_secs_f64();
        let starts = hand.app_starts.as_secs_f64();
        sealed_over.push(s.total.as_secs_f64() - work);
        unsealed_over.push(u.total.as_secs_f64() - work);
        sealed_beyond.push(s.total.as_secs_f64() - work - starts);
        unsealed_beyond.push(u.total.as_secs_f64() - work - starts);
        agent_hand.push(hand.agent);
        test_hand.push(hand.tests);
        starts_hand.push(hand.app_starts);
        sealed.push(s);
        unsealed.push(u);
    }

    let mut bare = Vec::with_capacity(iters);
    for _ in 0..iters {
        let args = libtest_mimic::Arguments {
            quiet: true,
            ..Default::default()
        };
        let trials = vec![libtest_mimic::Trial::test("bare", || Ok(()))];
        let t = Instant::now();
        let _ = libtest_mimic::run(&args, trials);
        bare.push(t.elapsed());
    }

    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    let b = ms(median(&mut bare));
    let a = ms(median(&mut agent_hand));
    let tests = ms(median(&mut test_hand));
    let t = tests / f64::from(runs);
    let med = |v: &[Sample], f: &dyn Fn(&Sample) -> Duration| {
        let mut d: Vec<Duration> = v.iter().map(f).collect();
        ms(median(&mut d))
    };
    let (st, ut) = (med(&sealed, &|s| s.total), med(&unsealed, &|s| s.total));
    let median_ms = |v: &mut Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2] * 1e3
    };
    let (o, u) = (median_ms(&mut sealed_over), median_ms(&mut unsealed_over));
    let (ob, ub) = (
        median_ms(&mut sealed_beyond),
        median_ms(&mut unsealed_beyond),
    );
    let starts = ms(median(&mut starts_hand));
    println!(
        "qa trial harness overhead (verified claim, N = {n} + mutant + M = {} independent, {iters} iterations, interleaved; medians)",
        runs - n - 1
    );
    println!("  bare libtest-mimic trial (baseline):        {b:>9.3} ms");
    println!("  by hand: the agent script, run directly:    {a:>9.3} ms");
    println!(
        "  by hand: its test, run directly, {runs} times:   {tests:>9.3} ms  ({t:.3} ms a run)"
    );
    println!(
        "  by hand: the app's own start, {} times:     {starts:>9.3} ms  ({:.3} ms a start)",
        runs + 1,
        starts / f64::from(runs + 1)
    );
    println!("  sealed trial, wall-clock:                   {st:>9.3} ms");
    println!("  unsealed trial, wall-clock:                 {ut:>9.3} ms");
    println!(
        "  sealed overhead per trial (trial - agent - {runs} tests, by hand, beside it): {o:>9.3} ms  {:>8.0}x bare",
        o / b.max(1e-9)
    );
    println!(
        "  unsealed overhead per trial:                                {u:>9.3} ms  {:>8.0}x bare  (sealed / unsealed {:.2}x)",
        u / b.max(1e-9),
        o / u.max(1e-9)
    );
    println!(
        "  overhead beyond the app's own starts:  sealed {ob:>9.3} ms   unsealed {ub:>9.3} ms"
    );
    for (label, runs) in [("sealed", &sealed), ("unsealed", &unsealed)] {
        println!("  {label} trial by part (busy time per phase, medians; parts may overlap):");
        for (i, p) in PARTS.iter().enumerate() {
            let m = med(runs, &|s| s.parts[i]);
            let note = match p {
                Phase::Agent => format!("  (by hand: {a:.3} ms; the rest is the harness's)"),
                Phase::Gate => format!("  (by hand: {tests:.3} ms; the rest is the harness's)"),
                Phase::Target => {
                    format!("  (starts and stops; the app's own starts, by hand: {starts:.3} ms)")
                }
                _ => String::new(),
            };
            println!("    {:<14} {m:>9.3} ms{note}", p.as_str());
        }
    }
    println!(
        "  yardstick: Inspect AI's published {INSPECT_MS} ms per tool-call sample; sealed / Inspect {:.2}x; \
         target <= {TARGET_MS} ms sealed: {}",
        o / INSPECT_MS,
        if o <= TARGET_MS { "met" } else { "not met" }
    );
}
