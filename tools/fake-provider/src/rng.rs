//! The fake provider's randomness: SplitMix64, seeded per call.
//!
//! Each call's draws come from its own generator, made from the config's seed and the
//! call's number alone, so that what happens to call `n` (its latency, its fault, where
//! its stream is cut) does not depend on how calls interleave: a test can ask the plan
//! of call `n` and compare it with what it saw, and a bench re-run with the same seed
//! meets the same provider. A dozen lines rather than a dependency, since nothing here
//! needs more than well-spread 64-bit draws.

#[derive(Debug, Clone)]
pub(crate) struct Rng(u64);

const GAMMA: u64 = 0x9e37_79b9_7f4a_7c15;

fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

impl Rng {
    /// The generator of call `seq` under `seed`.
    pub(crate) fn for_call(seed: u64, seq: u64) -> Rng {
        Rng(mix(seed ^ mix(seq.wrapping_add(GAMMA))))
    }

    /// A second, independent generator of the same call, for draws whose number varies
    /// (one per stream event), so that they never shift the call's other draws.
    pub(crate) fn split(&self) -> Rng {
        Rng(mix(self.0 ^ 0x5851_f42d_4c95_7f2d))
    }

    pub(crate) fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(GAMMA);
        mix(self.0)
    }

    /// Uniform in [0, 1).
    pub(crate) fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// Uniform in [0, n), from one draw (multiply and shift: the bias is below 2^-32 for
    /// any `n` used here). `n` of 0 gives 0.
    pub(crate) fn below(&mut self, n: u64) -> u64 {
        ((u128::from(self.next_u64()) * u128::from(n)) >> 64) as u64
    }

    /// Standard normal, from two draws (Box-Muller).
    pub(crate) fn normal(&mut self) -> f64 {
        let u1 = 1.0 - self.unit();
        let u2 = self.unit();
        (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_call_draws_the_same_whatever_came_before() {
        let a: Vec<u64> = (0..4).map(|_| Rng::for_call(1, 9).next_u64()).collect();
        assert!(a.windows(2).all(|w| w[0] == w[1]));
        assert_ne!(
            Rng::for_call(1, 9).next_u64(),
            Rng::for_call(1, 10).next_u64()
        );
        assert_ne!(
            Rng::for_call(1, 9).next_u64(),
            Rng::for_call(2, 9).next_u64()
        );
    }

    #[test]
    fn unit_draws_spread_over_the_interval() {
        let mut rng = Rng::for_call(3, 0);
        let draws: Vec<f64> = (0..10_000).map(|_| rng.unit()).collect();
        assert!(draws.iter().all(|u| (0.0..1.0).contains(u)));
        let mean = draws.iter().sum::<f64>() / draws.len() as f64;
        assert!((mean - 0.5).abs() < 0.02, "{mean}");
    }
}
