//! `Tuning::lazy_joins`: a `join` made while every worker is busy keeps its second half
//! private; the results, the panics and the parallelism are those of an ordinary `join`.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Barrier};

use ember::{Pool, WakePolicy};

mod common;
use common::{fib, no_deadlock, occupy_a_worker, policies};

fn lazy(policy: WakePolicy, threads: usize) -> Pool {
    Pool::builder()
        .threads(threads)
        .wake(policy)
        .tuning(ember::Tuning::new().lazy_joins_unchecked(true))
        .build()
        .unwrap()
}

#[test]
fn results_match_for_every_policy_and_size() {
    common::fork_join_results_match(lazy);
}

/// On an idle pool a `join` offers its half at once (the other workers sleep, so they want
/// work): two halves that each wait for the other to start finish. Kept private, they would
/// deadlock (the watchdog fails the test).
#[test]
fn a_join_on_an_idle_pool_runs_its_halves_in_parallel() {
    for (name, policy) in common::unbiased_policies() {
        let pool = lazy(policy, 2);
        no_deadlock(name, move || {
            let barrier = Barrier::new(2);
            pool.install(|| ember::join(|| barrier.wait(), || barrier.wait()));
        });
    }
}

/// Both workers busy when the `join` is made (so its half stays private); the other worker
/// then frees up and wants work; the forker's next `join` offers the private half, which the
/// free worker takes while the forker blocks on it: it must not wait forever.
#[test]
fn a_private_half_is_offered_once_a_worker_wants_work() {
    let pool = lazy(WakePolicy::Searching, 2);
    let ran_on = Arc::new(AtomicUsize::new(usize::MAX));
    let outcome = {
        let (pool, ran_on) = (pool.clone(), ran_on.clone());
        no_deadlock("offer", move || {
            // Keep worker B busy until the forker has made its private join.
            let release = occupy_a_worker(&pool);
            pool.install(|| {
                let b_ran = AtomicBool::new(false);
                ember::join(
                    || {
                        // B is busy: the half is private. Free B, let it look for work, then
                        // join again (which offers the half) and wait until it has run.
                        release();
                        while !b_ran.load(Ordering::SeqCst) {
                            ember::join(std::thread::yield_now, || ());
                        }
                    },
                    || {
                        ran_on.store(ember::current_thread_index().unwrap(), Ordering::SeqCst);
                        b_ran.store(true, Ordering::SeqCst);
                    },
                );
                ember::current_thread_index().unwrap()
            })
        })
    };
    assert_ne!(
        ran_on.load(Ordering::SeqCst),
        outcome,
        "the half ran on the other worker"
    );
}

/// The case lazy joins once could not serve: the half stays private (the other worker is
/// busy when the `join` is made), and the first half then blocks on it outside ember, so its
/// worker never joins, waits or spawns again to offer it. The other worker, freed, finds no
/// work and steals the private half on its way to sleep (`wake/README.md`, "Private
/// steals"). Without that steal this hangs (the watchdog fails the test). Needs the heavy
/// barrier, which Linux has.
#[cfg(target_os = "linux")]
#[test]
fn a_first_half_blocking_on_its_private_second_half_is_relieved() {
    for (name, policy) in common::unbiased_policies() {
        let pool = lazy(policy, 2);
        no_deadlock(name, move || {
            for _ in 0..20 {
                let release = occupy_a_worker(&pool);
                let (tx, rx) = std::sync::mpsc::channel();
                let (got, ()) = pool.install(|| {
                    ember::join(
                        move || {
                            release();
                            rx.recv().expect("the second half sends")
                        },
                        move || tx.send(7u32).expect("the first half receives"),
                    )
                });
                assert_eq!(got, 7, "{name}");
            }
        });
    }
}

