//! Reading a provider's usage, whole or streamed: what the three protocols share.
//!
//! Each protocol names its counts its own way and marks its stream's end with an event
//! of its own; the rest (a usage block read into [`Tokens`], a stream metered event by
//! event without parsing the events that cannot carry usage, its end and its failure
//! kept) is one piece of code, here.

use serde_json::Value;

use super::log::Tokens;
use super::peek;

/// What a wire protocol knows about its own stream.
pub(crate) trait StreamMeter: Send + 'static {
    /// Look at one event's data; return `false` to keep the event from the agent.
    fn observe(&mut self, data: &str) -> bool;
    /// The usage seen so far (all `None` when none was seen; never invented).
    fn tokens(&self) -> Tokens;
    /// Whether the protocol's end-of-stream marker was seen.
    fn complete(&self) -> bool;
    /// A failure the stream itself reported (an `error` event, a failed response).
    fn problem(&self) -> Option<String> {
        None
    }
    /// Whether that failure is the provider's own (overloaded, an internal error), not
    /// its answer to what the agent asked (a limit the request set, a prompt it refused):
    /// only then is it a fault of the call (docs/provider-faults.md).
    fn providers_problem(&self) -> bool {
        false
    }
}

/// Where an OpenAI usage block keeps its counts: Chat Completions and Responses
/// differ in these names only.
pub(crate) struct UsageFields {
    pub(crate) input: &'static str,
    pub(crate) output: &'static str,
    /// A JSON pointer below the block.
    pub(crate) cached_input: &'static str,
    /// A JSON pointer below the block.
    pub(crate) reasoning: &'static str,
}

impl UsageFields {
    /// The `usage` block of `value` (a response, a chunk), if it has a non-null one.
    pub(crate) fn tokens(&self, value: &Value) -> Option<Tokens> {
        let usage = value.get("usage").filter(|u| u.is_object())?;
        Some(Tokens {
            input: usage.get(self.input).and_then(Value::as_u64),
            output: usage.get(self.output).and_then(Value::as_u64),
            cached_input: usage.pointer(self.cached_input).and_then(Value::as_u64),
            reasoning: usage.pointer(self.reasoning).and_then(Value::as_u64),
            cache_write: None,
        })
    }
}

/// What a stream meter does with an event before parsing it: most events of a stream
/// are content, and parsing each would be most of what relaying it costs.
pub(crate) enum Peek {
    /// Nothing the meter reads: the event goes on unparsed.
    Pass,
    /// The protocol's end marker, which is not JSON (Chat's `[DONE]`).
    End,
    /// An event to parse and [`StreamEvents::read`].
    Read,
}

impl Peek {
    /// [`Peek::Read`] for an event whose `type` is one of `kinds`, [`Peek::Pass`] for
    /// any other: the `type` is peeked at without parsing the rest.
    pub(crate) fn kinds(data: &str, kinds: &[&str]) -> Peek {
        if peek::kind(data).is_some_and(|kind| kinds.contains(&kind.as_ref())) {
            Peek::Read
        } else {
            Peek::Pass
        }
    }
}

/// What one parsed event said, besides the usage its protocol keeps.
#[derive(Debug, Default)]
pub(crate) struct Said {
    /// It is the protocol's end-of-stream event.
    pub(crate) end: bool,
    /// The failure it reports.
    pub(crate) problem: Option<String>,
    /// That failure is the provider's own ([`providers_error`]).
    pub(crate) providers: bool,
    /// It is the proxy's own business, kept from the agent.
    pub(crate) hidden: bool,
}

/// How one protocol's stream events carry its usage.
pub(crate) trait StreamEvents: Send + 'static {
    /// What to do with an event's data before parsing it.
    fn peek(&self, data: &str) -> Peek;
    /// Read one event that [`StreamEvents::peek`] asked to be read.
    fn read(&mut self, event: &Value) -> Said;
    /// The usage read so far.
    fn tokens(&self) -> Tokens;
}

/// A stream meter for any protocol: its events read by `E`, the end and the failure
/// of the stream kept here.
#[derive(Debug, Default)]
pub(crate) struct Meter<E> {
    events: E,
    done: bool,
    problem: Option<String>,
    providers: bool,
}

impl<E> Meter<E> {
    pub(crate) fn reading(events: E) -> Meter<E> {
        Meter {
            events,
            done: false,
            problem: None,
            providers: false,
        }
    }
}

impl<E: StreamEvents> StreamMeter for Meter<E> {
    fn observe(&mut self, data: &str) -> bool {
        match self.events.peek(data) {
            Peek::Pass => true,
            Peek::End => {
                self.done = true;
                true
            }
            Peek::Read => {
                let Ok(event) = serde_json::from_str::<Value>(data) else {
                    return true;
                };
                let said = self.events.read(&event);
                self.done |= said.end;
                if said.problem.is_some() {
                    self.problem = said.problem;
                    self.providers = said.providers;
                }
                !said.hidden
            }
        }
    }

    fn tokens(&self) -> Tokens {
        self.events.tokens()
    }

    fn complete(&self) -> bool {
        self.done
    }

    fn problem(&self) -> Option<String> {
        self.problem.clone()
    }

    fn providers_problem(&self) -> bool {
        self.problem.is_some() && self.providers
    }
}

/// The text at the first of `pointers` that `event` has, when it is a string.
pub(crate) fn first_text<'a>(event: &'a Value, pointers: &[&str]) -> Option<&'a str> {
    pointers
        .iter()
        .find_map(|p| event.pointer(p))
        .and_then(Value::as_str)
}

/// The error codes and types by which a provider says a failure is its own: OpenAI's
/// `code` and Anthropic's `error.type`. Every other one (`invalid_prompt`,
/// `invalid_request_error`, a code no provider documents, none at all) answers what
/// the agent sent, or says nothing of whose it is: an agent must not be able to make
/// its own failure the provider's by sending what the provider refuses mid-stream.
const PROVIDERS_ERRORS: &[&str] = &[
    "server_error",
    "internal_error",
    "api_error",
    "overloaded_error",
    "rate_limit_exceeded",
    "rate_limit_error",
    "service_unavailable",
];

/// Whether the error `event` reports is the provider's own: its code or type, at the
/// first of `pointers` it has, is one of [`PROVIDERS_ERRORS`].
pub(crate) fn providers_error(event: &Value, pointers: &[&str]) -> bool {
    first_text(event, pointers).is_some_and(|code| PROVIDERS_ERRORS.contains(&code))
}

/// The problem of an `error` event, its message at the first of `pointers` it has.
pub(crate) fn error_event(event: &Value, pointers: &[&str]) -> String {
    let why = first_text(event, pointers).unwrap_or("no message");
    format!("upstream stream sent an error event: {why}")
}
