//! Panics of user code outside the closures themselves — `Drop` of results, of captured values
//! of cancelled tasks, of panic payloads, panic handlers — never kill a worker or unwind
//! through the pool: each is caught, counted in `stats().panics` and passed to the panic
//! handler, and the pool goes on working.
//!
//! Every test uses one-worker pools, where a dead worker is a dead pool: the last step of
//! each runs a job and waits for it under a deadlock watchdog. Each test's comment says how it
//! failed on the pool before panic containment (commit 1540555): a dead worker (the watchdog
//! fires), an aborted process, or a panic that was not counted.

use std::any::Any;
use std::panic::{self, AssertUnwindSafe};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{mpsc, Arc};

use ember::{Pool, TaskError};

mod common;
use common::{no_deadlock, policies};

/// Panics when dropped (once: the payload it panics with is a plain string).
struct PanicsOnDrop(&'static str);

impl Drop for PanicsOnDrop {
    fn drop(&mut self) {
        if !std::thread::panicking() {
            panic!("{}", self.0);
        }
    }
}

/// Panics whenever dropped, even while another panic unwinds: a panic payload whose own
/// `Drop` panics, or a value dropped during an unwind.
struct AlwaysPanicsOnDrop;

impl Drop for AlwaysPanicsOnDrop {
    fn drop(&mut self) {
        panic!("an AlwaysPanicsOnDrop was dropped");
    }
}

/// A one-worker pool whose panic handler counts the payloads it receives.
fn counted_pool(policy: ember::WakePolicy) -> (Pool, Arc<AtomicUsize>) {
    let handled = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&handled);
    let pool = Pool::builder()
        .threads(1)
        .wake(policy)
        .panic_handler(move |_payload| {
            counter.fetch_add(1, Ordering::SeqCst);
        })
        .build()
        .expect("valid configuration");
    (pool, handled)
}

/// The pool still runs a job: a dead worker makes this hang (the watchdog fails the test).
fn still_works(name: &str, pool: &Pool) {
    let (tx, rx) = mpsc::channel();
    pool.spawn(move || tx.send(()).unwrap());
    let pool = pool.clone();
    no_deadlock(name, move || {
        rx.recv().expect("the job ran");
        pool.wait_idle();
    });
}

/// The `Drop` of a task's result, its handle dropped early, runs on the worker when the job
/// lets go of the task. Died before: the panic unwound through the worker loop.
#[test]
fn a_panicking_result_drop_does_not_kill_the_worker() {
    for (name, policy) in policies() {
        let (pool, handled) = counted_pool(policy);
        let gate = pool.event();
        let task = pool
            .task(|| PanicsOnDrop("result dropped"))
            .after(&[&gate])
            .spawn();
        drop(task);
        gate.complete();
        still_works(name, &pool);
        assert_eq!(pool.stats().panics, 1, "{name}");
        assert_eq!(handled.load(Ordering::SeqCst), 1, "{name}");
    }
}

/// The same inside a `join`: the task is pushed above the join's second half, runs in the
/// join's loop, and its result is dropped there. Aborted before: the unwind left the join's
/// frame while its second half was still in the deque.
#[test]
fn a_panicking_result_drop_inside_a_join_does_not_unwind_the_join() {
    for (name, policy) in policies() {
        let (pool, handled) = counted_pool(policy);
        let inner = pool.clone();
        let (a, b) = pool.join(
            move || {
                drop(
                    inner
                        .task(|| PanicsOnDrop("result dropped in a join"))
                        .spawn(),
                );
                1
            },
            || 2,
        );
        assert_eq!((a, b), (1, 2), "{name}");
        still_works(name, &pool);
        assert_eq!(pool.stats().panics, 1, "{name}");
        assert_eq!(handled.load(Ordering::SeqCst), 1, "{name}");
    }
}

