//! `broadcast`: run a closure once on every worker of a pool and collect the results.
//!
//! # The protocol
//!
//! Each worker has a *broadcast queue* that only it takes from (`BroadcastQueue`: a
//! mutex-held list, a `pending` hint, and a `closed` flag). A broadcast
//!
//! 1. locks every worker's queue, in index order, and, unless one of them is closed, pushes
//!    one job on each (worker `i` gets the job that fills result slot `i`) and sets `pending`;
//! 2. unlocks them, and then
//! 3. unparks every worker through its parker ([`Sleep::wake_worker`](crate::wake::Sleep)),
//!    which leaves a token if the worker is not parked.
//!
//! A worker takes from its broadcast queue when its own deque is empty, before it steals
//! (rayon's order: a broadcast runs "after the local work, before stealing"), and, if it is
//! waiting, in the same loop that runs other jobs while it waits. It reads `pending` first,
//! without the lock, and locks only when it is set.
//!
//! **Why no worker sleeps through its broadcast job.** The job is pushed before the unpark
//! (steps 1–3, program order), and the unpark's swap of the parker state is `SeqCst`, read by
//! the `SeqCst` compare-exchange with which the worker's `park` consumes the token. So every
//! `park` that returns on that token happens after the push, and the worker's next look at
//! its queue sees `pending` set. A worker that parks *before* the unpark is woken by it; one
//! that parks after it returns at once (the token); one that is busy sees the job at its next
//! look for work, which comes after its current job (a worker running a job that never
//! returns, e.g. blocked on a channel, never runs the broadcast — as in rayon). The token may
//! cost a worker that had looked already one spurious loop; nothing is lost. The queues are
//! not part of `Registry::has_work`, the look every sleeper makes: only the owner can take
//! the job, and the targeted unpark is what reaches it.
//!
//! **Why no job is left behind at shutdown.** A worker leaving the pool closes its queue
//! under the queue's lock, and only if the queue is empty (`Registry::close_broadcasts`);
//! otherwise it runs what is there and tries again. A broadcast checks every queue for
//! `closed` under the same locks, before it pushes anything. So either it pushes to every
//! worker while all are open, and each runs its job before it can close; or it finds one
//! closed and pushes nothing: the broadcast then panics ("the pool is shutting down"). No use
//! of the public API reaches that branch: once the last handle is gone only the pool's own
//! jobs and exit handlers can broadcast on it, and a worker closes its queue only after the
//! second round of the shutdown drain (every worker idle at once after every exit handler
//! returned, `Registry::drain_in`), when none of them runs. The check stays as the defence of that argument. Locks are taken in index order,
//! and a worker holds only its own, so the two never deadlock.
//!
//! The loom models in `src/loom/broadcast.rs` drive this code: a broadcast racing a worker on its way to
//! sleep, and a broadcast racing a worker that leaves.
//!
//! # Jobs and accounting
//!
//! The jobs live in the broadcasting frame (a result slot each, and one shared count latch
//! whose last decrement wakes the caller), so a broadcast allocates one small vector and no
//! job on the heap. The frame holds an abort guard from the push until the latch is set. A
//! broadcast job is not a counted task for `wait_idle` (`Runner::start_uncounted`), like
//! other work moved onto a pool for a caller who waits for it.

use std::cell::UnsafeCell;
use std::collections::VecDeque;
use std::marker::PhantomData;
use std::panic::{self, AssertUnwindSafe};

use crate::pool::jobs::job::{Job, JobRef, Panic, Runner};
use crate::pool::jobs::latch::{CountLatch, Waiter};
use crate::pool::jobs::unwind::{guarded_frame, AbortOnUnwind};
use crate::pool::workers::registry::Registry;
use crate::pool::workers::wait::{self, Sleeper};
use crate::pool::workers::worker::WorkerThread;
use crate::sync::atomic::{AtomicBool, Ordering};
use crate::sync::{lock, Mutex, MutexGuard};

guarded_frame!(
    BroadcastFrame,
    "a broadcast (its jobs, in this frame, may be running on the workers)"
);

/// What a closure run by [`Pool::broadcast`](crate::Pool::broadcast) learns about where it
/// runs.
pub struct BroadcastContext<'a> {
    index: usize,
    num_threads: usize,
    /// Neither `Send` nor `Sync`, like rayon's: it describes the thread it was given on.
    _marker: PhantomData<&'a mut dyn Fn()>,
}

