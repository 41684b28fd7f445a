//! `light-load`: what a pool costs when it has almost nothing to do.
//!
//! One producer spawns a tiny task every `interval` (1 ms, then 100 µs) for a fixed time.
//! The work is negligible, so the CPU the pool's threads burn is the pool's own: idle
//! spinning, waking and parking. `pool_cpu_s` sums the CPU clocks of the pool's worker
//! threads (found by name, peers included); `cpu_s` is the whole process and so also counts
//! the producer's own timer wake-ups, the same for every row. Each task records how long after its spawn it started running;
//! p50 and p99 of that spawn-to-start latency show what the CPU buys. Pools have one worker
//! per core.
//!
//! The `go` row is Go's runtime: a goroutine started per task by a Go producer, in a child
//! process; it has the process's `cpu_s` but no `pool_cpu_s`.

use super::ember_rows::EmberPolicy;
use super::peers::{rayon_pool, rayon_shutdown, tokio_runtime, Latch};
use super::{params, trial};
use crate::experiment::{Experiment, Group, LabOpts, Metrics, Trial};
use crate::metrics::stats::percentile;
use crate::metrics::threads::threads_cpu_ns;
use crate::{go_peer, systems};
use clap::Args;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

/// Flags of `light-load`.
#[derive(Args, Debug, Clone, Default)]
#[command(next_help_heading = "light-load")]
pub struct LlArgs {
    /// Spawn intervals in µs, one table each [default: 1000,100]
    #[arg(long = "ll-interval-us", value_delimiter = ',', value_name = "US,..")]
    pub interval_us: Vec<u64>,
    /// How long the producer spawns, seconds [default: 0.5; --quick: 0.2]
    #[arg(long = "ll-seconds", value_name = "S")]
    pub seconds: Option<f64>,
}

/// The experiment, sized by its flags.
pub struct LightLoad {
    pub args: LlArgs,
}

impl Experiment for LightLoad {
    fn name(&self) -> &'static str {
        crate::tables::experiment::LIGHT_LOAD
    }

    fn headline(&self) -> &'static [&'static str] {
        &[
            "pool_cpu_s",
            "cpu_s",
            "ctx_switches",
            "latency_p50_us",
            "latency_p99_us",
        ]
    }

    fn groups(&self, opts: &LabOpts) -> Result<Vec<Group>, String> {
        let intervals = if self.args.interval_us.is_empty() {
            vec![1000, 100]
        } else {
            self.args.interval_us.clone()
        };
        let seconds = self
            .args
            .seconds
            .unwrap_or(if opts.quick { 0.2 } else { 0.5 });
        if !(seconds.is_finite() && seconds > 0.0) {
            return Err(format!(
                "--ll-seconds must be a positive time, not {seconds}"
            ));
        }
        let threads = opts.cores;
        Ok(intervals
            .into_iter()
            .map(|us| {
                let interval = Duration::from_micros(us.max(1));
                let tasks = ((seconds * 1e6) / us.max(1) as f64).round().max(1.0) as usize;
                Group {
                    title: format!(
                        "a task every {us} µs for {seconds} s ({tasks} tasks), {threads} threads"
                    ),
                    params: params([
                        (crate::tables::key::INTERVAL_US, us.into()),
                        ("tasks", tasks.into()),
                        ("threads", threads.into()),
                    ]),
                    trials: rows(threads, interval, tasks),
                }
            })
            .collect())
    }
}

/// Where tasks record their spawn-to-start latency.
struct Record {
    latency_ns: Vec<AtomicU64>,
    latch: Latch,
}

impl Record {
    fn started(&self, i: usize, spawned: Instant) {
        let ns = spawned.elapsed().as_nanos().min(u64::MAX as u128) as u64;
        self.latency_ns[i].store(ns, Ordering::Relaxed);
        self.latch.count_down(1);
    }
}

/// Calls `spawn(i, now)` for task i at `start + i*interval`.
fn drive(tasks: usize, interval: Duration, mut spawn: impl FnMut(usize, Instant)) {
    let start = Instant::now();
    for i in 0..tasks {
        let due = start + interval * i as u32;
        let now = Instant::now();
        if due > now {
            thread::sleep(due - now);
        }
        spawn(i, Instant::now());
    }
}

/// CPU of one pool's threads over a run (`pool_cpu_s`: its workers and, for an ember pool
/// that defers wake-ups, its alarm thread), found by thread name.
struct PoolCpu {
    prefix: &'static str,
    start_ns: Option<u64>,
}

impl PoolCpu {
    fn start(prefix: &'static str) -> Self {
        PoolCpu {
            prefix,
            start_ns: threads_cpu_ns(prefix).map(|(ns, _)| ns),
        }
    }

    /// Adds `pool_cpu_s`, measured before the pool shuts down (its threads still alive).
    fn finish(self, m: &mut Metrics) {
        if let (Some(start), Some((end, _))) = (self.start_ns, threads_cpu_ns(self.prefix)) {
            m.insert("pool_cpu_s".into(), end.saturating_sub(start) as f64 / 1e9);
        }
    }
}

