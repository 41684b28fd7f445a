//! `micro`: scheduler micro-benchmarks against the pools people use today.
//!
//! The workloads: spawn-many (measured from outside and from inside a task), ping-pong,
//! chained spawn, successor hold and ramp, each with `cores` worker threads; fork-join, the
//! tree-sum at three sizes and par-iter at 1, 2, 4, .. workers below `cores` and at `cores`
//! (`--workers` picks the counts; a table below `cores` runs on that many processors,
//! `machine::on_cpus`). Each run builds its pool, times
//! the workload alone, then shuts the pool down and waits for its threads to exit (the
//! harness's wall and CPU time include start-up and shut-down; `ns_per_op` does not).
//!
//! - **spawn-many**: 10,000 tiny tasks (each adds one to a shared atomic counter; on rayon
//!   the counter is the latch it counts down), then wait for all of them; repeated for a
//!   few rounds per run. *From outside*: the measuring thread spawns them. *From inside*:
//!   one task spawned from outside spawns them all, so they land on a worker's own queue.
//!   ember: `Pool::spawn` + `Pool::wait_idle`; rayon: `ThreadPool::spawn` (`rayon::spawn`
//!   inside) + a count-down latch; tokio: `spawn` and awaiting every `JoinHandle`. An op is
//!   one task.
//! - **fork-join**: naive `fib(30)` where every call above the leaves is one `join` of its
//!   two sub-calls, with no sequential cut-off: the cost measured is the cost of `join`;
//!   An op is one `join` (`fib(n + 1) - 1` of them).
//! - **tree-sum**: the benchmark the `chili` crate publishes: the sum of a perfect binary
//!   tree, one `join` per node; 1,023 nodes, 2^20 − 1 and 2^24 − 1, each at every worker
//!   count. An op is one node.
//!
//!   A fork-join run evaluates its workload until 60 ms have passed (see `fork_join`).
//!
//!   Both fork-join workloads run on ember (`Pool::join`, started inside a pool task), rayon
//!   (`rayon::join` inside `ThreadPool::install`), chili (`Scope::join`, its closures swapped
//!   so that every system walks the tree in the same order) and serially (the floor; the
//!   tree-sum adds `serial-right-first`, what the order of the walk alone is worth: see
//!   `fork_join`); workers are counted the same way for every system. tokio has
//!   no fork-join (async recursion would measure a boxed future and a spawned task per call,
//!   not a join), so it has no row there.
//! - **ping-pong**: 1,000 pairs of tasks each bouncing a ball back and forth: the task that
//!   receives the ball spawns its partner with it, until the pair has made `bounces` task
//!   runs. All pairs start at once from outside. ember / rayon / tokio spawn the partner
//!   with the spawn of the pool a task runs on (`ember::spawn`, `rayon::spawn`,
//!   `tokio::spawn`); `tokio-mpsc` is the usual tokio shape instead: two
//!   long-lived tasks per pair and a `tokio::sync::mpsc` channel each way. An op is one
//!   bounce (one task run, or one message received).
//! - **chained spawn**: a chain of 1,000 tasks, each spawning the next; the last reports.
//!   Chains run one after another (the next starts when the previous one has reported). An
//!   op is one link. Pairs and chains report to a waiting thread that blocks at once and
//!   wakes once a wave (`mailbox.rs`: a channel's receive yields the processor while it
//!   waits, which moved the switch counts of every row from run to run).
//! - **successor hold**: 100 parents, one at a time on an idle pool, each spawns one
//!   successor and then runs 1 ms without a scheduling point; the table gives how long each
//!   successor waited to start (`hold_max_us`, `hold_median_us`; `hold.rs`). An op is one
//!   successor, and `ns_per_op` its mean wait.
//! - **par-iter**: parallel iterators, ember's default policy against rayon, on 10^7 random
//!   u64: a sum of squares, a `par_sort_unstable`, a map-filter-collect (see `par_iter`). An
//!   op is one item.
//! - **ramp**: a burst of one 2 ms job per worker, spawned from a worker of a pool whose
//!   workers all sleep: the time until every worker runs one (see `ramp`). An op is a burst.
//!
//! `--micro-bench NAME,..` runs only the tables of those benchmarks (`spawn-outside`,
//! `spawn-inside`, `fork-join`, `ping-pong`, `chained-spawn`, `successor-hold`, `tree-sum`,
//! `par-iter`, `ramp`).
//!
//! Sizes (default / `--quick`): spawn-many 10,000 tasks x 40 / 1 rounds; `fib(30)` /
//! `fib(20)`; tree-sum trees of 10, 20, 24 / 10, 12, 14 layers; ping-pong 1,000 pairs x 1,000 / 10 bounces; chained spawn 1,000 / 5 chains of
//! depth 1,000; successor hold 100 / 10 parents; ramp 21 / 3 bursts after 30 / 5 ms idle.
//!
//! # Metrics (besides what the harness measures around the run)
//!
//! - `ns_per_op`, `ops_per_s`: timed around the workload only, ops as defined above.
//! - `wakeups` (ember rows): `PoolStats::wakeups_issued` at the end of the run.
//! - `longest_deferral_us` (ember rows): `PoolStats::longest_deferral`, the longest a
//!   spawned job's deferred wake-up stayed owed before the pool made it (0 where none was
//!   made: every owed wake-up was voided by its spawner taking the job back).
//! - `wall_vs_rayon`, `cpu_vs_rayon`, `ctx_vs_rayon`: per round, the row's `wall_s`, `cpu_s`
//!   and `ctx_switches` over the rayon row's (paired ratios, with their CI in `report.json`),
//!   in every table with a rayon row. (The claims give `ns_per_op`'s.)
//!
//! # Checks
//!
//! Every result is checked inside the run and a wrong one panics instead of being reported:
//! the spawn-many counter equals the number of tasks; `fib` equals the iterative value and
//! the tree-sum the node count;
//! every pair and chain reports exactly once with exactly its number of bounces or links
//! (the ball carries its count); nothing reports again after the pool has shut down. A run
//! that waits longer than `TIMEOUT` (120 s) for a result (a wave's reports) panics rather
//! than hang (`Pool::wait_idle` has no time limit; it must return once the tasks are done).