impl BroadcastContext<'_> {
    /// The index of the worker running the closure, `0..num_threads()`; the closure's
    /// result lands at this index of the returned vector.
    pub fn index(&self) -> usize {
        self.index
    }

    /// The number of workers the broadcast runs on: the pool's
    /// [`threads`](crate::Pool::threads).
    pub fn num_threads(&self) -> usize {
        self.num_threads
    }
}

impl std::fmt::Debug for BroadcastContext<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BroadcastContext")
            .field("index", &self.index)
            .field("num_threads", &self.num_threads)
            .finish()
    }
}

/// One worker's broadcast queue (see the module doc).
#[derive(Default)]
pub(crate) struct BroadcastQueue {
    /// Whether `jobs` may be non-empty: a hint read without the lock, written under it.
    pending: AtomicBool,
    jobs: Mutex<Jobs>,
}

#[derive(Default)]
struct Jobs {
    queue: VecDeque<JobRef>,
    /// The worker has left the pool: nothing may be pushed any more.
    closed: bool,
}

impl BroadcastQueue {
    /// Takes the oldest job, if any (the owner only).
    #[inline]
    pub(crate) fn pop(&self) -> Option<JobRef> {
        // Acquire: pairs with the Release store of a pusher (the mutex orders the rest).
        if !self.pending.load(Ordering::Acquire) {
            return None;
        }
        self.pop_locked()
    }

    #[cold]
    fn pop_locked(&self) -> Option<JobRef> {
        let mut jobs = lock(&self.jobs);
        let job = jobs.queue.pop_front();
        self.pending
            .store(!jobs.queue.is_empty(), Ordering::Release);
        job
    }

    /// Jobs queued now, for the state dump.
    pub(crate) fn len(&self) -> usize {
        lock(&self.jobs).queue.len()
    }
}

/// A broadcast found a worker that has left the pool; nothing was pushed.
#[derive(Debug)]
pub(crate) struct Closed;

impl Registry {
    /// Pushes `jobs[i]` on worker `i`'s broadcast queue, for every worker, and wakes them all;
    /// or, if a worker has left the pool, pushes nothing (module doc).
    pub(crate) fn inject_broadcast(&self, jobs: Vec<JobRef>) -> Result<(), Closed> {
        debug_assert_eq!(jobs.len(), self.workers());
        {
            let mut locked: Vec<MutexGuard<'_, Jobs>> =
                self.broadcasts.iter().map(|q| lock(&q.jobs)).collect();
            if locked.iter().any(|jobs| jobs.closed) {
                return Err(Closed);
            }
            for ((queue, jobs), job) in self.broadcasts.iter().zip(&mut locked).zip(jobs) {
                jobs.queue.push_back(job);
                queue.pending.store(true, Ordering::Release);
            }
        }
        // After the push (module doc: the token carries it to a worker on its way to park).
        for index in 0..self.workers() {
            self.sleep.wake_worker(index);
        }
        Ok(())
    }

    /// Worker `index` leaves the pool: closes its broadcast queue if it is empty, and returns
    /// whether it did (if not, the worker runs what is queued and tries again).
    pub(crate) fn close_broadcasts(&self, index: usize) -> bool {
        let mut jobs = lock(&self.broadcasts[index].jobs);
        if !jobs.queue.is_empty() {
            return false;
        }
        jobs.closed = true;
        true
    }
}

impl WorkerThread {
    /// Takes the oldest job of this worker's broadcast queue, if any.
    #[inline]
    pub(crate) fn take_broadcast(&self) -> Option<JobRef> {
        let job = self.registry.broadcasts[self.index].pop()?;
        self.found_work();
        Some(job)
    }
}

/// What the jobs of one broadcast share.
struct Shared<'f, OP> {
    op: &'f OP,
    /// Pools blocked until the broadcast ends (`wait.rs`): the jobs carry them along.
    blocked: Vec<usize>,
    /// Jobs not finished yet; the last one wakes the caller.
    pending: CountLatch<'static>,
}

/// The job for one worker: where its result goes.
struct Slot<'s, 'f, OP, R> {
    shared: &'s Shared<'f, OP>,
    result: UnsafeCell<Option<std::thread::Result<R>>>,
}

