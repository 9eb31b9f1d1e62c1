//! A control group of a process's own, bounding the tasks and memory of everything it
//! starts: the one way a sealed sandbox (`gauntlet-seal`'s init) and a reaped program
//! outside every sandbox (`gauntlet-reap`: an app, a CLI app's run for a claimed test)
//! are held to their [`Limits`]. Without a group of its own the only bound on processes
//! is `RLIMIT_NPROC`, which counts per user, and every sandbox runs as the same one
//! (the reaped programs as root, whom it does not bound at all): a fork bomb in one
//! trial would make forks fail in the trials beside it, or on the whole machine.
//!
//! The process joins its group before it forks anything, so everything it starts is in
//! it. It does not leave it at the end: moving a process between groups waits for an RCU
//! grace period while holding the lock every other cgroup change waits on (tens of
//! milliseconds here), which would stall the next groups' start. The group is empty
//! once the process has exited, and the next process of the same kind to join a group
//! removes every empty group of a finished one beside its own. Where the machine has
//! no usable controller (cgroup v1 `pids`/`memory` hierarchies, or the cgroup v2 root
//! with those controllers), the process runs without one and its report says so.

use std::fs::File;
use std::io::{Read, Write};
use std::os::fd::{AsFd, OwnedFd};
use std::path::{Path, PathBuf};

use nix::fcntl::{openat, OFlag};
use nix::sys::stat::Mode;

use super::sandbox::Limits;

/// Why a bound could not be written into a group.
#[derive(Debug, thiserror::Error)]
#[error("cannot write {value} to cgroup file {file}: {source}")]
pub struct CgroupError {
    pub file: String,
    pub value: u64,
    #[source]
    pub source: std::io::Error,
}

/// One group this process made: in one hierarchy, a directory of its own under the
/// group it was started in.
struct Group {
    /// The parent group, open: a sandbox's root hides the host's.
    parent: OwnedFd,
    /// This group's directory on the host.
    dir: PathBuf,
    /// Where a sandbox sees it under `/sys/fs/cgroup`: the v1 controller, or `""` for
    /// the v2 group.
    shown_as: &'static str,
    name: String,
    /// The files of the group, by the controller they belong to.
    pids: Option<Files>,
    memory: Option<Files>,
}

/// A controller's files in one hierarchy's group: its limit, the file that counts the
/// times the limit was met (and the line of it that does), and the peak of its usage.
#[derive(Clone, Copy)]
struct Files {
    max: &'static str,
    events: &'static str,
    event: &'static str,
    peak: Option<&'static str>,
}

const PIDS: Files = Files {
    max: "pids.max",
    events: "pids.events",
    event: "max",
    peak: None,
};
const MEMORY_V2: Files = Files {
    max: "memory.max",
    events: "memory.events",
    event: "oom_kill",
    peak: Some("memory.peak"),
};
const MEMORY_V1: Files = Files {
    max: "memory.limit_in_bytes",
    events: "memory.oom_control",
    event: "oom_kill",
    peak: Some("memory.max_usage_in_bytes"),
};

/// The groups of one process, one per hierarchy that bounds it.
pub struct Cgroups {
    groups: Vec<Group>,
}

/// What a group's counters say once its processes have ended.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Usage {
    /// A fork failed because the group held as many tasks as it may.
    pub tasks_exceeded: bool,
    /// The kernel killed a process of the group for its memory.
    pub memory_exceeded: bool,
    /// The most memory the group held at once, where the kernel keeps the figure.
    pub memory_peak_bytes: Option<u64>,
}

/// Where one controller of this process lives.
#[derive(Debug, PartialEq, Eq)]
struct Placement {
    /// The directory of this process's group.
    dir: PathBuf,
    version: u8,
}