/// One row per system: every ember policy, rayon, tokio and a crossbeam-channel pool.
fn rows(threads: usize, interval: Duration, tasks: usize) -> Vec<Trial> {
    let mut rows: Vec<Trial> = EmberPolicy::ALL
        .iter()
        .map(|&policy| {
            trial(policy.system(), move || {
                run(tasks, |rec, m| ember_row(policy, threads, interval, rec, m))
            })
        })
        .collect();
    rows.push(trial(systems::RAYON, move || {
        run(tasks, |rec, m| rayon_row(threads, interval, rec, m))
    }));
    rows.push(trial(systems::TOKIO, move || {
        run(tasks, |rec, m| tokio_row(threads, interval, rec, m))
    }));
    rows.push(trial(systems::CROSSBEAM, move || {
        run(tasks, |rec, m| crossbeam_row(threads, interval, rec, m))
    }));
    if go_peer::available() {
        // Go's own goroutines, its producer included: no `pool_cpu_s` (its worker threads
        // cannot be told apart from the producer's), only the harness's process `cpu_s`.
        rows.push(trial(systems::GO, move || {
            go_peer::run(&[
                "light-load".into(),
                threads.to_string(),
                interval.as_micros().to_string(),
                tasks.to_string(),
            ])
        }));
    }
    rows
}

/// One run of `tasks` tasks: `row` spawns them and waits for all; then the latency
/// percentiles.
fn run(tasks: usize, row: impl FnOnce(&Arc<Record>, &mut Metrics)) -> Metrics {
    let rec = Arc::new(Record {
        latency_ns: (0..tasks).map(|_| AtomicU64::new(0)).collect(),
        latch: Latch::new(tasks),
    });
    let mut m = Metrics::new();
    row(&rec, &mut m);
    let lat: Vec<f64> = rec
        .latency_ns
        .iter()
        .map(|a| a.load(Ordering::Relaxed) as f64)
        .collect();
    m.insert("latency_p50_us".into(), percentile(&lat, 50.0) / 1e3);
    m.insert("latency_p99_us".into(), percentile(&lat, 99.0) / 1e3);
    m
}

fn rayon_row(threads: usize, interval: Duration, rec: &Arc<Record>, m: &mut Metrics) {
    let (pool, hs) = rayon_pool(threads, "ll-rayon");
    let cpu = PoolCpu::start("ll-rayon");
    drive(rec.latency_ns.len(), interval, |i, t0| {
        let r = rec.clone();
        pool.spawn(move || r.started(i, t0));
    });
    rec.latch.wait();
    cpu.finish(m);
    rayon_shutdown(pool, hs);
}

fn tokio_row(threads: usize, interval: Duration, rec: &Arc<Record>, m: &mut Metrics) {
    let rt = tokio_runtime(threads, "ll-tokio");
    let cpu = PoolCpu::start("ll-tokio");
    drive(rec.latency_ns.len(), interval, |i, t0| {
        let r = rec.clone();
        rt.spawn(async move { r.started(i, t0) });
    });
    rec.latch.wait();
    cpu.finish(m);
    drop(rt);
}

fn crossbeam_row(threads: usize, interval: Duration, rec: &Arc<Record>, m: &mut Metrics) {
    let (tx, rx) = crossbeam_channel::unbounded::<(usize, Instant)>();
    let hs: Vec<_> = (0..threads)
        .map(|w| {
            let (rx, r) = (rx.clone(), rec.clone());
            thread::Builder::new()
                .name(format!("ll-crossbeam-{w}"))
                .spawn(move || {
                    for (i, t0) in rx.iter() {
                        r.started(i, t0);
                    }
                })
                .expect("spawn consumer")
        })
        .collect();
    let cpu = PoolCpu::start("ll-crossbeam");
    drive(rec.latency_ns.len(), interval, |i, t0| {
        tx.send((i, t0)).expect("consumers alive")
    });
    rec.latch.wait();
    cpu.finish(m);
    drop(tx);
    for h in hs {
        h.join().expect("consumer panicked");
    }
}

fn ember_row(
    policy: EmberPolicy,
    threads: usize,
    interval: Duration,
    rec: &Arc<Record>,
    m: &mut Metrics,
) {
    let pool = policy.build(threads, "ll-ember");
    let cpu = PoolCpu::start("ll-ember");
    drive(rec.latency_ns.len(), interval, |i, t0| {
        let r = rec.clone();
        pool.spawn(move || r.started(i, t0));
    });
    rec.latch.wait();
    cpu.finish(m);
    m.insert("wakeups".into(), pool.stats().wakeups_issued as f64);
    drop(pool);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_row_completes() {
        for mut row in rows(2, Duration::from_micros(200), 20) {
            let m = (row.run)();
            assert!(m.contains_key("latency_p99_us"), "{}", row.system);
            assert!(m["latency_p50_us"] <= m["latency_p99_us"]);
        }
    }
}
