//! The state one pool's workers share: queues, sleep state, counters, shutdown.
//!
//! Counters follow one rule: a counter written by one thread only (its worker) is updated with
//! a plain load and store, never a read-modify-write, so the path on which a worker pops from
//! its own non-empty deque touches no shared cache line. Counters that several threads write
//! (spawns from outside the pool, wake-ups aimed at a worker) use `fetch_add`.

use crate::sync::{Condvar, Mutex};
use std::sync::atomic::{fence, AtomicBool, AtomicU64, AtomicUsize, Ordering};

use crossbeam_deque::{Injector, Stealer};
use crossbeam_utils::CachePadded;

use super::job::{JobRef, Panic};
use crate::stats::{PoolStats, WorkerStats};
use crate::sync::lock;
use crate::trace::Tracer;

use super::worker::WorkerThread;
use crate::wake::{Sleep, WakePolicy};

/// Called with the payload of a panic that escaped a spawned task.
pub(crate) type PanicHandler = Box<dyn Fn(Panic) + Send + Sync>;

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
}

/// Adds one to a counter only its owner writes.
pub(crate) fn bump(counter: &AtomicU64) {
    // Release pairs with the Acquire loads of `Registry::is_idle`.
    counter.store(counter.load(Ordering::Relaxed) + 1, Ordering::Release);
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
    /// `spawn`s and tasks made outside the pool (several threads may add).
    external_spawns: CachePadded<AtomicU64>,
    /// Tasks that ended outside the pool (cancelled there by a dropped event).
    external_completions: CachePadded<AtomicU64>,
    terminating: AtomicBool,
    idle_waiters: AtomicUsize,
    idle_lock: Mutex<()>,
    idle_cvar: Condvar,
    panic_handler: Option<PanicHandler>,
    pub(crate) delay_kick: bool,
    pub(crate) trace: Tracer,
}

impl Registry {
    pub(crate) fn new(
        stealers: Vec<Stealer<JobRef>>,
        policy: WakePolicy,
        delay_kick: bool,
        panic_handler: Option<PanicHandler>,
        trace: Tracer,
    ) -> Self {
        let workers = stealers.len();
        Registry {
            id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
            injector: Injector::new(),
            stealers: stealers.into_boxed_slice(),
            sleep: Sleep::new(policy, workers),
            counters: (0..workers).map(|_| CachePadded::default()).collect(),
            external_spawns: CachePadded::default(),
            external_completions: CachePadded::default(),
            terminating: AtomicBool::new(false),
            idle_waiters: AtomicUsize::new(0),
            idle_lock: Mutex::new(()),
            idle_cvar: Condvar::new(),
            panic_handler,
            delay_kick,
            trace,
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

    /// Counts a `spawn` made outside the pool (before its job is pushed).
    pub(crate) fn count_external_spawn(&self) {
        self.external_spawns.fetch_add(1, Ordering::Release);
    }

    /// Counts a panic caught on `worker` (a spawned task's or a dependent task's).
    pub(crate) fn count_panic(&self, worker: usize) {
        bump(&self.counters[worker].panics);
    }

    /// Counts a dependent task created on this thread (before it can run).
    pub(crate) fn count_spawn_here(&self) {
        WorkerThread::with_current(self.id, |worker| match worker {
            Some(worker) => worker.count_spawn(),
            None => self.count_external_spawn(),
        });
    }

    /// Counts the end of a dependent task on this thread (it ran, or was cancelled).
    pub(crate) fn count_completion_here(&self) {
        WorkerThread::with_current(self.id, |worker| match worker {
            Some(worker) => bump(&self.counters[worker.index].completed),
            None => {
                self.external_completions.fetch_add(1, Ordering::Release);
                self.notify_idle_waiters();
            }
        });
    }

    /// Books the end of a spawned task: its panic, if any, and its completion.
    pub(crate) fn finish_spawned(&self, worker: usize, panic: Option<Panic>) {
        if let Some(payload) = panic {
            self.count_panic(worker);
            if let Some(handler) = &self.panic_handler {
                // A handler that panics itself must not take the worker down with it.
                let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| handler(payload)));
            }
        }
        bump(&self.counters[worker].completed);
    }

    /// Whether every spawned task has finished, from a snapshot of the counters.
    ///
    /// Completions are summed before spawns. A completion seen implies its spawn is seen too
    /// (the spawn was counted before the job was pushed, and the push happens-before the run),
    /// so the spawn sum read afterwards is at least the completion sum; equality means that at
    /// the moment the completions were read, nothing spawned was outstanding.
    fn is_idle(&self) -> bool {
        let completed = self.sum(&self.external_completions, |c| &c.completed);
        fence(Ordering::SeqCst);
        let spawned = self.sum(&self.external_spawns, |c| &c.spawned);
        completed == spawned
    }

    /// `external` plus one counter of every worker, each read with Acquire.
    fn sum(&self, external: &AtomicU64, of: impl Fn(&WorkerCounters) -> &AtomicU64) -> u64 {
        external.load(Ordering::Acquire)
            + self
                .counters
                .iter()
                .map(|c| of(c).load(Ordering::Acquire))
                .sum::<u64>()
    }

    /// Blocks until every spawned task has finished.
    ///
    /// Waiters block on a condvar; a worker on its way to sleep wakes them
    /// (`notify_idle_waiters`). The waiter registers and checks under the
    /// lock, the notifier reads the waiter count after a fence and notifies under the lock, so
    /// the last completion is never missed.
    pub(crate) fn wait_idle(&self) {
        let mut guard = lock(&self.idle_lock);
        self.idle_waiters.fetch_add(1, Ordering::SeqCst);
        while !self.is_idle() {
            guard = self
                .idle_cvar
                .wait(guard)
                .unwrap_or_else(|poisoned| poisoned.into_inner());
        }
        self.idle_waiters.fetch_sub(1, Ordering::SeqCst);
    }

    /// Wakes `wait_idle` callers so they look again; cheap when there are none. Workers call
    /// it on their way to sleep, which every worker passes after the last job finished.
    pub(crate) fn notify_idle_waiters(&self) {
        fence(Ordering::SeqCst);
        if self.idle_waiters.load(Ordering::SeqCst) != 0 {
            let _guard = lock(&self.idle_lock);
            self.idle_cvar.notify_all();
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
                }
            })
            .collect();
        PoolStats::from_workers(per_worker)
    }
}
