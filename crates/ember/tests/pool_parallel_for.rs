//! `Pool::parallel_for` visits every index exactly once, for every policy, grain and range
//! shape; it works from outside the pool and from inside a worker; it re-raises panics after
//! the other chunks ended; a zero grain is refused.

use std::panic::{self, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicU8, AtomicUsize, Ordering};

mod common;
use common::{policies, pool};

fn visit_all(pool: &ember::Pool, len: usize, grain: usize, label: &str) {
    let seen: Vec<AtomicU8> = (0..len).map(|_| AtomicU8::new(0)).collect();
    pool.parallel_for(0..len, grain, |i| {
        seen[i].fetch_add(1, Ordering::Relaxed);
    });
    for (i, count) in seen.iter().enumerate() {
        assert_eq!(count.load(Ordering::Relaxed), 1, "{label}: index {i}");
    }
}

#[test]
fn every_index_once() {
    for (name, policy) in policies() {
        for threads in [1, 2, 8] {
            let pool = pool(policy, threads);
            for (len, grain) in [
                (0, 1),
                (1, 1),
                (10_000, 1),
                (10_000, 7),
                (100_000, 1000),
                (5, 100),
            ] {
                visit_all(
                    &pool,
                    len,
                    grain,
                    &format!("{name}, {threads} threads, {len}/{grain}"),
                );
            }
        }
    }
}

#[test]
fn offset_ranges_and_nested_calls() {
    let pool = pool(ember::WakePolicy::Searching, 2);
    let total = AtomicUsize::new(0);
    pool.parallel_for(100..200, 3, |i| {
        assert!((100..200).contains(&i));
        // Nested from inside a worker: the worker helps instead of blocking.
        pool.parallel_for(0..i, 16, |_| {
            total.fetch_add(1, Ordering::Relaxed);
        });
    });
    assert_eq!(total.into_inner(), (100..200).sum::<usize>());
}

#[test]
fn panics_are_reraised_after_the_rest_ran() {
    for (name, policy) in policies() {
        let pool = pool(policy, 2);
        let ran = AtomicUsize::new(0);
        let reached_end = AtomicBool::new(false);
        let result = panic::catch_unwind(AssertUnwindSafe(|| {
            pool.parallel_for(0..1000, 10, |i| {
                if i == 5 {
                    panic!("index five");
                }
                if i == 999 {
                    reached_end.store(true, Ordering::SeqCst);
                }
                ran.fetch_add(1, Ordering::Relaxed);
            })
        }));
        let payload = result.expect_err(name);
        assert_eq!(
            payload.downcast_ref::<&str>(),
            Some(&"index five"),
            "{name}"
        );
        // Only the panicking chunk (at most `grain` = 10 indices, starting at 0) stopped
        // early; every other chunk ran to its end.
        assert!(reached_end.load(Ordering::SeqCst), "{name}");
        let ran = ran.load(Ordering::Relaxed);
        assert!(
            (1000 - 10..1000).contains(&ran),
            "{name}: {ran} indices ran"
        );
    }
}

/// From outside the pool the caller runs chunks itself: with the only worker blocked until
/// the loop is over, every index is still visited, by the calling thread.
#[test]
fn the_caller_helps_when_every_worker_is_busy() {
    for (name, policy) in policies() {
        let pool = pool(policy, 1);
        let (release_tx, release_rx) = std::sync::mpsc::channel::<()>();
        let (started_tx, started_rx) = std::sync::mpsc::channel::<()>();
        pool.spawn(move || {
            started_tx.send(()).unwrap();
            release_rx.recv().unwrap();
        });
        started_rx.recv().unwrap();
        let caller = std::thread::current().id();
        let on_caller = AtomicUsize::new(0);
        pool.parallel_for(0..500, 10, |_| {
            if std::thread::current().id() == caller {
                on_caller.fetch_add(1, Ordering::Relaxed);
            }
        });
        assert_eq!(on_caller.into_inner(), 500, "{name}");
        release_tx.send(()).unwrap();
        pool.wait_idle();
    }
}

#[test]
fn zero_grain_is_refused_with_a_message() {
    let pool = pool(ember::WakePolicy::Searching, 1);
    let payload = panic::catch_unwind(AssertUnwindSafe(|| pool.parallel_for(0..10, 0, |_| {})))
        .expect_err("grain 0 must be refused");
    let message = payload
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_default();
    assert!(message.contains("grain"), "{message}");
}

/// Visits `range` with `grain` and checks that each index was visited exactly once; `range`
/// may end anywhere up to `usize::MAX`, where a chunk's end must not overflow.
fn visit_range(pool: &ember::Pool, range: std::ops::Range<usize>, grain: usize, label: &str) {
    let seen: Vec<AtomicU8> = range.clone().map(|_| AtomicU8::new(0)).collect();
    let start = range.start;
    pool.parallel_for(range, grain, |i| {
        seen[i - start].fetch_add(1, Ordering::Relaxed);
    });
    for (offset, count) in seen.iter().enumerate() {
        let i = start + offset;
        assert_eq!(count.load(Ordering::Relaxed), 1, "{label}: index {i}");
    }
}

#[test]
fn ranges_near_the_end_of_usize_and_huge_grains() {
    let cases = [
        (usize::MAX - 10..usize::MAX, 4),
        (usize::MAX - 10..usize::MAX, usize::MAX),
        (usize::MAX - 1..usize::MAX, 1),
        (5..10, usize::MAX),
        (5..10, usize::MAX - 3),
    ];
    for (name, policy) in policies() {
        let pool = pool(policy, 2);
        for (range, grain) in cases.iter().cloned() {
            let label = format!("{name}, {range:?} by {grain}");
            visit_range(&pool, range.clone(), grain, &format!("{label}, outside"));
            pool.install(|| visit_range(&pool, range, grain, &format!("{label}, on a worker")));
        }
    }
}
