//! The worker loop: pop from the own deque, else look elsewhere, else sleep.
//!
//! A worker's own deque is LIFO (the job it pushed last is the one whose data is warm) and
//! others steal from its other end. Popping from it touches nothing shared beyond the deque
//! itself: no global counter, no sleep state (the wake policy is consulted only through the
//! worker's own [`WakeState`] until it runs out of local work).
//!
//! The same loop serves a worker that waits inside `join` or `scope`: it keeps running jobs
//! until its latch is set, so waiting never blocks a worker while there is work.

use std::cell::Cell;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crossbeam_deque::{Steal, Worker};

use super::job::{JobRef, Runner, StackJob};
use super::latch::{Latch, Waiter};
use super::registry::{bump, Registry};
use super::spin::SpinGovernor;
use crate::task::kick::Held;
use crate::trace::TraceKind;
use crate::wake::WakeState;

thread_local! {
    /// The address of the worker running on this thread (null on other threads). Every `join`
    /// reads it, so it is a plain `Cell`. [`WorkerThread::run`] sets it for the time the
    /// worker's body runs, during which that frame owns the worker and does not move it.
    static CURRENT: Cell<*const WorkerThread> = const { Cell::new(std::ptr::null()) };
}

/// One worker's thread-local state.
pub(crate) struct WorkerThread {
    pub(crate) registry: Arc<Registry>,
    pub(crate) index: usize,
    local: Worker<JobRef>,
    wake: Cell<WakeState>,
    /// Successors held for delay-kick (`task/kick.rs`).
    held: Held<JobRef>,
    rng: Cell<u64>,
    spin: Duration,
    spin_governor: SpinGovernor,
}

impl WorkerThread {
    /// Whether this thread is one of the workers of the pool with id `registry_id`.
    pub(crate) fn is_current(registry_id: usize) -> bool {
        Self::with_current(registry_id, |worker| worker.is_some())
    }

    /// Calls `f` with the worker of the pool with id `registry_id` running on this thread, if
    /// any (the path every `join` takes).
    #[inline]
    pub(crate) fn with_current<R>(
        registry_id: usize,
        f: impl FnOnce(Option<&WorkerThread>) -> R,
    ) -> R {
        let worker = CURRENT.with(Cell::get);
        // SAFETY: a non-null `CURRENT` is the worker this thread is running: `run` sets it
        // once the worker has its place in `run`'s frame, and `Unregister` clears it before
        // the worker is dropped, whether the body returns or unwinds. The reference is only
        // lent to `f`, which runs on this thread inside that time.
        let worker = unsafe { worker.as_ref() }.filter(|worker| worker.registry.id == registry_id);
        f(worker)
    }

    /// The body of worker thread `index`: runs until the pool terminates and every queue is
    /// empty.
    pub(crate) fn run(
        registry: Arc<Registry>,
        index: usize,
        local: Worker<JobRef>,
        spin: Duration,
    ) {
        let worker = WorkerThread {
            registry,
            index,
            local,
            wake: Cell::new(WakeState::default()),
            held: Held::new(),
            rng: Cell::new(0x9E37_79B9_7F4A_7C15 ^ (index as u64 + 1)),
            spin,
            spin_governor: SpinGovernor::default(),
        };
        CURRENT.with(|current| current.set(&worker));
        // Declared after `worker`, so dropped before it.
        let _unregister = Unregister;
        worker.main_loop();
    }

    fn main_loop(&self) {
        let terminating = || self.registry.terminating();
        loop {
            if let Some(job) = self.find_work(&terminating) {
                self.run_job(job);
            } else if terminating() {
                // Every queue was empty after shutdown began; jobs still running elsewhere
                // push only on their own worker's deque, which that worker drains.
                return;
            } else {
                self.idle(&terminating);
            }
        }
    }

    /// Runs jobs until `latch` is set, sleeping when there are none.
    pub(crate) fn wait_until(&self, latch: &Latch<'_>) {
        self.wait_for(&|| latch.probe());
    }

