//! Fork-join and scopes give correct results, really borrow, and never deadlock.
//!
//! * Recursive `join` (fib 25, one `join` per call) for each wake policy and 1, 2 and 8
//!   workers, called from outside the pool and from inside a worker.
//! * Nested scopes (a scope inside a scope job, spawns inside spawns) compute the right sum and
//!   each scope waits for its own jobs.
//! * Scope jobs mutate a borrowed `&mut [u64]` through `chunks_mut`, from outside and from
//!   inside a worker; the values are checked after the scope.
//! * `join` and `scope` called from inside the only worker of a one-thread pool complete (the
//!   worker helps); called from outside (where they move onto a worker and the caller blocks)
//!   they complete while another worker is busy.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::mpsc;

use ember::{Pool, WakePolicy};

mod common;
use common::{policies, pool};

const FIB_N: u32 = 25;

/// Fibonacci with one `join` per call.
fn fib(pool: &Pool, n: u32) -> u64 {
    if n < 2 {
        return u64::from(n);
    }
    let (a, b) = pool.join(|| fib(pool, n - 1), || fib(pool, n - 2));
    a + b
}

fn fib_sequential(n: u32) -> u64 {
    let (mut a, mut b) = (0u64, 1u64);
    for _ in 0..n {
        (a, b) = (b, a + b);
    }
    a
}

fn fib_from_outside(policy: WakePolicy, threads: usize) {
    let pool = pool(policy, threads);
    assert_eq!(fib(&pool, FIB_N), fib_sequential(FIB_N));
}

fn fib_from_inside(policy: WakePolicy, threads: usize) {
    let pool = pool(policy, threads);
    let (tx, rx) = mpsc::channel();
    let inner = pool.clone();
    pool.spawn(move || tx.send(fib(&inner, FIB_N)).unwrap());
    assert_eq!(rx.recv().unwrap(), fib_sequential(FIB_N));
}

/// fib tests for each policy and 1, 2 and 8 workers.
macro_rules! fib_tests {
    ($($module:ident: $policy:expr),* $(,)?) => {
        $(
            mod $module {
                use super::*;

                #[test]
                fn fib_from_outside_1_worker() {
                    fib_from_outside($policy, 1);
                }

                #[test]
                fn fib_from_outside_2_workers() {
                    fib_from_outside($policy, 2);
                }

                #[test]
                fn fib_from_outside_8_workers() {
                    fib_from_outside($policy, 8);
                }

                #[test]
                fn fib_from_inside_1_worker() {
                    fib_from_inside($policy, 1);
                }

                #[test]
                fn fib_from_inside_2_workers() {
                    fib_from_inside($policy, 2);
                }

                #[test]
                fn fib_from_inside_8_workers() {
                    fib_from_inside($policy, 8);
                }
            }
        )*
    };
}

fib_tests!(
    eager: WakePolicy::Eager,
    searching: WakePolicy::Searching,
    biased_20: WakePolicy::Biased { batch: 20 },
    biased_1: WakePolicy::Biased { batch: 1 },
);

#[test]
fn join_returns_both_results_from_outside_and_inside() {
    for (name, policy) in policies() {
        let pool = pool(policy, 2);
        let (a, b) = pool.join(|| String::from("left"), || vec![1, 2, 3]);
        assert_eq!((a.as_str(), b), ("left", vec![1, 2, 3]), "{name}, outside");

        let (tx, rx) = mpsc::channel();
        let inner = pool.clone();
        pool.spawn(move || {
            let local = [5u64, 6, 7];
            let (a, b) = inner.join(|| local[0] + local[1], || local[2] * 2);
            tx.send((a, b)).unwrap();
        });
        assert_eq!(rx.recv().unwrap(), (11, 14), "{name}, inside");
    }
}

/// A scope with 8 jobs, each spawning 8 jobs (spawn in spawn), each of which opens a scope of
/// its own with 4 jobs (scope in scope); the leaves sum slices of one borrowed vector.
fn nested_scopes(pool: &Pool, label: &str) {
    let data: Vec<u64> = (0..4096).collect();
    let total = AtomicU64::new(0);
    let leaves = AtomicUsize::new(0);
    pool.scope(|s| {
        for outer in data.chunks(512) {
            let (total, leaves) = (&total, &leaves);
            s.spawn(move |s2| {
                for middle in outer.chunks(64) {
                    s2.spawn(move |_| {
                        let mine = AtomicUsize::new(0);
                        pool.scope(|inner| {
                            for leaf in middle.chunks(16) {
                                let mine = &mine;
                                inner.spawn(move |_| {
                                    total.fetch_add(leaf.iter().sum::<u64>(), Ordering::Relaxed);
                                    leaves.fetch_add(1, Ordering::Relaxed);
                                    mine.fetch_add(1, Ordering::Relaxed);
                                });
                            }
                        });
                        assert_eq!(
                            mine.load(Ordering::Relaxed),
                            4,
                            "{label}: an inner scope returned before its jobs finished"
                        );
                    });
                }
            });
        }
    });
    assert_eq!(leaves.load(Ordering::Relaxed), 256, "{label}: leaves run");
    assert_eq!(
        total.load(Ordering::Relaxed),
        4096 * 4095 / 2,
        "{label}: sum"
    );
}

