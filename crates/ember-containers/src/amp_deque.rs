//! The bounded work-stealing deque of *The Art of Multiprocessor Programming* (Herlihy &
//! Shavit, `BoundedDEQueue`), as published and fixed.
//!
//! One owner pushes and pops at the bottom; any number of thieves steal from the top. The
//! deque is an array of tasks, an index `bottom` (written only by the owner) and a *stamped*
//! `top`: an index paired with a stamp that every change of `top` bumps, so a thief whose view of
//! `top` went stale while the owner reset the deque cannot succeed with its compare-and-swap
//! (the ABA problem). Here `top` is one `AtomicU64`, index in the low half and stamp in the
//! high half; the stamp wraps after 2³² changes, which is the usual bound of a stamped scheme.
//!
//! # The algorithm, transcribed
//!
//! ```text
//! pushBottom(r): tasks[bottom] = r; bottom++
//! popTop():      (oldTop, s) = top; if bottom <= oldTop: return null
//!                r = tasks[oldTop]
//!                if CAS(top, (oldTop, s), (oldTop + 1, s + 1)): return r
//!                return null
//! popBottom():   if bottom == 0: return null
//!                bottom--; r = tasks[bottom]; (oldTop, s) = top
//!                if bottom > oldTop: return r
//!                if bottom == oldTop:
//!                    bottom = 0
//!                    if CAS(top, (oldTop, s), (0, s + 1)): return r
//!                [Fixed only: bottom = 0]
//!                top = (0, s + 1)
//!                return null
//! ```
//!
//! # The published bug
//!
//! When `popBottom` finds `bottom < oldTop`, thieves emptied the deque while the owner was
//! decrementing `bottom`. The published code resets `top` to 0 but leaves `bottom` where the
//! decrement put it, so the deque now looks like it holds the items below `bottom`, which
//! thieves have already taken. Concretely: push `a`, `b`; a thief steals `a` (`top = 1`); a
//! thief reads `top = 1` and `bottom = 2`, about to steal `b`; the owner decrements `bottom` to
//! 1; the thief's compare-and-swap succeeds (`top = 2`, it has `b`); the owner reads `top = 2 >
//! bottom`, sets `top = 0` and returns null, leaving `bottom = 1`. The owner's next `popBottom`
//! returns `a` a second time. [`Fixed`] resets `bottom` to 0 before resetting `top`; the loom
//! model `amp_deque_published_duplicates` (in `tests/loom.rs`) finds the counterexample on
//! [`Published`] and checks that [`Fixed`] has none.
//!
//! # Memory orderings
//!
//! The algorithm is written for Java, where `bottom` and `top` are volatile: sequentially
//! consistent. Both are `SeqCst` here, as published. The owner's store of the decremented
//! `bottom` followed by its load of `top`, and a thief's load of `top` followed by its load of
//! `bottom`, form a store-load pattern that needs exactly that (with acquire/release alone,
//! the owner and a thief could both miss each other's update and take the same item). A
//! `SeqCst` fence sits between the two accesses on each side. It states the requirement where
//! it arises, costs nothing extra next to the `SeqCst` store on x86, and is what loom models
//! faithfully: loom weakens `SeqCst` *accesses* to acquire/release, and without the fences it
//! reports duplicates that sequential consistency rules out.
//! The task slots are plain array elements in the original; here they are atomics, because a
//! thief may read a slot that the owner is rewriting (after a reset), and then fails its
//! compare-and-swap: in Rust that read must not be a data race. They are `Relaxed`: a slot's
//! write happens before its publication by the `SeqCst` store of `bottom`, which a thief loads
//! before it reads the slot.
//!
//! # Items
//!
//! Items are `usize` words, as the original's slots hold references; a pool stores a task
//! index or a pointer it owns. Keeping the slots word-sized keeps the published version free of
//! undefined behaviour even when it hands out an item twice, which is what lets the model check
//! observe the duplicate instead of a double free.

use core::fmt;
use core::marker::PhantomData;
use std::sync::Arc;

use crate::sync::atomic::{fence, AtomicU64, AtomicUsize, Ordering::Relaxed, Ordering::SeqCst};

mod sealed {
    pub trait Sealed {}
}

/// Which `popBottom` the deque runs: [`Published`] or [`Fixed`].
pub trait Variant: sealed::Sealed + Send + Sync + 'static {
    /// Whether `popBottom` resets `bottom` when thieves emptied the deque under it.
    const RESETS_BOTTOM: bool;
}

/// `popBottom` exactly as published: it can hand out an item a thief already took.
#[derive(Debug, Clone, Copy)]
pub enum Published {}

/// `popBottom` with `bottom` reset to 0 whenever the deque is found empty.
#[derive(Debug, Clone, Copy)]
pub enum Fixed {}

impl sealed::Sealed for Published {}
impl sealed::Sealed for Fixed {}
impl Variant for Published {
    const RESETS_BOTTOM: bool = false;
}
impl Variant for Fixed {
    const RESETS_BOTTOM: bool = true;
}

const INDEX: u64 = u32::MAX as u64;

/// Packs a `top` index and its stamp into one word.
fn stamped(index: usize, stamp: u32) -> u64 {
    (u64::from(stamp) << 32) | index as u64
}

/// Splits a `top` word into index and stamp.
fn unstamp(word: u64) -> (usize, u32) {
    ((word & INDEX) as usize, (word >> 32) as u32)
}

