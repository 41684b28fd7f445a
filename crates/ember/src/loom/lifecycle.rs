//! loom models of a worker's life around the wake protocol: leaving a wait, shutdown, exit.
//! Same pool in miniature as `local_push.rs` (`loom/model_deque.rs`); same `mutant_*`
//! convention: each removes the step its model guards, fails, and is `#[ignore]`d.

use loom::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use loom::sync::Arc;
use loom::thread;

use super::model_deque::ModelPool;
use super::support::model_bounded;
use crate::pool::workers::held::Held;
use crate::wake::{WakePolicy, WakeState};

const JOB: usize = 1;

/// A latch's targeted wake-up racing a policy wake-up (Searching, Eager; under Biased only
/// worker 0 answers the global queue, and a worker 0 blocked in user code holds up injected
/// work by design). Worker 0 waits for its
/// latch, running jobs meanwhile and sleeping when there are none (`WorkerThread::wait_for`);
/// worker 1 is idle. The main thread pushes `JOB` on the global queue — which may wake worker
/// 0 as a searcher — and sets worker 0's latch and wakes it. Worker 0 then returns to user
/// code that blocks until `JOB` has run, so worker 1 must run it.
///
/// Guards `Sleep::leave` when a wait ends: a worker woken as a searcher (Searching) or picked
/// for a queued job (Eager) that returns to user code without passing that on
/// strands `JOB`: under Searching every push skips its wake-up while it is counted
/// (`mutant_wait_ends_still_searching`); under Eager the push's one wake-up went to
/// it (`mutant_eager_wait_ends_picked`).
fn latch_races_policy_wake(policy: WakePolicy, leave: bool) {
    model_bounded(3, move || {
        let pool = ModelPool::new(policy, 2);
        let latch = Arc::new(AtomicBool::new(false));
        let helper = {
            let pool = pool.clone();
            thread::spawn(move || {
                pool.work(1, || pool.has_run(JOB));
            })
        };
        let waiter = {
            let (pool, latch) = (pool.clone(), latch.clone());
            thread::spawn(move || {
                let mut me = pool.work(0, || latch.load(Ordering::Acquire));
                if leave {
                    pool.sleep.leave(&mut me, |_| usize::from(pool.has_work()));
                }
                pool.block_until_run(JOB);
            })
        };
        pool.inject(JOB);
        latch.store(true, Ordering::Release);
        pool.sleep.wake_worker(0);
        waiter.join().unwrap();
        // Worker 0 may have run `JOB` itself while it waited; worker 1 then sleeps with
        // nothing to do, and the end of the run wakes it (as shutdown would).
        pool.sleep.wake_all();
        helper.join().unwrap();
    });
}

#[test]
fn loom_latch_wake_races_policy_wake() {
    latch_races_policy_wake(WakePolicy::Searching, true);
}

#[test]
fn loom_latch_wake_races_policy_wake_eager() {
    latch_races_policy_wake(WakePolicy::Eager, true);
}

#[test]
#[ignore = "fails by design: the model without the step it guards"]
fn mutant_wait_ends_still_searching() {
    latch_races_policy_wake(WakePolicy::Searching, false);
}

#[test]
#[ignore = "fails by design: the model without the step it guards"]
fn mutant_eager_wait_ends_picked() {
    latch_races_policy_wake(WakePolicy::Eager, false);
}

/// Shutdown landing between a worker's last look and its park: the main thread sets the
/// flag and wakes every worker (`Registry::terminate`); the worker, looking for work with the
/// flag as its `done`, must exit. Two steps guard it, each enough alone: the sleeper's last
/// look reads the flag after listing itself, and `Sleep::wake_all` unparks every worker, not
/// only the listed ones, so an unpark before the park leaves a token. Removing both makes the
/// worker sleep forever (checked by hand: a `done` that ignores the flag and a `wake_all`
/// that unparks only drained sleepers deadlock here).
fn shutdown_races_park(policy: WakePolicy) {
    model_bounded(3, move || {
        let pool = ModelPool::new(policy, 1);
        let terminating = Arc::new(AtomicBool::new(false));
        let worker = {
            let (pool, terminating) = (pool.clone(), terminating.clone());
            thread::spawn(move || {
                pool.work(0, || terminating.load(Ordering::SeqCst));
            })
        };
        terminating.store(true, Ordering::SeqCst);
        pool.sleep.wake_all();
        worker.join().unwrap();
    });
}