#[test]
fn nested_scopes_from_outside() {
    for threads in [1, 2, 8] {
        for (name, policy) in policies() {
            let pool = pool(policy, threads);
            nested_scopes(&pool, &format!("{name}, {threads} workers, outside"));
        }
    }
}

#[test]
fn nested_scopes_from_inside() {
    for threads in [1, 2, 8] {
        for (name, policy) in policies() {
            let pool = pool(policy, threads);
            let (tx, rx) = mpsc::channel();
            let inner = pool.clone();
            let label = format!("{name}, {threads} workers, inside");
            pool.spawn(move || {
                nested_scopes(&inner, &label);
                tx.send(()).unwrap();
            });
            rx.recv()
                .unwrap_or_else(|_| panic!("{name}, {threads} workers: the inside task failed"));
        }
    }
}

/// Scope jobs write disjoint chunks of a borrowed `&mut [u64]`; the values are checked after.
fn fill_through_scope(pool: &Pool, values: &mut [u64]) {
    pool.scope(|s| {
        for (c, chunk) in values.chunks_mut(1000).enumerate() {
            s.spawn(move |_| {
                for (j, x) in chunk.iter_mut().enumerate() {
                    *x = (c * 1000 + j) as u64 * 3 + 1;
                }
            });
        }
    });
}

fn check_filled(values: &[u64], label: &str) {
    for (i, &x) in values.iter().enumerate() {
        assert_eq!(x, i as u64 * 3 + 1, "{label}: element {i} after the scope");
    }
}

#[test]
fn scopes_borrow_mutably_from_outside() {
    for (name, policy) in policies() {
        let pool = pool(policy, 2);
        let mut values = vec![0u64; 100_000];
        fill_through_scope(&pool, &mut values);
        check_filled(&values, name);
    }
}

#[test]
fn scopes_borrow_mutably_from_inside() {
    for (name, policy) in policies() {
        let pool = pool(policy, 2);
        let (tx, rx) = mpsc::channel();
        let inner = pool.clone();
        pool.spawn(move || {
            let mut values = vec![0u64; 100_000];
            fill_through_scope(&inner, &mut values);
            tx.send(values).unwrap();
        });
        check_filled(&rx.recv().unwrap(), name);
    }
}

/// `join` and `scope`, nested in each other, called from the only worker of a one-thread pool.
#[test]
fn join_and_scope_inside_the_only_worker_do_not_deadlock() {
    for (name, policy) in policies() {
        let pool = pool(policy, 1);
        let (tx, rx) = mpsc::channel();
        let inner = pool.clone();
        pool.spawn(move || {
            let p = &inner;
            let result = p.join(
                || p.join(|| 1u64, || 2u64),
                || {
                    let mut values = [0u64; 8];
                    p.scope(|s| {
                        for (i, x) in values.iter_mut().enumerate() {
                            s.spawn(move |s2| {
                                let (a, b) = p.join(|| i as u64, || 10u64);
                                s2.spawn(|_| {});
                                *x = a + b;
                            });
                        }
                    });
                    values.iter().sum::<u64>()
                },
            );
            tx.send(result).unwrap();
        });
        assert_eq!(rx.recv().unwrap(), ((1, 2), 28 + 80), "{name}");
        pool.wait_idle();
    }
}

/// Blocks one worker in a task until the returned sender is used or dropped.
fn occupy_a_worker(pool: &Pool) -> mpsc::Sender<()> {
    let (started_tx, started_rx) = mpsc::channel();
    let (release_tx, release_rx) = mpsc::channel::<()>();
    pool.spawn(move || {
        started_tx.send(()).unwrap();
        let _ = release_rx.recv();
    });
    started_rx.recv().unwrap();
    release_tx
}

fn join_and_scope_from_outside(pool: &Pool, label: &str) {
    assert_eq!(pool.join(|| 1, || 2), (1, 2), "{label}: join");
    let ran = AtomicUsize::new(0);
    pool.scope(|s| {
        for _ in 0..10 {
            s.spawn(|_| {
                ran.fetch_add(1, Ordering::Relaxed);
            });
        }
    });
    assert_eq!(ran.load(Ordering::Relaxed), 10, "{label}: scope");
}

/// With one of two workers blocked in a task, `join` and `scope` called from outside complete
/// on the other. Only for the policies that wake an idle worker for any queued job: under
/// `Biased`, worker 1 wakes only when worker 0 is overloaded, so queued work waits for worker 0.
#[test]
fn join_and_scope_from_outside_complete_while_a_worker_is_busy() {
    for (name, policy) in [
        ("Eager", WakePolicy::Eager),
        ("Searching", WakePolicy::Searching),
    ] {
        let pool = pool(policy, 2);
        let release = occupy_a_worker(&pool);
        join_and_scope_from_outside(&pool, name);
        drop(release);
        pool.wait_idle();
    }
}
