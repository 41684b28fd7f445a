//! Per-worker parking and the sleeper set that decides who wakes.
//!
//! Two pieces, each small enough to check by eye and by loom:
//!
//! * [`Parker`] blocks one thread until another unparks it. It keeps a *token*, like
//!   [`std::thread::park`]: an `unpark` that comes before the `park` is not lost, the `park`
//!   returns at once. The fast paths touch only the parker's own atomic; the mutex and condvar
//!   are used only when the thread really blocks.
//! * [`SleeperSet`] is the list of parked workers a waker chooses from. Who is chosen is the
//!   point of the whole crate: the most recently parked worker ([`SleeperSet::pop_latest`],
//!   LIFO, whose cache is still warm) or the lowest-numbered one
//!   ([`SleeperSet::pop_lowest`], which keeps the set of busy CPUs small and stable). A FIFO
//!   choice, which channels and OS semaphores make, would cycle through every thread.
//!
//! The set is a mutex-protected stack. It is touched only on the way to sleep and on a wake-up,
//! both of which already cost a system call, so a lock-free structure would buy nothing; the
//! hot question "is anybody asleep?" is answered without the lock by [`SleeperSet::len`] and
//! [`SleeperSet::is_listed`].
//!
//! # Invariants
//!
//! * A worker index is in the stack at most once, and `listed[i]` is true exactly while `i` is
//!   in the stack (both change only under the lock).
//! * `len` equals the stack's length whenever the lock is free.
//!
//! Why a wake-up is never lost is argued where the set is used, in `wake/README.md`: a sleeper
//! is listed *before* it looks at the queues one last time, and a pusher looks at the set
//! *after* its push, with a `SeqCst` fence on both sides.

use crate::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use crate::sync::{lock, Condvar, Mutex};

const EMPTY: usize = 0;
const PARKED: usize = 1;
const NOTIFIED: usize = 2;

/// Blocks one thread until it is unparked; an early unpark leaves a token.
pub(crate) struct Parker {
    state: AtomicUsize,
    lock: Mutex<()>,
    cvar: Condvar,
}

impl Parker {
    pub(crate) fn new() -> Self {
        Parker {
            state: AtomicUsize::new(EMPTY),
            lock: Mutex::new(()),
            cvar: Condvar::new(),
        }
    }

    /// Blocks until [`unpark`](Self::unpark) is called or `deadline` passes, or returns at
    /// once if a token is waiting. Returns `true` if the thread really blocked.
    pub(crate) fn park(&self, deadline: Option<std::time::Instant>) -> bool {
        // Consume a waiting token without locking. SeqCst (not just Acquire) so that a park
        // cannot be ordered before the caller's last look at the queues.
        if self
            .state
            .compare_exchange(NOTIFIED, EMPTY, Ordering::SeqCst, Ordering::SeqCst)
            .is_ok()
        {
            return false;
        }
        let mut guard = lock(&self.lock);
        match self
            .state
            .compare_exchange(EMPTY, PARKED, Ordering::SeqCst, Ordering::SeqCst)
        {
            Ok(_) => {}
            Err(NOTIFIED) => {
                // The token arrived between the fast path and the lock. A swap rather than a
                // store: equivalent here (only the owner leaves NOTIFIED), and it keeps loom
                // from reordering a plain store into a concurrent `unpark`'s swap (loom#254).
                self.state.swap(EMPTY, Ordering::SeqCst);
                return false;
            }
            Err(state) => unreachable!("parker in state {state}: parked twice at once"),
        }
        let mut waited = false;
        loop {
            guard = match deadline {
                None => self
                    .cvar
                    .wait(guard)
                    .unwrap_or_else(|poisoned| poisoned.into_inner()),
                Some(deadline) => {
                    let left = deadline.saturating_duration_since(std::time::Instant::now());
                    if left.is_zero() {
                        // Time is up: leave PARKED for EMPTY, unless a token came meanwhile
                        // (then it is consumed, as by any park that returns).
                        self.state.swap(EMPTY, Ordering::SeqCst);
                        return waited;
                    }
                    self.cvar
                        .wait_timeout(guard, left)
                        .unwrap_or_else(|poisoned| poisoned.into_inner())
                        .0
                }
            };
            waited = true;
            // Condvars wake spuriously; only a token (or the deadline) ends the wait.
            if self
                .state
                .compare_exchange(NOTIFIED, EMPTY, Ordering::SeqCst, Ordering::SeqCst)
                .is_ok()
            {
                return true;
            }
        }
    }

    /// Whether the owner is blocked in `park` (or committed to blocking: it holds the lock
    /// between this state and its wait), for the models that start from parked workers.
    #[cfg(all(test, loom))]
    pub(crate) fn is_parked(&self) -> bool {
        self.state.load(Ordering::SeqCst) == PARKED
    }

