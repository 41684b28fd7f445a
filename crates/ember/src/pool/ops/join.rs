//! Fork-join: run two closures, potentially in parallel, and wait for both.
//!
//! On a worker, `b` is pushed on the worker's own deque, with the wake-up check of every push
//! (ordered after the push under Eager and Searching, since `a` may block on `b`: a light
//! barrier under Searching, a fence under Eager; `wake/README.md`, "Pushing" and "Light
//! pushes"), and `a` runs at once. Afterwards the worker pops `b` back if nobody stole it
//! (the common case), else runs other jobs until the thief sets `b`'s latch. Called from
//! outside the pool, the whole `join` moves onto a worker and the caller blocks until it is
//! done.
//!
//! A panic in either closure is re-raised only after the other one finished: `b` may borrow
//! from the caller's frame, which must outlive it. If both panic, the first (`a`'s) is
//! re-raised and the other is reported (`unwind.rs`); if one panics, the other's value is
//! dropped before the re-raise (or, for a `b` run inline, while it unwinds), a panic of that
//! drop reported. A `b` popped back and run inline is not wrapped in `catch_unwind` (as in
//! rayon): nothing else refers to the frame then, so its panic may unwind straight through.
//!
//! A `b` taken back runs where it lies in the frame, and its job is then forgotten, not
//! dropped. Copying the job out would stall on the stores that just built it, behind any
//! older cache miss. Its drop would check fields nothing can have set
//! (`StackJob::run_inline` and `forget_run_inline`).

use std::panic::{self, AssertUnwindSafe};
use std::sync::Arc;

use crate::pool::jobs::job::{JobRef, Panic, StackJob};
use crate::pool::jobs::latch::{Latch, Waiter};
use crate::pool::jobs::unwind::{guarded_frame, AbortOnUnwind, DropContainedOnUnwind};
use crate::pool::workers::registry::Registry;
use crate::pool::workers::worker::{in_worker, WorkerThread};

/// After `a`: whether `b` came back to this frame, popped off the deque before anybody took
/// it (`true`), or ran elsewhere and its latch is set (`false`). It takes `b`'s latch, not
/// its job: the job must stay where it is while a thief may point into it. The common case,
/// `b` still on top, stays inline; the rest is `take_back_slow`, out of line, so that its loop
/// does not weigh on every `join`'s frame.
#[inline(always)]
fn take_back(worker: &WorkerThread, latch: &Latch<'_>, job_b_ref: JobRef) -> bool {
    !latch.probe()
        && match worker.pop_local() {
            Some(job) if job == job_b_ref => true,
            popped => take_back_slow(worker, latch, job_b_ref, popped),
        }
}

/// The rest of `take_back` once the worker's first pop after `a` did not give `b`
/// back (`popped`: another job, or nothing): runs what it pops until it pops `b` back
/// (returns `true`), or until `b`'s latch is set by whoever ran it (`false`). With its own
/// deque empty it waits like any worker (`wait_until`): it offers its private halves, steals,
/// and sleeps only when there is nothing to run.
#[inline(never)]
fn take_back_slow(
    worker: &WorkerThread,
    latch: &Latch<'_>,
    job_b_ref: JobRef,
    mut popped: Option<JobRef>,
) -> bool {
    loop {
        match popped {
            Some(job) if job == job_b_ref => return true,
            // Something `a` spawned and left above `b`; it runs here as it would have
            // anyway. It may have released successors (delay-kick): they go to thieves
            // before user code runs again.
            Some(job) => {
                worker.run_job(job);
                worker.check_idle();
                worker.kick_held();
            }
            None => {
                worker.wait_until(latch);
                return false;
            }
        }
        if latch.probe() {
            return false;
        }
        popped = worker.pop_local();
    }
}

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
#[inline]
pub(in crate::pool) fn join_on_worker<A, B, RA, RB>(worker: &WorkerThread, a: A, b: B) -> (RA, RB)
where
    A: FnOnce() -> RA + Send,
    B: FnOnce() -> RB + Send,
    RA: Send,
    RB: Send,
{
    // Two bodies rather than one with a test inside: the default one stays as lean as it was.
    if worker.lazy.on() {
        join_with_private_half(worker, a, b)
    } else {
        join_with_public_half(worker, a, b)
    }
}

/// The job for `b` in `worker`'s frame: `b` is set by a thief on this worker's own pool.
#[inline(always)]
fn job_for<'r, B, RB>(worker: &'r WorkerThread, b: B) -> StackJob<'r, B, RB>
where
    B: FnOnce() -> RB + Send,
    RB: Send,
{
    StackJob::new(
        b,
        Latch::new(Waiter::Worker {
            registry: &worker.registry,
            index: worker.index,
        }),
    )
}

