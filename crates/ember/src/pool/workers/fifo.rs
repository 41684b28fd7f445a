//! FIFO order for a worker's own spawns: `spawn_fifo` and `scope_fifo`, as rayon defines it.
//!
//! A worker's deque is LIFO for its owner: the job it pushed last is the one it pops first.
//! A FIFO spawn keeps that deque, and puts an *indirection* on it instead of the job: the job
//! goes to the back of a FIFO queue of the spawning worker ([`Fifo`]), and the ref pushed on
//! the deque, whoever pops or steals it, runs the job at the *front* of that queue. So the
//! jobs a worker spawned FIFO start in the order they were spawned, interleaved with its LIFO
//! jobs exactly where their indirections sit (rayon's `JobFifo`; "FIFO for the pool's own
//! worker": spawns of different workers, or from outside the pool, are not ordered against
//! each other). The pool keeps one such queue per worker for `spawn_fifo`, and every
//! `scope_fifo` one per worker for its own spawns.
//!
//! # Invariants
//!
//! * **An indirection always finds a job.** [`Fifo::push`] queues the job *before* it returns
//!   the indirection, and the caller can only push that ref on a deque afterwards; so for
//!   every ref taken from a deque a job is in the queue (the deque's push/take orders the
//!   job's push before the taker's look), and as many refs as jobs exist, each run once.
//! * **The queue outlives every indirection to it.** An indirection touches its queue only to
//!   take a job, before running it. A scope's queues live in the scope, which waits for all of
//!   its jobs to end, so the last indirection has left the queue when the scope returns; the
//!   pool's queues live in its registry, which every worker (the only runners of its refs)
//!   keeps alive.
//! * **Wake-ups** are the ordinary ones: the indirection is pushed as a spawned job is
//!   (`push_spawned` for `Pool::spawn_fifo`, whose wake-up may be owed, `push_after_private` for a
//!   scope's; `wake/README.md`), and found by the ordinary look at the own deque or by a
//!   thief's steal.
//!
//! An indirection is neither a counted task nor a check point for `wait_idle`
//! (`wait_idle.rs`): the job it runs says which it is (`Runner::start_counted`/`start_uncounted`).
//!
//! `src/loom/fifo.rs` drives [`Fifo`] with a worker spawning FIFO jobs, a thief on its way to
//! sleep, and the real wake protocol. Under loom the queue is a mutex-held `VecDeque`: a
//! linearizable MPMC FIFO queue, which is what crossbeam's `Injector` is.

use crate::pool::jobs::job::{Job, JobRef, Runner};

/// A queue of jobs run in the order they were pushed, through indirections (module doc).
#[derive(Default)]
pub(crate) struct Fifo {
    queue: Queue,
}

impl Fifo {
    /// Queues `job` at the back and returns the indirection to push in its place.
    ///
    /// # Safety
    /// The fifo must stay alive, unmoved, until the returned ref has been executed (module
    /// doc: a scope waits for its jobs; the registry outlives its workers' jobs).
    pub(crate) unsafe fn push(&self, job: JobRef) -> JobRef {
        self.queue.push(job);
        // SAFETY: forwarded from the caller.
        unsafe { JobRef::new(self) }
    }
}

impl Job for Fifo {
    unsafe fn execute(this: *const Self, runner: Runner<'_>) {
        // SAFETY: the fifo outlives its indirections (`push`'s contract).
        let this = unsafe { &*this };
        let job = this
            .queue
            .pop()
            .expect("ember: a FIFO indirection found its queue empty");
        // SAFETY: the job was pushed once and taken out once, here; its owner keeps it alive
        // until it has run (as for any queued job).
        unsafe { job.execute(runner) }
    }
}

#[cfg(not(loom))]
#[derive(Default)]
struct Queue(crossbeam_deque::Injector<JobRef>);

#[cfg(not(loom))]
impl Queue {
    fn push(&self, job: JobRef) {
        self.0.push(job);
    }

    fn pop(&self) -> Option<JobRef> {
        loop {
            match self.0.steal() {
                crossbeam_deque::Steal::Success(job) => return Some(job),
                crossbeam_deque::Steal::Empty => return None,
                crossbeam_deque::Steal::Retry => {}
            }
        }
    }
}

#[cfg(loom)]
struct Queue(crate::sync::Mutex<std::collections::VecDeque<JobRef>>);

#[cfg(loom)]
impl Default for Queue {
    fn default() -> Self {
        Queue(crate::sync::Mutex::new(std::collections::VecDeque::new()))
    }
}

#[cfg(loom)]
impl Queue {
    fn push(&self, job: JobRef) {
        crate::sync::lock(&self.0).push_back(job);
    }

    fn pop(&self) -> Option<JobRef> {
        crate::sync::lock(&self.0).pop_front()
    }
}
