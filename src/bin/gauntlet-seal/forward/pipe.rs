//! One direction of a relayed connection: what was read from one socket and not yet
//! written to the other. The buffer has a fixed size, so a sender faster than its
//! receiver costs the helper that much memory and no more: once it is full the relay
//! stops reading, the sender's socket buffer fills, and TCP slows the sender down.
//!
//! Both sockets are non-blocking and watched edge-triggered: a pump moves bytes until
//! the source has nothing more or the destination takes nothing more, since a socket
//! that was not drained to `WouldBlock` would not be reported ready again.

use std::io::{ErrorKind, Read, Write};

/// Bytes held per direction: a few TCP windows' worth on loopback, enough that a large
/// body moves in few system calls.
pub const CAPACITY: usize = 64 << 10;

/// Bytes in transit from a source to a destination.
pub struct Pipe {
    buf: Box<[u8]>,
    /// `buf[start..end]` was read and not yet written.
    start: usize,
    end: usize,
    /// The source reached its end: nothing more will be read.
    eof: bool,
    /// Over: the source ended and all it sent was written, or either side failed.
    over: bool,
}

/// Where a pump left its direction.
#[derive(Debug, PartialEq, Eq)]
pub enum Pumped {
    /// More may come: the pipe waits for the source to become readable or the
    /// destination writable.
    Open,
    /// The source ended and everything it sent was written: the destination is to be
    /// shut down for writing, so its peer reads the same end of file.
    Ended,
}

impl Pipe {
    pub fn new() -> Pipe {
        Pipe {
            buf: vec![0; CAPACITY].into_boxed_slice(),
            start: 0,
            end: 0,
            eof: false,
            over: false,
        }
    }

    /// Whether this direction is over (it ended or failed, and was told so once).
    pub fn is_over(&self) -> bool {
        self.over
    }

    /// Move what can move now from `src` to `dst`. `Ended` and an error are said once;
    /// after either the pipe is over and a pump does nothing.
    pub fn pump(&mut self, mut src: impl Read, mut dst: impl Write) -> std::io::Result<Pumped> {
        if self.over {
            return Ok(Pumped::Open);
        }
        let result = self.pump_until_blocked(&mut src, &mut dst);
        if !matches!(result, Ok(Pumped::Open)) {
            self.over = true;
        }
        result
    }

