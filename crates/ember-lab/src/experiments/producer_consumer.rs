//! `producer-consumer`: the measurement of R. O'Callahan, "Biased work queues" (Pernosco,
//! <https://github.com/rocallahan/biased-work-queues>), reproduced.
//!
//! Each pool has one serial producer thread and `threads` consumers. A consumer item costs
//! `work` units of [`crate::work::work`]; producing one costs `2*work/threads` units on the
//! producer, so half the consumers together can just keep up with it — the regime where a
//! pool that wakes a sleeper per item burns its time in context switches. `pools` pools run
//! at once as threads of this process.
//!
//! **The published shape** (the first table): `threads` = cores, 3 pools, 50 items per
//! consumer thread per pool, `work` = 10^6 relaxed `fetch_add`s (the publication's
//! `WORK_SIZE`), producer batch 1 and 20 for the crossbeam-channel and rayon rows, and the
//! publication's biased work queue (`biased-work-queue`, re-implemented here from its
//! description: consumer i takes up to 20 items without blocking; only consumer 0 blocks on
//! the channel, consumer i>0 sleeps on a private parker that consumer i-1 unparks when it took
//! a full batch). A published-shape run lasts seconds here, so that table keeps to the
//! publication's rows, ember's default and the floor. **The sweep** (the tables after it)
//! uses ~40 µs items, `cores` threads by default (`--threads`, `--pools`, `--items-per-thread`
//! sweep more): the same regime with far more hand-offs per second of work, and ember's other
//! policies and standalone biased consumer beside the peers.
//!
//! Every run creates its pools and threads and tears them down (joining every thread) before
//! it returns, so the perf counters inherit all of them and `getrusage` has all of their time.
//!
//! Useful CPU is the thread CPU time inside the work closures — the consumers' *and* the
//! producer's, since both are the workload's own work; the rest of the process's CPU is the
//! scheduling overhead.
//!
//! The `floor` row is not a pool: per pool, the producer thread does its production work
//! while `threads` consumer threads each do their share of the consumer work, with no queue
//! and no hand-off between them. Its context switches are what the kernel's time slicing
//! alone costs when those threads share the cores. `avoidable_ctx_switches` is, per round, a
//! row's switches minus the floor's in the same round: what a scheduler can remove.
//!
//! `ember-budget` is ember's default with `Tuning::awake_budget(true)`: beside `ember`, it
//! shows what the awake-core budget shared by the pools does. With `--processes` its children
//! run with `EMBER_MACHINE_BUDGET=1`, so they share one budget across the processes, as
//! unmodified binaries would. `unfairness_pct` is, per round, the
//! slowest pool's completion time over the fastest's, minus one, in percent (balanced work
//! stealing's unfairness, EuroSys 2012).
//!
//! The pools run as threads of one process, or with `--processes` as child processes of this
//! binary (started with the hidden `--pc-child` flag; the harness adds their `getrusage` and
//! the perf counters follow them through fork and exec). The `go` row runs the same workload
//! in Go's runtime (goroutines on a channel), in a child process.

mod feeds;

use super::ember_rows::EmberPolicy;
use super::{oversubscription, params, plural, trial, trial_named};
use crate::experiment::{Experiment, Group, LabOpts, Metrics, Trial};
use crate::go_peer;
use crate::metrics::cputime::timed;
use crate::systems::{self, System};
use crate::work::{units_per_us, work};
use clap::Args;
use feeds::{one_pool, Feed};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::thread;

