//! Integration tests: real processes, real sockets, the real app.

mod app_ledger;
mod bad_agents;
mod plan;
mod process;
mod proxy;
mod proxy_budget;
mod proxy_byok;
mod proxy_provider;
mod proxy_wire;
mod reference_agent;
mod rescore;
mod support;
