//! Who made a connection the relay accepted: the sandbox's process holding the
//! connecting socket, found from outside the namespace while the connection waits.
//!
//! The accepted socket's peer is the client's socket, whose local port is the peer
//! port. The namespace's TCP table (`/proc/<init>/net/tcp{,6}`, the host's `/proc`
//! showing init's network namespace) gives that socket's inode; the sandbox's own
//! `/proc` (`/proc/<init>/root/proc`, numbered as the sandbox numbers its processes,
//! like the exec lines) gives every process with a descriptor on it, and its
//! executable. A socket closed before the relay looked has no inode any more (the
//! kernel keeps an orphan in the table with inode 0), and nothing can be named.

use std::fs;
use std::net::SocketAddr;

use gauntlet::evidence::observed::{Client, SYSTEM_CODE};

/// The most processes named for one connection (a descriptor can be inherited by
/// any number of children).
const MAX_CLIENTS: usize = 64;

/// Where the sandbox's processes are seen from the helper.
pub struct Sandbox {
    /// `/proc/<init>`, in the host's `/proc`.
    init: String,
}

impl Sandbox {
    pub fn new(init: i32) -> Sandbox {
        Sandbox {
            init: format!("/proc/{init}"),
        }
    }

    /// The processes holding the socket that connected from `peer` to `local` (both
    /// as the sandbox's loopback numbers them); `Err`: why none can be named.
    pub fn clients(&self, peer: SocketAddr, local: SocketAddr) -> Result<Vec<Client>, String> {
        let table = if peer.is_ipv4() { "tcp" } else { "tcp6" };
        let path = format!("{}/net/{table}", self.init);
        let text = fs::read_to_string(&path).map_err(|e| format!("reading {path}: {e}"))?;
        let inode = socket_inode(&text, peer.port(), local.port()).ok_or_else(|| {
            format!(
                "no open socket of the sandbox connects from port {} to port {}: it was closed before the relay looked",
                peer.port(),
                local.port()
            )
        })?;
        let want = format!("socket:[{inode}]");
        let proc = format!("{}/root/proc", self.init);
        let mut found = Vec::new();
        let entries = fs::read_dir(&proc).map_err(|e| format!("reading {proc}: {e}"))?;
        for entry in entries.flatten() {
            let Some(pid) = entry
                .file_name()
                .to_str()
                .and_then(|n| n.parse::<i32>().ok())
            else {
                continue;
            };
            // Init is the sandbox's own and never a client.
            if pid <= 1 {
                continue;
            }
            let Ok(fds) = fs::read_dir(format!("{proc}/{pid}/fd")) else {
                continue;
            };
            let holds = fds.flatten().any(|fd| {
                fs::read_link(fd.path())
                    .is_ok_and(|l| l.as_os_str().as_encoded_bytes() == want.as_bytes())
            });
            if holds {
                let exe = fs::read_link(format!("{proc}/{pid}/exe"))
                    .ok()
                    .map(|p| p.to_string_lossy().into_owned());
                let altered = self.altered(&proc, pid, exe.as_deref());
                found.push(Client { pid, exe, altered });
                if found.len() >= MAX_CLIENTS {
                    break;
                }
            }
        }
        if found.is_empty() {
            return Err(format!(
                "no process of the sandbox holds socket {inode}: it was closed before the relay looked"
            ));
        }
        Ok(found)
    }