    fn pump_until_blocked(
        &mut self,
        src: &mut impl Read,
        dst: &mut impl Write,
    ) -> std::io::Result<Pumped> {
        loop {
            let mut moved = false;
            if !self.eof {
                if self.end == self.buf.len() && self.start > 0 {
                    self.buf.copy_within(self.start..self.end, 0);
                    self.end -= self.start;
                    self.start = 0;
                }
                if self.end < self.buf.len() {
                    match src.read(&mut self.buf[self.end..]) {
                        Ok(0) => self.eof = true,
                        Ok(n) => {
                            self.end += n;
                            moved = true;
                        }
                        Err(e) if e.kind() == ErrorKind::WouldBlock => {}
                        Err(e) if e.kind() == ErrorKind::Interrupted => moved = true,
                        Err(e) => return Err(e),
                    }
                }
            }
            while self.start < self.end {
                match dst.write(&self.buf[self.start..self.end]) {
                    Ok(0) => return Err(ErrorKind::WriteZero.into()),
                    Ok(n) => {
                        self.start += n;
                        moved = true;
                    }
                    Err(e) if e.kind() == ErrorKind::WouldBlock => break,
                    Err(e) if e.kind() == ErrorKind::Interrupted => {}
                    Err(e) => return Err(e),
                }
            }
            if self.start == self.end {
                (self.start, self.end) = (0, 0);
                if self.eof {
                    return Ok(Pumped::Ended);
                }
            }
            if !moved {
                return Ok(Pumped::Open);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Error;

    /// A source that yields its chunks, one per read (a `WouldBlock` between batches
    /// where a chunk is `None`), then its end or an error.
    struct Source {
        chunks: Vec<Option<Vec<u8>>>,
        then: Option<ErrorKind>,
        reads: usize,
    }

    impl Source {
        fn new(mut chunks: Vec<Option<Vec<u8>>>, then: Option<ErrorKind>) -> Source {
            chunks.reverse();
            Source {
                chunks,
                then,
                reads: 0,
            }
        }
    }

    impl Read for Source {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            self.reads += 1;
            match self.chunks.pop() {
                Some(None) => Err(ErrorKind::WouldBlock.into()),
                Some(Some(mut chunk)) => {
                    let n = chunk.len().min(buf.len());
                    buf[..n].copy_from_slice(&chunk[..n]);
                    if n < chunk.len() {
                        self.chunks.push(Some(chunk.split_off(n)));
                    }
                    Ok(n)
                }
                None => match self.then {
                    None => Ok(0),
                    Some(ErrorKind::WouldBlock) => Err(ErrorKind::WouldBlock.into()),
                    Some(kind) => Err(Error::from(kind)),
                },
            }
        }
    }

    /// A destination that takes up to `room` bytes, then would block.
    struct Sink {
        got: Vec<u8>,
        room: usize,
        fail: Option<ErrorKind>,
    }

    impl Sink {
        fn with_room(room: usize) -> Sink {
            Sink {
                got: Vec::new(),
                room,
                fail: None,
            }
        }
    }

    impl Write for Sink {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            if let Some(kind) = self.fail {
                return Err(kind.into());
            }
            let n = buf.len().min(self.room);
            if n == 0 {
                return Err(ErrorKind::WouldBlock.into());
            }
            self.room -= n;
            self.got.extend_from_slice(&buf[..n]);
            Ok(n)
        }

        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn a_source_that_has_nothing_more_now_leaves_the_pipe_open() {
        let mut pipe = Pipe::new();
        let mut src = Source::new(
            vec![Some(b"GET / HTTP/1.1\r\n\r\n".to_vec())],
            Some(ErrorKind::WouldBlock),
        );
        let mut dst = Sink::with_room(usize::MAX);
        assert_eq!(pipe.pump(&mut src, &mut dst).expect("pump"), Pumped::Open);
        assert_eq!(dst.got, b"GET / HTTP/1.1\r\n\r\n");
        assert!(!pipe.is_over());
    }

    #[test]
    fn the_end_is_passed_on_only_once_everything_before_it_was_written() {
        let body: Vec<u8> = (0..3 * CAPACITY).map(|i| (i % 251) as u8).collect();
        let mut pipe = Pipe::new();
        let mut src = Source::new(vec![Some(body.clone())], None);
        // The destination takes a little at a time: the end waits behind the bytes.
        let mut dst = Sink::with_room(1000);
        assert_eq!(pipe.pump(&mut src, &mut dst).expect("pump"), Pumped::Open);
        let mut flow = Pumped::Open;
        for _ in 0..10_000 {
            dst.room = 1000;
            flow = pipe.pump(&mut src, &mut dst).expect("pump");
            if flow == Pumped::Ended {
                break;
            }
        }
        assert_eq!(flow, Pumped::Ended);
        assert_eq!(dst.got, body);
        assert!(pipe.is_over());
        // Said once: a later pump reads and writes nothing.
        let reads = src.reads;
        assert_eq!(pipe.pump(&mut src, &mut dst).expect("pump"), Pumped::Open);
        assert_eq!(src.reads, reads);
    }

    #[test]
    fn a_blocked_destination_stops_reading_once_the_buffer_is_full() {
        let body = vec![7u8; 4 * CAPACITY];
        let mut pipe = Pipe::new();
        let mut src = Source::new(vec![Some(body.clone())], None);
        let mut dst = Sink::with_room(0);
        assert_eq!(pipe.pump(&mut src, &mut dst).expect("pump"), Pumped::Open);
        assert_eq!(pipe.end - pipe.start, CAPACITY, "held: one buffer, no more");
        // Room frees up: what was held goes first, and reading resumes.
        dst.room = CAPACITY / 2;
        assert_eq!(pipe.pump(&mut src, &mut dst).expect("pump"), Pumped::Open);
        assert_eq!(dst.got.len(), CAPACITY / 2);
        assert_eq!(pipe.end - pipe.start, CAPACITY, "refilled to the bound");
    }

    #[test]
    fn a_failing_side_ends_the_pipe_with_its_error() {
        let mut pipe = Pipe::new();
        let mut src = Source::new(
            vec![Some(b"partial".to_vec())],
            Some(ErrorKind::ConnectionReset),
        );
        let mut dst = Sink::with_room(usize::MAX);
        let err = pipe.pump(&mut src, &mut dst).expect_err("reset");
        assert_eq!(err.kind(), ErrorKind::ConnectionReset);
        assert_eq!(dst.got, b"partial");
        assert!(pipe.is_over());

        let mut pipe = Pipe::new();
        let mut src = Source::new(vec![Some(b"x".to_vec())], Some(ErrorKind::WouldBlock));
        let mut dst = Sink::with_room(usize::MAX);
        dst.fail = Some(ErrorKind::BrokenPipe);
        let err = pipe.pump(&mut src, &mut dst).expect_err("broken pipe");
        assert_eq!(err.kind(), ErrorKind::BrokenPipe);
        assert!(pipe.is_over());
    }

    #[test]
    fn an_empty_source_that_ends_ends_the_pipe_at_once() {
        let mut pipe = Pipe::new();
        let mut src = Source::new(vec![None], None);
        let mut dst = Sink::with_room(usize::MAX);
        assert_eq!(pipe.pump(&mut src, &mut dst).expect("pump"), Pumped::Open);
        assert_eq!(pipe.pump(&mut src, &mut dst).expect("pump"), Pumped::Ended);
        assert!(dst.got.is_empty());
    }
}
