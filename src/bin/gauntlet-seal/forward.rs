//! The sandbox's network: a namespace of its own with only a loopback interface, where
//! exactly the loopback ports the harness handed the program (named in its environment:
//! its proxy, its target, its sinks) answer, relayed to the same ports on the host.
//! Nothing else on the host's loopback — other trials' apps, proxies and sinks, the
//! harness's own browsers — can be reached, or even seen in `/proc/net/tcp`.
//!
//! The helper holds both ends: it enters the sandbox's network namespace only long
//! enough to open the listening sockets there (a socket stays in the namespace it was
//! made in), returns to the host's, and relays every connection from one thread of its
//! own ([`relay`]). Where the sandbox is observed it also says, for init to write into
//! the observation, which process of the sandbox made each connection
//! ([`clients`]) and which HTTP requests the connection carried ([`http`]).

mod clients;
mod http;
mod pipe;
mod relay;

use crate::failure::{At, Failure};
use std::fs::File;
use std::net::TcpListener;

use nix::sched::CloneFlags;

/// Bring up `lo` in the calling process's (new) network namespace.
pub fn loopback_up() -> Result<(), Failure> {
    // SAFETY: plain socket and ioctl calls on a zeroed `ifreq` naming "lo"; the socket
    // is closed before returning.
    unsafe {
        let fd = libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0);
        if fd < 0 {
            return Err(std::io::Error::last_os_error()).at("socket");
        }
        let mut req: libc::ifreq = std::mem::zeroed();
        for (dst, src) in req.ifr_name.iter_mut().zip(b"lo\0") {
            *dst = *src as libc::c_char;
        }
        let mut result = Ok(());
        if libc::ioctl(fd, libc::SIOCGIFFLAGS, &mut req) < 0 {
            result = Err(std::io::Error::last_os_error()).at("SIOCGIFFLAGS lo");
        } else {
            req.ifr_ifru.ifru_flags |= libc::IFF_UP as libc::c_short;
            if libc::ioctl(fd, libc::SIOCSIFFLAGS, &req) < 0 {
                result = Err(std::io::Error::last_os_error()).at("SIOCSIFFLAGS lo");
            }
        }
        libc::close(fd);
        result
    }
}

/// Listen on `ports` inside the network namespace of process `pid` and relay every
/// connection to the same port on the host's loopback, for as long as this process
/// lives. With `observed`, a line for init per connection (who made it) and per
/// request it carried.
pub fn start(pid: i32, ports: &[u16], observed: Option<File>) -> Result<(), Failure> {
    if ports.is_empty() {
        return Ok(());
    }
    let ns = |path: String| File::open(&path).at(path.as_str());
    let host = ns("/proc/self/ns/net".into())?;
    let sandbox = ns(format!("/proc/{pid}/ns/net"))?;
    nix::sched::setns(&sandbox, CloneFlags::CLONE_NEWNET)
        .at("entering the sandbox's network namespace")?;
    let mut listeners = Vec::new();
    let mut failed = None;
    for &port in ports {
        match TcpListener::bind(("127.0.0.1", port)) {
            Ok(l) => listeners.push((l, port)),
            Err(e) => {
                failed = Some(Err(e).at(format!("listening on 127.0.0.1:{port} in the sandbox")))
            }
        }
        // Clients that resolve `localhost` to ::1 find the same port.
        if let Ok(l) = TcpListener::bind(("::1", port)) {
            listeners.push((l, port));
        }
    }
    nix::sched::setns(&host, CloneFlags::CLONE_NEWNET)
        .at("returning to the host's network namespace")?;
    if let Some(failed) = failed {
        return failed;
    }
    let recorder = observed.map(|out| relay::Recorder::new(pid, out));
    let relay = relay::Relay::new(listeners, recorder).at("watching the sandbox's ports")?;
    std::thread::Builder::new()
        .name("relay".into())
        .spawn(move || relay.run())
        .at("starting the port relay")?;
    Ok(())
}
