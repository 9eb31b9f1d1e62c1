//! Every program the sandbox's processes execute, with its arguments, seen by the
//! kernel and not told by the agent.
//!
//! Why a seccomp notification and not fanotify alone: fanotify names the file an exec
//! opened, but not the arguments, and by the time init reads its queue a short-lived
//! program has gone, and with it `/proc/<pid>/cmdline`. A filter that answers `execve`
//! and `execveat` with `SECCOMP_RET_USER_NOTIF` stops each call until init has read its
//! path and arguments out of the caller's memory and let it go on
//! (`SECCOMP_USER_NOTIF_FLAG_CONTINUE`): no exec is missed, however short.
//!
//! Init installs the filter on itself before it forks the program, so the program and
//! everything it starts carry it and none can remove it; init itself never executes
//! anything afterwards (it would wait for its own answer). The listener is
//! close-on-exec, and the program closes every descriptor past stderr before it runs,
//! so no process of the sandbox can answer for init.
//!
//! What is read is what the caller's memory held when init read it. A program with a
//! second thread could rewrite its argument strings between init's read and the
//! kernel's, and a failed exec is read all the same: for a relayed app, a challenge's
//! required run is therefore met only with the app's own run of the same arguments,
//! as the relay logged it. A live caller whose strings cannot be read at all (memory
//! hidden from other processes) is refused, so nothing runs unrecorded; a caller in a
//! mount namespace or root of its own is marked, since its paths name its own files.
//!
//! x32 system calls (the same architecture, numbers with bit 30 set) fail with ENOSYS:
//! their exec would otherwise go unseen, and no program of a sandbox needs them. Calls
//! of another architecture (`int 0x80`) are already killed by the seccomp filter of
//! [`crate::syscalls`].

use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd};
use std::time::Instant;

use gauntlet::evidence::observed::{Exec, MAX_ARGS, MAX_ARGV_BYTES, MAX_ARG_BYTES};

#[cfg(target_arch = "x86_64")]
const AUDIT_ARCH: u32 = 62 | 0x8000_0000 | 0x4000_0000;
#[cfg(target_arch = "aarch64")]
const AUDIT_ARCH: u32 = 183 | 0x8000_0000 | 0x4000_0000;

/// The x32 ABI's bit in a system call's number.
const X32_BIT: u32 = 0x4000_0000;

/// Offsets of `nr` and `arch` in `struct seccomp_data`.
const NR_OFFSET: u32 = 0;
const ARCH_OFFSET: u32 = 4;

/// Room for the kernel's `struct seccomp_notif`, whatever its version adds.
const NOTIF_ROOM: usize = 256;

fn stmt(code: u32, k: u32) -> libc::sock_filter {
    libc::sock_filter {
        code: code as u16,
        jt: 0,
        jf: 0,
        k,
    }
}

fn jump(code: u32, k: u32, jt: u8, jf: u8) -> libc::sock_filter {
    libc::sock_filter {
        code: code as u16,
        jt,
        jf,
        k,
    }
}

/// The filter: notify on exec, ENOSYS for x32, allow the rest (other filters decide).
fn program() -> Vec<libc::sock_filter> {
    use libc::{BPF_ABS, BPF_JEQ, BPF_JGE, BPF_JMP, BPF_K, BPF_LD, BPF_RET, BPF_W};
    let execve = libc::SYS_execve as u32;
    let execveat = libc::SYS_execveat as u32;
    vec![
        // 0-1: another architecture is the other filter's (which kills it).
        stmt(BPF_LD | BPF_W | BPF_ABS, ARCH_OFFSET),
        jump(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH, 0, 4),
        // 2-3: x32 fails.
        stmt(BPF_LD | BPF_W | BPF_ABS, NR_OFFSET),
        jump(BPF_JMP | BPF_JGE | BPF_K, X32_BIT, 4, 0),
        // 4-5: exec waits for init.
        jump(BPF_JMP | BPF_JEQ | BPF_K, execve, 2, 0),
        jump(BPF_JMP | BPF_JEQ | BPF_K, execveat, 1, 0),
        // 6
        stmt(BPF_RET | BPF_K, libc::SECCOMP_RET_ALLOW),
        // 7
        stmt(BPF_RET | BPF_K, libc::SECCOMP_RET_USER_NOTIF),
        // 8
        stmt(
            BPF_RET | BPF_K,
            libc::SECCOMP_RET_ERRNO | (libc::ENOSYS as u32 & libc::SECCOMP_RET_DATA),
        ),
    ]
}