mod fork_join;
mod hold;
mod par_iter;
mod ramp;
mod relays;
mod spawn;

use fork_join::{Node, Work};
use relays::{ping_pong_tokio_mpsc, relay_trials, Relays};
use spawn::{spawn_group, Origin};

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, Sender};

use super::ember_rows::EmberPolicy;
use super::peers::{rayon_pool, rayon_shutdown, tokio_runtime, Latch};
use super::{params, plural, rate, trial};
use crate::experiment::{Experiment, Group, LabOpts, Metrics, Trial};
use crate::machine::on_cpus;
use crate::systems;
use crate::tables::{benchmark, key, workload};
use clap::Args;

/// Flags of `micro`.
#[derive(Args, Debug, Clone, Default)]
#[command(next_help_heading = "micro")]
pub struct MicroArgs {
    /// Run only these benchmarks' tables (spawn-outside, spawn-inside, fork-join, ping-pong,
    /// chained-spawn, successor-hold, tree-sum, par-iter, ramp) [default: all]
    #[arg(long = "micro-bench", value_delimiter = ',', value_name = "NAME,..")]
    pub benchmarks: Vec<String>,
    /// Worker counts of the fork-join, tree-sum and par-iter tables [default: 1, 2, 4, ..
    /// below the core count, then the core count]; a count below the core count runs on
    /// that many processors
    #[arg(long = "workers", value_delimiter = ',', value_name = "N,..")]
    pub workers: Vec<usize>,
}

/// The `micro` experiment.
pub struct Micro {
    pub args: MicroArgs,
}

/// Every benchmark name a table of `micro` has.
const BENCHMARKS: &[&str] = benchmark::ALL;

/// A run that has waited this long for a result has lost a task: it panics.
const TIMEOUT: Duration = Duration::from_secs(120);

/// Sizes of the workloads.
#[derive(Clone, Copy, Debug)]
struct Sizes {
    /// Worker threads of every pool.
    threads: usize,
    /// Tasks per spawn-many round.
    spawn_tasks: usize,
    /// Spawn-many rounds per run.
    spawn_rounds: usize,
    /// `n` of the fork-join `fib(n)`.
    fib_n: u32,
    /// How long a fork-join run keeps evaluating its workload.
    fork_join_target: Duration,
    /// Tree-sum sizes in layers (`2^layers - 1` nodes).
    trees: [u32; 3],
    /// Ping-pong pairs.
    pairs: usize,
    /// Task runs per ping-pong pair.
    bounces: u64,
    /// Links per chain.
    chain_depth: u64,
    /// Chains per run, one after another.
    chains: usize,
    /// Parents per successor-hold run (`hold.rs`).
    hold_parents: usize,
    /// Items of the par-iter inputs.
    par_items: usize,
    /// Evaluations per run of the par-iter sum of squares.
    par_sum_evals: usize,
    /// Evaluations per run of the par-iter map-filter-collect.
    par_collect_evals: usize,
    /// Measured bursts per ramp run (`ramp.rs`).
    ramp_bursts: usize,
    /// How long the pool idles before each burst: long enough for every worker to park.
    ramp_idle: Duration,
}

