//! Observed opens: the sandbox's init records what its processes open, whatever they
//! are (a shell, an interpreter, a detached child, a process in a mount namespace of
//! its own) and however they name the file (through a symlink they made), in a file
//! outside their view.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use gauntlet::evidence::observed::{self, Observation, OpenAccess};

use crate::support;

/// A readable "product" tree beside a writable workspace, both readable by the sandbox
/// user.
fn tree() -> (tempfile::TempDir, PathBuf, PathBuf) {
    let dir = tempfile::tempdir().expect("tempdir");
    let product = dir.path().join("product");
    let ws = dir.path().join("ws");
    for d in [&product.join("src"), &ws] {
        std::fs::create_dir_all(d).expect("mkdir");
    }
    for name in ["direct", "python", "detached", "linked", "nested", "unread"] {
        std::fs::write(product.join("src").join(format!("{name}.rs")), name).expect("write");
    }
    for d in [dir.path(), &product, &product.join("src")] {
        std::fs::set_permissions(d, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    }
    (dir, product, ws)
}

fn observe(dir: &Path, product: &Path, ws: &Path, script: &str) -> (Observation, String) {
    let mut env = std::collections::BTreeMap::new();
    env.insert("PATH".to_string(), "/usr/bin:/bin".to_string());
    let file = dir.join("opens.jsonl");
    let view = gauntlet::sys::sandbox::View::new()
        .read(product)
        .write(ws)
        .observed(&file);
    let spec = gauntlet::sys::process::ProcessSpec {
        program: PathBuf::from("/bin/sh"),
        args: vec!["-c".into(), script.into()],
        cwd: ws.to_path_buf(),
        env,
        deadline: std::time::Duration::from_secs(60),
        stdout_path: dir.join("out"),
        stderr_path: dir.join("err"),
        rel_base: dir.to_path_buf(),
        output_cap: 1 << 16,
        marker: format!("observing-{}", std::process::id()),
        seal: Some(view),
    };
    let outcome = support::runtime()
        .block_on(gauntlet::sys::process::run(spec))
        .expect("sealed run");
    let stderr = std::fs::read_to_string(dir.join("err")).unwrap_or_default();
    assert_eq!(outcome.end.exit_code, Some(0), "{stderr}");
    let bytes = std::fs::read(&file).expect("the observation file exists");
    (observed::parse(&mut &bytes[..]), stderr)
}

fn seen(o: &Observation, path: &Path, access: OpenAccess) -> bool {
    let p = path.to_string_lossy();
    o.opens.iter().any(|x| x.path == p && x.access == access)
}

#[test]
fn every_way_of_opening_a_file_is_seen_and_the_record_is_out_of_reach() {
    let (dir, product, ws) = tree();
    let src = product.join("src");
    let s = |name: &str| {
        src.join(format!("{name}.rs"))
            .to_string_lossy()
            .into_owned()
    };
    let script = format!(
        r#"set -e
cat {direct} > /dev/null
python3 -c 'open("{python}").read()'
(setsid sh -c 'cat {detached} > /dev/null; echo done > detached.txt' &)
ln -s {linked} link.rs
cat link.rs > /dev/null
unshare -Urm cat {nested} > /dev/null || echo "no user namespace" >&2
ls {src} > /dev/null
echo written > out.txt
for i in $(seq 50); do [ -f detached.txt ] && break; sleep 0.1; done
echo x >> {file} 2>/dev/null && echo "wrote the observation" >&2 || true
"#,
        direct = s("direct"),
        python = s("python"),
        detached = s("detached"),
        linked = s("linked"),
        nested = s("nested"),
        src = src.display(),
        file = dir.path().join("opens.jsonl").display(),
    );
    let (o, stderr) = observe(dir.path(), &product, &ws, &script);
    assert_eq!(o.incomplete(), None, "{o:?}");
    for name in ["direct", "python", "detached", "linked"] {
        assert!(
            seen(&o, &src.join(format!("{name}.rs")), OpenAccess::Read),
            "{name}: {o:#?}"
        );
    }
    if !stderr.contains("no user namespace") {
        assert!(
            seen(&o, &src.join("nested.rs"), OpenAccess::Read),
            "nested: {o:#?}"
        );
    }
    assert!(!seen(&o, &src.join("unread.rs"), OpenAccess::Read));
    assert!(seen(&o, &src, OpenAccess::List), "{o:#?}");
    assert!(seen(&o, &ws.join("out.txt"), OpenAccess::Write), "{o:#?}");
    assert!(
        o.opens
            .iter()
            .any(|x| x.access == OpenAccess::Exec && x.path.contains("python3")),
        "{o:#?}"
    );
    // Who opened it is named: the interpreter, not the shell.
    let py = o
        .opens
        .iter()
        .find(|x| x.path == s("python"))
        .expect("python read");
    assert!(
        py.process
            .as_deref()
            .is_some_and(|p| p.starts_with("python")),
        "{py:?}"
    );
    // The observation file is not in the sandbox's view.
    assert!(!stderr.contains("wrote the observation"), "{stderr}");
    // The host's own opens of the same tree, at the same time, are not the trial's.
    assert!(o.opens.iter().all(|x| x.pid > 1));
}

#[test]
fn opens_of_the_host_during_the_trial_are_not_counted() {
    let (dir, product, ws) = tree();
    let unread = product.join("src/unread.rs");
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let reader = {
        let (stop, unread) = (stop.clone(), unread.clone());
        std::thread::spawn(move || {
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                let _ = std::fs::read(&unread);
                std::thread::sleep(std::time::Duration::from_millis(2));
            }
        })
    };
    let (o, _) = observe(dir.path(), &product, &ws, "sleep 0.3; cat /dev/null");
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let _ = reader.join();
    assert_eq!(o.incomplete(), None);
    assert!(!seen(&o, &unread, OpenAccess::Read), "{o:#?}");
}