impl Cgroups {
    /// Make a group named `name` per usable hierarchy and move the calling process into
    /// each. Names are `<kind>-<id>` (`gauntlet-seal-<pid>`): the empty groups of
    /// finished processes of the same kind beside it are removed. None usable: no
    /// groups, and [`Cgroups::applied`] says so.
    pub fn join(name: &str) -> Cgroups {
        let cgroup = std::fs::read_to_string("/proc/self/cgroup").unwrap_or_default();
        let mountinfo = std::fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
        let kind = match name.rfind('-') {
            Some(at) => &name[..=at],
            None => name,
        };
        let mut groups: Vec<(PathBuf, Group)> = Vec::new();
        for controller in ["pids", "memory"] {
            let Some(place) = placement(controller, &cgroup, &mountinfo) else {
                continue;
            };
            if place.version == 2 && !enable_v2(&place.dir, controller) {
                continue;
            }
            let files = match (controller, place.version) {
                ("pids", _) => PIDS,
                (_, 1) => MEMORY_V1,
                _ => MEMORY_V2,
            };
            // Under cgroup v2 one group holds both controllers.
            let at = match groups.iter().position(|(dir, _)| *dir == place.dir) {
                Some(at) => at,
                None => {
                    let shown_as = if place.version == 1 { controller } else { "" };
                    let Some(group) = make(&place.dir, name, kind, shown_as) else {
                        continue;
                    };
                    groups.push((place.dir, group));
                    groups.len() - 1
                }
            };
            let group = &mut groups[at].1;
            if controller == "pids" {
                group.pids = Some(files);
            } else {
                group.memory = Some(files);
            }
        }
        Cgroups {
            groups: groups.into_iter().map(|(_, g)| g).collect(),
        }
    }

    /// Each group's host directory and where a sandbox sees it (`gauntlet-seal`'s
    /// `root::stage`).
    pub fn shown(&self) -> Vec<(PathBuf, &'static str)> {
        self.groups
            .iter()
            .map(|g| (g.dir.clone(), g.shown_as))
            .collect()
    }

    /// Whether the process's tasks are bounded by a group of its own.
    pub fn applied(&self) -> bool {
        self.groups.iter().any(|g| g.pids.is_some())
    }

    /// Write `limits` into the groups.
    pub fn limit(&self, limits: &Limits) -> Result<(), CgroupError> {
        for g in &self.groups {
            if let Some(files) = g.pids {
                write_at(
                    &g.parent,
                    &format!("{}/{}", g.name, files.max),
                    limits.tasks,
                )?;
            }
            if let Some(files) = g.memory {
                write_at(
                    &g.parent,
                    &format!("{}/{}", g.name, files.max),
                    limits.memory_bytes,
                )?;
            }
        }
        Ok(())
    }

    /// What the groups' counters say: whether a bound was met, and the memory peak. A
    /// counter that cannot be read says nothing was exceeded.
    pub fn usage(&self) -> Usage {
        let mut usage = Usage::default();
        for g in &self.groups {
            let count = |files: Files| {
                read_at(&g.parent, &format!("{}/{}", g.name, files.events))
                    .and_then(|text| event_count(&text, files.event))
                    .unwrap_or(0)
            };
            if let Some(files) = g.pids {
                usage.tasks_exceeded |= count(files) > 0;
            }
            if let Some(files) = g.memory {
                usage.memory_exceeded |= count(files) > 0;
                usage.memory_peak_bytes = files
                    .peak
                    .and_then(|peak| read_at(&g.parent, &format!("{}/{peak}", g.name)))
                    .and_then(|text| text.trim().parse().ok());
            }
        }
        usage
    }
}

/// The count on the line `name <count>` of a cgroup events file.
fn event_count(text: &str, name: &str) -> Option<u64> {
    text.lines().find_map(|line| {
        let (key, value) = line.split_once(' ')?;
        (key == name).then(|| value.trim().parse().ok()).flatten()
    })
}

/// Create `name` under `dir`, open `dir`, and move the calling process into the new
/// group.
fn make(dir: &Path, name: &str, kind: &str, shown_as: &'static str) -> Option<Group> {
    let parent = File::open(dir).ok().map(OwnedFd::from)?;
    // A process starting beside this one may take the new group for a finished one's
    // and remove it before this process is in it: then make it again.
    for _ in 0..3 {
        let _ = std::fs::remove_dir(dir.join(name));
        if std::fs::create_dir(dir.join(name)).is_err() {
            continue;
        }
        if write_at(&parent, &format!("{name}/cgroup.procs"), 0).is_ok() {
            remove_finished(dir, name, kind);
            return Some(Group {
                parent,
                dir: dir.join(name),
                shown_as,
                name: name.to_string(),
                pids: None,
                memory: None,
            });
        }
    }
    let _ = std::fs::remove_dir(dir.join(name));
    None
}