impl Sizes {
    fn new(opts: &LabOpts) -> Sizes {
        let threads = opts.cores.max(1);
        if opts.quick {
            Sizes {
                threads,
                spawn_tasks: 10_000,
                spawn_rounds: 1,
                fib_n: 20,
                fork_join_target: Duration::from_millis(5),
                trees: [10, 12, 14],
                pairs: 1_000,
                bounces: 10,
                chain_depth: 1_000,
                chains: 5,
                hold_parents: 10,
                par_items: 100_000,
                par_sum_evals: 1,
                par_collect_evals: 1,
                ramp_bursts: 3,
                ramp_idle: Duration::from_millis(5),
            }
        } else {
            Sizes {
                threads,
                spawn_tasks: 10_000,
                spawn_rounds: 40,
                fib_n: 30,
                fork_join_target: Duration::from_millis(60),
                trees: [10, 20, 24],
                pairs: 1_000,
                bounces: 1_000,
                chain_depth: 1_000,
                chains: 1_000,
                hold_parents: 100,
                par_items: 10_000_000,
                par_sum_evals: 40,
                par_collect_evals: 5,
                ramp_bursts: 21,
                ramp_idle: Duration::from_millis(30),
            }
        }
    }
}

impl Experiment for Micro {
    fn name(&self) -> &'static str {
        crate::tables::experiment::MICRO
    }

    fn headline(&self) -> &'static [&'static str] {
        &["ns_per_op", "ctx_switches", "cpu_s", "wakeups"]
    }

    fn paired(&self) -> &'static [(&'static str, &'static str)] {
        &[
            ("rayon", "wall_s"),
            ("rayon", "cpu_s"),
            ("rayon", "ctx_switches"),
        ]
    }

    fn groups(&self, opts: &LabOpts) -> Result<Vec<Group>, String> {
        if let Some(unknown) = self
            .args
            .benchmarks
            .iter()
            .find(|b| !BENCHMARKS.contains(&b.as_str()))
        {
            return Err(format!(
                "--micro-bench: no benchmark `{unknown}` (there are {})",
                BENCHMARKS.join(", ")
            ));
        }
        let wanted = |name: &str| {
            self.args.benchmarks.is_empty() || self.args.benchmarks.iter().any(|b| b == name)
        };
        let s = Sizes::new(opts);
        let widths = widths(opts.cores, &self.args.workers)?;
        let benchmark = |g: &Group| match g.params.get(key::BENCHMARK) {
            Some(serde_json::Value::String(name)) => wanted(name),
            _ => true,
        };
        let mut groups: Vec<Group> = Self::small_groups(s, &widths)
            .into_iter()
            .filter(benchmark)
            .collect();
        // The trees (up to 2^24 nodes) and the par-iter input (10^7 items) are only built
        // when their tables run.
        if wanted(benchmark::TREE_SUM) {
            groups.extend(tree_groups(s, &widths));
        }
        if wanted(benchmark::PAR_ITER) {
            groups.extend(par_iter::par_iter_groups(s, &widths));
        }
        Ok(groups)
    }
}

impl Micro {
    /// The tables whose set-up costs nothing: spawn-many, fork-join, ping-pong, chains.
    fn small_groups(s: Sizes, widths: &[usize]) -> Vec<Group> {
        let threads = s.threads;
        let mut groups = vec![
            spawn_group(s, Origin::Outside),
            spawn_group(s, Origin::Inside),
        ];
        groups.extend(fib_groups(s, widths));
        groups.extend([
            Group {
                title: format!(
                    "ping-pong: {} pairs x {} bounces, {threads} threads",
                    thousands(s.pairs as u64),
                    thousands(s.bounces)
                ),
                params: params([
                    (key::BENCHMARK, benchmark::PING_PONG.into()),
                    ("threads", threads.into()),
                    ("pairs", s.pairs.into()),
                    ("bounces", s.bounces.into()),
                ]),
                trials: relay_trials(s, Relays::ping_pong(s))
                    .into_iter()
                    .chain([trial(systems::TOKIO_MPSC, move || ping_pong_tokio_mpsc(s))])
                    .collect(),
            },
            Group {
                title: format!(
                    "chained spawn: depth {} x {} chains in turn, {threads} threads",
                    thousands(s.chain_depth),
                    thousands(s.chains as u64)
                ),
                params: params([
                    (key::BENCHMARK, benchmark::CHAINED_SPAWN.into()),
                    ("threads", threads.into()),
                    ("depth", s.chain_depth.into()),
                    ("chains", s.chains.into()),
                ]),
                trials: relay_trials(s, Relays::chains(s)),
            },
            hold::hold_group(s),
            ramp::ramp_group(s),
        ]);
        groups
    }
}

