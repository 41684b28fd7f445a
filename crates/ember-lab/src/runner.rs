//! Runs the trials of each group interleaved and measures every run.
//!
//! Trials of a group run A B C A B C …, so slow drift of the machine (another process, thermal
//! state) spreads over every row instead of biasing the one that happened to run last. Each
//! run is measured from the outside — wall time, `getrusage` deltas, perf counters opened just
//! before the run with `inherit` — and the trial's own metrics are merged in.

use crate::experiment::{Experiment, Group, LabOpts, Metrics, Params};
use crate::metrics::{perf::PerfCounters, rusage::Rusage};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::time::Instant;

/// Every run of one row.
pub struct RowRuns {
    pub system: String,
    /// Group parameters merged with the trial's own.
    pub params: Params,
    pub runs: Vec<Metrics>,
}

/// The measured rows of one group (one table).
pub struct GroupRuns {
    pub title: String,
    pub rows: Vec<RowRuns>,
}

/// The measured groups of one experiment.
pub struct ExperimentRuns {
    pub name: String,
    pub groups: Vec<GroupRuns>,
}

/// Measures one run of `run`. `perf` says whether to open perf counters.
pub fn measure(run: &mut dyn FnMut() -> Metrics, perf: bool) -> Metrics {
    // Opened first so the counters see every thread the run creates.
    let counters = if perf {
        PerfCounters::start().ok()
    } else {
        None
    };
    let ru0 = Rusage::now();
    let t0 = Instant::now();
    let own = run();
    let wall = t0.elapsed().as_secs_f64();
    let ru = Rusage::now().since(&ru0);
    let mut m = Metrics::new();
    m.insert("wall_s".into(), wall);
    ru.record(&mut m);
    if let Some(c) = counters {
        // A read error leaves the metrics absent rather than zero.
        let _ = c.stop(&mut m);
    }
    for (k, v) in own {
        m.insert(k, v);
    }
    if let Some(useful) = m.get("useful_cpu_s").copied() {
        m.insert("overhead_cpu_s".into(), m["cpu_s"] - useful);
    }
    m
}

/// Runs one experiment's groups, advancing `bar` once per run.
pub fn run_groups(
    name: &str,
    groups: Vec<Group>,
    repeat: usize,
    perf: bool,
    bar: &ProgressBar,
) -> ExperimentRuns {
    let mut out = Vec::new();
    for mut g in groups {
        let mut rows: Vec<RowRuns> = g
            .trials
            .iter()
            .map(|t| {
                let mut params = g.params.clone();
                params.extend(t.params.clone());
                RowRuns {
                    system: t.system.clone(),
                    params,
                    runs: Vec::with_capacity(repeat),
                }
            })
            .collect();
        for _ in 0..repeat {
            for (trial, row) in g.trials.iter_mut().zip(rows.iter_mut()) {
                bar.set_message(format!("{name}: {} · {}", g.title, trial.system));
                row.runs.push(measure(&mut trial.run, perf));
                bar.inc(1);
            }
        }
        out.push(GroupRuns {
            title: g.title,
            rows,
        });
    }
    ExperimentRuns {
        name: name.to_string(),
        groups: out,
    }
}

/// The experiments to run with their groups built, and how many runs that makes.
pub struct Plan<'a> {
    pub items: Vec<(&'a dyn Experiment, Vec<Group>, usize)>,
    pub total_runs: u64,
}

/// Builds every experiment's groups up front, so the progress bar knows the total.
pub fn plan<'a>(experiments: &[&'a dyn Experiment], opts: &LabOpts) -> Plan<'a> {
    let mut items = Vec::new();
    let mut total = 0u64;
    for e in experiments {
        let groups = e.groups(opts);
        let repeat = e.repeat(opts).max(1);
        total += groups
            .iter()
            .map(|g| (g.trials.len() * repeat) as u64)
            .sum::<u64>();
        items.push((*e, groups, repeat));
    }
    Plan {
        items,
        total_runs: total,
    }
}

/// A progress bar over `total` runs on stderr, hidden when `hidden`.
pub fn progress(total: u64, hidden: bool) -> ProgressBar {
    let bar = ProgressBar::with_draw_target(
        Some(total),
        if hidden {
            ProgressDrawTarget::hidden()
        } else {
            ProgressDrawTarget::stderr()
        },
    );
    if let Ok(style) =
        ProgressStyle::with_template("{elapsed_precise} [{bar:30}] {pos}/{len} runs  {wide_msg}")
    {
        bar.set_style(style.progress_chars("=> "));
    }
    bar
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::experiment::Trial;

    #[test]
    fn interleaves_and_merges() {
        use std::sync::{Arc, Mutex};
        let order = Arc::new(Mutex::new(Vec::new()));
        let trial = |name: &'static str| {
            let order = order.clone();
            Trial {
                system: name.into(),
                params: Params::new(),
                run: Box::new(move || {
                    order.lock().unwrap().push(name);
                    let mut m = Metrics::new();
                    m.insert("useful_cpu_s".into(), 0.0);
                    m
                }),
            }
        };
        let g = Group {
            title: "t".into(),
            params: Params::new(),
            trials: vec![trial("a"), trial("b")],
        };
        let r = run_groups("x", vec![g], 2, false, &ProgressBar::hidden());
        assert_eq!(*order.lock().unwrap(), ["a", "b", "a", "b"]);
        let m = &r.groups[0].rows[0].runs[0];
        for k in ["wall_s", "cpu_s", "ctx_switches", "overhead_cpu_s"] {
            assert!(m.contains_key(k), "{k} missing");
        }
        assert!(!m.contains_key("migrations"));
    }
}
