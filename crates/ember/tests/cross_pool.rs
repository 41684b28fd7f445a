//! Pools calling each other: a worker that waits for another pool keeps running its own
//! pool's jobs, so no pattern of calls between pools deadlocks.
//!
//! Each test runs under a deadlock watchdog (`common::no_deadlock`). On the pool before
//! cross-pool waits existed, every test here marked "hung before" deadlocked: the waiting
//! worker of pool A was parked like an outside thread, and the work of B that called back into
//! A found no worker of A to run it. (A job of A is reached with `a.join(job, || ())`, not
//! `a.install(job)`, which that pool did not have, so that these tests run on it unchanged.)

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Barrier};

use ember::Pool;

mod common;
use common::{message, no_deadlock, policies, pool};

/// Two one-thread pools; a job of A joins on B, whose halves join back on A (rayon's
/// `thread_pool_mutual_install` pattern). Hung before.
#[test]
fn join_on_another_pool_that_calls_back() {
    for (name, policy) in policies() {
        let (a, b) = (pool(policy, 1), pool(policy, 1));
        let sum = no_deadlock(name, move || a.install_join(&b));
        assert_eq!(sum, 10, "{name}");
    }
}

/// Helpers shared by the tests: `install_join` runs, on a worker of `self`, a join on
/// `other` whose halves each join back on `self`.
trait CallBack {
    fn install_join(&self, other: &Pool) -> u64;
}

impl CallBack for Pool {
    fn install_join(&self, other: &Pool) -> u64 {
        let (a, b) = (self.clone(), other.clone());
        self.join(
            move || {
                let (left, right) =
                    b.join(|| a.join(|| 1u64, || 2u64), || a.join(|| 3u64, || 4u64));
                left.0 + left.1 + right.0 + right.1
            },
            || 0,
        )
        .0
    }
}

/// A job of A opens a scope on B whose jobs call back into A. Hung before.
#[test]
fn scope_on_another_pool_that_calls_back() {
    for (name, policy) in policies() {
        let (a, b) = (pool(policy, 1), pool(policy, 1));
        let total = no_deadlock(name, move || {
            let inner = a.clone();
            a.join(
                move || {
                    let total = AtomicUsize::new(0);
                    b.scope(|s| {
                        for i in 0..8 {
                            let (a, total) = (&inner, &total);
                            s.spawn(move |_| {
                                let (x, y) = a.join(|| i, || i * 10);
                                total.fetch_add(x + y, Ordering::SeqCst);
                            });
                        }
                    });
                    total.into_inner()
                },
                || (),
            )
            .0
        });
        assert_eq!(total, (0..8).map(|i| i * 11).sum::<usize>(), "{name}");
    }
}

/// A job of A joins a dependent task of B whose closure joins on A. Hung before.
#[test]
fn task_join_on_another_pool_that_calls_back() {
    for (name, policy) in policies() {
        let (a, b) = (pool(policy, 1), pool(policy, 1));
        let value = no_deadlock(name, move || {
            let inner = a.clone();
            a.join(
                move || {
                    let task = b.task(move || inner.join(|| 20, || 22)).spawn();
                    let (x, y) = task.join().expect("the task ran");
                    x + y
                },
                || (),
            )
            .0
        });
        assert_eq!(value, 42, "{name}");
    }
}

/// A job of A runs `parallel_for` on B whose chunks call into A. Hung before.
#[test]
fn parallel_for_on_another_pool_that_calls_back() {
    for (name, policy) in policies() {
        let (a, b) = (pool(policy, 1), pool(policy, 2));
        let sum = no_deadlock(name, move || {
            let inner = a.clone();
            a.join(
                move || {
                    let sum = AtomicUsize::new(0);
                    b.parallel_for(0..64, 4, |i| {
                        let (x, y) = inner.join(|| i, || 1);
                        sum.fetch_add(x + y, Ordering::SeqCst);
                    });
                    sum.into_inner()
                },
                || (),
            )
            .0
        });
        assert_eq!(sum, (0..64).sum::<usize>() + 64, "{name}");
    }
}

/// Depth of the chains below: hops A -> B -> A -> … on the default stack.
const CHAIN: usize = 64;

/// Calls `pools[depth % 2].join` `depth` times, each hop inside the previous one.
fn chain(pools: &Arc<[Pool; 2]>, depth: usize) -> usize {
    if depth == 0 {
        return 0;
    }
    let next = Arc::clone(pools);
    pools[depth % 2]
        .join(move || chain(&next, depth - 1) + 1, || ())
        .0
}

