//! The pool: a handle, its builder, and the machinery behind `spawn`, `join` and `scope`.
//!
//! | file | holds |
//! | --- | --- |
//! | `mod.rs` | [`Pool`], the handle: its methods call into `ops/` |
//! | `builder.rs` | [`PoolBuilder`]: configuration and start-up |
//! | `affinity.rs` | pinning workers to processors (`pin_workers`) |
//! | `handlers.rs` | the user's panic, start and exit handlers, contained |
//! | `debug.rs` | the state dump `{:?}` of a pool prints |
//! | `thread_pool.rs` | rayon's names: `ThreadPool`, `ThreadPoolBuilder`, `ThreadPoolBuildError` |
//! | **`ops/`** | **what users call** |
//! | `ops/spawn.rs` | `spawn`, `spawn_fifo`, and queueing a released task |
//! | `ops/join.rs` | fork-join |
//! | `ops/scope.rs` | borrowing scopes, FIFO scopes, scopes in place |
//! | `ops/broadcast.rs` | running a closure once on every worker: per-worker queues, targeted wake-ups |
//! | `ops/parallel_for.rs` | the parallel loop, on a worker and from outside |
//! | `ops/wait_idle.rs` | counting tasks in and out; telling `wait_idle` callers the pool is idle |
//! | `ops/ambient.rs` | the free functions on the current pool, and the global pool |
//! | **`workers/`** | **the workers and their queues** |
//! | `workers/registry.rs` | what the workers share: queues, sleep state, counters, shutdown |
//! | `workers/worker.rs` | the worker loop: own deque, stealing, spinning, sleeping |
//! | `workers/lazy_joins.rs` | a worker's lazy- and sequential-join state |
//! | `workers/private_halves.rs` | the private `join` halves a worker about to sleep may steal |
//! | `workers/owed_wake.rs` | the wake-up a spawner may owe (deferred wake-ups) |
//! | `workers/alarm_thread.rs` | the thread waiting for the alarm of deferred wake-ups, started when first needed |
//! | `workers/held.rs` | delay-kick: successors held by the worker that released them |
//! | `workers/fifo.rs` | FIFO order for a worker's own spawns: the indirection through a queue |
//! | `workers/spin.rs` | whether an idle worker spins before it sleeps |
//! | `workers/wait.rs` | waiting for other threads' work without taking a worker from its pool |
//! | **`jobs/`** | **jobs and latches** |
//! | `jobs/job.rs` | type-erased jobs on the stack or the heap |
//! | `jobs/cache.rs` | a worker's cache of spawned jobs' blocks |
//! | `jobs/latch.rs` | one-shot completion flags that wake their waiter |
//! | `jobs/unwind.rs` | where panics of user code are caught, and the guard where they must not go |
//!
//! Dependencies run downwards: `ops/` uses `workers/` and `jobs/`; nothing here uses
//! `crate::task` (tasks are built on the pool, `task/mod.rs` adds `Pool::task`).

mod affinity;
mod builder;
mod debug;
mod handlers;
pub(crate) mod jobs;
pub(crate) mod ops;
mod thread_pool;
pub(crate) mod workers;

use std::panic::{self, AssertUnwindSafe};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

pub use builder::PoolBuilder;
pub use ops::ambient::{
    broadcast, current_num_threads, current_thread_index, in_place_scope, in_place_scope_fifo,
    join, scope, scope_fifo, spawn, spawn_fifo, yield_local, yield_now, Yield,
};
pub use ops::broadcast::BroadcastContext;
pub use ops::scope::{Scope, ScopeFifo};
pub use thread_pool::{max_num_threads, ThreadPool, ThreadPoolBuildError, ThreadPoolBuilder};

#[cfg(all(test, loom))]
pub(crate) use handlers::Handlers;
pub(crate) use jobs::job::Runner;
pub(crate) use workers::registry::Registry;
pub(crate) use workers::wait::{block_until, blocked_pools_contain, Sleeper, WaitList};
pub(crate) use workers::worker::WorkerThread;

use ops::spawn::{spawn_fifo_on, spawn_on};

use crate::stats::PoolStats;
use crate::trace::Trace;
use crate::wake::WakePolicy;

