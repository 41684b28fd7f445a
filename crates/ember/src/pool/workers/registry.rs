//! The state one pool's workers share: queues, sleep state, counters, shutdown.
//!
//! Counters follow one rule: a counter written by one thread only (its worker) is updated with
//! a plain load and store, never a read-modify-write, so the path on which a worker pops from
//! its own non-empty deque touches no shared cache line. Counters that several threads write
//! (spawns from outside the pool, wake-ups aimed at a worker) use `fetch_add`.

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, AtomicUsize, Ordering};

use crossbeam_deque::{Injector, Stealer};
use crossbeam_utils::CachePadded;

use crate::config::PoolConfig;
use crate::pool::handlers::{ContainedHandlers, Handlers};
use crate::pool::jobs::job::{JobRef, Panic};
use crate::pool::jobs::unwind::{drop_catching, drop_payload};
use crate::pool::ops::broadcast::BroadcastQueue;
use crate::pool::workers::alarm_thread::AlarmThread;
use crate::pool::workers::fifo::Fifo;
use crate::pool::workers::lazy_joins::SharedLazyJoins;
use crate::pool::workers::wait::WaitList;
use crate::stats::{PoolStats, WorkerStats};
use crate::trace::Tracer;

use crate::pool::workers::worker::WorkerThread;
use crate::wake::Sleep;

/// What a worker is doing, for [`Pool`](crate::Pool)'s `Debug` dump.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub(crate) enum WorkerState {
    /// Running jobs or looking for them.
    Running = 0,
    /// Listed as asleep, parked or about to park.
    Sleeping = 1,
    /// Its thread has left the pool (shutdown).
    Exited = 2,
}

/// Counters written by one worker only.
#[derive(Default)]
pub(crate) struct WorkerCounters {
    pub(crate) tasks: AtomicU64,
    pub(crate) steals: AtomicU64,
    pub(crate) panics: AtomicU64,
    /// Held successors this worker pushed to its deque after taking one (delay-kick).
    pub(crate) kicks: AtomicU64,
    /// `spawn`s made on this worker.
    pub(crate) spawned: AtomicU64,
    /// Spawned tasks that finished on this worker.
    pub(crate) completed: AtomicU64,
    /// A counted task finished here and nobody has looked yet whether that left the pool
    /// idle (`wait_idle.rs`).
    pub(crate) idle_check_due: AtomicBool,
    /// Successors this worker holds right now (delay-kick).
    pub(crate) held: AtomicU64,
    /// How many waits (`join`, `scope`, a task, another pool) this worker is nested in.
    pub(crate) waits: AtomicU64,
    /// A [`WorkerState`].
    state: AtomicU8,
    /// One more than the processor this worker pinned itself to, or 0 (not asked, or
    /// refused: `PoolBuilder::pin_workers`).
    pub(crate) pinned: AtomicUsize,
}

impl WorkerCounters {
    pub(crate) fn set_state(&self, state: WorkerState) {
        self.state.store(state as u8, Ordering::Relaxed);
    }

    pub(crate) fn state(&self) -> WorkerState {
        match self.state.load(Ordering::Relaxed) {
            0 => WorkerState::Running,
            1 => WorkerState::Sleeping,
            _ => WorkerState::Exited,
        }
    }
}

/// Adds one to a counter only its owner writes.
pub(crate) fn bump(counter: &AtomicU64) {
    bump_by(counter, 1);
}

/// [`bump`] by `n`.
pub(crate) fn bump_by(counter: &AtomicU64, n: u64) {
    // Release pairs with the Acquire loads of `Registry::is_idle`.
    counter.store(counter.load(Ordering::Relaxed) + n, Ordering::Release);
}

/// Subtracts one from a counter only its owner writes.
pub(crate) fn unbump(counter: &AtomicU64) {
    counter.store(counter.load(Ordering::Relaxed) - 1, Ordering::Release);
}

/// Source of pool ids: unique for the life of the process, unlike addresses, which a new
/// pool can reuse after an old one is freed.
static NEXT_ID: AtomicUsize = AtomicUsize::new(1);