/// A chain A -> B -> A -> … 64 hops deep, on one-thread pools with the default stack.
#[test]
fn chains_sixty_four_deep_make_progress() {
    for (name, policy) in policies() {
        let pools = Arc::new([pool(policy, 1), pool(policy, 1)]);
        let depth = no_deadlock(name, move || chain(&pools, CHAIN));
        assert_eq!(depth, CHAIN, "{name}");
    }
}

/// Several such chains at once, started from several threads onto two-worker pools, so that
/// several workers of each pool wait on the other at the same time.
#[test]
fn several_chains_at_once() {
    const CHAINS: usize = 6;
    for (name, policy) in policies() {
        let pools = Arc::new([pool(policy, 2), pool(policy, 2)]);
        let depths = no_deadlock(name, move || {
            let start = Arc::new(Barrier::new(CHAINS));
            let threads: Vec<_> = (0..CHAINS)
                .map(|_| {
                    let (pools, start) = (Arc::clone(&pools), Arc::clone(&start));
                    std::thread::spawn(move || {
                        start.wait();
                        chain(&pools, CHAIN)
                    })
                })
                .collect();
            threads
                .into_iter()
                .map(|t| t.join().expect("a chain panicked"))
                .collect::<Vec<_>>()
        });
        assert_eq!(depths, vec![CHAIN; CHAINS], "{name}");
    }
}

/// A job of A drops the last handle of B while B's queued jobs still call into A: the drop
/// only starts B's shutdown (a worker does not wait for another pool's workers, which could
/// wait for it), and B's jobs all run, calling into A. Hung before (the dropping worker was
/// parked while B's jobs waited for A).
#[test]
fn dropping_another_pool_from_a_job_while_its_jobs_call_back() {
    for (name, policy) in policies() {
        let a = pool(policy, 1);
        let (tx, rx) = std::sync::mpsc::channel();
        let inner = a.clone();
        a.spawn(move || {
            let b = pool(policy, 1);
            for _ in 0..16 {
                let (a, tx) = (inner.clone(), tx.clone());
                b.spawn(move || {
                    a.join(|| (), || ());
                    tx.send(()).unwrap();
                });
            }
            drop(b); // starts B's shutdown; B's workers run every queued job, then exit
        });
        let ran = no_deadlock(name, move || rx.iter().take(16).count());
        assert_eq!(ran, 16, "{name}");
        a.wait_idle();
    }
}

/// A job of A waits for B to be idle while B's jobs call into A. Hung before.
#[test]
fn wait_idle_on_another_pool_from_a_job() {
    for (name, policy) in policies() {
        let (a, b) = (pool(policy, 1), pool(policy, 1));
        let ran = Arc::new(AtomicUsize::new(0));
        let (inner, counter) = (a.clone(), Arc::clone(&ran));
        no_deadlock(name, move || {
            inner.clone().join(
                move || {
                    for _ in 0..16 {
                        let (a, ran) = (inner.clone(), Arc::clone(&counter));
                        b.spawn(move || {
                            a.join(|| (), || ());
                            ran.fetch_add(1, Ordering::SeqCst);
                        });
                    }
                    b.wait_idle();
                },
                || (),
            );
        });
        assert_eq!(ran.load(Ordering::SeqCst), 16, "{name}");
    }
}

/// A spawned job of A joins on B, whose work calls `a.wait_idle()`: that wait could never
/// return (it waits for the very job that waits for it). It panics with a message instead of
/// hanging, and both pools live on. Hung before.
#[test]
fn wait_idle_through_another_pool_is_an_error_not_a_hang() {
    for (name, policy) in policies() {
        let (a, b) = (pool(policy, 1), pool(policy, 1));
        let (tx, rx) = std::sync::mpsc::channel();
        let inner = a.clone();
        a.spawn(move || {
            let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                b.join(|| inner.wait_idle(), || ())
            }));
            tx.send(outcome.map(|_| ()).map_err(|p| message(&*p)))
                .unwrap();
        });
        let outcome = no_deadlock(name, move || rx.recv().expect("the job reports"));
        let text = outcome.expect_err("wait_idle through another pool must panic");
        assert!(text.contains("through another pool"), "{name}: {text}");
        assert_eq!(a.join(|| 1, || 2), (1, 2), "{name}: A still works");
        a.wait_idle();
    }
}
