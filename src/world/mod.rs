//! What agents act on: app processes now; sinks and workspaces as suites need them.

pub mod app;