    /// Leaves a token and wakes the thread if it is blocked. Returns `true` if it was blocked
    /// (a real wake-up), `false` if the token will be consumed by its next `park`.
    pub(crate) fn unpark(&self) -> bool {
        match self.state.swap(NOTIFIED, Ordering::SeqCst) {
            EMPTY | NOTIFIED => false,
            PARKED => {
                // Taking the lock orders this notify after the parker's `wait` began: the
                // parker holds the lock from its PARKED transition until `wait` releases it.
                drop(lock(&self.lock));
                self.cvar.notify_one();
                true
            }
            state => unreachable!("parker in unknown state {state}"),
        }
    }
}

/// The parked workers, from which a waker picks one.
pub(crate) struct SleeperSet {
    stack: Mutex<Vec<usize>>,
    listed: Box<[AtomicBool]>,
    len: AtomicUsize,
}

impl SleeperSet {
    pub(crate) fn new(workers: usize) -> Self {
        SleeperSet {
            stack: Mutex::new(Vec::with_capacity(workers)),
            listed: (0..workers).map(|_| AtomicBool::new(false)).collect(),
            len: AtomicUsize::new(0),
        }
    }

    /// How many workers are listed. A hint, read without the lock; callers that act on it
    /// order it against their push with a `SeqCst` fence.
    #[inline]
    pub(crate) fn len(&self) -> usize {
        self.len.load(Ordering::SeqCst)
    }

    /// Whether worker `index` is listed. Same caveats as [`len`](Self::len).
    #[inline]
    pub(crate) fn is_listed(&self, index: usize) -> bool {
        self.listed[index].load(Ordering::SeqCst)
    }

    /// Lists `index` as asleep. It must not be listed already.
    pub(crate) fn insert(&self, index: usize) {
        let mut stack = lock(&self.stack);
        debug_assert!(!self.listed[index].load(Ordering::Relaxed));
        stack.push(index);
        self.listed[index].store(true, Ordering::SeqCst);
        self.len.store(stack.len(), Ordering::SeqCst);
    }

    /// Un-lists `index` if it is still listed; returns whether it was (`false`: a waker
    /// already picked it).
    pub(crate) fn remove(&self, index: usize) -> bool {
        if !self.listed[index].load(Ordering::SeqCst) {
            // Only the owner inserts its own index, so once a waker cleared the flag it stays
            // clear until the owner inserts again.
            return false;
        }
        let mut stack = lock(&self.stack);
        let Some(pos) = stack.iter().rposition(|&i| i == index) else {
            return false;
        };
        stack.remove(pos);
        self.listed[index].store(false, Ordering::SeqCst);
        self.len.store(stack.len(), Ordering::SeqCst);
        true
    }

    /// Takes the most recently listed worker (LIFO).
    pub(crate) fn pop_latest(&self) -> Option<usize> {
        self.pop_if(|stack| stack.len().checked_sub(1), || true, |_| {})
    }

    /// Takes the most recently listed worker if `when` holds, evaluated under the set's lock;
    /// `then` runs under the lock too, so a second waker racing with this one sees its effect.
    pub(crate) fn pop_latest_if(
        &self,
        when: impl FnOnce() -> bool,
        then: impl FnOnce(usize),
    ) -> Option<usize> {
        self.pop_if(|stack| stack.len().checked_sub(1), when, then)
    }

    /// Takes the lowest-numbered listed worker.
    pub(crate) fn pop_lowest(&self) -> Option<usize> {
        self.pop_if(
            |stack| (0..stack.len()).min_by_key(|&pos| stack[pos]),
            || true,
            |_| {},
        )
    }

    /// Takes worker `index` if it is listed.
    pub(crate) fn pop_exact(&self, index: usize) -> Option<usize> {
        self.remove(index).then_some(index)
    }

    /// The listed workers, oldest first.
    pub(crate) fn snapshot(&self) -> Vec<usize> {
        lock(&self.stack).clone()
    }

    /// Takes every listed worker.
    pub(crate) fn drain(&self) -> Vec<usize> {
        let mut stack = lock(&self.stack);
        for &i in stack.iter() {
            self.listed[i].store(false, Ordering::SeqCst);
        }
        self.len.store(0, Ordering::SeqCst);
        std::mem::take(&mut *stack)
    }

    fn pop_if(
        &self,
        choose: impl FnOnce(&[usize]) -> Option<usize>,
        when: impl FnOnce() -> bool,
        then: impl FnOnce(usize),
    ) -> Option<usize> {
        if self.len() == 0 {
            return None;
        }
        let mut stack = lock(&self.stack);
        if !when() {
            return None;
        }
        let pos = choose(&stack)?;
        let index = stack.remove(pos);
        // `then` runs before the listing is cleared: a sleeper that sees itself un-listed
        // (`remove` returning false without the lock) must also see what `then` did, e.g.
        // that it was counted as a searcher.
        then(index);
        self.listed[index].store(false, Ordering::SeqCst);
        self.len.store(stack.len(), Ordering::SeqCst);
        Some(index)
    }
}