/// A pool of worker threads; a cheap, cloneable handle.
///
/// Work pushed by a worker stays on that worker's own deque; idle workers steal. Who is woken
/// when work appears is the pool's [`WakePolicy`].
///
/// **Dropping.** Dropping the last handle runs every queued task, then joins the workers. On
/// a worker (of this pool or of another one) it only starts the shutdown and returns: the
/// workers drain the queues and exit on their own (call [`wait_idle`](Self::wait_idle) first
/// to wait for the queued tasks). A worker cannot wait there without risking to wait for
/// itself. (rayon's `ThreadPool` never waits on drop.)
///
/// **Several pools.** A worker of one pool may wait for another: [`join`](Self::join),
/// [`scope`](Self::scope) or [`parallel_for`](Self::parallel_for) on it, a
/// [`Task::join`](crate::Task::join) of one of its tasks, [`wait_idle`](Self::wait_idle).
/// It keeps running its own pool's jobs while it waits, and wakes when the other pool's work
/// is done. So pools may call each other in any pattern without deadlock. The hazard: each
/// nested wait runs on the waiting worker's stack. A chain of calls A → B → A → … nests one
/// frame per hop (about 1 KiB in release builds, 2 KiB in debug ones). On the default 2 MiB
/// stack, chains of 1,000 hops run in a debug build and 3,000 in release
/// ([`PoolBuilder::stack_size`] raises the limit).
///
/// **What a waiting worker runs.** Like rayon's, a worker that waits runs *any* queued job of
/// its pool on top of its stack, and the job it waits in cannot resume before that job
/// returns. So a job should not block until something happens that needs the job it
/// interrupted: e.g. join a task, or wait for a pool to be idle, when that task or pool
/// (through others) waits for work suspended beneath it. `join`, `scope`, `install`-style
/// calls and tasks joined by the code that spawned them never form such a cycle; a wait for
/// unrelated work inside a job can. Keep such waits out of jobs, or use
/// [`Task::join_timeout`](crate::Task::join_timeout) and `{:?}` to find them.
///
/// **Panics.** User code may panic anywhere — closures, the `Drop` of results and of captured
/// values, panic payloads, handlers. No such panic kills a worker or unwinds through the
/// pool's own frames: it is re-raised to whoever waits for the result (`join`, `scope`,
/// `parallel_for`), returned as [`TaskError::Panicked`](crate::TaskError::Panicked), or
/// counted in [`PoolStats::panics`] and passed to the
/// [`panic_handler`](PoolBuilder::panic_handler).
///
/// **Diagnostics.** `{:?}` prints the pool's state (each worker's state, queue lengths,
/// sleepers, searchers, outstanding tasks) and may be printed from any thread, e.g. when a
/// [`wait_idle_timeout`](Self::wait_idle_timeout) gives up.
///
/// ```
/// let pool = ember::Pool::builder().threads(2).build().unwrap();
/// let (tx, rx) = std::sync::mpsc::channel();
/// for i in 0..10u64 {
///     let tx = tx.clone();
///     pool.spawn(move || tx.send(i * i).unwrap());
/// }
/// drop(tx);
/// assert_eq!(rx.iter().sum::<u64>(), 285);
/// ```
#[derive(Clone)]
pub struct Pool {
    inner: Arc<PoolInner>,
}

struct PoolInner {
    registry: Arc<Registry>,
    handles: Mutex<Vec<JoinHandle<()>>>,
}

impl std::fmt::Debug for Pool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        debug::fmt_registry(&self.inner.registry, f)
    }
}

impl Pool {
    /// A builder to configure a pool; see [`PoolBuilder`].
    pub fn builder() -> PoolBuilder {
        PoolBuilder::new()
    }

    /// Number of worker threads.
    pub fn threads(&self) -> usize {
        self.inner.registry.workers()
    }

    /// The pool's wake policy.
    pub fn policy(&self) -> WakePolicy {
        self.inner.registry.sleep.policy()
    }

    /// Runs `f` on the pool, some time later. Called from one of the pool's workers, the task
    /// goes on that worker's own deque (it stays warm there); from anywhere else, on the
    /// pool's global queue.
    ///
    /// A panic in `f` (or in the drop of what it captured) is caught: the worker lives on, the
    /// panic is counted in [`PoolStats::panics`] and passed to the
    /// [`panic_handler`](PoolBuilder::panic_handler), if any. (rayon aborts the process on a
    /// panicking `spawn` without a handler; ember counts it.)
    ///
    /// ```
    /// use std::sync::atomic::{AtomicU64, Ordering};
    /// use std::sync::Arc;
    /// let pool = ember::Pool::builder().threads(2).build().unwrap();
    /// let sum = Arc::new(AtomicU64::new(0));
    /// for i in 1..=100 {
    ///     let sum = Arc::clone(&sum);
    ///     pool.spawn(move || {
    ///         sum.fetch_add(i, Ordering::Relaxed);
    ///     });
    /// }
    /// pool.wait_idle();
    /// assert_eq!(sum.load(Ordering::Relaxed), 5050);
    /// ```
    pub fn spawn<F>(&self, f: F)
    where
        F: FnOnce() + Send + 'static,
    {
        spawn_on(&self.inner.registry, f);
    }