/// A descriptor the harness's own launcher left open (no close-on-exec) would be read
/// without an open anyone could see: the program starts with stdin, stdout and stderr
/// only.
#[test]
fn descriptors_left_open_by_the_launcher_do_not_reach_the_program() {
    use std::os::fd::AsRawFd;
    let (dir, product, ws) = tree();
    let leaked = nix::fcntl::open(
        &product.join("src/unread.rs"),
        nix::fcntl::OFlag::O_RDONLY,
        nix::sys::stat::Mode::empty(),
    )
    .expect("open without close-on-exec");
    // Far from the descriptors the program opens itself.
    // SAFETY: F_DUPFD makes a new descriptor (without close-on-exec); no memory is
    // involved.
    let n = unsafe { libc::fcntl(leaked.as_raw_fd(), libc::F_DUPFD, 200) };
    assert!(n >= 200);
    let script =
        format!("ls /proc/self/fd > fds.txt; sh -c 'cat <&{n}' > got.txt 2>/dev/null || true");
    let (o, _) = observe(dir.path(), &product, &ws, &script);
    drop(leaked);
    // SAFETY: `n` is the descriptor F_DUPFD made above, closed once.
    unsafe { libc::close(n) };
    assert_eq!(o.incomplete(), None);
    let fds = std::fs::read_to_string(ws.join("fds.txt")).expect("fds");
    let fds: Vec<&str> = fds.lines().collect();
    // 0, 1, 2 and the one `ls` opened to read the directory.
    assert!(
        fds.len() <= 4 && !fds.contains(&n.to_string().as_str()),
        "{fds:?}"
    );
    assert_eq!(std::fs::read(ws.join("got.txt")).unwrap_or_default(), b"");
}

fn ran(o: &Observation, path_end: &str, args: &[&str]) -> bool {
    o.execs.iter().any(|e| {
        e.path.ends_with(path_end) && e.argv.len() > args.len() && e.argv[1..=args.len()] == *args
    })
}

#[test]
fn every_exec_is_seen_with_its_arguments_however_short_lived_or_hidden() {
    let (dir, product, ws) = tree();
    let script = r#"set -e
/bin/true short lived
sh -c 'exec /bin/echo "two words" > /dev/null'
python3 -c 'import os; os.execv("/bin/true", ["true", "--from-python"])'
python3 -c 'import os; fd = os.open("/bin/true", os.O_RDONLY); os.execve(fd, ["true", "--by-descriptor"], {})'
(setsid sh -c '/bin/true detached; echo done > detached.txt' &)
unshare -Urm /bin/true nested || echo "no user namespace" >&2
cp /bin/true ./mine
mkdir -p sub && cd sub && ../mine relative && cd ..
/bin/true $(seq 100) > /dev/null
python3 -c '
import ctypes, ctypes.util, os
libc = ctypes.CDLL(None, use_errno=True)
argv = (ctypes.c_char_p * 3)(b"true", b"--x32", None)
r = libc.syscall(0x40000000 | 59, b"/bin/true", argv, None)
print("x32", r, ctypes.get_errno())
' > x32.txt
for i in $(seq 50); do [ -f detached.txt ] && break; sleep 0.1; done
"#;
    let (o, stderr) = observe(dir.path(), &product, &ws, script);
    assert_eq!(o.execs_incomplete(), None, "{o:?}");
    assert!(ran(&o, "/bin/true", &["short", "lived"]), "{:#?}", o.execs);
    assert!(ran(&o, "/bin/echo", &["two words"]), "{:#?}", o.execs);
    assert!(ran(&o, "/bin/true", &["--from-python"]), "{:#?}", o.execs);
    assert!(ran(&o, "/bin/true", &["--by-descriptor"]), "{:#?}", o.execs);
    assert!(ran(&o, "/bin/true", &["detached"]), "{:#?}", o.execs);
    if !stderr.contains("no user namespace") {
        assert!(ran(&o, "/bin/true", &["nested"]), "{:#?}", o.execs);
        // Its path is named in a mount namespace of its own, and says so; the
        // `unshare` that made it ran in the sandbox's.
        let own: Vec<&str> = o
            .execs
            .iter()
            .filter(|e| e.own_root)
            .map(|e| e.path.as_str())
            .collect();
        assert_eq!(own, ["/bin/true"], "{:#?}", o.execs);
    }
    // A relative path is named from the caller's working directory.
    let mine = ws.join("sub/../mine").to_string_lossy().into_owned();
    assert!(
        o.execs
            .iter()
            .any(|e| e.path == mine && e.argv[1..] == ["relative"]),
        "{mine}: {:#?}",
        o.execs
    );
    // Arguments past the bound are cut, and say so.
    let long = o
        .execs
        .iter()
        .find(|e| e.argv.get(1).map(String::as_str) == Some("1"))
        .expect("the long exec");
    assert!(
        long.argv_cut && long.argv.len() == observed::MAX_ARGS,
        "{long:?}"
    );
    // The x32 door around the filter is shut: its exec fails and runs nothing.
    let x32 = std::fs::read_to_string(ws.join("x32.txt")).unwrap_or_default();
    assert_eq!(x32.trim(), format!("x32 -1 {}", libc::ENOSYS), "{x32}");
    assert!(!ran(&o, "/bin/true", &["--x32"]), "{:#?}", o.execs);
    // In the order they were asked for, the shell first.
    assert_eq!(o.execs[0].path, "/bin/sh", "{:#?}", o.execs[0]);
    assert!(o.execs.windows(2).all(|w| w[0].ms <= w[1].ms));
}

