//! The claims the lab checks: one entry per published claim (and per claim of ember's own),
//! each declaring — before anything is measured — the table it is read from, the rows it
//! compares, the metric, and the bound the paired ratio must meet. The verdict is computed
//! from the measured rounds ([`evaluate`]); nothing here holds a result.
//!
//! A claim compares its `subject` row with its `baseline` row (or the better of several) in
//! the same table, round by round: the ratio subject / baseline of each round, and the
//! sign-test 95 % confidence interval of the median of those ratios. The claim is
//! `reproduced` when the median and the whole interval are on the claimed side of the bounds,
//! `not reproduced` otherwise, and `not reproducible on this machine` only when a measured
//! property of the machine (its core count) is below the minimum the entry declares. Fewer
//! than [`MIN_ROUNDS`] rounds (`--quick`, a small `--repeat`) give no verdict.
//!
//! Beside the verdict, every claim with an ember row shows ember against the best peer of a
//! table it names, the same way: a per-round ratio with its interval.

use crate::metrics::stats::{median_ci95, spread};
use crate::runner::ExperimentRuns;
use crate::systems::{self, Role, System};
use crate::tables::{benchmark, experiment, key, value, workload};
use serde::{Deserialize, Serialize};

/// Rounds a verdict needs: the fewest for which the sign-test interval leaves out the
/// extremes of the rounds.
pub const MIN_ROUNDS: usize = 9;

/// A publication (or ember's own documentation).
#[derive(Clone, Copy, Debug)]
pub struct Source {
    pub title: &'static str,
    pub url: &'static str,
}

/// Which rows a ratio divides by.
#[derive(Clone, Copy, Debug)]
pub enum Baseline {
    /// The row of this system.
    Row(&'static System),
    /// The best (by median) of these systems' rows.
    BestOf(&'static [&'static System]),
    /// The best (by median) of the table's peers.
    BestPeer,
}

/// Which way the claim points.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Direction {
    /// The ratio must be small: its median at most `median`, the interval's top at most `ci`.
    AtMost,
    /// The ratio must be large: its median at least `median`, the interval's bottom at least `ci`.
    AtLeast,
}

/// What is compared, and how it must come out.
#[derive(Clone, Copy, Debug)]
pub struct Comparison {
    /// `(param, value)` pairs that pick the table out of the experiment's.
    pub table: &'static [(&'static str, &'static str)],
    pub metric: &'static str,
    pub subject: &'static System,
    pub baseline: Baseline,
}

/// One claim, declared before measurement.
#[derive(Clone, Copy, Debug)]
pub struct Claim {
    pub id: &'static str,
    pub source: Source,
    /// The claim, in a sentence.
    pub claim: &'static str,
    /// The published figure and the machine it was measured on.
    pub published: &'static str,
    pub experiment: &'static str,
    pub check: Comparison,
    pub direction: Direction,
    pub median: f64,
    pub ci: f64,
    /// Cores the effect needs to show; fewer makes the claim not reproducible here.
    pub min_cores: usize,
    /// Where ember is compared with the best peer (`subject` is the ember row), if anywhere.
    pub ember: Option<Comparison>,
}

/// A paired ratio over the rounds of a table.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Ratio {
    pub subject: String,
    pub baseline: String,
    pub metric: String,
    /// Medians of the metric over the rounds, subject and baseline.
    pub subject_median: f64,
    pub baseline_median: f64,
    pub median: f64,
    /// `[low, high]`, absent below 6 rounds.
    pub ci95: Option<[f64; 2]>,
    /// Rounds with a ratio (rounds whose baseline value is 0 or negative have none).
    pub rounds: usize,
}

/// The outcome of one claim.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClaimResult {
    pub id: String,
    pub source_title: String,
    pub source_url: String,
    pub claim: String,
    pub published: String,
    pub experiment: String,
    /// The declared test, in words (`ratio ≤ 0.5, CI high ≤ 0.5`).
    pub test: String,
    pub ratio: Option<Ratio>,
    pub ember_vs_best_peer: Option<Ratio>,
    /// `reproduced`, `not reproduced`, `not reproducible on this machine`, or `no verdict`.
    pub verdict: String,
    /// Why, one line.
    pub reason: String,
}

const BIASED: Source = Source {
    title: "R. O'Callahan, \"Biased work queues\" (Pernosco)",
    url: "https://github.com/rocallahan/biased-work-queues",
};
const LIBFIBRE: Source = Source {
    title: "P. Cai, libfibre merge request \"Avoid atomic operations when the local queue is not empty\" (after Go and Tokio)",
    url: "https://git.uwaterloo.ca/mkarsten/libfibre",
};
const SINILO: Source = Source {
    title: "M. Sinilo, \"Clash of the Thread Pools\" (blog)",
    url: "https://msinilo.pl/blog2/",
};
const CELERITY: Source = Source {
    title:
        "Celerity runtime PR #111, \"Improve scheduler performance by reducing lock contention\"",
    url: "https://github.com/celerity/celerity-runtime/pull/111",
};
const BLOOM: Source = Source {
    title: "C. Bloom, \"Worker Thread Forward Permit Delay-Kicks\" (cbloom rants, 2013-04-04)",
    url: "https://cbloomrants.blogspot.com/2013/04/",
};
const EMBER: Source = Source {
    title: "ember's own claim (README: the throughput of the best pools, far fewer wake-ups)",
    url: "README.md",
};

