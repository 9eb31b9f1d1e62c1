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
    fault_ttfb: Duration,
    fault: Option<Fault>,
    /// How an answer answered 200 ends early, if it does, and the draw that says where.
    early: Option<(Early, u64)>,
    fixed_cut: Option<usize>,
    chunk_gaps: Rng,
    chunk_latency: crate::latency::Latency,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Early {
    /// The connection is closed.
    Cut,
    /// A stream sends its protocol's error event in place of its terminating one.
    Error,
}

/// Where in `n` things (events, bytes) an answer ends early, from one draw: evenly
/// from `least` to `n - 1`, or `least` when there are fewer.
fn at(draw: u64, least: usize, n: usize) -> usize {
    let span = n.saturating_sub(least).max(1);
    least + ((u128::from(draw) * span as u128) >> 64) as usize
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
        let early_draw = rng.unit();
        let early_at = rng.next_u64();
        // Its own generator, so that a fault's latency does not depend on how many
        // draws the answer's latency took.
        let mut fault_rng = rng.split();
        let ttfb = config.latency.sample(&mut rng);
        let fault_ttfb = match &config.fault_latency {
            Some(latency) => latency.sample(&mut fault_rng),
            None => ttfb,
        };
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
        let early = if early_draw < faults.disconnect {
            Some((Early::Cut, early_at))
        } else if early_draw < faults.disconnect + faults.stream_error {
            Some((Early::Error, early_at))
        } else {
            None
        };
        Plan {
            seq,
            ttfb,
            fault_ttfb,
            fault,
            early,
            fixed_cut: faults.disconnect_after_events,
            chunk_gaps,
            chunk_latency: config.chunk_latency,
        }
    }

    pub fn seq(&self) -> u64 {
        self.seq
    }

    /// How long the call waits before its response head when it is answered.
    pub fn ttfb(&self) -> Duration {
        self.ttfb
    }

    /// How long it waits before its response head when it is refused with a 429 or a
    /// 5xx: [`Plan::ttfb`] unless the config gives faults a latency of their own.
    pub fn fault_ttfb(&self) -> Duration {
        self.fault_ttfb
    }

    /// The failure it is answered with instead of an answer, if any.
    pub fn fault(&self) -> Option<Fault> {
        self.fault
    }

    /// For a stream of `events` events answered 200: after how many of them the
    /// connection is closed, or `None` when it is not cut. Never after the last: a cut
    /// stream lacks its terminating event.
    pub fn cut_after(&self, events: usize) -> Option<usize> {
        let (Early::Cut, draw) = self.early? else {
            return None;
        };
        let most = events.saturating_sub(1).max(1);
        Some(match self.fixed_cut {
            Some(k) => k.clamp(1, most),
            None => at(draw, 1, events),
        })
    }

    /// For a whole answer of `bytes` bytes answered 200: how many of them are sent
    /// before the connection is closed (its full length declared), or `None` when it
    /// is not cut. Never all of them.
    pub fn cut_whole_at(&self, bytes: usize) -> Option<usize> {
        let (Early::Cut, draw) = self.early? else {
            return None;
        };
        Some(at(draw, 0, bytes))
    }

    /// For a stream of `events` events answered 200: after how many of them it sends
    /// its protocol's error event and ends, or `None` when it ends as it should. At
    /// least one event comes first, and never the terminating one.
    pub fn stream_error_after(&self, events: usize) -> Option<usize> {
        let (Early::Error, draw) = self.early? else {
            return None;
        };
        Some(at(draw, 1, events).min(events.saturating_sub(1)))
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
    fn an_answer_is_cut_or_fails_mid_stream_never_both_and_each_at_its_rate() {
        let c = config(Faults {
            disconnect: 0.2,
            stream_error: 0.3,
            ..Faults::default()
        });
        let (mut cut, mut failed) = (0, 0);
        for seq in 0..20_000 {
            let p = Plan::of(&c, seq);
            let (stream_cut, whole_cut, error) = (
                p.cut_after(10),
                p.cut_whole_at(100),
                p.stream_error_after(10),
            );
            assert_eq!(stream_cut.is_some(), whole_cut.is_some(), "call {seq}");
            assert!(!(stream_cut.is_some() && error.is_some()), "call {seq}");
            if let Some(k) = whole_cut {
                assert!(k < 100, "call {seq}: {k} of 100 bytes");
                cut += 1;
            }
            if let Some(k) = error {
                assert!((1..=9).contains(&k), "call {seq}: error after {k} of 10");
                failed += 1;
            }
        }
        assert!((cut as f64 / 20_000.0 - 0.2).abs() < 0.015, "{cut}");
        assert!((failed as f64 / 20_000.0 - 0.3).abs() < 0.015, "{failed}");
        let all = config(Faults {
            stream_error: 1.0,
            ..Faults::default()
        });
        assert_eq!(Plan::of(&all, 0).stream_error_after(1), Some(0));
    }

    #[test]
    fn a_fault_waits_the_answers_latency_unless_it_has_its_own() {
        let slow = Config {
            latency: Latency::Uniform {
                min_ms: 100,
                max_ms: 900,
            },
            ..config(Faults::default())
        };
        for seq in 0..50 {
            let p = Plan::of(&slow, seq);
            assert_eq!(p.fault_ttfb(), p.ttfb());
        }
        let own = |latency| Config {
            latency,
            fault_latency: Some(Latency::Uniform {
                min_ms: 10,
                max_ms: 20,
            }),
            ..slow.clone()
        };
        let (a, b) = (
            own(slow.latency),
            own(Latency::Lognormal {
                median_ms: 50.0,
                sigma: 1.0,
            }),
        );
        for seq in 0..200 {
            let ms = Plan::of(&a, seq).fault_ttfb().as_millis();
            assert!((10..=20).contains(&ms), "call {seq}: {ms} ms");
            assert_eq!(
                Plan::of(&a, seq).fault_ttfb(),
                Plan::of(&b, seq).fault_ttfb(),
                "the answers' latency does not move the faults'"
            );
        }
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
