//! Runs the trials of each group interleaved and measures every run.
//!
//! Trials of a group run in rounds, each round every trial once, in an order shuffled afresh
//! each round ([`round_order`]): slow drift of the machine (another process, thermal state)
//! spreads over every row instead of biasing the one that happened to run last, and no row
//! always follows the same neighbour. Rotating the start instead (A B C, B C A, C A B) would
//! keep every row behind the same neighbour in all rounds but one, so whatever a run leaves
//! behind would weigh on one row only: two identical rows of a 2-worker table measured apart
//! by several per cent that way, the one behind a single-threaded row the slower (the lab
//! README, "Claims and verdicts"). Each run is measured from the outside — wall time,
//! `getrusage` deltas, perf counters opened just before the run with `inherit` — and the
//! trial's own metrics are merged in.
//!
//! Rows run in the same round saw the same machine, so an experiment can ask for *paired*
//! ratios ([`add_paired`]): each run's value over the reference row's value in the same
//! round. Their median is a sharper comparison than the ratio of two medians when the
//! machine's speed wanders between rounds by more than the rows differ.

use crate::experiment::{Experiment, Group, LabOpts, Metrics, Params};
use crate::metrics::{perf::PerfCounters, rusage::Rusage};
use crate::rng::Rng;
use crate::systems::Role;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::time::Instant;

