//! Integration tests: real processes, real sockets, the real app.

mod app_ledger;
mod bad_agents;
mod browser;
mod flowtest;
mod plan;
mod process;
mod proxy;
mod reference_agent;
mod rescore;
mod support;