pub(crate) struct Registry {
    /// This pool's id (see `NEXT_ID`).
    pub(crate) id: usize,
    pub(crate) injector: Injector<JobRef>,
    pub(crate) stealers: Box<[Stealer<JobRef>]>,
    pub(crate) sleep: Sleep,
    pub(crate) counters: Box<[CachePadded<WorkerCounters>]>,
    /// Each worker's broadcast queue (`broadcast.rs`).
    pub(crate) broadcasts: Box<[CachePadded<BroadcastQueue>]>,
    /// Each worker's queue of `spawn_fifo` jobs (`fifo.rs`).
    pub(crate) fifos: Box<[Fifo]>,
    /// `spawn`s and tasks made outside the pool (several threads may add).
    pub(in crate::pool) external_spawns: CachePadded<AtomicU64>,
    /// Tasks that ended outside the pool (cancelled there by a dropped event).
    pub(in crate::pool) external_completions: CachePadded<AtomicU64>,
    /// Panics reported on threads that are not this pool's workers.
    external_panics: CachePadded<AtomicU64>,
    terminating: AtomicBool,
    /// `wait_idle` callers.
    pub(in crate::pool) idle_waiters: WaitList,
    /// Worker threads that have not exited yet.
    live_workers: AtomicUsize,
    /// The shutdown drain's two rounds (`WorkerThread::run_until_drained`), indexed by
    /// [`DrainRound`].
    drains: [Drain; 2],
    /// Threads waiting for every worker to exit (dropping the last handle).
    exit_waiters: WaitList,
    /// The user's panic, start and exit handlers (`handlers.rs`).
    pub(in crate::pool) handlers: ContainedHandlers,
    /// What the pool was built with (`config.rs`).
    pub(crate) config: PoolConfig,
    /// What the workers share of lazy joins: who wants work, and each worker's private
    /// halves (`lazy_joins.rs`).
    pub(crate) lazy: SharedLazyJoins,
    pub(crate) trace: Tracer,
    /// The pool's handles, for `Pool::current` (set once the pool is built; dead once the
    /// last handle is dropped).
    pub(in crate::pool) handle: std::sync::OnceLock<std::sync::Weak<crate::pool::PoolInner>>,
    /// The thread that waits for the alarm of deferred wake-ups, started at the first spawn
    /// that would owe one (`alarm_thread.rs`).
    pub(in crate::pool) alarm_thread: AlarmThread,
}

/// The pool as the awake-core budget sees it (`budget/mod.rs`).
impl crate::budget::Member for Registry {
    fn awake(&self) -> usize {
        self.sleep.awake()
    }

    /// Made if a job is queued after a `SeqCst` fence, which pairs with the push's. A job
    /// pushed behind the light barrier is not seen that way without a heavy one, so a pool
    /// with light pushes makes it whatever its queues say: one spurious wake-up at worst.
    fn wake_withheld(&self) {
        std::sync::atomic::fence(Ordering::SeqCst);
        if self.sleep.light_join_pushes() || self.has_work() {
            self.sleep.make_withheld_wake();
        }
    }
}

impl Registry {
    /// The registry of a pool configured by `config` (`PoolBuilder::build`, or a loom
    /// model), whose workers' deques `stealers` reads.
    pub(crate) fn new(
        stealers: Vec<Stealer<JobRef>>,
        config: PoolConfig,
        handlers: Handlers,
        trace: Tracer,
        alarm_thread: AlarmThread,
    ) -> Self {
        let workers = stealers.len();
        debug_assert_eq!(workers, config.workers);
        Registry {
            id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
            injector: Injector::new(),
            stealers: stealers.into_boxed_slice(),
            sleep: Sleep::for_pool(&config, trace.epoch()),
            counters: (0..workers).map(|_| CachePadded::default()).collect(),
            broadcasts: (0..workers).map(|_| CachePadded::default()).collect(),
            fifos: (0..workers).map(|_| Fifo::default()).collect(),
            external_spawns: CachePadded::default(),
            external_completions: CachePadded::default(),
            external_panics: CachePadded::default(),
            terminating: AtomicBool::new(false),
            idle_waiters: WaitList::new(),
            live_workers: AtomicUsize::new(workers),
            drains: [Drain::new(), Drain::new()],
            exit_waiters: WaitList::new(),
            handlers: handlers.into(),
            lazy: SharedLazyJoins::new(workers, config.lazy_joins),
            trace,
            handle: std::sync::OnceLock::new(),
            alarm_thread,
            config,
        }
    }