/// Flags of `producer-consumer`.
#[derive(Args, Debug, Clone, Default)]
#[command(next_help_heading = "producer-consumer (the sweep after the published shape)")]
pub struct PcArgs {
    /// Consumer threads per pool, swept [default: cores]
    #[arg(long, value_delimiter = ',', value_name = "N,..")]
    pub threads: Vec<usize>,
    /// Pools running at once, swept [default: 3]
    #[arg(long, value_delimiter = ',', value_name = "N,..")]
    pub pools: Vec<usize>,
    /// Items per pool, swept; overrides --items-per-thread
    #[arg(long, value_delimiter = ',', value_name = "N,..")]
    pub items: Vec<usize>,
    /// Items per pool as a multiple of threads, swept [default: 500; --quick: 50]
    #[arg(long, value_delimiter = ',', value_name = "N,..")]
    pub items_per_thread: Vec<usize>,
    /// Producer batch of the -batch rows and batch of the ember-biased rows [default: 20]
    #[arg(long, value_name = "N")]
    pub batch: Option<usize>,
    /// Consumer cost of one item in work units; overrides --work-us
    #[arg(long, value_name = "UNITS")]
    pub work: Option<u64>,
    /// Consumer cost of one item in µs, converted to units by calibration [default: 40; --quick: 10]
    #[arg(long, value_name = "US")]
    pub work_us: Option<f64>,
    /// Run the pools as child processes of this binary instead of threads of one process
    #[arg(long)]
    pub processes: bool,
    /// Consumer cost of one item of the published shape in work units [default: 1000000,
    /// the publication's; --quick: 10000]: less keeps the shape (threads, pools, items, hand-offs)
    /// where its runs would take too long
    #[arg(long = "published-work", value_name = "UNITS")]
    pub published_work: Option<u64>,
    /// Runs one pool of a `--processes` run and reports on stdout (used by the lab itself)
    #[arg(long, hide = true, value_name = "SPEC")]
    pub pc_child: Option<String>,
}

/// The experiment, sized by its flags.
pub struct ProducerConsumer {
    pub args: PcArgs,
}

/// The publication's `WORK_SIZE`: units of work per consumed item.
pub const PUBLISHED_WORK: u64 = 1_000_000;
/// The publication's items per consumer thread per pool.
pub const PUBLISHED_ITEMS_PER_THREAD: usize = 50;
/// The publication's pools running at once.
pub const PUBLISHED_POOLS: usize = 3;

/// One workload: what every row of a group runs.
#[derive(Clone, Copy, Debug)]
pub struct Setup {
    threads: usize,
    pools: usize,
    items: usize,
    batch: usize,
    /// Units per consumed item.
    work: u64,
    /// Units per produced item.
    produce: u64,
    /// Pools as child processes rather than threads.
    processes: bool,
}

/// What the threads of one run add up.
#[derive(Default)]
pub struct Tally {
    useful_ns: AtomicU64,
    wakeups: AtomicU64,
    /// Each pool's completion time (ns), in the order they finished.
    completions: std::sync::Mutex<Vec<u64>>,
}

impl Tally {
    fn completed(&self, ns: u64) {
        self.completions
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .push(ns);
    }

    /// The slowest pool's completion time over the fastest's, minus one, in percent.
    fn unfairness_pct(&self) -> Option<f64> {
        let c = self
            .completions
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let (min, max) = (c.iter().min()?, c.iter().max()?);
        (*min > 0).then(|| (*max as f64 / *min as f64 - 1.0) * 100.0)
    }

    fn produce(&self, s: &Setup) {
        timed(&self.useful_ns, || work(s.produce));
    }
    fn consume(&self, s: &Setup) {
        timed(&self.useful_ns, || work(s.work));
    }
}

fn or_default<T: Clone>(given: &[T], default: Vec<T>) -> Vec<T> {
    if given.is_empty() {
        default
    } else {
        given.to_vec()
    }
}

