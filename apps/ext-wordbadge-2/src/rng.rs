//! Randomness for writing the extension: fresh OS entropy on every start, split into
//! independent streams, one for the extension's layout (names, order, padding) and one
//! for each value it spells. Streams never share state, so a mutant written from the
//! same seeds as the app differs from it only in the one value it breaks (the unit tests
//! rely on that), and nothing one stream shows (a name, a comment) says anything about
//! another (how a value is spelled).

use std::io::Read;

/// One stream's seed: 256 bits.
pub type Seed = [u64; 4];

/// The seeds of every stream of one start: `0` the layout, `1 + i` value slot `i`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Seeds(Vec<Seed>);

impl Seeds {
    /// `streams` seeds read from the OS's entropy source (`/dev/urandom`), fresh on
    /// every call.
    pub fn from_os(streams: usize) -> std::io::Result<Seeds> {
        let mut bytes = vec![0u8; streams * 32];
        std::fs::File::open("/dev/urandom")?.read_exact(&mut bytes)?;
        let seeds = bytes
            .chunks_exact(32)
            .map(|chunk| {
                let mut seed = [0u64; 4];
                for (word, b) in seed.iter_mut().zip(chunk.chunks_exact(8)) {
                    let mut le = [0u8; 8];
                    le.copy_from_slice(b);
                    *word = u64::from_le_bytes(le);
                }
                seed
            })
            .collect();
        Ok(Seeds(seeds))
    }

    /// Seeds given outright (tests).
    #[cfg(test)]
    pub fn from_seeds(seeds: Vec<Seed>) -> Seeds {
        Seeds(seeds)
    }

    /// The seeds, stream by stream.
    #[cfg(test)]
    pub fn seeds(&self) -> &[Seed] {
        &self.0
    }

    /// The generator of stream `i` (a stream past the seeds read is a build defect,
    /// caught by the tests; it gets a fixed seed rather than a panic).
    pub fn stream(&self, i: usize) -> Rng {
        Rng::new(self.0.get(i).copied().unwrap_or([i as u64, 1, 2, 3]))
    }
}

/// xoshiro256**: small, fast, and good enough to spell JavaScript at random. Its
/// outputs could reveal its state, which is why every stream has a seed of its own.
#[derive(Debug, Clone)]
pub struct Rng {
    s: [u64; 4],
}

impl Rng {
    pub fn new(seed: Seed) -> Rng {
        // The all-zero state is the one state xoshiro never leaves.
        let s = if seed == [0; 4] {
            [0x9e37_79b9_7f4a_7c15, 1, 2, 3]
        } else {
            seed
        };
        Rng { s }
    }

    pub fn next_u64(&mut self) -> u64 {
        let result = self.s[1].wrapping_mul(5).rotate_left(7).wrapping_mul(9);
        let t = self.s[1] << 17;
        self.s[2] ^= self.s[0];
        self.s[3] ^= self.s[1];
        self.s[1] ^= self.s[2];
        self.s[0] ^= self.s[3];
        self.s[2] ^= t;
        self.s[3] = self.s[3].rotate_left(45);
        result
    }

    /// Uniform in `0..n` (`n` > 0; 0 gives 0). The multiply-shift bias is below 2^-40
    /// for every `n` used here.
    pub fn below(&mut self, n: usize) -> usize {
        if n == 0 {
            return 0;
        }
        ((u128::from(self.next_u64()) * n as u128) >> 64) as usize
    }

    /// Uniform in `lo..=hi`.
    pub fn range(&mut self, lo: usize, hi: usize) -> usize {
        lo + self.below(hi.saturating_sub(lo) + 1)
    }

    /// True with probability `num / den`.
    pub fn chance(&mut self, num: usize, den: usize) -> bool {
        self.below(den) < num
    }

    /// One element of a non-empty slice.
    pub fn pick<'a, T>(&mut self, xs: &'a [T]) -> &'a T {
        &xs[self.below(xs.len())]
    }

    /// An index drawn with the given weights (not all zero).
    pub fn weighted(&mut self, weights: &[usize]) -> usize {
        let total: usize = weights.iter().sum();
        let mut x = self.below(total);
        for (i, w) in weights.iter().enumerate() {
            if x < *w {
                return i;
            }
            x -= w;
        }
        weights.len().saturating_sub(1)
    }

    pub fn shuffle<T>(&mut self, xs: &mut [T]) {
        for i in (1..xs.len()).rev() {
            let j = self.below(i + 1);
            xs.swap(i, j);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_os_gives_fresh_seeds_on_every_call() {
        let a = Seeds::from_os(3).unwrap_or_else(|e| panic!("{e}"));
        let b = Seeds::from_os(3).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(a.seeds().len(), 3);
        assert_ne!(a, b);
        assert_ne!(a.seeds()[0], a.seeds()[1]);
    }

    #[test]
    fn draws_stay_in_range_and_cover_it() {
        let mut rng = Rng::new([1, 2, 3, 4]);
        let mut seen = [0usize; 7];
        for _ in 0..7000 {
            let x = rng.range(3, 9);
            assert!((3..=9).contains(&x));
            seen[x - 3] += 1;
        }
        assert!(seen.iter().all(|n| *n > 800), "{seen:?}");
        assert_eq!(rng.below(0), 0);
        let mut xs: Vec<usize> = (0..20).collect();
        rng.shuffle(&mut xs);
        let mut sorted = xs.clone();
        sorted.sort_unstable();
        assert_eq!(sorted, (0..20).collect::<Vec<_>>());
        assert_ne!(xs, sorted);
        for _ in 0..100 {
            assert_ne!(rng.weighted(&[0, 3, 0, 1]), 0);
        }
    }

    #[test]
    fn the_same_seed_gives_the_same_stream() {
        let mut a = Rng::new([5, 6, 7, 8]);
        let mut b = Rng::new([5, 6, 7, 8]);
        let mut c = Rng::new([0; 4]);
        for _ in 0..10 {
            assert_eq!(a.next_u64(), b.next_u64());
            assert_ne!(c.next_u64(), 0);
        }
    }
}
