//! The relay: one thread, one event loop over every listener and every connection.
//!
//! A sealed program's HTTP client makes many short connections (a `curl` per check);
//! a thread or two for each cost more than the bytes they moved. Here a connection is
//! two non-blocking sockets, the one accepted inside and the one opened to the host,
//! and two [`Pipe`]s between them.
//!
//! Each direction ends as TCP does: when its source reaches end of file, what is still
//! buffered is written and the destination is shut down for writing, so a client that
//! half-closes after its request still reads the whole answer. A direction whose
//! socket fails ends the same way; the connection is closed once both have ended. A
//! connection the host refuses is refused inside too, by closing the accepted socket.
//!
//! Where the sandbox is observed, the relay also says who made each connection and
//! what requests it carried ([`Recorder`]): a line per connection as it is accepted
//! (the process holding the connecting socket, [`super::clients`]), and a line per
//! request as its head is read ([`super::http`]), each written to init before any of
//! the bytes it describes go on to the host.

use std::fs::File;
use std::io::{ErrorKind, Read, Write};
use std::net::{Ipv4Addr, Shutdown, SocketAddr};
use std::time::Instant;

use gauntlet::evidence::observed::{self, Connection, Line, Request, Unparsed};

use mio::event::Event;
use mio::net::{TcpListener, TcpStream};
use mio::{Events, Interest, Poll, Token};

use super::clients::Sandbox;
use super::http::{Requests, Seen};
use super::pipe::{Pipe, Pumped};

/// Events taken from the kernel per wait.
const EVENTS: usize = 256;

/// Every listener and every live connection, and the poll that watches them.
///
/// Tokens: listener `i` is `i`; the two sockets of the connection in slot `s` are
/// `listeners + 2 s` (inside) and `listeners + 2 s + 1` (host side).
pub struct Relay {
    poll: Poll,
    /// With the host port each relays to; `None` once it failed and was closed.
    listeners: Vec<Option<(TcpListener, u16)>>,
    pairs: Vec<Option<Pair>>,
    /// Slots of `pairs` free for the next connection.
    free: Vec<usize>,
    /// Where who made each connection and what it asked is said; `None`: nowhere.
    recorder: Option<Recorder>,
}

/// Says, on init's pipe, who made each connection and what requests it carried.
pub struct Recorder {
    sandbox: Sandbox,
    out: File,
    next: u64,
    start: Instant,
    /// Init stopped reading: nothing more is said.
    broken: bool,
}

impl Recorder {
    /// Lines for init at `out`; the sandbox's processes seen through init's, `init`.
    pub fn new(init: i32, out: File) -> Recorder {
        Recorder {
            sandbox: Sandbox::new(init),
            out,
            next: 0,
            start: Instant::now(),
            broken: false,
        }
    }

    fn ms(&self) -> u64 {
        u64::try_from(self.start.elapsed().as_millis()).unwrap_or(u64::MAX)
    }

    fn say(&mut self, line: &Line) {
        if self.broken {
            return;
        }
        // Blocking: a line is in the pipe before the bytes it describes move on.
        if self.out.write_all(&observed::line(line)).is_err() {
            self.broken = true;
        }
    }

    /// A connection accepted from `peer` on `local` (relayed to `port`): who holds its
    /// other end, said now, while it waits.
    fn accepted(
        &mut self,
        peer: SocketAddr,
        local: std::io::Result<SocketAddr>,
        port: u16,
    ) -> Watch {
        let conn = self.next;
        self.next += 1;
        let found = local
            .map_err(|e| format!("the accepted socket's own address: {e}"))
            .and_then(|local| self.sandbox.clients(peer, local));
        let (clients, unattributed) = match found {
            Ok(clients) => (clients, None),
            Err(why) => (Vec::new(), Some(why)),
        };
        let line = Line::Connection(Connection {
            ms: self.ms(),
            conn,
            port,
            clients,
            unattributed,
        });
        self.say(&line);
        Watch {
            conn,
            requests: Requests::new(),
        }
    }

