//! The sandbox's share of the machine: a control group of its own, so that its number
//! of tasks and its memory are bounded per sandbox. Without it the only bound on
//! processes is `RLIMIT_NPROC`, which counts per user, and every sandbox runs as the
//! same one: a fork bomb in one trial would make forks fail in the trials beside it.
//!
//! Init joins the group before it forks anything, so everything of the sandbox is in
//! it. Init does not leave it at the end: moving a process between groups waits for an
//! RCU grace period while holding the lock every other cgroup change waits on (tens of
//! milliseconds here), which would stall the next sandboxes' start. The group is empty
//! once init has exited, and the next sandbox to start removes every empty group of a
//! finished one beside its own. Where the machine has no usable
//! controller (cgroup v1 `pids`/`memory` hierarchies, or the cgroup v2 root with those
//! controllers), the sandbox runs without and says so in its report.

use crate::failure::{At, Failure};
use std::fs::File;
use std::io::Write;
use std::os::fd::{AsFd, OwnedFd};
use std::path::{Path, PathBuf};

use gauntlet::sys::sandbox::{Limits, Mount, SealSpec};
use nix::fcntl::{openat, OFlag};
use nix::sys::stat::Mode;

/// Every sandbox's group is named this and its helper's pid.
pub const GROUP_PREFIX: &str = "gauntlet-seal-";

/// One group this sandbox made: in one hierarchy, a directory of its own under the
/// harness's group.
struct Group {
    /// The harness's group (the parent), open: the sandbox's root hides the host's.
    parent: OwnedFd,
    /// This group's directory on the host.
    dir: PathBuf,
    /// Where the sandbox sees it under `/sys/fs/cgroup`: the v1 controller, or `""`
    /// for the v2 group.
    shown_as: &'static str,
    name: String,
    /// The limit files of the group, by the controller they belong to.
    pids_max: Option<&'static str>,
    memory_max: Option<&'static str>,
}

/// The groups of one sandbox, one per hierarchy that bounds it.
pub struct Cgroups {
    groups: Vec<Group>,
}

/// Where one controller of this process lives.
#[derive(Debug, PartialEq, Eq)]
struct Placement {
    /// The directory of this process's group.
    dir: PathBuf,
    version: u8,
}

impl Cgroups {
    /// Make a group per usable hierarchy and move the calling process into each. None
    /// usable: no groups, and [`Cgroups::applied`] says so.
    pub fn join(name: &str) -> Cgroups {
        let cgroup = std::fs::read_to_string("/proc/self/cgroup").unwrap_or_default();
        let mountinfo = std::fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
        let mut groups: Vec<(PathBuf, Group)> = Vec::new();
        for (controller, v2_file, v1_file) in [
            ("pids", "pids.max", "pids.max"),
            ("memory", "memory.max", "memory.limit_in_bytes"),
        ] {
            let Some(place) = placement(controller, &cgroup, &mountinfo) else {
                continue;
            };
            if place.version == 2 && !enable_v2(&place.dir, controller) {
                continue;
            }
            let file = if place.version == 1 { v1_file } else { v2_file };
            // Under cgroup v2 one group holds both controllers.
            let at = match groups.iter().position(|(dir, _)| *dir == place.dir) {
                Some(at) => at,
                None => {
                    let shown_as = if place.version == 1 { controller } else { "" };
                    let Some(group) = make(&place.dir, name, shown_as) else {
                        continue;
                    };
                    groups.push((place.dir, group));
                    groups.len() - 1
                }
            };
            let group = &mut groups[at].1;
            if controller == "pids" {
                group.pids_max = Some(file);
            } else {
                group.memory_max = Some(file);
            }
        }
        Cgroups {
            groups: groups.into_iter().map(|(_, g)| g).collect(),
        }
    }

    /// Each group's host directory and where the sandbox sees it (see `root::stage`).
    pub fn shown(&self) -> Vec<(PathBuf, &'static str)> {
        self.groups
            .iter()
            .map(|g| (g.dir.clone(), g.shown_as))
            .collect()
    }