/// A cancelled task's closure is dropped unrun where the cancellation happens: on the worker
/// whose task panicked, and on the thread that drops an event. Died before (on the worker),
/// and the panic escaped `Event::drop` into user code, leaving later tasks unended.
#[test]
fn a_cancelled_closure_whose_captures_panic_on_drop_is_contained() {
    for (name, policy) in policies() {
        let (pool, handled) = counted_pool(policy);
        // On the worker: the input panics, so its dependent is cancelled there.
        let input = pool.task(|| -> u32 { panic!("input failed") }).spawn();
        let charge = PanicsOnDrop("captured value of a cancelled task");
        let dependent = pool
            .task(move || {
                drop(charge);
            })
            .after(&[&input])
            .spawn();
        assert!(
            matches!(dependent.join(), Err(TaskError::Cancelled)),
            "{name}"
        );
        // On this thread: an event dropped uncompleted cancels its dependent here.
        let event = pool.event();
        let charge = PanicsOnDrop("captured value cancelled by a dropped event");
        let second = pool.task(move || drop(charge)).after(&[&event]).spawn();
        drop(event);
        assert!(matches!(second.join(), Err(TaskError::Cancelled)), "{name}");
        drop(input);
        still_works(name, &pool);
        // The input's own panic, and the two drops.
        assert_eq!(pool.stats().panics, 3, "{name}");
        assert_eq!(handled.load(Ordering::SeqCst), 2, "{name}");
    }
}

/// A spawned job panics with a payload whose `Drop` panics, on a pool without a handler
/// (which drops the payload). Died before.
#[test]
fn a_panicking_payload_drop_does_not_kill_the_worker() {
    for (name, policy) in policies() {
        let pool = common::pool(policy, 1);
        pool.spawn(|| panic::panic_any(AlwaysPanicsOnDrop));
        still_works(name, &pool);
        // The job's panic, and its payload's.
        assert_eq!(pool.stats().panics, 2, "{name}");
    }
}

/// A panic handler that panics itself: counted, and the worker lives on. Before, the
/// handler's own panic was not counted.
#[test]
fn a_panicking_handler_is_counted_and_dropped() {
    for (name, policy) in policies() {
        let pool = Pool::builder()
            .threads(1)
            .wake(policy)
            .panic_handler(|_payload| panic!("the handler panicked"))
            .build()
            .unwrap();
        pool.spawn(|| panic!("a job panicked"));
        still_works(name, &pool);
        assert_eq!(pool.stats().panics, 2, "{name}");
    }
}

/// Both halves of a `join` panic, the second with a payload whose `Drop` panics: `join`
/// re-raises the first; the second is reported, its drop's panic too, and nothing runs while
/// the first unwinds. Aborted the process before ("panic in a destructor during cleanup").
#[test]
fn join_reports_the_second_panic_before_re_raising_the_first() {
    for (name, policy) in policies() {
        let (pool, handled) = counted_pool(policy);
        let caught = panic::catch_unwind(AssertUnwindSafe(|| {
            pool.join(
                || -> u32 { panic!("first") },
                || -> u32 { panic::panic_any(AlwaysPanicsOnDrop) },
            )
        }));
        let payload: Box<dyn Any + Send> = caught.expect_err("join re-raises");
        assert_eq!(payload.downcast_ref::<&str>(), Some(&"first"), "{name}");
        still_works(name, &pool);
        // The handler got the second payload; dropping it there panicked again.
        assert_eq!(handled.load(Ordering::SeqCst), 1, "{name}");
        assert_eq!(pool.stats().panics, 2, "{name}");
    }
}

/// One half of a `join` panics; the other returns a value whose `Drop` panics, even during
/// an unwind: the value is dropped (while the panic unwinds, or before the re-raise), its
/// drop's panic contained and reported, and the first panic reaches the caller. Aborted the
/// process before ("panic in a destructor during cleanup").
#[test]
fn join_contains_the_drop_of_the_other_value() {
    for (name, policy) in policies() {
        let (pool, handled) = counted_pool(policy);
        for b_panics in [true, false] {
            let caught = panic::catch_unwind(AssertUnwindSafe(|| {
                if b_panics {
                    pool.join(|| AlwaysPanicsOnDrop, || -> u32 { panic!("second") });
                } else {
                    pool.join(|| -> u32 { panic!("first") }, || AlwaysPanicsOnDrop);
                }
            }));
            assert!(caught.is_err(), "{name}");
        }
        still_works(name, &pool);
        assert_eq!(handled.load(Ordering::SeqCst), 2, "{name}");
        assert_eq!(pool.stats().panics, 2, "{name}");
    }
}

