//! Jobs: what the queues carry.
//!
//! A queue holds [`JobRef`]s, two words each: a pointer to the job's data and the function that
//! runs it. Two kinds of job stand behind them:
//!
//! * [`StackJob`] lives in the stack frame of a `join` that waits for it, so forking costs no
//!   allocation. Its result (or panic) is written back into the frame, then a [`Latch`] is set.
//! * [`HeapJob`] is on the heap and owns its closure; `spawn` and `Scope::spawn` use it. It
//!   lives in a block a worker reuses (`jobs/cache.rs`) when its closure fits one.
//!
//! Type erasure is the one unsafe thing here: a `JobRef` outlives the borrow checker's view of
//! the job, so each constructor states who keeps the job alive until it has run.

use std::any::Any;
use std::cell::UnsafeCell;
use std::mem::ManuallyDrop;
use std::panic::{self, AssertUnwindSafe};
use std::ptr::NonNull;

use crate::pool::jobs::cache;
use crate::pool::jobs::latch::Latch;
use crate::pool::ops::wait_idle;
use crate::pool::workers::registry::{Registry, WorkerCounters};
use crate::pool::workers::worker::WorkerThread;

/// The payload of a caught panic.
pub(crate) type Panic = Box<dyn Any + Send + 'static>;

/// Who runs a job: the registry it came from, the index of the worker running it, and that
/// worker's counters (found once per job, not at each count).
#[derive(Clone, Copy)]
pub(crate) struct Runner<'r> {
    pub(crate) registry: &'r Registry,
    pub(crate) worker: usize,
    pub(crate) counters: &'r WorkerCounters,
}

impl<'r> Runner<'r> {
    /// A runner for worker `worker` of `registry` (workers make theirs from the counters they
    /// hold, `WorkerThread::counters`).
    #[cfg(all(test, loom))]
    pub(crate) fn new(registry: &'r Registry, worker: usize) -> Self {
        Runner {
            registry,
            worker,
            counters: &registry.counters[worker],
        }
    }

    /// The job about to start is a counted task (`wait_idle.rs`).
    #[inline]
    pub(crate) fn start_counted(self) {
        wait_idle::start_counted(self.counters);
    }

    /// The job about to start is not a counted task: a check point (`wait_idle.rs`).
    #[inline]
    pub(crate) fn start_uncounted(self) {
        self.registry.check_idle(self.counters);
    }
}

/// Something that can be run once through a raw pointer.
pub(crate) trait Job {
    /// # Safety
    /// `this` must point to a live job that has not run yet; it is run at most once.
    unsafe fn execute(this: *const Self, runner: Runner<'_>);
}

/// A type-erased pointer to a job, as the queues hold it. Two refs are equal when they point
/// to the same job.
#[derive(Clone, Copy, Debug)]
pub(crate) struct JobRef {
    data: *const (),
    execute: unsafe fn(*const (), Runner<'_>),
}

impl PartialEq for JobRef {
    fn eq(&self, other: &Self) -> bool {
        self.data == other.data
    }
}

impl Eq for JobRef {}

// SAFETY: a JobRef is built only from jobs whose closures and results are `Send` (see the
// bounds on `StackJob::as_job_ref` and `HeapJobBox::into_job_ref`), so running it on another
// thread is what those bounds allow.
unsafe impl Send for JobRef {}

impl JobRef {
    /// # Safety
    /// The job at `data` must stay alive, and unmoved, until this `JobRef` has been executed.
    pub(crate) unsafe fn new<J: Job>(data: *const J) -> JobRef {
        unsafe fn run<J: Job>(data: *const (), runner: Runner<'_>) {
            // SAFETY: `data` was a `*const J` when this JobRef was made (see `JobRef::new`).
            unsafe { J::execute(data.cast::<J>(), runner) }
        }
        JobRef {
            data: data.cast(),
            execute: run::<J>,
        }
    }

    /// The two words of the ref, for a queue that keeps them in atomics
    /// (`private_halves.rs`).
    pub(crate) fn into_raw(self) -> (*mut (), *mut ()) {
        (self.data.cast_mut(), self.execute as *mut ())
    }