/// Install the filter on init (single-threaded, before the fork) and return its
/// listener.
pub fn install() -> Result<OwnedFd, String> {
    let filter = program();
    let prog = libc::sock_fprog {
        len: u16::try_from(filter.len()).map_err(|_| "the exec filter is too long")?,
        filter: filter.as_ptr().cast_mut(),
    };
    // SAFETY: `prog` points at `filter`, alive for the call; the kernel copies it.
    let fd = unsafe {
        libc::syscall(
            libc::SYS_seccomp,
            libc::SECCOMP_SET_MODE_FILTER,
            libc::SECCOMP_FILTER_FLAG_NEW_LISTENER,
            &prog as *const libc::sock_fprog,
        )
    };
    if fd < 0 {
        return Err(format!(
            "seccomp(SECCOMP_FILTER_FLAG_NEW_LISTENER): {}",
            std::io::Error::last_os_error()
        ));
    }
    let fd = i32::try_from(fd).map_err(|_| "seccomp returned no descriptor")?;
    // SAFETY: the kernel returned a new descriptor that nothing else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// The listener, read by init beside fanotify's queue.
pub struct Listener {
    fd: OwnedFd,
    start: Instant,
}

/// What one notification gave: an exec to write, or nothing (the caller is gone).
pub enum Received {
    Exec(Exec),
    Nothing,
    /// The listener failed; no further exec will be seen through it.
    Broken(String),
}

impl Listener {
    pub fn new(fd: OwnedFd, start: Instant) -> Listener {
        Listener { fd, start }
    }

    pub fn fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }

    /// Take one waiting call, read it and let it go on. Called when the listener is
    /// readable; a call whose process died meanwhile is nothing.
    pub fn receive(&self) -> Received {
        // The kernel writes its own size of the struct: room for more than ours.
        #[repr(C, align(8))]
        struct Room([u8; NOTIF_ROOM]);
        let mut room = Room([0; NOTIF_ROOM]);
        // SAFETY: the room is zeroed (as RECV requires), aligned and larger than any
        // `struct seccomp_notif` (checked against the kernel's size in `sizes_fit`).
        let r = unsafe {
            libc::ioctl(
                self.fd.as_raw_fd(),
                libc::SECCOMP_IOCTL_NOTIF_RECV,
                room.0.as_mut_ptr(),
            )
        };
        if r != 0 {
            let e = std::io::Error::last_os_error();
            return match e.raw_os_error() {
                // The caller was killed before it was received, or a signal.
                Some(libc::ENOENT) | Some(libc::EINTR) | Some(libc::EAGAIN) => Received::Nothing,
                _ => Received::Broken(format!("SECCOMP_IOCTL_NOTIF_RECV: {e}")),
            };
        }
        // SAFETY: the room starts with a `struct seccomp_notif` the kernel filled.
        let req: libc::seccomp_notif = unsafe { std::ptr::read_unaligned(room.0.as_ptr().cast()) };
        let exec = self.read(&req);
        // Whether the process is still the one that made the call: if not, what was
        // read may be another process's memory.
        let valid = self.id_valid(req.id);
        match (exec, valid) {
            (None, _) => {
                self.answer(req.id, None);
                Received::Nothing
            }
            (Some(mut exec), false) => {
                self.answer(req.id, None);
                exec.unreadable
                    .get_or_insert_with(|| "the process went away while it was read".into());
                Received::Exec(exec)
            }
            // A live caller whose call cannot be read would run something unrecorded.
            (Some(mut exec), true) if exec.unreadable.is_some() => {
                self.answer(req.id, Some(libc::EPERM));
                exec.refused = true;
                Received::Exec(exec)
            }
            (Some(exec), true) => {
                self.answer(req.id, None);
                Received::Exec(exec)
            }
        }
    }

    fn read(&self, req: &libc::seccomp_notif) -> Option<Exec> {
        let pid = i32::try_from(req.pid).ok()?;
        let nr = i64::from(req.data.nr);
        let a = req.data.args;
        // execve(path, argv, envp); execveat(dirfd, path, argv, envp, flags).
        let (dirfd, path_at, argv_at, envp_at, flags) = if nr == libc::SYS_execve {
            (libc::AT_FDCWD, a[0], a[1], a[2], 0)
        } else if nr == libc::SYS_execveat {
            (a[0] as i32, a[1], a[2], a[3], a[4] as i32)
        } else {
            return None;
        };
        let ms = u64::try_from(self.start.elapsed().as_millis()).unwrap_or(u64::MAX);
        let mut unreadable = None;
        let mut cut = false;
        let path = match read_string(pid, path_at) {
            Ok((p, c)) => {
                cut |= c;
                p
            }
            Err(e) => {
                unreadable = Some(format!("the path: {e}"));
                String::new()
            }
        };
        let path = absolute(pid, dirfd, &path, flags & libc::AT_EMPTY_PATH != 0);
        let mut argv = Vec::new();
        match read_pointers(pid, argv_at) {
            Err(e) => {
                unreadable.get_or_insert(format!("the arguments: {e}"));
            }
            Ok((ptrs, more)) => {
                cut |= more;
                let mut total = 0;
                for p in ptrs {
                    if total >= MAX_ARGV_BYTES {
                        cut = true;
                        break;
                    }
                    match read_string(pid, p) {
                        Ok((mut s, c)) => {
                            cut |= c;
                            if total + s.len() > MAX_ARGV_BYTES {
                                let mut end = MAX_ARGV_BYTES - total;
                                while !s.is_char_boundary(end) {
                                    end -= 1;
                                }
                                s.truncate(end);
                                cut = true;
                            }
                            total += s.len();
                            argv.push(s);
                        }
                        Err(e) => {
                            unreadable.get_or_insert(format!("argument {}: {e}", argv.len()));
                            break;
                        }
                    }
                }
            }
        }
        let (loader, loader_unread) = match read_loader(pid, envp_at) {
            Ok(found) => found,
            Err(e) => (Vec::new(), Some(format!("the environment: {e}"))),
        };
        Some(Exec {
            ms,
            pid,
            path,
            argv,
            argv_cut: cut,
            unreadable,
            refused: false,
            own_root: !same_root(pid),
            loader,
            loader_unread,
            carried: carried(pid),
        })
    }

    fn id_valid(&self, id: u64) -> bool {
        // SAFETY: ID_VALID reads one u64.
        unsafe {
            libc::ioctl(
                self.fd.as_raw_fd(),
                libc::SECCOMP_IOCTL_NOTIF_ID_VALID,
                &id as *const u64,
            ) == 0
        }
    }

    /// Let the call go on as if no filter had stopped it, or fail it with `error`. A
    /// process that has died since makes this fail, which changes nothing.
    fn answer(&self, id: u64, error: Option<i32>) {
        let resp = libc::seccomp_notif_resp {
            id,
            val: 0,
            error: error.map_or(0, |e| -e),
            flags: if error.is_some() {
                0
            } else {
                libc::SECCOMP_USER_NOTIF_FLAG_CONTINUE as u32
            },
        };
        // SAFETY: SEND reads one `struct seccomp_notif_resp`, which the kernel has not
        // grown since it was introduced.
        unsafe {
            libc::ioctl(
                self.fd.as_raw_fd(),
                libc::SECCOMP_IOCTL_NOTIF_SEND,
                &resp as *const libc::seccomp_notif_resp,
            );
        }
    }
}

