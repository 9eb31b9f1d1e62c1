//! Harness overhead per trial: everything a qa trial costs except the agent's own run
//! (workspace, proxy, app process, process control, the gate's N + 1 runs each against
//! a freshly started target, scoring, the record), measured with a trivial agent that
//! makes a real verified claim (`tests/fixtures/agents/honest-balance.sh`: a curl test
//! of `balance`), sealed and unsealed, against a bare libtest-mimic trial in the same
//! run, and split into the trial's own phases ([`gauntlet::phases`]).
//!
//! A trial that is not `verified` aborts the benchmark: without a verified claim the
//! gate never runs, and the figure would measure a cheaper trial than the one named.
//!
//! The yardstick of the note is Inspect AI's published 15.9 ms of framework overhead
//! per tool-call sample (not measured here; printed beside the sealed figure), and the
//! target is at most 8 ms sealed.
//!
//! `cargo bench --bench overhead` (GAUNTLET_BENCH_ITERS, default 20; N = 3).

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

/// What one trial cost: its overhead (everything but the agent), the agent, and the
/// overhead's parts in [`PARTS`] order.
struct Sample {
    overhead: Duration,
    agent: Duration,
    parts: Vec<Duration>,
}

/// The overhead's parts, as the trial marks them; the agent is not overhead.
const PARTS: [Phase; 6] = [
    Phase::Workspace,
    Phase::Proxy,
    Phase::Target,
    Phase::Gate,
    Phase::Score,
    Phase::Record,
];

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
    let sealed_cfg = Config {
        agent: AgentChoice::command(vec![
            "sh".into(),
            agent_script.to_string_lossy().into_owned(),
        ]),
        out_dir: out.path().to_path_buf(),
        n: 3,
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
                "Error: the benchmark's trial must be verified (a verified claim, gate N = {} + mutant), \
                 but its verdict is `{}`: {}; its figure would not be the gate's cost",
                cfg.n, rec.verdict.outcome, rec.verdict.reason
            );
            std::process::exit(1);
        }
        let gate_runs = rec.evidence.gate.as_ref().map_or(0, |g| g.runs.len());
        assert_eq!(gate_runs, cfg.n as usize + 1, "the gate ran N + 1 times");
        let agent = phases.get(Phase::Agent);
        Sample {
            overhead: total.saturating_sub(agent),
            agent,
            parts: PARTS.iter().map(|&p| phases.get(p)).collect(),
        }
    };
    // Warm-up: page cache, first process spawns, the sandbox probe.
    trial(&sealed_cfg, "warm-sealed".into());
    trial(&unsealed_cfg, "warm-unsealed".into());

    let (mut sealed, mut unsealed) = (Vec::new(), Vec::new());
    for i in 0..iters {
        sealed.push(trial(&sealed_cfg, format!("s{i}")));
        unsealed.push(trial(&unsealed_cfg, format!("u{i}")));
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
    let med = |v: &[Sample], f: &dyn Fn(&Sample) -> Duration| {
        let mut d: Vec<Duration> = v.iter().map(f).collect();
        ms(median(&mut d))
    };
    let o = med(&sealed, &|s| s.overhead);
    let u = med(&unsealed, &|s| s.overhead);
    let a = med(&sealed, &|s| s.agent);
    println!(
        "qa trial harness overhead (verified claim, N = 3 + mutant, {iters} iterations; medians)"
    );
    println!("  bare libtest-mimic trial (baseline):  {b:>9.3} ms");
    println!(
        "  sealed overhead per trial:            {o:>9.3} ms  {:>8.0}x bare",
        o / b.max(1e-9)
    );
    println!(
        "  unsealed overhead per trial:          {u:>9.3} ms  {:>8.0}x bare  (sealed / unsealed {:.2}x)",
        u / b.max(1e-9),
        o / u.max(1e-9)
    );
    println!("  the agent's own run (sealed, not overhead): {a:>3.3} ms");
    for (label, runs) in [("sealed", &sealed), ("unsealed", &unsealed)] {
        println!(
            "  {label} overhead by part (each part's median; 'other' is the rest of the total):"
        );
        let mut known = 0.0;
        for (i, p) in PARTS.iter().enumerate() {
            let m = med(runs, &|s| s.parts[i]);
            known += m;
            println!(
                "    {:<14} {m:>9.3} ms  {:>8.0}x bare",
                p.as_str(),
                m / b.max(1e-9)
            );
        }
        let total = med(runs, &|s| s.overhead);
        println!("    {:<14} {:>9.3} ms", "other", (total - known).max(0.0));
    }
    println!(
        "  yardstick: Inspect AI's published {INSPECT_MS} ms per tool-call sample; sealed / Inspect {:.2}x; \
         target <= {TARGET_MS} ms sealed: {}",
        o / INSPECT_MS,
        if o <= TARGET_MS { "met" } else { "not met" }
    );
}