    /// The ref [`into_raw`](Self::into_raw) gave the two words of.
    ///
    /// # Safety
    /// `data` and `execute` must be the two words of one `into_raw` call.
    pub(crate) unsafe fn from_raw(data: *mut (), execute: *mut ()) -> JobRef {
        JobRef {
            data: data.cast_const(),
            // SAFETY: `execute` was a function pointer of exactly this type before `into_raw`
            // cast it (the caller's promise), and function pointers round-trip through
            // `*mut ()` on every platform Rust supports.
            execute: unsafe {
                std::mem::transmute::<*mut (), unsafe fn(*const (), Runner<'_>)>(execute)
            },
        }
    }

    /// Runs the job.
    ///
    /// # Safety
    /// Each `JobRef` is executed at most once (the queues hand every pushed ref to exactly one
    /// taker).
    pub(crate) unsafe fn execute(self, runner: Runner<'_>) {
        // SAFETY: forwarded from the caller; liveness was promised by the constructor's caller.
        unsafe { (self.execute)(self.data, runner) }
    }
}

/// What a `StackJob` produced.
enum JobResult<R> {
    Pending,
    Ok(R),
    Panicked(Panic),
}

/// A job in the frame of the `join` that waits for it.
pub(crate) struct StackJob<'r, F, R> {
    latch: Latch<'r>,
    func: UnsafeCell<Option<F>>,
    result: UnsafeCell<JobResult<R>>,
}

impl<'r, F, R> StackJob<'r, F, R>
where
    F: FnOnce() -> R + Send,
    R: Send,
{
    #[inline]
    pub(crate) fn new(func: F, latch: Latch<'r>) -> Self {
        StackJob {
            latch,
            func: UnsafeCell::new(Some(func)),
            result: UnsafeCell::new(JobResult::Pending),
        }
    }

    /// # Safety
    /// The caller must not move, drop or mutably borrow `self` (as
    /// [`run_inline`](Self::run_inline) and [`forget_run_inline`](Self::forget_run_inline) do)
    /// until the `JobRef` has been executed or taken back out of every queue (and then never
    /// executes it).
    pub(crate) unsafe fn as_job_ref(&self) -> JobRef {
        // SAFETY: forwarded from the caller's promise.
        unsafe { JobRef::new(self) }
    }

    #[inline]
    pub(crate) fn latch(&self) -> &Latch<'r> {
        &self.latch
    }

    /// Runs the closure on the current thread.
    ///
    /// It takes the closure out where it lies. It does not copy the whole job (latch, closure
    /// and result) out of the frame. Such a copy reads the job with wide loads that span the
    /// narrower stores which built it moments earlier, as at a recursion's leaves. A load
    /// that spans two stores cannot be served from the store buffer. It waits until they
    /// reach the cache, which follows the retirement of everything older: a dozen cycles in
    /// cache, a cache miss's latency behind an outstanding miss
    /// (`crates/ember-lab/MEASUREMENTS.md`, "Running a `join` half in place").
    ///
    /// # Safety
    /// The job's `JobRef` was taken back out of every queue before anybody executed it, and
    /// will never be executed.
    #[inline(always)]
    pub(crate) unsafe fn run_inline(&mut self) -> R {
        let func = self.func.get_mut().take().expect("a job runs once");
        func()
    }

    /// Forgets a job whose closure ran here ([`run_inline`](Self::run_inline)). Nothing in it
    /// needs dropping any more: its result was never written, and its latch waits for a
    /// worker by reference. The compiler cannot see that past the `JobRef` that escaped to a
    /// queue, and would check every field on every `join` (`crates/ember-lab/MEASUREMENTS.md`,
    /// "Running a `join` half in place"). The fields are named one by one, so a new one is a
    /// compile error here rather than a leak.
    #[inline(always)]
    pub(crate) fn forget_run_inline(self) {
        let StackJob {
            latch,
            mut func,
            mut result,
        } = self;
        debug_assert!(
            func.get_mut().is_none(),
            "a job forgotten before it ran here"
        );
        debug_assert!(
            matches!(result.get_mut(), JobResult::Pending),
            "a job run here has a result from elsewhere"
        );
        debug_assert!(
            !latch.probe() && latch.waits_by_reference(),
            "a job run here has a set latch, or one that owns its waiter"
        );
        std::mem::forget(latch);
        std::mem::forget(func);
        std::mem::forget(result);
    }

