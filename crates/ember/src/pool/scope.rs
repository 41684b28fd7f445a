//! Scopes: spawn jobs that borrow from the caller's frame, and wait for all of them.
//!
//! A scope counts its outstanding jobs (the body counts as one). Each spawned job holds a
//! pointer to the scope and counts itself out when it ends; the scope does not return, even
//! when its body panics, before the count is zero, which is what makes the borrows sound.
//! The scope's body runs on a worker (called from outside the pool, the caller waits while it
//! does), and that worker runs queued jobs while it waits.
//!
//! Panics: the body's panic is re-raised first; else the first job's. Every other panic (a
//! later job's, or the drop of the body's value when a job panicked) is reported to the pool
//! (`unwind.rs`), so that no user code runs while the re-raised panic unwinds.

use std::marker::PhantomData;
use std::panic::{self, AssertUnwindSafe};
use std::sync::Arc;

use super::job::{HeapJob, Panic};
use super::latch::{CountLatch, Waiter};
use super::registry::Registry;
use super::unwind::drop_catching;
use super::wait::{self, Sleeper};
use super::worker::{in_worker, WorkerThread};
use crate::sync::{lock, Mutex};

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
    panic: Mutex<Option<Panic>>,
    /// Pools with a job blocked until this scope ends (`wait.rs`): its jobs, which may run on
    /// other workers, carry them along.
    blocked: Vec<usize>,
    /// Invariant in `'scope`, as borrows into the scope must be.
    marker: PhantomData<fn(&'scope ()) -> &'scope ()>,
}

/// A pointer to a scope that a job carries to another thread.
struct ScopePtr<'scope>(*const Scope<'scope>);

// SAFETY: `Scope` is `Sync` (its fields are), and the scope outlives every job holding this
// pointer: it waits for its count to reach zero, and a job counts itself out last.
unsafe impl Send for ScopePtr<'_> {}

impl<'scope> ScopePtr<'scope> {
    /// A method, not a field access, so closures capture the whole (`Send`) wrapper.
    fn get(&self) -> *const Scope<'scope> {
        self.0
    }
}

impl<'scope> Scope<'scope> {
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
        self.pending.increment();
        let scope_ptr = ScopePtr(self as *const Scope<'scope>);
        let job = HeapJob::new(move |runner: super::job::Runner<'_>| {
            runner.start_uncounted();
            // SAFETY: the scope is alive until its count reaches zero (see `ScopePtr`).
            let scope: &Scope<'scope> = unsafe { &*scope_ptr.get() };
            let outcome = wait::with_blocked_pools(&scope.blocked, || {
                panic::catch_unwind(AssertUnwindSafe(|| f(scope)))
            });
            if let Err(payload) = outcome {
                let later = {
                    let mut first = lock(&scope.panic);
                    match *first {
                        None => first.replace(payload),
                        Some(_) => Some(payload),
                    }
                };
                // Only the first panic is re-raised; the others are reported.
                if let Some(later) = later {
                    scope.registry.report_panic(later);
                }
            }
            // SAFETY: last use of `scope`; it may be freed once the count reaches zero.
            unsafe { CountLatch::decrement(&scope.pending) };
        });
        // SAFETY: what `f` borrows outlives `'scope`, and the scope does not end before this
        // job has run.
        let job = unsafe { job.into_job_ref() };
        WorkerThread::with_current(self.registry.id, |worker| match worker {
            Some(worker) => worker.push_shared(job),
            None => self.registry.inject(job),
        });
    }
}

pub(crate) fn scope<'scope, F, R>(registry: &Arc<Registry>, f: F) -> R
where
    F: FnOnce(&Scope<'scope>) -> R + Send,
    R: Send,
{
    in_worker(registry, |worker| scope_on_worker(worker, f))
}

/// `scope` on `worker`, this thread's.
pub(super) fn scope_on_worker<'scope, F, R>(worker: &WorkerThread, f: F) -> R
where
    F: FnOnce(&Scope<'scope>) -> R + Send,
    R: Send,
{
    let registry = &worker.registry;
    {
        let scope = Scope {
            registry: Arc::clone(registry),
            pending: CountLatch::new(Waiter::Sleeper(Sleeper::Worker {
                registry: Arc::clone(registry),
                index: worker.index,
            })),
            panic: Mutex::new(None),
            blocked: wait::blocked_pools_with(None),
            marker: PhantomData,
        };
        let result = panic::catch_unwind(AssertUnwindSafe(|| f(&scope)));
        // SAFETY: `scope` lives in this frame until after the wait below, and nothing in
        // between can unwind (the body's panic is caught, the wait runs only jobs that catch
        // their own).
        unsafe { CountLatch::decrement(&scope.pending) };
        worker.wait_until(scope.pending.latch());
        let spawned_panic = lock(&scope.panic).take();
        match (result, spawned_panic) {
            (Ok(value), None) => value,
            (Err(payload), spawned) => {
                if let Some(spawned) = spawned {
                    registry.report_panic(spawned);
                }
                panic::resume_unwind(payload)
            }
            (Ok(value), Some(payload)) => {
                if let Some(own) = drop_catching(value) {
                    registry.report_panic(own);
                }
                panic::resume_unwind(payload)
            }
        }
    }
}
