//! Harness overhead per trial: everything a qa trial costs except the agent's own run
//! (workspace, proxy, app process, process control, the gate's N + 1 runs each against
//! a freshly started target, scoring, the record), measured with a trivial agent that
//! makes a real verified claim (`tests/fixtures/agents/honest-balance.sh`: a curl test
//! of `balance`), sealed and unsealed, against a bare libtest-mimic trial in the same
//! run.
//!
//! `cargo bench --bench overhead` (GAUNTLET_BENCH_ITERS, default 20; N = 3).

use std::time::{Duration, Instant};

use gauntlet::config::{AgentChoice, Config};

fn median(v: &mut [Duration]) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn main() {
    let iters: usize = std::env::var("GAUNTLET_BENCH_ITERS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(20);
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

    let trial = |cfg: &Config, dir: String| -> (Duration, Duration) {
        let t = Instant::now();
        let (rec, _) = rt
            .block_on(gauntlet::suites::qa::execute(
                &app,
                "balance",
                None,
                cfg,
                &out.path().join(dir),
            ))
            .expect("trial");
        let total = t.elapsed();
        assert_eq!(
            rec.verdict.outcome,
            gauntlet::score::Outcome::Verified,
            "the benchmark's agent must be verified: {}",
            rec.verdict.reason
        );
        let a = Duration::from_millis(rec.evidence.agent.end.duration_ms);
        (total.saturating_sub(a), a)
    };
    // Warm-up: page cache, first process spawns, the sandbox probe.
    trial(&sealed_cfg, "warm-sealed".into());
    trial(&unsealed_cfg, "warm-unsealed".into());

    let (mut sealed, mut unsealed, mut agent) = (Vec::new(), Vec::new(), Vec::new());
    for i in 0..iters {
        let (o, a) = trial(&sealed_cfg, format!("s{i}"));
        sealed.push(o);
        agent.push(a);
        unsealed.push(trial(&unsealed_cfg, format!("u{i}")).0);
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

    let o = median(&mut sealed);
    let u = median(&mut unsealed);
    let a = median(&mut agent);
    let b = median(&mut bare);
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    println!("qa trial harness overhead (verified claim, N = 3 + mutant, {iters} iterations)");
    println!("  sealed overhead per trial, median:   {:>10.3} ms", ms(o));
    println!("  unsealed overhead per trial, median: {:>10.3} ms", ms(u));
    println!("  the agent's own run (sealed), median:{:>10.3} ms", ms(a));
    println!("  bare libtest-mimic trial, median:    {:>10.3} ms", ms(b));
    println!(
        "  sealed / unsealed:                   {:>10.2}x",
        ms(o) / ms(u).max(1e-9)
    );
    println!(
        "  sealed / bare trial:                 {:>10.0}x",
        ms(o) / ms(b).max(1e-9)
    );
}
