//! The experiments of the lab (DESIGN §4), each implementing [`crate::experiment::Experiment`],
//! and the pieces their rows share.

pub mod baton;
pub mod chained_decode;
pub mod containers;
pub mod cycle;
pub mod ember_rows;
pub mod flow;
pub mod light_load;
pub mod micro;
pub mod peers;
pub mod producer_consumer;

use crate::experiment::{Params, Trial};

/// Builds a [`Params`] from `(name, value)` pairs.
pub fn params<const N: usize>(pairs: [(&str, serde_json::Value); N]) -> Params {
    pairs.into_iter().map(|(k, v)| (k.to_string(), v)).collect()
}

/// A trial with no parameters of its own.
pub fn trial(system: &str, run: impl FnMut() -> crate::experiment::Metrics + 'static) -> Trial {
    Trial {
        system: system.to_string(),
        params: Params::new(),
        run: Box::new(run),
    }
}

/// " (4× oversubscribed on 2 cores)" when `threads` exceeds `cores`, else "".
pub fn oversubscription(threads: usize, cores: usize) -> String {
    if threads <= cores {
        String::new()
    } else if threads % cores == 0 {
        format!(" ({}× oversubscribed on {cores} cores)", threads / cores)
    } else {
        format!(
            " ({:.1}× oversubscribed on {cores} cores)",
            threads as f64 / cores as f64
        )
    }
}

/// Metrics of `ops` operations that took `elapsed`: `ops_per_s` and `ns_per_op`.
pub fn rate(ops: u64, elapsed: std::time::Duration) -> crate::experiment::Metrics {
    let secs = elapsed.as_secs_f64().max(1e-9);
    let mut metrics = crate::experiment::Metrics::new();
    metrics.insert("ops_per_s".into(), ops as f64 / secs);
    metrics.insert("ns_per_op".into(), secs * 1e9 / ops as f64);
    metrics
}
