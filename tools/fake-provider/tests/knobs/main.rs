//! Each knob of the fake provider, seen from a real HTTP client against the real server
//! on 127.0.0.1. Timing is held to lower bounds and to the server's own plan of each
//! call (`Plan::of`), never to a wall-clock ceiling.

mod binary;
mod client;
mod faults;
mod given;
mod latency;
mod ledger;
mod rate_limit;
