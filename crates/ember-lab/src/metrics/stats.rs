//! Median, minimum and maximum of each metric over a row's repeated runs.

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
