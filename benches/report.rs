//! Report throughput and listing cost.
//!
//! 1. Rescore and report over 10,000 synthetic records, in MB/s of input read, against
//!    plain `serde_json` parsing of the same files (read + parse into
//!    `serde_json::Value`) measured in the same run: `gauntlet rescore`'s path (every
//!    record checked, the run's digest) and the report's (every verdict re-derived from
//!    the raw agent output, then report.md, report.html and summary.json rendered).
//! 2. `--list` of a 10,000-trial qa plan (100 capabilities × K = 100, planned and
//!    handed to libtest-mimic as the qa harness does) against a libtest-mimic list of
//!    10,000 empty trials.
//!
//! Each figure is printed beside its baseline and as a share of its throughput, by
//! wall-clock and by CPU time (on a shared machine the first also measures the
//! neighbours). The list figures
//! are medians of GAUNTLET_BENCH_LIST_ITERS (default 15) alternating pairs after one
//! warm-up pair (a list takes milliseconds, so three samples on a shared machine say
//! more about the machine than about the list).
//!
//! `cargo bench --bench report` (GAUNTLET_BENCH_RECORDS, default 10000;
//! GAUNTLET_BENCH_ITERS, default 3; GAUNTLET_BENCH_RUN_DIR keeps the synthetic run).

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use gauntlet::report::synthetic::SyntheticRun;

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

/// This process's CPU time so far (user + system): on a shared machine a wall-clock
/// ratio also measures the neighbours, the CPU ratio only the work.
fn cpu_time() -> Duration {
    // SAFETY: getrusage writes into the struct it is given.
    let mut u: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut u) };
    let tv = |t: libc::timeval| Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000);
    tv(u.ru_utime) + tv(u.ru_stime)
}

fn env_num(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(default)
}

/// The files a report reads: every record and the agent output it rescores.
fn input_files(run: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for rec in gauntlet::record::find_records(run).expect("records") {
        let dir = rec.parent().expect("trial dir").to_path_buf();
        out.push(rec);
        out.push(dir.join("agent.stdout"));
    }
    out
}

fn serde_baseline(files: &[PathBuf]) -> usize {
    let mut values = 0;
    for f in files {
        let bytes = std::fs::read(f).expect("read");
        for v in serde_json::Deserializer::from_slice(&bytes).into_iter::<serde_json::Value>() {
            std::hint::black_box(v.expect("json"));
            values += 1;
        }
    }
    values
}

/// Run `f` with stdout sent to /dev/null (libtest-mimic prints the list).
fn quiet<T>(f: impl FnOnce() -> T) -> T {
    use std::io::Write;
    let _ = std::io::stdout().flush();
    // SAFETY: plain descriptor juggling on this process's own stdout.
    let saved = unsafe { libc::dup(1) };
    let null = std::fs::OpenOptions::new()
        .write(true)
        .open("/dev/null")
        .expect("/dev/null");
    unsafe {
        libc::dup2(std::os::unix::io::AsRawFd::as_raw_fd(&null), 1);
    }
    let out = f();
    let _ = std::io::stdout().flush();
    unsafe {
        libc::dup2(saved, 1);
        libc::close(saved);
    }
    out
}

fn list_args() -> libtest_mimic::Arguments {
    libtest_mimic::Arguments {
        list: true,
        format: Some(libtest_mimic::FormatSetting::Terse),
        ..Default::default()
    }
}