impl Experiment for ProducerConsumer {
    fn name(&self) -> &'static str {
        crate::tables::experiment::PRODUCER_CONSUMER
    }

    fn headline(&self) -> &'static [&'static str] {
        &[
            "avoidable_ctx_switches",
            "ctx_switches",
            "migrations",
            "wall_s",
            "overhead_cpu_s",
            "unfairness_pct",
        ]
    }

    fn groups(&self, opts: &LabOpts) -> Result<Vec<Group>, String> {
        let a = &self.args;
        let cores = opts.cores;
        let batch = a.batch.unwrap_or(20).max(1);
        let per_us = units_per_us();
        // The published shape, at --quick a hundredth of the work per item.
        let published_work = a
            .published_work
            .unwrap_or(if opts.quick {
                PUBLISHED_WORK / 100
            } else {
                PUBLISHED_WORK
            })
            .max(1);
        let published = Setup {
            threads: cores,
            pools: PUBLISHED_POOLS,
            items: PUBLISHED_ITEMS_PER_THREAD * cores,
            batch,
            work: published_work,
            produce: 2 * published_work / cores as u64,
            processes: a.processes,
        };
        let mut groups = vec![group(published, cores, per_us, true)];

        let threads = or_default(&a.threads, vec![cores]);
        let pools = or_default(&a.pools, vec![PUBLISHED_POOLS]);
        let per_thread = or_default(
            &a.items_per_thread,
            if opts.quick { vec![50] } else { vec![500] },
        );
        let work_units = match a.work {
            Some(units) => units,
            None => {
                let us = a.work_us.unwrap_or(if opts.quick { 10.0 } else { 40.0 });
                if !(us.is_finite() && us > 0.0) {
                    return Err(format!("--work-us must be a positive time, not {us}"));
                }
                (us * per_us).round().max(1.0) as u64
            }
        };
        if threads.contains(&0) || pools.contains(&0) {
            return Err("--threads and --pools take counts of 1 or more".into());
        }
        for &t in &threads {
            let items: Vec<usize> = if a.items.is_empty() {
                per_thread.iter().map(|m| m * t).collect()
            } else {
                a.items.clone()
            };
            for &p in &pools {
                for &n in &items {
                    let s = Setup {
                        threads: t,
                        pools: p,
                        items: n,
                        batch,
                        work: work_units,
                        produce: 2 * work_units / t as u64,
                        processes: a.processes,
                    };
                    groups.push(group(s, cores, per_us, false));
                }
            }
        }
        Ok(groups)
    }

    fn differences(&self) -> &'static [(&'static str, &'static str, &'static str)] {
        &[("floor", "ctx_switches", "avoidable_ctx_switches")]
    }
}

/// The rows of the published table: the publication's systems (crossbeam-channel and rayon,
/// each with and without producer batching, and its biased work queue), ember's default, and
/// the floor. Each run lasts seconds here, so the table keeps to these.
fn rows(batch: usize) -> Vec<(&'static System, String, Feed)> {
    let named = |system: &'static System, feed| (system, system.name.to_string(), feed);
    let batched = |system: &'static System, feed| (system, format!("{}{batch}", system.name), feed);
    vec![
        named(systems::CROSSBEAM, Feed::Crossbeam { batch: 1 }),
        batched(systems::CROSSBEAM_BATCH, Feed::Crossbeam { batch }),
        named(systems::RAYON, Feed::Rayon { batch: 1 }),
        batched(systems::RAYON_BATCH, Feed::Rayon { batch }),
        named(systems::BIASED_WORK_QUEUE, Feed::BiasedWorkQueue),
        named(systems::EMBER, Feed::Ember(EmberPolicy::Default)),
        named(systems::EMBER_BUDGET, Feed::Ember(EmberPolicy::Budget)),
        named(systems::FLOOR, Feed::Floor),
    ]
}

/// The sweep's rows add ember's other wake policies and its standalone biased consumer.
fn sweep_rows(batch: usize) -> Vec<(&'static System, String, Feed)> {
    let mut rows = rows(batch);
    let floor = rows.pop().expect("the floor row comes last");
    for (system, feed) in [
        (systems::EMBER_BIASED, Feed::Ember(EmberPolicy::Biased)),
        (systems::EMBER_EAGER, Feed::Ember(EmberPolicy::Eager)),
        (systems::EMBER_BIASED_CONSUMERS, Feed::BiasedConsumers),
    ] {
        rows.push((system, system.name.to_string(), feed));
    }
    rows.push(floor);
    rows
}