    pub(crate) fn workers(&self) -> usize {
        self.stealers.len()
    }

    /// Pushes a job on the global queue and wakes whoever the policy says.
    pub(crate) fn inject(&self, job: JobRef) {
        self.injector.push(job);
        self.sleep.notify_injected();
    }

    /// Whether any queue holds a job. Called after a `SeqCst` fence by a worker about to sleep.
    pub(crate) fn has_work(&self) -> bool {
        !self.injector.is_empty() || self.stealers.iter().any(|s| !s.is_empty())
    }

    /// How many jobs the global queue and the workers' deques hold, read one queue at a
    /// time, counted until there are `most` (a woken searcher's fan-out wakes no more
    /// workers than this, `wake/README.md`, "Fan-out"). Zero exactly when
    /// [`has_work`](Self::has_work) would say no; `visible_jobs(1)` reads the queues as it
    /// does, up to the first that holds a job.
    pub(crate) fn visible_jobs(&self, most: usize) -> usize {
        let mut jobs = 0;
        if !self.injector.is_empty() {
            jobs += self.injector.len().max(1);
        }
        for stealer in self.stealers.iter() {
            if jobs >= most {
                break;
            }
            if !stealer.is_empty() {
                jobs += stealer.len().max(1);
            }
        }
        jobs
    }

    /// Counts a `spawn` made outside the pool (before its job is pushed).
    pub(crate) fn count_external_spawn(&self) {
        self.external_spawns.fetch_add(1, Ordering::Release);
    }

    /// Counts a panic caught on `worker` (a spawned task's or a dependent task's).
    pub(crate) fn count_panic(&self, worker: usize) {
        bump(&self.counters[worker].panics);
    }

    /// Counts `n` panics caught on this thread, whichever it is.
    fn count_panics_here(&self, n: u64) {
        if n == 0 {
            return;
        }
        WorkerThread::with_current(self.id, |worker| match worker {
            Some(worker) => bump_by(&self.counters[worker.index].panics, n),
            None => {
                self.external_panics.fetch_add(n, Ordering::Relaxed);
            }
        });
    }