fn main() {
    let n = env_num("GAUNTLET_BENCH_RECORDS", 10_000);
    let iters = env_num("GAUNTLET_BENCH_ITERS", 3).max(1);
    let tmp = tempfile::tempdir().expect("tempdir");
    // GAUNTLET_BENCH_RUN_DIR keeps the synthetic run there (it must not exist yet), to
    // profile `gauntlet rescore` and `gauntlet report` on the bench's own records.
    let run = std::env::var_os("GAUNTLET_BENCH_RUN_DIR")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| tmp.path().join("run"));
    let t = Instant::now();
    let spec = SyntheticRun::large(n);
    spec.write(&run).expect("synthetic run");
    // The 70,000 files just written are still being written back: let that finish
    // before anything is timed, or the first contender pays for it.
    // SAFETY: sync takes no arguments and cannot fail.
    unsafe { libc::sync() };
    let files = input_files(&run);
    let bytes: u64 = files
        .iter()
        .map(|f| std::fs::metadata(f).map(|m| m.len()).unwrap_or(0))
        .sum();
    println!(
        "report bench: {} records, {:.1} MB of records + agent output (written in {:.1} s)",
        files.len() / 2,
        bytes as f64 / 1e6,
        t.elapsed().as_secs_f64()
    );

    // Warm the page cache for both contenders.
    serde_baseline(&files);
    let opts = gauntlet::report::Options {
        prices: gauntlet::report::PriceTable::load_default().unwrap_or_default(),
        thresholds: gauntlet::report::Thresholds::parse_all(&["*=5/10"]).expect("rule"),
    };
    let mut base = Vec::new();
    let mut rep = Vec::new();
    let mut load = Vec::new();
    let mut rescore = Vec::new();
    let (mut base_cpu, mut rep_cpu, mut rescore_cpu) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..iters {
        let (t, c) = (Instant::now(), cpu_time());
        std::hint::black_box(serde_baseline(&files));
        base.push(t.elapsed());
        base_cpu.push(cpu_time() - c);
        let (t, c) = (Instant::now(), cpu_time());
        let loaded = gauntlet::report::load_run(&run).expect("load");
        load.push(t.elapsed());
        assert!(loaded.problems.is_empty(), "{:?}", loaded.problems.first());
        let pages = gauntlet::report::render(&loaded, &opts);
        std::hint::black_box((&pages.markdown, &pages.html, &pages.json));
        rep.push(t.elapsed());
        rep_cpu.push(cpu_time() - c);
        // `gauntlet rescore` of the same run: every record checked, the run's digest.
        let (t, c) = (Instant::now(), cpu_time());
        let rescored = gauntlet::record::rescore::rescore_path(&run).expect("rescore");
        rescore.push(t.elapsed());
        rescore_cpu.push(cpu_time() - c);
        assert!(rescored.ok(), "{} records disagree", rescored.disagreeing());
        assert_eq!(rescored.rows.len(), files.len() / 2);
    }
    let (b, r, l, s) = (median(base), median(rep), median(load), median(rescore));
    let (bc, rc, sc) = (median(base_cpu), median(rep_cpu), median(rescore_cpu));
    let mbs = |d: Duration| bytes as f64 / 1e6 / d.as_secs_f64();
    let pct =
        |floor: Duration, d: Duration| 100.0 * floor.as_secs_f64() / d.as_secs_f64().max(1e-9);
    println!(
        "  plain serde_json (read + parse), median:   {:>7.1} ms  {:>6.1} MB/s  (CPU {:.1} ms)",
        b.as_secs_f64() * 1e3,
        mbs(b),
        bc.as_secs_f64() * 1e3
    );
    println!(
        "  rescore (gauntlet rescore), median:        {:>7.1} ms  {:>6.1} MB/s  (CPU {:.1} ms)",
        s.as_secs_f64() * 1e3,
        mbs(s),
        sc.as_secs_f64() * 1e3
    );
    println!(
        "  rescore + report (md, html, json), median: {:>7.1} ms  {:>6.1} MB/s  (CPU {:.1} ms)",
        r.as_secs_f64() * 1e3,
        mbs(r),
        rc.as_secs_f64() * 1e3
    );
    println!(
        "    of which load + rescore, median:         {:>7.1} ms  (render {:.1} ms)",
        l.as_secs_f64() * 1e3,
        (r.saturating_sub(l)).as_secs_f64() * 1e3
    );
    println!(
        "  throughput as a share of serde_json's, wall-clock: rescore {:.0}%, report {:.0}%",
        pct(b, s),
        pct(b, r)
    );
    println!(
        "  throughput as a share of serde_json's, CPU time (user + system): rescore {:.0}%, report {:.0}%",
        pct(bc, sc),
        pct(bc, rc)
    );

    // --list of a 10,000-trial plan.
    let root = gauntlet::binaries::repo_root();
    let trials = n;
    let repeats = 100u32;
    let caps = trials.div_ceil(repeats as usize);
    let list_iters = env_num("GAUNTLET_BENCH_LIST_ITERS", 15).max(1);
    let mut plan_time = Vec::new();
    let mut bare_time = Vec::new();
    let mut listed = 0;
    let plan_list = || {
        let t = Instant::now();
        let count = quiet(|| {
            let mut app = gauntlet::spec::load_app(&root.join("apps/api-ledger")).expect("app");
            let template = app.corpus.capabilities[0].clone();
            app.corpus.capabilities = (0..caps)
                .map(|i| gauntlet::spec::Capability {
                    id: format!("cap-{i:04}"),
                    ..template.clone()
                })
                .collect();
            // byok: every trial runs (a scripted plan ignores capabilities without a
            // flow, and these synthetic ones have none).
            let cfg = gauntlet::config::Config {
                repeats,
                mode: gauntlet::config::Mode::Byok,
                ..Default::default()
            };
            let plan = gauntlet::suites::qa::plan::plan(std::slice::from_ref(&app), &cfg, None);
            let count = plan.len();
            // As the harness lists them (`harness::suite_main` under `--list`).
            let trials = gauntlet::harness::listed(plan);
            let _ = libtest_mimic::run(&list_args(), trials);
            count
        });
        (t.elapsed(), count)
    };
    let bare_list = |count: usize| {
        let t = Instant::now();
        quiet(|| {
            let trials: Vec<libtest_mimic::Trial> = (0..count)
                .map(|i| libtest_mimic::Trial::test(format!("bare::t{i:05}"), || Ok(())))
                .collect();
            let _ = libtest_mimic::run(&list_args(), trials);
        });
        t.elapsed()
    };
    // Warm-up pair: the files the plan reads, the allocator's first pages.
    let (_, count) = plan_list();
    bare_list(count);
    for i in 0..list_iters {
        // Alternate which goes first, so neither always follows the other's frees.
        if i % 2 == 0 {
            let (d, count) = plan_list();
            plan_time.push(d);
            bare_time.push(bare_list(count));
            listed = count;
        } else {
            let d = bare_list(listed.max(count));
            bare_time.push(d);
            let (d, count) = plan_list();
            plan_time.push(d);
            listed = count;
        }
    }
    let (p, b) = (median(plan_time), median(bare_time));
    println!("list bench: {listed} trials, {list_iters} pairs");
    println!(
        "  qa plan --list (load + plan + list), median: {:>7.1} ms",
        p.as_secs_f64() * 1e3
    );
    println!(
        "  empty libtest-mimic --list, median:          {:>7.1} ms",
        b.as_secs_f64() * 1e3
    );
    println!(
        "  ratio:                                       {:>7.2}x",
        p.as_secs_f64() / b.as_secs_f64()
    );
}
