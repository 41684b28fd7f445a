//! A worker's private `join` halves under lazy joins (`worker.rs`, "Lazy joins"): a stack that
//! the worker pushes and pops without a fence, and that a worker about to sleep may still
//! steal from, behind a heavy barrier (`wake/README.md`, "Private steals").
//!
//! It is a Chase–Lev deque with its two fences split unevenly. Its owner pushes and pops the
//! newest half at `bottom` with plain stores and a *light* barrier (a compiler fence); a thief
//! takes the oldest at `top` with a compare-and-swap, and puts a *heavy* barrier
//! (`membarrier`, `sync/asymmetric.rs`) between its reads of `top` and of `bottom`, where
//! Chase–Lev puts a `SeqCst` fence on both sides. The owner also drains the whole stack
//! from the `top` end, with the thieves' compare-and-swap, when it offers its halves on its
//! deque. Every `join` pushes and pops here, so the owner's side must cost no more than the
//! `Vec` it replaces; thieves come only when a worker is about to sleep while another holds
//! halves it has not offered (its first half runs long, or blocks on its second), rare
//! enough to pay a system call.
//!
//! Hand-written because no crate offers a deque with an asymmetric fence: crossbeam-deque's
//! `Worker::pop` has the `SeqCst` fence this avoids.
//!
//! Indices only grow (a `usize` does not wrap in practice), and a slot is `index %
//! CAPACITY`: a thief whose compare-and-swap of `top` from `t` succeeds took exactly the
//! half pushed at index `t`, which nobody else took (the owner takes index `t` only through
//! the same compare-and-swap, once it is the last). The stack holds at most `CAPACITY`
//! halves; a `join` that finds it full offers them all on the deque instead.

use crossbeam_deque::Steal;

use crate::pool::jobs::job::JobRef;
use crate::sync::asymmetric::Barrier;
use crate::sync::atomic::{AtomicPtr, AtomicUsize, Ordering};

/// Private halves a worker keeps at most: `join`s nest as deep as the recursion, which is
/// rarely past 64 levels in fork-join code; deeper ones offer the rest on the deque.
const CAPACITY: usize = if cfg!(loom) { 4 } else { 128 };

/// A [`JobRef`]'s two words, in atomics: a thief may read a slot while the owner reuses it
/// (a stale index); it then fails its compare-and-swap and drops what it read, but the read
/// itself must not be a data race.
struct Slot {
    data: AtomicPtr<()>,
    execute: AtomicPtr<()>,
}

pub(crate) struct PrivateHalves {
    /// The oldest half not yet taken. Advanced only by a compare-and-swap: by a thief, by
    /// the owner's drain, and by the owner's pop of the last half.
    top: AtomicUsize,
    /// One past the newest half. Written only by the owner.
    bottom: AtomicUsize,
    /// A fixed array, so that an index taken modulo its length needs no bounds check on
    /// every `join`.
    slots: Box<[Slot; CAPACITY]>,
}

impl PrivateHalves {
    pub(crate) fn new() -> Self {
        PrivateHalves {
            top: AtomicUsize::new(0),
            bottom: AtomicUsize::new(0),
            slots: Box::new(std::array::from_fn(|_| Slot {
                data: AtomicPtr::new(std::ptr::null_mut()),
                execute: AtomicPtr::new(std::ptr::null_mut()),
            })),
        }
    }

    fn slot(&self, index: usize) -> &Slot {
        &self.slots[index % CAPACITY]
    }

    fn read(&self, index: usize) -> (*mut (), *mut ()) {
        let slot = self.slot(index);
        (
            slot.data.load(Ordering::Relaxed),
            slot.execute.load(Ordering::Relaxed),
        )
    }

    /// Owner: keeps `job` as the newest private half; `false` if the stack is full.
    #[inline(always)]
    pub(crate) fn push(&self, job: JobRef) -> bool {
        let bottom = self.bottom.load(Ordering::Relaxed);
        // A stale `top` only makes the stack look fuller than it is.
        if bottom - self.top.load(Ordering::Relaxed) >= CAPACITY {
            return false;
        }
        let (data, execute) = job.into_raw();
        let slot = self.slot(bottom);
        slot.data.store(data, Ordering::Relaxed);
        slot.execute.store(execute, Ordering::Relaxed);
        // Release: a thief that reads the new `bottom` (Acquire) reads the slot, and the job
        // it points at, as written.
        self.bottom.store(bottom + 1, Ordering::Release);
        true
    }

