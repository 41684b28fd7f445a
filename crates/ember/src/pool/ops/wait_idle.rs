//! `wait_idle`: counting tasks in and out, and telling waiters when none is outstanding.
//!
//! # Counting
//!
//! Every counted task — a [`Pool::spawn`](crate::Pool::spawn)ed closure, a dependent
//! [`Task`](crate::Task) — is counted in when it is created and out when it ends (ran,
//! panicked, or was cancelled). Each worker counts on its own cache line with plain stores
//! (`registry::bump`), never a read-modify-write, so that spawning and running a task touches
//! no shared counter; threads outside the pool count on one shared counter. The pool is idle
//! when the sums are equal ([`Registry::is_idle`]). `join` halves, scope jobs and work moved
//! onto the pool by `join`/`scope`/`install` from outside are not tasks and are not counted.
//!
//! # Telling waiters
//!
//! Summing every worker's counters after every task would cost each task a cache miss per
//! worker while somebody waits (the counters are being written by their owners). Instead a
//! worker that counts a task out only notes that a look is *due*, and looks — a fence, the
//! waiter list, and only if somebody waits, the sums — at the first of these *check points*:
//!
//! * it goes to sleep;
//! * it starts a job that is not a counted task: a stolen `join` half, a job moved onto the
//!   pool, a scope job (`Runner::start_uncounted`);
//! * a job it ran from inside a `join` returns to that `join`;
//! * it leaves a wait (`join`, `scope`, a task, another pool) to return to user code.
//!
//! If instead it starts another counted task, it drops the look: that task is outstanding, so
//! the pool is not idle, and its own end makes the look due again. So between the end of the
//! last task and the look, the worker only runs the pool's own code (it never starts user
//! work that could take long), and `wait_idle` returns as soon as the last task has ended,
//! whoever ended it. What a worker can miss is a moment of idleness that ends before it looks:
//! the last task ends and the same worker at once starts a task spawned after it.
//!
//! # Why no waiter sleeps through the end
//!
//! A waiter registers, makes a `SeqCst` fence, and sums the counters (`WaitList::wait`); a
//! worker at a check point makes a `SeqCst` fence and reads whether anybody is registered.
//! Either the waiter's sum sees the worker's count, or the worker sees the waiter and sums
//! itself. Of two workers whose last tasks end at once, each counted its own before its fence,
//! so the later of the two fences sees both counts. Tasks that end on other threads, and tasks
//! cancelled anywhere (an event dropped inside a job: user code goes on afterwards), look at
//! once.

use std::sync::atomic::{fence, AtomicU64, Ordering};
use std::time::Instant;

use crate::pool::workers::registry::{bump, Registry, WorkerCounters};
use crate::pool::workers::worker::WorkerThread;

impl Registry {
    /// Counts a dependent task created on this thread (before it can run).
    pub(crate) fn count_spawn_here(&self) {
        WorkerThread::with_current(self.id, |worker| match worker {
            Some(worker) => worker.count_spawn(),
            None => self.count_external_spawn(),
        });
    }

    /// Counts the end of a dependent task that ran on this thread, a worker (module doc: the
    /// look is due at the worker's next check point).
    pub(crate) fn count_task_end_here(&self) {
        let on_worker = WorkerThread::with_current(self.id, |worker| {
            worker.map(|worker| count_completion(&self.counters[worker.index]))
        });
        if on_worker.is_none() {
            self.count_external_completion();
        }
    }

    /// Counts the end of a task cancelled on this thread, whichever it is, and looks at once:
    /// a cancellation can happen in the middle of user code (an event dropped inside a job),
    /// where no check point comes before that code goes on.
    pub(crate) fn count_cancellation_here(&self) {
        let on_worker = WorkerThread::with_current(self.id, |worker| {
            worker.map(|worker| bump(&self.counters[worker.index].completed))
        });
        match on_worker {
            Some(()) => self.notify_if_idle(),
            None => self.count_external_completion(),
        }
    }

    /// Counts the end of a task on a thread that is no worker of this pool, and looks at once
    /// (such a thread has no check points).
    fn count_external_completion(&self) {
        self.external_completions.fetch_add(1, Ordering::Release);
        self.notify_if_idle();
    }

    /// Books the end of a spawned task on `worker`: its panic, if any, and its completion.
    /// Inline: every spawned job ends here.
    #[inline]
    pub(crate) fn finish_spawned(
        &self,
        counters: &WorkerCounters,
        panic: Option<crate::pool::jobs::job::Panic>,
    ) {
        if let Some(payload) = panic {
            self.report_panic(payload);
        }
        count_completion(counters);
    }

    /// A check point on the worker whose `counters` these are (module doc): looks whether
    /// the pool is idle if a task ended there since the last look.
    #[inline]
    pub(crate) fn check_idle(&self, counters: &WorkerCounters) {
        let due = &counters.idle_check_due;
        if due.load(Ordering::Relaxed) {
            due.store(false, Ordering::Relaxed);
            self.notify_if_idle();
        }
    }

    /// Wakes `wait_idle` callers if the pool is idle. The fence of `notify_changed` makes
    /// the counts made before visible before the waiter list is read (module doc, "Why no
    /// waiter sleeps through the end").
    #[cold]
    fn notify_if_idle(&self) {
        self.idle_waiters.notify_changed(|| self.is_idle());
    }

    /// Whether every counted task has ended, from a snapshot of the counters.
    ///
    /// Completions are summed before spawns. A completion seen implies its spawn is seen too
    /// (the spawn was counted before the job was pushed, and the push happens-before the run),
    /// so the spawn sum read afterwards is at least the completion sum; equality means that at
    /// the moment the completions were read, nothing spawned was outstanding.
    pub(crate) fn is_idle(&self) -> bool {
        self.outstanding() == 0
    }

    /// Counted tasks not ended yet, from the same snapshot as [`is_idle`](Self::is_idle).
    pub(crate) fn outstanding(&self) -> u64 {
        let completed = self.sum(&self.external_completions, |c| &c.completed);
        fence(Ordering::SeqCst);
        let spawned = self.sum(&self.external_spawns, |c| &c.spawned);
        spawned.saturating_sub(completed)
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

    /// Blocks until no counted task is outstanding, or `deadline` passes; returns whether the
    /// pool was seen idle. A worker of another pool runs its own pool's jobs meanwhile
    /// (`wait.rs`).
    pub(crate) fn wait_idle(&self, deadline: Option<Instant>) -> bool {
        self.idle_waiters.wait(&|| self.is_idle(), deadline)
    }
}

/// Counts a task out on the worker whose `counters` these are, and makes a look due (module
/// doc).
#[inline]
fn count_completion(counters: &WorkerCounters) {
    bump(&counters.completed);
    counters.idle_check_due.store(true, Ordering::Relaxed);
}

/// A counted task starts on the worker whose `counters` these are: a due look is dropped
/// (module doc).
#[inline]
pub(crate) fn start_counted(counters: &WorkerCounters) {
    counters.idle_check_due.store(false, Ordering::Relaxed);
}
