//! `Pool::parallel_for`: on a worker by recursive halving, from outside by a shared counter.
//!
//! On a worker, splitting the range with `join` keeps every piece on the fast path of the
//! worker's own deque and lets thieves take the largest pieces first.
//!
//! From a thread outside the pool, `join` would move the whole loop onto a worker and leave
//! the caller idle. Instead the caller and up to `threads()` helper jobs claim chunks from one
//! atomic counter until none are left (self-scheduling: fast claimers take more chunks). The
//! caller runs only chunks of its own loop, never other jobs of the pool, so its stack cannot
//! nest, the hazard that makes `join`/`scope` from outside move to a worker instead. (A caller
//! that is a worker of another pool runs its own pool's jobs while it waits for the last
//! chunks, as every wait does: `wait.rs`.) The first panic of a chunk is re-raised to the
//! caller; later ones are reported to the pool (`unwind.rs`). The
//! caller returns once every chunk is done — not once every helper has run: a helper whose
//! worker was busy may start later, find no chunk left, and never touch the caller's closure,
//! so a loop whose workers are all occupied still completes on the caller alone.
//!
//! One `fetch_add` per chunk on a shared counter is the price of the dynamic balance; a
//! `grain` worth microseconds of work makes it negligible.

use std::ops::Range;
use std::panic::{self, AssertUnwindSafe};
use std::sync::atomic::{AtomicUsize, Ordering};

use std::sync::Arc;

use crate::pool::jobs::job::HeapJobBox;
use crate::pool::jobs::unwind::FirstPanic;
use crate::pool::workers::registry::Registry;
use crate::pool::workers::wait::{self, Sleeper};
use crate::pool::Pool;

/// On a worker: halve with `join` down to `grain`.
pub(in crate::pool) fn split<F: Fn(usize) + Sync>(
    pool: &Pool,
    range: Range<usize>,
    grain: usize,
    f: &F,
) {
    if range.len() <= grain {
        range.for_each(f);
        return;
    }
    let mid = range.start + range.len() / 2;
    pool.join(
        || split(pool, range.start..mid, grain, f),
        || split(pool, mid..range.end, grain, f),
    );
}

/// What the caller and its helpers share. Helpers hold it through an `Arc`, so a helper job
/// that starts after every chunk was done (its worker was busy) finds nothing to claim and
/// touches nothing of the caller's.
struct Loop<F> {
    range: Range<usize>,
    grain: usize,
    chunks: usize,
    /// The next chunk to claim.
    next: AtomicUsize,
    /// Chunks finished (run, or ended by a panic).
    done: AtomicUsize,
    /// The caller's closure. A raw pointer: it is only valid while the caller waits, and it
    /// is only dereferenced for a claimed chunk, which the caller waits for.
    f: *const F,
    /// The first panic of a chunk, re-raised by the caller at the end.
    panic: FirstPanic,
    /// Where later panics go (`unwind.rs`).
    registry: Arc<Registry>,
    /// Woken by the chunk that completes the count.
    caller: Sleeper,
}

// SAFETY: `f` is only dereferenced as `&F` for a claimed chunk, while the caller is still
// waiting for that chunk (so `F` is alive), and `F: Sync` makes sharing that reference across
// threads fine; every other field is synchronised.
unsafe impl<F: Sync> Send for Loop<F> {}
// SAFETY: as above.
unsafe impl<F: Sync> Sync for Loop<F> {}

impl<F: Fn(usize) + Sync> Loop<F> {
    /// Claims and runs chunks until none are left. A panicking chunk stops only itself.
    fn run(&self) {
        loop {
            let chunk = self.next.fetch_add(1, Ordering::Relaxed);
            if chunk >= self.chunks {
                return;
            }
            // `chunk < chunks` puts `start` inside the range, so neither sum can overflow,
            // however close to `usize::MAX` the range ends or however large `grain` is.
            let start = self.range.start + chunk * self.grain;
            let end = start + self.grain.min(self.range.end - start);
            // SAFETY: this chunk is claimed and not yet counted done, so the caller is still
            // waiting in `shared_counter` and its `f` is alive.
            let f = unsafe { &*self.f };
            if let Err(payload) = panic::catch_unwind(AssertUnwindSafe(|| (start..end).for_each(f)))
            {
                self.panic.keep(&self.registry, payload);
            }
            // AcqRel: the caller's Acquire load of the final count sees every chunk's effects.
            if self.done.fetch_add(1, Ordering::AcqRel) + 1 == self.chunks {
                // `self` lives in an `Arc` this thread holds, so it outlives the caller's
                // return, which may happen as soon as the count is complete.
                self.caller.wake();
            }
        }
    }
}

/// From outside the pool: the caller and up to `threads()` helpers share a chunk counter.
pub(in crate::pool) fn shared_counter<F: Fn(usize) + Sync>(
    registry: &Arc<Registry>,
    range: Range<usize>,
    grain: usize,
    f: &F,
) {
    let chunks = range.len().div_ceil(grain);
    if chunks == 0 {
        return;
    }
    let work = Arc::new(Loop {
        range,
        grain,
        chunks,
        next: AtomicUsize::new(0),
        done: AtomicUsize::new(0),
        f: f as *const F,
        panic: FirstPanic::new(),
        registry: Arc::clone(registry),
        caller: Sleeper::current(),
    });
    for _ in 0..registry.workers().min(chunks - 1) {
        let work = Arc::clone(&work);
        let job = HeapJobBox::new(move |runner: crate::pool::jobs::job::Runner<'_>| {
            runner.start_uncounted();
            work.run();
        });
        // SAFETY: the job owns its `Arc`; of the caller's frame it reaches only `f`, and only
        // for a claimed chunk, which the caller waits for (see `Loop::f`).
        registry.inject(unsafe { job.into_job_ref() });
    }
    work.run();
    // The last chunk's finisher wakes this thread; a worker of another pool runs its own
    // pool's jobs meanwhile (`wait.rs`).
    wait::block_until(&|| work.done.load(Ordering::Acquire) >= chunks, None);
    let first_panic = work.panic.take();
    if let Some(payload) = first_panic {
        panic::resume_unwind(payload);
    }
}
