//! 95% confidence intervals for the rates a results page shows. Pure and deterministic:
//! the same figures give the same bytes on every run.
//!
//! - A proportion (verified rate, false-verification rate, pass rate) gets the Wilson
//!   score interval, which stays inside [0, 1] and is honest at 0 and at n, where the
//!   normal approximation collapses to a point.
//! - pass@k and pass^k are means over capabilities of an estimate per capability, not
//!   proportions of independent trials; they get a percentile bootstrap over
//!   capabilities (resampling whole capabilities with replacement), with a fixed seed.

use serde::Serialize;

/// z for a two-sided 95% interval.
const Z: f64 = 1.959_963_984_540_054;

/// Resamples of a bootstrap interval.
const RESAMPLES: usize = 2000;

/// A closed interval of rates.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Interval {
    pub low: f64,
    pub high: f64,
}

/// The Wilson score interval of `successes` out of `n`; `None` when `n` is 0.
pub fn wilson(successes: usize, n: usize) -> Option<Interval> {
    if n == 0 {
        return None;
    }
    let n = n as f64;
    let p = successes as f64 / n;
    let z2 = Z * Z;
    let denom = 1.0 + z2 / n;
    let centre = (p + z2 / (2.0 * n)) / denom;
    let half = Z * (p * (1.0 - p) / n + z2 / (4.0 * n * n)).sqrt() / denom;
    // At 0 and at n the bounds are exactly 0 and 1 (rounding would leave 0.9999…).
    Some(Interval {
        low: if successes == 0 {
            0.0
        } else {
            (centre - half).max(0.0)
        },
        high: if successes as f64 == n {
            1.0
        } else {
            (centre + half).min(1.0)
        },
    })
}

/// The percentile bootstrap interval of the mean of `values` (one per capability);
/// `None` with fewer than two values, where resampling says nothing.
pub fn bootstrap_mean(values: &[f64]) -> Option<Interval> {
    bootstrap_means(&[values])[0]
}

/// [`bootstrap_mean`] of each of `series`, each interval exactly what
/// [`bootstrap_mean`] gives it. The resampling is seeded by a series' length alone, so
/// series of one length (a page's pass^k and pass@k at every k it shows, over the same
/// capabilities) are resampled with the same draws, and drawing them once for all of
/// them was most of rendering a page.
pub fn bootstrap_means(series: &[&[f64]]) -> Vec<Option<Interval>> {
    let mut out = vec![None; series.len()];
    let mut lengths: Vec<usize> = series.iter().map(|s| s.len()).collect();
    lengths.sort_unstable();
    lengths.dedup();
    for n in lengths {
        let of_n: Vec<usize> = (0..series.len())
            .filter(|&i| series[i].len() == n)
            .collect();
        let group: Vec<&[f64]> = of_n.iter().map(|&i| series[i]).collect();
        if let Some(intervals) = bootstrap(&group) {
            for (i, interval) in of_n.into_iter().zip(intervals) {
                out[i] = Some(interval);
            }
        }
    }
    out
}

/// The bootstrap of series of one length, sharing each resample's draws. Each series'
/// resampled sums add the same values in the same order as a bootstrap of that series
/// alone, so its interval is the same to the last bit.
fn bootstrap(series: &[&[f64]]) -> Option<Vec<Interval>> {
    let width = series.len();
    let n = series.first()?.len();
    if n < 2 || series.iter().any(|s| s.len() != n) {
        return None;
    }
    // Row i holds every series' value i: one draw reads one row.
    let rows: Vec<f64> = (0..n)
        .flat_map(|i| series.iter().map(move |s| s[i]))
        .collect();
    let mut rng = SplitMix64(0x9e37_79b9_7f4a_7c15 ^ n as u64);
    let mut means: Vec<Vec<f64>> = (0..width).map(|_| Vec::with_capacity(RESAMPLES)).collect();
    let mut sums = vec![0.0f64; width];
    for _ in 0..RESAMPLES {
        sums.fill(0.0);
        for _ in 0..n {
            let i = rng.below(n);
            for (sum, v) in sums.iter_mut().zip(&rows[i * width..(i + 1) * width]) {
                *sum += v;
            }
        }
        for (m, sum) in means.iter_mut().zip(&sums) {
            m.push(sum / n as f64);
        }
    }
    Some(
        means
            .into_iter()
            .map(|mut m| {
                m.sort_by(f64::total_cmp);
                let at =
                    |q: f64| m[((q * (RESAMPLES - 1) as f64).round() as usize).min(RESAMPLES - 1)];
                Interval {
                    low: at(0.025),
                    high: at(0.975),
                }
            })
            .collect(),
    )
}

/// The 95% interval of the difference of two proportions, `b_hits/b_n − a_hits/a_n`
/// (Newcombe's hybrid score interval, his method 10: built from the two Wilson
/// intervals, so it stays honest at 0 and at n where a Wald interval collapses);
/// `None` when either side has no trials.
pub fn difference(a_hits: usize, a_n: usize, b_hits: usize, b_n: usize) -> Option<Interval> {
    let wa = wilson(a_hits, a_n)?;
    let wb = wilson(b_hits, b_n)?;
    let pa = a_hits as f64 / a_n as f64;
    let pb = b_hits as f64 / b_n as f64;
    let d = pb - pa;
    Some(Interval {
        low: d - ((pb - wb.low).powi(2) + (wa.high - pa).powi(2)).sqrt(),
        high: d + ((wb.high - pb).powi(2) + (pa - wa.low).powi(2)).sqrt(),
    })
}