fn group(s: Setup, cores: usize, per_us: f64, published: bool) -> Group {
    let title = format!(
        "{}{} pool{}{} × {} threads{}, {} items/pool, item ≈ {:.0} µs",
        if published {
            "published shape: "
        } else {
            "sweep: "
        },
        s.pools,
        plural(s.pools),
        if s.processes { " (processes)" } else { "" },
        s.threads,
        oversubscription(s.threads, cores),
        s.items,
        s.work as f64 / per_us
    );
    let rows = if published {
        rows(s.batch)
    } else {
        sweep_rows(s.batch)
    };
    let mut trials: Vec<Trial> = rows
        .into_iter()
        .map(|(system, name, feed)| trial_named(system, &name, move || run(feed, s)))
        .collect();
    if go_peer::available() {
        trials.push(trial(systems::GO, move || {
            go_peer::run(&[
                "producer-consumer".into(),
                s.threads.to_string(),
                s.pools.to_string(),
                s.items.to_string(),
                s.work.to_string(),
                s.produce.to_string(),
            ])
        }));
    }
    Group {
        title,
        params: params([
            (
                crate::tables::key::SHAPE,
                if published {
                    crate::tables::value::PUBLISHED
                } else {
                    "sweep"
                }
                .into(),
            ),
            ("threads", s.threads.into()),
            ("pools", s.pools.into()),
            ("items", s.items.into()),
            ("batch", s.batch.into()),
            ("work_units", s.work.into()),
            ("produce_units", s.produce.into()),
            ("processes", s.processes.into()),
        ]),
        trials,
    }
}

/// One run: `pools` producers at once, each with its own pool, all torn down before return.
fn run(feed: Feed, s: Setup) -> Metrics {
    let tally = Arc::new(Tally::default());
    if s.processes {
        run_processes(feed, s, &tally);
    } else {
        thread::scope(|scope| {
            for p in 0..s.pools {
                let tally = tally.clone();
                thread::Builder::new()
                    .name(format!("pc-producer-{p}"))
                    .spawn_scoped(scope, move || {
                        let took = one_pool(feed, s, p, tally.clone());
                        tally.completed(took.as_nanos() as u64);
                    })
                    .expect("spawn producer");
            }
        });
    }
    let mut m = Metrics::new();
    m.insert(
        "useful_cpu_s".into(),
        tally.useful_ns.load(Ordering::Relaxed) as f64 * 1e-9,
    );
    if let Some(u) = tally.unfairness_pct() {
        m.insert("unfairness_pct".into(), u);
    }
    if matches!(feed, Feed::Ember(_)) {
        m.insert(
            "wakeups".into(),
            tally.wakeups.load(Ordering::Relaxed) as f64,
        );
    }
    m
}

/// What a child is told: `feed threads items batch work produce pool`.
fn child_spec(feed: Feed, s: Setup, pool: usize) -> String {
    format!(
        "{} {} {} {} {} {} {pool}",
        feed.code(),
        s.threads,
        s.items,
        s.batch,
        s.work,
        s.produce
    )
}

fn parse_child_spec(spec: &str) -> Option<(Feed, Setup, usize)> {
    let f: Vec<&str> = spec.split_whitespace().collect();
    let [code, threads, items, batch, work, produce, pool] = f.as_slice() else {
        return None;
    };
    let s = Setup {
        threads: threads.parse().ok()?,
        pools: 1,
        items: items.parse().ok()?,
        batch: batch.parse().ok()?,
        work: work.parse().ok()?,
        produce: produce.parse().ok()?,
        processes: false,
    };
    Some((Feed::from_code(code)?, s, pool.parse().ok()?))
}

/// Runs the pools as child processes of this binary and adds up what they report.
fn run_processes(feed: Feed, s: Setup, tally: &Tally) {
    let exe = std::env::current_exe().expect("path of this executable");
    let children: Vec<_> = (0..s.pools)
        .map(|p| {
            std::process::Command::new(&exe)
                .arg("--pc-child")
                .arg(child_spec(feed, s, p))
                // The machine-wide budget, as an unmodified binary joins it: only for the
                // `ember-budget` rows, so that the others keep their defaults.
                .env(
                    "EMBER_MACHINE_BUDGET",
                    if matches!(feed, Feed::Ember(EmberPolicy::Budget)) {
                        "1"
                    } else {
                        "0"
                    },
                )
                .stdout(std::process::Stdio::piped())
                .spawn()
                .expect("start a pool process")
        })
        .collect();
    for c in children {
        let out = c.wait_with_output().expect("wait for a pool process");
        assert!(out.status.success(), "pool process failed: {}", out.status);
        let text = String::from_utf8_lossy(&out.stdout);
        let mut f = text.split_whitespace().map(|x| x.parse::<u64>());
        match (f.next(), f.next(), f.next()) {
            (Some(Ok(useful)), Some(Ok(wakeups)), Some(Ok(took))) => {
                tally.useful_ns.fetch_add(useful, Ordering::Relaxed);
                tally.wakeups.fetch_add(wakeups, Ordering::Relaxed);
                tally.completed(took);
            }
            _ => panic!("pool process reported {text:?}"),
        }
    }
}

