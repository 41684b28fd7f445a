//! `producer-consumer`: seed technique 1's measurement (DESIGN §1.1), reproduced.
//!
//! Each pool has one serial producer thread and `threads` consumers. A consumer item costs
//! `WORK` units of [`crate::work::work`]; producing one costs `2*WORK/threads` units on the
//! producer, so the consumers together can just keep up with it — the regime where a pool
//! that wakes a sleeper per item burns its time in context switches. Each pool gets
//! `threads*50` items (also swept at a larger multiple so that steady state dominates), and
//! `pools` pools run at once as threads of this process.
//!
//! Every run creates its pools and threads and tears them down (joining every thread) before
//! it returns, so the perf counters inherit all of them and `getrusage` has all of their time.
//!
//! Useful CPU is the thread CPU time inside the work closures — the consumers' *and* the
//! producer's, since both are the workload's own work; the rest of the process's CPU is the
//! scheduling overhead.
//!
//! The `floor` row is not a pool: each producer thread does its production work while one
//! consumer thread per pool does all the consumer work, with no queue and no hand-off between
//! them. Its context switches are what the kernel's time slicing alone costs when those
//! threads share the cores — the fewest any pool can have on this machine whose consumer runs
//! while its producer is still producing. It is a bound, not a peer: ratios never use it.
//!
//! The pools run as threads of one process, or with `--processes` as child processes of this
//! binary (started with the hidden `--pc-child` flag; the harness adds their `getrusage` and
//! the perf counters follow them through fork and exec).

use super::ember_rows::EmberPolicy;
use super::peers::{rayon_pool, rayon_shutdown, Latch};
use super::{oversubscription, params, trial};
use crate::experiment::{Experiment, Group, LabOpts, Metrics};
use crate::metrics::cputime::timed;
use crate::work::{units_per_us, work};
use clap::Args;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::thread;

/// Flags of `producer-consumer`.
#[derive(Args, Debug, Clone, Default)]
#[command(next_help_heading = "producer-consumer")]
pub struct PcArgs {
    /// Consumer threads per pool, swept [default: cores, 4×cores]
    #[arg(long, value_delimiter = ',', value_name = "N,..")]
    pub threads: Vec<usize>,
    /// Pools running at once, swept [default: 1,3]
    #[arg(long, value_delimiter = ',', value_name = "N,..")]
    pub pools: Vec<usize>,
    /// Items per pool, swept; overrides --items-per-thread
    #[arg(long, value_delimiter = ',', value_name = "N,..")]
    pub items: Vec<usize>,
    /// Items per pool as a multiple of threads, swept [default: 50,500; --quick: 50]
    #[arg(long, value_delimiter = ',', value_name = "N,..")]
    pub items_per_thread: Vec<usize>,
    /// Producer batch of the -batch rows and batch of the biased rows [default: 20]
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
    /// Runs one pool of a `--processes` run and reports on stdout (used by the lab itself)
    #[arg(long, hide = true, value_name = "SPEC")]
    pub pc_child: Option<String>,
}

/// The experiment, sized by its flags.
pub struct ProducerConsumer {
    pub args: PcArgs,
}

/// One workload: what every row of a group runs.
#[derive(Clone, Copy, Debug)]
struct Setup {
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

#[derive(Clone, Copy, Debug)]
enum System {
    Crossbeam,
    CrossbeamBatch,
    Rayon,
    RayonBatch,
    BiasedConsumers,
    Ember(EmberPolicy),
    /// One producer and one consumer thread per pool doing their work with no queue.
    Floor,
}

impl System {
    fn all() -> Vec<System> {
        let mut v = vec![
            System::Crossbeam,
            System::CrossbeamBatch,
            System::Rayon,
            System::RayonBatch,
            System::BiasedConsumers,
        ];
        v.extend(EmberPolicy::ALL.map(System::Ember));
        v.push(System::Floor);
        v
    }