/// One trial per ember policy and the rows that vary deferred wake-ups, each running `run`.
fn ember_trials(run: impl Fn(EmberPolicy) -> Metrics + Copy + 'static) -> Vec<Trial> {
    EmberPolicy::trials(&EmberPolicy::SPAWNING, run)
}

/// The fork-join rows of `work` with `workers` workers: ember (every policy for `fib`, the
/// default for the tree-sum; and, for both, with every half offered at once,
/// `lazy_joins(false)`), rayon, chili, and the serial floor (for the tree-sum also walking
/// right first: `fork_join`, module doc).
fn fork_join_trials(
    work: Work,
    target: Duration,
    workers: usize,
    policies: &[EmberPolicy],
) -> Vec<Trial> {
    let mut trials: Vec<Trial> = policies
        .iter()
        .map(|&policy| {
            let work = work.clone();
            trial(policy.system(), move || {
                on_cpus(workers, || {
                    fork_join::on_ember(&work, target, workers, policy)
                })
            })
        })
        .collect();
    let w = work.clone();
    trials.push(trial(systems::RAYON, move || {
        on_cpus(workers, || fork_join::on_rayon(&w, target, workers))
    }));
    let w = work.clone();
    trials.push(trial(systems::CHILI, move || {
        on_cpus(workers, || fork_join::on_chili(&w, target, workers))
    }));
    let w = work.clone();
    trials.push(trial(systems::SERIAL, move || {
        on_cpus(workers, || fork_join::on_serial(&w, target, false))
    }));
    if let Work::TreeSum(..) = work {
        trials.push(trial(systems::SERIAL_RIGHT_FIRST, move || {
            on_cpus(workers, || fork_join::on_serial(&work, target, true))
        }));
    }
    trials
}

/// The worker counts of the fork-join, tree-sum and par-iter tables: `--workers`, or 1, 2,
/// 4, .. below `cores` and `cores` itself, so that the tables show how each system scales on
/// this machine up to its full width (where the claims read them: `width_params`).
fn widths(cores: usize, given: &[usize]) -> Result<Vec<usize>, String> {
    if given.contains(&0) {
        return Err("--workers: a table needs at least one worker".into());
    }
    let mut widths = if given.is_empty() {
        let cores = cores.max(1);
        let mut w: Vec<usize> = std::iter::successors(Some(1usize), |w| w.checked_mul(2))
            .take_while(|&w| w < cores)
            .collect();
        w.push(cores);
        w
    } else {
        given.to_vec()
    };
    widths.sort_unstable();
    widths.dedup();
    Ok(widths)
}

