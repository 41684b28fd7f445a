//! The submission queue between the threads that submit tasks and the scheduler thread that
//! analyses them.
//!
//! # Double-buffered (the default)
//!
//! Two buffers: the *front* one, inside the mutex, and the *back* one, owned by the scheduler
//! thread. A producer locks the mutex only to push one item onto the front buffer (and to
//! signal the condition variable if the scheduler sleeps). The scheduler locks the mutex only
//! to swap its (empty) back buffer with the front buffer, then drains the batch it took
//! *without* the lock, while producers keep pushing onto the other buffer. Both vectors keep
//! their allocations, so steady state allocates nothing.
//!
//! # Lockstep (the baseline)
//!
//! The scheduler holds the mutex while it analyses the items it took; a producer that submits
//! meanwhile waits for the whole batch to be analysed. This is what the double-buffered queue
//! is measured against.
//!
//! # Invariants
//!
//! 1. Every pushed item is handed to the scheduler exactly once: it is in the front buffer
//!    until a swap moves the whole buffer, under the same lock, to the scheduler's side.
//! 2. Items are handed over in push order: the front buffer is appended to in lock order, and
//!    each swap takes all of it, so batches are consecutive runs of the push order.
//! 3. The scheduler sleeps only while the front buffer is empty and the queue is open, and
//!    every push and [`close`](SubmissionQueue::close) signals under the lock, so no push is
//!    left waiting behind a sleeping scheduler (no lost wake-up).
//! 4. After `close`, the scheduler still receives everything pushed before it; a `take` that
//!    returns `false` means closed *and* drained. Pushing after `close` hands the item back.
//!
//! The loom model below checks 1–3 with two producers of two items each and a scheduler that
//! swaps concurrently.

use std::mem;

use crate::sync::{lock, Condvar, Mutex};

struct Front<T> {
    items: Vec<T>,
    closed: bool,
}

/// A multi-producer, single-consumer submission queue; see the module doc.
pub(crate) struct SubmissionQueue<T> {
    front: Mutex<Front<T>>,
    ready: Condvar,
}

impl<T> SubmissionQueue<T> {
    pub(crate) fn new() -> Self {
        SubmissionQueue {
            front: Mutex::new(Front {
                items: Vec::new(),
                closed: false,
            }),
            ready: Condvar::new(),
        }
    }

    /// Pushes one item under a short lock; hands it back if the queue is closed.
    pub(crate) fn push(&self, item: T) -> Result<(), T> {
        let mut front = lock(&self.front);
        if front.closed {
            return Err(item);
        }
        let was_empty = front.items.is_empty();
        front.items.push(item);
        drop(front);
        if was_empty {
            // Only the first item of a batch can find the scheduler asleep: it sleeps only
            // while the front buffer is empty.
            self.ready.notify_one();
        }
        Ok(())
    }

    /// Closes the queue: later pushes fail, and the scheduler stops once it has drained.
    pub(crate) fn close(&self) {
        lock(&self.front).closed = true;
        self.ready.notify_one();
    }

    /// Double-buffered take: waits for items, swaps them into `back` (which must be empty)
    /// and returns `true`; returns `false` once the queue is closed and drained.
    pub(crate) fn take(&self, back: &mut Vec<T>) -> bool {
        debug_assert!(
            back.is_empty(),
            "the scheduler drains its buffer before swapping"
        );
        let mut front = self.wait(lock(&self.front));
        if front.items.is_empty() {
            return false;
        }
        mem::swap(&mut front.items, back);
        true
    }

    /// Lockstep take: waits for items and hands each to `analyse` *while holding the lock*;
    /// returns `false` once the queue is closed and drained.
    pub(crate) fn take_lockstep(&self, mut analyse: impl FnMut(T)) -> bool {
        let mut front = self.wait(lock(&self.front));
        if front.items.is_empty() {
            return false;
        }
        for item in front.items.drain(..) {
            analyse(item);
        }
        true
    }

    fn wait<'a>(
        &'a self,
        mut front: crate::sync::MutexGuard<'a, Front<T>>,
    ) -> crate::sync::MutexGuard<'a, Front<T>> {
        while front.items.is_empty() && !front.closed {
            front = self
                .ready
                .wait(front)
                .unwrap_or_else(|poisoned| poisoned.into_inner());
        }
        front
    }
}
