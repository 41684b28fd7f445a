//! Fork-join: run two closures, potentially in parallel, and wait for both.
//!
//! On a worker, `b` is pushed on the worker's own deque and `a` runs at once. Afterwards the
//! worker pops `b` back if nobody stole it (the common case: no synchronisation beyond the
//! deque), else runs other jobs until the thief sets `b`'s latch. Called from outside the
//! pool, the whole `join` moves onto a worker and the caller blocks until it is done.
//!
//! A panic in either closure is re-raised only after the other one finished: `b` may borrow
//! from the caller's frame, which must outlive it. If both panic, the first (`a`'s) is
//! re-raised and the other is reported (`unwind.rs`); if one panics, the other's value is
//! dropped before the re-raise (or, for a `b` run inline, while it unwinds), a panic of that
//! drop reported. A `b` popped back and run inline is not wrapped in `catch_unwind` (as in
//! rayon): nothing else refers to the frame then, so its panic may unwind straight through.

use std::panic::{self, AssertUnwindSafe};
use std::sync::Arc;

use super::job::{Panic, StackJob};
use super::latch::{Latch, Waiter};
use super::registry::Registry;
use super::unwind::{drop_catching, guarded_frame, AbortOnUnwind, DropContainedOnUnwind};
use super::worker::{in_worker, WorkerThread};

guarded_frame!(
    JoinFrame,
    "a join (its second half may be running on a thief)"
);

pub(crate) fn join<A, B, RA, RB>(registry: &Arc<Registry>, a: A, b: B) -> (RA, RB)
where
    A: FnOnce() -> RA + Send,
    B: FnOnce() -> RB + Send,
    RA: Send,
    RB: Send,
{
    in_worker(registry, |worker| join_on_worker(worker, a, b))
}

/// `join` on `worker`, this thread's: the fast path every `join` from inside a pool takes.
pub(super) fn join_on_worker<A, B, RA, RB>(worker: &WorkerThread, a: A, b: B) -> (RA, RB)
where
    A: FnOnce() -> RA + Send,
    B: FnOnce() -> RB + Send,
    RA: Send,
    RB: Send,
{
    let job_b = StackJob::new(
        b,
        Latch::new(Waiter::Worker {
            registry: &worker.registry,
            index: worker.index,
        }),
    );
    // From the push below until `b` has run, a thief may hold a pointer into this frame: an
    // unwind out of it would free `job_b` under the thief. Every closure run here catches its
    // panics, so that is a bug in ember, and the guard aborts on it.
    let guard = AbortOnUnwind::<JoinFrame>::new();
    // SAFETY: `job_b` stays in this frame, unmoved, until it has run: below we either pop
    // its ref back and run it inline, or wait for its latch, and the guard above stops an
    // unwind from leaving earlier.
    let job_b_ref = unsafe { job_b.as_job_ref() };
    worker.push(job_b_ref);

    let result_a = panic::catch_unwind(AssertUnwindSafe(a));

    loop {
        if job_b.latch().probe() {
            break;
        }
        match worker.pop_local() {
            Some(job) if job == job_b_ref => {
                // Nobody else has `b`: the frame is ours alone again.
                guard.disarm();
                return match result_a {
                    // The common case. `b` runs uncaught: a panic of it unwinds from here, and
                    // `a`'s value, dropped on the way, has a panic of its `Drop` contained.
                    Ok(value_a) => {
                        let value_a = DropContainedOnUnwind::new(value_a, &worker.registry);
                        let value_b = job_b.run_inline();
                        (value_a.into_inner(), value_b)
                    }
                    Err(payload) => {
                        let result_b = panic::catch_unwind(AssertUnwindSafe(|| job_b.run_inline()));
                        reraise(&worker.registry, Err::<RA, _>(payload), result_b)
                    }
                };
            }
            // Something `a` spawned and left above `b`; it runs here as it would have anyway.
            // It may have released successors (delay-kick): they go to thieves before user
            // code runs again.
            Some(job) => {
                worker.run_job(job);
                worker.check_idle();
                worker.kick_held();
            }
            None => {
                worker.wait_until(job_b.latch());
                break;
            }
        }
    }
    guard.disarm();
    finish(&worker.registry, result_a, job_b.into_result())
}

/// Both results, or the first panic re-raised.
#[inline]
fn finish<RA, RB>(
    registry: &Registry,
    result_a: std::thread::Result<RA>,
    result_b: std::thread::Result<RB>,
) -> (RA, RB) {
    match (result_a, result_b) {
        (Ok(a), Ok(b)) => (a, b),
        (result_a, result_b) => reraise(registry, result_a, result_b),
    }
}

/// Re-raises the first panic of a `join`. What the other side left — its value or its own
/// panic — is dropped first, with any panic of that drop reported (`unwind.rs`), so that no
/// user `Drop` runs while this unwinds (a panic there would abort).
#[cold]
#[inline(never)]
fn reraise<RA, RB>(
    registry: &Registry,
    result_a: std::thread::Result<RA>,
    result_b: std::thread::Result<RB>,
) -> ! {
    match (result_a, result_b) {
        (Err(payload), other) => {
            discard(registry, other);
            panic::resume_unwind(payload)
        }
        (Ok(value), Err(payload)) => {
            discard(registry, Ok::<RA, Panic>(value));
            panic::resume_unwind(payload)
        }
        (Ok(_), Ok(_)) => unreachable!("reraise is called with a panic"),
    }
}

/// Drops the result of a `join` half nobody will see: a value (whose drop may panic) or a
/// second panic, reported either way.
fn discard<R>(registry: &Registry, result: std::thread::Result<R>) {
    let payload = match result {
        Ok(value) => drop_catching(value),
        Err(payload) => Some(payload),
    };
    if let Some(payload) = payload {
        registry.report_panic(payload);
    }
}