    /// Bytes the client of `watch` sent: a line for each request they complete.
    fn sent(&mut self, watch: &mut Watch, bytes: &[u8]) {
        let mut seen = Vec::new();
        watch.requests.feed(bytes, &mut seen);
        for s in seen {
            let (ms, conn) = (self.ms(), watch.conn);
            let line = match s {
                Seen::Request {
                    method,
                    path,
                    path_cut,
                    origin,
                } => Line::Request(Request {
                    ms,
                    conn,
                    method,
                    path,
                    path_cut,
                    origin,
                }),
                Seen::Unparsed(why) => Line::Unparsed(Unparsed { ms, conn, why }),
            };
            self.say(&line);
        }
    }
}

/// A connection whose requests are read.
struct Watch {
    conn: u64,
    requests: Requests,
}

/// The inside socket, read through the recorder.
struct Tap<'a> {
    inside: &'a TcpStream,
    watched: Option<(&'a mut Watch, &'a mut Recorder)>,
}

impl Read for Tap<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inside.read(buf)?;
        if let Some((watch, recorder)) = &mut self.watched {
            recorder.sent(watch, &buf[..n]);
        }
        Ok(n)
    }
}

/// One relayed connection.
struct Pair {
    inside: TcpStream,
    outside: TcpStream,
    /// The host side finished connecting; until then nothing is relayed.
    connected: bool,
    /// Its requests are read (the sandbox is observed).
    watch: Option<Watch>,
    /// Inside to host.
    up: Pipe,
    /// Host to inside.
    down: Pipe,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Side {
    Inside,
    Outside,
}

impl Relay {
    /// Watch `listeners` (blocking sockets, made non-blocking here), each with the host
    /// port it relays to.
    pub fn new(
        listeners: Vec<(std::net::TcpListener, u16)>,
        recorder: Option<Recorder>,
    ) -> std::io::Result<Relay> {
        let poll = Poll::new()?;
        let mut watched = Vec::with_capacity(listeners.len());
        for (i, (listener, port)) in listeners.into_iter().enumerate() {
            listener.set_nonblocking(true)?;
            let mut listener = TcpListener::from_std(listener);
            poll.registry()
                .register(&mut listener, Token(i), Interest::READABLE)?;
            watched.push(Some((listener, port)));
        }
        Ok(Relay {
            poll,
            listeners: watched,
            pairs: Vec::new(),
            free: Vec::new(),
            recorder,
        })
    }

    /// Relay for as long as the process lives. A failed wait ends the relay: the
    /// listeners close with it, so the ports refuse rather than hang.
    pub fn run(mut self) {
        let mut events = Events::with_capacity(EVENTS);
        loop {
            if let Err(e) = self.poll.poll(&mut events, None) {
                if e.kind() == ErrorKind::Interrupted {
                    continue;
                }
                return;
            }
            for event in events.iter() {
                self.dispatch(event);
            }
        }
    }

    fn dispatch(&mut self, event: &Event) {
        let token = event.token().0;
        let Some(at) = token.checked_sub(self.listeners.len()) else {
            self.accept(token);
            return;
        };
        let slot = at / 2;
        let side = if at % 2 == 0 {
            Side::Inside
        } else {
            Side::Outside
        };
        // A connection closed earlier in the same batch of events has none left.
        let Some(Some(pair)) = self.pairs.get_mut(slot) else {
            return;
        };
        let readable = event.is_readable() || event.is_read_closed() || event.is_error();
        let writable = event.is_writable() || event.is_write_closed() || event.is_error();
        if pair.on_event(side, readable, writable, self.recorder.as_mut()) {
            // Closing a socket takes it out of the poll: no descriptor of it was
            // duplicated (the helper never forks after the relay starts).
            self.pairs[slot] = None;
            self.free.push(slot);
        }
    }

