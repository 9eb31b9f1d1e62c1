//! Latency distributions: how long a provider takes to its first byte, and between the
//! events of a stream.
//!
//! Real providers' latencies are skewed, a long tail over a typical median, which a
//! log-normal models with two numbers; a fixed latency gives tests a bound they can
//! assert, and a uniform one a spread with hard limits.

use std::str::FromStr;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::rng::Rng;

/// The longest latency any distribution is given or draws: an hour. A draw from a
/// log-normal's tail is held to it, so that one unlucky draw cannot stall a bench.
pub const MAX_MS: f64 = 3_600_000.0;

#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "lowercase", deny_unknown_fields)]
pub enum Latency {
    /// No delay.
    #[default]
    None,
    /// Always `ms`.
    Fixed { ms: u64 },
    /// Uniform between `min_ms` and `max_ms`, both included.
    Uniform { min_ms: u64, max_ms: u64 },
    /// Log-normal: half the draws below `median_ms`; `sigma` is the spread of the
    /// latency's logarithm, so about one draw in six exceeds `median_ms · e^sigma`.
    Lognormal { median_ms: f64, sigma: f64 },
}

impl Latency {
    /// One draw from `rng`. Each kind takes the same number of draws every time, so
    /// that the draws after it in a call's plan do not depend on its value.
    pub(crate) fn sample(&self, rng: &mut Rng) -> Duration {
        let ms = match *self {
            Latency::None => 0.0,
            Latency::Fixed { ms } => ms as f64,
            Latency::Uniform { min_ms, max_ms } => {
                min_ms as f64 + rng.below(max_ms - min_ms + 1) as f64
            }
            Latency::Lognormal { median_ms, sigma } => median_ms * (sigma * rng.normal()).exp(),
        };
        Duration::from_secs_f64(ms.clamp(0.0, MAX_MS) / 1000.0)
    }

    /// Why this distribution cannot be drawn from, if it cannot.
    pub(crate) fn problem(&self) -> Option<String> {
        let too_long = |ms: f64| ms > MAX_MS;
        match *self {
            Latency::None => None,
            Latency::Fixed { ms } if too_long(ms as f64) => {
                Some(format!("{ms} ms is over an hour"))
            }
            Latency::Uniform { min_ms, max_ms } if min_ms > max_ms => {
                Some(format!("min_ms {min_ms} is above max_ms {max_ms}"))
            }
            Latency::Uniform { max_ms, .. } if too_long(max_ms as f64) => {
                Some(format!("max_ms {max_ms} is over an hour"))
            }
            Latency::Lognormal { median_ms, sigma } => {
                if !(median_ms.is_finite() && median_ms > 0.0 && !too_long(median_ms)) {
                    Some(format!(
                        "median_ms {median_ms} is not a positive number of milliseconds up to an hour"
                    ))
                } else if !(sigma.is_finite() && (0.0..=5.0).contains(&sigma)) {
                    Some(format!("sigma {sigma} is not between 0 and 5"))
                } else {
                    None
                }
            }
            Latency::Fixed { .. } | Latency::Uniform { .. } => None,
        }
    }
}

/// A latency as a command-line flag spells it: `none`, `200` or `fixed:200`,
/// `uniform:100:300`, `lognormal:2000:0.5` (milliseconds; the last number is sigma).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{0}` is not a latency: expected `none`, `MS`, `fixed:MS`, `uniform:MIN_MS:MAX_MS` or `lognormal:MEDIAN_MS:SIGMA`")]
pub struct NotLatency(pub String);

impl FromStr for Latency {
    type Err = NotLatency;

    fn from_str(s: &str) -> Result<Latency, NotLatency> {
        let bad = || NotLatency(s.to_owned());
        let parts: Vec<&str> = s.trim().split(':').collect();
        let int = |p: &str| p.parse::<u64>().map_err(|_| bad());
        let float = |p: &str| p.parse::<f64>().map_err(|_| bad());
        match parts.as_slice() {
            ["none"] => Ok(Latency::None),
            [ms] | ["fixed", ms] => Ok(Latency::Fixed { ms: int(ms)? }),
            ["uniform", min, max] => Ok(Latency::Uniform {
                min_ms: int(min)?,
                max_ms: int(max)?,
            }),
            ["lognormal", median, sigma] => Ok(Latency::Lognormal {
                median_ms: float(median)?,
                sigma: float(sigma)?,
            }),
            _ => Err(bad()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn draws(latency: Latency, n: u64) -> Vec<f64> {
        (0..n)
            .map(|i| latency.sample(&mut Rng::for_call(7, i)).as_secs_f64() * 1000.0)
            .collect()
    }

    #[test]
    fn flags_spell_every_kind() {
        assert_eq!("none".parse(), Ok(Latency::None));
        assert_eq!("200".parse(), Ok(Latency::Fixed { ms: 200 }));
        assert_eq!("fixed:200".parse(), Ok(Latency::Fixed { ms: 200 }));
        assert_eq!(
            "uniform:100:300".parse(),
            Ok(Latency::Uniform {
                min_ms: 100,
                max_ms: 300
            })
        );
        assert_eq!(
            "lognormal:2000:0.5".parse(),
            Ok(Latency::Lognormal {
                median_ms: 2000.0,
                sigma: 0.5
            })
        );
        for bad in ["", "slow", "uniform:1", "lognormal:a:b", "fixed:-1"] {
            assert!(bad.parse::<Latency>().is_err(), "{bad}");
        }
    }

    #[test]
    fn a_uniform_draw_stays_within_its_bounds_and_reaches_both() {
        let all = draws(
            Latency::Uniform {
                min_ms: 100,
                max_ms: 104,
            },
            2000,
        );
        assert!(all.iter().all(|ms| (100.0..=104.0).contains(ms)), "{all:?}");
        for edge in [100.0, 104.0] {
            assert!(all.contains(&edge), "{edge} never drawn");
        }
    }

    #[test]
    fn a_lognormal_draw_has_its_median_and_its_spread() {
        let (median, sigma) = (2000.0, 0.5);
        let mut all = draws(
            Latency::Lognormal {
                median_ms: median,
                sigma,
            },
            4001,
        );
        all.sort_by(f64::total_cmp);
        let p50 = all[2000];
        // The 84th percentile of a log-normal is its median times e^sigma.
        let p84 = all[(4001.0 * 0.8413) as usize];
        assert!((p50 / median - 1.0).abs() < 0.05, "median {p50}");
        assert!(
            (p84 / (median * sigma.exp()) - 1.0).abs() < 0.08,
            "84th percentile {p84}"
        );
    }

    #[test]
    fn impossible_distributions_are_named() {
        assert!(Latency::Uniform {
            min_ms: 5,
            max_ms: 1
        }
        .problem()
        .is_some_and(|p| p.contains("min_ms 5")));
        assert!(Latency::Lognormal {
            median_ms: 0.0,
            sigma: 1.0
        }
        .problem()
        .is_some());
        assert!(Latency::Lognormal {
            median_ms: 10.0,
            sigma: f64::NAN
        }
        .problem()
        .is_some());
        assert!(Latency::Fixed { ms: 200 }.problem().is_none());
    }
}