/// Every run of one row.
pub struct RowRuns {
    pub system: String,
    pub role: Role,
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
                    role: t.role,
                    params,
                    runs: Vec::with_capacity(repeat),
                }
            })
            .collect();
        let n = g.trials.len();
        for round in 0..repeat {
            for i in round_order(n, round) {
                let trial = &mut g.trials[i];
                bar.set_message(format!("{name}: {} · {}", g.title, trial.system));
                rows[i].runs.push(measure(&mut trial.run, perf));
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

/// The order in which round `round` of a group of `n` trials runs them: a permutation of
/// `0..n`, shuffled (Fisher–Yates) by a generator seeded with the round, so that a run of the
/// lab repeats its orders and every row changes place and neighbour from round to round.
pub fn round_order(n: usize, round: usize) -> Vec<usize> {
    let mut order: Vec<usize> = (0..n).collect();
    let mut rng = Rng((round as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15));
    for i in (1..n).rev() {
        let j = rng.below(i + 1);
        order.swap(i, j);
    }
    order
}

/// For every group with a row whose system is `reference`: every run of every row that has
/// `metric` gets `key` = `combine(its value, the reference's value in the same round)`, unless
/// `combine` returns `None`.
fn per_round(
    runs: &mut ExperimentRuns,
    reference: &str,
    metric: &str,
    key: &str,
    combine: impl Fn(f64, f64) -> Option<f64>,
) {
    for group in &mut runs.groups {
        let Some(refs) = group.rows.iter().find(|r| r.system == reference) else {
            continue;
        };
        let refs: Vec<Option<f64>> = refs.runs.iter().map(|m| m.get(metric).copied()).collect();
        for row in &mut group.rows {
            for (run, r) in row.runs.iter_mut().zip(&refs) {
                if let (Some(v), Some(r)) = (run.get(metric).copied(), *r) {
                    if let Some(x) = combine(v, r) {
                        run.insert(key.to_string(), x);
                    }
                }
            }
        }
    }
}

/// Adds paired ratios: for each `(reference, metric)` and each group with a row whose system
/// is `reference`, every row's run `r` that has `metric` gets `<name>_vs_<reference>` =
/// its `metric` over the reference's `metric` in run `r` (the same round), where `<name>` is
/// `metric` without its unit suffix and `-` in `reference` becomes `_`. The reference row's
/// own ratios are 1. Runs whose reference value is missing or zero get none.
pub fn add_paired(runs: &mut ExperimentRuns, pairs: &[(&str, &str)]) {
    for &(reference, metric) in pairs {
        let base = metric.rsplit_once('_').map_or(metric, |(stem, _unit)| stem);
        let key = format!("{base}_vs_{}", reference.replace('-', "_"));
        per_round(runs, reference, metric, &key, |v, r| {
            (r != 0.0).then(|| v / r)
        });
    }
}

/// Adds paired differences: for each `(reference, metric, name)` and each group with a row
/// whose system is `reference`, every run that has `metric` gets `name` = its `metric` minus
/// the reference's in the same round.
pub fn add_differences(runs: &mut ExperimentRuns, diffs: &[(&str, &str, &str)]) {
    for &(reference, metric, name) in diffs {
        per_round(runs, reference, metric, name, |v, r| Some(v - r));
    }
}

/// Adds per-run quotients: for each `(metric, per, name, scale)`, every run that has both
/// `metric` and a non-zero `per` gets `name` = `metric / per × scale`.
pub fn add_quotients(runs: &mut ExperimentRuns, quotients: &[(&str, &str, &str, f64)]) {
    for &(metric, per, name, scale) in quotients {
        for run in runs
            .groups
            .iter_mut()
            .flat_map(|g| &mut g.rows)
            .flat_map(|r| &mut r.runs)
        {
            if let (Some(&v), Some(&d)) = (run.get(metric), run.get(per)) {
                if d != 0.0 {
                    run.insert(name.to_string(), v / d * scale);
                }
            }
        }
    }
}

/// Whether `metric` is a per-round comparison made by [`add_paired`] (`_vs_`) or
/// [`add_differences`] (`avoidable_`): those get a confidence interval of their median.
pub fn is_paired(metric: &str) -> bool {
    metric.contains("_vs_") || metric.starts_with("avoidable_")
}

/// The experiments to run with their groups built, and how many runs that makes.
pub struct Plan<'a> {
    pub items: Vec<(&'a dyn Experiment, Vec<Group>, usize)>,
    pub total_runs: u64,
}

/// Builds every experiment's groups up front, so the progress bar knows the total and bad
/// input stops the lab before anything runs.
pub fn plan<'a>(experiments: &[&'a dyn Experiment], opts: &LabOpts) -> Result<Plan<'a>, String> {
    let mut items = Vec::new();
    let mut total = 0u64;
    for e in experiments {
        let groups = e
            .groups(opts)
            .map_err(|err| format!("{}: {err}", e.name()))?;
        let repeat = e.repeat(opts).max(1);
        total += groups
            .iter()
            .map(|g| (g.trials.len() * repeat) as u64)
            .sum::<u64>();
        items.push((*e, groups, repeat));
    }
    Ok(Plan {
        items,
        total_runs: total,
    })
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
                role: Role::Peer,
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
        let r = run_groups("x", vec![g], 3, false, &ProgressBar::hidden());
        // Every round runs every trial once, in that round's order.
        let expected: Vec<&str> = (0..3)
            .flat_map(|round| round_order(2, round))
            .map(|i| ["a", "b"][i])
            .collect();
        assert_eq!(*order.lock().unwrap(), expected);
        let m = &r.groups[0].rows[0].runs[0];
        for k in ["wall_s", "cpu_s", "ctx_switches", "overhead_cpu_s"] {
            assert!(m.contains_key(k), "{k} missing");
        }
        assert!(!m.contains_key("migrations"));
    }

    #[test]
    fn rounds_shuffle_place_and_neighbour() {
        let (n, rounds) = (8, 9);
        let orders: Vec<Vec<usize>> = (0..rounds).map(|r| round_order(n, r)).collect();
        for order in &orders {
            let mut sorted = order.clone();
            sorted.sort_unstable();
            assert_eq!(
                sorted,
                (0..n).collect::<Vec<_>>(),
                "not a permutation: {order:?}"
            );
        }
        assert_eq!(
            orders,
            (0..rounds).map(|r| round_order(n, r)).collect::<Vec<_>>()
        );
        for row in 0..n {
            let mut places = std::collections::BTreeSet::new();
            let mut predecessors = std::collections::BTreeSet::new();
            for order in &orders {
                let place = order.iter().position(|&i| i == row).unwrap();
                places.insert(place);
                if place > 0 {
                    predecessors.insert(order[place - 1]);
                }
            }
            // A rotation would give every row one predecessor in all but one round.
            assert!(
                places.len() >= 3,
                "row {row} runs at places {places:?} only"
            );
            assert!(
                predecessors.len() >= 3,
                "row {row} follows only {predecessors:?}"
            );
        }
    }

    #[test]
    fn paired_ratios_divide_by_the_same_rounds_reference() {
        let runs_of = |system: &str, values: &[f64]| RowRuns {
            system: system.into(),
            role: Role::Peer,
            params: Params::new(),
            runs: values
                .iter()
                .map(|&v| [("run_s".to_string(), v)].into_iter().collect())
                .collect(),
        };
        let mut runs = ExperimentRuns {
            name: "x".into(),
            groups: vec![
                GroupRuns {
                    title: "with the reference".into(),
                    rows: vec![
                        runs_of("in-line", &[2.0, 4.0, 0.0]),
                        runs_of("other", &[3.0, 2.0, 1.0]),
                    ],
                },
                GroupRuns {
                    title: "without".into(),
                    rows: vec![runs_of("other", &[3.0])],
                },
            ],
        };
        add_paired(&mut runs, &[("in-line", "run_s"), ("in-line", "absent_s")]);
        let ratios = |g: usize, row: usize| -> Vec<Option<f64>> {
            runs.groups[g].rows[row]
                .runs
                .iter()
                .map(|m| m.get("run_vs_in_line").copied())
                .collect()
        };
        assert_eq!(ratios(0, 0), [Some(1.0), Some(1.0), None]);
        assert_eq!(ratios(0, 1), [Some(1.5), Some(0.5), None]);
        assert_eq!(ratios(1, 0), [None]);
        assert!(runs.groups[0].rows[1].runs[0]
            .keys()
            .all(|k| !k.starts_with("absent")));
    }
}