/// Entry point of a `--pc-child` process: runs one pool and prints `useful_ns wakeups
/// completion_ns`.
pub fn child_main(spec: &str) -> std::process::ExitCode {
    let Some((feed, s, pool)) = parse_child_spec(spec) else {
        eprintln!("ember-lab: bad --pc-child spec {spec:?}");
        return std::process::ExitCode::from(2);
    };
    let tally = Arc::new(Tally::default());
    let took = one_pool(feed, s, pool, tally.clone());
    println!(
        "{} {} {}",
        tally.useful_ns.load(Ordering::Relaxed),
        tally.wakeups.load(Ordering::Relaxed),
        took.as_nanos()
    );
    std::process::ExitCode::SUCCESS
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tiny() -> Setup {
        Setup {
            threads: 2,
            pools: 2,
            items: 45,
            batch: 20,
            work: 10,
            produce: 10,
            processes: false,
        }
    }

    /// Every row runs to completion on a tiny workload and accounts its useful work.
    #[test]
    fn every_row_completes() {
        for (_, name, feed) in sweep_rows(20) {
            let m = run(feed, tiny());
            assert!(m["useful_cpu_s"] >= 0.0, "{name}");
            assert!(m["unfairness_pct"] >= 0.0, "{name}");
            assert_eq!(m.contains_key("wakeups"), matches!(feed, Feed::Ember(_)));
        }
    }

    #[test]
    fn child_spec_round_trips() {
        let s = Setup {
            threads: 8,
            pools: 3,
            items: 400,
            batch: 20,
            work: 1000,
            produce: 250,
            processes: true,
        };
        for (_, name, feed) in sweep_rows(20) {
            let (back, t, pool) = parse_child_spec(&child_spec(feed, s, 2)).unwrap();
            assert_eq!(back, feed, "{name}");
            assert_eq!(
                (t.threads, t.items, t.batch, t.work, t.produce, pool),
                (8, 400, 20, 1000, 250, 2)
            );
        }
        assert!(parse_child_spec("nonsense").is_none());
    }

    #[test]
    fn the_published_shape_comes_first_then_the_sweep() {
        let opts = LabOpts {
            quick: true,
            repeat: 1,
            cores: 2,
        };
        let e = ProducerConsumer {
            args: PcArgs::default(),
        };
        let g = e.groups(&opts).unwrap();
        assert_eq!(g.len(), 2); // published, then threads {2} × pools {3}
        assert_eq!(g[0].params["shape"], "published");
        assert_eq!(g[0].params["pools"], 3);
        assert_eq!(g[0].params["items"], 100);
        assert_eq!(g[0].params["produce_units"], g[0].params["work_units"]);
        assert_eq!(g[1].params["shape"], "sweep");
        let names: Vec<_> = g[0].trials.iter().map(|t| t.system.as_str()).collect();
        assert_eq!(
            names[..8],
            [
                "crossbeam",
                "crossbeam-batch20",
                "rayon",
                "rayon-batch20",
                "biased-work-queue",
                "ember",
                "ember-budget",
                "floor"
            ]
        );
        assert!(g[1].trials.iter().any(|t| t.system == "ember-eager"));
        let bad = ProducerConsumer {
            args: PcArgs {
                threads: vec![0],
                ..PcArgs::default()
            },
        };
        assert!(bad.groups(&opts).is_err());
    }
}
