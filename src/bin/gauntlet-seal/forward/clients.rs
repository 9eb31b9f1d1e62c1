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

use gauntlet::evidence::observed::Client;

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
                found.push(Client { pid, exe });
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