const PUBLISHED_PC: &[(&str, &str)] = &[(key::SHAPE, value::PUBLISHED)];
const ONE_CHAIN: &[(&str, &str)] = &[(key::BOUND, value::CPU), (key::RESET_EVERY, value::CHUNKS)];

/// ember against the best peer of `table` on `metric`.
const fn ember_vs_best_peer(
    table: &'static [(&'static str, &'static str)],
    metric: &'static str,
) -> Option<Comparison> {
    Some(Comparison {
        table,
        metric,
        subject: systems::EMBER,
        baseline: Baseline::BestPeer,
    })
}

const CYCLE_100: &[(&str, &str)] = &[(key::WORKERS, "100"), (key::RINGS, "100")];
/// The fork-join tables, each a claim of its own (`as_fast_as_rayon`): `fib` and the tree-sum
/// of `nodes` nodes, on `workers` workers (number literals: the table's parameters are their
/// text).
/// `full` picks the table at the machine's full width (`full_width`: as many workers as
/// cores), where a scheduler's wake-ups and steals matter most.
macro_rules! fib {
    (full) => {
        &[
            (key::BENCHMARK, benchmark::FORK_JOIN),
            (key::FULL_WIDTH, value::TRUE),
        ]
    };
    ($workers:literal) => {
        &[
            (key::BENCHMARK, benchmark::FORK_JOIN),
            (key::WORKERS, stringify!($workers)),
        ]
    };
}
macro_rules! tree_sum {
    ($nodes:literal, full) => {
        &[
            (key::BENCHMARK, benchmark::TREE_SUM),
            (key::NODES, stringify!($nodes)),
            (key::FULL_WIDTH, value::TRUE),
        ]
    };
    ($nodes:literal, $workers:literal) => {
        &[
            (key::BENCHMARK, benchmark::TREE_SUM),
            (key::NODES, stringify!($nodes)),
            (key::WORKERS, stringify!($workers)),
        ]
    };
}

/// An `as_fast_as_rayon` claim on the table `fib` or `tree NODES` with `WORKERS` workers
/// (`1`, which is also the number of cores the claim needs, or `full`: every core, at
/// least 2).
macro_rules! fork_join {
    ($id:literal, $claim:literal, fib, full) => {
        as_fast_as_rayon($id, $claim, fib!(full), 2)
    };
    ($id:literal, $claim:literal, fib, $workers:literal) => {
        as_fast_as_rayon($id, $claim, fib!($workers), $workers)
    };
    ($id:literal, $claim:literal, tree $nodes:literal, full) => {
        as_fast_as_rayon($id, $claim, tree_sum!($nodes, full), 2)
    };
    ($id:literal, $claim:literal, tree $nodes:literal, $workers:literal) => {
        as_fast_as_rayon($id, $claim, tree_sum!($nodes, $workers), $workers)
    };
}

/// ember at least as fast as rayon on the `micro` table `table` (time per operation: per
/// `join` on the fork-join tables, per link of a chain of spawns; paired rounds), with ember
/// against the best peer alongside.
const fn as_fast_as_rayon(
    id: &'static str,
    claim: &'static str,
    table: &'static [(&'static str, &'static str)],
    min_cores: usize,
) -> Claim {
    Claim {
        id,
        source: EMBER,
        claim,
        published: "ember's claim (bar: median ≤ 1.00, CI high ≤ 1.05)",
        experiment: experiment::MICRO,
        check: Comparison {
            table,
            metric: "ns_per_op",
            subject: systems::EMBER,
            baseline: Baseline::Row(systems::RAYON),
        },
        direction: Direction::AtMost,
        median: 1.0,
        ci: 1.05,
        min_cores,
        ember: ember_vs_best_peer(table, "ns_per_op"),
    }
}

