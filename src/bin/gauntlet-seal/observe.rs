//! What the sandbox's processes open, seen by the kernel (fanotify) and written by init
//! to a file outside the sandbox's view.
//!
//! Why filesystem marks and not mount marks: a mount mark covers one mount, and a
//! process of the sandbox may make its own mount namespace (user namespaces are allowed:
//! Codex's tool sandbox is bubblewrap), whose copies of the mounts carry no mark. A
//! filesystem mark sees every open of every file on that filesystem, through any mount
//! of any namespace, so it also sees the host's: those come with PID 0, because the
//! kernel numbers the opener in the reader's PID namespace and init reads from the
//! sandbox's own. Only openers with a number here are the sandbox's, and init itself
//! (PID 1) is left out.
//!
//! The queue is unbounded, and the kernel charges it to init's control group, which is
//! the sandbox's: a trial that floods it spends its own memory bound, and what the
//! kernel cannot queue any more is an overflow, which makes the observation incomplete.

use std::collections::{HashMap, HashSet};
use std::fs::File;
use std::io::{BufWriter, Write};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd};
use std::path::Path;
use std::time::Instant;

use gauntlet::evidence::observed::{self, End, Line, Open, OpenAccess, MAX_OPENS};
use nix::errno::Errno;
use nix::sys::fanotify::{EventFFlags, Fanotify, InitFlags, MarkFlags, MaskFlags};

/// Filesystem types not watched: nothing of the product or of other trials lives on
/// them, and some (`/proc`) cannot hand the reader a descriptor for a file whose
/// process has gone.
const UNWATCHED: &[&str] = &[
    "proc", "sysfs", "devtmpfs", "devpts", "cgroup", "cgroup2", "mqueue",
];

/// Events handled per call of [`Observer::drain`] while the program runs, so that a
/// flood of opens never keeps init from its signals.
const BUDGET: usize = 4096;

/// The observation file, opened through the staging root before the host's root is
/// detached. Created new: a file that is already there is not init's.
pub fn create(path: &Path) -> Result<File, String> {
    let at = crate::root::under("/oldroot", path)?;
    std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&at)
        .map_err(|e| format!("creating the observation file {}: {e}", path.display()))
}

pub struct Observer {
    fan: Option<Fanotify>,
    out: BufWriter<File>,
    seen: HashSet<(String, OpenAccess)>,
    /// The program each PID last executed (its loader aside): who opened a file, when
    /// the process is gone before init can ask it. Bounded by the PID space.
    programs: HashMap<i32, String>,
    start: Instant,
    end: End,
}

impl Observer {
    /// Watch every filesystem mounted in the sandbox. Called in the new root, before
    /// the program is forked, so that its first exec is seen. A failure is recorded
    /// in the file and leaves the observation incomplete; the program still runs.
    pub fn start(out: File) -> Observer {
        let mut o = Observer {
            fan: None,
            out: BufWriter::new(out),
            seen: HashSet::new(),
            programs: HashMap::new(),
            start: Instant::now(),
            end: End::default(),
        };
        let (mut watched, mut unwatched) = (Vec::new(), Vec::new());
        match Fanotify::init(
            InitFlags::FAN_CLASS_NOTIF
                | InitFlags::FAN_CLOEXEC
                | InitFlags::FAN_NONBLOCK
                | InitFlags::FAN_UNLIMITED_QUEUE,
            EventFFlags::O_RDONLY
                | EventFFlags::O_LARGEFILE
                | EventFFlags::O_CLOEXEC
                // A FIFO the program made must not block init when it is handed one.
                | EventFFlags::O_NONBLOCK,
        ) {
            Err(e) => o.end.error = Some(format!("fanotify_init: {e}")),
            Ok(fan) => {
                let mask = MaskFlags::FAN_OPEN
                    | MaskFlags::FAN_OPEN_EXEC
                    | MaskFlags::FAN_CLOSE_WRITE
                    | MaskFlags::FAN_ONDIR;
                match mounts() {
                    Err(e) => o.end.error = Some(e),
                    Ok(mounts) => {
                        for (point, fstype) in mounts {
                            if UNWATCHED.contains(&fstype.as_str()) {
                                unwatched.push(format!("{point} ({fstype})"));
                                continue;
                            }
                            let marked = fan.mark(
                                MarkFlags::FAN_MARK_ADD | MarkFlags::FAN_MARK_FILESYSTEM,
                                mask,
                                nix::fcntl::AT_FDCWD,
                                Some(Path::new(&point)),
                            );
                            match marked {
                                Ok(()) => watched.push(point),
                                Err(e) => {
                                    o.end.error.get_or_insert_with(|| {
                                        format!("fanotify_mark of {point} ({fstype}): {e}")
                                    });
                                    unwatched.push(format!("{point} ({fstype}): {e}"));
                                }
                            }
                        }
                    }
                }
                o.fan = Some(fan);
            }
        }
        o.write(&Line::Start { watched, unwatched });
        let _ = o.out.flush();
        o
    }