/// Whether the kernel's notification struct fits the room [`Listener::receive`] gives
/// it; checked once, before the filter is installed.
pub fn sizes_fit() -> Result<(), String> {
    let mut sizes = libc::seccomp_notif_sizes {
        seccomp_notif: 0,
        seccomp_notif_resp: 0,
        seccomp_data: 0,
    };
    // SAFETY: GET_NOTIF_SIZES writes one `struct seccomp_notif_sizes`.
    let r = unsafe {
        libc::syscall(
            libc::SYS_seccomp,
            libc::SECCOMP_GET_NOTIF_SIZES,
            0,
            &mut sizes as *mut libc::seccomp_notif_sizes,
        )
    };
    if r != 0 {
        return Err(format!(
            "seccomp(SECCOMP_GET_NOTIF_SIZES): {}",
            std::io::Error::last_os_error()
        ));
    }
    if usize::from(sizes.seccomp_notif) > NOTIF_ROOM
        || usize::from(sizes.seccomp_notif_resp) < std::mem::size_of::<libc::seccomp_notif_resp>()
    {
        return Err(format!(
            "the kernel's seccomp notification sizes ({}, {}) are not the ones init knows",
            sizes.seccomp_notif, sizes.seccomp_notif_resp
        ));
    }
    Ok(())
}

