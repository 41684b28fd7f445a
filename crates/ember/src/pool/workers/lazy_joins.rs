//! One worker's side of lazy and sequential joins (the "Lazy joins" and "Sequential joins"
//! sections of `worker.rs`'s module doc say why; `wake/README.md`, "Private steals", says how
//! a worker about to sleep takes a private half): whether they are on, the worker's private
//! halves, whether it is counted as wanting work, and what it read and stole on its way to
//! sleep. The worker keeps it all in one field, [`LazyJoins`]; the registry keeps what the
//! workers share, [`SharedLazyJoins`] (who wants work, every worker's private halves).

use std::cell::Cell;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use crossbeam_deque::Steal;
use crossbeam_utils::CachePadded;

use crate::pool::jobs::job::JobRef;
use crate::pool::workers::private_halves::PrivateHalves;
use crate::pool::workers::registry::Registry;

/// With sequential joins, the private halves a worker must keep before a `join` may run as
/// two calls (chili's threshold): the outermost `join`s, whose halves are the largest, always
/// leave theirs to thieves.
pub(crate) const MIN_KEPT_FOR_SEQUENTIAL: usize = 3;

/// What a pool's workers share of lazy joins (module doc): `Registry::lazy`.
pub(crate) struct SharedLazyJoins {
    /// With lazy joins: workers out of work of their own (`LazyJoins::count_wanting`).
    wanting_work: CachePadded<AtomicUsize>,
    /// Each worker's private `join` halves, which a worker about to sleep may steal from
    /// (`private_halves.rs`) where the system has the heavy barrier.
    private_halves: Box<[Arc<CachePadded<PrivateHalves>>]>,
}

impl SharedLazyJoins {
    /// The shared state of a pool of `workers`, with lazy joins `on` or not.
    pub(crate) fn new(workers: usize, on: bool) -> Self {
        SharedLazyJoins {
            // Every worker starts out of work (`LazyJoins::new` counts itself in).
            wanting_work: CachePadded::new(AtomicUsize::new(if on { workers } else { 0 })),
            private_halves: (0..workers)
                .map(|_| Arc::new(CachePadded::new(PrivateHalves::new())))
                .collect(),
        }
    }

    /// With lazy joins: whether some worker is out of work of its own. A hint, read without a
    /// fence: a stale answer keeps one `join` half private until its worker's next `join`, wait
    /// or yield (`Tuning::lazy_joins`), never loses it.
    #[inline(always)]
    pub(crate) fn wants_work(&self) -> bool {
        self.wanting_work.load(Ordering::Relaxed) != 0
    }

    /// A worker starts or stops wanting work (lazy joins).
    #[cold]
    fn count_wanting(&self, wants: bool) {
        if wants {
            self.wanting_work.fetch_add(1, Ordering::Relaxed);
        } else {
            self.wanting_work.fetch_sub(1, Ordering::Relaxed);
        }
    }
}

/// One worker's lazy-join state (module doc).
pub(crate) struct LazyJoins {
    /// Whether `join` keeps second halves private while no worker wants work.
    on: bool,
    /// Whether most `join`s made while no worker wants work run as two calls.
    sequential: bool,
    /// Second halves of this worker's `join`s not offered to thieves, oldest first:
    /// `registry.lazy.private_halves[index]`, where workers about to sleep may steal them, held
    /// here too so that a `join` reaches it through one pointer.
    private: Arc<CachePadded<PrivateHalves>>,
    /// Where this worker, about to sleep, read each worker's private `top` before its heavy
    /// barrier (`WorkerThread::idle`); empty without private steals.
    tops: Box<[Cell<usize>]>,
    /// A private half this worker stole on its way to sleep, to run next.
    stolen: Cell<Option<JobRef>>,
    /// Whether this worker is counted in `Registry::wanting_work` (lazy joins only).
    wanting: Cell<bool>,
}

impl LazyJoins {
    /// Worker `index`'s state in the pool of `registry`.
    pub(crate) fn new(registry: &Registry, index: usize) -> Self {
        let on = registry.config.lazy_joins;
        LazyJoins {
            on,
            sequential: registry.config.sequential_joins,
            private: Arc::clone(&registry.lazy.private_halves[index]),
            tops: if registry.sleep.private_steals() {
                (0..registry.workers()).map(|_| Cell::new(0)).collect()
            } else {
                Box::default()
            },
            stolen: Cell::new(None),
            // Counted in `Registry::wanting_work` from the start, before this thread has run
            // at all: a `join` made on a pool whose workers have not started yet must offer
            // its half.
            wanting: Cell::new(on),
        }
    }

