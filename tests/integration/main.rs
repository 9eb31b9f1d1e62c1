//! Integration tests: real processes, real sockets, the real app.

mod app_ledger;
mod app_notes;
mod app_tally;
mod app_wordbadge;
mod bad_agents;
mod browser;
mod challenge;
mod flowtest;
mod hostile;
mod integrity;
mod merge;
mod plan;
mod process;
mod proxy;
mod proxy_budget;
mod proxy_byok;
mod proxy_provider;
mod proxy_wire;
mod reference_agent;
mod report;
mod rescore;
mod scorecard;
mod sealing;
mod sessions;
mod sinks;
mod support;
