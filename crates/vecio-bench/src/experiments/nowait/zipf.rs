//! Zipf-distributed block numbers (rank k drawn with weight 1/k^theta), spread over the file by
//! a fixed permutation so that hot blocks are not all at its start.

use rand::seq::SliceRandom;
use rand::Rng;

/// A Zipf sampler over `n` blocks.
pub struct Zipf {
    cdf: Vec<f64>,
    place: Vec<u64>,
}

impl Zipf {
    /// A sampler over `n` blocks (at least 1) with exponent `theta`; `rng` shuffles placement.
    pub fn new(n: u64, theta: f64, rng: &mut impl Rng) -> Zipf {
        let n = n.max(1);
        let mut cdf = Vec::with_capacity(n as usize);
        let mut acc = 0.0;
        for k in 1..=n {
            acc += 1.0 / (k as f64).powf(theta);
            cdf.push(acc);
        }
        for c in &mut cdf {
            *c /= acc;
        }
        let mut place: Vec<u64> = (0..n).collect();
        place.shuffle(rng);
        Zipf { cdf, place }
    }

    /// A block number.
    pub fn sample(&self, rng: &mut impl Rng) -> u64 {
        let u: f64 = rng.gen();
        let rank = self.cdf.partition_point(|&c| c < u).min(self.cdf.len() - 1);
        self.place[rank]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    #[test]
    fn hot_blocks_dominate() {
        let mut rng = rand::rngs::SmallRng::seed_from_u64(1);
        let z = Zipf::new(1000, 1.1, &mut rng);
        let mut counts = vec![0u32; 1000];
        for _ in 0..100_000 {
            counts[z.sample(&mut rng) as usize] += 1;
        }
        counts.sort_unstable_by(|a, b| b.cmp(a));
        let top10: u32 = counts[..10].iter().sum();
        assert!(
            top10 > 40_000,
            "the 10 hottest blocks take {top10} of 100000"
        );
        assert!(counts.iter().all(|&c| c < 100_000));
    }
}
