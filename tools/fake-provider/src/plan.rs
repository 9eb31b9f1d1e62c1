//! What happens to one call, decided before it is answered: a pure function of the
//! config and the call's number, so that a test can ask what the server meant to do
//! (its delay schedule, its fault) and hold what it saw to that, instead of to a
//! wall-clock threshold.

use std::time::Duration;

use crate::config::Config;
use crate::rng::Rng;

/// A failure drawn for a call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    /// 429, whatever the key's budget.
    RateLimited,
    /// This 5xx status (529 where the protocol has it).
    ServerError(u16),
}

/// One call's schedule and fate.
#[derive(Debug, Clone)]
pub struct Plan {
    seq: u64,
    ttfb: Duration,
    fault: Option<Fault>,
    /// Whether a stream answered 200 is cut, and the draw that says where.
    cut: Option<u64>,
    fixed_cut: Option<usize>,
    chunk_gaps: Rng,
    chunk_latency: crate::latency::Latency,
}

impl Plan {
    /// The plan of call `seq` (counted from 0 in arrival order).
    pub fn of(config: &Config, seq: u64) -> Plan {
        let mut rng = Rng::for_call(config.seed, seq);
        let chunk_gaps = rng.split();
        // Every draw is taken whatever the knobs, in a fixed order, so that turning
        // one knob never changes what another draws.
        let fault_draw = rng.unit();
        let status_draw = rng.next_u64();
        let cut_draw = rng.unit();
        let cut_at = rng.next_u64();
        let ttfb = config.latency.sample(&mut rng);
        let faults = &config.faults;
        let fault = if fault_draw < faults.rate_limited {
            Some(Fault::RateLimited)
        } else if fault_draw < faults.rate_limited + faults.server_error {
            let statuses = &faults.server_error_statuses;
            let at = ((u128::from(status_draw) * statuses.len() as u128) >> 64) as usize;
            statuses.get(at).copied().map(Fault::ServerError)
        } else {
            None
        };
        Plan {
            seq,
            ttfb,
            fault,
            cut: (cut_draw < faults.disconnect).then_some(cut_at),
            fixed_cut: faults.disconnect_after_events,
            chunk_gaps,
            chunk_latency: config.chunk_latency,
        }
    }

    pub fn seq(&self) -> u64 {
        self.seq
    }

    /// How long the call waits before its response head.
    pub fn ttfb(&self) -> Duration {
        self.ttfb
    }

    /// The failure it is answered with instead of an answer, if any.
    pub fn fault(&self) -> Option<Fault> {
        self.fault
    }

    /// For a stream of `events` events answered 200: after how many of them the
    /// connection is closed, or `None` when it runs to its end. Never after the last:
    /// a cut stream lacks its terminating event.
    pub fn cut_after(&self, events: usize) -> Option<usize> {
        let draw = self.cut?;
        let most = events.saturating_sub(1).max(1);
        Some(match self.fixed_cut {
            Some(k) => k.clamp(1, most),
            None => 1 + ((u128::from(draw) * most as u128) >> 64) as usize,
        })
    }

    /// The waits before each event of a stream of `events` events after its first.
    pub fn chunk_gaps(&self, events: usize) -> Vec<Duration> {
        let mut rng = self.chunk_gaps.clone();
        (1..events)
            .map(|_| self.chunk_latency.sample(&mut rng))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Faults;
    use crate::latency::Latency;

    fn config(faults: Faults) -> Config {
        Config {
            seed: 11,
            faults,
            ..Config::default()
        }
    }

    #[test]
    fn faults_come_at_their_rates() {
        let c = config(Faults {
            rate_limited: 0.05,
            server_error: 0.10,
            disconnect: 0.20,
            ..Faults::default()
        });
        let plans: Vec<Plan> = (0..20_000).map(|seq| Plan::of(&c, seq)).collect();
        let rate = |hit: &dyn Fn(&Plan) -> bool| {
            plans.iter().filter(|p| hit(p)).count() as f64 / plans.len() as f64
        };
        let limited = rate(&|p| p.fault() == Some(Fault::RateLimited));
        let errors = rate(&|p| matches!(p.fault(), Some(Fault::ServerError(_))));
        let cut = rate(&|p| p.cut_after(10).is_some());
        assert!((limited - 0.05).abs() < 0.01, "{limited}");
        assert!((errors - 0.10).abs() < 0.01, "{errors}");
        assert!((cut - 0.20).abs() < 0.015, "{cut}");
        for status in [500, 502, 503, 529] {
            assert!(plans
                .iter()
                .any(|p| p.fault() == Some(Fault::ServerError(status))));
        }
    }

    #[test]
    fn a_cut_stream_keeps_at_least_one_event_and_never_its_last() {
        let c = config(Faults {
            disconnect: 1.0,
            ..Faults::default()
        });
        let mut seen = std::collections::BTreeSet::new();
        for seq in 0..2000 {
            let k = Plan::of(&c, seq).cut_after(5).expect("every stream is cut");
            assert!((1..=4).contains(&k), "{k}");
            seen.insert(k);
        }
        assert_eq!(seen.len(), 4, "{seen:?}");
        let fixed = config(Faults {
            disconnect: 1.0,
            disconnect_after_events: Some(9),
            ..Faults::default()
        });
        assert_eq!(Plan::of(&fixed, 0).cut_after(5), Some(4));
    }

    #[test]
    fn turning_one_knob_leaves_the_others_draws_alone() {
        let slow = Config {
            latency: Latency::Uniform {
                min_ms: 0,
                max_ms: 1000,
            },
            ..config(Faults::default())
        };
        let faulty = Config {
            faults: Faults {
                rate_limited: 0.5,
                ..Faults::default()
            },
            ..slow.clone()
        };
        for seq in 0..100 {
            assert_eq!(Plan::of(&slow, seq).ttfb(), Plan::of(&faulty, seq).ttfb());
        }
    }
}
