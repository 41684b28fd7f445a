//! The experiments of the lab, each implementing [`crate::experiment::Experiment`], and the
//! pieces their rows share.

pub mod baton;
pub mod biased_work_queue;
pub mod chained_decode;
pub mod containers;
pub mod cycle;
pub mod ember_rows;
pub mod flow;
pub mod flow_mpi;
pub mod light_load;
pub mod mailbox;
pub mod micro;
pub mod peers;
pub mod producer_consumer;

use crate::cli::Cli;
use crate::experiment::{Experiment, Params, Trial};
use crate::systems::System;

/// Every experiment, in the order the lab runs them, sized by the command line: the one
/// place an experiment is registered.
pub fn registry(cli: &Cli) -> Vec<Box<dyn Experiment>> {
    vec![
        Box::new(producer_consumer::ProducerConsumer {
            args: cli.pc.clone(),
        }),
        Box::new(light_load::LightLoad {
            args: cli.ll.clone(),
        }),
        Box::new(cycle::Cycle {
            args: cli.cycle.clone(),
        }),
        Box::new(containers::Containers {
            args: cli.cn.clone(),
        }),
        Box::new(flow::FlowExp {
            args: cli.flow.clone(),
            repeat_given: cli.repeat.is_some(),
        }),
        Box::new(flow_mpi::FlowMpi { mpi: true }),
        Box::new(chained_decode::ChainedDecode::new(cli.cd.clone())),
        Box::new(micro::Micro {
            args: cli.micro.clone(),
        }),
    ]
}

/// Builds a [`Params`] from `(name, value)` pairs.
pub fn params<const N: usize>(pairs: [(&str, serde_json::Value); N]) -> Params {
    pairs.into_iter().map(|(k, v)| (k.to_string(), v)).collect()
}

/// A row of `system` with no parameters of its own.
pub fn trial(system: &System, run: impl FnMut() -> crate::experiment::Metrics + 'static) -> Trial {
    trial_named(system, system.name, run)
}

/// A row of `system` shown as `name` (the registry name with a suffix, e.g. its batch).
pub fn trial_named(
    system: &System,
    name: &str,
    run: impl FnMut() -> crate::experiment::Metrics + 'static,
) -> Trial {
    Trial {
        system: name.to_string(),
        role: system.role,
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

/// The plural ending of a count in a table title: "" for 1, "s" otherwise.
pub fn plural(n: usize) -> &'static str {
    if n == 1 {
        ""
    } else {
        "s"
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
