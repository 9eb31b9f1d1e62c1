//! The sandbox's filesystem: a read-only tmpfs root holding the system paths, a small
//! `/dev`, the namespace's own `/proc`, a private `/tmp`, and the spec's binds; the
//! host's root is detached, so nothing else is reachable by any path.
//!
//! The construction follows bubblewrap's: a tmpfs on `/tmp` becomes a staging root with
//! the host's root at `/oldroot` (so bind sources, `/tmp` ones included, stay
//! reachable), the new root is assembled at `/newroot`, the host's root is detached,
//! and a second pivot makes `/newroot` the root.

use crate::failure::{At, Failure};
use std::os::unix::fs::symlink;
use std::path::{Component, Path, PathBuf};

use gauntlet::sys::sandbox::{Mount, SealSpec, SYSTEM_PATHS};
use nix::mount::{mount, umount2, MntFlags, MsFlags};

const NONE: Option<&str> = None;

/// The most a sandbox's private `/tmp` (and any tmpfs of its view) may hold: tmpfs is
/// memory, and an unsized one may take half of it.
const TMP_SIZE: &str = "1g";

/// The most its `/dev/shm` may hold (Chromium's shared memory lives there).
const SHM_SIZE: &str = "512m";

/// Device nodes bound from the host's `/dev`.
const DEVICES: &[&str] = &["null", "zero", "full", "random", "urandom", "tty"];

/// What can be built before the program is known without leaving a mark it could
/// read: the staging root (private, and detached before the program runs). Built while
/// the helper waits for a spec.
pub fn stage() -> Result<(), Failure> {
    // Nothing we mount may propagate back to the host's namespace.
    mount(NONE, "/", NONE, MsFlags::MS_REC | MsFlags::MS_PRIVATE, NONE).at("making / private")?;
    tmpfs("/tmp", "mode=0755,size=1m")?;
    mkdir(Path::new("/tmp/oldroot"))?;
    mkdir(Path::new("/tmp/newroot"))?;
    nix::unistd::pivot_root("/tmp", "/tmp/oldroot").at("pivot_root to the staging root")?;
    nix::unistd::chdir("/").at("chdir /")?;
    Ok(())
}

/// The new root the program sees, with its system paths, `/dev`, `/proc`, `/sys` and
/// `/tmp`: built once the spec has come, never ahead. Everything here carries the time
/// it was made (a tmpfs's birth and change times, a directory's, a control group's),
/// and a sandbox staged ahead waits for as long as the trial's previous sealed
/// process ran: made ahead, a gate run could read the length of the run before it
/// from `stat /tmp`, a channel between runs that must know nothing of each other.
///
/// `groups` are the sandbox's own control groups (host directory, and where under
/// `/sys/fs/cgroup` it appears: a v1 controller's name, or nothing for the v2 group):
/// shown read-only, so that a program can read its own bounds, and nothing else of the
/// host's cgroup tree. They were made when the sandbox was staged, so their times are
/// set to now.
pub fn new_root(groups: &[(PathBuf, &str)]) -> Result<(), Failure> {
    tmpfs("/newroot", "mode=0755,size=4m")?;
    for path in SYSTEM_PATHS {
        system_path(path)?;
    }
    dev()?;
    let proc_dir = Path::new("/newroot/proc");
    mkdir(proc_dir)?;
    mount(
        Some("proc"),
        proc_dir,
        Some("proc"),
        MsFlags::MS_NOSUID | MsFlags::MS_NODEV | MsFlags::MS_NOEXEC,
        // The program sees its own processes only: not init, whose start time would
        // tell it how long its sandbox waited to be used.
        Some("hidepid=invisible"),
    )
    .at("mounting /proc")?;
    bind(
        Path::new("/oldroot/sys"),
        Path::new("/newroot/sys"),
        false,
        false,
    )?;
    for (dir, _) in groups {
        touch(&under("/oldroot", dir)?)?;
    }
    cgroups(groups)?;
    tmpfs("/newroot/tmp", &format!("mode=1777,size={TMP_SIZE}"))?;
    Ok(())
}

/// Set a directory's access and modification times to now (and so its change time).
fn touch(dir: &Path) -> Result<(), Failure> {
    use nix::sys::stat::{utimensat, UtimensatFlags};
    use nix::sys::time::TimeSpec;
    let now = TimeSpec::UTIME_NOW;
    utimensat(
        nix::fcntl::AT_FDCWD,
        dir,
        &now,
        &now,
        UtimensatFlags::NoFollowSymlink,
    )
    .at(format!("setting the times of {}", dir.display()))
}

fn cgroups(groups: &[(PathBuf, &str)]) -> Result<(), Failure> {
    let at = Path::new("/newroot/sys/fs/cgroup");
    if groups.is_empty() || !at.is_dir() {
        return Ok(());
    }
    tmpfs(at, "mode=0755,size=64k")?;
    for (dir, name) in groups {
        let from = under("/oldroot", dir)?;
        let to = if name.is_empty() {
            at.to_path_buf()
        } else {
            at.join(name)
        };
        bind(&from, &to, false, false).map_err(|e| e.within("the sandbox's cgroup"))?;
    }
    mount(
        NONE,
        at,
        NONE,
        MsFlags::MS_REMOUNT | MsFlags::MS_RDONLY | MsFlags::MS_NOSUID | MsFlags::MS_NODEV,
        NONE,
    )
    .at("making /sys/fs/cgroup read-only")
}