/// Remove the groups of finished processes of `kind` under `dir`: a group with a
/// process in it (one still running) refuses to be removed.
///
/// Only the groups whose named process is gone are tried. Every attempt takes the lock
/// every cgroup change of the machine waits on, even one the kernel refuses, and each
/// process of a kind that joins would otherwise try every running sibling's group: a
/// cost that grows with the square of the sandboxes running at once. A group named
/// after a live process (its own, or one whose pid was reused) is left to a later
/// joiner; an empty group left a while costs nothing.
fn remove_finished(dir: &Path, own: &str, kind: &str) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(name) = name.to_str() else {
            continue;
        };
        if name != own && name.starts_with(kind) && !owner_alive(&name[kind.len()..]) {
            let _ = std::fs::remove_dir(entry.path());
        }
    }
}

/// Whether the process a group is named after (`<kind>-<pid>`: a reaper, a sandbox's
/// helper) still exists, as `/proc` shows it. Those pids are numbered in the
/// harness's PID namespace, the one the `/proc` a joiner sees was mounted for (a
/// sandbox's init joins before it mounts a `/proc` of its own). A suffix that is not a
/// pid is never taken for a live process.
fn owner_alive(suffix: &str) -> bool {
    suffix
        .parse::<u32>()
        .is_ok_and(|pid| pid > 0 && Path::new("/proc").join(pid.to_string()).exists())
}

fn write_at(dir: &OwnedFd, file: &str, value: u64) -> Result<(), CgroupError> {
    let err = |source| CgroupError {
        file: file.to_string(),
        value,
        source,
    };
    let fd = openat(
        dir.as_fd(),
        file,
        OFlag::O_WRONLY | OFlag::O_CLOEXEC,
        Mode::empty(),
    )
    .map_err(|e| err(e.into()))?;
    File::from(fd)
        .write_all(value.to_string().as_bytes())
        .map_err(err)
}

/// A small cgroup file's text (the kernel's own, a few lines at most).
fn read_at(dir: &OwnedFd, file: &str) -> Option<String> {
    let fd = openat(
        dir.as_fd(),
        file,
        OFlag::O_RDONLY | OFlag::O_CLOEXEC,
        Mode::empty(),
    )
    .ok()?;
    let mut text = String::new();
    File::from(fd)
        .take(64 << 10)
        .read_to_string(&mut text)
        .ok()?;
    Some(text)
}

/// cgroup v2: a child group only gets a controller the parent enables for its
/// children, and only a root group may both hold processes and enable controllers.
fn enable_v2(dir: &Path, controller: &str) -> bool {
    let enabled = |d: &Path| {
        std::fs::read_to_string(d.join("cgroup.subtree_control"))
            .is_ok_and(|s| s.split_whitespace().any(|c| c == controller))
    };
    enabled(dir)
        || (std::fs::OpenOptions::new()
            .write(true)
            .open(dir.join("cgroup.subtree_control"))
            .and_then(|mut f| f.write_all(format!("+{controller}").as_bytes()))
            .is_ok()
            && enabled(dir))
}

/// The directory of this process's group for `controller`: a cgroup v1 hierarchy of
/// its own if one is mounted, else the v2 hierarchy if it offers the controller.
fn placement(controller: &str, cgroup: &str, mountinfo: &str) -> Option<Placement> {
    let mut v2 = None;
    for line in cgroup.lines() {
        let mut parts = line.splitn(3, ':');
        let (Some(_), Some(controllers), Some(path)) = (parts.next(), parts.next(), parts.next())
        else {
            continue;
        };
        if controllers.is_empty() {
            v2 = Some(path);
            continue;
        }
        if controllers.split(',').any(|c| c == controller) {
            let mount = mounts(mountinfo)
                .find(|m| m.fstype == "cgroup" && m.options.split(',').any(|o| o == controller))?;
            return Some(Placement {
                dir: mount.dir_for(path)?,
                version: 1,
            });
        }
    }
    let path = v2?;
    let mount = mounts(mountinfo).find(|m| m.fstype == "cgroup2")?;
    let dir = mount.dir_for(path)?;
    let offered = std::fs::read_to_string(dir.join("cgroup.controllers"))
        .is_ok_and(|s| s.split_whitespace().any(|c| c == controller));
    offered.then_some(Placement { dir, version: 2 })
}