/// Read `len` bytes of `pid`'s memory at `at`, never across a page boundary in one
/// call (a partial read past the last mapped page fails as a whole).
fn read_mem(pid: i32, at: u64, buf: &mut [u8]) -> std::io::Result<usize> {
    let local = libc::iovec {
        iov_base: buf.as_mut_ptr().cast(),
        iov_len: buf.len(),
    };
    let remote = libc::iovec {
        iov_base: at as *mut libc::c_void,
        iov_len: buf.len(),
    };
    // SAFETY: `local` is our buffer of its length; the remote range is only read.
    let n = unsafe { libc::process_vm_readv(pid, &local, 1, &remote, 1, 0) };
    if n < 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(n as usize)
}

const PAGE: u64 = 4096;

/// A NUL-terminated string at `at`, at most [`MAX_ARG_BYTES`]: the string and whether
/// it was cut.
fn read_string(pid: i32, at: u64) -> std::io::Result<(String, bool)> {
    if at == 0 {
        return Ok((String::new(), false));
    }
    let mut out = Vec::new();
    let mut addr = at;
    while out.len() < MAX_ARG_BYTES {
        let to_page = (PAGE - addr % PAGE) as usize;
        let want = to_page.min(MAX_ARG_BYTES - out.len());
        let mut buf = vec![0u8; want];
        let n = read_mem(pid, addr, &mut buf)?;
        if n == 0 {
            break;
        }
        if let Some(end) = buf[..n].iter().position(|b| *b == 0) {
            out.extend_from_slice(&buf[..end]);
            return Ok((String::from_utf8_lossy(&out).into_owned(), false));
        }
        out.extend_from_slice(&buf[..n]);
        addr = addr.wrapping_add(n as u64);
    }
    Ok((String::from_utf8_lossy(&out).into_owned(), true))
}

/// The NULL-terminated array of pointers at `at`, at most [`MAX_ARGS`]: the pointers
/// and whether there were more.
fn read_pointers(pid: i32, at: u64) -> std::io::Result<(Vec<u64>, bool)> {
    let mut out = Vec::new();
    if at == 0 {
        return Ok((out, false));
    }
    let mut addr = at;
    while out.len() <= MAX_ARGS {
        let mut word = [0u8; 8];
        if read_mem(pid, addr, &mut word)? < 8 {
            break;
        }
        let p = u64::from_ne_bytes(word);
        if p == 0 {
            return Ok((out, false));
        }
        if out.len() == MAX_ARGS {
            return Ok((out, true));
        }
        out.push(p);
        addr = addr.wrapping_add(8);
    }
    Ok((out, false))
}

