//! What sealing costs per sandboxed process: `/bin/true` run through the harness's
//! process control unsealed, sealed (`gauntlet-seal`: PID, mount, IPC and UTS
//! namespaces, a new root, the sandbox user) and under bubblewrap with a comparable
//! view (as root, without a user namespace: bubblewrap's `--uid` needs one), taking
//! turns in the same run so that the machine's state is shared.
//!
//! Two figures each: the latency a trial sees (process start to outcome, interleaved
//! rounds), and what the machine pays (busy CPU time of all cores, from `/proc/stat`,
//! over a block of rounds of one kind): a sealed process's helper builds its namespaces
//! and root before the process is asked for (`sys::warm`), so latency alone would hide
//! that work, and the kernel tears namespaces down in its own threads after the fact.
//!
//! Then what observing opens costs (`View::observed`: fanotify filesystem marks, read
//! by the sandbox's init): a sealed process that opens 1,000 files, observed and not,
//! interleaved; and what the host pays while an observing sandbox runs: the kernel
//! queues an event for every open on a watched filesystem, the host's too (init reads
//! and drops those), so the bench times the host opening one file in a loop beside an
//! idle sandbox, observed and not; and what observing execs costs: a sealed shell that
//! runs 200 programs, observed (each exec waits for init's answer) and not.
//!
//! `cargo bench --bench sandbox` (GAUNTLET_BENCH_ITERS, default 300). bubblewrap is
//! measured when `bwrap` is installed (`apt-get install bubblewrap`).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use gauntlet::sys::process::{self, ProcessSpec};
use gauntlet::sys::sandbox::View;

fn spec(dir: &Path, program: &str, args: &[&str], seal: Option<View>, i: usize) -> ProcessSpec {
    let mut env = BTreeMap::new();
    env.insert("PATH".to_string(), "/usr/bin:/bin".to_string());
    ProcessSpec {
        program: PathBuf::from(program),
        args: args.iter().map(|a| a.to_string()).collect(),
        cwd: dir.to_path_buf(),
        env,
        deadline: Duration::from_secs(30),
        stdout_path: dir.join(format!("{i}.stdout")),
        stderr_path: dir.join(format!("{i}.stderr")),
        rel_base: dir.to_path_buf(),
        output_cap: 1 << 16,
        marker: format!("bench-sandbox-{}-{i}", std::process::id()),
        seal,
    }
}

fn pct(v: &mut [Duration], p: f64) -> f64 {
    v.sort();
    let i = ((v.len() as f64 - 1.0) * p).round() as usize;
    v[i].as_secs_f64() * 1e3
}

/// Busy CPU time of the whole machine so far (every core, every process and kernel
/// thread), from `/proc/stat`'s first line: all fields but idle and iowait.
fn busy_cpu() -> Duration {
    let stat = std::fs::read_to_string("/proc/stat").expect("/proc/stat");
    let fields: Vec<u64> = stat
        .lines()
        .next()
        .expect("cpu line")
        .split_whitespace()
        .skip(1)
        .filter_map(|f| f.parse().ok())
        .collect();
    let busy: u64 = fields
        .iter()
        .enumerate()
        .filter(|(i, _)| *i != 3 && *i != 4)
        .map(|(_, v)| v)
        .sum();
    // SAFETY: sysconf has no preconditions.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as u64;
    Duration::from_micros(busy * 1_000_000 / hz)
}

