//! `broadcast` (rayon-core `broadcast/test.rs`; `spawn_broadcast` is not provided).

use std::panic::{self, AssertUnwindSafe};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::channel;
use std::time::{Duration, Instant};

use super::pool;

#[test]
fn the_global_pool_broadcasts_to_every_worker_in_order() {
    let indices = ember::broadcast(|ctx| ctx.index());
    assert_eq!(
        indices,
        (0..ember::current_num_threads()).collect::<Vec<_>>()
    );
}

#[test]
fn a_pool_broadcasts_to_every_worker_in_order() {
    let pool = pool(7);
    let seen = pool.broadcast(|ctx| {
        (
            ctx.index(),
            ctx.num_threads(),
            ember::current_thread_index(),
        )
    });
    let expected: Vec<_> = (0..7).map(|i| (i, 7, Some(i))).collect();
    assert_eq!(
        seen, expected,
        "each result comes from the worker of its index"
    );
}

/// From inside the pool the free function broadcasts on that pool, the caller's worker
/// included (it runs its share while it waits).
#[test]
fn a_worker_broadcasts_to_its_own_pool() {
    let pool = pool(7);
    let indices = pool.install(|| ember::broadcast(|ctx| ctx.index()));
    assert_eq!(indices, (0..7).collect::<Vec<_>>());
}

/// Two pools broadcast into each other: each worker of one waits for a broadcast on the
/// other, whose workers wait for a broadcast back. No deadlock: a waiting worker runs its
/// own pool's jobs, broadcast ones included.
#[test]
fn pools_broadcast_into_each_other() {
    let count = AtomicUsize::new(0);
    let (pool1, pool2) = (pool(3), pool(7));
    pool1.install(|| {
        pool2.broadcast(|_| {
            pool1.broadcast(|_| {
                count.fetch_add(1, Ordering::Relaxed);
            })
        })
    });
    assert_eq!(count.into_inner(), 3 * 7);
}

/// The same with pauses long enough for the idle workers of each pool to fall asleep: the
/// broadcast must wake them.
#[test]
fn pools_broadcast_into_each_other_s_sleeping_workers() {
    let nap = || std::thread::sleep(Duration::from_millis(30));
    let count = AtomicUsize::new(0);
    let (pool1, pool2) = (pool(3), pool(7));
    pool1.install(|| {
        nap();
        pool2.broadcast(|_| {
            nap();
            pool1.broadcast(|_| {
                count.fetch_add(1, Ordering::Relaxed);
            })
        })
    });
    assert_eq!(count.into_inner(), 3 * 7);
}

/// A panic on one or several workers propagates once every worker has run the closure;
/// the other panics are counted as reported (ember: `PoolStats::panics`).
#[test]
fn a_panic_propagates_after_every_worker_ran() {
    for panicking in [vec![3], vec![0, 2, 4, 6]] {
        let count = AtomicUsize::new(0);
        let pool = pool(7);
        let result = panic::catch_unwind(AssertUnwindSafe(|| {
            pool.broadcast(|ctx| {
                count.fetch_add(1, Ordering::Relaxed);
                if panicking.contains(&ctx.index()) {
                    panic!("Hello, world!");
                }
            })
        }));
        assert_eq!(count.into_inner(), 7);
        let payload = result.expect_err("the panic propagates");
        assert_eq!(payload.downcast_ref::<&str>(), Some(&"Hello, world!"));
        assert_eq!(pool.stats().panics, panicking.len() as u64 - 1);
    }
}

/// Broadcast after broadcast for a while, each worker pausing a little differently, so
/// that workers race into their idle sleep while the next broadcast arrives.
#[test]
fn broadcasts_race_workers_going_to_sleep() {
    let pool = pool(7);
    let start = Instant::now();
    let mut rounds = 0;
    while start.elapsed() < Duration::from_millis(300) {
        let ran = pool.broadcast(|ctx| {
            std::thread::sleep(Duration::from_micros(ctx.index() as u64));
        });
        assert_eq!(ran.len(), 7);
        rounds += 1;
    }
    assert!(rounds > 0);
}

/// A broadcast runs on a worker after the jobs on its own deque: a job spawned there before
/// has run (or, if a thief took it, finished on the thief before its share) by the time the
/// broadcast returns.
#[test]
fn a_broadcast_runs_after_the_worker_s_queued_job() {
    let pool = pool(2);
    let (tx, rx) = channel();
    pool.install(|| ember::spawn(move || tx.send(22).unwrap()));
    pool.broadcast(|_| ());
    assert_eq!(rx.try_recv(), Ok(22));
}

/// Ember-specific: a pool whose last handle is gone shuts down only once every worker is
/// idle, so a job still running there may broadcast, and the broadcast reaches every worker.
#[test]
fn a_job_of_a_pool_shutting_down_may_broadcast() {
    for _ in 0..20 {
        let (tx, rx) = channel();
        let pool = pool(2);
        let inner = pool.clone();
        pool.spawn(move || {
            drop(inner); // the last handle, once the test's is gone
            std::thread::sleep(Duration::from_millis(1));
            let reached = ember::broadcast(|context| context.index());
            tx.send(reached).unwrap();
        });
        drop(pool);
        let reached = rx.recv_timeout(super::common::DEADLOCK).unwrap();
        assert_eq!(reached, [0, 1]);
    }
}
