//! loom models of pushes on a worker's own deque, with a deque that publishes as the real one
//! does: a `Release` fence and a plain store of `back`, no read-modify-write (`loom/model_deque.rs`).
//! A model with a queue that publishes by a `SeqCst` read-modify-write cannot see the
//! store-load reordering these races need, which x86 and ARM allow.
//!
//! Each model's comment names the step it guards; the `mutant_*` models remove that step and
//! fail. They are `#[ignore]`d (a loom deadlock aborts the whole test process); run one with
//! `RUSTFLAGS="--cfg loom" cargo test -p ember --release --lib mutant_NAME -- --ignored` to
//! watch loom report it.

use loom::sync::atomic::{AtomicBool, Ordering};
use loom::sync::Arc;
use loom::thread;

use super::model_deque::ModelPool;
use super::support::model_bounded;
use crate::pool::workers::held::Held;
use crate::wake::WakePolicy;

const JOB: usize = 1;

/// Worker 0, inside a job, pushes `JOB` on its own deque and then blocks until `JOB` has run
/// — a job waiting on a sibling it spawned, or a `join` whose first half waits outside ember
/// for its second (the same push, `WorkerThread::push`). Worker 1 starts idle:
/// it searches, finds nothing and goes to sleep, concurrently. Only worker 1 can run `JOB`,
/// so a lost wake-up is a deadlock, which loom reports.
///
/// Guards the fence of a local push (`Sleep::notify_local`): without it the push's reads of
/// the sleeper set and the searcher count can miss worker 1's listing, or see it still
/// searching, while worker 1's last look misses the job (`mutant_unfenced_spawn_is_lost`).
/// `join` halves were pushed that way once, and a `join` whose first half received from a
/// channel its second half sent hung.
fn spawn_blocked_on_sibling(policy: WakePolicy, fenced: bool) {
    model_bounded(3, move || {
        let pool = ModelPool::new(policy, 2);
        let helper = {
            let pool = pool.clone();
            thread::spawn(move || {
                pool.work(1, || pool.has_run(JOB));
            })
        };
        pool.push_local(0, JOB, fenced);
        pool.block_until_run(JOB);
        helper.join().unwrap();
    });
}

#[test]
fn loom_searching_spawn_reaches_the_last_searcher() {
    spawn_blocked_on_sibling(WakePolicy::Searching, true);
}

#[test]
fn loom_eager_spawn_reaches_a_sleeper() {
    spawn_blocked_on_sibling(WakePolicy::Eager, true);
}

/// The race of an unfenced local push: loom finds the interleaving in which nobody runs the
/// job (it reports a deadlock).
#[test]
#[ignore = "fails by design: the model without the step it guards"]
fn mutant_unfenced_spawn_is_lost() {
    spawn_blocked_on_sibling(WakePolicy::Searching, false);
}

/// Searching with three workers: workers 0 and 1 each spawn a job on their own deque at the
/// same time and block until it has run; worker 2, idle, must run both. Exercises the cap on
/// searchers (at most half the workers), two pushers racing to wake the one sleeper (only one
/// may count it as a searcher), and the last searcher's hand-off after it takes the first job.
#[test]
fn loom_searching_three_workers_two_pushers() {
    model_bounded(2, || {
        let pool = ModelPool::new(WakePolicy::Searching, 3);
        let helper = {
            let pool = pool.clone();
            thread::spawn(move || {
                pool.work(2, || pool.has_run(1) && pool.has_run(2));
            })
        };
        let other = {
            let pool = pool.clone();
            thread::spawn(move || {
                pool.push_local(1, 2, true);
                pool.block_until_run(2);
            })
        };
        pool.push_local(0, 1, true);
        pool.block_until_run(1);
        other.join().unwrap();
        helper.join().unwrap();
    });
}

