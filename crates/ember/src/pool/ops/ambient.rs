//! The ambient pool, rayon's convention: free functions act on the pool of the worker they
//! are called on, and elsewhere on a global pool built the first time it is needed.
//!
//! The global pool has one worker per available CPU, or `EMBER_NUM_THREADS` of them (`0`
//! meaning automatic, as `RAYON_NUM_THREADS` does); [`PoolBuilder::build_global`] configures it
//! instead, before its first use. It lives until the process exits.

use std::sync::OnceLock;

use crate::error::BuildError;
use crate::pool::builder::LocalNamer;
use crate::pool::ops::broadcast::{self, BroadcastContext};
use crate::pool::ops::join::join_on_worker;
use crate::pool::ops::scope::{self, Scope, ScopeFifo};
use crate::pool::ops::spawn::{spawn_fifo_on, spawn_on};
use crate::pool::workers::worker::WorkerThread;
use crate::pool::{Pool, PoolBuilder};

/// The environment variable that sizes the global pool.
pub(crate) const NUM_THREADS_VAR: &str = "EMBER_NUM_THREADS";

static GLOBAL: OnceLock<Pool> = OnceLock::new();

/// `EMBER_NUM_THREADS`: `None` when unset or `0` (automatic), an error when it is not a count
/// or more than a pool may have.
fn threads_from_env() -> Result<Option<usize>, BuildError> {
    match std::env::var(NUM_THREADS_VAR) {
        Err(std::env::VarError::NotPresent) => Ok(None),
        Ok(value) => match value.trim().parse::<usize>() {
            Ok(0) => Ok(None),
            Ok(requested) if requested > PoolBuilder::MAX_THREADS => {
                Err(BuildError::TooManyThreads {
                    requested,
                    max: PoolBuilder::MAX_THREADS,
                })
            }
            Ok(threads) => Ok(Some(threads)),
            Err(_) => Err(BuildError::NumThreadsVar { value }),
        },
        Err(std::env::VarError::NotUnicode(value)) => Err(BuildError::NumThreadsVar {
            value: value.to_string_lossy().into_owned(),
        }),
    }
}

/// The global pool, built on first use.
///
/// # Panics
/// If the operating system refuses to start its threads (there is nobody to return the
/// error to).
pub(crate) fn global() -> &'static Pool {
    GLOBAL.get_or_init(|| {
        let threads = threads_from_env().unwrap_or_else(|error| {
            eprintln!("ember: {error}; the global pool uses one thread per CPU");
            None
        });
        let builder = || {
            let builder = PoolBuilder::new().name("ember-global");
            match threads {
                Some(threads) => builder.threads(threads),
                None => builder,
            }
        };
        builder()
            .build()
            .or_else(|error| match error {
                // As for `EMBER_NUM_THREADS`: a typo in the environment is said, not fatal.
                BuildError::MachineBudgetVar { .. } | BuildError::MachineBudgetUnsupported => {
                    eprintln!("ember: {error}; the global pool shares no machine-wide budget");
                    builder()
                        .tuning(crate::Tuning::new().machine_budget(false))
                        .build()
                }
                error => Err(error),
            })
            .unwrap_or_else(|error| panic!("ember: could not build the global pool: {error}"))
    })
}

/// `builder`, sized by `EMBER_NUM_THREADS` unless its `threads` is set.
pub(crate) fn sized_by_env(builder: PoolBuilder) -> Result<PoolBuilder, BuildError> {
    if builder.has_threads() {
        return Ok(builder);
    }
    Ok(match threads_from_env()? {
        Some(threads) => builder.threads(threads),
        None => builder,
    })
}

/// Installs `builder`'s pool, its workers named by `namer` if given, as the global pool
/// ([`PoolBuilder::build_global`]).
pub(crate) fn build_global(
    builder: PoolBuilder,
    namer: Option<LocalNamer<'_>>,
) -> Result<(), BuildError> {
    if GLOBAL.get().is_some() {
        return Err(BuildError::GlobalPoolExists);
    }
    let builder = sized_by_env(builder)?;
    let pool = match namer {
        Some(namer) => builder.build_named(Some(namer))?,
        None => builder.build()?,
    };
    GLOBAL
        .set(pool)
        .map_err(|_lost_the_race| BuildError::GlobalPoolExists)
}