    /// A panic of user code that nobody waits for (`unwind.rs`): counted, and passed to the
    /// panic handler, whose own panic is counted and dropped; with no handler, dropped.
    #[cold]
    pub(crate) fn report_panic(&self, payload: Panic) {
        self.count_panics_here(1);
        let dropped_panics = match &self.handlers.panic {
            Some(handler) => {
                match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| handler(payload))) {
                    Ok(()) => 0,
                    Err(own) => 1 + drop_payload(own),
                }
            }
            None => drop_payload(payload),
        };
        self.count_panics_here(dropped_panics);
    }

    /// Drops `value`, a user value nobody will see; a panic of its `Drop` is reported.
    pub(crate) fn drop_reporting<T>(&self, value: T) {
        if let Some(payload) = drop_catching(value) {
            self.report_panic(payload);
        }
    }

    pub(crate) fn terminating(&self) -> bool {
        self.terminating.load(Ordering::SeqCst)
    }

    /// Starts shutdown: workers run what is queued, then exit.
    pub(crate) fn terminate(&self) {
        self.terminating.store(true, Ordering::SeqCst);
        self.sleep.wake_all();
    }

    /// A worker found no work after shutdown began: it counts itself drained in `round`.
    /// The last one to do so — every worker idle at once, so nothing is queued and no user
    /// code runs that could queue more — ends the round: returns `true` after waking
    /// everyone.
    ///
    /// Why nothing is left behind: a worker counts itself in only after a look that found
    /// nothing, and out (`drain_out`) before it looks again, so while one runs a job or an
    /// exit handler — which may push work and wait for it — the count is below the number of
    /// workers. Work pushed while others sleep drained wakes one of them through the wake
    /// policy, as any push does.
    pub(crate) fn drain_in(&self, round: DrainRound) -> bool {
        let drain = self.drain(round);
        if drain.drained.fetch_add(1, Ordering::SeqCst) + 1 == self.workers() {
            drain.done.store(true, Ordering::SeqCst);
            self.sleep.wake_all();
            return true;
        }
        false
    }

    /// A drained worker was woken (for work, or by the end): it counts itself out before it
    /// looks.
    pub(crate) fn drain_out(&self, round: DrainRound) {
        self.drain(round).drained.fetch_sub(1, Ordering::SeqCst);
    }

    /// Whether `round` has ended (`drain_in`).
    pub(crate) fn drained(&self, round: DrainRound) -> bool {
        self.drain(round).done.load(Ordering::SeqCst)
    }

    fn drain(&self, round: DrainRound) -> &Drain {
        &self.drains[round as usize]
    }

    /// Worker `index` has left its loop for good.
    pub(crate) fn worker_exited(&self, index: usize) {
        self.counters[index].set_state(WorkerState::Exited);
        if self.live_workers.fetch_sub(1, Ordering::SeqCst) == 1 {
            // Nobody is left to owe a wake-up (`wake/deferred.rs`).
            self.sleep.stop_watching();
            // Nor to count against the other pools' budget, however long a task keeps this.
            self.sleep.leave_budget();
            self.exit_waiters
                .notify_changed(|| self.live_workers.load(Ordering::SeqCst) == 0);
        }
    }

    /// Blocks until every worker has exited (after [`terminate`](Self::terminate)); a worker
    /// of another pool runs its own pool's jobs meanwhile.
    pub(crate) fn wait_workers_exited(&self) {
        self.exit_waiters
            .wait(&|| self.live_workers.load(Ordering::SeqCst) == 0, None);
    }

    pub(crate) fn stats(&self) -> PoolStats {
        let per_worker: Vec<WorkerStats> = self
            .counters
            .iter()
            .enumerate()
            .map(|(index, c)| {
                let wake = self.sleep.counters(index);
                WorkerStats {
                    tasks: c.tasks.load(Ordering::Relaxed),
                    wakeups_issued: wake.issued.load(Ordering::Relaxed),
                    wakeups_received: wake.received.load(Ordering::Relaxed),
                    parks: wake.parks.load(Ordering::Relaxed),
                    steals: c.steals.load(Ordering::Relaxed),
                    panics: c.panics.load(Ordering::Relaxed),
                    kicks: c.kicks.load(Ordering::Relaxed),
                    deferred_wakeups: wake.deferred.load(Ordering::Relaxed),
                    deferred_wakeups_made: wake.paid.load(Ordering::Relaxed),
                    pinned_to: c.pinned.load(Ordering::Relaxed).checked_sub(1),
                }
            })
            .collect();
        PoolStats::from_workers(
            per_worker,
            self.external_panics.load(Ordering::Relaxed),
            self.sleep.longest_deferral(),
        )
    }
}

/// The rounds of the shutdown drain: the running pool's jobs, then the exit handlers and what
/// they queue. Each ends when every worker found no work at once.
#[derive(Clone, Copy, Debug)]
pub(crate) enum DrainRound {
    Jobs = 0,
    ExitHandlers = 1,
}

/// One round of the shutdown drain.
struct Drain {
    /// Workers that found no work in this round and sleep counted so.
    drained: AtomicUsize,
    /// Every worker was drained at once: the round has no work left and none can come.
    done: AtomicBool,
}

impl Drain {
    fn new() -> Self {
        Drain {
            drained: AtomicUsize::new(0),
            done: AtomicBool::new(false),
        }
    }
}