    fn name(self, batch: usize) -> String {
        match self {
            System::Crossbeam => "crossbeam".into(),
            System::CrossbeamBatch => format!("crossbeam-batch{batch}"),
            System::Rayon => "rayon".into(),
            System::RayonBatch => format!("rayon-batch{batch}"),
            System::BiasedConsumers => "ember-biased-consumers".into(),
            System::Ember(p) => p.system().into(),
            System::Floor => "floor".into(),
        }
    }
}

/// What the threads of one run add up.
#[derive(Default)]
struct Tally {
    useful_ns: AtomicU64,
    wakeups: AtomicU64,
}

impl Tally {
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
        "producer-consumer"
    }

    fn groups(&self, opts: &LabOpts) -> Vec<Group> {
        let a = &self.args;
        let cores = opts.cores;
        let threads = or_default(&a.threads, vec![cores, 4 * cores]);
        let pools = or_default(&a.pools, vec![1, 3]);
        let per_thread = or_default(
            &a.items_per_thread,
            if opts.quick { vec![50] } else { vec![50, 500] },
        );
        let batch = a.batch.unwrap_or(20).max(1);
        let per_us = units_per_us();
        let work_units = a.work.unwrap_or_else(|| {
            let us = a.work_us.unwrap_or(if opts.quick { 10.0 } else { 40.0 });
            (us * per_us).round().max(1.0) as u64
        });
        let mut groups = Vec::new();
        for &t in &threads {
            let t = t.max(1);
            let items: Vec<usize> = if a.items.is_empty() {
                per_thread.iter().map(|m| m * t).collect()
            } else {
                a.items.clone()
            };
            for &p in &pools {
                for &n in &items {
                    let s = Setup {
                        threads: t,
                        pools: p.max(1),
                        items: n,
                        batch,
                        work: work_units,
                        produce: 2 * work_units / t as u64,
                        processes: a.processes,
                    };
                    groups.push(group(s, cores, per_us));
                }
            }
        }
        groups
    }
}

fn group(s: Setup, cores: usize, per_us: f64) -> Group {
    let title = format!(
        "{} pool{}{} × {} threads{}, {} items/pool, item ≈ {:.0} µs",
        s.pools,
        if s.pools == 1 { "" } else { "s" },
        if s.processes { " (processes)" } else { "" },
        s.threads,
        oversubscription(s.threads, cores),
        s.items,
        s.work as f64 / per_us
    );
    Group {
        title,
        params: params([
            ("threads", s.threads.into()),
            ("pools", s.pools.into()),
            ("items", s.items.into()),
            ("batch", s.batch.into()),
            ("work_units", s.work.into()),
            ("produce_units", s.produce.into()),
            ("processes", s.processes.into()),
        ]),
        trials: System::all()
            .into_iter()
            .map(|sys| trial(&sys.name(s.batch), move || run(sys, s)))
            .collect(),
    }
}

/// One run: `pools` producers at once, each with its own pool, all torn down before return.
fn run(sys: System, s: Setup) -> Metrics {
    let tally = Arc::new(Tally::default());
    if s.processes {
        run_processes(sys, s, &tally);
    } else {
        run_threads(sys, s, &tally);
    }
    let mut m = Metrics::new();
    m.insert(
        "useful_cpu_s".into(),
        tally.useful_ns.load(Ordering::Relaxed) as f64 * 1e-9,
    );
    if matches!(sys, System::Ember(_)) {
        m.insert(
            "wakeups".into(),
            tally.wakeups.load(Ordering::Relaxed) as f64,
        );
    }
    m
}

fn run_threads(sys: System, s: Setup, tally: &Arc<Tally>) {
    thread::scope(|scope| {
        for p in 0..s.pools {
            let tally = tally.clone();
            thread::Builder::new()
                .name(format!("pc-producer-{p}"))
                .spawn_scoped(scope, move || one_pool(sys, s, p, tally))
                .expect("spawn producer");
        }
    });
}

/// What a child is told: `system threads items batch work produce pool`.
fn child_spec(sys: System, s: Setup, pool: usize) -> String {
    format!(
        "{} {} {} {} {} {} {pool}",
        sys.name(s.batch),
        s.threads,
        s.items,
        s.batch,
        s.work,
        s.produce
    )
}

