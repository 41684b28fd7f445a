//! A Treiber stack: an unbounded lock-free MPMC stack.
//!
//! The stack is a singly linked list of heap nodes whose first node is `head`. `push` links a
//! fresh node in front of the current head and installs it with a compare-and-swap; `pop` reads
//! the head node's `next` and swings `head` to it with a compare-and-swap. Whoever wins the
//! compare-and-swap that unlinks a node owns that node's value.
//!
//! # Invariants
//!
//! - A node's `next` is written only while the node is private to its pusher; once a
//!   compare-and-swap has published it, `next` never changes. A popper may therefore read `next`
//!   from any node it saw as head, without synchronising with other poppers.
//! - A node's value is moved out exactly once, by the thread whose compare-and-swap unlinked it.
//!   The node itself is not dropped with its value (the value is `ManuallyDrop`), so freeing the
//!   node later never touches the value again.
//!
//! # Why reclamation has to be deferred
//!
//! A popper loads `head`, then dereferences it to read `next`. Between those two steps another
//! popper may unlink that very node. If the node were freed at once, the first popper would read
//! freed memory; and if its address were then reused by a new push, the first popper's
//! compare-and-swap would succeed against the recycled address and install a stale `next` (the
//! ABA problem), corrupting the list. Both hazards disappear if an unlinked node is freed only
//! once no thread can still hold a pointer to it. `crossbeam-epoch` provides exactly that: every
//! operation runs *pinned*, and a node retired with `defer_destroy` is freed only after every
//! thread pinned at the time of retirement has unpinned. Since a popper stays pinned from its
//! load of `head` to its compare-and-swap, the node it looks at cannot be freed, and so its
//! address cannot be reused, during that window.
//!
//! # Under loom
//!
//! `crossbeam-epoch` is not loom-aware, so under `--cfg loom` pinning is a no-op and retired
//! nodes are leaked instead of reclaimed (the values are still moved out and dropped exactly
//! once). Leaking gives the same two guarantees the epoch scheme gives (no node is freed, so no
//! address is reused while a popper holds it), so the models check the linking protocol itself:
//! every atomic operation on `head` below is the shim's, and thus loom's.

use core::fmt;
use core::marker::PhantomData;
use core::mem::ManuallyDrop;
use core::ptr;

use crate::sync::atomic::{AtomicPtr, Ordering};
use crate::WorkQueue;

/// One list cell. `next` is immutable once the node is published (see the module invariants).
struct Node<T> {
    value: ManuallyDrop<T>,
    next: *mut Node<T>,
}

/// An unbounded lock-free multi-producer, multi-consumer LIFO stack.
///
/// ```
/// # if ember_containers::MODEL_CHECKED { return; } // loom types only work inside a model
/// use ember_containers::TreiberStack;
///
/// let stack = TreiberStack::new();
/// stack.push(1);
/// stack.push(2);
/// assert_eq!(stack.pop(), Some(2));
/// assert_eq!(stack.pop(), Some(1));
/// assert_eq!(stack.pop(), None);
/// ```
pub struct TreiberStack<T> {
    head: AtomicPtr<Node<T>>,
    /// The stack owns `T`s (for drop check and auto traits).
    _owns: PhantomData<T>,
}

// SAFETY: values move between threads through the stack (push on one thread, pop on another),
// which needs `T: Send` and nothing more: no `&T` is ever handed out, so `T: Sync` is not needed.
unsafe impl<T: Send> Send for TreiberStack<T> {}
// SAFETY: as above; all shared access to nodes goes through the atomic `head` protocol.
unsafe impl<T: Send> Sync for TreiberStack<T> {}

/// Protection for the window between loading `head` and the compare-and-swap that follows.
#[cfg(not(loom))]
type Guard = crossbeam_epoch::Guard;
#[cfg(loom)]
struct Guard;

#[cfg(not(loom))]
fn pin() -> Guard {
    crossbeam_epoch::pin()
}
#[cfg(loom)]
fn pin() -> Guard {
    Guard
}