/// The `subject` row's `join` within 1.5× of chili's on the 2-worker tree-sum table `table`
/// (time per node, paired rounds; `as_fast_as_rayon` with chili as the baseline and its own
/// bar): chili's heartbeat scheduling makes most joins plain calls; ember's default keeps a
/// half private instead (lazy joins, where the system has the heavy barrier), and its opt-in
/// sequential joins (`ember-seq-joins`) make them plain calls too. chili walks the tree in
/// the same order as ember there (`experiments/micro/fork_join.rs`), so the ratio is the
/// schedulers', not the walk's.
const fn chili_claim(
    id: &'static str,
    claim: &'static str,
    subject: &'static System,
    table: &'static [(&'static str, &'static str)],
) -> Claim {
    let against_rayon = as_fast_as_rayon(id, claim, table, 2);
    Claim {
        published: "ember's claim (bar: median ≤ 1.50, CI high ≤ 1.50)",
        check: Comparison {
            subject,
            baseline: Baseline::Row(systems::CHILI),
            ..against_rayon.check
        },
        median: 1.5,
        ci: 1.5,
        ember: None,
        ..against_rayon
    }
}

/// `micro`'s chained spawn: chains of spawns, each job spawning the next as its last act.
const CHAINED_SPAWN: &[(&str, &str)] = &[(key::BENCHMARK, benchmark::CHAINED_SPAWN)];

/// The par-iter tables at the machine's full width.
const PAR_SUM: &[(&str, &str)] = &[
    (key::BENCHMARK, benchmark::PAR_ITER),
    (key::WORKLOAD, workload::SUM_OF_SQUARES),
    (key::FULL_WIDTH, value::TRUE),
];
const PAR_SORT: &[(&str, &str)] = &[
    (key::BENCHMARK, benchmark::PAR_ITER),
    (key::WORKLOAD, workload::SORT),
    (key::FULL_WIDTH, value::TRUE),
];
const PAR_COLLECT: &[(&str, &str)] = &[
    (key::BENCHMARK, benchmark::PAR_ITER),
    (key::WORKLOAD, workload::MAP_FILTER_COLLECT),
    (key::FULL_WIDTH, value::TRUE),
];

const PAR_HASH_MAP: &[(&str, &str)] = &[
    (key::BENCHMARK, benchmark::PAR_ITER),
    (key::WORKLOAD, workload::HASH_MAP_COLLECT),
    (key::FULL_WIDTH, value::TRUE),
];

/// ember's parallel iterators within 10 % of rayon's on the `par-iter` table `table`
/// (issue 12's bar); the ember column shows context switches.
const fn par_iter_claim(
    id: &'static str,
    claim: &'static str,
    table: &'static [(&'static str, &'static str)],
) -> Claim {
    Claim {
        id,
        source: EMBER,
        claim,
        published: "ember's claim (issue 12's bar: CI high ≤ 1.10; CPU ≤ 1.10×, context switches ≤ 1.10× rayon's)",
        experiment: experiment::MICRO,
        check: Comparison {
            table,
            metric: "ns_per_op",
            subject: systems::EMBER,
            baseline: Baseline::Row(systems::RAYON),
        },
        direction: Direction::AtMost,
        median: 1.1,
        ci: 1.1,
        min_cores: 2,
        ember: ember_vs_best_peer(table, "ctx_switches"),
    }
}

