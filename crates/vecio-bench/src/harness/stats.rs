//! Summary statistics over repeated measurements: mean, spread, extremes, medians.

use serde::{Deserialize, Serialize};

/// Mean, spread and extremes of a set of samples.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct Summary {
    /// Arithmetic mean.
    pub mean: f64,
    /// Median (mean of the two middle samples for an even count).
    pub median: f64,
    /// Sample standard deviation (divides by `n - 1`); zero for a single sample.
    pub stddev: f64,
    /// Smallest sample.
    pub min: f64,
    /// Largest sample.
    pub max: f64,
    /// Number of samples.
    pub n: usize,
}

impl Summary {
    /// Summarises `samples`; `None` when there are none. NaN samples are ignored.
    pub fn of(samples: &[f64]) -> Option<Summary> {
        let finite = || samples.iter().copied().filter(|x| !x.is_nan());
        let n = finite().count();
        if n == 0 {
            return None;
        }
        let mean = finite().sum::<f64>() / n as f64;
        let var = if n > 1 {
            finite().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1) as f64
        } else {
            0.0
        };
        Some(Summary {
            mean,
            median: median(samples).unwrap_or(mean),
            stddev: var.sqrt(),
            min: finite().fold(f64::INFINITY, f64::min),
            max: finite().fold(f64::NEG_INFINITY, f64::max),
            n,
        })
    }

    /// [`Summary::of`] `samples`, all zeroes when there are none.
    pub fn over(samples: impl IntoIterator<Item = f64>) -> Summary {
        Summary::of(&samples.into_iter().collect::<Vec<_>>()).unwrap_or_default()
    }

    /// Relative spread, `stddev / mean` (the coefficient of variation); zero when the mean is
    /// zero. 0.05 means the runs scatter by about 5 %.
    pub fn relative_spread(&self) -> f64 {
        if self.mean == 0.0 {
            0.0
        } else {
            (self.stddev / self.mean).abs()
        }
    }
}

/// `x / of`, or 0 when `of` is not positive (a rate of nothing measured).
pub fn per(x: f64, of: f64) -> f64 {
    if of > 0.0 {
        x / of
    } else {
        0.0
    }
}

/// Median of `samples` (mean of the two middle values for an even count); `None` when empty.
/// NaN samples are ignored.
pub fn median(samples: &[f64]) -> Option<f64> {
    let mut v: Vec<f64> = samples.iter().copied().filter(|x| !x.is_nan()).collect();
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    let mid = v.len() / 2;
    Some(if v.len() % 2 == 0 {
        (v[mid - 1] + v[mid]) / 2.0
    } else {
        v[mid]
    })
}

/// Median of `a[i] / b[i]` over the pairs with `b[i] > 0`: the ratio of two things measured
/// back to back in each repetition, which cancels the drift of a shared machine between
/// repetitions. `None` when no pair counts.
pub fn paired_median(a: &[f64], b: &[f64]) -> Option<f64> {
    let r: Vec<f64> = a
        .iter()
        .zip(b)
        .filter(|(_, &b)| b > 0.0)
        .map(|(a, b)| a / b)
        .collect();
    median(&r)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-9
    }

    #[test]
    fn summary_of_known_samples() {
        let s = Summary::of(&[2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0]).unwrap();
        assert_eq!(s.n, 8);
        assert!(close(s.mean, 5.0));
        assert!(close(s.stddev, (32.0f64 / 7.0).sqrt()));
        assert!(close(s.min, 2.0) && close(s.max, 9.0));
        assert!(close(s.relative_spread(), s.stddev / 5.0));
    }

    #[test]
    fn summary_edge_cases() {
        assert_eq!(Summary::of(&[]), None);
        assert_eq!(Summary::of(&[f64::NAN]), None);
        let one = Summary::of(&[3.0, f64::NAN]).unwrap();
        assert_eq!((one.n, one.stddev, one.min, one.max), (1, 0.0, 3.0, 3.0));
        assert_eq!(Summary::of(&[0.0, 0.0]).unwrap().relative_spread(), 0.0);
    }

    #[test]
    fn median_odd_even_empty() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median(&[4.0, 1.0, 3.0, 2.0]), Some(2.5));
        assert_eq!(median(&[]), None);
    }
}
