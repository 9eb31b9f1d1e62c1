//! The scorecard suite's execution: one probe against a fresh agent, end to end.

pub mod record;