/// Every claim, in the order of the claims table.
pub const CLAIMS: &[Claim] = &[
    Claim {
        id: "biased-queue-switches",
        source: BIASED,
        claim: "A biased work queue removes most of the context switches a channel or rayon pays per item",
        published: "context switches crossbeam 315,292, rayon 23,359, biased 2,148 (3 pools × 8 threads, 8 CPUs)",
        experiment: experiment::PRODUCER_CONSUMER,
        check: Comparison {
            table: PUBLISHED_PC,
            metric: "avoidable_ctx_switches",
            subject: systems::BIASED_WORK_QUEUE,
            baseline: Baseline::BestOf(&[systems::CROSSBEAM, systems::RAYON]),
        },
        direction: Direction::AtMost,
        median: 0.5,
        ci: 0.5,
        min_cores: 2,
        // Plain switches: a peer below the floor (Go multiplexes goroutines on fewer threads)
        // has a negative avoidable count, which no ratio can be taken against.
        ember: ember_vs_best_peer(PUBLISHED_PC, "ctx_switches"),
    },
    Claim {
        id: "budget-switches-at-floor",
        source: EMBER,
        claim: "An awake-core budget shared by the pools of a process (opt-in; or of the machine) keeps 3 pools' context switches at what time slicing alone costs",
        published: "ember's claim: total context switches ≤ 1.1× the floor's (3 pools × cores threads, the published shape; ≤ 0.5× at 16 cores), wall and CPU ≤ 1.03× the best peer's",
        experiment: experiment::PRODUCER_CONSUMER,
        check: Comparison {
            table: PUBLISHED_PC,
            metric: "ctx_switches",
            subject: systems::EMBER_BUDGET,
            baseline: Baseline::Row(systems::FLOOR),
        },
        direction: Direction::AtMost,
        median: 1.1,
        ci: 1.1,
        min_cores: 2,
        ember: Some(Comparison {
            table: PUBLISHED_PC,
            metric: "wall_s",
            subject: systems::EMBER_BUDGET,
            baseline: Baseline::BestPeer,
        }),
    },
    Claim {
        id: "searching-many-workers",
        source: LIBFIBRE,
        claim: "Waking a sleeper only when nobody is searching keeps a token ring fast with 100 workers on few cores",
        published: "no figure restated here: the rule as Go and Tokio apply it",
        experiment: experiment::CYCLE,
        check: Comparison {
            table: CYCLE_100,
            metric: "ns_per_op",
            subject: systems::EMBER_SEARCHING,
            baseline: Baseline::Row(systems::EMBER_EAGER),
        },
        direction: Direction::AtMost,
        median: 1.0,
        ci: 1.0,
        min_cores: 2,
        ember: ember_vs_best_peer(CYCLE_100, "ns_per_op"),
    },
    Claim {
        id: "container-pop-cost",
        source: SINILO,
        claim: "Per-worker SPSC rings pop far cheaper than a lock-based queue",
        published: "pop cycles at 1–7 threads: lock-based 198–404, per-worker SPSC 24–30, work-stealing deque 100–139 (8 cores)",
        experiment: experiment::CONTAINERS,
        check: Comparison {
            table: &[(key::WORKLOAD, workload::POP), (key::THREADS, "2")],
            metric: "pop_ns",
            subject: systems::SPSC,
            baseline: Baseline::Row(systems::MUTEX_VECDEQUE),
        },
        direction: Direction::AtMost,
        median: 0.5,
        ci: 0.5,
        min_cores: 2,
        ember: ember_vs_best_peer(&[(key::WORKLOAD, workload::RAYCAST)], "frame_ms"),
    },
    Claim {
        id: "double-buffered-generation",
        source: CELERITY,
        claim: "A double-buffered submission queue cuts task-graph generation time against a lock-step scheduler thread",
        published: "wave_sim 2.94 → 1.65 ms, chain 421 → 242 µs",
        experiment: experiment::FLOW,
        check: Comparison {
            table: &[
                (key::TOPOLOGY, value::WAVE_SIM),
                (key::SUBMISSION, value::IMMEDIATE),
                (key::WORKLOAD, workload::GENERATION),
            ],
            metric: "generation_s",
            subject: systems::FLOW_DOUBLE_BUFFERED,
            baseline: Baseline::Row(systems::FLOW_LOCKSTEP),
        },
        direction: Direction::AtMost,
        median: 0.9,
        ci: 0.9,
        min_cores: 2,
        ember: None,
    },
    Claim {
        id: "delay-kick-wakeups",
        source: BLOOM,
        claim: "Delay-kick keeps a chain of decodes on one thread instead of waking a sleeper per successor",
        published: "a chain of decompression jobs stays on one thread (Oodle, game-engine runtime)",
        experiment: experiment::CHAINED_DECODE,
        check: Comparison {
            table: ONE_CHAIN,
            metric: "wakeups",
            subject: systems::EMBER,
            baseline: Baseline::Row(systems::EMBER_NO_DELAY_KICK),
        },
        direction: Direction::AtMost,
        median: 0.5,
        ci: 0.5,
        min_cores: 2,
        ember: ember_vs_best_peer(ONE_CHAIN, "ctx_switches"),
    },
    Claim {
        id: "delay-kick-same-thread",
        source: BLOOM,
        claim: "… so more successors run on their predecessor's thread",
        published: "the chain stays on one thread",
        experiment: experiment::CHAINED_DECODE,
        check: Comparison {
            table: ONE_CHAIN,
            metric: "same_thread_share",
            subject: systems::EMBER,
            baseline: Baseline::Row(systems::EMBER_NO_DELAY_KICK),
        },
        direction: Direction::AtLeast,
        median: 1.1,
        ci: 1.0,
        min_cores: 2,
        ember: ember_vs_best_peer(ONE_CHAIN, "same_thread_share"),
    },
    Claim {
        id: "delay-kick-speed",
        source: BLOOM,
        claim: "… and so cuts wall time",
        published: "about 10 % of wall time",
        experiment: experiment::CHAINED_DECODE,
        check: Comparison {
            table: ONE_CHAIN,
            metric: "wall_s",
            subject: systems::EMBER,
            baseline: Baseline::Row(systems::EMBER_NO_DELAY_KICK),
        },
        direction: Direction::AtMost,
        median: 0.97,
        ci: 1.0,
        min_cores: 2,
        ember: ember_vs_best_peer(ONE_CHAIN, "wall_s"),
    },
    Claim {
        id: "light-load-cpu",
        source: EMBER,
        claim: "Under light load ember's threads burn no more CPU than the best peer's",
        published: "ember's claim; no external figure",
        experiment: experiment::LIGHT_LOAD,
        check: Comparison {
            table: &[(key::INTERVAL_US, "1000")],
            metric: "pool_cpu_s",
            subject: systems::EMBER,
            baseline: Baseline::BestPeer,
        },
        direction: Direction::AtMost,
        median: 1.0,
        ci: 1.0,
        min_cores: 2,
        ember: None,
    },
    fork_join!(
        "fork-join-fib-1",
        "ember's join is at least as fast as rayon's: fib(30), no cut-off, 1 worker",
        fib,
        1
    ),
    fork_join!("fork-join-fib-full", "… fib(30), one worker per core", fib, full),
    fork_join!(
        "fork-join-tree-2^10-1",
        "… the tree-sum (chili's benchmark; chili publishes 13.6 ms for 2^24 nodes on 8 cores, rayon 58.1 ms, with chili walking the tree right first, an order that tree's layout favours), 1,023 nodes, 1 worker",
        tree 1023,
        1
    ),
    fork_join!("fork-join-tree-2^10-full", "… the tree-sum, 1,023 nodes, one worker per core", tree 1023, full),
    fork_join!("fork-join-tree-2^20-1", "… the tree-sum, 2^20 nodes, 1 worker", tree 1048575, 1),
    fork_join!("fork-join-tree-2^20-full", "… the tree-sum, 2^20 nodes, one worker per core", tree 1048575, full),
    fork_join!("fork-join-tree-2^24-1", "… the tree-sum, 2^24 nodes, 1 worker", tree 16777215, 1),
    fork_join!("fork-join-tree-2^24-full", "… the tree-sum, 2^24 nodes, one worker per core", tree 16777215, full),
    chili_claim(
        "fork-join-chili-tree-2^20-full",
        "ember's join stays within 1.5× of chili's heartbeat scheduling: the tree-sum, 2^20 nodes, one worker per core (chili's closures swapped, so both walk the tree in the same order)",
        systems::EMBER,
        tree_sum!(1048575, full),
    ),
    chili_claim(
        "fork-join-chili-tree-2^24-full",
        "… the tree-sum, 2^24 nodes, one worker per core",
        systems::EMBER,
        tree_sum!(16777215, full),
    ),
    chili_claim(
        "fork-join-chili-seq-tree-2^20-full",
        "… with sequential joins (opt-in, Tuning::sequential_joins_unchecked: the halves must not wait for each other), 2^20 nodes, one worker per core",
        systems::EMBER_SEQ_JOINS,
        tree_sum!(1048575, full),
    ),
    chili_claim(
        "fork-join-chili-seq-tree-2^24-full",
        "… with sequential joins, 2^24 nodes, one worker per core",
        systems::EMBER_SEQ_JOINS,
        tree_sum!(16777215, full),
    ),
    Claim {
        id: "successor-spawn-switches",
        source: EMBER,
        claim: "A spawned successor wakes nobody it does not need: a chain of spawns under the default policy costs at most 1.2× the context switches of Biased, which leaves a worker's own pushes to it",
        published: "ember's claim (bar: median ≤ 1.20, CI high ≤ 1.20)",
        experiment: experiment::MICRO,
        check: Comparison {
            table: CHAINED_SPAWN,
            metric: "ctx_switches",
            subject: systems::EMBER,
            baseline: Baseline::Row(systems::EMBER_BIASED),
        },
        direction: Direction::AtMost,
        median: 1.2,
        ci: 1.2,
        min_cores: 2,
        ember: ember_vs_best_peer(CHAINED_SPAWN, "ctx_switches"),
    },
    as_fast_as_rayon(
        "successor-spawn-speed",
        "… and runs at least as fast as rayon's",
        CHAINED_SPAWN,
        2,
    ),
    par_iter_claim(
        "par-iter-sum",
        "ember's parallel iterators keep up with rayon's: a sum of squares over 10^7 u64",
        PAR_SUM,
    ),
    par_iter_claim(
        "par-iter-sort",
        "… par_sort_unstable of 10^7 u64",
        PAR_SORT,
    ),
    par_iter_claim(
        "par-iter-collect",
        "… a map-filter-collect over 10^7 u64",
        PAR_COLLECT,
    ),
    // Both crates build the map on the calling thread from pairs collected in parallel: the
    // tighter bar of the median says the shared sequential part leaves ember no excuse.
    Claim {
        published: "ember's claim (bar: median ≤ 1.05, CI high ≤ 1.10; CPU ≤ 1.10×, context switches ≤ 1.10× rayon's)",
        median: 1.05,
        ..par_iter_claim(
            "par-iter-hash-map",
            "… a collect of 10^7 u64 pairs into a HashMap of 2^16 keys",
            PAR_HASH_MAP,
        )
    },
];

