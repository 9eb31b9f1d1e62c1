//! What agents act on: app processes and modality-aware targets; sinks as suites need them.

pub mod app;
pub mod browser;
pub mod cli_relay;
pub mod sinks;
pub mod target;
