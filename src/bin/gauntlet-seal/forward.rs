//! The sandbox's network: a namespace of its own with only a loopback interface, where
//! exactly the loopback ports the harness handed the program (named in its environment:
//! its proxy, its target, its sinks) answer, relayed to the same ports on the host.
//! Nothing else on the host's loopback — other trials' apps, proxies and sinks, the
//! harness's own browsers — can be reached, or even seen in `/proc/net/tcp`.
//!
//! The helper holds both ends: it enters the sandbox's network namespace only long
//! enough to open the listening sockets there (a socket stays in the namespace it was
//! made in), returns to the host's, and relays each connection from a thread.

use crate::failure::{At, Failure};
use std::fs::File;
use std::io::ErrorKind;
use std::net::{Shutdown, TcpListener, TcpStream};

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
/// lives.
pub fn start(pid: i32, ports: &[u16]) -> Result<(), Failure> {
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
    for (listener, port) in listeners {
        std::thread::spawn(move || accept(listener, port));
    }
    Ok(())
}

fn accept(listener: TcpListener, port: u16) {
    loop {
        match listener.accept() {
            Ok((inside, _)) => {
                std::thread::spawn(move || relay(inside, port));
            }
            Err(e) if e.kind() == ErrorKind::Interrupted => continue,
            Err(_) => return,
        }
    }
}

fn relay(inside: TcpStream, port: u16) {
    let Ok(outside) = TcpStream::connect(("127.0.0.1", port)) else {
        // Refused on the host: refuse inside too, by closing.
        return;
    };
    let _ = inside.set_nodelay(true);
    let _ = outside.set_nodelay(true);
    let (Ok(mut in_r), Ok(mut out_r)) = (inside.try_clone(), outside.try_clone()) else {
        return;
    };
    let (mut in_w, mut out_w) = (inside, outside);
    let up = std::thread::spawn(move || {
        let _ = std::io::copy(&mut in_r, &mut out_w);
        let _ = out_w.shutdown(Shutdown::Write);
    });
    let _ = std::io::copy(&mut out_r, &mut in_w);
    let _ = in_w.shutdown(Shutdown::Write);
    let _ = up.join();
}