/// `join` offering `b` to thieves on the worker's deque at once.
#[inline(always)]
fn join_with_public_half<A, B, RA, RB>(worker: &WorkerThread, a: A, b: B) -> (RA, RB)
where
    A: FnOnce() -> RA + Send,
    B: FnOnce() -> RB + Send,
    RA: Send,
    RB: Send,
{
    let mut job_b = job_for(worker, b);
    // From the push below until `b` has run, a thief may hold a pointer into this frame: an
    // unwind out of it would free `job_b` under the thief. Every closure run here catches its
    // panics, so that is a bug in ember, and the guard aborts on it.
    let guard = AbortOnUnwind::<JoinFrame>::new();
    // SAFETY: `job_b` stays in this frame, unmoved, until it has run: `take_back` either
    // pops its ref back, to be run inline, or waits for its latch, and the guard above stops
    // an unwind from leaving earlier.
    let job_b_ref = unsafe { job_b.as_job_ref() };
    worker.push_join_half_light(job_b_ref);
    let result_a = panic::catch_unwind(AssertUnwindSafe(a));
    let taken_back = take_back(worker, job_b.latch(), job_b_ref);
    guard.disarm();
    if taken_back {
        let both = run_b_here(&worker.registry, result_a, &mut job_b);
        job_b.forget_run_inline();
        return both;
    }
    finish(&worker.registry, result_a, job_b.into_result())
}

/// `join` with lazy joins (`worker.rs`, "Lazy joins"): `b` stays on the worker's private
/// list while no worker wants work, and is offered to thieves only if one does.
#[inline(always)]
fn join_with_private_half<A, B, RA, RB>(worker: &WorkerThread, a: A, b: B) -> (RA, RB)
where
    A: FnOnce() -> RA + Send,
    B: FnOnce() -> RB + Send,
    RA: Send,
    RB: Send,
{
    if worker.lazy.join_in_sequence(&worker.registry) {
        // Two calls, `a` then `b` (`Tuning::sequential_joins_unchecked`), with the panics of any
        // `join`.
        return run_b_after(
            &worker.registry,
            panic::catch_unwind(AssertUnwindSafe(a)),
            b,
        );
    }
    let mut job_b = job_for(worker, b);
    // As in `join_with_public_half`: a private half may be offered on the deque, and then
    // taken by a thief, while `a` runs.
    let guard = AbortOnUnwind::<JoinFrame>::new();
    // SAFETY: as in `join_with_public_half`; a half still private when `a` returns is taken
    // back below and run here.
    let job_b_ref = unsafe { job_b.as_job_ref() };
    let private = worker.keep_or_push_join_half(job_b_ref);
    let result_a = panic::catch_unwind(AssertUnwindSafe(a));
    // Taken back from the private list if it was never offered; if it was, it is on the
    // deque or with a thief, as a public half.
    let taken_back = (private && worker.lazy.take_back(&worker.registry, job_b_ref))
        || take_back(worker, job_b.latch(), job_b_ref);
    guard.disarm();
    if taken_back {
        let both = run_b_here(&worker.registry, result_a, &mut job_b);
        job_b.forget_run_inline();
        return both;
    }
    finish(&worker.registry, result_a, job_b.into_result())
}

/// Runs `b`, taken back before anybody else could run it, on this thread, and returns both
/// results (or re-raises the first panic). `job_b`'s `JobRef` must have been taken back out
/// of every queue (`take_back`, `pop_private`).
#[inline(always)]
fn run_b_here<B, RA, RB>(
    registry: &Registry,
    result_a: std::thread::Result<RA>,
    job_b: &mut StackJob<'_, B, RB>,
) -> (RA, RB)
where
    B: FnOnce() -> RB + Send,
    RB: Send,
{
    // SAFETY: the caller took `job_b`'s ref back before anybody executed it.
    run_b_after(registry, result_a, || unsafe { job_b.run_inline() })
}

/// Runs `b` on this thread after `a` gave `result_a`, and returns both results (or re-raises
/// the first panic, once `b` has run).
#[inline(always)]
fn run_b_after<RA, RB>(
    registry: &Registry,
    result_a: std::thread::Result<RA>,
    b: impl FnOnce() -> RB,
) -> (RA, RB) {
    match result_a {
        // The common case. `b` runs uncaught: a panic of it unwinds from here, and `a`'s
        // value, dropped on the way, has a panic of its `Drop` contained.
        Ok(value_a) => {
            let value_a = DropContainedOnUnwind::new(value_a, registry);
            let value_b = b();
            (value_a.into_inner(), value_b)
        }
        Err(payload) => {
            let result_b = panic::catch_unwind(AssertUnwindSafe(b));
            reraise(registry, Err::<RA, _>(payload), result_b)
        }
    }
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
    match result {
        Ok(value) => registry.drop_reporting(value),
        Err(payload) => registry.report_panic(payload),
    }
}
