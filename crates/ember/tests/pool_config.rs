//! Building a pool: bad configuration is an error, good configuration is what it says.
//!
//! * `threads(0)` and `Biased { batch: 0 }` are `BuildError`s whose messages say what to change.
//! * Worker threads are named `name-0`, `name-1`, …; the default thread count is the available
//!   parallelism; `delay_kick` and `panic_handler` build working pools.
//! * `Pool` is `Clone + Send + Sync` and clones share one pool.
//! * `pin_workers(true)` pins worker `i` to the `i`-th allowed processor, round-robin, before
//!   its start handler runs, and `WorkerStats::pinned_to` says so; without it workers keep
//!   every allowed processor, and `pinned_to` is `None`.
//! * `PoolStats`: pool-wide totals equal the sums over `per_worker`; `tasks` counts at least
//!   every spawned task.

use std::collections::BTreeSet;
use std::error::Error;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{mpsc, Arc, Barrier};
use std::time::Duration;

use ember::{BuildError, Pool, PoolBuilder, PoolStats, WakePolicy};

mod common;
#[cfg(target_os = "linux")]
use common::{affinity, can_pin};
use common::{no_deadlock, policies};

fn build_error(result: Result<Pool, BuildError>, what: &str) -> BuildError {
    match result {
        Ok(_) => panic!("{what} built a pool; expected a BuildError"),
        Err(error) => error,
    }
}

#[test]
fn zero_threads_is_an_error_naming_threads() {
    let error = build_error(Pool::builder().threads(0).build(), "threads(0)");
    let text = error.to_string();
    assert!(
        text.contains("threads"),
        "the message should say to change `threads`: {text:?}"
    );
    let _: &dyn Error = &error;
}

#[test]
fn too_many_threads_is_an_error_naming_threads() {
    for threads in [1 << 40, usize::MAX, PoolBuilder::MAX_THREADS + 1] {
        let error = build_error(
            Pool::builder().threads(threads).build(),
            &format!("threads({threads})"),
        );
        assert!(
            matches!(error, BuildError::TooManyThreads { requested, .. } if requested == threads),
            "threads({threads}): {error:?}"
        );
        let text = error.to_string();
        assert!(text.contains("threads"), "threads({threads}): {text:?}");
    }
}

/// "Spin forever": the spin is clamped to `MAX_SPIN`, and an idle worker that spins still
/// takes the jobs pushed meanwhile.
#[test]
fn a_spin_of_duration_max_is_clamped() {
    let builder = Pool::builder().spin(Duration::MAX);
    let shown = format!("{builder:?}");
    assert!(
        shown.contains(&format!("spin: {:?}", PoolBuilder::MAX_SPIN)),
        "{shown}"
    );
    for (name, policy) in policies() {
        let pool = Pool::builder()
            .threads(2)
            .wake(policy)
            .spin(Duration::MAX)
            .build()
            .expect("valid configuration");
        no_deadlock(name, move || {
            let (tx, rx) = mpsc::channel();
            pool.spawn(move || tx.send(()).unwrap());
            rx.recv().unwrap();
            assert_eq!(pool.install(|| ember::join(|| 1, || 2)), (1, 2));
        });
    }
}

#[test]
fn zero_batch_is_an_error_naming_batch() {
    let error = build_error(
        Pool::builder()
            .threads(2)
            .wake(WakePolicy::Biased { batch: 0 })
            .build(),
        "Biased { batch: 0 }",
    );
    let text = error.to_string();
    assert!(
        text.contains("batch"),
        "the message should say to change `batch`: {text:?}"
    );
}

#[test]
fn worker_threads_are_named_after_the_pool() {
    for threads in [1, 3] {
        let pool = Pool::builder()
            .threads(threads)
            .wake(WakePolicy::Eager)
            .name("ember-names")
            .build()
            .unwrap();
        // One task per worker, held at a barrier until all are running, so each runs on a
        // different worker.
        let barrier = Arc::new(Barrier::new(threads));
        let (tx, rx) = mpsc::channel();
        for _ in 0..threads {
            let (barrier, tx) = (Arc::clone(&barrier), tx.clone());
            pool.spawn(move || {
                barrier.wait();
                tx.send(std::thread::current().name().map(str::to_owned))
                    .unwrap();
            });
        }
        drop(tx);
        let names: BTreeSet<Option<String>> = rx.iter().collect();
        let expected: BTreeSet<Option<String>> = (0..threads)
            .map(|i| Some(format!("ember-names-{i}")))
            .collect();
        assert_eq!(names, expected, "{threads} workers");
    }
}