/// The parameters a table at `workers` workers carries: its count, and whether it is the
/// machine's full width (`full_width`, which the claims select).
fn width_params(workers: usize, cores: usize) -> [(&'static str, serde_json::Value); 2] {
    [
        (key::WORKERS, workers.into()),
        (key::FULL_WIDTH, (workers == cores).into()),
    ]
}

/// `fib` at each of `widths` workers, every ember policy.
fn fib_groups(s: Sizes, widths: &[usize]) -> Vec<Group> {
    let work = Work::Fib(s.fib_n);
    widths
        .iter()
        .map(|&workers| Group {
            title: format!(
                "fork-join: fib({}) with join, no cut-off, {workers} worker{} (tokio: no fork-join)",
                s.fib_n,
                plural(workers)
            ),
            params: params([
                (key::BENCHMARK, benchmark::FORK_JOIN.into()),
                ("threads", workers.into()),
                ("fib_n", s.fib_n.into()),
                ("joins", work.joins().into()),
            ])
            .into_iter()
            .chain(params(width_params(workers, s.threads)))
            .collect(),
            trials: fork_join_trials(
                work.clone(),
                s.fork_join_target,
                workers,
                &[
                    EmberPolicy::Default,
                    EmberPolicy::Biased,
                    EmberPolicy::Searching,
                    EmberPolicy::Eager,
                    EmberPolicy::Offered,
                    EmberPolicy::SequentialJoins,
                ],
            ),
        })
        .collect()
}

/// chili's tree-sum at each size, at each of `widths` workers. The trees are built here,
/// once, outside every measured run.
fn tree_groups(s: Sizes, widths: &[usize]) -> Vec<Group> {
    let cache = crate::machine::last_level_cache_bytes();
    let mut groups = Vec::new();
    for layers in s.trees {
        let tree = Arc::new(Node::tree(layers));
        for &workers in widths {
            let work = Work::TreeSum(layers, tree.clone());
            let nodes = work.joins();
            let node_bytes = nodes * std::mem::size_of::<Node>() as u64;
            groups.push(Group {
                title: format!(
                    "tree-sum: {} nodes, {workers} worker{}{}",
                    thousands(nodes),
                    plural(workers),
                    cache_edge_note(node_bytes, cache)
                ),
                params: params([
                    (key::BENCHMARK, benchmark::TREE_SUM.into()),
                    (key::NODES, nodes.into()),
                    ("node_bytes", node_bytes.into()),
                ])
                .into_iter()
                .chain(params(width_params(workers, s.threads)))
                .collect(),
                trials: fork_join_trials(
                    work,
                    s.fork_join_target,
                    workers,
                    &[
                        EmberPolicy::Default,
                        EmberPolicy::Offered,
                        EmberPolicy::SequentialJoins,
                    ],
                ),
            });
        }
    }
    groups
}

/// A tree-sum table's warning when its nodes' data is within a factor of two of the
/// last-level cache (`cache` bytes): a walk of such a tree hits or misses that cache
/// depending on how much of it other programs (other tenants, on a virtual machine) leave it,
/// so its times, and its ratios between systems that miss differently, move from run to
/// run. Empty otherwise.
fn cache_edge_note(node_bytes: u64, cache: Option<u64>) -> String {
    match cache {
        Some(cache) if node_bytes >= cache / 2 && node_bytes <= cache.saturating_mul(2) => {
            format!(
                " ({} of nodes, near the {} last-level cache: its times move with what else \
                 uses that cache)",
                crate::machine::binary_size(node_bytes),
                crate::machine::binary_size(cache)
            )
        }
        _ => String::new(),
    }
}

/// `1,000` for 1000.
fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

fn recv_or_die<T>(rx: &Receiver<T>, what: &str) -> T {
    match rx.recv_timeout(TIMEOUT) {
        Ok(v) => v,
        Err(e) => panic!("micro: {what}: no result after {TIMEOUT:?} ({e}); a task was lost"),
    }
}

// ---------------------------------------------------------------------------------------
// The systems.

/// Adds the ember pool's `wakeups` to `metrics`, then shuts the pool down.
fn finish_ember(pool: ember::Pool, mut metrics: Metrics) -> Metrics {
    let stats = pool.stats();
    drop(pool);
    metrics.insert("wakeups".into(), stats.wakeups_issued as f64);
    metrics.insert(
        "longest_deferral_us".into(),
        stats.longest_deferral.as_secs_f64() * 1e6,
    );
    metrics
}

/// Runs `f` on a rayon pool of `threads` threads, then drops the pool and joins its
/// threads (rayon does not join them on drop), so that no thread of this run outlives it.
fn with_rayon<R>(threads: usize, f: impl FnOnce(&rayon::ThreadPool) -> R) -> R {
    let (pool, handles) = rayon_pool(threads, "micro-rayon");
    let out = f(&pool);
    rayon_shutdown(pool, handles);
    out
}

#[cfg(test)]
mod tests {
    use super::cache_edge_note;

    #[test]
    fn only_a_tree_near_the_cache_size_is_flagged() {
        let cache = Some(32 << 20);
        // 1,023, 2^20 and 2^24 nodes of 24 bytes against a 32 MiB cache.
        assert_eq!(cache_edge_note(1023 * 24, cache), "");
        let edge = cache_edge_note(((1 << 20) - 1) * 24, cache);
        assert!(edge.contains("24 MiB of nodes"), "{edge}");
        assert!(edge.contains("32 MiB last-level cache"), "{edge}");
        assert_eq!(cache_edge_note(((1 << 24) - 1) * 24, cache), "");
        assert_eq!(cache_edge_note(24 << 20, None), "");
    }
}
