//! `Tuning::sequential_joins_unchecked`: most `join`s made while every worker is busy run as two
//! calls; results, panics and parallelism are those of an ordinary `join`, and halves that
//! wait for each other are the documented exception.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Barrier;
use std::time::Duration;

use ember::{Pool, WakePolicy};

mod common;
use common::{fib, no_deadlock, occupy_a_worker};

fn sequential(policy: WakePolicy, threads: usize, on: bool) -> Pool {
    Pool::builder()
        .threads(threads)
        .wake(policy)
        .tuning(
            ember::Tuning::new()
                .lazy_joins_unchecked(true)
                .sequential_joins_unchecked(on),
        )
        .build()
        .unwrap()
}

/// `join`s nested `depth` deep, each with an empty second half, around `inner`: once three
/// halves are kept, the `join`s below them run as two calls while every worker is busy.
fn nested<R: Send>(depth: usize, inner: impl FnOnce() -> R + Send) -> R {
    nested_with(depth, || (), inner)
}

/// [`nested`], each second half calling `half`.
fn nested_with<R: Send>(
    depth: usize,
    half: impl Fn() + Send + Sync + Copy,
    inner: impl FnOnce() -> R + Send,
) -> R {
    if depth == 0 {
        return inner();
    }
    ember::join(|| nested_with(depth - 1, half, inner), half).0
}

#[test]
fn results_match_for_every_policy_and_size() {
    common::fork_join_results_match(|policy, threads| sequential(policy, threads, true));
}

/// A panic of either half, in a `join` run as two calls, is re-raised once the other half
/// has run. One worker, so that every `join` below the third runs as two calls.
#[test]
fn panics_are_re_raised_after_the_other_half_ran() {
    let pool = sequential(WakePolicy::Searching, 1, true);
    for first in [true, false] {
        let other_ran = AtomicBool::new(false);
        let caught = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            pool.install(|| {
                nested(5, || {
                    ember::join(
                        || {
                            if first {
                                panic!("a")
                            }
                            other_ran.store(true, Ordering::SeqCst);
                        },
                        || {
                            if !first {
                                panic!("b")
                            }
                            other_ran.store(true, Ordering::SeqCst);
                        },
                    )
                })
            })
        }));
        let payload = caught.expect_err("the panic is re-raised");
        assert_eq!(
            payload.downcast_ref::<&str>(),
            Some(&if first { "a" } else { "b" })
        );
        assert!(other_ran.load(Ordering::SeqCst), "first: {first}");
    }
    assert_eq!(pool.install(|| fib(20)), 6_765);
}

/// On an idle pool the other workers want work, so a `join` offers its half as without
/// sequential joins, however deep: two halves that each wait for the other to start finish,
/// below three kept halves.
#[test]
fn a_join_on_an_idle_pool_runs_its_halves_in_parallel() {
    for (name, policy) in common::unbiased_policies() {
        let pool = sequential(policy, 2, true);
        no_deadlock(name, move || {
            let barrier = Barrier::new(2);
            pool.install(|| nested(3, || ember::join(|| barrier.wait(), || barrier.wait())));
        });
    }
}

/// The work still spreads: a worker that frees up while the other recurses gets the kept
/// halves (the forker's next `join`, seeing it want work, offers them). Here the three kept
/// halves note where they ran, and the forker joins until one ran elsewhere; if none ever
/// does, the watchdog fails the test.
///
/// The freed worker spins far longer than the watchdog, so it never reaches the private steal
/// it would make on its way to sleep: only an offer, made by a `join` that sees it want work,
/// can hand it a kept half.
#[test]
fn a_worker_that_wants_work_gets_the_kept_halves() {
    for (name, policy) in common::unbiased_policies() {
        let pool = Pool::builder()
            .threads(2)
            .wake(policy)
            .tuning(
                ember::Tuning::new()
                    .lazy_joins_unchecked(true)
                    .sequential_joins_unchecked(true),
            )
            .spin(Duration::from_secs(3600))
            .build()
            .unwrap();
        no_deadlock(name, move || {
            let release = occupy_a_worker(&pool);
            let elsewhere = AtomicBool::new(false);
            pool.install(|| {
                let forker = ember::current_thread_index();
                let mark = || {
                    if ember::current_thread_index() != forker {
                        elsewhere.store(true, Ordering::SeqCst);
                    }
                };
                nested_with(3, mark, || {
                    release();
                    while !elsewhere.load(Ordering::SeqCst) {
                        ember::join(|| fib(12), || fib(12));
                    }
                });
            });
        });
    }
}

