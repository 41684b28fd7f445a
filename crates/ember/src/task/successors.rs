//! The list of tasks waiting on one task or event: push-only until it is closed, exactly once.
//!
//! A dependent registers itself with [`Successors::push`]; the predecessor, when it ends, takes
//! the whole list with [`Successors::close`] and releases one permit of each. Registering on a
//! predecessor that already ended fails, and the registrant counts that input as done itself.
//!
//! Written here rather than taken from a crate because what it needs is narrower than any
//! general container: a Treiber-style push with a one-time *close* that swaps in a sentinel.
//! Nothing is ever popped before the close, and after it the closer owns every link, so there
//! is no ABA problem and no memory to reclaim concurrently — the two reasons lock-free stacks
//! usually need an epoch scheme.
//!
//! # Invariants
//!
//! * `head` is null (empty, open), a pointer to the newest link (open), or `CLOSED`.
//! * Once `CLOSED`, `head` never changes again.
//! * A link pushed while open is returned by `close` exactly once; a push attempted after the
//!   close is refused and hands its item back. So every successor is released exactly once,
//!   either by the closer or by the registrant itself.
//!
//! # Orderings
//!
//! The successful push CAS is `Release` (publishes the link's contents) and the close swap is
//! `AcqRel`: it acquires every published link and releases what the predecessor did before
//! ending (its result) to a registrant that sees `CLOSED` with an `Acquire` load.

use std::sync::Arc;

use crate::sync::atomic::{AtomicPtr, Ordering};

use super::node::Node;

struct Link {
    node: Arc<dyn Node>,
    next: *mut Link,
}

/// A sentinel address no allocation can have.
fn closed() -> *mut Link {
    std::ptr::without_provenance_mut(1)
}

pub(crate) struct Successors {
    head: AtomicPtr<Link>,
}

impl Successors {
    pub(crate) fn new() -> Self {
        Successors {
            head: AtomicPtr::new(std::ptr::null_mut()),
        }
    }

    /// Registers `node`; hands it back if the list is already closed.
    pub(crate) fn push(&self, node: Arc<dyn Node>) -> Result<(), Arc<dyn Node>> {
        let mut head = self.head.load(Ordering::Acquire);
        if head == closed() {
            return Err(node);
        }
        let link = Box::into_raw(Box::new(Link {
            node,
            next: std::ptr::null_mut(),
        }));
        loop {
            // SAFETY: `link` is ours until the CAS below publishes it.
            unsafe { (*link).next = head };
            match self
                .head
                .compare_exchange_weak(head, link, Ordering::Release, Ordering::Acquire)
            {
                Ok(_) => return Ok(()),
                Err(actual) if actual == closed() => {
                    // SAFETY: never published; we still own it.
                    let link = unsafe { Box::from_raw(link) };
                    return Err(link.node);
                }
                Err(actual) => head = actual,
            }
        }
    }

    /// Closes the list and returns what was registered, oldest first. Called once.
    pub(crate) fn close(&self) -> Vec<Arc<dyn Node>> {
        let mut link = self.head.swap(closed(), Ordering::AcqRel);
        assert!(link != closed(), "a task or event ended twice");
        let mut nodes = Vec::new();
        while !link.is_null() {
            // SAFETY: every non-sentinel pointer in the list came from `Box::into_raw` in
            // `push`, and after the swap no other thread can reach it.
            let boxed = unsafe { Box::from_raw(link) };
            nodes.push(boxed.node);
            link = boxed.next;
        }
        nodes.reverse();
        nodes
    }
}

impl Drop for Successors {
    fn drop(&mut self) {
        let head = self.head.load(Ordering::Acquire);
        if head != closed() {
            // Never ended (a task dropped before it could run): free the links.
            let mut link = head;
            while !link.is_null() {
                // SAFETY: as in `close`; `&mut self` means nobody else can reach the list.
                let boxed = unsafe { Box::from_raw(link) };
                link = boxed.next;
            }
        }
    }
}
