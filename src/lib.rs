//! gauntlet: an evaluation harness for AI agents that lives inside `cargo test`.
//!
//! A trial's data goes one way (see `docs/architecture.md`):
//! data --load--> [`spec`] --plan--> [`plan::Trial`] --execute--> world + proxy + agent
//! --observe--> [`evidence`] --score (pure)--> [`score::Verdict`] --append--> [`record`].
//!
//! The pure core (`spec`, `evidence` parsing, `score`) does no I/O beyond reading its
//! input files; processes, sockets and clocks live at the edges (`world`, `proxy`,
//! `agent`, `record`, `suites`, `harness`).

pub mod agent;
pub mod binaries;
pub mod cli;
pub mod config;
pub mod evidence;
pub mod flowtest;
pub mod harness;
pub mod hash;
pub mod json;
pub mod phases;
pub mod plan;
pub mod proxy;
pub mod record;
pub mod redteam;
pub mod report;
pub mod scaffold;
pub mod score;
pub mod spec;
pub mod suites;
pub mod sys;
pub mod trial;
pub mod world;

/// The harness version written into every record.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");