/// The state owner and thieves share.
struct Inner {
    tasks: Box<[AtomicUsize]>,
    bottom: AtomicUsize,
    top: AtomicU64,
}

/// Creates a deque holding up to `capacity` items and returns its owner and a thief handle.
///
/// # Panics
///
/// If `capacity` does not fit the 32-bit index half of `top`.
///
/// ```
/// # if ember_containers::MODEL_CHECKED { return; } // loom types only work inside a model
/// use ember_containers::amp_deque::{self, Fixed};
///
/// let (mut owner, thief) = amp_deque::new::<Fixed>(8);
/// owner.push_bottom(1).unwrap();
/// owner.push_bottom(2).unwrap();
/// assert_eq!(thief.pop_top(), Some(1));
/// assert_eq!(owner.pop_bottom(), Some(2));
/// assert_eq!(owner.pop_bottom(), None);
/// ```
pub fn new<V: Variant>(capacity: usize) -> (Owner<V>, Stealer<V>) {
    assert!(
        u32::try_from(capacity).is_ok(),
        "deque capacity must fit in 32 bits"
    );
    let inner = Arc::new(Inner {
        tasks: (0..capacity).map(|_| AtomicUsize::new(0)).collect(),
        bottom: AtomicUsize::new(0),
        top: AtomicU64::new(stamped(0, 0)),
    });
    (
        Owner {
            inner: Arc::clone(&inner),
            _variant: PhantomData,
        },
        Stealer {
            inner,
            _variant: PhantomData,
        },
    )
}

/// The owner's end: pushes and pops at the bottom. There is exactly one per deque; it can move
/// between threads, and `&mut self` keeps it to one thread at a time.
pub struct Owner<V> {
    inner: Arc<Inner>,
    _variant: PhantomData<V>,
}

/// A thief's end: steals from the top. Clone it for every thief.
pub struct Stealer<V> {
    inner: Arc<Inner>,
    _variant: PhantomData<V>,
}

impl<V: Variant> Owner<V> {
    /// Pushes `item` at the bottom, or returns `Err(item)` if the array is full up to `bottom`.
    /// (The published `pushBottom` has no bound check; like the original, a full array is only
    /// reclaimed when `popBottom` resets the deque.)
    pub fn push_bottom(&mut self, item: usize) -> Result<(), usize> {
        let inner = &*self.inner;
        let bottom = inner.bottom.load(Relaxed); // only the owner writes `bottom`
        let Some(slot) = inner.tasks.get(bottom) else {
            return Err(item);
        };
        slot.store(item, Relaxed);
        // SeqCst (volatile in the original); publishes the slot to thieves that load `bottom`.
        inner.bottom.store(bottom + 1, SeqCst);
        Ok(())
    }

    /// Pops the most recently pushed item, unless thieves took it, or returns `None`.
    pub fn pop_bottom(&mut self) -> Option<usize> {
        let inner = &*self.inner;
        let bottom = inner.bottom.load(Relaxed); // only the owner writes `bottom`
        if bottom == 0 {
            return None;
        }
        let bottom = bottom - 1;
        inner.bottom.store(bottom, SeqCst);
        let item = inner.tasks[bottom].load(Relaxed);
        // Store `bottom`, then load `top`: a thief that read the old `bottom` must be seen.
        fence(SeqCst);
        let old_top = inner.top.load(SeqCst);
        let (top, stamp) = unstamp(old_top);
        let reset = stamped(0, stamp.wrapping_add(1));
        if bottom > top {
            return Some(item);
        }
        if bottom == top {
            // The last item: race the thieves for it with the same compare-and-swap they use.
            inner.bottom.store(0, SeqCst);
            if inner
                .top
                .compare_exchange(old_top, reset, SeqCst, SeqCst)
                .is_ok()
            {
                return Some(item);
            }
        }
        if V::RESETS_BOTTOM {
            // The fix: thieves emptied the deque, so every slot below `bottom` is taken too.
            inner.bottom.store(0, SeqCst);
        }
        inner.top.store(reset, SeqCst);
        None
    }
}

impl<V: Variant> Stealer<V> {
    /// Steals the oldest item, or returns `None` if the deque looked empty or another thread
    /// won the race for that item.
    pub fn pop_top(&self) -> Option<usize> {
        let inner = &*self.inner;
        let old_top = inner.top.load(SeqCst);
        let (top, stamp) = unstamp(old_top);
        // Load `top`, then `bottom`: pairs with the owner's fence between its two accesses.
        fence(SeqCst);
        if inner.bottom.load(SeqCst) <= top {
            return None;
        }
        // May be stale (the owner may be rewriting it after a reset); then the stamp makes the
        // compare-and-swap below fail and the value is discarded.
        let item = inner.tasks[top].load(Relaxed);
        inner
            .top
            .compare_exchange(
                old_top,
                stamped(top + 1, stamp.wrapping_add(1)),
                SeqCst,
                SeqCst,
            )
            .ok()
            .map(|_| item)
    }
}

impl<V> Clone for Stealer<V> {
    fn clone(&self) -> Self {
        Self {
            inner: Arc::clone(&self.inner),
            _variant: PhantomData,
        }
    }
}

impl<V> fmt::Debug for Owner<V> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("amp_deque::Owner").finish_non_exhaustive()
    }
}

impl<V> fmt::Debug for Stealer<V> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("amp_deque::Stealer").finish_non_exhaustive()
    }
}
