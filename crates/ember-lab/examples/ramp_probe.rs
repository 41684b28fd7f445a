//! Where a burst's ramp goes. A pool of `n` parked workers (default: the machine's cores)
//! gets a burst: one of its workers spawns `n` jobs that each spin 2 ms. For ember, traced,
//! it prints each wake-up's latency (made by the waker → the wakee's `Wake` event), the
//! time from that event to the wakee's first steal, the gap between one waker's consecutive
//! wake-ups, when the burst's first wake-up came, and how many levels of wake-ups the burst
//! took. For every system, the ramp: from just before the first spawn to the last job's
//! start, median and 90th percentile over the bursts. Two rounds, rows interleaved.
//!
//! ```sh
//! cargo run --release -p ember-lab --example ramp_probe -- [workers] [bursts]
//! ```
//!
//! `RAMP_PROBE_TREE=1` also prints the first burst's wake-ups, one line each;
//! `RAMP_PROBE_SLOW=1` prints the trace of the first three bursts of each pool whose first
//! wake-up came more than 100 µs after its first push. Each burst also reads, from the pool's debug dump just
//! before that push, how many workers searched: a searcher makes the pushes skip their
//! wake-ups.
//! The times on the trace's clock are converted with the pool's build instant, taken just
//! before `build()`: a few microseconds early, so the first wake-up's time is rounded down.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use ember::{Pool, TraceKind, Tuning, WakePolicy};

/// How long each job spins: long enough that no worker can take two before the burst spread.
const JOB: Duration = Duration::from_millis(2);
/// How long the pool idles before a burst: every worker parks.
const IDLE: Duration = Duration::from_millis(60);

fn spin_job(starts: &Mutex<Vec<Instant>>) {
    let at = Instant::now();
    starts.lock().expect("a job panicked").push(at);
    while at.elapsed() < JOB {
        std::hint::spin_loop();
    }
}

/// The `p`-quantile of `v` (0.5: the median); NaN when empty.
fn quantile(mut v: Vec<f64>, p: f64) -> f64 {
    if v.is_empty() {
        return f64::NAN;
    }
    v.sort_by(f64::total_cmp);
    v[((v.len() - 1) as f64 * p) as usize]
}

/// How long after `t0` the burst's last job started.
fn last_start(starts: &Mutex<Vec<Instant>>, t0: Instant) -> Duration {
    starts
        .lock()
        .expect("a job panicked")
        .iter()
        .map(|s| s.duration_since(t0))
        .max()
        .expect("no job ran")
}

fn micros(d: Duration) -> f64 {
    d.as_secs_f64() * 1e6
}

/// What one ember pool's bursts showed, in µs (`levels`: wake-up levels of a burst).
#[derive(Default)]
struct Seen {
    ramps: Vec<f64>,
    latency: Vec<f64>,
    to_steal: Vec<f64>,
    gaps: Vec<f64>,
    first: Vec<f64>,
    levels: Vec<f64>,
    /// Workers the pool counted as searching just before the burst's first push.
    searching: Vec<f64>,
}

/// A burst whose first wake-up comes later than this after its first push is printed with
/// `RAMP_PROBE_SLOW=1`, the first [`SLOW_PRINTED`] of each pool.
const SLOW_FIRST_US: f64 = 100.0;
const SLOW_PRINTED: usize = 3;

/// The searcher count in a pool's debug dump.
fn searching_in(dump: &str) -> Option<usize> {
    let rest = &dump[dump.find("searching: ")? + "searching: ".len()..];
    rest.split(|c: char| !c.is_ascii_digit())
        .next()?
        .parse()
        .ok()
}

