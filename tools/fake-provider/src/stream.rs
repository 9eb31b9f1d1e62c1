//! An answer's body as the client receives it. A stream: its events one frame each,
//! spaced by the plan's gaps, billed as their usage goes out, and cut where the plan
//! says, by ending the body with an error, on which the server drops the connection
//! without the stream's terminating event or the chunked encoding's last chunk. A cut
//! whole answer: the part of its body that is sent, then the same error, short of the
//! `content-length` its head declared.

use std::time::Duration;

use bytes::Bytes;
use futures_util::Stream;
use hyper::body::Frame;

use crate::ledger::{End, StreamBill};
use crate::protocol::Event;

struct Sending {
    events: std::vec::IntoIter<Event>,
    gaps: std::vec::IntoIter<Duration>,
    sent: usize,
    cut_after: Option<usize>,
    bill: StreamBill,
    done: bool,
}

pub(crate) fn frames(
    events: Vec<Event>,
    gaps: Vec<Duration>,
    cut_after: Option<usize>,
    bill: StreamBill,
) -> impl Stream<Item = Result<Frame<Bytes>, std::io::Error>> + Send + 'static {
    let sending = Sending {
        events: events.into_iter(),
        gaps: gaps.into_iter(),
        sent: 0,
        cut_after,
        bill,
        done: false,
    };
    futures_util::stream::unfold(sending, |mut s| async move {
        if s.done {
            return None;
        }
        if s.sent > 0 {
            if let Some(gap) = s.gaps.next().filter(|g| !g.is_zero()) {
                tokio::time::sleep(gap).await;
            }
        }
        if s.cut_after == Some(s.sent) {
            // The server writes what it holds only when the body has nothing ready;
            // an error first would drop the events not yet written with the
            // connection, and the cut would come earlier than planned.
            tokio::task::yield_now().await;
            s.bill.settle(End::Cut);
            s.done = true;
            let cut =
                std::io::Error::other(format!("fake provider: stream cut after {} events", s.sent));
            return Some((Err(cut), s));
        }
        let Some(event) = s.events.next() else {
            s.bill.settle(End::Sent);
            return None;
        };
        if let Some(usage) = event.reported {
            s.bill.declare(usage);
        }
        s.sent += 1;
        Some((Ok(Frame::data(Bytes::from(event.text))), s))
    })
}

/// The first `sent` bytes of `body`, then a cut.
pub(crate) fn cut_whole(
    body: Bytes,
    sent: usize,
) -> impl Stream<Item = Result<Frame<Bytes>, std::io::Error>> + Send + 'static {
    let total = body.len();
    let part = body.slice(..sent.min(total));
    futures_util::stream::unfold(Some(part), move |part| async move {
        match part {
            Some(part) if !part.is_empty() => Some((Ok(Frame::data(part)), Some(Bytes::new()))),
            Some(_) => {
                // As for a stream: what was sent leaves before the connection drops.
                tokio::task::yield_now().await;
                let cut = std::io::Error::other(format!(
                    "fake provider: answer cut after {sent} of {total} bytes"
                ));
                Some((Err(cut), None))
            }
            None => None,
        }
    })
}
