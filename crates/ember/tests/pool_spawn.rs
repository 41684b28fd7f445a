//! Every spawned task runs exactly once.
//!
//! For each wake policy (`Eager`, `Searching`, `Biased { batch: 20 }`, `Biased { batch: 1 }`)
//! and for 1, 2, 8 and 64 workers, 100,000 tiny tasks are spawned
//!
//! * from outside the pool, by the test thread;
//! * from inside workers: a few outside tasks each spawn a share of the items;
//! * by several external producer threads at once, each spawning half of its share directly and
//!   handing the other half to fan-out tasks that spawn it from inside the pool.
//!
//! Each task marks its own slot in a vector of counters, so a task that never runs and a task
//! that runs twice are both caught and reported by index; a separate counter checks the total.

use std::sync::atomic::{AtomicU8, AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread;

use ember::{Pool, WakePolicy};

/// Items spawned per configuration.
const ITEMS: usize = 100_000;
/// Outside tasks that spawn the items from inside the pool.
const FAN_OUT_TASKS: usize = 10;
/// External producer threads spawning at once.
const PRODUCERS: usize = 4;
/// Fan-out tasks per producer, spawning the producer's second half from inside the pool.
const FAN_OUT_PER_PRODUCER: usize = 5;

/// Where the items are spawned from.
#[derive(Clone, Copy, Debug)]
enum Source {
    Outside,
    Inside,
    Mixed,
}

/// One counter per item, plus a total.
struct Tally {
    seen: Vec<AtomicU8>,
    ran: AtomicUsize,
}

impl Tally {
    fn new(items: usize) -> Arc<Self> {
        Arc::new(Tally {
            seen: (0..items).map(|_| AtomicU8::new(0)).collect(),
            ran: AtomicUsize::new(0),
        })
    }

    fn mark(&self, item: usize) {
        self.seen[item].fetch_add(1, Ordering::Relaxed);
        self.ran.fetch_add(1, Ordering::Relaxed);
    }

    /// Asserts that every item ran exactly once, naming the first offenders.
    fn check(&self, label: &str) {
        let missing: Vec<usize> = (0..self.seen.len())
            .filter(|&i| self.seen[i].load(Ordering::Relaxed) == 0)
            .collect();
        let repeated: Vec<usize> = (0..self.seen.len())
            .filter(|&i| self.seen[i].load(Ordering::Relaxed) > 1)
            .collect();
        let ran = self.ran.load(Ordering::Relaxed);
        assert!(
            missing.is_empty() && repeated.is_empty() && ran == self.seen.len(),
            "{label}: {ran} runs for {} items; {} never ran (first: {:?}); {} ran more than once \
             (first: {:?})",
            self.seen.len(),
            missing.len(),
            &missing[..missing.len().min(10)],
            repeated.len(),
            &repeated[..repeated.len().min(10)],
        );
    }
}

/// Spawns one marking task per item of `items` onto `pool`.
fn spawn_marks(pool: &Pool, tally: &Arc<Tally>, items: std::ops::Range<usize>) {
    for item in items {
        let tally = Arc::clone(tally);
        pool.spawn(move || tally.mark(item));
    }
}

/// Spawns, from outside, one task per chunk of `items`; each spawns its chunk from inside.
fn spawn_fan_out(pool: &Pool, tally: &Arc<Tally>, items: std::ops::Range<usize>, tasks: usize) {
    let len = items.len();
    for t in 0..tasks {
        let chunk = items.start + len * t / tasks..items.start + len * (t + 1) / tasks;
        let inner = pool.clone();
        let tally = Arc::clone(tally);
        pool.spawn(move || spawn_marks(&inner, &tally, chunk));
    }
}

/// Spawns `ITEMS` items from `source` onto a fresh pool and checks each ran exactly once.
fn run(policy_name: &str, policy: WakePolicy, workers: usize, source: Source) {
    let label = format!("{policy_name}, {workers} workers, spawned {source:?}");
    let pool = Pool::builder()
        .threads(workers)
        .wake(policy)
        .build()
        .expect("valid configuration");
    let tally = Tally::new(ITEMS);
    match source {
        Source::Outside => spawn_marks(&pool, &tally, 0..ITEMS),
        Source::Inside => spawn_fan_out(&pool, &tally, 0..ITEMS, FAN_OUT_TASKS),
        Source::Mixed => thread::scope(|producers| {
            for p in 0..PRODUCERS {
                let (pool, tally) = (&pool, &tally);
                producers.spawn(move || {
                    let start = ITEMS * p / PRODUCERS;
                    let end = ITEMS * (p + 1) / PRODUCERS;
                    let middle = (start + end) / 2;
                    spawn_fan_out(pool, tally, middle..end, FAN_OUT_PER_PRODUCER);
                    spawn_marks(pool, tally, start..middle);
                });
            }
        }),
    }
    pool.wait_idle();
    tally.check(&label);
    let stats = pool.stats();
    assert!(
        stats.tasks >= ITEMS as u64,
        "{label}: stats().tasks is {} after {ITEMS} spawns and wait_idle",
        stats.tasks
    );
}

/// One test per worker count and source, for the policy returned by `policy()` in scope.
macro_rules! worker_counts {
    ($($module:ident: $workers:expr),* $(,)?) => {
        $(
            mod $module {
                use super::*;

                #[test]
                fn from_outside() {
                    run(NAME, policy(), $workers, Source::Outside);
                }

                #[test]
                fn from_inside_workers() {
                    run(NAME, policy(), $workers, Source::Inside);
                }

                #[test]
                fn from_several_producers_mixed() {
                    run(NAME, policy(), $workers, Source::Mixed);
                }
            }
        )*
    };
}

/// One module per policy, each with the worker counts 1, 2, 8 and 64.
macro_rules! policies {
    ($($module:ident: $policy:expr),* $(,)?) => {
        $(
            mod $module {
                use super::*;

                const NAME: &str = stringify!($policy);

                fn policy() -> WakePolicy {
                    $policy
                }

                worker_counts!(workers_1: 1, workers_2: 2, workers_8: 8, workers_64: 64);
            }
        )*
    };
}

policies!(
    eager: WakePolicy::Eager,
    searching: WakePolicy::Searching,
    biased_20: WakePolicy::Biased { batch: 20 },
    biased_1: WakePolicy::Biased { batch: 1 },
);