/// The dynamic loader's variables (`LD_*`) in the environment array at `at`, each cut
/// at [`MAX_ARG_BYTES`], and why not all of the environment could be read: a variable
/// past [`MAX_ENV_VARS`], or past [`MAX_LOADER_VARS`] loader ones, could be a preload
/// nobody saw. Only a variable's first bytes are read unless they say `LD_`.
fn read_loader(pid: i32, at: u64) -> std::io::Result<(Vec<String>, Option<String>)> {
    let mut found = Vec::new();
    if at == 0 {
        return Ok((found, None));
    }
    let mut addr = at;
    let mut vars = 0;
    loop {
        // The pointers up to the page's end, in one read.
        let to_page = ((PAGE - addr % PAGE) as usize).max(8) / 8 * 8;
        let mut words = vec![0u8; to_page.min(512)];
        let n = read_mem(pid, addr, &mut words)?;
        if n < 8 {
            return Err(std::io::Error::from(std::io::ErrorKind::UnexpectedEof));
        }
        let mut ptrs: Vec<u64> = Vec::new();
        let mut end = false;
        for word in words[..n - n % 8].chunks_exact(8) {
            let p = u64::from_ne_bytes(word.try_into().unwrap_or([0; 8]));
            if p == 0 {
                end = true;
                break;
            }
            ptrs.push(p);
            addr = addr.wrapping_add(8);
        }
        ptrs.truncate(MAX_ENV_VARS + 1 - vars.min(MAX_ENV_VARS));
        vars += ptrs.len();
        for (p, head) in ptrs.iter().zip(read_heads(pid, &ptrs)?) {
            if &head == b"LD_" {
                if found.len() == MAX_LOADER_VARS {
                    return Ok((
                        found,
                        Some(format!("more than {MAX_LOADER_VARS} loader variables")),
                    ));
                }
                found.push(read_string(pid, *p)?.0);
            }
        }
        if end && vars <= MAX_ENV_VARS {
            return Ok((found, None));
        }
        if vars > MAX_ENV_VARS {
            break;
        }
    }
    Ok((
        found,
        Some(format!("more than {MAX_ENV_VARS} environment variables")),
    ))
}

/// The first three bytes of each string at `ptrs`, in one `process_vm_readv` of one
/// remote range per string where it can (an environment is a few dozen strings, and a
/// call per string would double an exec's cost); a string whose range the batch could
/// not read whole is read on its own.
fn read_heads(pid: i32, ptrs: &[u64]) -> std::io::Result<Vec<[u8; 3]>> {
    let mut heads = vec![[0u8; 3]; ptrs.len()];
    let remote: Vec<libc::iovec> = ptrs
        .iter()
        .map(|p| libc::iovec {
            iov_base: *p as *mut libc::c_void,
            iov_len: 3,
        })
        .collect();
    let local = libc::iovec {
        iov_base: heads.as_mut_ptr().cast(),
        iov_len: heads.len() * 3,
    };
    // SAFETY: `local` is `heads`' bytes (arrays of u8, contiguous), as long as the
    // remote ranges together; the remote ranges are only read.
    let n =
        unsafe { libc::process_vm_readv(pid, &local, 1, remote.as_ptr(), remote.len() as u64, 0) };
    let whole = if n < 0 { 0 } else { n as usize / 3 };
    for (i, p) in ptrs.iter().enumerate().skip(whole) {
        let mut head = [0u8; 3];
        let got = read_mem(pid, *p, &mut head)?;
        heads[i] = if got == 3 { head } else { [0; 3] };
    }
    Ok(heads)
}