    /// Runs jobs until `done` holds, sleeping when there are none. Whoever makes `done` true
    /// must then wake this worker (`Sleep::wake_worker`).
    pub(crate) fn wait_for(&self, done: &dyn Fn() -> bool) {
        while !done() {
            if let Some(job) = self.find_work(done) {
                self.run_job(job);
            } else if !done() {
                self.idle(done);
            }
        }
        // Back to user code, which may run long: a search in progress ends, and held
        // successors must not wait for it.
        let mut wake = self.wake.get();
        self.registry
            .sleep
            .leave(&mut wake, || self.registry.has_work());
        self.wake.set(wake);
        self.kick_held();
    }

    /// Holds a successor released by a task that finished here (delay-kick).
    pub(crate) fn hold(&self, job: JobRef) {
        self.held.hold(job);
    }

    /// Pushes every held successor for others to take.
    #[inline]
    pub(crate) fn kick_held(&self) {
        self.held.kick_all(|job| self.kick(job));
    }

    fn kick(&self, job: JobRef) {
        bump(&self.registry.counters[self.index].kicks);
        self.registry.trace.mark(self.index, TraceKind::Kick, 1);
        self.push_with(job, true);
    }

    /// Pushes a job on this worker's deque.
    #[inline]
    pub(crate) fn push(&self, job: JobRef) {
        self.push_with(job, false);
    }

    /// Pushes a job on this worker's deque; `fenced` as in `Sleep::notify_local`.
    #[inline]
    fn push_with(&self, job: JobRef, fenced: bool) {
        self.local.push(job);
        self.registry.sleep.notify_local(self.local.len(), fenced);
    }

    /// Pops the job this worker pushed last, if it is still there.
    #[inline]
    pub(crate) fn pop_local(&self) -> Option<JobRef> {
        let job = self.local.pop()?;
        self.found_work();
        Some(job)
    }

    #[inline]
    pub(crate) fn run_job(&self, job: JobRef) {
        bump(&self.registry.counters[self.index].tasks);
        // SAFETY: the job came out of one of this registry's queues, which hand each pushed
        // job to exactly one taker, and its owner keeps it alive until it has run.
        unsafe {
            job.execute(Runner {
                registry: &self.registry,
                worker: self.index,
            })
        };
    }

    pub(crate) fn count_spawn(&self) {
        bump(&self.registry.counters[self.index].spawned);
    }

    /// Own deque first; then, as the policy allows, the global queue and other workers,
    /// spinning briefly and then yielding once before giving up.
    fn find_work(&self, done: &dyn Fn() -> bool) -> Option<JobRef> {
        // Delay-kick: the first held successor is this worker's; the rest go to thieves.
        if let Some(job) = self.held.take_and_kick(|job| self.kick(job)) {
            self.found_work();
            return Some(job);
        }
        if let Some(job) = self.pop_local() {
            return Some(job);
        }
        let mut wake = self.wake.get();
        let searching = self.registry.sleep.start_searching(&mut wake);
        self.wake.set(wake);
        if let Some(job) = self.steal() {
            self.found_work();
            return Some(job);
        }
        if !searching || self.spin.is_zero() || !self.spin_governor.should_spin() {
            return None;
        }
        let deadline = Instant::now() + self.spin;
        let mut spins = 1u32;
        while !done() && Instant::now() < deadline {
            for _ in 0..spins {
                std::hint::spin_loop();
            }
            spins = (spins * 2).min(64);
            if let Some(job) = self.steal() {
                return Some(self.found_by_spinning(job));
            }
        }
        // A spin that found nothing yields once before the worker sleeps. On a machine with
        // more runnable threads than cores the thread that will produce the work (a producer,
        // a worker finishing a job) may be waiting for this very core: the yield lets it run,
        // where a sleep would cost a switch now and a wake-up (often preempting somebody)
        // later. With nothing else runnable here it returns at once. Only one: yielding on
        // every spin round also hands the core back and forth between two workers passing a
        // chain of jobs, doubling their switches.
        if !done() {
            std::thread::yield_now();
            if let Some(job) = self.steal() {
                return Some(self.found_by_spinning(job));
            }
        }
        self.spin_governor.record(false);
        None
    }

    /// A spin found `job`: spinning paid, so it stays on (`spin.rs`).
    fn found_by_spinning(&self, job: JobRef) -> JobRef {
        self.spin_governor.record(true);
        self.found_work();
        job
    }