    pub fn fd(&self) -> Option<BorrowedFd<'_>> {
        self.fan.as_ref().map(|f| f.as_fd())
    }

    /// Read what is queued, at most [`BUDGET`] events, and write what is new.
    pub fn drain(&mut self) {
        self.read(BUDGET);
        let _ = self.out.flush();
    }

    /// Read everything still queued (the program and its stragglers are gone: nothing
    /// new arrives but the host's), write the end line and close the file.
    pub fn finish(mut self) {
        self.read(usize::MAX);
        let end = std::mem::take(&mut self.end);
        self.write(&Line::End(end));
        let _ = self.out.flush();
    }

    fn read(&mut self, budget: usize) {
        let Some(fan) = self.fan.take() else {
            return;
        };
        let mut handled = 0;
        while handled < budget {
            let events = match fan.read_events() {
                Ok(ev) if ev.is_empty() => break,
                Ok(ev) => ev,
                Err(Errno::EAGAIN) => break,
                Err(Errno::EINTR) => continue,
                Err(_) => {
                    // The kernel could not hand over an event (a file it could not
                    // reopen): that open is lost.
                    self.end.read_errors += 1;
                    handled += 1;
                    continue;
                }
            };
            handled += events.len();
            for ev in events {
                let mask = ev.mask();
                if mask.contains(MaskFlags::FAN_Q_OVERFLOW) {
                    self.end.overflow = true;
                    continue;
                }
                let pid = ev.pid();
                if pid <= 1 {
                    continue;
                }
                let Some(fd) = ev.fd() else { continue };
                self.end.events += 1;
                self.record(pid, mask, fd);
            }
        }
        self.fan = Some(fan);
    }

    fn record(&mut self, pid: i32, mask: MaskFlags, fd: BorrowedFd<'_>) {
        let path = match std::fs::read_link(format!("/proc/self/fd/{}", fd.as_raw_fd())) {
            Ok(p) => p.to_string_lossy().into_owned(),
            Err(_) => {
                self.end.read_errors += 1;
                return;
            }
        };
        let dir =
            nix::sys::stat::fstat(fd).is_ok_and(|s| s.st_mode & libc::S_IFMT == libc::S_IFDIR);
        let mut accesses = Vec::with_capacity(2);
        if mask.contains(MaskFlags::FAN_OPEN_EXEC) {
            let name = path.rsplit('/').next().unwrap_or("").to_owned();
            if !name.starts_with("ld-linux") && !name.starts_with("ld.so") {
                self.programs.insert(pid, name);
            }
            accesses.push(OpenAccess::Exec);
        } else if mask.contains(MaskFlags::FAN_OPEN) {
            accesses.push(if dir {
                OpenAccess::List
            } else {
                OpenAccess::Read
            });
        }
        if mask.contains(MaskFlags::FAN_CLOSE_WRITE) {
            accesses.push(OpenAccess::Write);
        }
        for access in accesses {
            let key = (path.clone(), access);
            if self.seen.contains(&key) {
                continue;
            }
            // Past the bound nothing more is kept, not even in memory: every further
            // unseen open counts as dropped (some may be repeats).
            if self.end.distinct >= MAX_OPENS {
                self.end.dropped += 1;
                continue;
            }
            let process = std::fs::read_to_string(format!("/proc/{pid}/comm"))
                .ok()
                .map(|s| s.trim_end().to_owned())
                .or_else(|| self.programs.get(&pid).cloned());
            self.end.distinct += 1;
            let line = Line::Open(Open {
                ms: u64::try_from(self.start.elapsed().as_millis()).unwrap_or(u64::MAX),
                pid,
                process,
                access,
                path: key.0.clone(),
            });
            self.seen.insert(key);
            self.write(&line);
        }
    }

    fn write(&mut self, line: &Line) {
        if self.out.write_all(&observed::line(line)).is_err() {
            self.end
                .error
                .get_or_insert_with(|| "writing the observation file failed".into());
        }
    }
}

/// The sandbox's mount points and their filesystem types, from its mountinfo.
fn mounts() -> Result<Vec<(String, String)>, String> {
    let info = std::fs::read_to_string("/proc/self/mountinfo")
        .map_err(|e| format!("reading /proc/self/mountinfo: {e}"))?;
    let mut out = Vec::new();
    for line in info.lines() {
        let fields: Vec<&str> = line.split(' ').collect();
        let Some(sep) = fields.iter().position(|f| *f == "-") else {
            continue;
        };
        let (Some(point), Some(fstype)) = (fields.get(4), fields.get(sep + 1)) else {
            continue;
        };
        out.push((unescape(point), (*fstype).to_owned()));
    }
    Ok(out)
}

/// Mountinfo escapes space, tab, newline and backslash as `\ooo`.
fn unescape(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let octal = b
            .get(i + 1..i + 4)
            .filter(|d| d.iter().all(|c| (b'0'..=b'7').contains(c)));
        if let (b'\\', Some(d)) = (b[i], octal) {
            let v =
                u32::from(d[0] - b'0') * 64 + u32::from(d[1] - b'0') * 8 + u32::from(d[2] - b'0');
            out.push(u8::try_from(v).unwrap_or(b'?'));
            i += 4;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}
