//! loom model of FIFO spawns (module doc of `fifo.rs`), driving the real [`Fifo`] (its queue a
//! mutex-held `VecDeque` under loom) and the real wake protocol (`Sleep` of a real registry).
//!
//! Worker 0 spawns two jobs FIFO: each goes into the fifo, and an indirection onto worker 0's
//! deque, announced as `push_after_private` announces it (`Sleep::notify_local`, fenced). Worker 0
//! then runs one indirection itself; the job it gets blocks until the other job has run too,
//! so the other indirection must reach worker 1, which starts idle and goes to sleep
//! concurrently. If that wake-up were lost, or an indirection found the fifo empty, or ran a
//! job twice, loom would report the deadlock or the panic.
//!
//! The deque is modelled no stronger than crossbeam's: all its entries are the same
//! indirection, so it is a count of pushes (the owner's `Release` store, as crossbeam's push
//! publishes `back`) and a count of takes (a `SeqCst` compare-exchange, as a steal takes
//! `front`), read with `Acquire` loads by the sleeper's last look.
//!
//! Seen failing (deadlock: worker 1 sleeps through the second indirection) with the
//! indirection announced unfenced (`notify_local(len, false)`): that is why every local push
//! is fenced (`wake/README.md`, "Pushing").
//!
//! Run with `RUSTFLAGS="--cfg loom" CARGO_TARGET_DIR=target/loom cargo test -p ember --release
//! --lib loom`.

use std::sync::Arc;

use loom::sync::atomic::{AtomicUsize, Ordering};
use loom::thread;

use super::support::{model, registry};
use crate::pool::jobs::job::{Job, JobRef, Runner};
use crate::pool::workers::fifo::Fifo;
use crate::pool::Registry;
use crate::sync::{lock, Condvar, Mutex};
use crate::wake::{WakePolicy, WakeState};

/// Worker 0's deque of indirections (all equal), no stronger than crossbeam's (module doc).
#[derive(Default)]
struct Deque {
    pushed: AtomicUsize,
    taken: AtomicUsize,
}

impl Deque {
    /// The owner pushes one; returns the length, as `notify_local` wants it.
    fn push(&self) -> usize {
        let pushed = self.pushed.load(Ordering::Relaxed) + 1;
        self.pushed.store(pushed, Ordering::Release);
        pushed - self.taken.load(Ordering::Acquire)
    }

    /// Takes one if any is left.
    fn take(&self) -> bool {
        loop {
            let taken = self.taken.load(Ordering::Acquire);
            if taken >= self.pushed.load(Ordering::Acquire) {
                return false;
            }
            if self
                .taken
                .compare_exchange(taken, taken + 1, Ordering::SeqCst, Ordering::SeqCst)
                .is_ok()
            {
                return true;
            }
        }
    }

    fn visible(&self) -> bool {
        self.pushed.load(Ordering::Acquire) > self.taken.load(Ordering::Acquire)
    }
}

/// A job that counts its runs and finishes only once both jobs have started.
struct GatedJob {
    runs: AtomicUsize,
    gate: Arc<(Mutex<usize>, Condvar)>,
}

impl Job for GatedJob {
    unsafe fn execute(this: *const Self, _runner: Runner<'_>) {
        // SAFETY: the model keeps the jobs alive until both threads are done.
        let this = unsafe { &*this };
        this.runs.fetch_add(1, Ordering::SeqCst);
        let (started, cvar) = &*this.gate;
        let mut started = lock(started);
        *started += 1;
        cvar.notify_all();
        while *started < 2 {
            started = cvar.wait(started).unwrap();
        }
    }
}

/// Runs one indirection of `fifo`, as a worker running a ref it took from a deque.
fn run_indirection(fifo: &Fifo, registry: &Registry, worker: usize) {
    // SAFETY: `fifo` is alive (the model holds it), and every indirection taken from the
    // deque is run once.
    unsafe { Fifo::execute(fifo, Runner::new(registry, worker)) };
}

fn fifo_job_reaches_sleeper(policy: WakePolicy) {
    model(move || {
        let registry = registry(policy, 2);
        let fifo = Arc::new(Fifo::default());
        let deque = Arc::new(Deque::default());
        let gate = Arc::new((Mutex::new(0usize), Condvar::new()));
        let jobs: Arc<[GatedJob; 2]> = Arc::new(std::array::from_fn(|_| GatedJob {
            runs: AtomicUsize::new(0),
            gate: Arc::clone(&gate),
        }));
        let finished = Arc::new(AtomicUsize::new(0));

        let thief = {
            let (registry, fifo, deque, finished) = (
                Arc::clone(&registry),
                Arc::clone(&fifo),
                Arc::clone(&deque),
                Arc::clone(&finished),
            );
            thread::spawn(move || {
                let sleep = &registry.sleep;
                let mut me = WakeState::default();
                while finished.load(Ordering::SeqCst) == 0 {
                    sleep.start_searching(&mut me);
                    if deque.take() {
                        sleep.found_work(&mut me, |_| usize::from(deque.visible()));
                        run_indirection(&fifo, &registry, 1);
                        continue;
                    }
                    sleep.sleep(
                        1,
                        &mut me,
                        |_| deque.visible(),
                        || finished.load(Ordering::SeqCst) != 0,
                        None,
                    );
                }
            })
        };

        // Worker 0: two FIFO spawns, as `spawn_fifo_on` makes them.
        for job in jobs.iter() {
            // SAFETY: the jobs outlive both threads; the fifo outlives its indirections.
            let _indirection = unsafe { fifo.push(JobRef::new(job)) };
            let len = deque.push();
            registry.sleep.notify_local(|| len);
        }
        // Worker 0 pops one indirection (worker 1 takes at most one: its job blocks until
        // both have started) and runs the job at the front of the fifo.
        assert!(deque.take(), "worker 0's own deque lost both indirections");
        run_indirection(&fifo, &registry, 0);

        finished.store(1, Ordering::SeqCst);
        registry.sleep.wake_all();
        thief.join().unwrap();
        for job in jobs.iter() {
            assert_eq!(job.runs.load(Ordering::SeqCst), 1, "each job runs once");
        }
        assert!(!deque.visible());
    });
}

#[test]
fn loom_fifo_job_reaches_sleeper_searching() {
    fifo_job_reaches_sleeper(WakePolicy::Searching);
}

#[test]
fn loom_fifo_job_reaches_sleeper_eager() {
    fifo_job_reaches_sleeper(WakePolicy::Eager);
}