/// The loader's variables are read from the environment each exec passes, with its
/// arguments: a preload shows on the exec that loaded it, whatever the program does to
/// its own environment afterwards, and an environment too long to read says so.
#[test]
fn each_exec_says_the_loader_variables_it_was_given() {
    let (dir, product, ws) = tree();
    let script = r#"
LD_PRELOAD=/nonexistent/e.so /bin/true preloaded 2>/dev/null
env LD_LIBRARY_PATH=/usr/lib:/tmp/libs LD_BIND_NOW=1 /bin/true library-path
env -i /bin/true bare
python3 -c '
import os
env = {"V%d" % i: "x" for i in range(5000)}
env["LD_PRELOAD"] = "/nonexistent/late.so"
os.execve("/bin/true", ["true", "crowded"], env)
' 2>/dev/null
true
"#;
    let (o, _) = observe(dir.path(), &product, &ws, script);
    let exec = |arg: &str| {
        o.execs
            .iter()
            .find(|e| e.argv.get(1).map(String::as_str) == Some(arg))
            .unwrap_or_else(|| panic!("the exec of {arg}: {:#?}", o.execs))
    };
    let preloaded = exec("preloaded");
    assert_eq!(
        preloaded.loader,
        ["LD_PRELOAD=/nonexistent/e.so"],
        "{preloaded:?}"
    );
    assert!(observed::loader_alters(preloaded).is_some());
    let lib = exec("library-path");
    assert_eq!(
        lib.loader,
        ["LD_LIBRARY_PATH=/usr/lib:/tmp/libs", "LD_BIND_NOW=1"],
        "{lib:?}"
    );
    assert!(observed::loader_alters(lib).is_some_and(|w| w.contains("/tmp/libs")));
    let bare = exec("bare");
    assert!(
        bare.loader.is_empty() && bare.loader_unread.is_none(),
        "{bare:?}"
    );
    assert_eq!(observed::loader_alters(bare), None);
    let crowded = exec("crowded");
    assert!(
        crowded.loader_unread.as_deref() == Some("more than 4096 environment variables"),
        "{crowded:?}"
    );
    assert!(observed::loader_alters(crowded).is_some());
}

/// A connection made before a program ran and carried into it (a socket without
/// close-on-exec) is on that program's exec line; one closed on exec is not.
#[test]
fn each_exec_says_the_connections_it_carried_in() {
    let (dir, product, ws) = tree();
    let script = r#"
python3 -c '
import os, socket
l = socket.socket(); l.bind(("127.0.0.1", 0)); l.listen(2)
port = l.getsockname()[1]
open("port.txt", "w").write(str(port))
kept = socket.create_connection(("127.0.0.1", port))
closed = socket.create_connection(("127.0.0.1", port))
os.set_inheritable(kept.fileno(), True)
os.execv("/bin/true", ["true", "carrying"])
'
python3 -c '
import os, socket
l = socket.socket(); l.bind(("127.0.0.1", 0)); l.listen(1)
s = socket.create_connection(("127.0.0.1", l.getsockname()[1]))
os.execv("/bin/true", ["true", "closing"])
'
"#;
    let (o, stderr) = observe(dir.path(), &product, &ws, script);
    let exec = |arg: &str| {
        o.execs
            .iter()
            .find(|e| e.argv.get(1).map(String::as_str) == Some(arg))
            .unwrap_or_else(|| panic!("the exec of {arg}: {:#?}\n{stderr}", o.execs))
    };
    let port: u16 = std::fs::read_to_string(ws.join("port.txt"))
        .expect("the listener's port")
        .trim()
        .parse()
        .expect("a port");
    assert_eq!(exec("carrying").carried, [port], "{:#?}", exec("carrying"));
    assert!(exec("closing").carried.is_empty(), "{:#?}", exec("closing"));
}