/// Lower is better unless the metric is a throughput or a share.
fn higher_is_better(metric: &str) -> bool {
    crate::report::higher_is_better(metric)
}

/// Whether a group's params match a table selector. The value `"chunks"` matches the
/// group's own `chunks` param (one chain: reset every `chunks` chunks).
fn matches(params: &crate::experiment::Params, table: &[(&str, &str)]) -> bool {
    table.iter().all(|(k, v)| {
        let want = if *v == value::CHUNKS {
            params.get("chunks").map(|c| c.to_string())
        } else {
            Some(v.to_string())
        };
        params.get(*k).map(|p| match p {
            serde_json::Value::String(s) => s.clone(),
            other => other.to_string(),
        }) == want
    })
}

/// The paired ratio of `c` in `runs`, or why there is none.
pub fn ratio(runs: &ExperimentRuns, c: &Comparison) -> Result<Ratio, String> {
    let group = runs
        .groups
        .iter()
        .find(|g| g.rows.first().is_some_and(|r| matches(&r.params, c.table)))
        .ok_or_else(|| format!("no table with {:?} in this run", c.table))?;
    let series = |name: &str| -> Option<Vec<Option<f64>>> {
        let row = group.rows.iter().find(|r| r.system == name)?;
        Some(row.runs.iter().map(|m| m.get(c.metric).copied()).collect())
    };
    let median_of = |v: &[Option<f64>]| {
        let vals: Vec<f64> = v.iter().flatten().copied().collect();
        spread(&vals).map(|s| s.median)
    };
    let subject = series(c.subject.name).ok_or_else(|| format!("no `{}` row", c.subject.name))?;
    let candidates: Vec<&str> = match c.baseline {
        Baseline::Row(system) => vec![system.name],
        Baseline::BestOf(systems) => systems.iter().map(|s| s.name).collect(),
        Baseline::BestPeer => group
            .rows
            .iter()
            .filter(|r| r.role == Role::Peer)
            .map(|r| r.system.as_str())
            .collect(),
    };
    let better = |a: f64, b: f64| {
        if higher_is_better(c.metric) {
            a > b
        } else {
            a < b
        }
    };
    let mut best: Option<(&str, Vec<Option<f64>>, f64)> = None;
    for name in candidates {
        let Some(values) = series(name) else { continue };
        let Some(m) = median_of(&values) else {
            continue;
        };
        if best.as_ref().is_none_or(|(_, _, b)| better(m, *b)) {
            best = Some((name, values, m));
        }
    }
    let (baseline, base, baseline_median) =
        best.ok_or_else(|| format!("no baseline row with `{}`", c.metric))?;
    let ratios: Vec<f64> = subject
        .iter()
        .zip(&base)
        .filter_map(|(s, b)| match (s, b) {
            (Some(s), Some(b)) if *b > 0.0 => Some(s / b),
            _ => None,
        })
        .collect();
    let median = spread(&ratios)
        .map(|s| s.median)
        .ok_or_else(|| format!("no round where `{baseline}` has a positive `{}`", c.metric))?;
    Ok(Ratio {
        subject: c.subject.name.to_string(),
        baseline: baseline.to_string(),
        metric: c.metric.to_string(),
        subject_median: median_of(&subject).unwrap_or(f64::NAN),
        baseline_median,
        median,
        ci95: median_ci95(&ratios).map(|(lo, hi)| [lo, hi]),
        rounds: ratios.len(),
    })
}