    /// The result once the latch is set: the value, or the panic to re-raise.
    #[inline]
    pub(crate) fn into_result(self) -> Result<R, Panic> {
        match self.result.into_inner() {
            JobResult::Ok(value) => Ok(value),
            JobResult::Panicked(payload) => Err(payload),
            JobResult::Pending => unreachable!("a stolen job's latch was set before it ran"),
        }
    }
}

impl<F, R> Job for StackJob<'_, F, R>
where
    F: FnOnce() -> R + Send,
    R: Send,
{
    unsafe fn execute(this: *const Self, runner: Runner<'_>) {
        runner.start_uncounted();
        // SAFETY: the owner keeps the frame alive until the latch is set (the caller's
        // contract); until then only this thread touches `func` and `result`.
        let this = unsafe { &*this };
        // SAFETY: as above; the owner reads `func`/`result` only after the latch is set.
        let func = unsafe { (*this.func.get()).take() }.expect("a job runs once");
        let result = match panic::catch_unwind(AssertUnwindSafe(func)) {
            Ok(value) => JobResult::Ok(value),
            Err(payload) => JobResult::Panicked(payload),
        };
        // SAFETY: as above.
        unsafe { *this.result.get() = result };
        // SAFETY: `latch` is in the frame that stays alive until it is set; `set` touches it
        // no more after the store that may free it.
        unsafe { Latch::set(&this.latch) };
    }
}

/// A job on the heap that owns its closure: in a cached block (`jobs/cache.rs`) if the closure
/// fits one, else in a `Box`.
pub(crate) struct HeapJob<F> {
    func: F,
}

/// A [`HeapJob`] made and not yet queued. Dropped unqueued, it drops its closure and frees
/// its memory.
pub(crate) struct HeapJobBox<F>(NonNull<HeapJob<F>>);

impl<F> HeapJob<F> {
    /// Moves the closure out of `job` and frees its memory, the way [`HeapJobBox::new_on`]
    /// got it.
    ///
    /// # Safety
    /// `job` came from [`HeapJobBox::new_on`] (which `new` calls), its closure is still in
    /// it, and it is not used again.
    #[inline]
    unsafe fn take_and_free(job: NonNull<Self>) -> F {
        // SAFETY: the closure is there (the caller's promise), and is read out only once.
        let func = unsafe { std::ptr::read(&raw const (*job.as_ptr()).func) };
        if cache::fits::<HeapJob<F>>() {
            // SAFETY: `HeapJobBox::new_on` took this block from `alloc_block`; its closure is
            // moved out.
            unsafe { cache::free_block(job.cast()) };
        } else {
            // SAFETY: `HeapJobBox::new_on` leaked this `Box`; `ManuallyDrop` (same layout) frees it
            // without dropping the closure moved out above.
            drop(unsafe { Box::from_raw(job.as_ptr().cast::<ManuallyDrop<HeapJob<F>>>()) });
        }
        func
    }
}

impl<F> HeapJobBox<F>
where
    F: FnOnce(Runner<'_>) + Send,
{
    /// `func` on the heap: in a block of this thread's worker's cache (`jobs/cache.rs`) if it
    /// fits one, else in a `Box`.
    #[inline]
    pub(crate) fn new(func: F) -> Self {
        if cache::fits::<HeapJob<F>>() {
            WorkerThread::with_any_current(|worker| Self::new_on(func, worker))
        } else {
            Self::new_on(func, None)
        }
    }

    /// [`new`](Self::new) for a caller that has looked up this thread's worker (of any pool)
    /// already: `worker`, whose cache gives the block.
    #[inline]
    pub(crate) fn new_on(func: F, worker: Option<&WorkerThread>) -> Self {
        if cache::fits::<HeapJob<F>>() {
            let block = cache::alloc_block(worker).cast::<HeapJob<F>>();
            // SAFETY: the block is ours and uninitialised, of `BLOCK`'s layout, which holds a
            // `HeapJob<F>` (`fits`).
            unsafe { block.as_ptr().write(HeapJob { func }) };
            HeapJobBox(block)
        } else {
            HeapJobBox(NonNull::from(Box::leak(Box::new(HeapJob { func }))))
        }
    }

    /// # Safety
    /// Whatever `F` borrows must outlive the job's execution. For `'static` closures that is
    /// free; a scope guarantees it by waiting for all of its jobs.
    pub(crate) unsafe fn into_job_ref(self) -> JobRef {
        let job = ManuallyDrop::new(self).0;
        // SAFETY: the job is reclaimed exactly once, in `execute`.
        unsafe { JobRef::new(job.as_ptr()) }
    }
}

impl<F> Drop for HeapJobBox<F> {
    fn drop(&mut self) {
        // A job dropped before it was queued: its closure and memory go as `execute` would
        // have let them go. No path drops one today (every `new` is queued at once); one that
        // did would run the user's captured values' `Drop` here, and must let it unwind.
        // SAFETY: `self.0` came from `HeapJobBox::new_on` and was never queued or run
        // (`into_job_ref` does not drop `self`).
        drop(unsafe { HeapJob::take_and_free(self.0) });
    }
}

impl<F> Job for HeapJob<F>
where
    F: FnOnce(Runner<'_>) + Send,
{
    unsafe fn execute(this: *const Self, runner: Runner<'_>) {
        // SAFETY: `this` came from `HeapJobBox::new_on` (through `into_job_ref`) and runs once. The
        // memory is freed before the closure runs, so that a job it spawns may reuse it.
        let func = unsafe { HeapJob::take_and_free(NonNull::new_unchecked(this.cast_mut())) };
        func(runner);
    }
}
