//! Integration tests: real processes, real sockets, the real app.

mod app_ledger;
mod bad_agents;
mod merge;
mod plan;
mod process;
mod proxy;
mod reference_agent;
mod report;
mod rescore;
mod support;