/// Two thieves at once, three workers: the other two workers are kept busy while the
/// forker makes two nested `join`s (both halves private), and are freed together while the
/// inner first half blocks on the inner second half, which the outer second half waits for
/// too. Both thieves read the same `top` before sleeping: one takes the outer half and blocks
/// in it, the other loses that race — and must look again rather than sleep, or the inner
/// half stays private for good (this hung within 150 rounds when a lost race meant sleep).
#[cfg(target_os = "linux")]
#[test]
fn a_thief_that_loses_a_private_steal_looks_again() {
    let rounds: usize = std::env::var("EMBER_STEAL_ROUNDS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(300);
    for (name, policy) in common::unbiased_policies() {
        let pool = lazy(policy, 3);
        no_deadlock(name, move || {
            for _ in 0..rounds {
                let (release_one, release_two) = (occupy_a_worker(&pool), occupy_a_worker(&pool));
                let (tx, rx) = std::sync::mpsc::channel::<()>();
                let (tx2, rx2) = std::sync::mpsc::channel::<()>();
                pool.install(move || {
                    ember::join(
                        move || {
                            ember::join(
                                move || {
                                    release_one();
                                    release_two();
                                    rx.recv().expect("the inner second half sends")
                                },
                                move || {
                                    tx.send(()).expect("the inner first half receives");
                                    tx2.send(()).expect("the outer second half receives");
                                },
                            )
                        },
                        move || rx2.recv().expect("the inner second half sends"),
                    )
                });
            }
        });
    }
}

/// The same race run many times, with nobody kept busy on purpose: a loop of `join`s whose
/// first half waits outside ember for its second, on two workers with lazy joins. Each
/// `join` keeps its half private or offers it depending on whether the other worker wants
/// work at that instant; either way the half must run. `EMBER_BLOCKED_JOINS` sets the count.
#[cfg(target_os = "linux")]
#[test]
fn lazy_joins_blocked_on_their_second_half_all_finish() {
    let joins = common::blocked_join_count();
    for (name, policy) in common::unbiased_policies() {
        let pool = lazy(policy, 2);
        no_deadlock(name, move || {
            pool.install(|| common::blocked_joins(joins, name))
        });
    }
}

#[test]
fn panics_are_re_raised_as_in_an_ordinary_join() {
    let pool = lazy(WakePolicy::Searching, 2);
    for first in [true, false] {
        let caught = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            pool.install(|| {
                ember::join(
                    || {
                        if first {
                            panic!("a")
                        }
                        fib(15)
                    },
                    || {
                        if !first {
                            panic!("b")
                        }
                        fib(15)
                    },
                )
            })
        }));
        assert!(caught.is_err());
    }
    assert_eq!(pool.install(|| fib(20)), 6_765);
}

/// A first half that polls with `yield_now` (or `yield_local`) for its second half's effect
/// finds the half, private or not, as without lazy joins (where the yield pops it from the
/// worker's own deque). On one worker the half is always kept private; it hung before the
/// yield offered private halves.
#[test]
fn a_first_half_yielding_for_its_second_finds_it() {
    for (name, policy) in policies() {
        for local_only in [false, true] {
            let pool = lazy(policy, 1);
            no_deadlock(name, move || {
                pool.install(|| {
                    let set = AtomicBool::new(false);
                    ember::join(
                        || {
                            while !set.load(Ordering::SeqCst) {
                                if local_only {
                                    ember::yield_local();
                                } else {
                                    ember::yield_now();
                                }
                            }
                        },
                        || set.store(true, Ordering::SeqCst),
                    );
                })
            });
        }
    }
}

#[test]
fn a_one_worker_pool_keeps_its_halves_private_unless_told_otherwise() {
    // The second half shows on the deque (the dump's `deque`) while the first runs only
    // where it was offered.
    let deque_in_first_half = |pool: Pool| {
        let dump = pool.install(|| ember::join(|| format!("{:?}", Pool::current()), || ()).0);
        assert!(dump.contains("deque: "), "{dump}");
        dump.contains("deque: 1")
    };
    let one = || Pool::builder().threads(1);
    assert!(!deque_in_first_half(one().build().unwrap()));
    assert!(deque_in_first_half(
        one()
            .tuning(ember::Tuning::new().lazy_joins(false))
            .build()
            .unwrap()
    ));
    assert!(!deque_in_first_half(
        one()
            .tuning(ember::Tuning::new().lazy_joins_unchecked(true))
            .build()
            .unwrap()
    ));
}

/// A second half that blocks (outside ember) on a job its first half spawned: without lazy
/// joins the spawned job is above the half on the deque and runs first, so this works even on
/// one worker; a private half must keep that order, whether the first half then returns or
/// waits through ember first (here, on another pool).
#[test]
fn a_private_half_runs_after_what_its_first_half_spawned() {
    for lazy in [None, Some(true), Some(false)] {
        for wait_in_a in [false, true] {
            no_deadlock(
                &format!("one worker, lazy_joins {lazy:?}, first half waits: {wait_in_a}"),
                move || {
                    let mut builder = Pool::builder().threads(1);
                    if let Some(lazy) = lazy {
                        builder = builder.tuning(ember::Tuning::new().lazy_joins_unchecked(lazy));
                    }
                    let pool = builder.build().unwrap();
                    let other = Pool::builder().threads(1).build().unwrap();
                    let (tx, rx) = std::sync::mpsc::channel();
                    let (_, received) = pool.install(|| {
                        ember::join(
                            move || {
                                ember::spawn(move || tx.send(7).unwrap());
                                if wait_in_a {
                                    other.install(|| ());
                                }
                            },
                            move || rx.recv().unwrap(),
                        )
                    });
                    assert_eq!(received, 7);
                },
            );
        }
    }
}