/// The remote ports of the TCP connections `pid` carries into the program it is about
/// to execute: its sockets without close-on-exec, connected (or connecting) as the
/// sandbox's TCP table says. A connection made before a program ran, and sent on
/// before the relay looked at who held it, would otherwise pass for that program's.
fn carried(pid: i32) -> Vec<u16> {
    let Ok(fds) = std::fs::read_dir(format!("/proc/{pid}/fd")) else {
        return Vec::new();
    };
    let mut inodes = Vec::new();
    for fd in fds.flatten() {
        let Ok(link) = std::fs::read_link(fd.path()) else {
            continue;
        };
        let Some(inode) = link
            .to_str()
            .and_then(|l| l.strip_prefix("socket:["))
            .and_then(|l| l.strip_suffix(']'))
        else {
            continue;
        };
        let info = std::fs::read_to_string(format!(
            "/proc/{pid}/fdinfo/{}",
            fd.file_name().to_string_lossy()
        ))
        .unwrap_or_default();
        let cloexec = info
            .lines()
            .find_map(|l| l.strip_prefix("flags:"))
            .and_then(|f| u32::from_str_radix(f.trim(), 8).ok())
            .is_some_and(|f| f & libc::O_CLOEXEC as u32 != 0);
        if !cloexec {
            inodes.push(inode.to_owned());
        }
    }
    if inodes.is_empty() {
        return Vec::new();
    }
    let mut ports = Vec::new();
    for table in ["tcp", "tcp6"] {
        let text = std::fs::read_to_string(format!("/proc/{pid}/net/{table}")).unwrap_or_default();
        for line in text.lines().skip(1) {
            let f: Vec<&str> = line.split_whitespace().collect();
            // sl local rem st ... inode (field 9); 01 established, 02 SYN sent.
            let (Some(remote), Some(state), Some(inode)) = (f.get(2), f.get(3), f.get(9)) else {
                continue;
            };
            if (*state == "01" || *state == "02") && inodes.iter().any(|i| i == inode) {
                if let Some(port) = remote
                    .rsplit_once(':')
                    .and_then(|(_, p)| u16::from_str_radix(p, 16).ok())
                {
                    ports.push(port);
                }
            }
        }
    }
    ports
}

/// The most environment variables read of one exec.
const MAX_ENV_VARS: usize = 4096;

/// The most loader variables recorded of one exec.
const MAX_LOADER_VARS: usize = 16;

/// Whether `pid` resolves paths as init does: the same mount namespace and the same
/// root. A caller that made its own (a bind over the app's path in a namespace of its
/// own, a chroot) names by a path whatever it put there.
fn same_root(pid: i32) -> bool {
    use std::os::unix::fs::MetadataExt;
    let id = |p: &str| std::fs::metadata(p).ok().map(|m| (m.dev(), m.ino()));
    let ns = id(&format!("/proc/{pid}/ns/mnt"));
    let root = id(&format!("/proc/{pid}/root/"));
    ns.is_some() && ns == id("/proc/self/ns/mnt") && root.is_some() && root == id("/")
}

/// `path` made absolute the way the kernel will resolve it: against the caller's
/// working directory, or the directory `execveat` was given (or that descriptor's own
/// file, with `AT_EMPTY_PATH` and an empty path).
fn absolute(pid: i32, dirfd: i32, path: &str, empty_path: bool) -> String {
    if path.starts_with('/') {
        return path.to_owned();
    }
    let base = if dirfd == libc::AT_FDCWD {
        format!("/proc/{pid}/cwd")
    } else {
        format!("/proc/{pid}/fd/{dirfd}")
    };
    let Ok(base) = std::fs::read_link(&base) else {
        return path.to_owned();
    };
    let base = base.to_string_lossy().into_owned();
    if path.is_empty() && empty_path {
        return base;
    }
    format!("{}/{path}", base.trim_end_matches('/'))
}