/// Several jobs of a scope panic, with payloads whose `Drop` panics: the scope re-raises one,
/// the others are reported. Died or aborted before.
#[test]
fn scope_reports_the_panics_it_does_not_re_raise() {
    for (name, policy) in policies() {
        let (pool, handled) = counted_pool(policy);
        let caught = panic::catch_unwind(AssertUnwindSafe(|| {
            pool.scope(|s| {
                for _ in 0..3 {
                    s.spawn(|_| panic::panic_any(AlwaysPanicsOnDrop));
                }
            })
        }));
        let payload = caught.expect_err("scope re-raises");
        // The re-raised payload is ours to drop: its Drop panics, so let it go.
        std::mem::forget(payload);
        still_works(name, &pool);
        // Two payloads reported to the handler, each of whose drop panicked again there.
        assert_eq!(handled.load(Ordering::SeqCst), 2, "{name}");
        assert_eq!(pool.stats().panics, 4, "{name}");
    }
}

/// Chunks of a `parallel_for` (from outside: the caller takes part) panic with payloads whose
/// `Drop` panics: one is re-raised, the others reported.
#[test]
fn parallel_for_reports_the_panics_it_does_not_re_raise() {
    for (name, policy) in policies() {
        let (pool, handled) = counted_pool(policy);
        let caught = panic::catch_unwind(AssertUnwindSafe(|| {
            pool.parallel_for(0..4, 1, |_| panic::panic_any(AlwaysPanicsOnDrop));
        }));
        std::mem::forget(caught.expect_err("parallel_for re-raises"));
        still_works(name, &pool);
        assert_eq!(handled.load(Ordering::SeqCst), 3, "{name}");
        assert_eq!(pool.stats().panics, 6, "{name}");
    }
}

/// A broadcast whose job panics, and whose closure owns a value whose `Drop` panics: the
/// closure is dropped (its panic reported) before the job's panic is re-raised. Aborted
/// before: the closure was dropped while the re-raised panic unwound.
#[test]
fn a_broadcast_closure_dropped_after_a_job_panic_is_contained() {
    for (name, policy) in policies() {
        let (pool, handled) = counted_pool(policy);
        let captured = AlwaysPanicsOnDrop;
        let caught = panic::catch_unwind(AssertUnwindSafe(|| {
            pool.broadcast(move |_| {
                let _owned = &captured;
                panic!("a broadcast job panicked")
            })
        }));
        let payload = caught.expect_err("broadcast re-raises the job's panic");
        assert_eq!(
            payload.downcast_ref::<&str>().copied(),
            Some("a broadcast job panicked"),
            "{name}"
        );
        still_works(name, &pool);
        assert_eq!(handled.load(Ordering::SeqCst), 1, "{name}");
        assert_eq!(pool.stats().panics, 1, "{name}");
    }
}

/// The same for `parallel_for`: its closure, owning a value whose `Drop` panics, is dropped
/// before a chunk's panic is re-raised. Aborted before.
#[test]
fn a_parallel_for_closure_dropped_after_a_chunk_panic_is_contained() {
    for (name, policy) in policies() {
        let (pool, handled) = counted_pool(policy);
        let captured = AlwaysPanicsOnDrop;
        let caught = panic::catch_unwind(AssertUnwindSafe(|| {
            pool.parallel_for(0..4, 1, move |i| {
                let _owned = &captured;
                if i == 2 {
                    panic!("a chunk panicked");
                }
            })
        }));
        assert!(caught.is_err(), "{name}: parallel_for re-raises");
        still_works(name, &pool);
        assert_eq!(handled.load(Ordering::SeqCst), 1, "{name}");
        assert_eq!(pool.stats().panics, 1, "{name}");
    }
}