    /// Take every pending connection of listener `i` and open its host side.
    fn accept(&mut self, i: usize) {
        loop {
            let Some(Some((listener, port))) = self.listeners.get(i) else {
                return;
            };
            let port = *port;
            let (inside, peer) = match listener.accept() {
                Ok(accepted) => accepted,
                Err(e) => match e.kind() {
                    ErrorKind::WouldBlock => return,
                    // A client that gave up while it waited in the queue.
                    ErrorKind::Interrupted | ErrorKind::ConnectionAborted => continue,
                    _ => {
                        // A listener that cannot accept would leave its clients
                        // waiting: closed instead, its port refuses from now on.
                        self.listeners[i] = None;
                        return;
                    }
                },
            };
            // Refused on the host (now or, in `Pair::connect`, later): refused inside
            // too, by closing `inside`.
            let Ok(outside) = TcpStream::connect(SocketAddr::from((Ipv4Addr::LOCALHOST, port)))
            else {
                continue;
            };
            let _ = inside.set_nodelay(true);
            let _ = outside.set_nodelay(true);
            let watch = self
                .recorder
                .as_mut()
                .map(|r| r.accepted(peer, inside.local_addr(), port));
            self.add(Pair {
                inside,
                outside,
                connected: false,
                watch,
                up: Pipe::new(),
                down: Pipe::new(),
            });
        }
    }

    fn add(&mut self, mut pair: Pair) {
        let slot = match self.free.pop() {
            Some(slot) => slot,
            None => {
                self.pairs.push(None);
                self.pairs.len() - 1
            }
        };
        let base = self.listeners.len() + 2 * slot;
        let both = Interest::READABLE | Interest::WRITABLE;
        let registry = self.poll.registry();
        let registered = registry
            .register(&mut pair.inside, Token(base), both)
            .and_then(|()| registry.register(&mut pair.outside, Token(base + 1), both));
        match registered {
            Ok(()) => self.pairs[slot] = Some(pair),
            // Not watched, so not relayed: closed, like a refused connection.
            Err(_) => self.free.push(slot),
        }
    }
}

impl Pair {
    /// Act on readiness of one side; whether the connection is over.
    fn on_event(
        &mut self,
        side: Side,
        readable: bool,
        writable: bool,
        mut recorder: Option<&mut Recorder>,
    ) -> bool {
        if !self.connected {
            // The inside waits (its bytes stay in its socket) until the host answers.
            if side == Side::Inside {
                return false;
            }
            match self.connect() {
                Connect::Pending => return false,
                Connect::Failed => return true,
                Connect::Done => {
                    self.connected = true;
                    // Both directions may already hold bytes; their readiness was
                    // reported before the host side could take them.
                    self.pump_up(recorder.as_deref_mut());
                    self.pump_down();
                }
            }
        } else {
            // Inside readable or host writable moves bytes up; the reverse, down.
            let (up, down) = match side {
                Side::Inside => (readable, writable),
                Side::Outside => (writable, readable),
            };
            if up {
                self.pump_up(recorder);
            }
            if down {
                self.pump_down();
            }
        }
        self.up.is_over() && self.down.is_over()
    }

    /// Where the host side's non-blocking connect stands.
    fn connect(&self) -> Connect {
        match self.outside.take_error() {
            Ok(None) => {}
            Ok(Some(_)) | Err(_) => return Connect::Failed,
        }
        match self.outside.peer_addr() {
            Ok(_) => Connect::Done,
            Err(e)
                if e.kind() == ErrorKind::NotConnected
                    || e.raw_os_error() == Some(libc::EINPROGRESS) =>
            {
                Connect::Pending
            }
            Err(_) => Connect::Failed,
        }
    }

    fn pump_up(&mut self, recorder: Option<&mut Recorder>) {
        let tap = Tap {
            inside: &self.inside,
            watched: self.watch.as_mut().zip(recorder),
        };
        if !matches!(self.up.pump(tap, &self.outside), Ok(Pumped::Open)) {
            let _ = self.outside.shutdown(Shutdown::Write);
        }
    }

    fn pump_down(&mut self) {
        if !matches!(
            self.down.pump(&self.outside, &self.inside),
            Ok(Pumped::Open)
        ) {
            let _ = self.inside.shutdown(Shutdown::Write);
        }
    }
}

enum Connect {
    Pending,
    Done,
    Failed,
}
