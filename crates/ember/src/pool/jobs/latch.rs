//! Latches: one-shot "this job is done" flags that wake the thread waiting on them.
//!
//! A waiter is either a worker, which keeps running its own pool's jobs while it waits and
//! parks on its own parker when there are none, or a thread that is no pool's worker, which
//! parks with [`std::thread::park`] (`wait.rs`). Both parkers keep a token, so a `set` that
//! lands between the waiter's last probe and its park is not lost.
//!
//! The latch usually lives in the waiter's stack frame, which may be freed the moment the
//! waiter sees it set. So [`Latch::set`] takes a raw pointer, copies out everything it needs
//! *before* the releasing store, and touches the latch no more after it.

use crate::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use crate::pool::workers::registry::Registry;
use crate::pool::workers::wait::Sleeper;

/// Who waits on a latch.
pub(crate) enum Waiter<'r> {
    /// Worker `index` of `registry`, when only that pool's own workers set the latch (a
    /// `join`'s second half): they keep the registry alive, so a borrow is enough.
    Worker {
        registry: &'r Registry,
        index: usize,
    },
    /// Anybody else, set by anybody: a worker of another pool, a thread outside every pool.
    Sleeper(Sleeper),
}

/// A one-shot completion flag.
pub(crate) struct Latch<'r> {
    done: AtomicBool,
    waiter: Waiter<'r>,
}

impl<'r> Latch<'r> {
    pub(crate) fn new(waiter: Waiter<'r>) -> Self {
        Latch {
            done: AtomicBool::new(false),
            waiter,
        }
    }

    /// Whether the latch has been set. Acquire: what the setter wrote before `set` (a job's
    /// result) is visible after a `true`.
    #[inline]
    pub(crate) fn probe(&self) -> bool {
        self.done.load(Ordering::Acquire)
    }

    /// Whether the waiter is held by reference ([`Waiter::Worker`]): such a latch owns
    /// nothing, and may be forgotten instead of dropped.
    pub(crate) fn waits_by_reference(&self) -> bool {
        matches!(self.waiter, Waiter::Worker { .. })
    }

    /// Sets the latch and wakes its waiter.
    ///
    /// # Safety
    /// `this` must be valid on entry. It may be freed by the waiter as soon as the flag is
    /// stored, so nothing after the store reads it. A [`Waiter::Worker`] latch must be set by
    /// one of that pool's own workers, which keeps the registry alive (each holds an `Arc` of
    /// it); a [`Waiter::Sleeper`] is cloned (its own `Arc`) before the store.
    pub(crate) unsafe fn set(this: *const Self) {
        // SAFETY: valid on entry (the caller's contract).
        let latch = unsafe { &*this };
        // Copy out who to wake: after the store below the latch may be freed.
        let wake = match &latch.waiter {
            Waiter::Worker { registry, index } => Ok((*registry as *const Registry, *index)),
            Waiter::Sleeper(sleeper) => Err(sleeper.clone()),
        };
        latch.done.store(true, Ordering::Release);
        match wake {
            Ok((registry, index)) => {
                // SAFETY: the registry outlives the latch: the setting thread keeps it alive
                // (see above), even if the waiter already dropped its `Arc`.
                unsafe { (*registry).sleep.wake_worker(index) };
            }
            Err(sleeper) => sleeper.wake(),
        }
    }
}

/// A latch set when a count of outstanding jobs falls to zero (what a scope waits on).
pub(crate) struct CountLatch<'r> {
    pending: AtomicUsize,
    latch: Latch<'r>,
}

impl<'r> CountLatch<'r> {
    /// Starts with one outstanding unit: the scope's own body.
    pub(crate) fn new(waiter: Waiter<'r>) -> Self {
        CountLatch {
            pending: AtomicUsize::new(1),
            latch: Latch::new(waiter),
        }
    }

    /// Starts with `count` outstanding units (at least one).
    pub(crate) fn with_count(count: usize, waiter: Waiter<'r>) -> Self {
        debug_assert!(count > 0, "a count latch set before anything ran");
        CountLatch {
            pending: AtomicUsize::new(count),
            latch: Latch::new(waiter),
        }
    }

    pub(crate) fn increment(&self) {
        // Relaxed: the count only has to be right; the job it stands for is published by the
        // queue push that follows.
        self.pending.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn latch(&self) -> &Latch<'r> {
        &self.latch
    }

    /// Marks one unit done; the last one sets the latch.
    ///
    /// # Safety
    /// As [`Latch::set`]: `this` may be freed once the count reaches zero.
    pub(crate) unsafe fn decrement(this: *const Self) {
        // SAFETY: valid on entry; the count cannot reach zero before this unit is counted out.
        let count = unsafe { &*this };
        // AcqRel: the last decrement must see every other unit's writes before releasing them
        // to the waiter through the latch.
        if count.pending.fetch_sub(1, Ordering::AcqRel) == 1 {
            // SAFETY: the latch is valid until set; the waiter frees it only after.
            unsafe { Latch::set(&count.latch) };
        }
    }
}
