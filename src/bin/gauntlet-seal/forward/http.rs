//! The HTTP requests a relayed connection carries, read from the bytes the client
//! sends as they pass: each request's head (`httparse`), its body skipped (by its
//! `Content-Length`, or chunk by chunk), then the next request. Bounded: a head is
//! kept up to [`MAX_HEAD`] bytes, never more. Bytes that cannot be followed as HTTP/1
//! requests (not HTTP, an ambiguous body length, a protocol the connection switches
//! to, a head past the bound) end the reading for the connection, which is then said
//! to be unparsed from there on: what they held is not known.

/// The most bytes of a request head (request line and headers), or of a chunk-size
/// or trailer line, held while it is incomplete.
pub const MAX_HEAD: usize = 16 << 10;

/// The most headers of one request.
const MAX_HEADERS: usize = 128;

/// The most bytes of a method kept.
const MAX_METHOD: usize = 32;

/// What the bytes fed so far held.
#[derive(Debug, PartialEq, Eq)]
pub enum Seen {
    Request {
        method: String,
        /// Cut at `gauntlet::evidence::observed::MAX_REQUEST_PATH_BYTES`.
        path: String,
        path_cut: bool,
        /// Its `Origin` headers, joined by `, `, cut at
        /// `gauntlet::evidence::observed::MAX_ORIGIN_BYTES`.
        origin: Option<String>,
    },
    /// From here on the bytes are not read: why.
    Unparsed(String),
}

#[derive(Debug)]
enum State {
    Head,
    /// Body bytes left of a request with a `Content-Length`.
    Body(u64),
    ChunkSize,
    /// Bytes left of a chunk's data.
    ChunkData(u64),
    /// The CRLF after a chunk's data.
    ChunkEnd,
    Trailers,
    Done,
}

/// Reads the requests of one connection, incrementally.
pub struct Requests {
    state: State,
    /// What is held of an incomplete head or line.
    held: Vec<u8>,
}

impl Requests {
    pub fn new() -> Requests {
        Requests {
            state: State::Head,
            held: Vec::new(),
        }
    }

    /// Read `bytes`, the next the client sent, appending what they complete to `out`.
    pub fn feed(&mut self, mut bytes: &[u8], out: &mut Vec<Seen>) {
        while !bytes.is_empty() {
            match &mut self.state {
                State::Done => return,
                State::Body(left) | State::ChunkData(left) => {
                    let n = bytes
                        .len()
                        .min(usize::try_from(*left).unwrap_or(usize::MAX));
                    bytes = &bytes[n..];
                    *left -= n as u64;
                    if *left == 0 {
                        self.state = match self.state {
                            State::ChunkData(_) => State::ChunkEnd,
                            _ => State::Head,
                        };
                    }
                }
                State::Head | State::ChunkSize | State::ChunkEnd | State::Trailers => {
                    // What the held bytes and these make; what is left over of
                    // `bytes` after the head or line is fed again.
                    let held = self.held.len();
                    let take = bytes.len().min(MAX_HEAD + 1 - held);
                    self.held.extend_from_slice(&bytes[..take]);
                    match self.step(out) {
                        Some(used) => {
                            // `used` counts from the start of the held bytes.
                            let from_bytes = used.saturating_sub(held);
                            self.held.clear();
                            bytes = &bytes[from_bytes.min(bytes.len())..];
                        }
                        None => {
                            if self.held.len() > MAX_HEAD {
                                self.stop(
                                    out,
                                    format!("a request head or line longer than {MAX_HEAD} bytes"),
                                );
                                return;
                            }
                            bytes = &bytes[take..];
                        }
                    }
                }
            }
        }
    }

    fn stop(&mut self, out: &mut Vec<Seen>, why: String) {
        out.push(Seen::Unparsed(why));
        self.state = State::Done;
        self.held = Vec::new();
    }