#[test]
fn loom_shutdown_races_park_eager() {
    shutdown_races_park(WakePolicy::Eager);
}

#[test]
fn loom_shutdown_races_park_searching() {
    shutdown_races_park(WakePolicy::Searching);
}

#[test]
fn loom_shutdown_races_park_biased() {
    shutdown_races_park(WakePolicy::Biased { batch: 2 });
}

/// Two workers exit at shutdown, each possibly counted as a searcher when it sees the flag.
/// Afterwards nobody may be counted (a count nobody takes back would make every later push
/// skip its wake-up: harmless in a pool that is shutting down, but the count is also what
/// `{:?}` of a pool reports).
///
/// Guards the `Sleep::leave` of a worker's exit (`WorkerThread::exit`):
/// `mutant_exit_still_searching` skips it and the assertion fails.
fn exit_while_searching(leave: bool) {
    model_bounded(3, move || {
        let pool = ModelPool::new(WakePolicy::Searching, 2);
        let terminating = Arc::new(AtomicBool::new(false));
        let workers: Vec<_> = (0..2)
            .map(|index| {
                let (pool, terminating) = (pool.clone(), terminating.clone());
                thread::spawn(move || {
                    let mut me = pool.work(index, || terminating.load(Ordering::SeqCst));
                    if leave {
                        pool.sleep.leave(&mut me, |_| usize::from(pool.has_work()));
                    }
                })
            })
            .collect();
        terminating.store(true, Ordering::SeqCst);
        pool.sleep.wake_all();
        for worker in workers {
            worker.join().unwrap();
        }
        assert_eq!(
            pool.sleep.searching(),
            0,
            "an exited worker is still counted"
        );
    });
}

#[test]
fn loom_exit_while_searching() {
    exit_while_searching(true);
}

#[test]
#[ignore = "fails by design: the model without the step it guards"]
fn mutant_exit_still_searching() {
    exit_while_searching(false);
}

/// A worker holding delay-kick successors when shutdown begins: it must run or kick every
/// one before it exits; worker 1 may take a kicked one. Guards the order of
/// `WorkerThread::find_work`, which takes held successors before anything else, so that "no
/// work found" (the exit condition) implies nothing is held: `mutant_exit_before_held` looks
/// at the flag first and loses the jobs.
fn exit_holding_successors(held_first: bool) {
    model_bounded(3, move || {
        let pool = ModelPool::new(WakePolicy::Searching, 2);
        let terminating = Arc::new(AtomicBool::new(true));
        let helper = {
            let (pool, terminating) = (pool.clone(), terminating.clone());
            thread::spawn(move || {
                pool.work(1, || terminating.load(Ordering::SeqCst) && !pool.has_work());
            })
        };
        let held = Held::new();
        held.hold(10);
        held.hold(11);
        loop {
            if !held_first && terminating.load(Ordering::SeqCst) {
                break;
            }
            let mut me = WakeState::default();
            let job = held
                .take_and_kick(|job| pool.push_local(0, job, true))
                .or_else(|| pool.find(0, &mut me));
            match job {
                Some(job) => pool.ran(job),
                None => break,
            }
        }
        pool.sleep.wake_all();
        helper.join().unwrap();
        assert!(pool.has_run(10) && pool.has_run(11), "a held job was lost");
    });
}

#[test]
fn loom_exit_holding_successors() {
    exit_holding_successors(true);
}

#[test]
#[ignore = "fails by design: the model without the step it guards"]
fn mutant_exit_before_held() {
    exit_holding_successors(false);
}

/// One round of the shutdown drain of `WorkerThread::run_until_drained` in miniature
/// (`Registry::drain_in`, `drain_out`), or, with `drain` false, the exit at the first empty
/// look it replaced. Both rounds run this same protocol.
fn shut_down(pool: &ModelPool, me: usize, drained: &AtomicUsize, all: &AtomicBool, drain: bool) {
    shut_down_with(pool, me, &mut WakeState::default(), drained, all, drain);
}