/// A `join` `depth` deep on `pool` (2 workers), made while its other worker is busy, whose
/// first half frees that worker and then waits up to `wait` for its second half to send:
/// what the first half received.
#[cfg(target_os = "linux")]
fn first_half_waits_for_second(pool: Pool, depth: usize, wait: Duration) -> Option<u32> {
    no_deadlock("first half waits", move || {
        let release = occupy_a_worker(&pool);
        let (tx, rx) = std::sync::mpsc::channel();
        pool.install(|| {
            nested(depth, move || {
                ember::join(
                    move || {
                        release();
                        rx.recv_timeout(wait).ok()
                    },
                    move || {
                        let _ = tx.send(7u32);
                    },
                )
                .0
            })
        })
    })
}

/// The three outermost `join`s keep their halves for thieves, sequential joins or not: a
/// first half that waits for its second, fewer than three kept halves deep, is relieved by
/// the worker that frees up (on its way to sleep it steals the half). Linux: the steal needs
/// the heavy barrier.
#[cfg(target_os = "linux")]
#[test]
fn the_outermost_halves_are_kept_for_thieves() {
    for depth in 0..3 {
        let pool = sequential(WakePolicy::Searching, 2, true);
        let received = first_half_waits_for_second(pool, depth, Duration::from_secs(20));
        assert_eq!(received, Some(7), "{depth} kept halves above");
    }
}

/// The price, as documented: a first half that waits for its second, in a `join` run as two
/// calls, is not relieved by a worker that frees up (without sequential joins that worker
/// steals the half on its way to sleep, `lazy_joins.rs`). The wait here gives up after a
/// while, and the second half then runs on the forker. The other worker is busy while the
/// `join`s are made, so that three kept halves and no worker wanting work make the innermost
/// run as two calls.
#[cfg(target_os = "linux")]
#[test]
fn a_first_half_waiting_for_its_second_is_not_relieved() {
    for on in [true, false] {
        let pool = sequential(WakePolicy::Searching, 2, on);
        // Known to time out with sequential joins; without, the freed worker's steals end it
        // long before.
        let wait = Duration::from_millis(if on { 500 } else { 20_000 });
        let received = first_half_waits_for_second(pool, 3, wait);
        if on {
            assert_eq!(received, None, "the second half ran while its first waited");
        } else {
            assert_eq!(received, Some(7), "without sequential joins it is stolen");
        }
    }
}

/// The other documented exception: a second half that waits for a job its first half
/// spawned. Without sequential joins the spawned job runs first (it lies above the second
/// half); run as two calls, the second half comes first, and on one worker nothing else can
/// run the job. The wait gives up after a while.
#[test]
fn a_second_half_waiting_for_its_firsts_spawn_is_not_served() {
    for on in [true, false] {
        let pool = sequential(WakePolicy::Searching, 1, on);
        let received = no_deadlock("spawn", move || {
            pool.install(|| {
                nested(3, || {
                    let (tx, rx) = std::sync::mpsc::channel();
                    let wait = if on { 500 } else { 20_000 };
                    ember::join(
                        move || {
                            ember::spawn(move || {
                                let _ = tx.send(1u32);
                            })
                        },
                        move || rx.recv_timeout(Duration::from_millis(wait)).ok(),
                    )
                    .1
                })
            })
        });
        if on {
            assert_eq!(received, None, "the spawned job ran before the second half");
        } else {
            assert_eq!(received, Some(1), "without sequential joins it runs first");
        }
    }
}