#[test]
fn default_threads_is_the_available_parallelism() {
    let expected = std::thread::available_parallelism().unwrap().get();
    let pool = Pool::builder().build().unwrap();
    assert_eq!(pool.threads(), expected);
    let stats = pool.stats();
    assert_eq!(stats.threads, expected);
    assert_eq!(stats.per_worker.len(), expected);
}

#[test]
fn threads_is_what_was_asked() {
    for threads in [1, 2, 5, 64] {
        let pool = Pool::builder().threads(threads).build().unwrap();
        assert_eq!(pool.threads(), threads);
        let stats = pool.stats();
        assert_eq!(stats.threads, threads);
        assert_eq!(stats.per_worker.len(), threads);
    }
}

#[test]
fn every_option_builds_a_working_pool() {
    for delay_kick in [false, true] {
        for (name, policy) in policies() {
            let handled = Arc::new(AtomicUsize::new(0));
            let counted = Arc::clone(&handled);
            let pool = Pool::builder()
                .threads(2)
                .wake(policy)
                .tuning(ember::Tuning::new().delay_kick(delay_kick))
                .name("ember-options")
                .panic_handler(move |_payload: Box<dyn std::any::Any + Send>| {
                    counted.fetch_add(1, Ordering::SeqCst);
                })
                .build()
                .unwrap();
            let ran = Arc::new(AtomicUsize::new(0));
            for _ in 0..100 {
                let ran = Arc::clone(&ran);
                pool.spawn(move || {
                    ran.fetch_add(1, Ordering::Relaxed);
                });
            }
            let label = format!("{name}, delay_kick({delay_kick})");
            assert_eq!(pool.join(|| 1, || 2), (1, 2), "{label}");
            pool.wait_idle();
            assert_eq!(ran.load(Ordering::Relaxed), 100, "{label}");
            assert_eq!(
                handled.load(Ordering::SeqCst),
                0,
                "{label}: no panic to handle"
            );
        }
    }
}

#[test]
fn pool_is_clone_send_sync() {
    fn assert_traits<T: Clone + Send + Sync + 'static>() {}
    assert_traits::<Pool>();
    fn assert_error<T: Error + Send + Sync + 'static>() {}
    assert_error::<BuildError>();
}

#[test]
fn clones_share_one_pool() {
    let pool = Pool::builder().threads(2).build().unwrap();
    let clone = pool.clone();
    assert_eq!(clone.threads(), pool.threads());
    let ran = Arc::new(AtomicUsize::new(0));
    for _ in 0..1000 {
        let ran = Arc::clone(&ran);
        clone.spawn(move || {
            ran.fetch_add(1, Ordering::Relaxed);
        });
    }
    // Waiting on the original covers the tasks spawned through the clone.
    pool.wait_idle();
    assert_eq!(ran.load(Ordering::Relaxed), 1000);
    assert!(
        pool.stats().tasks >= 1000,
        "the original sees the clone's tasks"
    );

    // A clone sent to another thread spawns onto the same pool.
    let sent = pool.clone();
    let ran_there = Arc::clone(&ran);
    std::thread::spawn(move || {
        sent.spawn(move || {
            ran_there.fetch_add(1, Ordering::Relaxed);
        });
    })
    .join()
    .unwrap();
    clone.wait_idle();
    assert_eq!(ran.load(Ordering::Relaxed), 1001);
}

fn assert_totals_are_sums(stats: &PoolStats, label: &str) {
    let sum = |field: fn(&ember::WorkerStats) -> u64| stats.per_worker.iter().map(field).sum();
    let fields: [(&str, u64, u64); 6] = [
        ("tasks", stats.tasks, sum(|w| w.tasks)),
        (
            "wakeups_issued",
            stats.wakeups_issued,
            sum(|w| w.wakeups_issued),
        ),
        (
            "wakeups_received",
            stats.wakeups_received,
            sum(|w| w.wakeups_received),
        ),
        ("parks", stats.parks, sum(|w| w.parks)),
        ("steals", stats.steals, sum(|w| w.steals)),
        ("panics", stats.panics, sum(|w| w.panics)),
    ];
    for (field, total, per_worker_sum) in fields {
        assert_eq!(
            total, per_worker_sum,
            "{label}: stats().{field} is {total} but per_worker sums to {per_worker_sum}"
        );
    }
}