/// `shut_down` with the worker's wake state, which outlives the round.
fn shut_down_with(
    pool: &ModelPool,
    me: usize,
    state: &mut WakeState,
    drained: &AtomicUsize,
    all: &AtomicBool,
    drain: bool,
) {
    loop {
        if let Some(job) = pool.find(me, state) {
            pool.ran(job);
            continue;
        }
        if !drain {
            return;
        }
        if drained.fetch_add(1, Ordering::SeqCst) + 1 == 2 {
            all.store(true, Ordering::SeqCst);
            pool.sleep.wake_all();
            return;
        }
        pool.idle(me, state, || all.load(Ordering::SeqCst));
        if all.load(Ordering::SeqCst) {
            return;
        }
        drained.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Shutdown while a job still runs: worker 0, inside a job, spawns `JOB` on its own deque and
/// blocks until it has run, while the pool shuts down; worker 1 finds nothing. Worker 1 must
/// not leave before worker 0's job is done: it sleeps counted as drained, is woken by the
/// spawn, and runs `JOB`. The drain restates `WorkerThread::run_until_drained` and
/// `Registry::drain_in`/`drain_out`.
///
/// Guards the drain: `mutant_exit_at_first_empty_look` leaves at the first look that finds
/// nothing after shutdown began, as the pool once did, and deadlocks.
fn shutdown_with_a_job_running(drain: bool) {
    model_bounded(3, move || {
        let pool = ModelPool::new(WakePolicy::Searching, 2);
        let drained = Arc::new(AtomicUsize::new(0));
        let all_drained = Arc::new(AtomicBool::new(false));
        let other = {
            let (pool, drained, all) = (pool.clone(), drained.clone(), all_drained.clone());
            thread::spawn(move || shut_down(&pool, 1, &drained, &all, drain))
        };
        pool.push_local(0, JOB, true);
        pool.block_until_run(JOB);
        shut_down(&pool, 0, &drained, &all_drained, drain);
        other.join().unwrap();
    });
}

#[test]
fn loom_shutdown_waits_for_a_running_job() {
    shutdown_with_a_job_running(true);
}

#[test]
#[ignore = "fails by design: the model without the step it guards"]
fn mutant_exit_at_first_empty_look() {
    shutdown_with_a_job_running(false);
}

/// The hand-over between the drain's two rounds: both workers drain the running pool (round
/// 1); then worker 0's exit handler spawns `JOB` on its own deque and blocks on it outside
/// ember, as a handler may (it cannot run `JOB` itself), and both drain again (round 2).
/// Worker 1, done with round 1 long before, must still be there to run `JOB`: it sleeps
/// counted in round 2 and is woken by the spawn.
///
/// Guards the second round: `mutant_no_second_round` lets worker 1 leave after round 1, as
/// the pool did when exit handlers ran after round 1 alone, and deadlocks.
fn exit_handler_waits_on_another_worker(second_round: bool) {
    // Between the rounds a worker leaves its search before the handler runs
    // (`WorkerThread::leave_wait`), as a worker returning to user code does.
    fn round(
        pool: &ModelPool,
        me: usize,
        state: &mut WakeState,
        round: &(AtomicUsize, AtomicBool),
    ) {
        shut_down_with(pool, me, state, &round.0, &round.1, true);
        pool.sleep.leave(state, |_| usize::from(pool.has_work()));
    }
    model_bounded(3, move || {
        let pool = ModelPool::new(WakePolicy::Searching, 2);
        let rounds: Arc<[(AtomicUsize, AtomicBool); 2]> = Arc::new([
            (AtomicUsize::new(0), AtomicBool::new(false)),
            (AtomicUsize::new(0), AtomicBool::new(false)),
        ]);
        let other = {
            let (pool, rounds) = (pool.clone(), rounds.clone());
            thread::spawn(move || {
                let mut state = WakeState::default();
                round(&pool, 1, &mut state, &rounds[0]);
                if second_round {
                    round(&pool, 1, &mut state, &rounds[1]);
                }
            })
        };
        let mut state = WakeState::default();
        round(&pool, 0, &mut state, &rounds[0]);
        // Worker 0's exit handler.
        pool.push_local(0, JOB, true);
        pool.block_until_run(JOB);
        round(&pool, 0, &mut state, &rounds[1]);
        other.join().unwrap();
    });
}

#[test]
fn loom_exit_handler_waits_on_another_worker() {
    exit_handler_waits_on_another_worker(true);
}

#[test]
#[ignore = "fails by design: the model without the step it guards"]
fn mutant_no_second_round() {
    exit_handler_waits_on_another_worker(false);
}
