//! OpenAI Chat Completions (`POST /v1/chat/completions`), streaming and not.

mod request;
mod scripted;
mod usage;

pub(crate) use request::{ask_for_stream_usage, parse};
pub(crate) use scripted::Scripted;
pub(crate) use usage::{tokens as usage, ChatStreamMeter as StreamUsage};