#[test]
fn stats_totals_are_sums_over_workers() {
    for (name, policy) in policies() {
        let pool = Pool::builder().threads(4).wake(policy).build().unwrap();
        assert_totals_are_sums(&pool.stats(), &format!("{name}, fresh pool"));

        let spawned = 10_000u64;
        for i in 0..spawned {
            pool.spawn(move || {
                if i % 1000 == 0 {
                    panic!("counted panic");
                }
            });
        }
        let mut values = vec![0u64; 1000];
        pool.scope(|s| {
            for chunk in values.chunks_mut(10) {
                s.spawn(move |_| chunk.iter_mut().for_each(|x| *x += 1));
            }
        });
        pool.wait_idle();

        let stats = pool.stats();
        let label = format!("{name}, after work");
        assert_totals_are_sums(&stats, &label);
        assert!(
            stats.tasks >= spawned,
            "{label}: stats().tasks is {} after {spawned} spawns and wait_idle",
            stats.tasks
        );
        assert_eq!(stats.panics, spawned / 1000, "{label}: stats().panics");
        assert_eq!(stats.threads, 4, "{label}: stats().threads");
    }
}

/// Each worker's affinity as its start handler sees it, for a pool of `threads`, and where
/// the pool's stats say each worker is pinned once every start handler has run.
#[cfg(target_os = "linux")]
fn worker_affinities(threads: usize, pin: bool) -> (Vec<Vec<usize>>, Vec<Option<usize>>) {
    let (tx, rx) = mpsc::channel();
    let tx = std::sync::Mutex::new(tx);
    let pool = Pool::builder()
        .threads(threads)
        .pin_workers(pin)
        .start_handler(move |index| {
            let _ = tx.lock().unwrap().send((index, affinity()));
        })
        .build()
        .expect("a pool");
    // The pool runs work either way.
    assert_eq!(pool.join(|| 1, || 2), (1, 2));
    let mut seen = vec![Vec::new(); threads];
    for _ in 0..threads {
        let (index, cpus) = rx
            .recv_timeout(std::time::Duration::from_secs(10))
            .expect("every worker's start handler ran");
        seen[index] = cpus;
    }
    let pinned_to = pool
        .stats()
        .per_worker
        .iter()
        .map(|w| w.pinned_to)
        .collect();
    (seen, pinned_to)
}

#[cfg(target_os = "linux")]
#[test]
fn pinned_workers_each_get_one_allowed_processor_round_robin() {
    let allowed = affinity();
    if allowed.len() < 2 || !can_pin(allowed[0]) {
        // With one processor a pinned and an unpinned worker look alike; where the system
        // refuses to pin, workers run unpinned by design.
        eprintln!(
            "skipped: {} allowed processor(s), or pinning refused",
            allowed.len()
        );
        return;
    }
    let threads = allowed.len() + 1;
    let (seen, pinned_to) = worker_affinities(threads, true);
    for (index, cpus) in seen.iter().enumerate() {
        let cpu = allowed[index % allowed.len()];
        assert_eq!(
            cpus,
            &vec![cpu],
            "worker {index} of {threads} on processors {allowed:?}"
        );
        assert_eq!(pinned_to[index], Some(cpu), "worker {index}'s stats");
    }
}

#[cfg(target_os = "linux")]
#[test]
fn unpinned_workers_keep_every_allowed_processor() {
    let allowed = affinity();
    let (seen, pinned_to) = worker_affinities(2, false);
    for (index, cpus) in seen.iter().enumerate() {
        assert_eq!(cpus, &allowed, "worker {index}");
        assert_eq!(pinned_to[index], None, "worker {index}'s stats");
    }
}

/// The builder's protocol switches from before `Tuning` still build, as forwards to it: each
/// sets the same as its `Tuning` method, which the builder's `Debug` shows.
#[test]
#[allow(deprecated)]
fn deprecated_builder_switches_forward_to_tuning() {
    use ember::Tuning;
    let bound = Duration::from_millis(1);
    let pairs: [(PoolBuilder, Tuning); 6] = [
        (
            Pool::builder().delay_kick(false),
            Tuning::new().delay_kick(false),
        ),
        (
            Pool::builder().defer_wakeups(false),
            Tuning::new().defer_wakeups(false),
        ),
        (
            Pool::builder().defer_wakeups_for(bound),
            Tuning::new().defer_wakeups_for(bound),
        ),
        (
            Pool::builder().lazy_joins(true),
            Tuning::new().lazy_joins_unchecked(true),
        ),
        (
            Pool::builder().lazy_joins(false),
            Tuning::new().lazy_joins(false),
        ),
        (
            Pool::builder().sequential_joins(true),
            Tuning::new().sequential_joins_unchecked(true),
        ),
    ];
    for (old, tuning) in pairs {
        let new = Pool::builder().tuning(tuning);
        assert_eq!(format!("{old:?}"), format!("{new:?}"));
        let pool = old.threads(2).build().unwrap();
        assert_eq!(pool.join(|| 1, || 2), (1, 2));
    }
}
