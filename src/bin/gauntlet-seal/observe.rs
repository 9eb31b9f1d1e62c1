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
//! The path of an opened file is the path of the mount it was opened through. For
//! init's own mounts that is the path the sandbox shows. A mount the program made in
//! a namespace of its own (a bind of the repository over `/etc/hostname`, an overlay,
//! a detached `open_tree`) would name the file wherever the program put it, so such an
//! open is found again by identity: its file handle, opened through a mount of the
//! whole filesystem that init kept before it left the host's root, gives the file's
//! real path. One that cannot be found again is recorded as unresolved, which makes
//! the observation incomplete.
//!
//! The queue is unbounded, and the kernel charges it to init's control group, which is
//! the sandbox's: a trial that floods it spends its own memory bound, and what the
//! kernel cannot queue any more is an overflow, which makes the observation incomplete.

use crate::failure::{At, Failure};
use std::collections::{HashMap, HashSet};
use std::fs::File;
use std::io::{BufWriter, Write};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd};
use std::path::Path;
use std::time::Instant;

use gauntlet::evidence::observed::{
    self, End, Line, Open, OpenAccess, MAX_EXECS, MAX_EXEC_LINE_BYTES, MAX_OPENS,
    MAX_REQUEST_LINES, MAX_REQUEST_LINE_BYTES,
};
use nix::errno::Errno;
use nix::fcntl::OFlag;
use nix::sys::fanotify::{EventFFlags, Fanotify, InitFlags, MarkFlags, MaskFlags};
use nix::sys::stat::Mode;

/// Filesystem types not watched: nothing of the product or of other trials lives on
/// them, and some (`/proc`) cannot hand the reader a descriptor for a file whose
/// process has gone.
const UNWATCHED: &[&str] = &[
    "proc", "sysfs", "devtmpfs", "devpts", "cgroup", "cgroup2", "mqueue",
];

/// Events handled per call of [`Observer::drain`] while the program runs, so that a
/// flood of opens never keeps init from its signals.
const BUDGET: usize = 4096;

/// Failed reads of the queue in a row after which init stops reading it this time.
const MAX_FAILING_READS: u32 = 64;

/// How often what was seen is written out while the program runs.
const FLUSH_EVERY: std::time::Duration = std::time::Duration::from_millis(50);

/// The observation file, opened through the staging root before the host's root is
/// detached. Created new: a file that is already there is not init's.
pub fn create(path: &Path) -> Result<File, Failure> {
    let at = crate::root::under("/oldroot", path)?;
    std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&at)
        .at(format!("creating the observation file {}", path.display()))
}

/// Mounts of whole filesystems (their root is the filesystem's root), by device:
/// where a file handle is opened again. Taken before the host's root is detached (its
/// own mounts stay alive through these descriptors), so the host's filesystems are
/// among them; init never hands them to the program (close-on-exec).
pub struct FsRoots {
    roots: HashMap<u64, OwnedFd>,
    /// Every filesystem the host has mounted: those the sandbox mounts beyond these
    /// are its own, given empty.
    host: HashSet<u64>,
}

impl FsRoots {
    pub fn open() -> FsRoots {
        let mut roots = HashMap::new();
        let mut host = HashSet::new();
        // Init's root is still the staging one, which has no /proc of its own.
        for m in mounts("/newroot/proc/self/mountinfo").unwrap_or_default() {
            if m.point.starts_with("/oldroot") {
                host.insert(m.dev);
            }
            if m.root != "/" || UNWATCHED.contains(&m.fstype.as_str()) || roots.contains_key(&m.dev)
            {
                continue;
            }
            let fd = nix::fcntl::open(
                Path::new(&m.point),
                // Not O_PATH: open_by_handle_at refuses those as its mount.
                OFlag::O_RDONLY | OFlag::O_DIRECTORY | OFlag::O_CLOEXEC | OFlag::O_NOFOLLOW,
                Mode::empty(),
            );
            if let Ok(fd) = fd {
                roots.insert(m.dev, fd);
            }
        }
        FsRoots { roots, host }
    }
}

