//! A worker's private `join` halves under lazy joins (`worker.rs`, "Lazy joins"): a stack that
//! only the worker's own thread touches.
//!
//! Every lazy `join` pushes one half here and pops it back, so this is the hottest structure
//! of that path. It is a `Vec` used as a stack in an `UnsafeCell`, rather than the obvious
//! `RefCell<VecDeque<_>>`: a `join` only ever pushes on top and takes back the top, and the
//! halves leave from the bottom only all together (`drain_oldest_first`), so the ring
//! arithmetic of a deque and the borrow flag of a `RefCell` (two checks per `join`) bought
//! nothing. `callgrind` counts the difference on `examples/hot_paths.rs` (`EMBER_LAZY=1`).
//!
//! No method lends a reference out or calls code that could reach this stack again while it
//! holds its own, which is what keeps the `UnsafeCell` sound; the type is `!Sync`, so only
//! one thread ever calls them.

use std::cell::UnsafeCell;

use super::job::JobRef;

pub(super) struct PrivateHalves {
    /// Oldest first.
    jobs: UnsafeCell<Vec<JobRef>>,
}

impl PrivateHalves {
    pub(super) fn new() -> Self {
        PrivateHalves {
            // Allocated by the first lazy `join`, not by every worker of every pool.
            jobs: UnsafeCell::new(Vec::new()),
        }
    }

    /// Runs `f` on the stack. `f` is one of this module's closures: it neither keeps the
    /// reference nor calls back into this stack.
    #[inline(always)]
    fn with<R>(&self, f: impl FnOnce(&mut Vec<JobRef>) -> R) -> R {
        // SAFETY: `PrivateHalves` is `!Sync` (it holds an `UnsafeCell`), so only the thread
        // owning it gets here, and every caller is a method below whose closure only works on
        // the `Vec` and returns: no other reference to it exists while this one lives.
        f(unsafe { &mut *self.jobs.get() })
    }

    /// Keeps `job` as the newest private half.
    #[inline(always)]
    pub(super) fn push(&self, job: JobRef) {
        self.with(|jobs| jobs.push(job));
    }

    /// Takes `job` back if it is still the newest private half; `false` if it was offered
    /// meanwhile.
    #[inline(always)]
    pub(super) fn pop_if_newest(&self, job: JobRef) -> bool {
        self.with(|jobs| {
            if jobs.last() == Some(&job) {
                jobs.pop();
                return true;
            }
            false
        })
    }

    #[inline(always)]
    pub(super) fn is_empty(&self) -> bool {
        self.with(|jobs| jobs.is_empty())
    }

    /// Hands every private half to `offer`, oldest first. `offer` (the worker's deque push)
    /// pushes nothing here, so the stack is left empty; a half it did push would stay, the
    /// newest, rather than be dropped (debug builds assert that none is). Each half
    /// leaves the stack before `offer` has it: were `offer` ever to unwind, the halves not
    /// yet offered would be lost (their `join`s would hang), never both offered and still
    /// here, where their own `join` would take them back and run them a second time.
    #[cold]
    pub(super) fn drain_oldest_first(&self, mut offer: impl FnMut(JobRef)) {
        // The whole `Vec` out (an empty one, which allocates nothing, in its place), so that
        // no reference to the stack lives while `offer` runs.
        let mut jobs = self.with(std::mem::take);
        for job in jobs.drain(..) {
            offer(job);
        }
        // Its capacity back, unless an offer pushed a half here meanwhile (none does): the
        // next lazy `join` does not grow the stack again.
        self.with(|current| {
            debug_assert!(current.is_empty(), "an offer pushed a private half");
            if current.is_empty() {
                *current = jobs;
            }
        });
    }
}
