//! Everything at once: several external threads mix `spawn`, `join` and `scope` on one pool.
//!
//! For each wake policy, an 8-worker pool is driven by four external threads at the same time.
//! Each runs rounds of: plain spawns, fan-out tasks that spawn from inside a worker, a `join`
//! (with a small recursive fib on one side), and a scope whose jobs spawn nested jobs and write a
//! borrowed buffer. Every item has its own slot in a vector of counters, so after the threads
//! finish and the pool is idle each must have run exactly once. A fifth thread calls
//! `wait_idle` and `stats` in a loop while the others work.

use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};
use std::sync::Arc;
use std::thread;

use ember::{Pool, WakePolicy};

const DRIVERS: usize = 4;
const ROUNDS: usize = 100;
const SPAWNS: usize = 400;
const FAN_OUTS: usize = 4;
const FAN_OUT_SIZE: usize = 50;
const SCOPE_JOBS: usize = 50;
/// Items per round: spawns, fan-out items, two join halves, scope jobs and their nested jobs.
const PER_ROUND: usize = SPAWNS + FAN_OUTS * FAN_OUT_SIZE + 2 + 2 * SCOPE_JOBS;
const ITEMS: usize = DRIVERS * ROUNDS * PER_ROUND;

struct Tally {
    seen: Vec<AtomicU8>,
}

impl Tally {
    fn mark(&self, item: usize) {
        self.seen[item].fetch_add(1, Ordering::Relaxed);
    }
}

fn fib(pool: &Pool, n: u32) -> u64 {
    if n < 2 {
        return u64::from(n);
    }
    let (a, b) = pool.join(|| fib(pool, n - 1), || fib(pool, n - 2));
    a + b
}

/// One external thread's work: `ROUNDS` rounds over its own block of item numbers.
fn drive(pool: &Pool, tally: &Arc<Tally>, driver: usize) {
    let mut next = driver * ROUNDS * PER_ROUND;
    let mut take = || {
        next += 1;
        next - 1
    };
    for _ in 0..ROUNDS {
        for _ in 0..SPAWNS {
            let (tally, item) = (Arc::clone(tally), take());
            pool.spawn(move || tally.mark(item));
        }

        for _ in 0..FAN_OUTS {
            let items: Vec<usize> = (0..FAN_OUT_SIZE).map(|_| take()).collect();
            let (inner, tally) = (pool.clone(), Arc::clone(tally));
            pool.spawn(move || {
                for item in items {
                    let tally = Arc::clone(&tally);
                    inner.spawn(move || tally.mark(item));
                }
            });
        }

        let (left, right) = (take(), take());
        let (f, ()) = pool.join(
            || {
                tally.mark(left);
                fib(pool, 12)
            },
            || tally.mark(right),
        );
        assert_eq!(f, 144, "fib(12) through join");

        let mut buffer = vec![0usize; SCOPE_JOBS];
        let items: Vec<(usize, usize)> = (0..SCOPE_JOBS).map(|_| (take(), take())).collect();
        pool.scope(|s| {
            for (slot, &(outer, nested)) in buffer.iter_mut().zip(&items) {
                s.spawn(move |s2| {
                    tally.mark(outer);
                    *slot = outer;
                    s2.spawn(move |_| tally.mark(nested));
                });
            }
        });
        for (slot, &(outer, _)) in buffer.iter().zip(&items) {
            assert_eq!(*slot, outer, "scope job wrote its borrowed slot");
        }
    }
    assert_eq!(next, (driver + 1) * ROUNDS * PER_ROUND, "item numbering");
}

fn stress(name: &str, policy: WakePolicy) {
    let pool = Pool::builder()
        .threads(8)
        .wake(policy)
        .build()
        .expect("valid configuration");
    let tally = Arc::new(Tally {
        seen: (0..ITEMS).map(|_| AtomicU8::new(0)).collect(),
    });
    let drivers_done = AtomicBool::new(false);
    thread::scope(|threads| {
        let observer = threads.spawn(|| {
            while !drivers_done.load(Ordering::SeqCst) {
                pool.wait_idle();
                let stats = pool.stats();
                assert_eq!(stats.per_worker.len(), 8);
            }
        });
        let drivers: Vec<_> = (0..DRIVERS)
            .map(|driver| {
                let (pool, tally) = (&pool, &tally);
                threads.spawn(move || drive(pool, tally, driver))
            })
            .collect();
        for driver in drivers {
            driver.join().unwrap();
        }
        drivers_done.store(true, Ordering::SeqCst);
        observer.join().unwrap();
    });
    pool.wait_idle();

    let missing: Vec<usize> = (0..ITEMS)
        .filter(|&i| tally.seen[i].load(Ordering::Relaxed) == 0)
        .collect();
    let repeated: Vec<usize> = (0..ITEMS)
        .filter(|&i| tally.seen[i].load(Ordering::Relaxed) > 1)
        .collect();
    assert!(
        missing.is_empty() && repeated.is_empty(),
        "{name}: of {ITEMS} items, {} never ran (first: {:?}) and {} ran more than once \
         (first: {:?})",
        missing.len(),
        &missing[..missing.len().min(10)],
        repeated.len(),
        &repeated[..repeated.len().min(10)],
    );
    assert!(pool.stats().tasks > 0, "{name}: stats().tasks");
}

#[test]
fn stress_eager() {
    stress("Eager", WakePolicy::Eager);
}

#[test]
fn stress_searching() {
    stress("Searching", WakePolicy::Searching);
}

#[test]
fn stress_biased_20() {
    stress("Biased { batch: 20 }", WakePolicy::Biased { batch: 20 });
}

#[test]
fn stress_biased_1() {
    stress("Biased { batch: 1 }", WakePolicy::Biased { batch: 1 });
}
