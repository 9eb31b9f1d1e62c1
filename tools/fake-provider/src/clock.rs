//! The time a rate limit's window is kept in: the machine's by default, a hand-moved
//! one in tests, so that a test of a per-minute budget neither waits a minute nor
//! depends on how fast the machine is.

use std::sync::Mutex;
use std::time::{Duration, Instant};

pub trait Clock: Send + Sync + 'static {
    /// Time since an origin of the clock's own; never goes back.
    fn now(&self) -> Duration;
}

/// The machine's monotonic clock.
#[derive(Debug)]
pub struct SystemClock(Instant);

impl Default for SystemClock {
    fn default() -> SystemClock {
        SystemClock(Instant::now())
    }
}

impl Clock for SystemClock {
    fn now(&self) -> Duration {
        self.0.elapsed()
    }
}

/// A clock that stands still until moved.
#[derive(Debug, Default)]
pub struct ManualClock(Mutex<Duration>);

impl ManualClock {
    pub fn advance(&self, by: Duration) {
        let mut now = self.0.lock().unwrap_or_else(|p| p.into_inner());
        *now += by;
    }
}

impl Clock for ManualClock {
    fn now(&self) -> Duration {
        *self.0.lock().unwrap_or_else(|p| p.into_inner())
    }
}
