//! The sealed view of one process: what it may see and write, handed to the
//! `gauntlet-seal` helper, which builds it with Linux namespaces before it runs the
//! program.
//!
//! Why a helper binary and not a `pre_exec` hook: the setup forks twice, mounts, and
//! waits, none of which is sound in the forked child of a multi-threaded process (only
//! async-signal-safe calls are), and a helper reports its errors as ordinary text.
//!
//! The view is sent on the helper's stdin, never on its command line or in its
//! environment: PID 1 of the sandbox is the helper itself, and the sandboxed program can
//! read `/proc/1/cmdline`. For the same reason the sources of binds must carry no label
//! a test could read (`/proc/self/mountinfo` names them): callers use neutral names.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use serde::{Deserialize, Serialize};

/// The unprivileged user every sealed program runs as (`nobody`): it owns no file of the
/// host, so what the mount view leaves visible is still only readable where the world
/// may read it, and it has no capability to undo the view.
pub const SANDBOX_UID: u32 = 65534;
pub const SANDBOX_GID: u32 = 65534;

/// Inside a sandbox, where a target's locator directory is mounted: the same path for
/// the app and for every mutant, so a test cannot tell them apart by where they are.
pub const TARGET_MOUNT: &str = "/run/gauntlet/target";

/// Host directories every sealed program sees read-only: what binaries need to run.
/// Missing ones are skipped; on merged-/usr systems `/bin` and friends are symlinks and
/// are recreated as such.
pub const SYSTEM_PATHS: &[&str] = &[
    "/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/opt",
];

/// One entry of the view, applied in order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Mount {
    /// `source` on the host appears at `target` inside; writable or read-only.
    Bind {
        source: PathBuf,
        target: PathBuf,
        writable: bool,
    },
    /// A fresh, empty, writable tmpfs at `target`.
    Tmpfs { target: PathBuf },
}

/// Everything the helper needs: the program, its environment, and the view.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SealSpec {
    pub program: PathBuf,
    pub args: Vec<String>,
    pub env: BTreeMap<String, String>,
    /// Working directory inside the sandbox.
    pub cwd: PathBuf,
    /// Applied after the system paths, `/dev`, `/proc` and the private `/tmp`.
    pub mounts: Vec<Mount>,
    pub uid: u32,
    pub gid: u32,
    /// Where the helper writes its [`SealReport`] (outside the sandbox).
    pub report: PathBuf,
    /// Host loopback ports reachable from the sandbox's own network namespace, at the
    /// same numbers; every other port of the host is out of reach.
    #[serde(default)]
    pub forward: Vec<u16>,
    #[serde(default)]
    pub limits: Limits,
    /// Where init records every open the sandbox's processes make (see
    /// [`crate::evidence::observed`]): a host path outside the view, created new.
    /// `None`: nothing is observed.
    #[serde(default)]
    pub observe: Option<PathBuf>,
}

/// What one sandbox may use of the machine, enforced by a control group of its own
/// where the machine offers one (the helper's report says whether it did).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Limits {
    /// Tasks (processes and threads) at once: Chromium alone runs a few hundred.
    pub tasks: u64,
    /// Memory, page cache of its files and its tmpfs pages included; past it the
    /// kernel kills a process of the sandbox, not of the machine.
    pub memory_bytes: u64,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            tasks: 4096,
            memory_bytes: 4 << 30,
        }
    }
}

/// What the helper observed, written to [`SealSpec::report`] when the sandbox ended.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SealReport {
    /// The program's exit code, when it exited.
    pub exit_code: Option<i32>,
    /// The signal that killed it, when one did.
    pub signal: Option<i32>,
    /// Processes still alive in the sandbox when the program ended (or was stopped at
    /// its deadline, those outside its process group): killed with the sandbox.
    pub stragglers_killed: u32,
    /// Why the sandbox could not be built or the program not started.
    pub setup_error: Option<String>,
    /// Whether [`SealSpec::limits`] were enforced by a control group of the sandbox's
    /// own; without one only a per-user process count bounds it.
    #[serde(default)]
    pub limited: bool,
}

/// A view for the usual case: these directories writable, these paths readable, each
/// at its own path.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct View {
    pub mounts: Vec<Mount>,
    pub limits: Limits,
    /// Where the sandbox's opens are recorded ([`SealSpec::observe`]).
    pub observe: Option<PathBuf>,
}

impl View {
    pub fn new() -> View {
        View::default()
    }

    /// `dir` writable at its own path.
    pub fn write(mut self, dir: impl Into<PathBuf>) -> View {
        let dir = dir.into();
        self.mounts.push(Mount::Bind {
            source: dir.clone(),
            target: dir,
            writable: true,
        });
        self
    }

