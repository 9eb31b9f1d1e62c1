//! A real SMTP sink: speaks enough SMTP (RFC 5321: EHLO/HELO, MAIL FROM, RCPT TO,
//! DATA, RSET, NOOP, QUIT) for any ordinary client — `curl smtp://…`, Python's smtplib
//! — to deliver a message, and stores every message it accepts with its envelope,
//! headers, subject and body. Nothing is relayed anywhere.
//!
//! Bounds: a line longer than [`LINE_CAP`] or a message larger than [`MESSAGE_CAP`] is
//! refused with the matching SMTP error; an idle connection is closed after
//! [`IDLE_TIMEOUT`].

use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tokio::task::{JoinHandle, JoinSet};

use super::{now_ms, SinkError};

pub const LINE_CAP: usize = 8 * 1024;
pub const MESSAGE_CAP: usize = 1024 * 1024;
pub const IDLE_TIMEOUT: Duration = Duration::from_secs(60);
const MAX_RECIPIENTS: usize = 100;

/// One message the sink accepted (after the final `.` of DATA).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MailMessage {
    pub at_ms: u64,
    /// The client's EHLO/HELO name.
    pub helo: String,
    pub mail_from: String,
    pub rcpt_to: Vec<String>,
    /// Header fields in order, unfolded, names as sent.
    pub headers: Vec<(String, String)>,
    pub subject: Option<String>,
    pub body: String,
    /// Size of the message data in bytes.
    pub size: usize,
}

impl MailMessage {
    /// The first header named `name` (case-insensitive).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// A running SMTP sink.
pub struct SmtpSink {
    addr: std::net::SocketAddr,
    store: Arc<Mutex<Vec<MailMessage>>>,
    stop: watch::Sender<bool>,
    accept: JoinHandle<()>,
}

impl SmtpSink {
    pub async fn start() -> Result<SmtpSink, SinkError> {
        let bind = |source| SinkError::Bind {
            sink: "smtp sink",
            source,
        };
        let listener = TcpListener::bind(("127.0.0.1", 0)).await.map_err(bind)?;
        let addr = listener.local_addr().map_err(bind)?;
        let store = Arc::new(Mutex::new(Vec::new()));
        let (stop, stopped) = watch::channel(false);
        let accept = tokio::spawn(accept_loop(listener, Arc::clone(&store), stopped));
        Ok(SmtpSink {
            addr,
            store,
            stop,
            accept,
        })
    }

    /// `smtp://127.0.0.1:PORT`
    pub fn url(&self) -> String {
        format!("smtp://{}", self.addr)
    }

    pub fn port(&self) -> u16 {
        self.addr.port()
    }

    /// Every accepted message so far, in order of acceptance.
    pub fn messages(&self) -> Vec<MailMessage> {
        self.store.lock().map(|s| s.clone()).unwrap_or_default()
    }

    /// Stop and return the final store.
    pub async fn shutdown(self) -> Vec<MailMessage> {
        let SmtpSink {
            store,
            stop,
            accept,
            ..
        } = self;
        let _ = stop.send(true);
        let _ = accept.await;
        let messages = store.lock().map(|s| s.clone()).unwrap_or_default();
        messages
    }
}

async fn accept_loop(
    listener: TcpListener,
    store: Arc<Mutex<Vec<MailMessage>>>,
    mut stop: watch::Receiver<bool>,
) {
    let mut sessions = JoinSet::new();
    loop {
        tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => {
                    let store = Arc::clone(&store);
                    sessions.spawn(async move {
                        // An I/O error ends the session; accepted messages are kept.
                        let _ = session(stream, store).await;
                    });
                }
                Err(_) => tokio::time::sleep(Duration::from_millis(10)).await,
            },
            _ = stop.changed() => break,
            Some(_) = sessions.join_next(), if !sessions.is_empty() => {}
        }
    }
    drop(listener);
    if tokio::time::timeout(Duration::from_secs(2), async {
        while sessions.join_next().await.is_some() {}
    })
    .await
    .is_err()
    {
        sessions.shutdown().await;
    }
}

/// Where a session is in the SMTP dialogue.
#[derive(Default)]
struct Envelope {
    helo: Option<String>,
    from: Option<String>,
    to: Vec<String>,
}

enum Line {
    Text(String),
    TooLong,
    Closed,
}

