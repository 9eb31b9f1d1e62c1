//! What the fake provider billed, per API key: every call it received and how it
//! answered, and the tokens of every usage block it sent. A metering proxy in front of
//! it should have metered exactly `billed`; `unreported` is what a real provider
//! would also have billed but no meter could see (a stream cut or failed before its
//! usage, a whole answer cut before its end, a Chat stream that did not ask for it).
//!
//! An answer that ends early is billed in full: the provider produced it before the
//! network or its own failure kept it from the client, and a real provider bills what
//! it generated, not what arrived. What the client could see of it is in `billed`,
//! the rest in `unreported`, so a meter is held to exactly what reached it and
//! `unreported` says how much it could not have seen. A cut whole answer is never
//! parseable, so all of its usage is unreported.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard};

use serde::{Deserialize, Serialize};

use crate::usage::Usage;

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Ledger {
    /// Per API key, as the calls carried it (the fake's keys are not secrets).
    pub keys: BTreeMap<String, KeyLedger>,
    /// Model calls refused for carrying no key.
    pub unauthorized: u64,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct KeyLedger {
    /// Model calls received.
    pub calls: u64,
    /// Answered 200, whole or streamed.
    pub answered: u64,
    /// Of those, streamed.
    pub streamed: u64,
    /// Answered 429, for the key's budget or drawn.
    pub rate_limited: u64,
    /// Answered 5xx.
    pub server_errors: u64,
    /// Answered 400: not a JSON object.
    pub bad_requests: u64,
    /// Answered 400: the answer the call carried for the fake to return (the
    /// `x-gauntlet-answer` headers) was malformed. Never billed.
    pub refused_answers: u64,
    /// Of the calls answered 200, those answered with the answer they carried.
    pub given_answers: u64,
    /// Streams cut before their terminating event.
    pub disconnects: u64,
    /// Whole answers cut part-way through their body.
    pub whole_disconnects: u64,
    /// Streams that sent their protocol's error event in place of their terminating
    /// one.
    pub stream_errors: u64,
    /// Answers that sent a usage block.
    pub billed_calls: u64,
    /// The tokens those usage blocks stated (a stream's last one counts).
    pub billed: Usage,
    /// Tokens of answers whose usage was never sent, or sent only in part.
    pub unreported: Usage,
}

impl Ledger {
    /// Every key's figures added up.
    pub fn total(&self) -> KeyLedger {
        let mut t = KeyLedger::default();
        for k in self.keys.values() {
            t.calls += k.calls;
            t.answered += k.answered;
            t.streamed += k.streamed;
            t.rate_limited += k.rate_limited;
            t.server_errors += k.server_errors;
            t.bad_requests += k.bad_requests;
            t.refused_answers += k.refused_answers;
            t.given_answers += k.given_answers;
            t.disconnects += k.disconnects;
            t.whole_disconnects += k.whole_disconnects;
            t.stream_errors += k.stream_errors;
            t.billed_calls += k.billed_calls;
            t.billed.add(k.billed);
            t.unreported.add(k.unreported);
        }
        t
    }
}

/// The ledger the server records into, shared by every connection.
#[derive(Debug, Default)]
pub(crate) struct Book(Mutex<Ledger>);

impl Book {
    pub(crate) fn snapshot(&self) -> Ledger {
        self.lock().clone()
    }

    fn lock(&self) -> MutexGuard<'_, Ledger> {
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub(crate) fn unauthorized(&self) {
        self.lock().unauthorized += 1;
    }

    /// Change `key`'s figures.
    pub(crate) fn with(&self, key: &str, change: impl FnOnce(&mut KeyLedger)) {
        let mut ledger = self.lock();
        change(ledger.keys.entry(key.to_owned()).or_default());
    }

    /// A whole answer stating `usage` (`None`: it has no usage block), about to be
    /// sent; `cut`: only part of it.
    pub(crate) fn whole(&self, key: &str, usage: Option<Usage>, cut: bool) {
        self.with(key, |k| {
            k.answered += 1;
            match (usage, cut) {
                (Some(u), true) => k.unreported.add(u),
                (Some(u), false) => {
                    k.billed_calls += 1;
                    k.billed.add(u);
                }
                (None, _) => {}
            }
            if cut {
                k.whole_disconnects += 1;
            }
        });
    }
}

/// How a stream ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum End {
    /// All its events were sent.
    Sent,
    /// Cut by the fake before its terminating event.
    Cut,
    /// Its client hung up.
    Left,
}

/// One stream's account: billed as its usage-bearing events go out, settled once when
/// it ends, is cut, or its client leaves.
pub(crate) struct StreamBill {
    book: Arc<Book>,
    key: String,
    full: Usage,
    reported: Option<Usage>,
    /// Its last event is its protocol's error event.
    fails: bool,
    settled: bool,
}

impl StreamBill {
    /// A stream that bills `full` when it ends, whatever it sent; `fails`: it ends
    /// with its protocol's error event.
    pub(crate) fn open(book: Arc<Book>, key: String, full: Usage, fails: bool) -> StreamBill {
        book.with(&key, |k| {
            k.answered += 1;
            k.streamed += 1;
        });
        StreamBill {
            book,
            key,
            full,
            reported: None,
            fails,
            settled: false,
        }
    }

    /// The stream is about to send an event declaring `usage` so far: billed before
    /// the bytes leave, so that whatever a client has read, the ledger already holds.
    pub(crate) fn declare(&mut self, usage: Usage) {
        let before = self.reported.unwrap_or_default();
        let first = self.reported.is_none();
        self.reported = Some(usage);
        self.book.with(&self.key, |k| {
            if first {
                k.billed_calls += 1;
            }
            k.billed.add(usage.minus(before));
        });
    }

    pub(crate) fn settle(&mut self, end: End) {
        if std::mem::replace(&mut self.settled, true) {
            return;
        }
        let unreported = self.full.minus(self.reported.unwrap_or_default());
        let fails = self.fails;
        self.book.with(&self.key, |k| {
            match end {
                End::Cut => k.disconnects += 1,
                End::Sent if fails => k.stream_errors += 1,
                End::Sent | End::Left => {}
            }
            k.unreported.add(unreported);
        });
    }
}

impl Drop for StreamBill {
    /// A client that hung up: its stream is dropped unfinished.
    fn drop(&mut self) {
        self.settle(End::Left);
    }
}