fn main() {
    let iters: usize = std::env::var("GAUNTLET_BENCH_ITERS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(300);
    let dir = tempfile::tempdir().expect("tempdir");
    let work = dir.path().join("work");
    std::fs::create_dir_all(&work).expect("work dir");
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let bwrap = ["/usr/bin/bwrap", "/bin/bwrap"]
        .into_iter()
        .find(|p| Path::new(p).is_file());
    let bwrap_args: Vec<String> = [
        "--ro-bind",
        "/usr",
        "/usr",
        "--ro-bind",
        "/etc",
        "/etc",
        "--symlink",
        "usr/bin",
        "/bin",
        "--symlink",
        "usr/lib",
        "/lib",
        "--symlink",
        "usr/lib64",
        "/lib64",
        "--proc",
        "/proc",
        "--dev",
        "/dev",
        "--tmpfs",
        "/tmp",
    ]
    .iter()
    .map(|s| s.to_string())
    .chain([
        "--bind".into(),
        work.to_string_lossy().into_owned(),
        work.to_string_lossy().into_owned(),
        "--unshare-pid".into(),
        "--unshare-ipc".into(),
        "--unshare-uts".into(),
        "--die-with-parent".into(),
        "/usr/bin/true".into(),
    ])
    .collect();
    let bwrap_refs: Vec<&str> = bwrap_args.iter().map(String::as_str).collect();

    let run = |s: ProcessSpec| -> Duration {
        let t = Instant::now();
        let out = rt.block_on(process::run(s)).expect("process runs");
        assert_eq!(out.end.exit_code, Some(0), "the benchmarked process failed");
        t.elapsed()
    };
    // Warm-up: page cache, the sandbox probe.
    for i in 0..5 {
        run(spec(&work, "/bin/true", &[], None, i));
        run(spec(
            &work,
            "/bin/true",
            &[],
            Some(View::new().write(&work)),
            i,
        ));
    }
    let (mut plain, mut sealed, mut bw) = (Vec::new(), Vec::new(), Vec::new());
    let mut observed = Vec::new();
    for i in 0..iters {
        plain.push(run(spec(&work, "/bin/true", &[], None, i)));
        sealed.push(run(spec(
            &work,
            "/bin/true",
            &[],
            Some(View::new().write(&work)),
            i,
        )));
        observed.push(run(spec(
            &work,
            "/bin/true",
            &[],
            Some(view(&work, true, 20_000 + i)),
            i,
        )));
        if let Some(b) = bwrap {
            bw.push(run(spec(&work, b, &bwrap_refs, None, i)));
        }
    }
    // Machine cost: one block of rounds per kind, after the interleaved ones.
    let block = |program: &str, args: &[&str], seal: bool| -> f64 {
        let before = busy_cpu();
        for i in 0..iters {
            let view = seal.then(|| View::new().write(&work));
            run(spec(&work, program, args, view, i));
        }
        // Let the kernel finish tearing down the last namespaces.
        std::thread::sleep(Duration::from_millis(200));
        (busy_cpu() - before).as_secs_f64() * 1e3 / iters as f64
    };
    let cpu_plain = block("/bin/true", &[], false);
    let cpu_sealed = block("/bin/true", &[], true);
    let cpu_bwrap = bwrap.map(|b| block(b, &bwrap_refs, false));

    let (p50, p99) = (pct(&mut plain, 0.5), pct(&mut plain, 0.99));
    println!("one sandboxed process (/bin/true), {iters} rounds, interleaved: latency");
    println!("  unsealed spawn:   p50 {p50:>8.3} ms   p99 {p99:>8.3} ms");
    let (s50, s99) = (pct(&mut sealed, 0.5), pct(&mut sealed, 0.99));
    println!(
        "  gauntlet-seal:    p50 {s50:>8.3} ms   p99 {s99:>8.3} ms   added p50 {:>7.3} ms",
        s50 - p50
    );
    let (x50, x99) = (pct(&mut observed, 0.5), pct(&mut observed, 0.99));
    println!(
        "  sealed, observed: p50 {x50:>8.3} ms   p99 {x99:>8.3} ms   added p50 {:>7.3} ms (over sealed: {:.3} ms)",
        x50 - p50,
        x50 - s50
    );
    if !bw.is_empty() {
        let (b50, b99) = (pct(&mut bw, 0.5), pct(&mut bw, 0.99));
        println!(
            "  bubblewrap:       p50 {b50:>8.3} ms   p99 {b99:>8.3} ms   added p50 {:>7.3} ms",
            b50 - p50
        );
    } else {
        println!("  bubblewrap:       not installed (apt-get install bubblewrap)");
    }
    println!("  (latency ends when the outcome is known: unsealed, after the /proc sweep for");
    println!("  stragglers; sealed, after the sandbox's init counted them)");
    println!("machine CPU per process (all cores, /proc/stat), {iters} rounds per block");
    println!("  unsealed spawn:   {cpu_plain:>8.3} ms");
    println!(
        "  gauntlet-seal:    {cpu_sealed:>8.3} ms   added {:>7.3} ms",
        cpu_sealed - cpu_plain
    );
    if let Some(b) = cpu_bwrap {
        println!(
            "  bubblewrap:       {b:>8.3} ms   added {:>7.3} ms",
            b - cpu_plain
        );
    }
    observing(&rt, &work, iters);
}

/// A sealed view writing `work`, observed into a fresh file when `observe`.
fn view(work: &Path, observe: bool, i: usize) -> View {
    let v = View::new().write(work);
    if !observe {
        return v;
    }
    let file = work
        .parent()
        .unwrap_or(work)
        .join(format!("opens-{}-{i}.jsonl", std::process::id()));
    let _ = std::fs::remove_file(&file);
    v.observed(file)
}

fn observing(rt: &tokio::runtime::Runtime, work: &Path, iters: usize) {
    let files = work.join("files");
    std::fs::create_dir_all(&files).expect("files dir");
    for n in 0..1000 {
        std::fs::write(files.join(format!("{n}.txt")), b"x\n").expect("file");
    }
    let script = "for f in files/*.txt; do read -r x < \"$f\"; done";
    let run = |observe: bool, i: usize| -> Duration {
        let t = Instant::now();
        let out = rt
            .block_on(process::run(spec(
                work,
                "/bin/sh",
                &["-c", script],
                Some(view(work, observe, i)),
                i,
            )))
            .expect("process runs");
        assert_eq!(out.end.exit_code, Some(0), "the benchmarked process failed");
        t.elapsed()
    };
    let rounds = (iters / 3).max(10);
    let (mut plain, mut observed) = (Vec::new(), Vec::new());
    for i in 0..rounds {
        plain.push(run(false, i));
        observed.push(run(true, i));
    }
    let opens = work
        .parent()
        .unwrap_or(work)
        .join(format!("opens-{}-0.jsonl", std::process::id()));
    let lines = std::fs::read_to_string(&opens)
        .map(|t| t.lines().count())
        .unwrap_or(0);
    let (p50, p99) = (pct(&mut plain, 0.5), pct(&mut plain, 0.99));
    let (o50, o99) = (pct(&mut observed, 0.5), pct(&mut observed, 0.99));
    println!("a sealed shell opening 1,000 files, {rounds} rounds, interleaved: latency");
    println!("  sealed:           p50 {p50:>8.3} ms   p99 {p99:>8.3} ms");
    println!(
        "  sealed, observed: p50 {o50:>8.3} ms   p99 {o99:>8.3} ms   added p50 {:>7.3} ms ({:.1} µs per open; {lines} lines recorded)",
        o50 - p50,
        (o50 - p50) * 1e3 / 1000.0
    );

    // Execs: an observed sandbox stops each one until init has read its arguments
    // (a seccomp notification), an unobserved one does not.
    let execs = "i=0; while [ $i -lt 200 ]; do /bin/true; i=$((i+1)); done";
    let run_execs = |observe: bool, i: usize| -> Duration {
        let t = Instant::now();
        let out = rt
            .block_on(process::run(spec(
                work,
                "/bin/sh",
                &["-c", execs],
                Some(view(work, observe, 20_000 + i)),
                20_000 + i,
            )))
            .expect("process runs");
        assert_eq!(out.end.exit_code, Some(0), "the benchmarked process failed");
        t.elapsed()
    };
    let (mut plain, mut observed) = (Vec::new(), Vec::new());
    for i in 0..rounds {
        plain.push(run_execs(false, i));
        observed.push(run_execs(true, i));
    }
    let (p50, p99) = (pct(&mut plain, 0.5), pct(&mut plain, 0.99));
    let (o50, o99) = (pct(&mut observed, 0.5), pct(&mut observed, 0.99));
    println!("a sealed shell running /bin/true 200 times, {rounds} rounds, interleaved: latency");
    println!("  sealed:           p50 {p50:>8.3} ms   p99 {p99:>8.3} ms");
    println!(
        "  sealed, observed: p50 {o50:>8.3} ms   p99 {o99:>8.3} ms   added p50 {:>7.3} ms ({:.1} µs per exec; ratio {:.2})",
        o50 - p50,
        (o50 - p50) * 1e3 / 200.0,
        o50 / p50
    );

    // The host's opens beside an idle sandbox, observed or not: opens per second.
    let target = work.join("files/0.txt");
    let beside = |observe: bool, i: usize| -> f64 {
        let seal = Some(view(work, observe, 10_000 + i));
        let child = spec(work, "/bin/sleep", &["1.5"], seal, 10_000 + i);
        let sandbox = rt.spawn(process::run(child));
        // Let the sandbox start and mark its filesystems.
        std::thread::sleep(Duration::from_millis(300));
        let until = Instant::now() + Duration::from_millis(800);
        let mut n = 0u64;
        while Instant::now() < until {
            let _ = std::fs::File::open(&target).expect("open");
            n += 1;
        }
        let _ = rt.block_on(sandbox);
        n as f64 / 0.8
    };
    let (mut quiet, mut loud) = (0.0, 0.0);
    let pairs = 5;
    for i in 0..pairs {
        quiet += beside(false, i);
        loud += beside(true, i);
    }
    let (quiet, loud) = (quiet / pairs as f64, loud / pairs as f64);
    println!("the host opening one file in a loop beside an idle sandbox, {pairs} pairs");
    println!("  beside a sealed sandbox:    {:>10.0} opens/s", quiet);
    println!(
        "  beside an observed sandbox: {:>10.0} opens/s   ratio {:.2}",
        loud,
        loud / quiet
    );
}