impl Claim {
    fn test(&self) -> String {
        let (op, end) = match self.direction {
            Direction::AtMost => ("≤", "high"),
            Direction::AtLeast => ("≥", "low"),
        };
        format!(
            "{} / {} {}: median {op} {}, CI {end} {op} {}",
            self.check.subject.name,
            match self.check.baseline {
                Baseline::Row(r) => r.name.to_string(),
                Baseline::BestOf(rs) => format!(
                    "best of {}",
                    rs.iter().map(|s| s.name).collect::<Vec<_>>().join(", ")
                ),
                Baseline::BestPeer => "best peer".into(),
            },
            self.check.metric,
            self.median,
            self.ci
        )
    }

    /// The verdict for this claim from its experiment's runs (`None`: not run).
    pub fn evaluate(&self, runs: Option<&ExperimentRuns>, cores: usize) -> ClaimResult {
        let mut result = ClaimResult {
            id: self.id.into(),
            source_title: self.source.title.into(),
            source_url: self.source.url.into(),
            claim: self.claim.into(),
            published: self.published.into(),
            experiment: self.experiment.into(),
            test: self.test(),
            ratio: None,
            ember_vs_best_peer: None,
            verdict: "no verdict".into(),
            reason: String::new(),
        };
        let Some(runs) = runs else {
            result.reason = format!("`{}` was not run", self.experiment);
            return result;
        };
        result.ember_vs_best_peer = self.ember.and_then(|e| ratio(runs, &e).ok());
        let r = match ratio(runs, &self.check) {
            Ok(r) => r,
            Err(why) => {
                result.reason = why;
                return result;
            }
        };
        let (verdict, reason) = verdict(self, &r, cores);
        result.verdict = verdict.into();
        result.reason = reason;
        result.ratio = Some(r);
        result
    }
}