/// Frees `node` once no pinned thread can still hold it.
///
/// # Safety
///
/// `node` must have been unlinked from the stack by the caller, its value already moved out,
/// and it must not be retired twice.
#[cfg(not(loom))]
unsafe fn retire<T>(guard: &Guard, node: *mut Node<T>) {
    // SAFETY: the caller unlinked `node`, so no thread can newly reach it; threads that reached
    // it earlier are pinned, and the epoch scheme frees it only after they unpin. Dropping the
    // `Node` does not drop its `ManuallyDrop` value, which the caller already moved out.
    unsafe { guard.defer_destroy(crossbeam_epoch::Shared::from(node as *const Node<T>)) }
}
/// Under loom, retired nodes are leaked: see the module documentation.
#[cfg(loom)]
unsafe fn retire<T>(_guard: &Guard, _node: *mut Node<T>) {}

impl<T> TreiberStack<T> {
    /// Creates an empty stack.
    pub fn new() -> Self {
        Self {
            head: AtomicPtr::new(ptr::null_mut()),
            _owns: PhantomData,
        }
    }

    /// Pushes `value` on top of the stack.
    pub fn push(&self, value: T) {
        let node = Box::into_raw(Box::new(Node {
            value: ManuallyDrop::new(value),
            next: ptr::null_mut(),
        }));
        // Relaxed: the head we read is only stored into our private node's `next`; we never
        // dereference it, so we need no synchronisation with its pusher.
        let mut head = self.head.load(Ordering::Relaxed);
        loop {
            // SAFETY: `node` is ours alone until the compare-and-swap below publishes it.
            unsafe { (*node).next = head };
            // Release on success: a popper that acquires `head` must see the node's value and
            // `next`, both written above. Relaxed on failure: as for the first load.
            match self
                .head
                .compare_exchange_weak(head, node, Ordering::Release, Ordering::Relaxed)
            {
                Ok(_) => return,
                Err(current) => head = current,
            }
        }
    }

    /// Pops the most recently pushed value still on the stack, or returns `None` if the stack
    /// was empty.
    pub fn pop(&self) -> Option<T> {
        let guard = pin();
        // Acquire: pairs with the pusher's Release so the node's `next` and value are visible.
        let mut head = self.head.load(Ordering::Acquire);
        loop {
            if head.is_null() {
                return None;
            }
            // SAFETY: `head` was loaded while pinned, so even if another popper has unlinked it
            // since, it has not been freed (the module's reclamation argument); `next` is
            // immutable once published.
            let next = unsafe { (*head).next };
            // Acquire on both outcomes: on failure we dereference the new head next time round.
            // On success our compare-and-swap stores `next`; it needs no Release of its own,
            // because every later operation on `head` is a read-modify-write, which continues
            // the release sequence of the push that published `next`, so a popper acquiring it
            // still synchronises with that push.
            match self
                .head
                .compare_exchange_weak(head, next, Ordering::Acquire, Ordering::Acquire)
            {
                Ok(_) => {
                    // SAFETY: our compare-and-swap unlinked `head`, making us the only owner of
                    // its value; other poppers may still read its `next` but never its value.
                    let value = unsafe { ptr::read(&(*head).value) };
                    // SAFETY: unlinked by us, value moved out just above, retired only here.
                    unsafe { retire(&guard, head) };
                    return Some(ManuallyDrop::into_inner(value));
                }
                Err(current) => head = current,
            }
        }
    }

    /// Returns whether the stack was empty at the moment it was looked at.
    pub fn is_empty(&self) -> bool {
        self.head.load(Ordering::Acquire).is_null()
    }
}

impl<T> Default for TreiberStack<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T> fmt::Debug for TreiberStack<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TreiberStack")
            .field("is_empty", &self.is_empty())
            .finish()
    }
}

impl<T> Drop for TreiberStack<T> {
    fn drop(&mut self) {
        // `&mut self`: no other thread can touch the list, so it is freed directly.
        let mut node = self.head.load(Ordering::Relaxed);
        while !node.is_null() {
            // SAFETY: every node still linked was created by `Box::into_raw` in `push`, is
            // reachable only from this list, and still owns its value.
            let mut boxed = unsafe { Box::from_raw(node) };
            node = boxed.next;
            // SAFETY: the value was never moved out (the node was never popped).
            unsafe { ManuallyDrop::drop(&mut boxed.value) };
        }
    }
}

/// Shared by all workers: the worker index is ignored.
impl<T: Send> WorkQueue<T> for TreiberStack<T> {
    fn push(&self, _worker: usize, item: T) {
        TreiberStack::push(self, item);
    }

    fn pop(&self, _worker: usize) -> Option<T> {
        TreiberStack::pop(self)
    }
}