fn ember_bursts(name: &str, built: Instant, pool: Pool, n: usize, bursts: usize) {
    let mut seen = Seen::default();
    let print_tree = std::env::var_os("RAMP_PROBE_TREE").is_some();
    let print_slow = std::env::var_os("RAMP_PROBE_SLOW").is_some();
    let mut slow_printed = 0;
    for burst in 0..=bursts {
        std::thread::sleep(IDLE);
        let _ = pool.trace();
        let starts = Arc::new(Mutex::new(Vec::with_capacity(n)));
        let for_jobs = Arc::clone(&starts);
        let seen_pool = pool.clone();
        let (t0, searching) = pool.install(|| {
            // Whoever searches as the burst begins makes its pushes skip their wake-ups.
            let searching = searching_in(&format!("{seen_pool:?}"));
            let t0 = Instant::now();
            ember::scope(|scope| {
                for _ in 0..n {
                    let starts = Arc::clone(&for_jobs);
                    scope.spawn(move |_| spin_job(&starts));
                }
            });
            (t0, searching)
        });
        let events = pool.trace().events().to_vec();
        if burst == 0 {
            continue; // a warm-up: the pool starts some threads at its first spawns
        }
        let last = last_start(&starts, t0);
        seen.ramps.push(micros(last));
        let start_ns = t0.duration_since(built).as_nanos() as u64;
        let end_ns = (t0 + last).duration_since(built).as_nanos() as u64;
        let mut wakes: Vec<_> = events
            .iter()
            .filter(|e| e.kind == TraceKind::Wake)
            .filter(|e| {
                e.woken_at_ns
                    .is_some_and(|at| at + 30_000 >= start_ns && at <= end_ns)
            })
            .collect();
        wakes.sort_by_key(|w| w.woken_at_ns);
        let mut by_waker: HashMap<Option<usize>, Vec<u64>> = HashMap::new();
        let mut level: HashMap<usize, usize> = HashMap::new();
        for w in &wakes {
            let at = w.woken_at_ns.expect("filtered on it");
            seen.latency
                .push(w.start_ns.saturating_sub(at) as f64 / 1e3);
            let steal = events
                .iter()
                .filter(|e| e.kind == TraceKind::Steal && e.worker == w.worker)
                .map(|e| e.start_ns)
                .filter(|&s| s >= w.start_ns)
                .min();
            if let Some(steal) = steal {
                seen.to_steal.push((steal - w.start_ns) as f64 / 1e3);
            }
            by_waker.entry(w.woken_by).or_default().push(at);
            let depth = w.woken_by.and_then(|k| level.get(&k).copied()).unwrap_or(0) + 1;
            level.insert(w.worker, depth);
            if print_tree && burst == 1 {
                println!(
                    "  worker {:2} woken by {:?} at {:8.1} us, awake at {:8.1} us",
                    w.worker,
                    w.woken_by,
                    (at as f64 - start_ns as f64) / 1e3,
                    (w.start_ns as f64 - start_ns as f64) / 1e3
                );
            }
        }
        let first = wakes
            .first()
            .and_then(|w| w.woken_at_ns)
            .map(|at| (at as f64 - start_ns as f64) / 1e3);
        if print_slow && slow_printed < SLOW_PRINTED && first.is_none_or(|f| f > SLOW_FIRST_US) {
            slow_printed += 1;
            println!("  burst {burst}: first wake-up at {first:?} us, {searching:?} searching as it began");
            for e in events
                .iter()
                .filter(|e| e.start_ns + 200_000 >= start_ns && e.start_ns <= end_ns)
            {
                println!(
                    "    {:8.1} us  worker {:2} {:?} woken by {:?} at {:?}",
                    (e.start_ns as f64 - start_ns as f64) / 1e3,
                    e.worker,
                    e.kind,
                    e.woken_by,
                    e.woken_at_ns.map(|at| (at as f64 - start_ns as f64) / 1e3),
                );
            }
        }
        if let Some(searching) = searching {
            seen.searching.push(searching as f64);
        }
        seen.levels
            .push(level.values().copied().max().unwrap_or(0) as f64);
        if let Some(first) = wakes.first().and_then(|w| w.woken_at_ns) {
            seen.first.push(first.saturating_sub(start_ns) as f64 / 1e3);
        }
        for (_, ats) in by_waker {
            for pair in ats.windows(2) {
                seen.gaps.push((pair[1] - pair[0]) as f64 / 1e3);
            }
        }
    }
    println!(
        "{name:<14} ramp_us median {:7.1} p90 {:7.1} | wake latency median {:5.1} p90 {:6.1} \
         | to steal {:4.1} | waker gap median {:4.1} | first wake-up {:6.1} | levels {} \
         | searching at the start median {} max {}",
        quantile(seen.ramps.clone(), 0.5),
        quantile(seen.ramps, 0.9),
        quantile(seen.latency.clone(), 0.5),
        quantile(seen.latency, 0.9),
        quantile(seen.to_steal, 0.5),
        quantile(seen.gaps, 0.5),
        quantile(seen.first, 0.5),
        quantile(seen.levels, 0.5),
        quantile(seen.searching.clone(), 0.5),
        quantile(seen.searching, 1.0),
    );
}

fn rayon_bursts(n: usize, bursts: usize) {
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(n)
        .build()
        .expect("rayon's pool");
    let mut ramps = Vec::new();
    for burst in 0..=bursts {
        std::thread::sleep(IDLE);
        let starts = Arc::new(Mutex::new(Vec::with_capacity(n)));
        let for_jobs = Arc::clone(&starts);
        let t0 = pool.install(|| {
            let t0 = Instant::now();
            rayon::scope(|scope| {
                for _ in 0..n {
                    let starts = Arc::clone(&for_jobs);
                    scope.spawn(move |_| spin_job(&starts));
                }
            });
            t0
        });
        if burst == 0 {
            continue;
        }
        ramps.push(micros(last_start(&starts, t0)));
    }
    println!(
        "{:<14} ramp_us median {:7.1} p90 {:7.1}",
        "rayon",
        quantile(ramps.clone(), 0.5),
        quantile(ramps, 0.9)
    );
}

fn main() {
    let args: Vec<usize> = std::env::args()
        .skip(1)
        .map(|a| a.parse().expect("usage: ramp_probe [workers] [bursts]"))
        .collect();
    let n = args
        .first()
        .copied()
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
    let bursts = args.get(1).copied().unwrap_or(21).max(1);
    println!("{n} workers, {bursts} bursts of {n} jobs of 2 ms");
    let build = |policy: WakePolicy, tuning: Tuning| {
        let built = Instant::now();
        let pool = Pool::builder()
            .threads(n)
            .wake(policy)
            .tuning(tuning)
            .trace(true)
            .build()
            .expect("ember's pool");
        (built, pool)
    };
    for round in 0..2 {
        println!("round {round}");
        let (built, pool) = build(WakePolicy::Searching, Tuning::new());
        ember_bursts("ember", built, pool, n, bursts);
        let (built, pool) = build(WakePolicy::Searching, Tuning::new().defer_wakeups(false));
        ember_bursts("ember-nodefer", built, pool, n, bursts);
        let (built, pool) = build(WakePolicy::Eager, Tuning::new());
        ember_bursts("ember-eager", built, pool, n, bursts);
        rayon_bursts(n, bursts);
    }
}