fn parse_child_spec(spec: &str) -> Option<(System, Setup, usize)> {
    let f: Vec<&str> = spec.split_whitespace().collect();
    let [name, threads, items, batch, work, produce, pool] = f.as_slice() else {
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
    let sys = System::all()
        .into_iter()
        .find(|x| x.name(s.batch) == *name)?;
    Some((sys, s, pool.parse().ok()?))
}

/// Runs the pools as child processes of this binary and adds up what they report.
fn run_processes(sys: System, s: Setup, tally: &Tally) {
    let exe = std::env::current_exe().expect("path of this executable");
    let children: Vec<_> = (0..s.pools)
        .map(|p| {
            std::process::Command::new(&exe)
                .arg("--pc-child")
                .arg(child_spec(sys, s, p))
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
        match (f.next(), f.next()) {
            (Some(Ok(useful)), Some(Ok(wakeups))) => {
                tally.useful_ns.fetch_add(useful, Ordering::Relaxed);
                tally.wakeups.fetch_add(wakeups, Ordering::Relaxed);
            }
            _ => panic!("pool process reported {text:?}"),
        }
    }
}

/// Entry point of a `--pc-child` process: runs one pool and prints `useful_ns wakeups`.
pub fn child_main(spec: &str) -> std::process::ExitCode {
    let Some((sys, s, pool)) = parse_child_spec(spec) else {
        eprintln!("bad --pc-child spec {spec:?}");
        return std::process::ExitCode::from(2);
    };
    let tally = Arc::new(Tally::default());
    one_pool(sys, s, pool, tally.clone());
    println!(
        "{} {}",
        tally.useful_ns.load(Ordering::Relaxed),
        tally.wakeups.load(Ordering::Relaxed)
    );
    std::process::ExitCode::SUCCESS
}

/// Spawns `n` named consumer threads running `body`.
fn consumers(
    n: usize,
    name: &str,
    body: impl Fn() + Send + Clone + 'static,
) -> Vec<thread::JoinHandle<()>> {
    (0..n)
        .map(|i| {
            thread::Builder::new()
                .name(format!("{name}-{i}"))
                .spawn(body.clone())
                .expect("spawn consumer")
        })
        .collect()
}

fn join_all(handles: Vec<thread::JoinHandle<()>>) {
    for h in handles {
        h.join().expect("consumer panicked");
    }
}

/// The producer of pool `p`: creates the pool, feeds it, waits, tears it down.
fn one_pool(sys: System, s: Setup, p: usize, tally: Arc<Tally>) {
    let name = format!("pc{p}");
    match sys {
        System::Crossbeam => {
            let (tx, rx) = crossbeam_channel::unbounded::<usize>();
            let t = tally.clone();
            let hs = consumers(s.threads, &name, move || {
                for _ in rx.iter() {
                    t.consume(&s);
                }
            });
            for i in 0..s.items {
                tally.produce(&s);
                tx.send(i).expect("consumers alive");
            }
            drop(tx);
            join_all(hs);
        }
        System::CrossbeamBatch => {
            let (tx, rx) = crossbeam_channel::unbounded::<Vec<usize>>();
            let t = tally.clone();
            let hs = consumers(s.threads, &name, move || {
                for batch in rx.iter() {
                    for _ in batch {
                        t.consume(&s);
                    }
                }
            });
            let mut buf = Vec::with_capacity(s.batch);
            for i in 0..s.items {
                tally.produce(&s);
                buf.push(i);
                if buf.len() == s.batch {
                    let full = std::mem::replace(&mut buf, Vec::with_capacity(s.batch));
                    tx.send(full).expect("consumers alive");
                }
            }
            if !buf.is_empty() {
                tx.send(buf).expect("consumers alive");
            }
            drop(tx);
            join_all(hs);
        }
        System::Rayon => {
            let (pool, hs) = rayon_pool(s.threads, &name);
            let latch = Arc::new(Latch::new(s.items));
            for _ in 0..s.items {
                tally.produce(&s);
                let (t, l) = (tally.clone(), latch.clone());
                pool.spawn(move || {
                    t.consume(&s);
                    l.count_down(1);
                });
            }
            latch.wait();
            rayon_shutdown(pool, hs);
        }
        System::RayonBatch => {
            let (pool, hs) = rayon_pool(s.threads, &name);
            let latch = Arc::new(Latch::new(s.items));
            let mut pending = 0;
            let flush = |n: usize| {
                let (t, l) = (tally.clone(), latch.clone());
                pool.spawn(move || {
                    for _ in 0..n {
                        t.consume(&s);
                    }
                    l.count_down(n);
                });
            };
            for _ in 0..s.items {
                tally.produce(&s);
                pending += 1;
                if pending == s.batch {
                    flush(pending);
                    pending = 0;
                }
            }
            if pending > 0 {
                flush(pending);
            }
            latch.wait();
            rayon_shutdown(pool, hs);
        }
        System::BiasedConsumers => {
            let (tx, rx) = crossbeam_channel::unbounded::<usize>();
            let t = tally.clone();
            let c = ember::biased::spawn_consumers(rx, s.threads, s.batch, move |_item: usize| {
                t.consume(&s)
            })
            .expect("spawn biased consumers");
            for i in 0..s.items {
                tally.produce(&s);
                tx.send(i).expect("consumers alive");
            }
            drop(tx);
            let handled: u64 = c.join().iter().sum();
            assert_eq!(handled, s.items as u64, "biased consumers lost items");
        }
        System::Floor => {
            let t = tally.clone();
            let hs = consumers(1, &name, move || {
                for _ in 0..s.items {
                    t.consume(&s);
                }
            });
            for _ in 0..s.items {
                tally.produce(&s);
            }
            join_all(hs);
        }
        System::Ember(policy) => {
            let pool = policy.build(s.threads, s.batch, &name);
            for _ in 0..s.items {
                tally.produce(&s);
                let t = tally.clone();
                pool.spawn(move || t.consume(&s));
            }
            pool.wait_idle();
            tally
                .wakeups
                .fetch_add(pool.stats().wakeups_issued, Ordering::Relaxed);
            drop(pool);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every row runs to completion on a tiny workload and accounts its useful work.
    #[test]
    fn every_row_completes() {
        let s = Setup {
            threads: 2,
            pools: 2,
            items: 45,
            batch: 20,
            work: 10,
            produce: 10,
            processes: false,
        };
        for sys in System::all() {
            let m = run(sys, s);
            assert!(m["useful_cpu_s"] >= 0.0, "{}", sys.name(20));
            assert_eq!(m.contains_key("wakeups"), matches!(sys, System::Ember(_)));
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
        for sys in System::all() {
            let (back, t, pool) = parse_child_spec(&child_spec(sys, s, 2)).unwrap();
            assert_eq!(back.name(20), sys.name(20));
            assert_eq!(
                (t.threads, t.items, t.batch, t.work, t.produce, pool),
                (8, 400, 20, 1000, 250, 2)
            );
        }
        assert!(parse_child_spec("nonsense").is_none());
    }

    #[test]
    fn sweeps_the_design_grid() {
        let opts = LabOpts {
            quick: true,
            repeat: 1,
            cores: 2,
        };
        let e = ProducerConsumer {
            args: PcArgs::default(),
        };
        let g = e.groups(&opts);
        assert_eq!(g.len(), 4); // threads {2, 8} × pools {1, 3}
        assert_eq!(g[0].params["items"], 100);
        let names: Vec<_> = g[0].trials.iter().map(|t| t.system.as_str()).collect();
        assert_eq!(
            names,
            [
                "crossbeam",
                "crossbeam-batch20",
                "rayon",
                "rayon-batch20",
                "ember-biased-consumers",
                "ember",
                "ember-biased",
                "ember-searching",
                "ember-eager",
                "floor"
            ]
        );
    }
}