    /// [`spawn`](Self::spawn), but the jobs one worker spawns this way start in the order
    /// they were spawned, where `spawn`'s start newest first (rayon's `spawn_fifo`: the order
    /// holds for one worker's own spawns; from outside the pool the job goes on the global
    /// queue, which is FIFO anyway). Panics are handled as for `spawn`.
    ///
    /// ```
    /// let pool = ember::Pool::builder().threads(1).build().unwrap();
    /// let (tx, rx) = std::sync::mpsc::channel();
    /// pool.install(|| {
    ///     for i in 0..4 {
    ///         let tx = tx.clone();
    ///         ember::spawn_fifo(move || tx.send(i).unwrap());
    ///     }
    /// });
    /// drop(tx);
    /// assert_eq!(rx.iter().collect::<Vec<_>>(), [0, 1, 2, 3]);
    /// ```
    pub fn spawn_fifo<F>(&self, f: F)
    where
        F: FnOnce() + Send + 'static,
    {
        spawn_fifo_on(&self.inner.registry, f);
    }

    /// Runs `a` and `b`, potentially in parallel, and returns both results. On a worker, the
    /// worker runs `a` itself and offers `b` to thieves on its deque. Most often it pops `b`
    /// back and runs it inline: a deque push and pop is the whole cost. While a thief runs
    /// `b`, the worker runs other queued jobs instead of blocking, and spins briefly for `b`
    /// before it would sleep. Called from outside the pool, the whole `join` runs on a worker
    /// while the caller blocks.
    ///
    /// With lazy joins (the default on Linux, and on a pool of one worker everywhere:
    /// [`Tuning::lazy_joins`](crate::Tuning::lazy_joins)) `b` stays on a private stack while no worker wants work.
    /// That takes no atomic read-modify-write and no fence, and a worker about to sleep can
    /// still steal it. With [`Tuning::sequential_joins_unchecked`](crate::Tuning::sequential_joins_unchecked) (opt-in), a `join`
    /// made while no worker wants work, below three kept halves, runs `a` and then `b` as
    /// plain calls.
    ///
    /// If either closure panics, the panic is re-raised here once both have finished.
    ///
    /// ```
    /// fn fib(pool: &ember::Pool, n: u64) -> u64 {
    ///     if n < 2 {
    ///         return n;
    ///     }
    ///     let (a, b) = pool.join(|| fib(pool, n - 1), || fib(pool, n - 2));
    ///     a + b
    /// }
    /// let pool = ember::Pool::builder().threads(2).build().unwrap();
    /// assert_eq!(fib(&pool, 20), 6765);
    /// ```
    pub fn join<A, B, RA, RB>(&self, a: A, b: B) -> (RA, RB)
    where
        A: FnOnce() -> RA + Send,
        B: FnOnce() -> RB + Send,
        RA: Send,
        RB: Send,
    {
        ops::join::join(&self.inner.registry, a, b)
    }

    /// Runs `op` on one of the pool's workers and returns its value, so that the free
    /// functions ([`ember::join`](crate::join), [`ember::scope`](crate::scope),
    /// [`ember::spawn`](crate::spawn), parallel iterators) inside it use this pool. On one of
    /// this pool's workers it runs `op` at once; on a worker of another pool, that worker runs
    /// its own pool's jobs while it waits; elsewhere the caller blocks. A panic in `op` is
    /// re-raised here.
    ///
    /// ```
    /// let pool = ember::Pool::builder().threads(2).build().unwrap();
    /// let (a, b) = pool.install(|| ember::join(|| ember::current_num_threads(), || 7));
    /// assert_eq!((a, b), (2, 7));
    /// ```
    pub fn install<OP, R>(&self, op: OP) -> R
    where
        OP: FnOnce() -> R + Send,
        R: Send,
    {
        workers::worker::in_worker(&self.inner.registry, |_| op())
    }

