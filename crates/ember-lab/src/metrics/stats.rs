//! Median, minimum and maximum of each metric over a row's repeated runs, and a confidence
//! interval for a median.

use crate::experiment::Metrics;
use std::collections::BTreeSet;

/// Median, min and max of one series.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Spread {
    pub median: f64,
    pub min: f64,
    pub max: f64,
}

/// Summarizes a non-empty series; the median of an even count is the mean of the middle two.
pub fn spread(values: &[f64]) -> Option<Spread> {
    if values.is_empty() {
        return None;
    }
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    let n = v.len();
    let median = if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    };
    Some(Spread {
        median,
        min: v[0],
        max: v[n - 1],
    })
}

/// The median of a series (the mean of the middle two for an even count); NaN when empty.
/// The one median of the lab: every table, claim and experiment uses it.
pub fn median(values: &[f64]) -> f64 {
    spread(values).map_or(f64::NAN, |s| s.median)
}

/// Nearest-rank percentile `p` (0–100) of a series; NaN when empty.
pub fn percentile(values: &[f64], p: f64) -> f64 {
    if values.is_empty() {
        return f64::NAN;
    }
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    let rank = ((p / 100.0) * v.len() as f64).ceil() as usize;
    v[rank.clamp(1, v.len()) - 1]
}

/// A 95 % confidence interval for the median of the distribution `values` were drawn from,
/// without assuming its shape: `[x(k), x(n+1-k)]` of the sorted values (1-based), with the
/// largest `k` for which fewer than `k` of `n` fair coin flips land heads with probability at
/// most 2.5 % (the sign-test interval). `None` below 6 values, where even the full range
/// covers the median with less than 95 % probability.
pub fn median_ci95(values: &[f64]) -> Option<(f64, f64)> {
    let n = values.len();
    // ln P(X = i) for X ~ Binomial(n, 1/2), summed while the tail stays within 2.5 %.
    let mut ln_pmf = n as f64 * 0.5f64.ln();
    let (mut tail, mut k) = (0.0, 0);
    while k < n / 2 {
        let next = tail + ln_pmf.exp();
        if next > 0.025 {
            break;
        }
        tail = next;
        ln_pmf += ((n - k) as f64 / (k + 1) as f64).ln();
        k += 1;
    }
    // `k` values may lie below the interval: the interval starts at the (k+1)-th (0-based k).
    if k == 0 {
        return None;
    }
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    Some((v[k - 1], v[n - k]))
}

/// Per-metric median, min and max over runs. A metric missing from some runs is summarized
/// over the runs that have it.
pub fn summarize(runs: &[Metrics]) -> (Metrics, Metrics, Metrics) {
    let keys: BTreeSet<&String> = runs.iter().flat_map(|m| m.keys()).collect();
    let (mut med, mut min, mut max) = (Metrics::new(), Metrics::new(), Metrics::new());
    for k in keys {
        let values: Vec<f64> = runs.iter().filter_map(|m| m.get(k).copied()).collect();
        if let Some(s) = spread(&values) {
            med.insert(k.clone(), s.median);
            min.insert(k.clone(), s.min);
            max.insert(k.clone(), s.max);
        }
    }
    (med, min, max)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn odd_even_and_empty() {
        let s = spread(&[3.0, 1.0, 2.0]).unwrap();
        assert_eq!((s.median, s.min, s.max), (2.0, 1.0, 3.0));
        let s = spread(&[4.0, 1.0, 3.0, 2.0]).unwrap();
        assert_eq!((s.median, s.min, s.max), (2.5, 1.0, 4.0));
        let s = spread(&[7.0]).unwrap();
        assert_eq!((s.median, s.min, s.max), (7.0, 7.0, 7.0));
        assert!(spread(&[]).is_none());
        assert_eq!(median(&[4.0, 1.0, 3.0, 2.0]), 2.5);
        assert!(median(&[]).is_nan());
        let v: Vec<f64> = (1..=100).map(f64::from).collect();
        assert_eq!(percentile(&v, 50.0), 50.0);
        assert_eq!(percentile(&v, 99.0), 99.0);
        assert_eq!(percentile(&[7.0], 99.0), 7.0);
    }

    /// The bounds are the order statistics a binomial table gives: none below 6 values, the
    /// extremes at 6–8, the 4th and 12th of 15, the 23rd and 39th of 61.
    #[test]
    fn median_interval_uses_the_sign_test_ranks() {
        let ranks = |n: usize| {
            let v: Vec<f64> = (1..=n).rev().map(|i| i as f64).collect();
            median_ci95(&v)
        };
        assert_eq!(ranks(5), None);
        assert_eq!(ranks(6), Some((1.0, 6.0)));
        assert_eq!(ranks(8), Some((1.0, 8.0)));
        assert_eq!(ranks(9), Some((2.0, 8.0)));
        assert_eq!(ranks(15), Some((4.0, 12.0)));
        assert_eq!(ranks(61), Some((23.0, 39.0)));
        assert!(
            ranks(5000).is_some(),
            "large n neither underflows nor panics"
        );
    }

    #[test]
    fn per_metric_over_runs() {
        let run = |w: f64, c: Option<f64>| {
            let mut m = Metrics::new();
            m.insert("wall_s".into(), w);
            if let Some(c) = c {
                m.insert("ctx_switches".into(), c);
            }
            m
        };
        let runs = [run(0.3, Some(10.0)), run(0.1, None), run(0.2, Some(30.0))];
        let (med, min, max) = summarize(&runs);
        assert_eq!(med["wall_s"], 0.2);
        assert_eq!(min["wall_s"], 0.1);
        assert_eq!(max["wall_s"], 0.3);
        assert_eq!(med["ctx_switches"], 20.0);
        assert_eq!(min["ctx_switches"], 10.0);
        assert_eq!(max["ctx_switches"], 30.0);
    }
}