    /// `path` (file or directory) read-only at its own path; skipped when it does not
    /// exist, so optional tools can be listed unconditionally.
    pub fn read(mut self, path: impl Into<PathBuf>) -> View {
        let path = path.into();
        if path.exists() {
            self.mounts.push(Mount::Bind {
                source: path.clone(),
                target: path,
                writable: false,
            });
        }
        self
    }

    /// `source` at `target`.
    pub fn bind(
        mut self,
        source: impl Into<PathBuf>,
        target: impl Into<PathBuf>,
        writable: bool,
    ) -> View {
        self.mounts.push(Mount::Bind {
            source: source.into(),
            target: target.into(),
            writable,
        });
        self
    }

    /// Record every open of the sandbox's processes in `file` (a host path outside the
    /// view, which must not exist yet).
    pub fn observed(mut self, file: impl Into<PathBuf>) -> View {
        self.observe = Some(file.into());
        self
    }

    pub fn extend(mut self, other: View) -> View {
        self.mounts.extend(other.mounts);
        self
    }

    /// Whether `path` lies under a writable bind of this view.
    pub fn writes(&self, path: &Path) -> bool {
        self.mounts.iter().any(|m| match m {
            Mount::Bind {
                target, writable, ..
            } => *writable && path.starts_with(target),
            Mount::Tmpfs { target } => path.starts_with(target),
        })
    }

    /// The writable bind sources: the directories the sandbox user must own.
    pub fn writable_sources(&self) -> impl Iterator<Item = &Path> {
        self.mounts.iter().filter_map(|m| match m {
            Mount::Bind {
                source,
                writable: true,
                ..
            } => Some(source.as_path()),
            _ => None,
        })
    }
}

#[derive(Debug, thiserror::Error)]
pub enum SandboxError {
    #[error("the sandbox helper {} is missing: install gauntlet's programs with `{}`", path.display(), crate::binaries::INSTALL_HELPERS)]
    HelperMissing { path: PathBuf },
    #[error("cannot create namespaces for a sealed trial: {cause} (set GAUNTLET_SANDBOX=off to run unsealed; such runs are marked unsealed and never ranked)")]
    Unavailable { cause: String },
    #[error("cannot hand {} to the sandbox user: {source}", path.display())]
    Chown {
        path: PathBuf,
        source: std::io::Error,
    },
}

/// What a helper reads first on its stdin, as soon as it starts: the pid of the
/// harness, which it must die with. The spec follows when there is a program to run.
pub fn parent_line() -> Vec<u8> {
    format!("{}\n", std::process::id()).into_bytes()
}

/// The sandbox's program, one of gauntlet's own ([`crate::binaries::HELPERS`]).
pub const HELPER: &str = "gauntlet-seal";

/// The sandbox's program, where gauntlet's own programs are.
pub fn helper() -> PathBuf {
    crate::binaries::bin_path(HELPER)
}

/// Whether sealed processes can be run here, checked once per process by sealing
/// `/bin/true`. The error names the cause.
pub fn probe() -> Result<(), SandboxError> {
    static PROBED: OnceLock<Result<(), String>> = OnceLock::new();
    let helper = helper();
    if !helper.is_file() {
        return Err(SandboxError::HelperMissing { path: helper });
    }
    PROBED
        .get_or_init(|| probe_once(&helper))
        .clone()
        .map_err(|cause| SandboxError::Unavailable { cause })
}

fn probe_once(helper: &Path) -> Result<(), String> {
    use std::io::Write;
    let dir = std::env::temp_dir().join(format!("gauntlet-probe-{}", std::process::id()));
    std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let spec = SealSpec {
        program: PathBuf::from("/bin/true"),
        args: vec![],
        env: BTreeMap::new(),
        cwd: PathBuf::from("/"),
        mounts: vec![],
        uid: SANDBOX_UID,
        gid: SANDBOX_GID,
        report: dir.join("report.json"),
        forward: vec![],
        limits: Limits::default(),
        observe: None,
    };
    let bytes = serde_json::to_vec(&spec).map_err(|e| e.to_string())?;
    let mut child = std::process::Command::new(helper)
        .env_clear()
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot start {}: {e}", helper.display()))?;
    if let Some(mut stdin) = child.stdin.take() {
        stdin
            .write_all(&parent_line())
            .and_then(|()| stdin.write_all(&bytes))
            .map_err(|e| e.to_string())?;
    }
    let out = child.wait_with_output().map_err(|e| e.to_string())?;
    let report = std::fs::read(&spec.report)
        .ok()
        .and_then(|b| serde_json::from_slice::<SealReport>(&b).ok());
    let _ = std::fs::remove_dir_all(&dir);
    if let Some(SealReport {
        setup_error: Some(e),
        ..
    }) = report
    {
        return Err(e);
    }
    if !out.status.success() {
        let stderr = String::from_utf8_lossy(&out.stderr);
        return Err(format!(
            "{} exited with {}: {}",
            helper.display(),
            out.status,
            stderr.trim()
        ));
    }
    Ok(())
}

