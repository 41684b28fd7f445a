//! Scopes: spawn jobs that borrow from the caller's frame, and wait for all of them.
//!
//! A scope counts its outstanding jobs (the body counts as one). Each spawned job holds a
//! pointer to the scope and counts itself out when it ends; the scope does not return, even
//! when its body panics, before the count is zero, which is what makes the borrows sound.
//!
//! Three flavours share this machinery:
//!
//! * [`Pool::scope`](crate::Pool::scope): the body runs on a worker of the pool (called from
//!   outside the pool, the caller waits while it does), and that worker runs queued jobs while
//!   it waits.
//! * [`Pool::scope_fifo`](crate::Pool::scope_fifo): the same with a [`ScopeFifo`], whose
//!   spawns from a worker start in the order they were made (`fifo.rs`).
//! * [`Pool::in_place_scope`](crate::Pool::in_place_scope) (and `_fifo`): the body runs on the
//!   calling thread, whatever it is; jobs go to the pool, and the caller waits as every wait
//!   does (`wait.rs`): a worker runs its own pool's jobs meanwhile, another thread blocks. On
//!   one of the pool's workers it is exactly `scope`.
//!
//! Panics: the body's panic is re-raised first; else the first job's. Every other panic (a
//! later job's, or the drop of the body's value when a job panicked) is reported to the pool
//! (`unwind.rs`), so that no user code runs while the re-raised panic unwinds.

use std::marker::PhantomData;
use std::panic::{self, AssertUnwindSafe};
use std::sync::Arc;

use crate::pool::jobs::job::{HeapJobBox, JobRef, Runner};
use crate::pool::jobs::latch::{CountLatch, Waiter};
use crate::pool::jobs::unwind::FirstPanic;
use crate::pool::workers::fifo::Fifo;
use crate::pool::workers::registry::Registry;
use crate::pool::workers::wait::{self, Sleeper};
use crate::pool::workers::worker::{in_worker, WorkerThread};

/// A scope in which jobs may borrow anything that outlives `'scope`; see
/// [`Pool::scope`](crate::Pool::scope).
///
/// ```
/// let pool = ember::Pool::builder().threads(2).build().unwrap();
/// let mut halves = [0u64; 2];
/// let (left, right) = halves.split_at_mut(1);
/// pool.scope(|s| {
///     s.spawn(|_| left[0] = (1..=50).sum());
///     s.spawn(|_| right[0] = (51..=100).sum());
/// });
/// assert_eq!(halves[0] + halves[1], 5050);
/// ```
pub struct Scope<'scope> {
    registry: Arc<Registry>,
    pending: CountLatch<'static>,
    /// The first panic of a spawned job, re-raised when the scope ends.
    panic: FirstPanic,
    /// Pools with a job blocked until this scope ends (`wait.rs`): its jobs, which may run on
    /// other workers, carry them along.
    blocked: Vec<usize>,
    /// Invariant in `'scope`, as borrows into the scope must be.
    marker: PhantomData<fn(&'scope ()) -> &'scope ()>,
}

/// A scope whose jobs spawned from one worker start in the order they were spawned; see
/// [`Pool::scope_fifo`](crate::Pool::scope_fifo).
///
/// "FIFO" is rayon's definition: among the jobs one worker spawns with
/// [`spawn_fifo`](Self::spawn_fifo), the oldest starts first whenever that worker (or a thief
/// of its deque) takes one; jobs spawned from different workers are not ordered against each
/// other.
///
/// ```
/// use std::sync::Mutex;
/// let pool = ember::Pool::builder().threads(1).build().unwrap();
/// let order = Mutex::new(Vec::new());
/// pool.scope_fifo(|s| {
///     for i in 0..5 {
///         let order = &order;
///         s.spawn_fifo(move |_| order.lock().unwrap().push(i));
///     }
/// });
/// assert_eq!(order.into_inner().unwrap(), [0, 1, 2, 3, 4]); // `scope` would give 4, 3, …, 0
/// ```
pub struct ScopeFifo<'scope> {
    base: Scope<'scope>,
    /// One queue per worker of the pool, for the spawns made on that worker (`fifo.rs`).
    fifos: Box<[Fifo]>,
}

