//! OpenAI Responses (`POST /v1/responses`), streaming and not: the protocol Codex
//! speaks.
//!
//! Tools are offered flat (`{"type": "function", "name", "parameters"}`); the model
//! calls one with a `function_call` output item carrying a `call_id`, and the client
//! sends its result back as a `function_call_output` input item.

mod request;
mod scripted;
mod usage;

pub(crate) use request::parse;
pub(crate) use scripted::Scripted;
pub(crate) use usage::{tokens as usage, StreamUsage};