/// The loopback ports named in `env`'s values (`127.0.0.1:<port>`, `localhost:<port>`,
/// `[::1]:<port>`): what the harness handed the program to reach — its proxy, its
/// target, its sinks — and so exactly what its sandbox forwards.
pub fn loopback_ports(env: &BTreeMap<String, String>) -> Vec<u16> {
    let mut ports = Vec::new();
    for value in env.values() {
        for host in ["127.0.0.1:", "localhost:", "[::1]:"] {
            let mut rest = value.as_str();
            while let Some(at) = rest.find(host) {
                rest = &rest[at + host.len()..];
                let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
                if let Ok(port) = digits.parse::<u16>() {
                    if port != 0 && !ports.contains(&port) {
                        ports.push(port);
                    }
                }
            }
        }
    }
    ports.sort_unstable();
    ports
}

/// The harness's binaries a sealed program may run: the reference agent, `gauntlet`
/// (for `gauntlet flow run`) and the CLI relay apps are reached through.
pub const HARNESS_BINARIES: &[&str] = &["gauntlet", "gauntlet-agent", "gauntlet-cli-relay"];

/// What a sealed `program args` needs beyond `view` to start at all, read-only: the
/// harness's binaries, the pinned agent CLIs (`workspace/` of the repository), a
/// browser named by `GAUNTLET_CHROMIUM`, and the program and the files its arguments
/// name (a `command` agent's script: its directory, so it can source its siblings,
/// unless that directory is the repository or above it).
pub fn runtime_view(program: &Path, args: &[String], view: &View) -> View {
    let repo = crate::binaries::repo_root();
    let mut extra = View::new();
    for name in HARNESS_BINARIES {
        extra = extra.read(crate::binaries::bin_path(name));
    }
    extra = extra.read(repo.join("workspace"));
    if let Some(chromium) = crate::binaries::chromium_override() {
        extra = extra.read(chromium);
    }
    let named = std::iter::once(program.to_path_buf()).chain(args.iter().map(PathBuf::from));
    // Only files the command names: a directory argument (a trial directory, say) is
    // not the agent's code, and binding it would shadow the trial's own binds.
    for path in named.filter(|p| p.is_absolute() && p.is_file()) {
        let binds = || view.mounts.iter().chain(&extra.mounts);
        // Under a later tmpfs a bind is hidden again: only binds count as seen.
        let under_bind = binds().any(|m| match m {
            Mount::Bind { target, .. } => path.starts_with(target),
            Mount::Tmpfs { .. } => false,
        });
        let masked = view.mounts.iter().any(|m| match m {
            Mount::Tmpfs { target } => path.starts_with(target),
            Mount::Bind { .. } => false,
        });
        if (under_bind && !masked) || SYSTEM_PATHS.iter().any(|s| path.starts_with(s)) {
            continue;
        }
        // The script's directory, so it can source its siblings, unless that would
        // expose the repository or cover a directory the trial binds.
        let dir = path.parent().filter(|d| {
            !repo.starts_with(d)
                && !binds().any(|m| match m {
                    Mount::Bind { target, .. } | Mount::Tmpfs { target } => target.starts_with(d),
                })
        });
        extra = extra.read(dir.map(Path::to_path_buf).unwrap_or(path));
    }
    extra
}

/// Make every writable source of `view` (and what is already in it) owned by the
/// sandbox user, so the sealed program can write where it was handed a directory and
/// nowhere else. Symlinks are changed themselves, never followed.
pub fn hand_over(view: &View) -> Result<(), SandboxError> {
    for dir in view.writable_sources() {
        chown_tree(dir)?;
    }
    Ok(())
}

fn chown_tree(path: &Path) -> Result<(), SandboxError> {
    let err = |source| SandboxError::Chown {
        path: path.to_path_buf(),
        source,
    };
    std::os::unix::fs::lchown(path, Some(SANDBOX_UID), Some(SANDBOX_GID)).map_err(err)?;
    let meta = std::fs::symlink_metadata(path).map_err(err)?;
    if meta.is_dir() {
        // Below the (trusted) source, walked by open descriptors: a directory that a
        // process of the agent swaps for a symlink while this runs is not entered,
        // so the harness never chowns a host file (`sys::beneath`).
        let dir = super::beneath::Dir::open(path).map_err(beneath_err)?;
        chown_below(dir)?;
    }
    Ok(())
}