/// The verdict on `r` against `claim`'s declared bounds, and why.
fn verdict(claim: &Claim, r: &Ratio, cores: usize) -> (&'static str, String) {
    if cores < claim.min_cores {
        return (
            "not reproducible on this machine",
            format!(
                "{cores} cores; the effect needs at least {}",
                claim.min_cores
            ),
        );
    }
    let Some([lo, hi]) = r.ci95.filter(|_| r.rounds >= MIN_ROUNDS) else {
        return (
            "no verdict",
            format!("{} rounds; a verdict needs {MIN_ROUNDS}", r.rounds),
        );
    };
    let holds = match claim.direction {
        Direction::AtMost => r.median <= claim.median && hi <= claim.ci,
        Direction::AtLeast => r.median >= claim.median && lo >= claim.ci,
    };
    let shown = format!(
        "ratio {:.3} (CI {:.3}–{:.3}, {} rounds)",
        r.median, lo, hi, r.rounds
    );
    if holds {
        ("reproduced", shown)
    } else {
        ("not reproduced", shown)
    }
}

/// Every claim evaluated against the experiments that ran.
pub fn evaluate(ran: &[ExperimentRuns], cores: usize) -> Vec<ClaimResult> {
    CLAIMS
        .iter()
        .map(|c| c.evaluate(ran.iter().find(|r| r.name == c.experiment), cores))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::experiment::{Group, LabOpts, Metrics, Params};
    use crate::runner::{GroupRuns, RowRuns};

    /// Claims whose tables only the default size builds: `--quick` grows no tree past
    /// 2^14 nodes. The plan test fails if one of these turns up at `--quick`, so the list
    /// cannot go stale.
    const DEFAULT_SIZE_ONLY: &[&str] = &[
        "fork-join-tree-2^20-1",
        "fork-join-tree-2^20-full",
        "fork-join-tree-2^24-1",
        "fork-join-tree-2^24-full",
        "fork-join-chili-tree-2^20-full",
        "fork-join-chili-tree-2^24-full",
        "fork-join-chili-seq-tree-2^20-full",
        "fork-join-chili-seq-tree-2^24-full",
    ];

    /// What is wrong with `c` in `groups`, if anything: no table matches its selector, or the
    /// table lacks a row it compares.
    fn missing(groups: &[Group], c: &Comparison) -> Option<String> {
        let Some(group) = groups.iter().find(|g| matches(&g.params, c.table)) else {
            return Some(format!("no table with {:?}", c.table));
        };
        let has = |system: &System| group.trials.iter().any(|t| t.system == system.name);
        let mut wanted = vec![c.subject];
        match c.baseline {
            Baseline::Row(system) => wanted.push(system),
            Baseline::BestOf(systems) => wanted.extend(systems),
            Baseline::BestPeer => {
                if !group.trials.iter().any(|t| t.role == Role::Peer) {
                    return Some(format!("no peer row in `{}`", group.title));
                }
            }
        }
        wanted
            .into_iter()
            .find(|s| !has(s))
            .map(|s| format!("no `{}` row in `{}`", s.name, group.title))
    }

    /// Every claim's table and rows are in the plan the lab would run at the default size: a
    /// renamed table or row fails here rather than reading "no verdict" after a run. (Slow in
    /// a debug build: it builds every table's input, the 2^24-node tree included.)
    #[test]
    fn every_claim_names_a_table_and_rows_the_default_run_builds() {
        claims_match_the_plan(false);
    }

    /// The same at `--quick`, but for the claims in [`DEFAULT_SIZE_ONLY`].
    #[test]
    fn every_claim_names_a_table_and_rows_the_quick_run_builds() {
        claims_match_the_plan(true);
    }

    fn claims_match_the_plan(quick: bool) {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        {
            let args: &[&str] = if quick {
                &["ember-lab", "--quick"]
            } else {
                &["ember-lab"]
            };
            let cli = <crate::cli::Cli as clap::Parser>::try_parse_from(args).unwrap();
            let opts = LabOpts {
                quick,
                repeat: cli.repeat(),
                cores,
            };
            let registry = crate::experiments::registry(&cli);
            let mut plans: Vec<(&str, Vec<Group>)> = Vec::new();
            let mut problems = Vec::new();
            for c in CLAIMS {
                let Some(e) = registry.iter().find(|e| e.name() == c.experiment) else {
                    problems.push(format!("{}: no experiment `{}`", c.id, c.experiment));
                    continue;
                };
                if !plans.iter().any(|(name, _)| *name == c.experiment) {
                    plans.push((c.experiment, e.groups(&opts).unwrap()));
                }
                let groups = &plans.iter().find(|(n, _)| *n == c.experiment).unwrap().1;
                let check = missing(groups, &c.check);
                let expected_absent = quick && DEFAULT_SIZE_ONLY.contains(&c.id);
                match (check, expected_absent) {
                    (Some(why), false) => problems.push(format!("{}: {why}", c.id)),
                    (None, true) => problems.push(format!(
                        "{}: built at --quick; take it off DEFAULT_SIZE_ONLY",
                        c.id
                    )),
                    _ => {}
                }
                if let Some(why) = c.ember.as_ref().and_then(|e| missing(groups, e)) {
                    if !expected_absent {
                        problems.push(format!("{} (ember against the best peer): {why}", c.id));
                    }
                }
            }
            assert!(
                problems.is_empty(),
                "{} plan:\n{}",
                if quick { "--quick" } else { "default" },
                problems.join("\n")
            );
        }
    }

    fn row(system: &str, role: Role, values: &[f64]) -> RowRuns {
        let mut params = Params::new();
        params.insert("benchmark".into(), "fork-join".into());
        params.insert("workers".into(), 2.into());
        params.insert("full_width".into(), true.into());
        RowRuns {
            system: system.into(),
            role,
            params,
            runs: values
                .iter()
                .map(|&v| -> Metrics { [("ns_per_op".to_string(), v)].into_iter().collect() })
                .collect(),
        }
    }

    fn runs(ember: &[f64], rayon: &[f64]) -> ExperimentRuns {
        ExperimentRuns {
            name: "micro".into(),
            groups: vec![GroupRuns {
                title: "t".into(),
                rows: vec![
                    row("ember", Role::Ember, ember),
                    row("rayon", Role::Peer, rayon),
                    row("serial", Role::Floor, &vec![0.1; rayon.len()]),
                ],
            }],
        }
    }

    fn fib_claim() -> &'static Claim {
        CLAIMS
            .iter()
            .find(|c| c.id == "fork-join-fib-full")
            .unwrap()
    }

    #[test]
    fn a_clear_lead_over_enough_rounds_is_reproduced() {
        let r = runs(&[0.9; 11], &[1.0; 11]);
        let out = fib_claim().evaluate(Some(&r), 2);
        assert_eq!(out.verdict, "reproduced", "{out:?}");
        let ratio = out.ratio.unwrap();
        assert_eq!(ratio.baseline, "rayon");
        assert!((ratio.median - 0.9).abs() < 1e-12);
        // The floor row is never the best peer, though it is the fastest.
        assert_eq!(out.ember_vs_best_peer.unwrap().baseline, "rayon");
    }

    #[test]
    fn a_wide_interval_is_not_reproduced_and_few_rounds_give_no_verdict() {
        let ember = [0.9, 1.2, 0.9, 1.2, 0.9, 1.2, 0.9, 1.2, 0.9, 1.2, 1.0];
        let out = fib_claim().evaluate(Some(&runs(&ember, &[1.0; 11])), 2);
        assert_eq!(out.verdict, "not reproduced", "{out:?}");
        let out = fib_claim().evaluate(Some(&runs(&[0.5; 5], &[1.0; 5])), 2);
        assert_eq!(out.verdict, "no verdict");
        assert!(out.reason.contains("5 rounds"), "{}", out.reason);
        let out = fib_claim().evaluate(None, 2);
        assert_eq!(out.verdict, "no verdict");
    }

    #[test]
    fn too_few_cores_is_the_only_way_to_not_reproducible() {
        let tree = CLAIMS
            .iter()
            .find(|c| c.id == "fork-join-tree-2^24-full")
            .unwrap();
        let mut r = runs(&[0.9; 11], &[1.0; 11]);
        for row in &mut r.groups[0].rows {
            row.params.insert("benchmark".into(), "tree-sum".into());
            row.params.insert("nodes".into(), 16777215.into());
            row.params.insert("workers".into(), 2.into());
        }
        assert_eq!(
            tree.evaluate(Some(&r), 1).verdict,
            "not reproducible on this machine"
        );
        assert_eq!(tree.evaluate(Some(&r), 2).verdict, "reproduced");
    }

    #[test]
    fn a_full_width_claim_reads_the_table_at_every_core_not_a_narrower_one() {
        let mut r = runs(&[0.9; 11], &[1.0; 11]);
        let mut narrow = runs(&[2.0; 11], &[1.0; 11]).groups.remove(0);
        for row in &mut narrow.rows {
            row.params.insert("workers".into(), 1.into());
            row.params.insert("full_width".into(), false.into());
        }
        r.groups.insert(0, narrow);
        let out = fib_claim().evaluate(Some(&r), 2);
        assert_eq!(out.verdict, "reproduced", "{out:?}");
    }

    #[test]
    fn claims_are_declared_completely() {
        for c in CLAIMS {
            assert!(
                !c.source.url.is_empty() && !c.published.is_empty(),
                "{}",
                c.id
            );
            assert!(c.median.is_finite() && c.ci.is_finite(), "{}", c.id);
        }
    }
}