    /// Act on the held bytes in a line state: how many of them were used, `None`
    /// while incomplete.
    fn step(&mut self, out: &mut Vec<Seen>) -> Option<usize> {
        let held = &self.held[..];
        match self.state {
            State::Head => {
                let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
                let mut req = httparse::Request::new(&mut headers);
                match req.parse(held) {
                    Ok(httparse::Status::Partial) => None,
                    Err(e) => {
                        self.stop(out, format!("not an HTTP/1 request: {e}"));
                        Some(0)
                    }
                    Ok(httparse::Status::Complete(used)) => {
                        let method = req.method.unwrap_or("").to_owned();
                        let target = req.path.unwrap_or("");
                        let (path, path_cut) = cut(target);
                        out.push(Seen::Request {
                            method: cut_str(&method, MAX_METHOD),
                            path,
                            path_cut,
                            origin: origin(req.headers),
                        });
                        let next = body(&method, req.headers);
                        match next {
                            Ok(state) => self.state = state,
                            Err(why) => self.stop(out, why),
                        }
                        Some(used)
                    }
                }
            }
            State::ChunkSize => match httparse::parse_chunk_size(held) {
                Ok(httparse::Status::Partial) => None,
                Err(_) => {
                    self.stop(out, "a chunked body whose chunk size does not parse".into());
                    Some(0)
                }
                Ok(httparse::Status::Complete((used, 0))) => {
                    self.state = State::Trailers;
                    Some(used)
                }
                Ok(httparse::Status::Complete((used, size))) => {
                    self.state = State::ChunkData(size);
                    Some(used)
                }
            },
            State::ChunkEnd => {
                if held.len() < 2 {
                    return None;
                }
                if &held[..2] == b"\r\n" {
                    self.state = State::ChunkSize;
                } else {
                    self.stop(out, "a chunk's data not followed by CRLF".into());
                }
                Some(2)
            }
            State::Trailers => {
                let line = held.windows(2).position(|w| w == b"\r\n")?;
                if line == 0 {
                    self.state = State::Head;
                }
                Some(line + 2)
            }
            State::Body(_) | State::ChunkData(_) | State::Done => Some(0),
        }
    }
}