async fn read_line(
    reader: &mut BufReader<tokio::net::tcp::OwnedReadHalf>,
) -> std::io::Result<Line> {
    let mut buf = Vec::new();
    let read = tokio::time::timeout(IDLE_TIMEOUT, async {
        loop {
            let available = reader.fill_buf().await?;
            if available.is_empty() {
                return Ok::<bool, std::io::Error>(false);
            }
            match available.iter().position(|b| *b == b'\n') {
                Some(i) => {
                    buf.extend_from_slice(&available[..=i]);
                    reader.consume(i + 1);
                    return Ok(true);
                }
                None => {
                    let n = available.len();
                    buf.extend_from_slice(available);
                    reader.consume(n);
                    if buf.len() > LINE_CAP {
                        return Ok(true);
                    }
                }
            }
        }
    })
    .await;
    match read {
        // A line the peer never ended (it closed mid-line) is no line: a `.` without
        // its CRLF ends no message, as a real server would not deliver it.
        Err(_) | Ok(Ok(false)) => Ok(Line::Closed),
        Ok(Err(e)) => Err(e),
        Ok(Ok(_)) if buf.len() > LINE_CAP => Ok(Line::TooLong),
        Ok(Ok(_)) => {
            while matches!(buf.last(), Some(b'\n' | b'\r')) {
                buf.pop();
            }
            Ok(Line::Text(String::from_utf8_lossy(&buf).into_owned()))
        }
    }
}

async fn session(stream: TcpStream, store: Arc<Mutex<Vec<MailMessage>>>) -> std::io::Result<()> {
    let (read_half, mut write) = stream.into_split();
    let mut reader = BufReader::new(read_half);
    write
        .write_all(b"220 gauntlet.smtp-sink ESMTP ready\r\n")
        .await?;
    let mut env = Envelope::default();
    loop {
        let line = match read_line(&mut reader).await? {
            Line::Closed => return Ok(()),
            Line::TooLong => {
                write.write_all(b"500 5.5.6 line too long\r\n").await?;
                continue;
            }
            Line::Text(line) => line,
        };
        let (verb, rest) = match line.split_once(' ') {
            Some((v, r)) => (v.to_ascii_uppercase(), r.trim().to_string()),
            None => (line.trim().to_ascii_uppercase(), String::new()),
        };
        let reply: String = match verb.as_str() {
            "EHLO" => {
                env = Envelope {
                    helo: Some(rest.clone()),
                    ..Envelope::default()
                };
                format!(
                    "250-gauntlet.smtp-sink greets {rest}\r\n250-SIZE {MESSAGE_CAP}\r\n250-8BITMIME\r\n250 OK\r\n"
                )
            }
            "HELO" => {
                env = Envelope {
                    helo: Some(rest.clone()),
                    ..Envelope::default()
                };
                "250 gauntlet.smtp-sink\r\n".into()
            }
            "MAIL" => match address(&rest, "FROM:") {
                _ if env.helo.is_none() => "503 5.5.1 EHLO/HELO first\r\n".into(),
                _ if env.from.is_some() => "503 5.5.1 sender already given\r\n".into(),
                // RFC 1870: a declared size above the cap is refused before any data.
                Some(_) if declared_size(&rest).is_some_and(|n| n > MESSAGE_CAP) => {
                    format!("552 5.3.4 message larger than {MESSAGE_CAP} bytes\r\n")
                }
                Some(from) => {
                    env.from = Some(from);
                    "250 2.1.0 OK\r\n".into()
                }
                None => "501 5.5.4 syntax: MAIL FROM:<address>\r\n".into(),
            },
            "RCPT" => match address(&rest, "TO:") {
                _ if env.from.is_none() => "503 5.5.1 MAIL FROM first\r\n".into(),
                _ if env.to.len() >= MAX_RECIPIENTS => "452 4.5.3 too many recipients\r\n".into(),
                Some(to) if !to.is_empty() => {
                    env.to.push(to);
                    "250 2.1.5 OK\r\n".into()
                }
                _ => "501 5.5.4 syntax: RCPT TO:<address>\r\n".into(),
            },
            "DATA" => {
                if env.to.is_empty() {
                    "503 5.5.1 RCPT TO first\r\n".into()
                } else {
                    write
                        .write_all(b"354 end data with <CR><LF>.<CR><LF>\r\n")
                        .await?;
                    match read_data(&mut reader).await? {
                        Data::Closed => return Ok(()),
                        Data::TooLarge => {
                            env.from = None;
                            env.to.clear();
                            format!("552 5.3.4 message larger than {MESSAGE_CAP} bytes\r\n")
                        }
                        Data::Message(data) => {
                            let message = parse_message(&env, &data);
                            if let Ok(mut s) = store.lock() {
                                s.push(message);
                            }
                            env.from = None;
                            env.to.clear();
                            "250 2.0.0 OK: stored\r\n".into()
                        }
                    }
                }
            }
            "RSET" => {
                env.from = None;
                env.to.clear();
                "250 2.0.0 OK\r\n".into()
            }
            "NOOP" => "250 2.0.0 OK\r\n".into(),
            "QUIT" => {
                write.write_all(b"221 2.0.0 bye\r\n").await?;
                return Ok(());
            }
            "" => "500 5.5.2 empty command\r\n".into(),
            _ => "502 5.5.1 command not implemented\r\n".into(),
        };
        write.write_all(reply.as_bytes()).await?;
    }
}