pub struct Observer {
    fan: Option<Fanotify>,
    /// Init's own mounts (their IDs cannot be reused while they are mounted, and the
    /// program cannot unmount them): a file opened through one has a true path.
    own: HashSet<u64>,
    /// Filesystems the sandbox was given empty (its tmpfs mounts): nothing on them is
    /// the host's, whatever path names it.
    private: HashSet<u64>,
    roots: FsRoots,
    out: BufWriter<File>,
    /// What was written, by the file's identity and the name it was written under: a
    /// name alone could be taken first by a decoy (a file of the sandbox's own tmpfs,
    /// mounted by the program where a forbidden one lives) to hide the real one.
    seen: HashSet<(u64, u64, String, OpenAccess)>,
    /// The program each PID last executed (its loader aside): who opened a file, when
    /// the process is gone before init can ask it. Bounded by the PID space.
    programs: HashMap<i32, String>,
    /// Every exec, seen as it is asked for ([`crate::execs`]).
    execs: Option<crate::execs::Listener>,
    /// Bytes of exec lines written, bounded by [`MAX_EXEC_LINE_BYTES`].
    exec_bytes: u64,
    /// The helper's lines about the connections it relays ([`crate::forward`]).
    relayed: Option<Relayed>,
    start: Instant,
    flushed: Instant,
    end: End,
}