    /// Why process `pid` (seen under the sandbox's `/proc` at `proc`) may not be
    /// running its executable `exe` as shipped. Its path alone names a program, and
    /// each of these lets other code run under that name: a mount namespace of its own
    /// binds anything over the path; a preload or audit library runs before `main`;
    /// a tracer writes into it; and a browser's own switches let a page's requests
    /// go out as another origin's. What cannot be read counts: a process that hides
    /// is not shown to be unaltered.
    fn altered(&self, proc: &str, pid: i32, exe: Option<&str>) -> Vec<String> {
        let at = |what: &str| format!("{proc}/{pid}/{what}");
        let mut why = Vec::new();
        let mut note = |s: String| {
            if !why.contains(&s) {
                why.push(s);
            }
        };
        let init_root = format!("{}/root", self.init);
        if file_id(&at("ns/mnt"))
            .is_none_or(|id| Some(id) != file_id(&format!("{}/ns/mnt", self.init)))
            || file_id(&at("root/")).is_none_or(|id| Some(id) != file_id(&format!("{init_root}/")))
        {
            note("it has a mount namespace or root of its own".into());
        }
        let running = file_id(&at("exe"));
        match exe {
            Some(path) if path.ends_with(" (deleted)") => {
                note(format!("its executable {path} is gone from the sandbox"));
            }
            Some(path)
                if running.is_none() || running != file_id(&format!("{init_root}{path}")) =>
            {
                note(format!("it runs a file that is not the sandbox's {path}"));
            }
            Some(_) => {}
            None => note("its executable could not be read".into()),
        }
        match fs::read(at("environ")) {
            Ok(env) => {
                for var in env.split(|b| *b == 0) {
                    for name in PRELOADS {
                        if var
                            .strip_prefix(name.as_bytes())
                            .is_some_and(|v| v.first() == Some(&b'=') && v.len() > 1)
                        {
                            note(format!("{name} is set in its environment"));
                        }
                    }
                }
            }
            Err(e) => note(format!("its environment could not be read: {e}")),
        }
        let exe_dir = exe
            .and_then(|p| p.rsplit_once('/'))
            .map(|(dir, _)| format!("{dir}/"));
        match fs::read_to_string(at("maps")) {
            Ok(maps) => {
                for path in foreign_code(&maps, exe_dir.as_deref()) {
                    note(format!("it runs code mapped from {path}"));
                }
            }
            Err(e) => note(format!("its memory map could not be read: {e}")),
        }
        // Its tracer, and the switches it and the processes above it were started
        // with: a browser's own launched process, and any wrapper between them (a
        // `--utility-cmd-prefix` shell runs a browser's children).
        let mut at_pid = pid;
        for _ in 0..MAX_ANCESTORS {
            let status = fs::read_to_string(format!("{proc}/{at_pid}/status")).unwrap_or_default();
            let field = |name: &str| {
                status
                    .lines()
                    .find_map(|l| l.strip_prefix(name))
                    .and_then(|v| v.trim().parse::<i32>().ok())
            };
            if at_pid == pid {
                match field("TracerPid:") {
                    Some(0) => {}
                    Some(t) => note(format!("it is traced by process {t}")),
                    None => note("its status could not be read".into()),
                }
            }
            if let Ok(cmdline) = fs::read(format!("{proc}/{at_pid}/cmdline")) {
                for arg in cmdline.split(|b| *b == 0) {
                    let arg = String::from_utf8_lossy(arg);
                    if let Some(s) = ORIGIN_SWITCHES.iter().find(|s| switched(&arg, s)) {
                        note(format!("it was launched with {s}"));
                    }
                }
            }
            match field("PPid:") {
                Some(parent) if parent > 1 => at_pid = parent,
                _ => break,
            }
        }
        why
    }
}

/// Environment variables that make the dynamic loader run a library of the caller's
/// choosing in the process.
const PRELOADS: &[&str] = &["LD_PRELOAD", "LD_AUDIT"];

/// A browser's switches under which its requests no longer say truly which page or
/// program sent them: pages of any origin reach any other (`--disable-web-security`),
/// a host name or a whole origin served from elsewhere (host rules, proxies), an
/// extension that rewrites requests' headers (`--load-extension` naming one), or its
/// own processes run under a program of the caller's choosing (the command prefixes
/// and launchers).
const ORIGIN_SWITCHES: &[&str] = &[
    "--disable-web-security",
    "--host-resolver-rules",
    "--host-rules",
    "--proxy-server",
    "--proxy-pac-url",
    "--load-extension",
    "--utility-cmd-prefix",
    "--renderer-cmd-prefix",
    "--gpu-launcher",
    "--browser-subprocess-path",
];

/// Whether `arg` is `switch`, bare or with a value; `--load-extension=` with none loads
/// nothing (Debian's `/usr/bin/chromium` always passes it).
fn switched(arg: &str, switch: &str) -> bool {
    match arg.strip_prefix(switch) {
        Some("") => true,
        Some(rest) => match rest.strip_prefix('=') {
            Some(value) => !(switch == "--load-extension" && value.trim_matches(',').is_empty()),
            None => false,
        },
        None => false,
    }
}

/// How far up a connection's holder its ancestors are looked at.
const MAX_ANCESTORS: usize = 8;

/// The files of `maps` (a `/proc/<pid>/maps`) mapped executable from anywhere but the
/// system's directories and `exe_dir` (the executable's own, for a program shipped
/// with its libraries): a preloaded library, a `memfd`, a deleted file. Anonymous
/// executable memory (a JIT's) has no file and is not among them.
pub fn foreign_code(maps: &str, exe_dir: Option<&str>) -> Vec<String> {
    let mut found: Vec<String> = Vec::new();
    for line in maps.lines() {
        // address perms offset dev inode pathname
        let mut f = line.splitn(6, char::is_whitespace);
        let perms = f.nth(1).unwrap_or("");
        let path = f.nth(3).unwrap_or("").trim_start();
        if !perms.contains('x') || !path.starts_with('/') {
            continue;
        }
        let system = !path.ends_with(" (deleted)")
            && (SYSTEM_CODE.iter().any(|d| path.starts_with(d))
                || exe_dir.is_some_and(|d| d != "/" && path.starts_with(d)));
        if !system && !found.iter().any(|p| p == path) {
            found.push(path.to_owned());
        }
    }
    found
}

/// A file's device and inode, following links (a `/proc` magic link to what it
/// names); `None` when it cannot be read.
fn file_id(path: &str) -> Option<(u64, u64)> {
    use std::os::unix::fs::MetadataExt;
    fs::metadata(path).ok().map(|m| (m.dev(), m.ino()))
}