    /// Runs `op` once on every worker of the pool and returns the results in worker order:
    /// element `i` is what worker `i` ([`BroadcastContext::index`]) returned. `op` may borrow
    /// from the caller's frame.
    ///
    /// Each worker runs it when its own deque is empty, before it steals (rayon's order); a
    /// sleeping worker is woken for it. A worker busy with a job runs it after that job, so a
    /// broadcast waits for every worker's current job. The caller waits as
    /// [`install`](Self::install) does: a worker of this pool or of another one runs its own
    /// pool's jobs meanwhile (including, on this pool, its own share of the broadcast).
    ///
    /// If `op` panics on one or more workers, the panic of the lowest-numbered one is
    /// re-raised here once every worker has finished; the other panics, and the drops of the
    /// other results, are reported to the pool (counted, and passed to the panic handler).
    ///
    /// A job or exit handler of a pool whose last handle is gone may still broadcast there
    /// (through [`ember::broadcast`](crate::broadcast)): the pool shuts down only once every
    /// worker is idle, so the broadcast reaches every worker.
    ///
    /// ```
    /// use std::sync::atomic::{AtomicUsize, Ordering};
    /// let pool = ember::Pool::builder().threads(3).build().unwrap();
    /// let squares = pool.broadcast(|ctx| ctx.index() * ctx.index());
    /// assert_eq!(squares, [0, 1, 4]);
    /// let count = AtomicUsize::new(0); // borrowed by every worker
    /// pool.broadcast(|_| count.fetch_add(1, Ordering::Relaxed));
    /// assert_eq!(count.into_inner(), 3);
    /// ```
    pub fn broadcast<OP, R>(&self, op: OP) -> Vec<R>
    where
        OP: Fn(BroadcastContext<'_>) -> R + Sync,
        R: Send,
    {
        ops::broadcast::broadcast(&self.inner.registry, op)
    }

    /// Runs `f` with a [`Scope`] whose jobs may borrow from the caller's frame, and returns
    /// once `f` and every job spawned in the scope have finished. `f` runs on a worker (the
    /// calling one, or, from outside the pool, one the call moves to while the caller
    /// blocks), which runs queued jobs while it waits.
    ///
    /// If `f` or any job panics, the (first) panic is re-raised here after every job finished.
    ///
    /// ```
    /// let pool = ember::Pool::builder().threads(2).build().unwrap();
    /// let mut data = vec![1u64; 1000];
    /// pool.scope(|s| {
    ///     for chunk in data.chunks_mut(100) {
    ///         s.spawn(move |_| chunk.iter_mut().for_each(|x| *x *= 2));
    ///     }
    /// });
    /// assert_eq!(data.iter().sum::<u64>(), 2000);
    /// ```
    pub fn scope<'scope, F, R>(&self, f: F) -> R
    where
        F: FnOnce(&Scope<'scope>) -> R + Send,
        R: Send,
    {
        ops::scope::scope(&self.inner.registry, f)
    }

    /// [`scope`](Self::scope) with a [`ScopeFifo`]: the jobs spawned from one worker with
    /// [`ScopeFifo::spawn_fifo`] (by the body or by other jobs) start in the order they were
    /// spawned, where `scope`'s start newest first (rayon's `scope_fifo`).
    ///
    /// ```
    /// use std::sync::Mutex;
    /// let pool = ember::Pool::builder().threads(1).build().unwrap();
    /// let order = Mutex::new(Vec::new());
    /// pool.scope_fifo(|s| {
    ///     for i in 0..4 {
    ///         let order = &order;
    ///         s.spawn_fifo(move |_| order.lock().unwrap().push(i));
    ///     }
    /// });
    /// assert_eq!(order.into_inner().unwrap(), [0, 1, 2, 3]);
    /// ```
    pub fn scope_fifo<'scope, F, R>(&self, f: F) -> R
    where
        F: FnOnce(&ScopeFifo<'scope>) -> R + Send,
        R: Send,
    {
        ops::scope::scope_fifo(&self.inner.registry, f)
    }

    /// A [`scope`](Self::scope) whose body runs on the calling thread, whatever it is, while
    /// its jobs run on this pool (so `f` need not be `Send`). The caller then waits for the
    /// jobs: a worker (of this pool or another) runs its own pool's jobs meanwhile, any other
    /// thread blocks. On one of this pool's workers it is exactly `scope`.
    ///
    /// The body may block on its jobs (e.g. on a channel they feed) even in a one-thread pool,
    /// since it does not occupy a worker.
    ///
    /// ```
    /// let pool = ember::Pool::builder().threads(1).build().unwrap();
    /// let (tx, rx) = std::sync::mpsc::channel();
    /// pool.in_place_scope(|s| {
    ///     s.spawn(move |_| tx.send(7).unwrap());
    ///     assert_eq!(rx.recv().unwrap(), 7); // the worker is free to run the job
    /// });
    /// ```
    pub fn in_place_scope<'scope, F, R>(&self, f: F) -> R
    where
        F: FnOnce(&Scope<'scope>) -> R,
    {
        ops::scope::in_place_scope(&self.inner.registry, f)
    }

    /// [`in_place_scope`](Self::in_place_scope) with a [`ScopeFifo`].
    pub fn in_place_scope_fifo<'scope, F, R>(&self, f: F) -> R
    where
        F: FnOnce(&ScopeFifo<'scope>) -> R,
    {
        ops::scope::in_place_scope_fifo(&self.inner.registry, f)
    }

    /// Calls `f(i)` for every `i` in `range`, in parallel, in chunks of at most `grain`
    /// indices, and returns when all calls are done. The calling thread takes part.
    ///
    /// On one of the pool's workers the range is split in halves with [`join`](Self::join)
    /// until a piece is at most `grain` long, so thieves take large pieces first and the
    /// worker runs the rest. From any other thread the caller and up to `threads()` workers
    /// claim chunks from a shared counter until none are left, so the caller adds its own
    /// core to the pool's. Pick `grain` so that one chunk is worth a few microseconds of
    /// work. A panic in `f` is re-raised here after every other chunk ended.
    ///
    /// # Panics
    /// If `grain` is 0, or if `f` panics.
    ///
    /// ```
    /// use std::sync::atomic::{AtomicU64, Ordering};
    /// let pool = ember::Pool::builder().threads(2).build().unwrap();
    /// let sum = AtomicU64::new(0);
    /// pool.parallel_for(0..1000, 64, |i| {
    ///     sum.fetch_add(i as u64, Ordering::Relaxed);
    /// });
    /// assert_eq!(sum.into_inner(), 499_500);
    /// ```
    pub fn parallel_for<F>(&self, range: std::ops::Range<usize>, grain: usize, f: F)
    where
        F: Fn(usize) + Sync,
    {
        assert!(
            grain > 0,
            "Pool::parallel_for: grain must be at least 1 (the largest number of indices one \
             chunk runs)"
        );
        let outcome = panic::catch_unwind(AssertUnwindSafe(|| {
            if WorkerThread::is_current(self.inner.registry.id) {
                ops::parallel_for::split(self, range, grain, &f);
            } else {
                ops::parallel_for::shared_counter(&self.inner.registry, range, grain, &f);
            }
        }));
        if let Err(payload) = outcome {
            // `f` is user code: it is dropped, its panic contained, before a chunk's panic is
            // re-raised (a panic in a drop during that unwind would abort).
            self.inner.registry.drop_reporting(f);
            panic::resume_unwind(payload);
        }
    }

    /// Blocks until every task [`spawn`](Self::spawn)ed so far has finished, including tasks
    /// those spawned, and every dependent [`Task`](crate::Task) created so far has ended (run,
    /// panicked or been cancelled). It returns as soon as the last of them finishes, whoever
    /// finishes it. The worker that ends a task looks whether that left the pool idle, before
    /// it runs user code again or sleeps. It skips the look if it starts another task at
    /// once, so a moment of idleness that ends before the worker looks may go unseen.
    /// A task still waiting for an [`Event`](crate::Event) that nobody completes keeps it waiting (see
    /// [`wait_idle_timeout`](Self::wait_idle_timeout)). Called on a worker of another pool,
    /// that worker runs its own pool's jobs while it waits.
    ///
    /// # Panics
    /// When called from inside one of this pool's own jobs, which would wait for itself —
    /// directly, or through another pool (a job of this pool waiting in `install`, `join` or
    /// `scope` on another pool, whose work calls `wait_idle` on this one). The message says
    /// what to use instead. (Work reached through a `join` half stolen by a thief of the
    /// other pool, a `parallel_for` helper, or a task joined with `Task::join` is not traced
    /// back: there the wait is a deadlock instead.)
    ///
    /// ```
    /// use std::sync::atomic::{AtomicUsize, Ordering};
    /// use std::sync::Arc;
    /// let pool = ember::Pool::builder().threads(2).build().unwrap();
    /// let done = Arc::new(AtomicUsize::new(0));
    /// for _ in 0..50 {
    ///     let done = Arc::clone(&done);
    ///     pool.spawn(move || {
    ///         done.fetch_add(1, Ordering::SeqCst);
    ///     });
    /// }
    /// pool.wait_idle();
    /// assert_eq!(done.load(Ordering::SeqCst), 50);
    /// ```
    pub fn wait_idle(&self) {
        self.check_not_waiting_for_itself("Pool::wait_idle");
        self.inner.registry.wait_idle(None);
    }

    /// [`wait_idle`](Self::wait_idle) for at most `timeout`: returns whether the pool became
    /// idle. A `false` is the moment to print the pool (`{:?}`) and see what is still
    /// outstanding, e.g. a task waiting for an [`Event`](crate::Event) nobody completes.
    ///
    /// # Panics
    /// As [`wait_idle`](Self::wait_idle).
    ///
    /// ```
    /// use std::time::Duration;
    /// let pool = ember::Pool::builder().threads(1).build().unwrap();
    /// let never = pool.event();
    /// let stuck = pool.task(|| ()).after(&[&never]).spawn();
    /// assert!(!pool.wait_idle_timeout(Duration::from_millis(10)));
    /// eprintln!("{pool:?}"); // one outstanding task, no job queued: it waits for an event
    /// never.complete();
    /// assert!(pool.wait_idle_timeout(Duration::from_secs(60)));
    /// # drop(stuck);
    /// ```
    pub fn wait_idle_timeout(&self, timeout: std::time::Duration) -> bool {
        self.check_not_waiting_for_itself("Pool::wait_idle_timeout");
        self.inner
            .registry
            // A timeout too long to add to the clock (`Duration::MAX`) means no deadline.
            .wait_idle(std::time::Instant::now().checked_add(timeout))
    }

    /// Panics if the calling thread runs a job of this pool, or work one of its jobs waits
    /// for: a wait for the whole pool could then never end.
    pub(crate) fn check_not_waiting_for_itself(&self, what: &str) {
        let id = self.inner.registry.id;
        if WorkerThread::is_current(id) {
            panic!(
                "{what} called from inside one of the pool's own jobs: it would wait for \
                 itself; wait from outside the pool, or use join/scope/Task::join to wait for \
                 specific work"
            );
        }
        if blocked_pools_contain(id) {
            panic!(
                "{what} called from work that one of the pool's own jobs is waiting for \
                 (through another pool's install, join or scope): it would wait for itself; \
                 wait from outside the pool, or use join/scope/Task::join to wait for specific \
                 work"
            );
        }
    }

    /// A snapshot of the pool's counters; see [`PoolStats`].
    pub fn stats(&self) -> PoolStats {
        self.inner.registry.stats()
    }

    /// Takes the events recorded since the last call (empty unless the pool was built with
    /// [`PoolBuilder::trace`]); see [`Trace`].
    pub fn trace(&self) -> Trace {
        self.inner.registry.trace.drain()
    }

    pub(crate) fn registry(&self) -> &Arc<Registry> {
        &self.inner.registry
    }

    /// Identifies the pool without holding it.
    pub(crate) fn registry_id(&self) -> usize {
        self.inner.registry.id
    }
}

impl Drop for PoolInner {
    fn drop(&mut self) {
        self.registry.terminate();
        if WorkerThread::with_any_current(|worker| worker.is_some()) {
            // The last handle died on a worker — of this pool, or of another one. Waiting
            // here for this pool's workers could wait for this very job (a job of this pool,
            // or one this pool's work waits for through other pools), or, on a worker with
            // waits nested on its stack, for a frame beneath it that cannot resume before
            // this returns. The workers drain the queues and exit on their own.
            return;
        }
        self.registry.wait_workers_exited();
        let handles = std::mem::take(
            &mut *self
                .handles
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner()),
        );
        for handle in handles {
            // Every worker has left its loop; this only reaps the threads. A worker that died
            // anyway has nothing left to report here.
            let _ = handle.join();
        }
        self.registry.alarm_thread.join();
    }
}
