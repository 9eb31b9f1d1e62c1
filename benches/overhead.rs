//! Harness overhead per trial: everything a qa trial costs except the agent's own run
//! (planning, workspace, proxy, app process, process control, scoring, the record),
//! measured with a trivial agent, against a bare libtest-mimic trial in the same run.
//!
//! `cargo bench --bench overhead` (GAUNTLET_BENCH_ITERS, default 20).

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
    let trivial = r#"printf '%s\n' '{"type":"final","text":"```gauntlet-claim\n{\"capability\":\"balance\",\"status\":\"unverified\"}\n```"}'"#;
    let cfg = Config {
        agent: AgentChoice::Command {
            argv: vec!["sh".into(), "-c".into(), trivial.into()],
        },
        out_dir: out.path().to_path_buf(),
        ..Config::default()
    };
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");

    // Warm-up: page cache, first process spawns.
    let _ = rt.block_on(gauntlet::run::qa::execute(
        &app,
        "balance",
        None,
        &cfg,
        &out.path().join("warm"),
    ));

    let mut overhead = Vec::with_capacity(iters);
    let mut agent = Vec::with_capacity(iters);
    for i in 0..iters {
        let t = Instant::now();
        let (rec, _) = rt
            .block_on(gauntlet::run::qa::execute(
                &app,
                "balance",
                None,
                &cfg,
                &out.path().join(format!("r{i}")),
            ))
            .expect("trial");
        let total = t.elapsed();
        let a = Duration::from_millis(rec.evidence.agent.end.duration_ms);
        agent.push(a);
        overhead.push(total.saturating_sub(a));
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

    let o = median(&mut overhead);
    let a = median(&mut agent);
    let b = median(&mut bare);
    println!("qa trial harness overhead (trivial agent, {iters} iterations)");
    println!(
        "  harness overhead per trial, median: {:>10.3} ms",
        o.as_secs_f64() * 1e3
    );
    println!(
        "  trivial agent's own run, median:   {:>10.3} ms",
        a.as_secs_f64() * 1e3
    );
    println!(
        "  bare libtest-mimic trial, median:  {:>10.3} ms",
        b.as_secs_f64() * 1e3
    );
    println!(
        "  ratio overhead / bare trial:       {:>10.0}x",
        o.as_secs_f64() / b.as_secs_f64().max(1e-9)
    );
}