struct CgroupMount<'a> {
    root: &'a str,
    mount_point: &'a str,
    fstype: &'a str,
    options: &'a str,
}

impl CgroupMount<'_> {
    /// `path` (as `/proc/self/cgroup` names it, from the hierarchy's root) under this
    /// mount, which may show only a subtree of the hierarchy.
    fn dir_for(&self, path: &str) -> Option<PathBuf> {
        let rel = if self.root == "/" {
            path
        } else {
            path.strip_prefix(self.root)?
        };
        Some(Path::new(self.mount_point).join(rel.trim_start_matches('/')))
    }
}

fn mounts(mountinfo: &str) -> impl Iterator<Item = CgroupMount<'_>> {
    mountinfo.lines().filter_map(|line| {
        let (left, right) = line.split_once(" - ")?;
        let left: Vec<&str> = left.split(' ').collect();
        let mut right = right.split(' ');
        let fstype = right.next()?;
        let _source = right.next()?;
        Some(CgroupMount {
            root: left.get(3)?,
            mount_point: left.get(4)?,
            fstype,
            options: right.next().unwrap_or(""),
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_group_whose_process_is_gone_is_taken_for_finished() {
        assert!(owner_alive(&std::process::id().to_string()));
        assert!(owner_alive("1"), "pid 1 is always there");
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let pid = child.id();
        child.wait().unwrap();
        // The pid is free once the child is reaped (a reuse between here and the check
        // would take it for alive, which only leaves the group for later).
        assert!(!owner_alive(&pid.to_string()));
        for not_a_pid in ["", "x", "12x", "-1", "0"] {
            assert!(!owner_alive(not_a_pid), "{not_a_pid:?}");
        }
    }

    const MOUNTINFO: &str = "\
31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755
35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory
39 31 0:36 / /sys/fs/cgroup/pids rw,relatime - cgroup cgroup rw,pids
41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw
";

    #[test]
    fn a_v1_controller_is_found_under_its_own_hierarchy() {
        let cgroup = "8:pids:/\n4:memory:/vm/abc\n0::/\n";
        assert_eq!(
            placement("memory", cgroup, MOUNTINFO),
            Some(Placement {
                dir: PathBuf::from("/sys/fs/cgroup/memory/vm/abc"),
                version: 1
            })
        );
        assert_eq!(
            placement("pids", cgroup, MOUNTINFO).map(|p| p.dir),
            Some(PathBuf::from("/sys/fs/cgroup/pids"))
        );
    }

    #[test]
    fn a_mount_of_a_subtree_is_joined_relative_to_its_root() {
        let m = CgroupMount {
            root: "/docker/x",
            mount_point: "/sys/fs/cgroup/pids",
            fstype: "cgroup",
            options: "rw,pids",
        };
        assert_eq!(
            m.dir_for("/docker/x/inner"),
            Some(PathBuf::from("/sys/fs/cgroup/pids/inner"))
        );
        assert_eq!(m.dir_for("/elsewhere"), None);
    }

    #[test]
    fn an_event_is_counted_from_its_own_line_only() {
        let v1 = "oom_kill_disable 0\nunder_oom 0\noom_kill 2\n";
        assert_eq!(event_count(v1, "oom_kill"), Some(2));
        assert_eq!(event_count(v1, "oom"), None);
        let v2 = "low 0\nhigh 0\nmax 14\noom 1\noom_kill 1\noom_group_kill 0\n";
        assert_eq!(event_count(v2, "max"), Some(14));
        assert_eq!(event_count("max 3\n", "max"), Some(3));
        assert_eq!(event_count("", "max"), None);
    }
}
