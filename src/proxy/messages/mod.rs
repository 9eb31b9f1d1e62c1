//! Anthropic Messages (`POST /v1/messages`, also `?beta=true`), streaming and not:
//! the protocol Claude Code speaks.
//!
//! Tools are offered as `{"name", "input_schema"}`; the model calls one with a
//! `tool_use` content block, and the client sends its result back as a `tool_result`
//! block in a user message. Usage is split: `input_tokens` excludes cache reads and
//! writes, which are counted apart; a stream reports input in `message_start` and the
//! final output count in `message_delta`.

mod request;
mod scripted;
mod usage;

pub(crate) use request::{count_tokens, parse};
pub(crate) use scripted::Scripted;
pub(crate) use usage::{tokens as usage, StreamUsage};