    /// Whether this worker's pool has lazy joins.
    #[inline(always)]
    pub(crate) fn on(&self) -> bool {
        self.on
    }

    /// Whether no half is kept private.
    pub(crate) fn is_empty(&self) -> bool {
        self.private.is_empty()
    }

    /// With lazy joins, counts this worker in (or out of) the workers that want work
    /// (`Registry::wanting_work`): in from the moment its own work runs out, before it looks
    /// elsewhere, until it runs a job or returns to user code; asleep, it stays counted.
    #[inline(always)]
    pub(crate) fn count_wanting(&self, registry: &Registry, wants: bool) {
        if self.on && self.wanting.get() != wants {
            self.wanting.set(wants);
            registry.lazy.count_wanting(wants);
        }
    }

    /// With sequential joins: whether the `join` about to start runs as two calls: this
    /// worker keeps at least [`MIN_KEPT_FOR_SEQUENTIAL`] halves that thieves may take, and no
    /// worker wants work (a stale count only leaves the offer to the worker's next `join`, as
    /// it does a private half's).
    #[inline(always)]
    pub(crate) fn join_in_sequence(&self, registry: &Registry) -> bool {
        self.sequential
            && self.private.len() >= MIN_KEPT_FOR_SEQUENTIAL
            && !registry.lazy.wants_work()
    }

    /// Keeps `job`, the second half of a `join`, private if no worker wants work (returns
    /// `true`); else offers the private halves, oldest first, and `job` after them, through
    /// `push` (returns `false`): the deque keeps the halves in the order they were made. The
    /// caller has listed itself as a light pusher where there are private steals.
    #[inline(always)]
    pub(crate) fn keep(
        &self,
        registry: &Registry,
        job: JobRef,
        push: impl Fn(JobRef) + Copy,
    ) -> bool {
        if self.private.push(job) {
            // The push, then the look at `wanting_work`: with a worker's count there and its
            // heavy barrier before its look at this stack, a Dekker pattern. Either this look
            // sees it wanting and offers the half, or its look after the barrier sees the half
            // (README, "Private steals").
            registry.sleep.barrier.light();
            if !registry.lazy.wants_work() {
                return true;
            }
            self.offer_all_slow(push);
            return false;
        }
        // Full: the private halves go to the deque, and this one after them. `push` is
        // copied rather than lent (`&mut`): a lent closure must sit in memory, and the
        // compiler stored it there on every `join`'s path.
        self.offer_all(push);
        push(job);
        false
    }

    /// Takes `job` back from the private list if it is still the newest there (it was not
    /// offered meanwhile).
    #[inline(always)]
    pub(crate) fn take_back(&self, registry: &Registry, job: JobRef) -> bool {
        self.private.pop_if_newest(job, &registry.sleep.barrier)
    }

    /// Offers every private half to thieves through `push`, oldest first. Without lazy joins
    /// the list stays empty, so the test is all a spawn, wait or yield pays.
    #[inline]
    pub(crate) fn offer_all(&self, push: impl FnMut(JobRef)) {
        if !self.private.is_empty() {
            self.offer_all_slow(push);
        }
    }

    /// Each half with the wake-up check of any push: one fence and check per half, rather than
    /// one after all of them, so that Biased's overload check sees every length the deque
    /// passes through (a batch boundary crossed in between would otherwise go unseen).
    #[cold]
    fn offer_all_slow(&self, push: impl FnMut(JobRef)) {
        self.private.drain_oldest_first(push);
    }

    /// Before a sleep that may issue the heavy barrier: reads each worker's private `top`,
    /// which a private steal must read before that barrier and the rest after it
    /// (`private_halves.rs`).
    pub(crate) fn note_tops(&self, registry: &Registry) {
        for (top, halves) in self.tops.iter().zip(&registry.lazy.private_halves) {
            top.set(halves.top());
        }
    }

    /// The private steal from worker `victim`, with the `top` noted before the barrier.
    pub(crate) fn steal_from(&self, registry: &Registry, victim: usize) -> Steal<JobRef> {
        registry.lazy.private_halves[victim].steal(self.tops[victim].get())
    }

    /// Keeps a half stolen on the way to sleep, for the worker to run next.
    pub(crate) fn set_stolen(&self, job: JobRef) {
        self.stolen.set(Some(job));
    }

    /// The half stolen on the way to sleep, if any.
    pub(crate) fn take_stolen(&self) -> Option<JobRef> {
        self.stolen.take()
    }
}