/// A request's `Origin` headers, joined (a request with two says both, and is no
/// page's): `None` when it has none.
fn origin(headers: &[httparse::Header<'_>]) -> Option<String> {
    let all: Vec<String> = headers
        .iter()
        .filter(|h| h.name.eq_ignore_ascii_case("origin"))
        .map(|h| String::from_utf8_lossy(h.value).trim().to_owned())
        .collect();
    let max = gauntlet::evidence::observed::MAX_ORIGIN_BYTES;
    (!all.is_empty()).then(|| cut_str(&all.join(", "), max))
}

/// What follows a request's head, from its method and headers.
fn body(method: &str, headers: &[httparse::Header<'_>]) -> Result<State, String> {
    let named = |name: &'static str| {
        headers
            .iter()
            .filter(move |h| h.name.eq_ignore_ascii_case(name))
    };
    if method.eq_ignore_ascii_case("CONNECT") || named("upgrade").next().is_some() {
        return Err("the connection asked to switch protocols".into());
    }
    let lengths: Vec<&httparse::Header<'_>> = named("content-length").collect();
    let codings: Vec<&httparse::Header<'_>> = named("transfer-encoding").collect();
    match (&lengths[..], &codings[..]) {
        ([], []) => Ok(State::Head),
        ([one], []) => {
            let text = std::str::from_utf8(one.value).unwrap_or("");
            match text.trim().parse::<u64>() {
                Ok(0) => Ok(State::Head),
                Ok(n) if text.trim().bytes().all(|b| b.is_ascii_digit()) => Ok(State::Body(n)),
                _ => Err("a Content-Length that is not a number".into()),
            }
        }
        ([], [one]) if one.value.trim_ascii().eq_ignore_ascii_case(b"chunked") => {
            Ok(State::ChunkSize)
        }
        ([], _) => Err("a transfer coding other than chunked alone".into()),
        (_, []) => Err("more than one Content-Length".into()),
        _ => Err("both a Content-Length and a Transfer-Encoding".into()),
    }
}

/// A request target cut at the record's bound, at a character boundary.
fn cut(target: &str) -> (String, bool) {
    let max = gauntlet::evidence::observed::MAX_REQUEST_PATH_BYTES;
    (cut_str(target, max), target.len() > max)
}

fn cut_str(s: &str, max: usize) -> String {
    let mut end = s.len().min(max);
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    s[..end].to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn req(method: &str, path: &str) -> Seen {
        Seen::Request {
            method: method.into(),
            path: path.into(),
            path_cut: false,
            origin: None,
        }
    }

    /// What `bytes` hold, fed whole and fed one byte at a time (the same).
    fn read(bytes: &[u8]) -> Vec<Seen> {
        let mut whole = Vec::new();
        Requests::new().feed(bytes, &mut whole);
        let mut bytewise = Vec::new();
        let mut r = Requests::new();
        for b in bytes {
            r.feed(std::slice::from_ref(b), &mut bytewise);
        }
        assert_eq!(whole, bytewise);
        whole
    }

    #[test]
    fn requests_on_one_connection_are_read_with_their_bodies_skipped() {
        let bytes = b"GET /api/notes HTTP/1.1\r\nHost: x\r\n\r\n\
POST /api/notes HTTP/1.1\r\nContent-Length: 28\r\n\r\nDELETE /api/notes/2 HTTP/1.1\
DELETE /api/notes/4 HTTP/1.1\r\nHost: x\r\n\r\n\
PUT /a HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n4\r\nGET \r\n18;x=y\r\nDELETE /b HTTP/1.1\r\n\r\n12\r\n0\r\nT: 1\r\n\r\n\
HEAD / HTTP/1.0\r\n\r\n";
        assert_eq!(
            read(bytes),
            [
                req("GET", "/api/notes"),
                req("POST", "/api/notes"),
                req("DELETE", "/api/notes/4"),
                req("PUT", "/a"),
                req("HEAD", "/"),
            ]
        );
    }

    #[test]
    fn a_request_says_the_page_it_came_from() {
        let bytes =
            b"DELETE /api/notes/2 HTTP/1.1\r\nHost: x\r\norigin: http://127.0.0.1:9\r\n\r\n\
DELETE /api/notes/3 HTTP/1.1\r\nOrigin: null\r\n\r\n\
DELETE /api/notes/4 HTTP/1.1\r\nOrigin: http://127.0.0.1:9\r\nOrigin: null\r\n\r\n\
GET / HTTP/1.1\r\n\r\n";
        let origins: Vec<Option<String>> = read(bytes)
            .into_iter()
            .map(|s| match s {
                Seen::Request { origin, .. } => origin,
                Seen::Unparsed(why) => panic!("{why}"),
            })
            .collect();
        assert_eq!(
            origins,
            [
                Some("http://127.0.0.1:9".to_owned()),
                Some("null".to_owned()),
                // Two: no one page's.
                Some("http://127.0.0.1:9, null".to_owned()),
                None,
            ]
        );
        let long = format!(
            "GET / HTTP/1.1\r\nOrigin: http://{}\r\n\r\n",
            "a".repeat(1000)
        );
        match &read(long.as_bytes())[0] {
            Seen::Request {
                origin: Some(o), ..
            } => assert_eq!(o.len(), gauntlet::evidence::observed::MAX_ORIGIN_BYTES),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn what_cannot_be_followed_is_unparsed_from_there_on() {
        let unparsed = |bytes: &[u8]| {
            let seen = read(bytes);
            match seen.last() {
                Some(Seen::Unparsed(why)) => (seen.len() - 1, why.clone()),
                other => panic!("{other:?}"),
            }
        };
        assert!(unparsed(b"\x16\x03\x01\x02\x00")
            .1
            .contains("not an HTTP/1 request"));
        assert!(unparsed(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\x00\x00")
            .1
            .contains("HTTP/1"));
        let (before, why) =
            unparsed(b"POST / HTTP/1.1\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n");
        assert_eq!((before, why.contains("both")), (1, true));
        assert!(
            unparsed(b"POST / HTTP/1.1\r\nContent-Length: 3\r\nContent-Length: 3\r\n\r\n")
                .1
                .contains("more than one")
        );
        assert!(unparsed(b"POST / HTTP/1.1\r\nContent-Length: +3\r\n\r\n")
            .1
            .contains("not a number"));
        assert!(
            unparsed(b"GET /ws HTTP/1.1\r\nUpgrade: websocket\r\n\r\n\x81\x05hello")
                .1
                .contains("switch")
        );
        assert!(
            unparsed(b"POST / HTTP/1.1\r\nTransfer-Encoding: gzip, chunked\r\n\r\n")
                .1
                .contains("chunked alone")
        );
        let mut long = b"GET /".to_vec();
        long.extend(std::iter::repeat_n(b'a', MAX_HEAD + 10));
        assert!(unparsed(&long).1.contains("longer than"));
        // Nothing after it is read.
        let mut out = Vec::new();
        let mut r = Requests::new();
        r.feed(b"junk\r\n\r\n", &mut out);
        r.feed(b"DELETE /x HTTP/1.1\r\n\r\n", &mut out);
        assert_eq!(out.len(), 1);
    }

    #[test]
    fn a_long_target_is_cut_and_says_so() {
        let max = gauntlet::evidence::observed::MAX_REQUEST_PATH_BYTES;
        let path = format!("/{}", "é".repeat(max));
        let seen = read(format!("GET {path} HTTP/1.1\r\n\r\n").as_bytes());
        match &seen[..] {
            [Seen::Request {
                path: p,
                path_cut: true,
                ..
            }] => {
                assert!(p.len() <= max && path.starts_with(p.as_str()))
            }
            other => panic!("{other:?}"),
        }
    }
}
