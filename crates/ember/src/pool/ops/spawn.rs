//! Spawning: a closure made a job and queued on the spawning worker's deque (where a wake-up
//! may be owed, `workers/owed_wake.rs`), its FIFO queue, or the pool's global queue; and the
//! queueing of a dependent task made runnable (`submit`), which a worker may hold for
//! delay-kick (`workers/held.rs`). `Pool::spawn`, `Pool::spawn_fifo`, the free `spawn`s,
//! scopes' spawns and tasks all come here.

use std::panic::{self, AssertUnwindSafe};

use crate::pool::jobs::job::{HeapJobBox, JobRef, Runner};
use crate::pool::workers::registry::Registry;
use crate::pool::workers::worker::WorkerThread;

/// `spawn` on `registry`: onto the current worker's own deque if this thread is one of its
/// workers, else onto its global queue.
pub(crate) fn spawn_on<F>(registry: &Registry, f: F)
where
    F: FnOnce() + Send + 'static,
{
    spawn_with(registry, f, |worker, job| worker.push_spawned(job));
}

/// `spawn_fifo` on `registry`: as [`spawn_on`], but on a worker the job goes to the back of
/// the worker's FIFO queue and an indirection onto its deque (`fifo.rs`).
pub(crate) fn spawn_fifo_on<F>(registry: &Registry, f: F)
where
    F: FnOnce() + Send + 'static,
{
    spawn_with(registry, f, |worker, job| {
        // SAFETY: the registry's fifos live as long as the registry, which every worker (the
        // only runners of its queued refs) keeps alive.
        worker.push_spawned(unsafe { registry.fifos[worker.index].push(job) });
    });
}

/// Counts the spawn of `f` and queues its job: through `push` on this thread's worker if it
/// is one of `registry`'s, else on the global queue.
#[inline]
fn spawn_with<F>(registry: &Registry, f: F, push: impl FnOnce(&WorkerThread, JobRef))
where
    F: FnOnce() + Send + 'static,
{
    // One look at this thread's worker: any pool's gives the job's block, only `registry`'s
    // takes the job.
    WorkerThread::with_any_current(|any| {
        let job = spawned_job(f, any);
        match any.filter(|worker| worker.registry.id == registry.id) {
            Some(worker) => {
                worker.count_spawn();
                push(worker, job);
            }
            None => {
                registry.count_external_spawn();
                registry.inject(job);
            }
        }
    });
}

/// The job of a spawned closure: a counted task whose panic is reported. `worker` is this
/// thread's, of any pool (`HeapJobBox::new_on`).
#[inline]
fn spawned_job<F>(f: F, worker: Option<&WorkerThread>) -> JobRef
where
    F: FnOnce() + Send + 'static,
{
    let job = HeapJobBox::new_on(
        move |runner: Runner<'_>| {
            runner.start_counted();
            let outcome = runner.registry.trace.in_task_span(runner.worker, None, || {
                panic::catch_unwind(AssertUnwindSafe(f))
            });
            runner
                .registry
                .finish_spawned(runner.counters, outcome.err());
        },
        worker,
    );
    // SAFETY: `f` is 'static, so nothing it holds can end before it runs.
    unsafe { job.into_job_ref() }
}

/// Queues a job made runnable by a dependency: held for delay-kick when a task finishing on a
/// worker released it (and delay-kick is on), pushed on the worker's deque when released on a
/// worker otherwise, injected when released outside the pool.
pub(crate) fn submit<F>(registry: &Registry, from_task: bool, f: F)
where
    F: FnOnce(Runner<'_>) + Send + 'static,
{
    // As in `spawn_with`: one look at this thread's worker.
    WorkerThread::with_any_current(|any| {
        // SAFETY: `f` is 'static.
        let job = unsafe { HeapJobBox::new_on(f, any).into_job_ref() };
        match any.filter(|worker| worker.registry.id == registry.id) {
            Some(worker) if from_task && registry.config.delay_kick => worker.hold(job),
            Some(worker) => worker.push_after_private(job),
            None => registry.inject(job),
        }
    });
}

/// Before ember drops a user value on this thread inside or after a task's ending (a result
/// nobody will join, a cancelled task's closure): a worker first hands on the successors it
/// holds, which no other worker can take while that `Drop` runs, or blocks on one of them
/// (`held.rs`).
pub(crate) fn kick_held_here() {
    WorkerThread::with_any_current(|worker| {
        if let Some(worker) = worker {
            worker.kick_held();
        }
    });
}