/// The inode of the socket in `table` (`/proc/net/tcp` or `tcp6`) whose local port
/// is `from` and remote port is `to`; `None` when there is none, or its inode is 0
/// (closed: no descriptor holds it).
pub fn socket_inode(table: &str, from: u16, to: u16) -> Option<u64> {
    for line in table.lines().skip(1) {
        let f: Vec<&str> = line.split_whitespace().collect();
        // sl local_address rem_address st tx_queue:rx_queue tr:tm->when retrnsmt uid timeout inode
        let (Some(local), Some(remote), Some(inode)) = (f.get(1), f.get(2), f.get(9)) else {
            continue;
        };
        if port_of(local) == Some(from) && port_of(remote) == Some(to) {
            return inode.parse().ok().filter(|i| *i != 0);
        }
    }
    None
}

/// The port of an `ADDR:PORT` field (both in hex).
fn port_of(field: &str) -> Option<u16> {
    let (_, port) = field.rsplit_once(':')?;
    u16::from_str_radix(port, 16).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    const TABLE: &str = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 0100007F:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 1000 1 0000000000000000 100 0 0 10 0
   1: 0100007F:1F90 0100007F:A1B2 01 00000000:00000000 00:00000000 00000000     0        0 2000 1 0000000000000000 20 4 30 10 -1
   2: 0100007F:A1B2 0100007F:1F90 01 00000000:00000000 00:00000000 00000000 65534        0 3000 1 0000000000000000 20 4 30 10 -1
   3: 0100007F:C000 0100007F:1F90 06 00000000:00000000 03:00000000 00000000     0        0 0 3 0000000000000000
";

    #[test]
    fn code_mapped_from_outside_the_system_is_named_once() {
        let maps = "\
55d0a0000000-55d0a0001000 r--p 00000000 00:1f 1234 /usr/lib/chromium/chromium
55d0a0001000-55d0a0100000 r-xp 00001000 00:1f 1234 /usr/lib/chromium/chromium
7f0000000000-7f0000001000 r-xp 00000000 00:1f 77 /work/w/.e.so
7f0000001000-7f0000002000 r-xp 00001000 00:1f 77 /work/w/.e.so
7f0000003000-7f0000004000 r--p 00000000 00:1f 78 /work/w/notes.txt
7f0000004000-7f0000005000 r-xp 00000000 00:01 9 /memfd:x (deleted)
7f0000005000-7f0000006000 r-xp 00000000 00:1f 80 /usr/lib/x86_64-linux-gnu/libc.so.6
7f0000006000-7f0000007000 r-xp 00000000 00:1f 81 /usr/lib/libold.so (deleted)
7f0000007000-7f0000008000 rwxp 00000000 00:00 0
7f0000008000-7f0000009000 r-xp 00000000 00:00 0 [vdso]
7f0000009000-7f000000a000 r-xp 00000000 00:1f 90 /home/u/pw/chrome-linux/libEGL.so
";
        assert_eq!(
            foreign_code(maps, Some("/usr/lib/chromium/")),
            [
                "/work/w/.e.so",
                "/memfd:x (deleted)",
                "/usr/lib/libold.so (deleted)",
                "/home/u/pw/chrome-linux/libEGL.so",
            ]
        );
        // A browser shipped with its libraries beside it maps them from its own
        // directory.
        assert_eq!(
            foreign_code(maps, Some("/home/u/pw/chrome-linux/")).len(),
            3
        );
        // The root is no program's own directory.
        assert_eq!(foreign_code(maps, Some("/")).len(), 4);
    }

    #[test]
    fn a_switch_counts_bare_or_with_a_value_and_an_empty_extension_list_loads_nothing() {
        assert!(switched("--disable-web-security", "--disable-web-security"));
        assert!(switched("--proxy-server=127.0.0.1:9", "--proxy-server"));
        assert!(switched("--load-extension=/w/ext", "--load-extension"));
        assert!(!switched("--load-extension=", "--load-extension"));
        assert!(!switched("--load-extension=,", "--load-extension"));
        assert!(!switched("--proxy-server-x", "--proxy-server"));
        assert!(!switched("--host-rules-x=1", "--host-rules"));
    }

    #[test]
    fn the_client_socket_is_the_one_from_the_peer_port_to_the_listener() {
        // 0x1F90 = 8080, 0xA1B2 = 41394: the accepted side (1) is the relay's, the
        // connecting side (2) the client's.
        assert_eq!(socket_inode(TABLE, 0xA1B2, 8080), Some(3000));
        assert_eq!(socket_inode(TABLE, 8080, 0xA1B2), Some(2000));
        // Closed (orphaned, inode 0) or absent: nobody to name.
        assert_eq!(socket_inode(TABLE, 0xC000, 8080), None);
        assert_eq!(socket_inode(TABLE, 1, 8080), None);
        assert_eq!(socket_inode("", 1, 8080), None);
    }
}