    /// Whether the sandbox's tasks are bounded by a group of its own.
    pub fn applied(&self) -> bool {
        self.groups.iter().any(|g| g.pids_max.is_some())
    }

    /// Write the spec's limits.
    pub fn limit(&self, limits: &Limits) -> Result<(), Failure> {
        for g in &self.groups {
            if let Some(file) = g.pids_max {
                write_at(&g.parent, &format!("{}/{file}", g.name), limits.tasks)?;
            }
            if let Some(file) = g.memory_max {
                write_at(
                    &g.parent,
                    &format!("{}/{file}", g.name),
                    limits.memory_bytes,
                )?;
            }
        }
        Ok(())
    }
}

/// Create `name` under `dir`, open `dir`, and move the calling process into the new
/// group.
fn make(dir: &Path, name: &str, shown_as: &'static str) -> Option<Group> {
    let parent = File::open(dir).ok().map(OwnedFd::from)?;
    // A sandbox starting beside this one may take the new group for a finished one's
    // and remove it before this process is in it: then make it again.
    for _ in 0..3 {
        let _ = std::fs::remove_dir(dir.join(name));
        if std::fs::create_dir(dir.join(name)).is_err() {
            continue;
        }
        if write_at(&parent, &format!("{name}/cgroup.procs"), 0).is_ok() {
            remove_finished(dir, name);
            return Some(Group {
                parent,
                dir: dir.join(name),
                shown_as,
                name: name.to_string(),
                pids_max: None,
                memory_max: None,
            });
        }
    }
    let _ = std::fs::remove_dir(dir.join(name));
    None
}

/// Remove the groups of finished sandboxes under `dir`: a group with a process in it
/// (a sandbox still running) refuses to be removed.
fn remove_finished(dir: &Path, own: &str) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(name) = name.to_str() else {
            continue;
        };
        if name != own && name.starts_with(GROUP_PREFIX) {
            let _ = std::fs::remove_dir(entry.path());
        }
    }
}

fn write_at(dir: &OwnedFd, file: &str, value: u64) -> Result<(), Failure> {
    let fd = openat(
        dir.as_fd(),
        file,
        OFlag::O_WRONLY | OFlag::O_CLOEXEC,
        Mode::empty(),
    )
    .at(format!("cgroup file {file}"))?;
    File::from(fd)
        .write_all(value.to_string().as_bytes())
        .at(format!("writing {value} to cgroup file {file}"))
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

/// The room a sandbox must leave on the disks of its writable binds (its workspace and
/// HOME live on the host's disk, where no quota applies): when one falls below its floor
/// the program is stopped, before a disk hog fills the machine's disk under every other
/// trial and the harness's own records. The floor is 5% of the filesystem, at most
/// [`MAX_DISK_FLOOR`].
pub struct DiskFloor {
    dirs: Vec<PathBuf>,
}

/// The most room kept free on a large disk.
pub const MAX_DISK_FLOOR: u64 = 2 << 30;

impl DiskFloor {
    pub fn of(spec: &SealSpec) -> DiskFloor {
        let dirs = spec
            .mounts
            .iter()
            .filter_map(|m| match m {
                Mount::Bind {
                    target,
                    writable: true,
                    ..
                } => Some(target.clone()),
                _ => None,
            })
            .collect();
        DiskFloor { dirs }
    }

    /// Why the program must stop, if a disk is below its floor.
    pub fn low(&self) -> Option<String> {
        for dir in &self.dirs {
            let Ok(fs) = nix::sys::statvfs::statvfs(dir) else {
                continue;
            };
            let unit = fs.fragment_size();
            let total = fs.blocks().saturating_mul(unit);
            let free = fs.blocks_available().saturating_mul(unit);
            let floor = (total / 20).min(MAX_DISK_FLOOR);
            if free < floor {
                return Some(format!(
                    "the disk of {} has {} KiB free, below the {} KiB a sandbox must leave",
                    dir.display(),
                    free >> 10,
                    floor >> 10
                ));
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