/// Runs `a` and `b`, potentially in parallel, on the current pool (the worker's, or the
/// global pool outside every pool), and returns both results; see [`Pool::join`].
///
/// ```
/// fn fib(n: u64) -> u64 {
///     if n < 2 {
///         return n;
///     }
///     let (a, b) = ember::join(|| fib(n - 1), || fib(n - 2));
///     a + b
/// }
/// assert_eq!(fib(20), 6765);
/// ```
#[inline]
pub fn join<A, B, RA, RB>(a: A, b: B) -> (RA, RB)
where
    A: FnOnce() -> RA + Send,
    B: FnOnce() -> RB + Send,
    RA: Send,
    RB: Send,
{
    match WorkerThread::with_any_current(move |worker| match worker {
        Some(worker) => Ok(join_on_worker(worker, a, b)),
        None => Err((a, b)),
    }) {
        Ok(results) => results,
        Err((a, b)) => global().join(a, b),
    }
}

/// Calls `on_worker` with the worker running on this thread, of whatever pool, or else
/// `on_global` with the global pool; `arg` goes to whichever is called.
#[inline]
fn on_current_pool<A, R>(
    arg: A,
    on_worker: impl FnOnce(&WorkerThread, A) -> R,
    on_global: impl FnOnce(&'static Pool, A) -> R,
) -> R {
    WorkerThread::with_any_current(move |worker| match worker {
        Some(worker) => on_worker(worker, arg),
        None => on_global(global(), arg),
    })
}

/// Runs `f` with a [`Scope`] on the current pool (the worker's, or the global pool outside
/// every pool), and returns once `f` and every job spawned in it have finished; see
/// [`Pool::scope`].
///
/// ```
/// let mut squares = vec![0u64; 8];
/// ember::scope(|s| {
///     for (i, square) in squares.iter_mut().enumerate() {
///         s.spawn(move |_| *square = (i * i) as u64);
///     }
/// });
/// assert_eq!(squares[7], 49);
/// ```
pub fn scope<'scope, F, R>(f: F) -> R
where
    F: FnOnce(&Scope<'scope>) -> R + Send,
    R: Send,
{
    on_current_pool(
        f,
        |worker, f| scope::in_place_scope(&worker.registry, f),
        Pool::scope,
    )
}

/// [`scope`] with a [`ScopeFifo`]: jobs spawned from one worker start in the order they were
/// spawned; see [`Pool::scope_fifo`].
///
/// ```
/// use std::sync::atomic::{AtomicUsize, Ordering};
/// let total = AtomicUsize::new(0);
/// ember::scope_fifo(|s| {
///     for i in 1..=10 {
///         let total = &total;
///         s.spawn_fifo(move |_| {
///             total.fetch_add(i, Ordering::Relaxed);
///         });
///     }
/// });
/// assert_eq!(total.into_inner(), 55);
/// ```
pub fn scope_fifo<'scope, F, R>(f: F) -> R
where
    F: FnOnce(&ScopeFifo<'scope>) -> R + Send,
    R: Send,
{
    on_current_pool(
        f,
        |worker, f| scope::in_place_scope_fifo(&worker.registry, f),
        Pool::scope_fifo,
    )
}

/// Runs `f` with a [`Scope`] on the calling thread, whatever it is, and returns once `f` and
/// every job spawned in it have finished; the jobs run on the current pool (the worker's, or
/// the global pool outside every pool). See [`Pool::in_place_scope`].
///
/// ```
/// let mut parts = [0u64; 4];
/// let here = std::thread::current().id();
/// let ran_here = ember::in_place_scope(|s| {
///     for (i, part) in parts.iter_mut().enumerate() {
///         s.spawn(move |_| *part = i as u64);
///     }
///     std::thread::current().id() == here
/// });
/// assert!(ran_here);
/// assert_eq!(parts, [0, 1, 2, 3]);
/// ```
pub fn in_place_scope<'scope, F, R>(f: F) -> R
where
    F: FnOnce(&Scope<'scope>) -> R,
{
    on_current_pool(
        f,
        |worker, f| scope::in_place_scope(&worker.registry, f),
        Pool::in_place_scope,
    )
}

/// [`in_place_scope`] with a [`ScopeFifo`]; see [`Pool::in_place_scope_fifo`].
pub fn in_place_scope_fifo<'scope, F, R>(f: F) -> R
where
    F: FnOnce(&ScopeFifo<'scope>) -> R,
{
    on_current_pool(
        f,
        |worker, f| scope::in_place_scope_fifo(&worker.registry, f),
        Pool::in_place_scope_fifo,
    )
}

/// Runs `f` on the current pool (the worker's, or the global pool outside every pool), some
/// time later; see [`Pool::spawn`].
///
/// ```
/// let (tx, rx) = std::sync::mpsc::channel();
/// ember::spawn(move || tx.send(6 * 7).unwrap());
/// assert_eq!(rx.recv().unwrap(), 42);
/// ```
pub fn spawn<F>(f: F)
where
    F: FnOnce() + Send + 'static,
{
    on_current_pool(f, |worker, f| spawn_on(&worker.registry, f), Pool::spawn)
}

/// [`spawn`], but jobs spawned from one worker start in the order they were spawned; see
/// [`Pool::spawn_fifo`].
///
/// ```
/// let (tx, rx) = std::sync::mpsc::channel();
/// ember::spawn_fifo(move || tx.send(6 * 7).unwrap());
/// assert_eq!(rx.recv().unwrap(), 42);
/// ```
pub fn spawn_fifo<F>(f: F)
where
    F: FnOnce() + Send + 'static,
{
    on_current_pool(
        f,
        |worker, f| spawn_fifo_on(&worker.registry, f),
        Pool::spawn_fifo,
    )
}

/// Runs `op` once on every worker of the current pool (the worker's, or the global pool
/// outside every pool), and returns the results in worker order; see [`Pool::broadcast`].
///
/// ```
/// let indices = ember::broadcast(|ctx| ctx.index());
/// assert_eq!(indices, (0..ember::current_num_threads()).collect::<Vec<_>>());
/// ```
pub fn broadcast<OP, R>(op: OP) -> Vec<R>
where
    OP: Fn(BroadcastContext<'_>) -> R + Sync,
    R: Send,
{
    on_current_pool(
        op,
        |worker, op| broadcast::broadcast(&worker.registry, op),
        Pool::broadcast,
    )
}

/// The number of worker threads of the current pool: the worker's, or, outside every pool,
/// the global pool's (which this builds if it does not exist yet).
///
/// ```
/// let pool = ember::Pool::builder().threads(3).build().unwrap();
/// assert_eq!(pool.install(ember::current_num_threads), 3);
/// ```
pub fn current_num_threads() -> usize {
    WorkerThread::with_any_current(|worker| worker.map(|worker| worker.registry.workers()))
        .unwrap_or_else(|| global().threads())
}

/// The index of the worker running this code in its pool (`0..threads()`), or `None` on a
/// thread that is no pool's worker.
///
/// ```
/// assert_eq!(ember::current_thread_index(), None);
/// let pool = ember::Pool::builder().threads(2).build().unwrap();
/// let index = pool.install(ember::current_thread_index).unwrap();
/// assert!(index < 2);
/// ```
pub fn current_thread_index() -> Option<usize> {
    WorkerThread::with_any_current(|worker| worker.map(|worker| worker.index))
}

/// What [`yield_now`] or [`yield_local`] did on a worker.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Yield {
    /// A pending job was found and run.
    Executed,
    /// No pending job was found.
    Idle,
}

/// Runs one pending job of the current worker's pool, if there is one, and says whether it
/// did: `Some(Yield::Executed)` or `Some(Yield::Idle)`, or `None` on a thread that is no
/// pool's worker. It looks where the worker looks for work — its own deque, then the global
/// queue and the other workers' deques — but never spins or sleeps. The job runs on this
/// stack, on top of the caller (as in rayon); like [`std::thread::yield_now`] it suits a
/// polling loop, which may yield to the OS itself when this returns `Idle`.
///
/// ```
/// assert_eq!(ember::yield_now(), None); // not on a worker
/// let pool = ember::Pool::builder().threads(1).build().unwrap();
/// let (tx, rx) = std::sync::mpsc::channel();
/// let ran = pool.install(|| {
///     ember::spawn(move || tx.send(42).unwrap()); // queued on this worker
///     ember::yield_now() // and run here
/// });
/// assert_eq!(ran, Some(ember::Yield::Executed));
/// assert_eq!(rx.try_recv(), Ok(42));
/// ```
pub fn yield_now() -> Option<Yield> {
    yield_here(false)
}

/// [`yield_now`], but only for work local to this worker (its own deque and its share of
/// broadcasts): never the global queue or other workers' deques.
///
/// ```
/// let pool = ember::Pool::builder().threads(1).build().unwrap();
/// assert_eq!(pool.install(ember::yield_local), Some(ember::Yield::Idle));
/// ```
pub fn yield_local() -> Option<Yield> {
    yield_here(true)
}

/// Yields on the current worker, whatever its pool.
fn yield_here(local_only: bool) -> Option<Yield> {
    WorkerThread::with_any_current(|worker| worker.map(|worker| yielded(worker, local_only)))
}

fn yielded(worker: &WorkerThread, local_only: bool) -> Yield {
    if worker.yield_once(local_only) {
        Yield::Executed
    } else {
        Yield::Idle
    }
}

impl Pool {
    /// [`ember::yield_now`](yield_now), on one of this pool's workers only: `None` on any
    /// other thread.
    pub fn yield_now(&self) -> Option<Yield> {
        self.yield_here(false)
    }

    /// [`ember::yield_local`](yield_local), on one of this pool's workers only: `None` on
    /// any other thread.
    pub fn yield_local(&self) -> Option<Yield> {
        self.yield_here(true)
    }

    fn yield_here(&self, local_only: bool) -> Option<Yield> {
        WorkerThread::with_current(self.registry_id(), |worker| {
            worker.map(|worker| yielded(worker, local_only))
        })
    }

    /// The index of the worker running this code if it is one of this pool's workers, else
    /// `None` (compare [`ember::current_thread_index`](current_thread_index), which answers
    /// for any pool).
    ///
    /// ```
    /// let pool = ember::Pool::builder().threads(2).build().unwrap();
    /// assert_eq!(pool.current_thread_index(), None);
    /// assert!(pool.install(|| pool.current_thread_index()).unwrap() < 2);
    /// ```
    pub fn current_thread_index(&self) -> Option<usize> {
        WorkerThread::with_current(self.registry_id(), |worker| worker.map(|w| w.index))
    }

    /// The number of worker threads: [`threads`](Self::threads), under rayon's name.
    pub fn current_num_threads(&self) -> usize {
        self.threads()
    }

    /// A handle to the pool whose worker runs this code, or `None` on a thread that is no
    /// pool's worker (or while the pool shuts down, its last handle gone). The handle keeps
    /// the pool alive, like any clone.
    ///
    /// ```
    /// assert!(ember::Pool::current().is_none());
    /// let pool = ember::Pool::builder().threads(1).build().unwrap();
    /// let same = pool.install(|| ember::Pool::current().unwrap());
    /// assert_eq!(same.threads(), 1);
    /// ```
    pub fn current() -> Option<Pool> {
        WorkerThread::with_any_current(|worker| {
            let inner = worker?.registry.handle.get()?.upgrade()?;
            Some(Pool { inner })
        })
    }
}