/// A `Scope` or a `ScopeFifo`, as the shared machinery sees it.
trait AsScope<'scope>: Sync {
    fn base(&self) -> &Scope<'scope>;
}

impl<'scope> AsScope<'scope> for Scope<'scope> {
    fn base(&self) -> &Scope<'scope> {
        self
    }
}

impl<'scope> AsScope<'scope> for ScopeFifo<'scope> {
    fn base(&self) -> &Scope<'scope> {
        &self.base
    }
}

/// A pointer to a scope that a job carries to another thread.
struct ScopePtr<S>(*const S);

// SAFETY: the scope is `Sync` (the bound), and it outlives every job holding this pointer: it
// waits for its count to reach zero, and a job counts itself out last.
unsafe impl<S: Sync> Send for ScopePtr<S> {}

impl<S> ScopePtr<S> {
    /// A method, not a field access, so closures capture the whole (`Send`) wrapper.
    fn get(&self) -> *const S {
        self.0
    }
}

impl<'scope> Scope<'scope> {
    /// A scope on `registry` whose waiter is the calling thread.
    fn new(registry: &Arc<Registry>) -> Self {
        // Work handed to the pool by a worker of another pool blocks that pool (`wait.rs`).
        let blocked = WorkerThread::with_any_current(|worker| {
            let own = worker
                .map(|worker| worker.registry.id)
                .filter(|&id| id != registry.id);
            wait::blocked_pools_with(own)
        });
        Scope {
            registry: Arc::clone(registry),
            pending: CountLatch::new(Waiter::Sleeper(Sleeper::current())),
            panic: FirstPanic::new(),
            blocked,
            marker: PhantomData,
        }
    }

    /// Spawns a job that may borrow from outside the scope; it may spawn more through the
    /// `&Scope` it is given. The scope waits for it. A panic in it is re-raised when the
    /// scope ends, after every other job finished.
    ///
    /// ```
    /// let pool = ember::Pool::builder().threads(2).build().unwrap();
    /// let words = vec!["warm", "threads", "stay", "busy"];
    /// let total = std::sync::atomic::AtomicUsize::new(0);
    /// pool.scope(|s| {
    ///     for w in &words {
    ///         let total = &total;
    ///         s.spawn(move |_| {
    ///             total.fetch_add(w.len(), std::sync::atomic::Ordering::Relaxed);
    ///         });
    ///     }
    /// });
    /// assert_eq!(total.into_inner(), 19);
    /// ```
    pub fn spawn<F>(&self, f: F)
    where
        F: FnOnce(&Scope<'scope>) + Send + 'scope,
    {
        let job = scope_job(self, f);
        WorkerThread::with_current(self.registry.id, |worker| match worker {
            Some(worker) => worker.push_after_private(job),
            None => self.registry.inject(job),
        });
    }
}

impl<'scope> ScopeFifo<'scope> {
    fn new(registry: &Arc<Registry>) -> Self {
        ScopeFifo {
            base: Scope::new(registry),
            fifos: (0..registry.workers()).map(|_| Fifo::default()).collect(),
        }
    }