/// `FROM:<a@b> SIZE=12` → `a@b`; `<>` (the null sender) → empty.
fn address(rest: &str, keyword: &str) -> Option<String> {
    let upper = rest.to_ascii_uppercase();
    if !upper.starts_with(keyword) {
        return None;
    }
    let value = rest[keyword.len()..].trim_start();
    if let Some(stripped) = value.strip_prefix('<') {
        let end = stripped.find('>')?;
        Some(stripped[..end].trim().to_string())
    } else {
        value.split_whitespace().next().map(str::to_string)
    }
}

/// The `SIZE=n` parameter of a MAIL FROM command.
fn declared_size(rest: &str) -> Option<usize> {
    rest.split_whitespace()
        .find_map(|p| {
            p.to_ascii_uppercase()
                .strip_prefix("SIZE=")
                .map(str::to_string)
        })
        .and_then(|n| n.parse().ok())
}

enum Data {
    Message(String),
    TooLarge,
    Closed,
}

/// Lines up to the lone `.`, dot-unstuffed. An oversized message is read to its end
/// (so the dialogue stays in step) but not kept.
async fn read_data(
    reader: &mut BufReader<tokio::net::tcp::OwnedReadHalf>,
) -> std::io::Result<Data> {
    let mut data = String::new();
    let mut too_large = false;
    loop {
        match read_line(reader).await? {
            Line::Closed => return Ok(Data::Closed),
            Line::TooLong => too_large = true,
            Line::Text(line) => {
                if line == "." {
                    return Ok(if too_large {
                        Data::TooLarge
                    } else {
                        Data::Message(data)
                    });
                }
                let line = line.strip_prefix('.').unwrap_or(&line);
                if data.len() + line.len() + 2 > MESSAGE_CAP {
                    too_large = true;
                }
                if !too_large {
                    data.push_str(line);
                    data.push_str("\r\n");
                }
            }
        }
    }
}

fn parse_message(env: &Envelope, data: &str) -> MailMessage {
    let mut headers: Vec<(String, String)> = Vec::new();
    let mut lines = data.split("\r\n");
    let mut body_lines = Vec::new();
    for line in lines.by_ref() {
        if line.is_empty() {
            break;
        }
        if line.starts_with([' ', '\t']) {
            if let Some((_, value)) = headers.last_mut() {
                value.push(' ');
                value.push_str(line.trim());
            }
            continue;
        }
        match line.split_once(':') {
            Some((name, value)) => {
                headers.push((name.trim().to_string(), value.trim().to_string()))
            }
            // Not a header: the message has no header block; this is body.
            None => {
                body_lines.push(line);
                break;
            }
        }
    }
    body_lines.extend(lines);
    let body = body_lines.join("\n").trim_end_matches('\n').to_string();
    let subject = headers
        .iter()
        .find(|(n, _)| n.eq_ignore_ascii_case("subject"))
        .map(|(_, v)| v.clone());
    MailMessage {
        at_ms: now_ms(),
        helo: env.helo.clone().unwrap_or_default(),
        mail_from: env.from.clone().unwrap_or_default(),
        rcpt_to: env.to.clone(),
        headers,
        subject,
        body,
        size: data.len(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_are_read_with_or_without_brackets_and_parameters() {
        assert_eq!(
            address("FROM:<a@b.c> SIZE=10", "FROM:"),
            Some("a@b.c".into())
        );
        assert_eq!(address("from: a@b.c", "FROM:"), Some("a@b.c".into()));
        assert_eq!(address("FROM:<>", "FROM:"), Some(String::new()));
        assert_eq!(address("TO:<x@y>", "FROM:"), None);
        assert_eq!(declared_size("FROM:<a@b> size=42 BODY=8BITMIME"), Some(42));
        assert_eq!(declared_size("FROM:<a@b>"), None);
    }

    #[test]
    fn headers_unfold_and_the_body_follows_the_blank_line() {
        let env = Envelope {
            helo: Some("h".into()),
            from: Some("a@b".into()),
            to: vec!["c@d".into()],
        };
        let m = parse_message(
            &env,
            "Subject: Quarterly\r\n  numbers\r\nTo: c@d\r\n\r\nline one\r\nline two\r\n",
        );
        assert_eq!(m.subject.as_deref(), Some("Quarterly numbers"));
        assert_eq!(m.header("to"), Some("c@d"));
        assert_eq!(m.body, "line one\nline two");
    }
}
