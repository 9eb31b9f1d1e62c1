//! The sandbox's share of the machine: a control group of its own, so that its number
//! of tasks and its memory are bounded per sandbox (`gauntlet::sys::cgroup`, which the
//! reaper of every program run outside a sandbox uses too), and a floor of free room
//! on the disks it writes.
//!
//! Init joins the group before it forks anything, so everything of the sandbox is in
//! it, and never leaves it; the next sandbox to start removes the empty groups of
//! finished ones. Where the machine has no usable controller the sandbox runs without
//! and says so in its report.

use std::path::PathBuf;

use gauntlet::sys::sandbox::{Mount, SealSpec};

pub use gauntlet::sys::cgroup::Cgroups;

/// Every sandbox's group is named this and its helper's pid.
pub const GROUP_PREFIX: &str = "gauntlet-seal-";

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