impl Observer {
    /// Watch every filesystem mounted in the sandbox. Called in the new root, before
    /// the program is forked, so that its first exec is seen. A failure is recorded
    /// in the file and leaves the observation incomplete; the program still runs.
    pub fn start(out: File, roots: FsRoots, relayed: Option<(File, Vec<u16>)>) -> Observer {
        let mut o = Observer {
            fan: None,
            own: HashSet::new(),
            private: HashSet::new(),
            roots,
            out: BufWriter::new(out),
            seen: HashSet::new(),
            programs: HashMap::new(),
            execs: None,
            exec_bytes: 0,
            relayed: None,
            start: Instant::now(),
            flushed: Instant::now(),
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
                match mounts("/proc/self/mountinfo") {
                    Err(e) => o.end.error = Some(e.to_string()),
                    Ok(mounts) => {
                        o.own = mounts.iter().map(|m| m.id).collect();
                        o.private = mounts
                            .iter()
                            .map(|m| m.dev)
                            .filter(|d| !o.roots.host.contains(d))
                            .collect();
                        for MountInfo { point, fstype, .. } in mounts {
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
        // Installed last, on init itself: from here on init executes nothing.
        match crate::execs::sizes_fit().and_then(|()| crate::execs::install()) {
            Ok(fd) => o.execs = Some(crate::execs::Listener::new(fd, o.start)),
            Err(e) => o.end.exec_error = Some(e),
        }
        o.write(&Line::Start {
            watched,
            unwatched,
            execs: o.execs.is_some(),
        });
        if let Some((file, ports)) = relayed {
            match nix::fcntl::fcntl(&file, nix::fcntl::FcntlArg::F_SETFL(OFlag::O_NONBLOCK)) {
                Ok(_) => {
                    o.write(&Line::Relaying { ports });
                    o.relayed = Some(Relayed {
                        file,
                        partial: Vec::new(),
                        skipping: false,
                        lines: 0,
                        bytes: 0,
                    });
                }
                Err(e) => o.end.request_error = Some(format!("the helper's pipe: {e}")),
            }
        }
        let _ = o.out.flush();
        o
    }

    /// The helper's pipe of connection and request lines.
    pub fn relay_fd(&self) -> Option<BorrowedFd<'_>> {
        self.relayed.as_ref().map(|r| r.file.as_fd())
    }

    /// Write what the helper has said about its connections so far, whole lines only.
    pub fn drain_relayed(&mut self) {
        use std::io::Read;
        let mut buf = [0u8; 16 << 10];
        for _ in 0..BUDGET {
            let Some(r) = self.relayed.as_mut() else {
                return;
            };
            let n = match (&r.file).read(&mut buf) {
                Ok(0) => {
                    // The helper is gone: nothing more comes.
                    if !r.partial.is_empty() {
                        self.end.requests_dropped += 1;
                    }
                    self.relayed = None;
                    return;
                }
                Ok(n) => n,
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => return,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => {
                    self.end.request_error.get_or_insert(e.to_string());
                    self.relayed = None;
                    return;
                }
            };
            let mut lines = Vec::new();
            for chunk in buf[..n].split_inclusive(|b| *b == b'\n') {
                let ended = chunk.ends_with(b"\n");
                if r.skipping || r.partial.len() + chunk.len() > MAX_RELAYED_LINE {
                    // Longer than any line the helper writes: left out to its end.
                    r.partial.clear();
                    r.skipping = !ended;
                    if ended {
                        self.end.requests_dropped += 1;
                    }
                    continue;
                }
                r.partial.extend_from_slice(chunk);
                if ended {
                    lines.push(std::mem::take(&mut r.partial));
                }
            }
            for line in lines {
                let known = matches!(
                    serde_json::from_slice::<Line>(&line),
                    Ok(Line::Connection(_) | Line::Request(_) | Line::Unparsed(_))
                );
                let Some(r) = self.relayed.as_mut() else {
                    return;
                };
                let bytes = r.bytes + line.len() as u64;
                if !known || r.lines >= MAX_REQUEST_LINES || bytes > MAX_REQUEST_LINE_BYTES {
                    self.end.requests_dropped += 1;
                    continue;
                }
                r.lines += 1;
                r.bytes = bytes;
                self.write_bytes(&line);
            }
        }
    }

    pub fn fd(&self) -> Option<BorrowedFd<'_>> {
        self.fan.as_ref().map(|f| f.as_fd())
    }

    /// The exec listener, whose calls wait for init: read before anything else.
    pub fn exec_fd(&self) -> Option<BorrowedFd<'_>> {
        self.execs.as_ref().map(|l| l.fd())
    }

    /// Answer the execs waiting, at most [`BUDGET`], writing each.
    pub fn drain_execs(&mut self) {
        use crate::execs::Received;
        for _ in 0..BUDGET {
            let Some(listener) = &self.execs else { return };
            if !readable(listener.fd()) {
                return;
            }
            match listener.receive() {
                Received::Nothing => {}
                Received::Broken(why) => {
                    self.end.exec_error.get_or_insert(why);
                    self.execs = None;
                    return;
                }
                Received::Exec(exec) => {
                    self.end.execs += 1;
                    let line = observed::line(&Line::Exec(exec));
                    let bytes = self.exec_bytes + line.len() as u64;
                    if self.end.execs > MAX_EXECS || bytes > MAX_EXEC_LINE_BYTES {
                        self.end.execs_dropped += 1;
                    } else {
                        self.exec_bytes = bytes;
                        self.write_bytes(&line);
                    }
                }
            }
        }
    }

    /// Read what is queued, at most [`BUDGET`] events, and write what is new.
    pub fn drain(&mut self) {
        self.read(BUDGET);
        // Written out at least this often, so that an init killed mid-trial leaves
        // nearly all it saw; not after every event, which would be a write each.
        if self.flushed.elapsed() >= FLUSH_EVERY {
            let _ = self.out.flush();
            self.flushed = Instant::now();
        }
    }

    /// Read everything still queued (the program and its stragglers are gone: nothing
    /// new arrives but the host's), write the end line and close the file.
    pub fn finish(mut self) {
        // Every open of the sandbox is queued by now, ahead of whatever the host does
        // next: read what is queued at this moment, not until the queue is empty,
        // which a busy host may keep from ever happening.
        let queued = self.fan.as_ref().and_then(|f| {
            let mut bytes: libc::c_int = 0;
            // SAFETY: FIONREAD writes one int, the size of the queued events.
            let r = unsafe { libc::ioctl(f.as_fd().as_raw_fd(), libc::FIONREAD, &mut bytes) };
            (r == 0).then(|| {
                usize::try_from(bytes).unwrap_or(0)
                    / std::mem::size_of::<libc::fanotify_event_metadata>()
                    + 1
            })
        });
        self.read(queued.unwrap_or(usize::MAX));
        // The helper wrote each line before the bytes it describes went on: what
        // reached the host is in the pipe by now.
        self.drain_relayed();
        let end = std::mem::take(&mut self.end);
        self.write(&Line::End(end));
        let _ = self.out.flush();
        // Closing a fanotify group waits for an RCU grace period (docs/challenges.md,
        // "Observed execs"), and init's report would wait with it: the descriptor is
        // left for init's exit to close, which nothing waits for.
        std::mem::forget(self.fan.take());
    }

    fn read(&mut self, budget: usize) {
        let Some(fan) = self.fan.take() else {
            return;
        };
        let mut handled = 0;
        let mut failing = 0;
        while handled < budget {
            let events = match fan.read_events() {
                Ok(ev) if ev.is_empty() => break,
                Ok(ev) => ev,
                Err(Errno::EAGAIN) => break,
                Err(Errno::EINTR) => continue,
                Err(_) => {
                    // The kernel could not hand over an event (a file it could not
                    // reopen): that open is lost. Errors in a row past a few are not
                    // one bad event, and are not retried for ever.
                    self.end.read_errors += 1;
                    handled += 1;
                    failing += 1;
                    if failing >= MAX_FAILING_READS {
                        break;
                    }
                    continue;
                }
            };
            failing = 0;
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
        let Some(st) = statx(fd) else {
            self.end.read_errors += 1;
            return;
        };
        let dev = libc::makedev(st.stx_dev_major, st.stx_dev_minor);
        let private = self.private.contains(&dev);
        let foreign = !self.own.contains(&st.stx_mnt_id);
        let traced = foreign && !private;
        let path = if traced {
            self.resolve(fd, dev)
        } else {
            read_link(fd)
        };
        let (path, unresolved) = match path {
            Some(p) => (p, false),
            // Named as the program's mount names it, and never trusted.
            None if traced => (read_link(fd).unwrap_or_default(), true),
            None => {
                self.end.read_errors += 1;
                return;
            }
        };
        if unresolved {
            self.end.unresolved += 1;
        }
        let dir = u32::from(st.stx_mode) & libc::S_IFMT == libc::S_IFDIR;
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
            let key = (dev, st.stx_ino, path.clone(), access);
            if self.seen.contains(&key) {
                continue;
            }
            // Past the bound nothing more is kept, not even in memory: every further
            // unseen open counts as dropped (some may be repeats).
            if self.end.distinct >= MAX_OPENS {
                self.end.dropped += 1;
                continue;
            }
            // The program it executed, else (a fork that did not exec) its name.
            let process = self.programs.get(&pid).cloned().or_else(|| {
                std::fs::read_to_string(format!("/proc/{pid}/comm"))
                    .ok()
                    .map(|s| s.trim_end().to_owned())
            });
            self.end.distinct += 1;
            let line = Line::Open(Open {
                ms: u64::try_from(self.start.elapsed().as_millis()).unwrap_or(u64::MAX),
                pid,
                process,
                access,
                path: key.2.clone(),
                foreign_mount: foreign,
                private,
                unresolved,
            });
            self.seen.insert(key);
            self.write(&line);
        }
    }

    /// The real path of a file opened through a mount init does not have: its handle
    /// opened again through the whole filesystem's mount.
    fn resolve(&self, fd: BorrowedFd<'_>, dev: u64) -> Option<String> {
        let root = self.roots.roots.get(&dev)?;
        let mut handle = Handle {
            bytes: MAX_HANDLE_BYTES as u32,
            kind: 0,
            data: [0; MAX_HANDLE_BYTES],
        };
        let mut mount_id = 0;
        // SAFETY: `handle` is a file_handle header followed by MAX_HANDLE_BYTES bytes,
        // as `bytes` says; the empty path with AT_EMPTY_PATH names `fd` itself.
        let r = unsafe {
            libc::name_to_handle_at(
                fd.as_raw_fd(),
                c"".as_ptr(),
                (&mut handle as *mut Handle).cast(),
                &mut mount_id,
                libc::AT_EMPTY_PATH,
            )
        };
        if r != 0 {
            return None;
        }
        // SAFETY: as above; the kernel filled in the handle.
        let again = unsafe {
            libc::open_by_handle_at(
                root.as_raw_fd(),
                (&mut handle as *mut Handle).cast(),
                libc::O_PATH | libc::O_CLOEXEC,
            )
        };
        if again < 0 {
            return None;
        }
        // SAFETY: open_by_handle_at returned a new descriptor we own.
        let again = unsafe { OwnedFd::from_raw_fd(again) };
        read_link(again.as_fd())
    }

    fn write(&mut self, line: &Line) {
        self.write_bytes(&observed::line(line));
    }

    fn write_bytes(&mut self, line: &[u8]) {
        if self.out.write_all(line).is_err() {
            self.end
                .error
                .get_or_insert_with(|| "writing the observation file failed".into());
        }
    }
}

/// The longest line accepted from the helper (a request's target is cut at
/// [`observed::MAX_REQUEST_PATH_BYTES`], and JSON may write a byte as six).
const MAX_RELAYED_LINE: usize = 16 << 10;

/// The read end of the helper's pipe, and what was written of it.
struct Relayed {
    file: File,
    /// A line not yet ended.
    partial: Vec<u8>,
    /// Within a line too long to keep.
    skipping: bool,
    lines: u64,
    bytes: u64,
}

/// Whether `fd` has something to read right now.
fn readable(fd: BorrowedFd<'_>) -> bool {
    use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
    let mut fds = [PollFd::new(fd, PollFlags::POLLIN)];
    poll(&mut fds, PollTimeout::ZERO).is_ok_and(|n| n > 0)
        && fds[0]
            .revents()
            .is_some_and(|r| r.contains(PollFlags::POLLIN))
}

/// The largest file handle the kernel makes (`MAX_HANDLE_SZ`).
const MAX_HANDLE_BYTES: usize = 128;

/// `struct file_handle` with room for any handle.
#[repr(C)]
struct Handle {
    bytes: u32,
    kind: i32,
    data: [u8; MAX_HANDLE_BYTES],
}

fn statx(fd: BorrowedFd<'_>) -> Option<libc::statx> {
    let mut st = std::mem::MaybeUninit::<libc::statx>::zeroed();
    // SAFETY: `st` is writable and sized for statx; the empty path with AT_EMPTY_PATH
    // names `fd` itself.
    let r = unsafe {
        libc::statx(
            fd.as_raw_fd(),
            c"".as_ptr(),
            libc::AT_EMPTY_PATH,
            libc::STATX_TYPE | libc::STATX_INO | libc::STATX_MNT_ID,
            st.as_mut_ptr(),
        )
    };
    // SAFETY: statx succeeded and filled it (zeroed before in any case).
    let st = unsafe { st.assume_init() };
    (r == 0 && st.stx_mask & libc::STATX_MNT_ID != 0).then_some(st)
}

fn read_link(fd: BorrowedFd<'_>) -> Option<String> {
    std::fs::read_link(format!("/proc/self/fd/{}", fd.as_raw_fd()))
        .ok()
        .map(|p| p.to_string_lossy().into_owned())
}

/// One line of mountinfo.
struct MountInfo {
    id: u64,
    dev: u64,
    /// The directory of its filesystem that is mounted (`/` for the whole of it).
    root: String,
    point: String,
    fstype: String,
}

/// The mounts init sees, from its mountinfo at `file`.
fn mounts(file: &str) -> Result<Vec<MountInfo>, Failure> {
    let info = std::fs::read_to_string(file).at(format!("reading {file}"))?;
    let mut out = Vec::new();
    for line in info.lines() {
        let fields: Vec<&str> = line.split(' ').collect();
        let Some(sep) = fields.iter().position(|f| *f == "-") else {
            continue;
        };
        let (Some(id), Some(dev), Some(root), Some(point), Some(fstype)) = (
            fields.first().and_then(|f| f.parse().ok()),
            fields.get(2).and_then(|f| {
                let (major, minor) = f.split_once(':')?;
                Some(libc::makedev(major.parse().ok()?, minor.parse().ok()?))
            }),
            fields.get(3),
            fields.get(4),
            fields.get(sep + 1),
        ) else {
            continue;
        };
        out.push(MountInfo {
            id,
            dev,
            root: unescape(root),
            point: unescape(point),
            fstype: (*fstype).to_owned(),
        });
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
