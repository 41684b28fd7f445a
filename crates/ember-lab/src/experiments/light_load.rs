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
//! A run's length is fixed by the clock, so unless `--repeat` is given this experiment runs
//! each row at most three times.

use super::ember_rows::EmberPolicy;
use super::peers::{rayon_pool, rayon_shutdown, Latch};
use super::{params, trial};
use crate::experiment::{Experiment, Group, LabOpts, Metrics};
use crate::metrics::threads::threads_cpu_ns;
use clap::Args;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

/// Batch of the `ember-biased` row.
const BIASED_BATCH: usize = 20;
/// Repeats when `--repeat` is not given: each run is seconds of wall clock by construction.
const DEFAULT_REPEAT_CAP: usize = 3;

/// Flags of `light-load`.
#[derive(Args, Debug, Clone, Default)]
#[command(next_help_heading = "light-load")]
pub struct LlArgs {
    /// Spawn intervals in µs, one table each [default: 1000,100]
    #[arg(long = "ll-interval-us", value_delimiter = ',', value_name = "US,..")]
    pub interval_us: Vec<u64>,
    /// How long the producer spawns, seconds [default: 2; --quick: 0.3]
    #[arg(long = "ll-seconds", value_name = "S")]
    pub seconds: Option<f64>,
}

/// The experiment, sized by its flags.
pub struct LightLoad {
    pub args: LlArgs,
    /// Whether `--repeat` was given on the command line.
    pub repeat_given: bool,
}

#[derive(Clone, Copy, Debug)]
enum System {
    Rayon,
    Tokio,
    Crossbeam,
    Ember(EmberPolicy),
}

impl System {
    fn all() -> Vec<System> {
        let mut v = vec![System::Rayon, System::Tokio, System::Crossbeam];
        v.extend(EmberPolicy::ALL.map(System::Ember));
        v
    }
    fn name(self) -> &'static str {
        match self {
            System::Rayon => "rayon",
            System::Tokio => "tokio",
            System::Crossbeam => "crossbeam",
            System::Ember(p) => p.system(),
        }
    }
}

impl Experiment for LightLoad {
    fn name(&self) -> &'static str {
        "light-load"
    }

    fn groups(&self, opts: &LabOpts) -> Vec<Group> {
        let intervals = if self.args.interval_us.is_empty() {
            vec![1000, 100]
        } else {
            self.args.interval_us.clone()
        };
        let seconds = self
            .args
            .seconds
            .unwrap_or(if opts.quick { 0.3 } else { 2.0 });
        let threads = opts.cores;
        intervals
            .into_iter()
            .map(|us| {
                let interval = Duration::from_micros(us.max(1));
                let tasks = ((seconds * 1e6) / us.max(1) as f64).round().max(1.0) as usize;
                Group {
                    title: format!(
                        "a task every {us} µs for {seconds} s ({tasks} tasks), {threads} threads"
                    ),
                    params: params([
                        ("interval_us", us.into()),
                        ("tasks", tasks.into()),
                        ("threads", threads.into()),
                    ]),
                    trials: System::all()
                        .into_iter()
                        .map(|sys| trial(sys.name(), move || run(sys, threads, interval, tasks)))
                        .collect(),
                }
            })
            .collect()
    }

    fn repeat(&self, opts: &LabOpts) -> usize {
        if self.repeat_given {
            opts.repeat
        } else {
            opts.repeat.min(DEFAULT_REPEAT_CAP)
        }
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

/// Nearest-rank percentile of sorted values.
fn percentile(sorted: &[u64], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1] as f64
}

/// CPU of one pool's worker threads over a run (`pool_cpu_s`), found by thread name.
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

fn run(sys: System, threads: usize, interval: Duration, tasks: usize) -> Metrics {
    let rec = Arc::new(Record {
        latency_ns: (0..tasks).map(|_| AtomicU64::new(0)).collect(),
        latch: Latch::new(tasks),
    });
    let mut m = Metrics::new();
    match sys {
        System::Rayon => {
            let (pool, hs) = rayon_pool(threads, "ll-rayon");
            let cpu = PoolCpu::start("ll-rayon");
            drive(tasks, interval, |i, t0| {
                let r = rec.clone();
                pool.spawn(move || r.started(i, t0));
            });
            rec.latch.wait();
            cpu.finish(&mut m);
            rayon_shutdown(pool, hs);
        }
        System::Tokio => {
            let rt = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(threads)
                .thread_name("ll-tokio")
                .build()
                .expect("tokio runtime");
            let cpu = PoolCpu::start("ll-tokio");
            drive(tasks, interval, |i, t0| {
                let r = rec.clone();
                rt.spawn(async move { r.started(i, t0) });
            });
            rec.latch.wait();
            cpu.finish(&mut m);
            // Dropping the runtime joins its worker threads.
            drop(rt);
        }
        System::Crossbeam => {
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
            drive(tasks, interval, |i, t0| {
                tx.send((i, t0)).expect("consumers alive")
            });
            rec.latch.wait();
            cpu.finish(&mut m);
            drop(tx);
            for h in hs {
                h.join().expect("consumer panicked");
            }
        }
        System::Ember(policy) => {
            let pool = policy.build(threads, BIASED_BATCH, "ll-ember");
            let cpu = PoolCpu::start("ll-ember");
            drive(tasks, interval, |i, t0| {
                let r = rec.clone();
                pool.spawn(move || r.started(i, t0));
            });
            rec.latch.wait();
            cpu.finish(&mut m);
            m.insert("wakeups".into(), pool.stats().wakeups_issued as f64);
            drop(pool);
        }
    }
    let mut lat: Vec<u64> = rec
        .latency_ns
        .iter()
        .map(|a| a.load(Ordering::Relaxed))
        .collect();
    lat.sort_unstable();
    m.insert("latency_p50_us".into(), percentile(&lat, 50.0) / 1e3);
    m.insert("latency_p99_us".into(), percentile(&lat, 99.0) / 1e3);
    m
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles() {
        let v: Vec<u64> = (1..=100).collect();
        assert_eq!(percentile(&v, 50.0), 50.0);
        assert_eq!(percentile(&v, 99.0), 99.0);
        assert_eq!(percentile(&[7], 99.0), 7.0);
    }

    #[test]
    fn every_row_completes() {
        for sys in System::all() {
            let m = run(sys, 2, Duration::from_micros(200), 20);
            assert!(m.contains_key("latency_p99_us"), "{}", sys.name());
            assert!(m["latency_p50_us"] <= m["latency_p99_us"]);
        }
    }
}