    /// Spawns a job that may borrow from outside the scope, behind the jobs this worker
    /// spawned into the scope before it (from outside the pool: on the global queue, itself
    /// FIFO). It may spawn more through the `&ScopeFifo` it is given. The scope waits for
    /// it; a panic in it is re-raised when the scope ends, after every other job finished.
    pub fn spawn_fifo<F>(&self, f: F)
    where
        F: FnOnce(&ScopeFifo<'scope>) + Send + 'scope,
    {
        let job = scope_job(self, f);
        let registry = &self.base.registry;
        WorkerThread::with_current(registry.id, |worker| match worker {
            Some(worker) => {
                // SAFETY: the fifo lives in the scope, which does not end before this job has
                // run, and the indirection touches the fifo only before it runs the job.
                let indirection = unsafe { self.fifos[worker.index].push(job) };
                worker.push_after_private(indirection);
            }
            None => registry.inject(job),
        });
    }
}

/// The job of `scope` running `f`: counted in now, out after `f` ended.
fn scope_job<'scope, S, F>(scope: &S, f: F) -> JobRef
where
    S: AsScope<'scope>,
    F: FnOnce(&S) + Send + 'scope,
{
    scope.base().pending.increment();
    let scope_ptr = ScopePtr(scope as *const S);
    let job = HeapJobBox::new(move |runner: Runner<'_>| {
        runner.start_uncounted();
        // SAFETY: the scope is alive until its count reaches zero (see `ScopePtr`).
        let scope: &S = unsafe { &*scope_ptr.get() };
        let base = scope.base();
        let outcome = wait::with_blocked_pools(&base.blocked, || {
            panic::catch_unwind(AssertUnwindSafe(|| f(scope)))
        });
        if let Err(payload) = outcome {
            base.panic.keep(&base.registry, payload);
        }
        // SAFETY: last use of `scope`; it may be freed once the count reaches zero.
        unsafe { CountLatch::decrement(&base.pending) };
    });
    // SAFETY: what `f` borrows outlives `'scope`, and the scope does not end before this job
    // has run.
    unsafe { job.into_job_ref() }
}

/// `scope` on `registry`: the body runs on one of its workers.
pub(crate) fn scope<'scope, F, R>(registry: &Arc<Registry>, f: F) -> R
where
    F: FnOnce(&Scope<'scope>) -> R + Send,
    R: Send,
{
    in_worker(registry, |worker| {
        run_scope(Scope::new(&worker.registry), f)
    })
}

/// `scope_fifo` on `registry`: the body runs on one of its workers.
pub(crate) fn scope_fifo<'scope, F, R>(registry: &Arc<Registry>, f: F) -> R
where
    F: FnOnce(&ScopeFifo<'scope>) -> R + Send,
    R: Send,
{
    in_worker(registry, |worker| {
        run_scope(ScopeFifo::new(&worker.registry), f)
    })
}

/// A scope on `registry` whose body runs on the calling thread.
pub(crate) fn in_place_scope<'scope, F, R>(registry: &Arc<Registry>, f: F) -> R
where
    F: FnOnce(&Scope<'scope>) -> R,
{
    run_scope(Scope::new(registry), f)
}

/// A FIFO scope on `registry` whose body runs on the calling thread.
pub(crate) fn in_place_scope_fifo<'scope, F, R>(registry: &Arc<Registry>, f: F) -> R
where
    F: FnOnce(&ScopeFifo<'scope>) -> R,
{
    run_scope(ScopeFifo::new(registry), f)
}

/// Runs the body `f` of `scope` here, waits for every job of the scope, and returns the
/// body's value or re-raises the first panic (module doc).
fn run_scope<'scope, S, F, R>(scope: S, f: F) -> R
where
    S: AsScope<'scope>,
    F: FnOnce(&S) -> R,
{
    let result = panic::catch_unwind(AssertUnwindSafe(|| f(&scope)));
    let base = scope.base();
    // SAFETY: `scope` lives in this frame until after the wait below, and nothing in between
    // can unwind (the body's panic is caught, the wait runs only jobs that catch their own).
    unsafe { CountLatch::decrement(&base.pending) };
    wait::block_until(&|| base.pending.latch().probe(), None);
    let spawned_panic = base.panic.take();
    match (result, spawned_panic) {
        (Ok(value), None) => value,
        (Err(payload), spawned) => {
            if let Some(spawned) = spawned {
                base.registry.report_panic(spawned);
            }
            panic::resume_unwind(payload)
        }
        (Ok(value), Some(payload)) => {
            base.registry.drop_reporting(value);
            panic::resume_unwind(payload)
        }
    }
}