/// A burst on the pusher's own deque while its first wakee is on its way (README, "Backlog").
/// Three workers under Searching; workers 1 and 2 sleep. Worker 0 pushes three jobs on its
/// deque: the first push wakes a searcher, which may not run before the other two pushes.
/// When worker 0 has pushed them, before it runs one, every job still queued beyond the one
/// it runs next has another worker awake, or woken, to take it: the third push found two
/// jobs beyond its pusher's own and one searcher, and woke the other sleeper for them; or
/// the first wakee took a job and woke it itself, or took them all.
///
/// Guards the backlog's wake-up (`Sleep::wake_for_backlog`): without it
/// (`mutant_backlog_waits_for_the_first_wakee`) a burst reaches its second sleeper only once
/// the first wakee runs, one wake-up latency later, and the check fails.
fn backlog_reaches_the_second_sleeper(backlog_wakes: bool) {
    const JOBS: [usize; 3] = [1, 2, 3];
    model_bounded(2, move || {
        let pool = ModelPool::configured(WakePolicy::Searching, 3, |sleep| {
            sleep.backlog_wakes = backlog_wakes;
        });
        // Worker `i` has returned from a sleep (its first sleep, before the burst, ends only
        // by a wake-up).
        let woken: Arc<[AtomicBool; 3]> = Arc::new(std::array::from_fn(|_| AtomicBool::new(false)));
        let stop = {
            let pool = pool.clone();
            move || JOBS.iter().all(|&job| pool.has_run(job))
        };
        let workers: Vec<_> = (1..3)
            .map(|me| {
                let (pool, woken, stop) = (pool.clone(), woken.clone(), stop.clone());
                thread::spawn(move || {
                    let mut state = crate::wake::WakeState::default();
                    while !stop() {
                        match pool.find(me, &mut state) {
                            Some(job) => pool.ran(job),
                            None if stop() => break,
                            None => {
                                pool.idle(me, &mut state, &stop);
                                woken[me].store(true, Ordering::SeqCst);
                            }
                        }
                    }
                    // Out of the loop, as a worker at shutdown: a search in progress ends.
                    pool.sleep
                        .leave(&mut state, |_| usize::from(pool.has_work()));
                })
            })
            .collect();
        pool.wait_until_parked(1);
        pool.wait_until_parked(2);
        pool.sleep.enter(0);
        for job in JOBS {
            pool.push_local(0, job, true);
        }
        // Jobs still queued, then the other workers awake or on their way: those that
        // returned from a sleep, or that a waker took out of the sleeper set. Either only
        // grows, so the count is at least what it was when the queue was read.
        let queued = pool.deques[0].len();
        let asleep = pool.sleep.sleeping();
        let awake = (1..3)
            .filter(|&other| woken[other].load(Ordering::SeqCst) || !asleep.contains(&other))
            .count();
        assert!(
            queued <= 1 + awake,
            "{queued} jobs queued once worker 0 has pushed its burst, but only {awake} other \
             workers awake to take them besides it"
        );
        // Worker 0 runs what is left on its deque, then waits for the rest as user code.
        while let Some(job) = pool.deques[0].pop() {
            pool.ran(job);
        }
        for job in JOBS {
            pool.block_until_run(job);
        }
        pool.sleep.wake_all();
        for worker in workers {
            worker.join().unwrap();
        }
        // Every search ended, and with it every share the backlog handed out.
        assert_eq!(pool.sleep.searching_and_promised(), (0, 0));
    });
}

#[test]
fn loom_backlog_reaches_the_second_sleeper() {
    backlog_reaches_the_second_sleeper(true);
}

#[test]
#[ignore = "fails by design: the model without the step it guards"]
fn mutant_backlog_waits_for_the_first_wakee() {
    backlog_reaches_the_second_sleeper(false);
}

/// Biased with `batch: 2`: worker 0 finishes a task that released three successors, holds
/// them (delay-kick), takes the first and kicks the other two onto its deque; the second kick
/// fills a whole batch, which is overload. Its own successor then blocks until a kicked one
/// has run elsewhere, so the overload wake-up must reach worker 1, which is going to sleep.
///
/// Guards the wake-up of a kick (`kick` pushes through `notify_local`, whose Biased overload
/// check wakes the lowest sleeper after a fence): `mutant_kick_without_notify` pushes
/// without it and deadlocks.
fn biased_kicks(notify: bool) {
    model_bounded(3, move || {
        let pool = ModelPool::new(WakePolicy::Biased { batch: 2 }, 2);
        let helper = {
            let pool = pool.clone();
            thread::spawn(move || {
                pool.work(1, || pool.has_run(11) || pool.has_run(12));
            })
        };
        let held = Held::new();
        for job in [10, 11, 12] {
            held.hold(job);
        }
        let mine = held.take_and_kick(|job| {
            if notify {
                pool.push_local(0, job, true);
            } else {
                pool.deques[0].push(job);
            }
        });
        assert_eq!(mine, Some(10));
        pool.block_until_any_run(&[11, 12]);
        helper.join().unwrap();
    });
}

#[test]
fn loom_biased_batch_two_kicked_successors() {
    biased_kicks(true);
}

#[test]
#[ignore = "fails by design: the model without the step it guards"]
fn mutant_kick_without_notify() {
    biased_kicks(false);
}

/// Two jobs injected one after the other, the first of which blocks until the second has run
/// (a job waiting on a sibling); two workers. The worker that takes the first moves the second
/// into its own deque with it (a batch, as crossbeam's injector hands them out), where only it
/// would find it once blocked, so the other worker must be told.
///
/// Guards `WorkerThread::took_batch`, the fenced announcement of a batch: without it a sleeper
/// whose last look falls between the batch leaving the global queue and reaching the deque
/// sees neither (`mutant_batch_not_announced`).
fn injected_siblings(policy: WakePolicy, announce: bool) {
    const FIRST: usize = 1;
    const SECOND: usize = 2;
    model_bounded(2, move || {
        let pool = ModelPool::with_batch_announcements(policy, 2, announce);
        let workers: Vec<_> = (0..2)
            .map(|me| {
                let pool = pool.clone();
                thread::spawn(move || {
                    let stop = || pool.has_run(FIRST) && pool.has_run(SECOND);
                    pool.work_with(me, stop, |job| {
                        if job == FIRST {
                            pool.block_until_run(SECOND);
                        }
                        pool.ran(job);
                    });
                })
            })
            .collect();
        pool.inject(FIRST);
        pool.inject(SECOND);
        pool.block_until_run(FIRST);
        pool.sleep.wake_all();
        for worker in workers {
            worker.join().unwrap();
        }
    });
}

#[test]
fn loom_searching_injected_batch_reaches_a_sleeper() {
    injected_siblings(WakePolicy::Searching, true);
}

#[test]
fn loom_eager_injected_batch_reaches_a_sleeper() {
    injected_siblings(WakePolicy::Eager, true);
}

#[test]
#[ignore = "fails by design: the model without the step it guards"]
fn mutant_batch_not_announced() {
    injected_siblings(WakePolicy::Eager, false);
}