/// The few k a page shows of pass@k and pass^k: 1, 2, 5, 10, 20, 50, 100 up to K, and K.
pub fn shown_ks(k: u32) -> Vec<u32> {
    let mut out: Vec<u32> = [1, 2, 5, 10, 20, 50, 100]
        .into_iter()
        .filter(|&x| x <= k)
        .collect();
    if k > 0 && out.last() != Some(&k) {
        out.push(k);
    }
    out
}

/// A small, fast, seedable generator: enough for resampling indices, and the same
/// sequence on every machine.
struct SplitMix64(u64);

impl SplitMix64 {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 5e-4
    }

    #[test]
    fn wilson_matches_published_values_and_stays_inside_zero_and_one() {
        // 8 of 10: Wilson 95% is [0.490, 0.943] (Newcombe 1998, table I method 3).
        let i = wilson(8, 10).unwrap();
        assert!(close(i.low, 0.4902) && close(i.high, 0.9433), "{i:?}");
        let none = wilson(0, 10).unwrap();
        assert_eq!(none.low, 0.0);
        assert!(close(none.high, 0.2775), "{none:?}");
        let all = wilson(10, 10).unwrap();
        assert_eq!(all.high, 1.0);
        assert!(close(all.low, 0.7225), "{all:?}");
        assert_eq!(wilson(0, 0), None);
    }

    #[test]
    fn the_bootstrap_is_deterministic_and_brackets_the_mean() {
        let values: Vec<f64> = (0..40).map(|i| f64::from(i % 4 == 0)).collect();
        let a = bootstrap_mean(&values).unwrap();
        assert_eq!(Some(a), bootstrap_mean(&values));
        assert!(a.low < 0.25 && 0.25 < a.high, "{a:?}");
        assert_eq!(
            bootstrap_mean(&[1.0, 1.0, 1.0]),
            Some(Interval {
                low: 1.0,
                high: 1.0
            })
        );
        assert_eq!(bootstrap_mean(&[0.5]), None);
    }

    /// One series' bootstrap as it was first written, one series at a time: the
    /// shared draws must not change a single bit of it.
    fn alone(values: &[f64]) -> Option<Interval> {
        let n = values.len();
        if n < 2 {
            return None;
        }
        let mut rng = SplitMix64(0x9e37_79b9_7f4a_7c15 ^ n as u64);
        let mut means = Vec::with_capacity(RESAMPLES);
        for _ in 0..RESAMPLES {
            let mut sum = 0.0;
            for _ in 0..n {
                sum += values[rng.below(n)];
            }
            means.push(sum / n as f64);
        }
        means.sort_by(f64::total_cmp);
        let at = |q: f64| means[((q * (RESAMPLES - 1) as f64).round() as usize).min(RESAMPLES - 1)];
        Some(Interval {
            low: at(0.025),
            high: at(0.975),
        })
    }

    #[test]
    fn series_bootstrapped_together_get_each_exactly_its_own_interval() {
        let a: Vec<f64> = (0..37).map(|i| (i % 5) as f64 / 4.0).collect();
        let b: Vec<f64> = (0..37).map(|i| (i * 7 % 11) as f64 / 10.0).collect();
        let c: Vec<f64> = (0..37).map(|i| 1.0 / (1.0 + i as f64)).collect();
        let series: [&[f64]; 6] = [&a, &b, &b[..20], &c, &[0.5], &a[..20]];
        let together = bootstrap_means(&series);
        let each: Vec<_> = series.iter().map(|s| alone(s)).collect();
        assert_eq!(together, each);
        assert_eq!(together[4], None);
        assert_ne!(together[0], together[1]);
        assert_eq!(bootstrap_mean(&c), alone(&c));
    }

    #[test]
    fn the_difference_interval_matches_newcombe() {
        // 56/70 − 48/80 = 0.2: method 10 gives [0.0524, 0.3339] (Newcombe 1998, table II).
        let d = difference(48, 80, 56, 70).unwrap();
        assert!(close(d.low, 0.0524) && close(d.high, 0.3339), "{d:?}");
        // The same difference the other way round is its mirror.
        let m = difference(56, 70, 48, 80).unwrap();
        assert!(close(m.low, -d.high) && close(m.high, -d.low), "{m:?}");
        // 10/10 then 0/10: certainly worse, and the interval says so.
        let drop = difference(10, 10, 0, 10).unwrap();
        assert!(drop.high < 0.0 && drop.low >= -1.0, "{drop:?}");
        // 1/1 then 0/1: one trial each proves nothing.
        let one = difference(1, 1, 0, 1).unwrap();
        assert!(one.high > 0.0, "{one:?}");
        assert_eq!(difference(0, 0, 1, 1), None);
    }

    #[test]
    fn a_page_shows_a_few_k() {
        assert_eq!(shown_ks(1), vec![1]);
        assert_eq!(shown_ks(3), vec![1, 2, 3]);
        assert_eq!(shown_ks(84), vec![1, 2, 5, 10, 20, 50, 84]);
        assert_eq!(shown_ks(100), vec![1, 2, 5, 10, 20, 50, 100]);
        assert!(shown_ks(0).is_empty());
    }
}