/// The spec's binds on the new root ([`new_root`]), then the switch into it.
pub fn finish(spec: &SealSpec) -> Result<(), Failure> {
    for m in &spec.mounts {
        match m {
            Mount::Bind {
                source,
                target,
                writable,
            } => {
                let from = under("/oldroot", source)?;
                let to = under("/newroot", target)?;
                bind(&from, &to, *writable, true)
                    .map_err(|e| e.within(format!("bind of {}", source.display())))?;
            }
            Mount::Tmpfs { target } => {
                let to = under("/newroot", target)?;
                tmpfs(&to, &format!("mode=1777,size={TMP_SIZE}"))?;
            }
        }
    }
    // The root itself: nothing but its mounts is writable.
    mount(
        NONE,
        "/newroot",
        NONE,
        MsFlags::MS_REMOUNT | MsFlags::MS_RDONLY | MsFlags::MS_NOSUID,
        NONE,
    )
    .at("making the root read-only")?;

    // Make /newroot the root, then detach the staging root and, under it, the host's
    // (one detach: each costs an RCU grace period).
    nix::unistd::chdir("/newroot").at("chdir /newroot")?;
    nix::unistd::pivot_root(".", ".").at("pivot_root to the new root")?;
    umount2(".", MntFlags::MNT_DETACH).at("detaching the staging root")?;
    nix::unistd::chdir("/").at("chdir / in the new root")?;
    Ok(())
}

/// `path` (absolute, no `..`) re-rooted under `root`.
pub(crate) fn under(root: &str, path: &Path) -> Result<PathBuf, Failure> {
    if !path.is_absolute() || path.components().any(|c| c == Component::ParentDir) {
        return Err(Failure::refused(
            format!("sandbox path {}", path.display()),
            "not absolute or has `..`",
        ));
    }
    let rel = path.strip_prefix("/").unwrap_or(path);
    Ok(Path::new(root).join(rel))
}

fn system_path(path: &str) -> Result<(), Failure> {
    let from = under("/oldroot", Path::new(path))?;
    let to = under("/newroot", Path::new(path))?;
    let Ok(meta) = std::fs::symlink_metadata(&from) else {
        return Ok(());
    };
    if meta.file_type().is_symlink() {
        let target = std::fs::read_link(&from).at(path)?;
        return symlink(&target, &to).at(format!("symlink {path}"));
    }
    if meta.is_dir() {
        return bind(&from, &to, false, true);
    }
    Ok(())
}

fn dev() -> Result<(), Failure> {
    let dev = Path::new("/newroot/dev");
    tmpfs(dev, "mode=0755")?;
    for name in DEVICES {
        let from = Path::new("/oldroot/dev").join(name);
        if from.exists() {
            bind_dev(&from, &dev.join(name))?;
        }
    }
    for (name, target) in [
        ("fd", "/proc/self/fd"),
        ("stdin", "/proc/self/fd/0"),
        ("stdout", "/proc/self/fd/1"),
        ("stderr", "/proc/self/fd/2"),
        ("ptmx", "pts/ptmx"),
    ] {
        symlink(target, dev.join(name)).at(format!("/dev/{name}"))?;
    }
    let pts = dev.join("pts");
    mkdir(&pts)?;
    mount(
        Some("devpts"),
        &pts,
        Some("devpts"),
        MsFlags::MS_NOSUID | MsFlags::MS_NOEXEC,
        Some("newinstance,ptmxmode=0666,mode=620"),
    )
    .at("mounting /dev/pts")?;
    // Chromium keeps its shared memory here.
    tmpfs(dev.join("shm"), &format!("mode=1777,size={SHM_SIZE}"))?;
    Ok(())
}

fn bind_dev(from: &Path, to: &Path) -> Result<(), Failure> {
    std::fs::File::create(to).at(to.display().to_string())?;
    mount(Some(from), to, NONE, MsFlags::MS_BIND, NONE)
        .at(format!("binding {}", from.display()))?;
    Ok(())
}

/// Bind `from` at `to` (creating the mount point), then remount with the flags the
/// view asks for: read-only unless `writable`, never setuid or device files.
fn bind(from: &Path, to: &Path, writable: bool, recursive: bool) -> Result<(), Failure> {
    let meta = std::fs::metadata(from).at(from.display().to_string())?;
    if meta.is_dir() {
        mkdir(to)?;
    } else {
        if let Some(parent) = to.parent() {
            mkdir(parent)?;
        }
        if !to.exists() {
            std::fs::File::create(to).at(to.display().to_string())?;
        }
    }
    let mut flags = MsFlags::MS_BIND;
    if recursive {
        flags |= MsFlags::MS_REC;
    }
    mount(Some(from), to, NONE, flags, NONE).at(format!("binding {}", from.display()))?;
    let mut remount =
        MsFlags::MS_REMOUNT | MsFlags::MS_BIND | MsFlags::MS_NOSUID | MsFlags::MS_NODEV;
    if !writable {
        remount |= MsFlags::MS_RDONLY;
    }
    mount(NONE, to, NONE, remount, NONE).at(format!("remounting {}", to.display()))?;
    Ok(())
}

fn tmpfs(at: impl AsRef<Path>, options: &str) -> Result<(), Failure> {
    let at = at.as_ref();
    mkdir(at)?;
    mount(
        Some("tmpfs"),
        at,
        Some("tmpfs"),
        MsFlags::MS_NOSUID | MsFlags::MS_NODEV,
        Some(options),
    )
    .at(format!("mounting a tmpfs on {}", at.display()))
}

fn mkdir(path: &Path) -> Result<(), Failure> {
    std::fs::create_dir_all(path).at(format!("creating {}", path.display()))
}