    #[inline]
    fn found_work(&self) {
        let mut wake = self.wake.get();
        self.registry
            .sleep
            .found_work(&mut wake, || self.registry.has_work());
        self.wake.set(wake);
    }

    /// Takes a job from the global queue (a batch of them, into the own deque) or from
    /// another worker, starting at a random victim so thieves spread out.
    fn steal(&self) -> Option<JobRef> {
        let registry = &self.registry;
        loop {
            let mut retry = false;
            match registry.injector.steal_batch_and_pop(&self.local) {
                Steal::Success(job) => return Some(job),
                Steal::Retry => retry = true,
                Steal::Empty => {}
            }
            let workers = registry.workers();
            let start = self.next_random() as usize % workers;
            for offset in 0..workers {
                let victim = (start + offset) % workers;
                if victim == self.index {
                    continue;
                }
                match registry.stealers[victim].steal() {
                    Steal::Success(job) => {
                        bump(&registry.counters[self.index].steals);
                        registry.trace.mark(self.index, TraceKind::Steal, victim);
                        return Some(job);
                    }
                    Steal::Retry => retry = true,
                    Steal::Empty => {}
                }
            }
            if !retry {
                return None;
            }
        }
    }

    /// Goes to sleep through the wake policy, unless work or `done` shows up meanwhile.
    fn idle(&self, done: &dyn Fn() -> bool) {
        self.registry.notify_idle_waiters();
        let mut wake = self.wake.get();
        let tracing = self.registry.trace.enabled();
        let start = tracing.then(Instant::now);
        let blocked =
            self.registry
                .sleep
                .sleep(self.index, &mut wake, || self.registry.has_work(), done);
        self.wake.set(wake);
        if let (true, Some(start)) = (blocked, start) {
            let trace = &self.registry.trace;
            trace.record(self.index, TraceKind::Sleep, start, 0);
            trace.mark(self.index, TraceKind::Wake, 0);
        }
    }

    fn next_random(&self) -> u64 {
        // xorshift64: cheap, and only spreads thieves over victims.
        let mut x = self.rng.get();
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.rng.set(x);
        x
    }
}

/// Clears this thread's `CURRENT` when the worker's body returns or unwinds, so it never
/// outlives the worker it points at.
struct Unregister;

impl Drop for Unregister {
    fn drop(&mut self) {
        CURRENT.with(|current| current.set(std::ptr::null()));
    }
}

/// Runs `op` on one of `registry`'s workers: at once if this thread is one, otherwise as a
/// job on the global queue while this thread blocks.
///
/// A thread outside the pool does not run the pool's jobs while it waits: the jobs it would
/// pick up could call back into the pool from outside and nest without bound on its stack.
/// Moving the whole operation onto a worker keeps every `join` and `scope` inside it on the
/// fast path (own deque, pop back) instead.
pub(crate) fn in_worker<OP, R>(registry: &Arc<Registry>, op: OP) -> R
where
    OP: FnOnce(&WorkerThread) -> R + Send,
    R: Send,
{
    let op = match WorkerThread::with_current(registry.id, |worker| match worker {
        Some(worker) => Ok(op(worker)),
        None => Err(op),
    }) {
        Ok(result) => return result,
        Err(op) => op,
    };
    run_elsewhere(registry, op)
}

/// `in_worker` from a thread that is not one of the pool's workers.
#[cold]
fn run_elsewhere<OP, R>(registry: &Arc<Registry>, op: OP) -> R
where
    OP: FnOnce(&WorkerThread) -> R + Send,
    R: Send,
{
    let job = StackJob::new(
        || {
            WorkerThread::with_current(registry.id, |worker| {
                op(worker.expect("a job from the global queue runs on one of the pool's workers"))
            })
        },
        Latch::new(Waiter::Thread(std::thread::current())),
    );
    // SAFETY: `job` stays in this frame until its latch is set: this thread blocks below
    // until then, and nothing between here and there can unwind.
    registry.inject(unsafe { job.as_job_ref() });
    while !job.latch().probe() {
        // The latch's `set` unparks this thread; the park token covers a `set` that lands
        // between the probe and the park, and spurious returns just loop.
        std::thread::park();
    }
    match job.into_result() {
        Ok(value) => value,
        Err(payload) => std::panic::resume_unwind(payload),
    }
}