impl<OP, R> Job for Slot<'_, '_, OP, R>
where
    OP: Fn(BroadcastContext<'_>) -> R + Sync,
    R: Send,
{
    unsafe fn execute(this: *const Self, runner: Runner<'_>) {
        runner.start_uncounted();
        // SAFETY: the broadcasting frame keeps every slot and `shared` alive until the count
        // reaches zero, which this job's own decrement below is needed for; until then only
        // this thread touches `result`.
        let this = unsafe { &*this };
        let shared = this.shared;
        let context = BroadcastContext {
            index: runner.worker,
            num_threads: runner.registry.workers(),
            _marker: PhantomData,
        };
        let result = wait::with_blocked_pools(&shared.blocked, || {
            panic::catch_unwind(AssertUnwindSafe(|| (shared.op)(context)))
        });
        // SAFETY: as above; the caller reads it only after the count reached zero.
        unsafe { *this.result.get() = Some(result) };
        // SAFETY: the latch is valid until the count reaches zero; this is the last use of
        // the frame by this job.
        unsafe { CountLatch::decrement(&shared.pending) };
    }
}

/// Runs `op` once on every worker of `registry` and returns the results in worker order.
pub(crate) fn broadcast<OP, R>(registry: &Registry, op: OP) -> Vec<R>
where
    OP: Fn(BroadcastContext<'_>) -> R + Sync,
    R: Send,
{
    let workers = registry.workers();
    // The caller's own pool, if it is a worker, is blocked until every job has run.
    let (sleeper, blocked) = WorkerThread::with_any_current(|worker| {
        let own = worker.map(|worker| worker.registry.id);
        (Sleeper::current(), wait::blocked_pools_with(own))
    });
    let shared = Shared {
        op: &op,
        blocked,
        pending: CountLatch::with_count(workers, Waiter::Sleeper(sleeper)),
    };
    let slots: Vec<Slot<'_, '_, OP, R>> = (0..workers)
        .map(|_| Slot {
            shared: &shared,
            result: UnsafeCell::new(None),
        })
        .collect();
    // From the push until the count reaches zero, workers may run jobs in this frame.
    let guard = AbortOnUnwind::<BroadcastFrame>::new();
    // SAFETY: `slots` and `shared` stay in this frame, unmoved, until every job has run:
    // the wait below returns only then, and the guard turns an unwind before it into an
    // abort. If the push is refused, no job was pushed.
    let jobs = slots
        .iter()
        .map(|slot| unsafe { JobRef::new(slot) })
        .collect();
    if registry.inject_broadcast(jobs).is_err() {
        guard.disarm();
        drop(slots);
        drop(shared);
        // `op` is user code: its drop must not run while this panic unwinds (a second
        // panic there would abort), so it is dropped, contained, first.
        registry.drop_reporting(op);
        panic!(
            "ember: broadcast on a pool that is shutting down (its last handle is gone and a \
             worker has left); broadcast from a job or exit handler of a pool that lives on"
        );
    }
    wait::block_until(&|| shared.pending.latch().probe(), None);
    guard.disarm();
    let outcome = collect(registry, slots);
    drop(shared);
    // As above: `op` is dropped, contained, before a job's panic is re-raised.
    match outcome {
        Ok(values) => values,
        Err(payload) => {
            registry.drop_reporting(op);
            panic::resume_unwind(payload)
        }
    }
}

/// The results in worker order, or the first panic (by worker index) once every other
/// result is dropped, their panics reported (`unwind.rs`).
fn collect<OP, R>(registry: &Registry, slots: Vec<Slot<'_, '_, OP, R>>) -> Result<Vec<R>, Panic> {
    let results = slots.into_iter().map(|slot| {
        slot.result
            .into_inner()
            .expect("every broadcast job ran before the count reached zero")
    });
    let mut values = Vec::with_capacity(results.len());
    let mut first_panic: Option<Panic> = None;
    for result in results {
        match (result, &first_panic) {
            (Ok(value), None) => values.push(value),
            (Err(payload), None) => {
                first_panic = Some(payload);
                for value in values.drain(..) {
                    registry.drop_reporting(value);
                }
            }
            (Ok(value), Some(_)) => registry.drop_reporting(value),
            (Err(payload), Some(_)) => registry.report_panic(payload),
        }
    }
    match first_panic {
        None => Ok(values),
        Some(payload) => Err(payload),
    }
}
