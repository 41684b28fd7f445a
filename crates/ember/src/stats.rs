//! Counters users can read while the pool runs.
//!
//! Each worker keeps its own counters on its own cache line and updates them without atomic
//! read-modify-writes, so reading stats costs the pool nothing. A snapshot is not atomic
//! across workers: totals read while jobs run are a moment's approximation, exact once the
//! pool is idle.

/// A snapshot of one pool's counters; see [`Pool::stats`](crate::Pool::stats).
///
/// ```
/// let pool = ember::Pool::builder().threads(2).build().unwrap();
/// for _ in 0..100 {
///     pool.spawn(|| {});
/// }
/// pool.wait_idle();
/// let stats = pool.stats();
/// assert_eq!(stats.tasks, 100);
/// assert_eq!(stats.per_worker.len(), 2);
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct PoolStats {
    /// Number of worker threads.
    pub threads: usize,
    /// Jobs run by workers: spawned tasks, scope jobs, a `join` or `scope` called from
    /// outside the pool (as one job), and second halves of `join` taken by a thief (not those
    /// popped back and run inline by their owner).
    pub tasks: u64,
    /// Wake-ups aimed at a worker (some find it awake already and cost nothing).
    pub wakeups_issued: u64,
    /// Times a blocked worker was woken.
    pub wakeups_received: u64,
    /// Times a worker blocked to sleep.
    pub parks: u64,
    /// Jobs a worker took from another worker's deque.
    pub steals: u64,
    /// Panics of user code the pool caught: spawned and dependent tasks that panicked, plus
    /// every other panic nobody waited for (a `Drop` of a result nobody joined or of a
    /// cancelled task's closure, a second panic of a `join`, `scope` or `broadcast`, a
    /// panicking start, exit or panic handler, a panicking drop of a panic payload). Panics
    /// re-raised to a caller by `join`, `scope`, `install`, `broadcast` or `parallel_for` are
    /// the caller's and not counted here.
    pub panics: u64,
    /// Successors made runnable by a finishing task that its worker held, then pushed for
    /// others after taking one for itself (delay-kick).
    pub kicks: u64,
    /// Jobs spawned on a worker whose wake-up of a sleeper was owed rather than made
    /// ([`Tuning::defer_wakeups`](crate::Tuning::defer_wakeups)).
    pub deferred_wakeups: u64,
    /// Those owed wake-ups that were made after all: at the spawner's next push, when its
    /// next look for work ran something else first (held successors, or a job of the global
    /// or broadcast queue at its fairness turn), or when the spawning job ran past the
    /// deferral's bound. The rest cost nobody a wake-up: the spawner ran the job itself, or
    /// an awake worker took it.
    pub deferred_wakeups_made: u64,
    /// The longest time an owed wake-up stayed owed before it was made (the alarm makes it
    /// the pool's bound after the spawn, 100 µs by default; its own latency comes on top).
    /// Measured from the debt's stamp, which a worker may reuse from an earlier owe, so it
    /// may read long: usually by under a tenth of the bound, by up to the bound where a link
    /// far longer than those before it left an old stamp in place.
    pub longest_deferral: std::time::Duration,
    /// The same counters per worker, indexed by worker number.
    pub per_worker: Vec<WorkerStats>,
}

/// One worker's counters; fields as in [`PoolStats`].
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct WorkerStats {
    /// Jobs this worker ran.
    pub tasks: u64,
    /// Wake-ups aimed at this worker.
    pub wakeups_issued: u64,
    /// Times this worker was woken from a block.
    pub wakeups_received: u64,
    /// Times this worker blocked.
    pub parks: u64,
    /// Jobs this worker stole from others.
    pub steals: u64,
    /// Panics caught on this worker (see [`PoolStats::panics`]).
    pub panics: u64,
    /// Held successors this worker kicked.
    pub kicks: u64,
    /// Wake-ups of jobs spawned here that this worker owed.
    pub deferred_wakeups: u64,
    /// Owed wake-ups made after all.
    pub deferred_wakeups_made: u64,
    /// The processor this worker is pinned to
    /// ([`PoolBuilder::pin_workers`](crate::PoolBuilder::pin_workers)), once it has started;
    /// `None` if pinning was not asked for, or the system refused it (the worker then runs
    /// unpinned).
    pub pinned_to: Option<usize>,
}

impl PoolStats {
    /// Totals of `per_worker`, plus `external_panics` caught on threads that are not the
    /// pool's workers (in the total only).
    pub(crate) fn from_workers(
        per_worker: Vec<WorkerStats>,
        external_panics: u64,
        longest_deferral: std::time::Duration,
    ) -> Self {
        let sum = |f: fn(&WorkerStats) -> u64| per_worker.iter().map(f).sum::<u64>();
        PoolStats {
            threads: per_worker.len(),
            tasks: sum(|w| w.tasks),
            wakeups_issued: sum(|w| w.wakeups_issued),
            wakeups_received: sum(|w| w.wakeups_received),
            parks: sum(|w| w.parks),
            steals: sum(|w| w.steals),
            panics: sum(|w| w.panics) + external_panics,
            kicks: sum(|w| w.kicks),
            deferred_wakeups: sum(|w| w.deferred_wakeups),
            deferred_wakeups_made: sum(|w| w.deferred_wakeups_made),
            longest_deferral,
            per_worker,
        }
    }
}