    /// Owner: takes `job` back if it is still the newest private half; `false` if it was
    /// offered or stolen meanwhile. `barrier` is the pool's (`Sleep::barrier`).
    #[inline(always)]
    pub(crate) fn pop_if_newest(&self, job: JobRef, barrier: &Barrier) -> bool {
        let bottom = self.bottom.load(Ordering::Relaxed);
        debug_assert!(bottom > 0, "a pop without a push");
        let newest = bottom.wrapping_sub(1);
        self.bottom.store(newest, Ordering::Release);
        // The store above and the load below are the owner's half of Chase–Lev's Dekker
        // pattern; the thief's half is its heavy barrier between its loads of `top` and
        // `bottom` (`steal`). Either the barrier lands on this thread before the store, and
        // the thief sees `bottom` lowered, or after it, and the load below sees every `top`
        // the thief could have read before its barrier.
        barrier.light();
        let top = self.top.load(Ordering::Relaxed);
        if top < newest {
            // No thief can reach index `newest` while `top` is below it.
            debug_assert!(self.holds(newest, job), "a private half out of order");
            return true;
        }
        if top == newest {
            // The last half: the owner races thieves (and loses if one got there first).
            let won = self
                .top
                .compare_exchange(top, top + 1, Ordering::SeqCst, Ordering::Relaxed)
                .is_ok();
            debug_assert!(
                !won || self.holds(newest, job),
                "a private half out of order"
            );
            self.bottom.store(bottom, Ordering::Release);
            return won;
        }
        // Taken already (`top == bottom`): put `bottom` back.
        self.bottom.store(bottom, Ordering::Release);
        false
    }

    fn holds(&self, index: usize, job: JobRef) -> bool {
        self.read(index).0 == job.into_raw().0
    }

    /// Owner: how many private halves are left (a stale `top` only makes it more).
    #[inline(always)]
    pub(crate) fn len(&self) -> usize {
        self.bottom
            .load(Ordering::Relaxed)
            .saturating_sub(self.top.load(Ordering::Relaxed))
    }

    /// Owner: whether no private half is left.
    #[inline(always)]
    pub(crate) fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Owner: hands every private half to `offer`, oldest first, each taken with a thief's
    /// compare-and-swap (a thief may take some of them meanwhile). `offer` (the worker's deque
    /// push) pushes nothing here; a half it did push would stay, the newest.
    #[cold]
    pub(crate) fn drain_oldest_first(&self, mut offer: impl FnMut(JobRef)) {
        let bottom = self.bottom.load(Ordering::Relaxed);
        loop {
            let top = self.top.load(Ordering::Relaxed);
            if top >= bottom {
                return;
            }
            let (data, execute) = self.read(top);
            if self
                .top
                .compare_exchange(top, top + 1, Ordering::SeqCst, Ordering::Relaxed)
                .is_ok()
            {
                // SAFETY: the owner wrote this slot itself, at index `top`, and the
                // compare-and-swap made it the one taker of that index.
                offer(unsafe { JobRef::from_raw(data, execute) });
            }
        }
    }

    /// Thief, before its heavy barrier: where it will try to steal.
    pub(crate) fn top(&self) -> usize {
        self.top.load(Ordering::Acquire)
    }

    /// Thief, after a heavy barrier issued since it read `top` ([`top`](Self::top)): takes
    /// the oldest private half if it is still at index `top`. `Retry` if somebody moved
    /// `top` since and a half may still be there, which the thief must not sleep on (it looks
    /// again, with a fresh `top` and barrier).
    pub(crate) fn steal(&self, top: usize) -> Steal<JobRef> {
        let bottom = self.bottom.load(Ordering::Acquire);
        if top >= bottom {
            return Steal::Empty;
        }
        let (data, execute) = self.read(top);
        if let Err(now) =
            self.top
                .compare_exchange(top, top + 1, Ordering::SeqCst, Ordering::Relaxed)
        {
            // Every index below `now` is taken. A half at `bottom` or above was pushed after
            // our barrier, by an owner that then sees us wanting work and offers it (or it is
            // the half of a pop in progress, which that pop settles): no reason to look again.
            // Below `bottom`, a half may be left that we must not sleep on.
            return if now < bottom {
                Steal::Retry
            } else {
                Steal::Empty
            };
        }
        // SAFETY: `top < bottom` was read with Acquire after the heavy barrier, so the slot at
        // index `top` holds the half pushed there, and the compare-and-swap made this thread
        // its one taker. The owner writes that slot again only for index `top + CAPACITY`,
        // pushed once `top` has moved past `top` (then the compare-and-swap fails), or for
        // index `top` itself after popping it, which it does only through the same
        // compare-and-swap when it is the last half, or without one when it read a `top`
        // below it, which the barrier rules out for a `top` this thread read before it
        // (`wake/README.md`, "Private steals").
        Steal::Success(unsafe { JobRef::from_raw(data, execute) })
    }
}