fn beneath_err(e: super::beneath::BeneathError) -> SandboxError {
    SandboxError::Chown {
        path: e.path().to_path_buf(),
        source: std::io::Error::other(e.to_string()),
    }
}

/// How deep below a handed-over directory ownership is changed. The walk holds one
/// open descriptor per level and no stack frame per level, so an agent's chain of ten
/// thousand nested directories can neither overflow the harness's stack nor exhaust
/// its descriptors; what lies deeper stays the harness's, which only means the
/// sandboxed program cannot write there.
const MAX_HAND_OVER_DEPTH: usize = 128;

fn chown_below(root: super::beneath::Dir) -> Result<(), SandboxError> {
    // Depth first, one level per element: the directory, its entries, the next one.
    let mut stack = vec![(root.entries().map_err(beneath_err)?.into_iter(), root)];
    loop {
        let depth = stack.len();
        let Some((entries, dir)) = stack.last_mut() else {
            break;
        };
        let Some(entry) = entries.next() else {
            stack.pop();
            continue;
        };
        match dir.chown(&entry.name, SANDBOX_UID, SANDBOX_GID) {
            Ok(()) => {}
            Err(e) if e.is_race() => continue,
            Err(e) => return Err(beneath_err(e)),
        }
        if entry.kind != super::beneath::Kind::Dir || depth >= MAX_HAND_OVER_DEPTH {
            continue;
        }
        let sub = match dir.sub(Path::new(&entry.name)) {
            Ok(sub) => sub,
            Err(e) if e.is_race() => continue,
            Err(e) => return Err(beneath_err(e)),
        };
        let listed = match sub.entries() {
            Ok(l) => l,
            Err(e) if e.is_race() => continue,
            Err(e) => return Err(beneath_err(e)),
        };
        stack.push((listed.into_iter(), sub));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_only_under_writable_binds() {
        let view = View::new()
            .write("/w")
            .bind("/src", "/ro", false)
            .bind("/x", "/rw", true);
        assert!(view.writes(Path::new("/w/a")));
        assert!(view.writes(Path::new("/rw")));
        assert!(!view.writes(Path::new("/ro/a")));
        assert!(!view.writes(Path::new("/wx")));
        let sources: Vec<_> = view.writable_sources().collect();
        assert_eq!(sources, [Path::new("/w"), Path::new("/x")]);
    }

    #[test]
    fn loopback_ports_come_from_the_environment() {
        let env: BTreeMap<String, String> = [
            ("OPENAI_BASE_URL", "http://127.0.0.1:4100/v1"),
            ("APP_URL", "http://127.0.0.1:4200"),
            ("http_proxy", "http://localhost:4300/"),
            ("OTHER", "[::1]:4100 and 127.0.0.1:0 and 127.0.0.1:x"),
            ("PATH", "/usr/bin"),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
        assert_eq!(loopback_ports(&env), vec![4100, 4200, 4300]);
    }

    #[test]
    fn handing_over_a_chain_of_thousands_of_directories_neither_overflows_nor_follows() {
        if !nix::unistd::geteuid().is_root() {
            return; // Only root can change owners.
        }
        use std::os::unix::fs::MetadataExt;
        let root = tempfile::tempdir().unwrap();
        let mut d = super::super::beneath::Dir::open(root.path()).unwrap();
        // Deeper than any path the harness could name (4096 bytes) and than its stack
        // would survive one frame per level of.
        for _ in 0..5000 {
            d = d.create_dirs(Path::new("d")).unwrap();
        }
        drop(d);
        std::os::unix::fs::symlink("/etc", root.path().join("d/etc")).unwrap();
        hand_over(&View::new().write(root.path())).unwrap();
        let uid = |rel: &str| {
            std::fs::symlink_metadata(root.path().join(rel))
                .unwrap()
                .uid()
        };
        assert_eq!(uid("d"), SANDBOX_UID);
        assert_eq!(uid("d/etc"), SANDBOX_UID, "the link itself is handed over");
        assert_eq!(
            std::fs::metadata("/etc").unwrap().uid(),
            0,
            "never its target"
        );
        let at = |depth: usize| vec!["d"; depth].join("/");
        assert_eq!(uid(&at(MAX_HAND_OVER_DEPTH)), SANDBOX_UID);
        assert_eq!(
            uid(&at(MAX_HAND_OVER_DEPTH + 1)),
            0,
            "below the cap stays the harness's"
        );
    }

    #[test]
    fn read_skips_missing_paths() {
        let view = View::new().read("/definitely/not/here");
        assert!(view.mounts.is_empty());
    }
}
