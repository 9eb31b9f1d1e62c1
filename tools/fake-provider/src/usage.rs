//! Tokens, as the fake provider bills them.

use serde::{Deserialize, Serialize};

/// Input and output tokens. All input is counted in `input`, whatever the protocol
/// calls its parts, as a metering proxy adds them up.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Usage {
    pub input: u64,
    pub output: u64,
}

impl Usage {
    /// What a call of `request_bytes` bytes answered in `chunks` pieces is billed: about
    /// four bytes a token in, one token a piece out. Never 0 in: every real call has a
    /// prompt.
    pub fn of_call(request_bytes: usize, chunks: u32) -> Usage {
        Usage {
            input: (request_bytes as u64).div_ceil(4).max(1),
            output: u64::from(chunks),
        }
    }

    pub fn total(self) -> u64 {
        self.input.saturating_add(self.output)
    }

    pub fn add(&mut self, other: Usage) {
        self.input = self.input.saturating_add(other.input);
        self.output = self.output.saturating_add(other.output);
    }

    /// What `self` holds beyond `other` (never below 0).
    pub fn minus(self, other: Usage) -> Usage {
        Usage {
            input: self.input.saturating_sub(other.input),
            output: self.output.saturating_sub(other.output),
        }
    }
}
