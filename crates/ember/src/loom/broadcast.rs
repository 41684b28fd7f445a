//! loom models of the broadcast protocol (module doc of `broadcast.rs`), driving the real
//! `Registry::inject_broadcast`, `BroadcastQueue::pop`, `Registry::close_broadcasts` and the
//! real `Sleep` with its parkers. The jobs only count their runs.
//!
//! Run with `RUSTFLAGS="--cfg loom" CARGO_TARGET_DIR=target/loom cargo test -p ember --release
//! --lib loom`.

use std::sync::Arc;

use loom::sync::atomic::{AtomicUsize, Ordering};
use loom::thread;

use super::support::{model, registry};
use crate::pool::jobs::job::{Job, JobRef, Runner};
use crate::pool::Registry;
use crate::wake::{WakePolicy, WakeState};

/// A broadcast job that counts its runs in the model's frame (as a real broadcast's jobs live
/// in the broadcasting frame, so a refused broadcast leaks nothing).
struct CountingJob(loom::sync::Arc<AtomicUsize>);

impl Job for CountingJob {
    unsafe fn execute(this: *const Self, _runner: Runner<'_>) {
        // SAFETY: the model keeps the job alive until every thread has been joined.
        unsafe { &*this }.0.fetch_add(1, Ordering::SeqCst);
    }
}

/// One job per worker, each counting its run in `ran`.
fn counting_jobs(workers: usize, ran: &loom::sync::Arc<AtomicUsize>) -> Vec<CountingJob> {
    (0..workers).map(|_| CountingJob(ran.clone())).collect()
}

fn refs(jobs: &[CountingJob]) -> Vec<JobRef> {
    // SAFETY: the jobs outlive the model's threads, which are joined before they drop.
    jobs.iter().map(|job| unsafe { JobRef::new(job) }).collect()
}

fn run(registry: &Registry, index: usize, job: JobRef) {
    // SAFETY: the job came out of a broadcast queue, which hands it to its one taker.
    unsafe { job.execute(Runner::new(registry, index)) };
}

/// A broadcast races a worker on its way to sleep: the worker looks at its broadcast queue,
/// finds nothing, and goes to sleep through the real `Sleep::sleep` (its last look sees no
/// other work). It must wake and run the job; if the wake-up were lost, it would park for
/// good and loom would report the deadlock.
///
/// Seen failing (deadlock) with `inject_broadcast` waking the workers *before* pushing the
/// jobs: the worker consumes the token, looks, finds nothing yet, and parks again.
fn broadcast_reaches_sleeper(policy: WakePolicy) {
    model(move || {
        let registry = registry(policy, 1);
        let ran = loom::sync::Arc::new(AtomicUsize::new(0));
        let worker = {
            let registry = Arc::clone(&registry);
            thread::spawn(move || {
                let mut me = WakeState::default();
                loop {
                    if let Some(job) = registry.broadcasts[0].pop() {
                        run(&registry, 0, job);
                        return;
                    }
                    registry.sleep.sleep(0, &mut me, |_| false, || false, None);
                }
            })
        };
        let jobs = counting_jobs(1, &ran);
        registry
            .inject_broadcast(refs(&jobs))
            .expect("the worker has not left");
        worker.join().unwrap();
        assert_eq!(ran.load(Ordering::SeqCst), 1);
    });
}

#[test]
fn loom_broadcast_reaches_sleeper_searching() {
    broadcast_reaches_sleeper(WakePolicy::Searching);
}

#[test]
fn loom_broadcast_reaches_sleeper_biased() {
    broadcast_reaches_sleeper(WakePolicy::Biased { batch: 1 });
}

/// A broadcast races two workers leaving the pool (each runs what its queue holds, then
/// closes it, as `WorkerThread::run` does). Either the broadcast is refused and nothing runs,
/// or it is accepted and runs on both workers: never a job stranded in a closed queue, never
/// a broadcast that reaches only some workers.
///
/// Seen failing with `close_broadcasts` closing a queue without checking that it is empty
/// (an accepted job never runs), and with `inject_broadcast` pushing to each queue that is
/// open instead of checking them all first (the broadcast runs on one worker only).
#[test]
fn loom_broadcast_races_workers_leaving() {
    model(|| {
        let registry = registry(WakePolicy::Searching, 2);
        let ran = loom::sync::Arc::new(AtomicUsize::new(0));
        let leavers: Vec<_> = (0..2)
            .map(|index| {
                let registry = Arc::clone(&registry);
                thread::spawn(move || loop {
                    while let Some(job) = registry.broadcasts[index].pop() {
                        run(&registry, index, job);
                    }
                    if registry.close_broadcasts(index) {
                        return;
                    }
                })
            })
            .collect();
        let jobs = counting_jobs(2, &ran);
        let accepted = registry.inject_broadcast(refs(&jobs)).is_ok();
        for leaver in leavers {
            leaver.join().unwrap();
        }
        let expected = if accepted { 2 } else { 0 };
        assert_eq!(ran.load(Ordering::SeqCst), expected, "accepted: {accepted}");
    });
}