/// The same order on two workers. Halves `b1` and `b2` are kept private while the other
/// worker is busy; it then frees up (wants work), and inside `a2` a nested `join` offers the
/// private halves and pushes `b3`, and its first half spawns `J`. The worker must run `J` and
/// `b3`, return to `a2`, and only then `b2`: `b2` waits for what `a2` sends after that nested
/// `join`. Offering only the oldest private half left `b2` above `b3` on the deque, to be run
/// nested inside `a2`, which then waited for it for ever. (On a machine so loaded that the
/// other worker is not yet counted as wanting work after 50 ms, the halves stay private and
/// the test passes without reaching that path: it can miss the bug, never report a false one.)
#[test]
fn offered_halves_keep_their_order_on_several_workers() {
    use std::time::Duration;
    for lazy in [true, false] {
        no_deadlock(&format!("two workers, lazy_joins({lazy})"), move || {
            let pool = Pool::builder()
                .threads(2)
                .tuning(ember::Tuning::new().lazy_joins_unchecked(lazy))
                .build()
                .unwrap();
            // Keeps the other worker busy until `a2` starts.
            let release = occupy_a_worker(&pool);
            pool.install(|| {
                let end = AtomicBool::new(false);
                let (tx, rx) = std::sync::mpsc::channel::<()>();
                ember::join(
                    || {
                        ember::join(
                            || {
                                release();
                                // Long enough for the other worker to want work.
                                std::thread::sleep(Duration::from_millis(50));
                                ember::join(|| ember::spawn(|| ()), || ());
                                tx.send(()).unwrap();
                            },
                            move || rx.recv().unwrap(),
                        );
                        end.store(true, Ordering::SeqCst);
                    },
                    // `b1`, taken by the other worker: it holds that worker until the end.
                    || {
                        while !end.load(Ordering::SeqCst) {
                            std::thread::sleep(Duration::from_millis(1));
                        }
                    },
                );
            });
        });
    }
}

/// A chain of `depth` nested joins whose innermost first half spawns a job: the spawn offers
/// every private half at once, oldest first. Each second half counts its runs in `runs`; the
/// one at `panic_at` panics. Returns the number of second halves that returned.
fn chain_offered_by_a_spawn(
    level: usize,
    depth: usize,
    runs: &Arc<Vec<AtomicUsize>>,
    spawned: &Arc<AtomicUsize>,
    panic_at: Option<usize>,
) -> usize {
    if level == depth {
        let spawned = spawned.clone();
        ember::spawn(move || {
            spawned.fetch_add(1, Ordering::SeqCst);
        });
        return 0;
    }
    let (inner, this) = ember::join(
        || chain_offered_by_a_spawn(level + 1, depth, runs, spawned, panic_at),
        || {
            runs[level].fetch_add(1, Ordering::SeqCst);
            assert_ne!(
                Some(level),
                panic_at,
                "the second half at level {level} panics"
            );
            1
        },
    );
    inner + this
}

/// Deep private lists (past any initial capacity of the list) offered all together by a
/// spawn: every second half runs exactly once, with one worker and with two, with or
/// without a panic half-way down.
#[test]
fn every_offered_half_runs_exactly_once() {
    no_deadlock("deep private lists offered by a spawn", || {
        for threads in [1, 2] {
            for depth in [10, 63, 64, 65, 300] {
                let pool = lazy(WakePolicy::default(), threads);
                let spawned = Arc::new(AtomicUsize::new(0));
                let runs = Arc::new((0..depth).map(|_| AtomicUsize::new(0)).collect::<Vec<_>>());
                for _ in 0..20 {
                    let done =
                        pool.install(|| chain_offered_by_a_spawn(0, depth, &runs, &spawned, None));
                    assert_eq!(done, depth);
                }
                pool.wait_idle();
                assert_eq!(spawned.load(Ordering::SeqCst), 20);
                assert!(runs.iter().all(|r| r.load(Ordering::SeqCst) == 20));

                let runs = Arc::new((0..depth).map(|_| AtomicUsize::new(0)).collect::<Vec<_>>());
                let panicked = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                    pool.install(|| {
                        chain_offered_by_a_spawn(0, depth, &runs, &spawned, Some(depth / 2))
                    })
                }));
                assert!(panicked.is_err());
                assert!(runs.iter().all(|r| r.load(Ordering::SeqCst) == 1));
            }
        }
    });
}
