//! A bounded single-producer, multi-consumer batch queue with `fetch_add` claims.
//!
//! One producer fills a batch of slots; consumers claim slots by bumping a shared index with a
//! single `fetch_add`, which is cheaper under contention than a compare-and-swap loop because it
//! cannot fail. When every item of the batch has been claimed and taken, the producer starts the
//! next batch from slot 0.
//!
//! # Protocol
//!
//! All shared state lives in one `AtomicU64`, `state`: the high half is `len`, the number of
//! published slots in the current batch, the low half is `next`, the next slot to claim. A
//! second counter, `taken`, counts the claims of the current batch whose value has been moved out.
//!
//! - **Claim** (any consumer): if a plain load shows `next >= len`, report empty. Otherwise
//!   `fetch_add(1)` on `state`; the returned word says, atomically, both which index was claimed
//!   and how many slots were published at that instant. If `next < len` the slot is ours: move
//!   the value out, then increment `taken`. Otherwise the increment was a miss (someone else took
//!   the last item between the load and the `fetch_add`) and we report empty.
//! - **Append** (producer): write slot `len`, then compare-and-swap `state` from `(len, next)` to
//!   `(len + 1, min(next, len))`. The `min` takes back the misses: an index at or past `len` was
//!   never a valid claim, so lowering `next` to `len` cannot hand out a slot twice, and without it
//!   the new slot would sit below `next` and never be claimed.
//! - **Recycle** (producer): when `next >= len` (everything claimed) and `taken == len`
//!   (everything moved out), no consumer is reading a slot and none can claim one, so the
//!   producer resets `taken` to 0, writes slot 0 and swaps `state` to `(1, 0)`.
//!
//! # Invariants
//!
//! - `next` only grows, except when the producer lowers it to `len` or resets the batch; in
//!   both cases every index below the new `next` has already been handed out, so each published
//!   slot is claimed by exactly one `fetch_add`.
//! - Only the producer writes slots, and only slots at or past `len` (unpublished) or, when
//!   recycling, slots whose claims have all completed (`taken == len`).
//! - Misses add at most one to `next` per consumer, because a consumer only `fetch_add`s after
//!   seeing `next < len`; so `next` stays far below the 2³² that would carry into `len`.
//! - A single producer is enforced by a producer lock taken in [`SpmcBatch::try_push`]; consumers
//!   never touch it, and in the intended use (one thread feeding the batch) it is uncontended.

use core::fmt;
use core::mem::MaybeUninit;

use crossbeam_utils::CachePadded;

use crate::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use crate::sync::{lock, spin, Mutex, UnsafeCell};
use crate::WorkQueue;

const LOW: u64 = u32::MAX as u64;

fn pack(len: usize, next: usize) -> u64 {
    ((len as u64) << 32) | next as u64
}

fn unpack(state: u64) -> (usize, usize) {
    ((state >> 32) as usize, (state & LOW) as usize)
}

/// A bounded single-producer, multi-consumer queue: a producer fills a batch of slots, consumers
/// claim them with one `fetch_add` each. Items come out in the order they were pushed within a
/// batch.
///
/// ```
/// # if ember_containers::MODEL_CHECKED { return; } // loom types only work inside a model
/// use ember_containers::SpmcBatch;
/// use std::sync::atomic::{AtomicUsize, Ordering};
///
/// let batch = SpmcBatch::with_capacity(64);
/// for i in 0..64 {
///     batch.try_push(i).unwrap();
/// }
/// let sum = AtomicUsize::new(0);
/// std::thread::scope(|s| {
///     for _ in 0..2 {
///         s.spawn(|| {
///             while let Some(i) = batch.pop() {
///                 sum.fetch_add(i, Ordering::Relaxed);
///             }
///         });
///     }
/// });
/// assert_eq!(sum.into_inner(), (0..64).sum());
/// ```
pub struct SpmcBatch<T> {
    /// `(len, next)`, see the module documentation.
    state: CachePadded<AtomicU64>,
    /// Claims of the current batch whose value has been moved out.
    taken: CachePadded<AtomicUsize>,
    /// Serialises producers, so the protocol's single producer holds.
    producer: Mutex<()>,
    slots: Box<[UnsafeCell<MaybeUninit<T>>]>,
}

// SAFETY: values move from the producer's thread to a consumer's; no `&T` is ever shared.
unsafe impl<T: Send> Send for SpmcBatch<T> {}
// SAFETY: as above; slot accesses are ordered by the protocol in the module documentation.
unsafe impl<T: Send> Sync for SpmcBatch<T> {}

impl<T> SpmcBatch<T> {
    /// Creates an empty queue whose batches hold up to `capacity` items.
    ///
    /// # Panics
    ///
    /// If `capacity` is 0 or not below 2³¹.
    pub fn with_capacity(capacity: usize) -> Self {
        assert!(
            capacity > 0 && capacity < 1 << 31,
            "SpmcBatch capacity must be in 1..2^31"
        );
        Self {
            state: CachePadded::new(AtomicU64::new(0)),
            taken: CachePadded::new(AtomicUsize::new(0)),
            producer: Mutex::new(()),
            slots: (0..capacity)
                .map(|_| UnsafeCell::new(MaybeUninit::uninit()))
                .collect(),
        }
    }

    /// The number of items a batch holds.
    pub fn capacity(&self) -> usize {
        self.slots.len()
    }

