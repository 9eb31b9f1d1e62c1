//! Integration tests: real processes, real sockets, the real app.

mod bad_agents;
mod plan;
mod rescore;
mod support;
