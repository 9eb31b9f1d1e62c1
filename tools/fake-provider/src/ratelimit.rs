//! The per-key budget: at most so many calls in any 60 seconds, as providers count
//! requests per minute. A refused call is not counted, so a client that waits the
//! `retry-after` it was given gets through.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::clock::Clock;

const WINDOW: Duration = Duration::from_secs(60);

pub(crate) struct RateLimiter {
    per_minute: Option<u32>,
    clock: Arc<dyn Clock>,
    /// Each key's admitted calls in the window, oldest first.
    windows: Mutex<HashMap<String, VecDeque<Duration>>>,
}

impl RateLimiter {
    pub(crate) fn new(per_minute: Option<u32>, clock: Arc<dyn Clock>) -> RateLimiter {
        RateLimiter {
            per_minute,
            clock,
            windows: Mutex::default(),
        }
    }

    /// Admit a call of `key`, or say in how many whole seconds (at least 1) the oldest
    /// call in its window leaves it.
    pub(crate) fn admit(&self, key: &str) -> Result<(), u64> {
        let Some(limit) = self.per_minute else {
            return Ok(());
        };
        let now = self.clock.now();
        let mut windows = self.windows.lock().unwrap_or_else(|p| p.into_inner());
        let window = windows.entry(key.to_owned()).or_default();
        while window.front().is_some_and(|t| now >= *t + WINDOW) {
            window.pop_front();
        }
        match window.front() {
            Some(oldest) if window.len() >= limit as usize => {
                let wait = (*oldest + WINDOW).saturating_sub(now);
                Err(wait.as_secs_f64().ceil().max(1.0) as u64)
            }
            _ => {
                window.push_back(now);
                Ok(())
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::ManualClock;

    #[test]
    fn a_key_over_its_budget_waits_for_its_oldest_call_to_leave_the_window() {
        let clock = Arc::new(ManualClock::default());
        let limiter = RateLimiter::new(Some(2), clock.clone());
        assert_eq!(limiter.admit("a"), Ok(()));
        clock.advance(Duration::from_secs(10));
        assert_eq!(limiter.admit("a"), Ok(()));
        clock.advance(Duration::from_millis(20_500));
        // The first call, at 0 s, leaves at 60 s: 29.5 s from now, said as 30.
        assert_eq!(limiter.admit("a"), Err(30));
        assert_eq!(limiter.admit("b"), Ok(()), "another key has its own budget");
        clock.advance(Duration::from_millis(29_500));
        assert_eq!(limiter.admit("a"), Ok(()));
        assert_eq!(limiter.admit("a"), Err(10));
    }
}