    /// Appends `item` to the current batch, starting a new batch if the current one has been
    /// fully consumed. Returns `Err(item)` if the batch is full and not yet drained.
    ///
    /// ```
    /// # if ember_containers::MODEL_CHECKED { return; } // loom types only work inside a model
    /// use ember_containers::SpmcBatch;
    ///
    /// let batch = SpmcBatch::with_capacity(1);
    /// batch.try_push('a').unwrap();
    /// assert_eq!(batch.try_push('b'), Err('b')); // full, 'a' not taken yet
    /// assert_eq!(batch.pop(), Some('a'));
    /// batch.try_push('b').unwrap(); // drained: a new batch starts
    /// assert_eq!(batch.pop(), Some('b'));
    /// ```
    pub fn try_push(&self, item: T) -> Result<(), T> {
        let _producer = lock(&self.producer);
        // Relaxed: only the producer changes `len`, and consumers only change `next`, which the
        // compare-and-swap below re-reads; the value is not used to read any slot.
        let mut state = self.state.load(Ordering::Relaxed);
        let (len, next) = unpack(state);
        // Acquire: pairs with each consumer's Release increment, so their reads of the slots
        // happen before we overwrite them.
        if len > 0 && next >= len && self.taken.load(Ordering::Acquire) == len {
            // Everything claimed and moved out: no consumer reads a slot and none can claim one
            // until the swap below, so `taken` and slot 0 are ours.
            self.taken.store(0, Ordering::Relaxed);
            // SAFETY: slot 0 is unclaimable and unread (see above).
            self.slots[0].with_mut(|slot| unsafe { (*slot).write(item) });
            // Release: publishes slot 0 and `taken = 0` to whoever claims index 0. A swap,
            // since concurrent misses may have bumped `next`; overwriting them is harmless.
            self.state.swap(pack(1, 0), Ordering::Release);
            return Ok(());
        }
        if len == self.slots.len() {
            return Err(item);
        }
        // SAFETY: slot `len` is unpublished, so no consumer can claim or read it, and a
        // previous value there (from an earlier batch) was moved out before the batch was
        // recycled.
        self.slots[len].with_mut(|slot| unsafe { (*slot).write(item) });
        loop {
            // Release: publishes the slot written above to the consumer that claims it.
            match self.state.compare_exchange_weak(
                state,
                pack(len + 1, next_after(state, len)),
                Ordering::Release,
                Ordering::Relaxed,
            ) {
                Ok(_) => return Ok(()),
                // Only `next` can have changed (consumers' misses); `len` is ours.
                Err(current) => state = current,
            }
        }
    }

    /// Takes the next item of the current batch, or returns `None` if every published item has
    /// already been claimed.
    pub fn pop(&self) -> Option<T> {
        // Relaxed: this load only avoids a useless `fetch_add`; the claim below decides.
        let (len, next) = unpack(self.state.load(Ordering::Relaxed));
        if next >= len {
            return None;
        }
        // Acquire: the returned word was written by the producer's Release append or recycle,
        // or by later consumers' read-modify-writes, which continue its release sequence; either
        // way the claimed slot's write is visible.
        let (len, index) = unpack(self.state.fetch_add(1, Ordering::Acquire));
        if index >= len {
            return None;
        }
        // SAFETY: `index < len` means this `fetch_add` claimed a published slot, and each such
        // index is claimed exactly once (module invariants); the producer does not overwrite it
        // until `taken` counts this claim.
        let item = self.slots[index].with(|slot| unsafe { (*slot).assume_init_read() });
        // Release: our read of the slot happens before the producer recycles it.
        self.taken.fetch_add(1, Ordering::Release);
        Some(item)
    }

    /// Returns whether every published item had been claimed when the queue was looked at.
    pub fn is_empty(&self) -> bool {
        let (len, next) = unpack(self.state.load(Ordering::Relaxed));
        next >= len
    }
}

/// The `next` to store with an append at `len`: misses past `len` are taken back.
fn next_after(state: u64, len: usize) -> usize {
    unpack(state).1.min(len)
}

impl<T> fmt::Debug for SpmcBatch<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (len, next) = unpack(self.state.load(Ordering::Relaxed));
        f.debug_struct("SpmcBatch")
            .field("capacity", &self.slots.len())
            .field("len", &len)
            .field("next", &next.min(len))
            .finish()
    }
}

impl<T> Drop for SpmcBatch<T> {
    fn drop(&mut self) {
        // `&mut self`: no claim is in flight, so exactly the unclaimed slots still hold values.
        let (len, next) = unpack(self.state.load(Ordering::Relaxed));
        for slot in &self.slots[next.min(len)..len] {
            // SAFETY: published and never claimed, so initialised and not moved out.
            slot.with_mut(|slot| unsafe { (*slot).assume_init_drop() });
        }
    }
}

/// The worker index is ignored. `push` must come from one thread at a time to be efficient
/// (concurrent producers are serialised by a lock) and, when the batch is full, spins until the
/// consumers have drained it, so it must not be called with no consumer running.
impl<T: Send> WorkQueue<T> for SpmcBatch<T> {
    fn push(&self, _worker: usize, mut item: T) {
        loop {
            match self.try_push(item) {
                Ok(()) => return,
                Err(back) => {
                    item = back;
                    spin();
                }
            }
        }
    }

    fn pop(&self, _worker: usize) -> Option<T> {
        SpmcBatch::pop(self)
    }
}
