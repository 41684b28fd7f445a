//! loom models of the wake protocols, driving the real `Sleep`, `SleeperSet` and `Parker`.
//!
//! The pool's queues are modelled by one atomic count of queued jobs: a worker takes a job by
//! decrementing it. Each model ends only when every job has been taken; the worker that takes
//! the last one wakes everybody (as shutdown would). If a job were ever stranded — queued while
//! every worker sleeps and nobody is going to wake one — every thread would be blocked and
//! loom reports the deadlock, failing the test.
//!
//! Run with `RUSTFLAGS="--cfg loom" cargo test -p ember --release --lib loom`.

use loom::sync::atomic::{AtomicUsize, Ordering};
use loom::sync::Arc;
use loom::thread;

use super::support::model_bounded;
use crate::park::Parker;
use crate::sync::{lock, Condvar, Mutex};
use crate::wake::{Sleep, WakePolicy, WakeState};

/// What the workers share in a model.
struct World {
    sleep: Sleep,
    queued: AtomicUsize,
    taken: AtomicUsize,
    jobs: usize,
}

impl World {
    fn new(policy: WakePolicy, workers: usize, jobs: usize) -> Arc<Self> {
        Arc::new(World {
            sleep: Sleep::new(policy, workers),
            queued: AtomicUsize::new(0),
            taken: AtomicUsize::new(0),
            jobs,
        })
    }

    fn push(&self) {
        self.queued.fetch_add(1, Ordering::SeqCst);
        self.sleep.notify_injected();
    }

    /// Takes a job if one is queued; returns whether it did.
    fn try_take(&self) -> bool {
        let mut current = self.queued.load(Ordering::SeqCst);
        while current > 0 {
            match self.queued.compare_exchange(
                current,
                current - 1,
                Ordering::SeqCst,
                Ordering::SeqCst,
            ) {
                Ok(_) => return true,
                Err(actual) => current = actual,
            }
        }
        false
    }

    fn all_taken(&self) -> bool {
        self.taken.load(Ordering::SeqCst) == self.jobs
    }

    /// Books a taken job; the last one ends the model by waking every worker.
    fn book(&self) {
        if self.taken.fetch_add(1, Ordering::SeqCst) + 1 == self.jobs {
            self.sleep.wake_all();
        }
    }

    /// The worker loop in miniature: take, else search once, else sleep.
    fn work(&self, index: usize, on_job: impl Fn(&World)) {
        let mut me = WakeState::default();
        while !self.all_taken() {
            let mut found = self.try_take();
            if !found && self.sleep.start_searching(&mut me) {
                found = self.try_take();
            }
            if found {
                self.sleep
                    .found_work(&mut me, |_| self.queued.load(Ordering::SeqCst));
                self.book();
                on_job(self);
                continue;
            }
            self.sleep.sleep(
                index,
                &mut me,
                |_| self.queued.load(Ordering::SeqCst) > 0,
                || self.all_taken(),
                None,
            );
        }
    }
}

/// The body of a long job: it returns only once it has been called twice (both of two jobs
/// were taken), so the second job can only be run by a worker that did not take the first.
fn gate_of_two() -> impl Fn() + Clone + Send + 'static {
    let gate = Arc::new((Mutex::new(0usize), Condvar::new()));
    move || {
        let (count, cvar) = &*gate;
        let mut count = lock(count);
        *count += 1;
        cvar.notify_all();
        while *count < 2 {
            count = cvar.wait(count).unwrap();
        }
    }
}

/// One producer pushing `jobs` jobs while `workers` workers go to sleep.
fn push_races_sleep(policy: WakePolicy, workers: usize, jobs: usize) {
    model_bounded(3, move || {
        let world = World::new(policy, workers, jobs);
        let handles: Vec<_> = (0..workers)
            .map(|index| {
                let world = Arc::clone(&world);
                thread::spawn(move || world.work(index, |_| {}))
            })
            .collect();
        for _ in 0..jobs {
            world.push();
        }
        for handle in handles {
            handle.join().unwrap();
        }
        assert_eq!(world.taken.load(Ordering::SeqCst), jobs);
        assert_eq!(world.queued.load(Ordering::SeqCst), 0);
    });
}

#[test]
fn loom_eager_push_races_last_sleeper() {
    push_races_sleep(WakePolicy::Eager, 1, 1);
}

#[test]
fn loom_eager_two_workers() {
    push_races_sleep(WakePolicy::Eager, 2, 1);
}

#[test]
fn loom_searching_push_races_last_sleeper() {
    push_races_sleep(WakePolicy::Searching, 1, 1);
}

#[test]
fn loom_searching_two_workers() {
    push_races_sleep(WakePolicy::Searching, 2, 1);
}

#[test]
fn loom_searching_two_jobs() {
    push_races_sleep(WakePolicy::Searching, 2, 2);
}

#[test]
fn loom_biased_push_races_worker_zero() {
    push_races_sleep(WakePolicy::Biased { batch: 1 }, 1, 1);
}

#[test]
fn loom_biased_two_workers() {
    push_races_sleep(WakePolicy::Biased { batch: 1 }, 2, 1);
}

/// Two workers whose jobs each block until both jobs have been taken, so the second job can
/// only be run by the worker that did not take the first: `push` makes the two jobs visible,
/// and the model deadlocks unless a wake-up reaches the second worker even while it is on its
/// way to sleep.
fn two_gated_jobs(policy: WakePolicy, push: impl Fn(&World) + Sync + Send + 'static) {
    model_bounded(3, move || {
        let world = World::new(policy, 2, 2);
        let gated = gate_of_two();
        let handles: Vec<_> = (0..2)
            .map(|index| {
                let world = Arc::clone(&world);
                let gated = gated.clone();
                thread::spawn(move || world.work(index, |_| gated()))
            })
            .collect();
        push(&world);
        for handle in handles {
            handle.join().unwrap();
        }
        assert_eq!(world.taken.load(Ordering::SeqCst), 2);
    });
}

/// The biased overload hand-off: both jobs become visible at once (a batch push on the
/// injector, which wakes worker 0 only), so the first taker sees the second; with batch 1
/// that is overload, and its signal must reach the other worker.
#[test]
fn loom_biased_overload_signal_is_not_lost() {
    two_gated_jobs(WakePolicy::Biased { batch: 1 }, |world| {
        world.queued.fetch_add(2, Ordering::SeqCst);
        world.sleep.notify_injected();
    });
}

/// Two pushes one after the other. Under Searching a push made while a worker searches wakes
/// nobody, so this checks the hand-off: the last searcher to find work wakes one more while
/// work is visible. (Biased by design leaves the second job to worker 0 when the first did
/// not look like overload; its hand-off model is above.)
fn gated_pushes(policy: WakePolicy) {
    two_gated_jobs(policy, |world| {
        world.push();
        world.push();
    });
}

#[test]
fn loom_eager_gated_pushes() {
    gated_pushes(WakePolicy::Eager);
}

#[test]
fn loom_searching_gated_pushes() {
    gated_pushes(WakePolicy::Searching);
}

/// The parker keeps a token: an unpark before the park is not lost, and a park that blocks is
/// released by a concurrent unpark.
#[test]
fn loom_parker_token() {
    model_bounded(3, || {
        let parker = Arc::new(Parker::new());
        let other = Arc::clone(&parker);
        let unparker = thread::spawn(move || {
            other.unpark();
        });
        parker.park(None);
        unparker.join().unwrap();
    });
}

/// A worker waiting on a condition (its `join`'s stolen half) takes jobs while it waits
/// without counting itself a searcher (`WorkerThread::find_work`), so its `found_work` does
/// nothing. Two gated jobs pushed one after the other: if the waiter takes the first, the
/// second must reach the other worker, which the second push wakes because nobody counts as
/// searching. With `counted` (the mutant) the waiter takes a searcher's place and still skips
/// the hand-off a searcher makes when it finds work: the second push then sees a searcher,
/// wakes nobody, and the job is stranded behind the waiter's gated one.
fn waiter_beside_a_worker(counted: bool) {
    model_bounded(3, move || {
        let world = World::new(WakePolicy::Searching, 2, 2);
        let gated = gate_of_two();
        let worker = {
            let world = Arc::clone(&world);
            let gated = gated.clone();
            thread::spawn(move || world.work(1, |_| gated()))
        };
        let waiter = {
            let world = Arc::clone(&world);
            thread::spawn(move || {
                let mut me = WakeState::default();
                while !world.all_taken() {
                    if counted {
                        world.sleep.start_searching(&mut me);
                    }
                    if world.try_take() {
                        if !counted {
                            world
                                .sleep
                                .found_work(&mut me, |_| world.queued.load(Ordering::SeqCst));
                        }
                        world.book();
                        gated();
                        continue;
                    }
                    world.sleep.sleep(
                        0,
                        &mut me,
                        |_| world.queued.load(Ordering::SeqCst) > 0,
                        || world.all_taken(),
                        None,
                    );
                }
            })
        };
        world.push();
        world.push();
        worker.join().unwrap();
        waiter.join().unwrap();
        assert_eq!(world.taken.load(Ordering::SeqCst), 2);
    });
}

#[test]
fn loom_waiter_takes_jobs_uncounted() {
    waiter_beside_a_worker(false);
}

#[test]
#[ignore = "mutant: must fail (deadlock), showing the model catches a waiter holding a searcher's place"]
fn mutant_waiter_counted_without_hand_off() {
    waiter_beside_a_worker(true);
}

/// A burst on a pool whose workers all sleep: three jobs queued by one push, which wakes one
/// worker. That worker, woken as a searcher, finds work with two more jobs queued, and when it
/// starts its job neither other worker still sleeps unwoken: it woke both (README,
/// "Fan-out"), or the one it woke first woke the other. With `fan_out` off it wakes only one,
/// as the last searcher's hand-off does, and the other sleeps on until that one runs.
fn woken_searcher_fans_out(fan_out: bool) {
    burst_reaches_sleepers_from_its_first_searcher::<3>(2, move |sleep| sleep.fan_out = fan_out);
}

/// A burst of `N` jobs, pushed at once on a pool of `N` sleeping workers, of which the push
/// wakes one: when the first woken worker starts its job, no other worker still sleeps
/// unwoken. `tweak` sets the model's knobs.
fn burst_reaches_sleepers_from_its_first_searcher<const N: usize>(
    preemptions: usize,
    tweak: impl Fn(&mut Sleep) + Send + Sync + 'static,
) {
    let tweak = std::sync::Arc::new(tweak);
    model_bounded(preemptions, move || {
        let mut sleep = Sleep::new(WakePolicy::Searching, N);
        tweak(&mut sleep);
        let world = Arc::new(World {
            sleep,
            queued: AtomicUsize::new(0),
            taken: AtomicUsize::new(0),
            jobs: N,
        });
        // Worker `i` has returned from a sleep: it was woken (a worker's first sleep starts
        // the model, so nothing else ends it).
        let woken: Arc<[AtomicUsize; N]> = Arc::new(std::array::from_fn(|_| AtomicUsize::new(0)));
        let handles: Vec<_> = (0..N)
            .map(|index| {
                let world = Arc::clone(&world);
                let woken = Arc::clone(&woken);
                thread::spawn(move || {
                    let mut me = WakeState::default();
                    while !world.all_taken() {
                        // The queue's count before our take: `N` only for the first job taken.
                        let before = world.queued.load(Ordering::SeqCst);
                        if !world.try_take() {
                            world.sleep.sleep(
                                index,
                                &mut me,
                                |_| world.queued.load(Ordering::SeqCst) > 0,
                                || world.all_taken(),
                                None,
                            );
                            woken[index].store(1, Ordering::SeqCst);
                            continue;
                        }
                        world
                            .sleep
                            .found_work(&mut me, |_| world.queued.load(Ordering::SeqCst));
                        if before == N {
                            // The first job taken: whoever sleeps now was woken and slept again.
                            let asleep = world.sleep.sleeping();
                            for other in asleep {
                                assert!(
                                    woken[other].load(Ordering::SeqCst) == 1,
                                    "worker {other} still sleeps, unwoken, as the first \
                                     woken searcher (worker {index}) starts its job"
                                );
                            }
                        }
                        world.book();
                    }
                })
            })
            .collect();
        // Every worker blocked first, then one push of `N` jobs.
        while !(0..N).all(|index| world.sleep.parkers[index].is_parked()) {
            thread::yield_now();
        }
        world.queued.fetch_add(N, Ordering::SeqCst);
        world.sleep.notify_injected();
        for handle in handles {
            handle.join().unwrap();
        }
        assert_eq!(world.taken.load(Ordering::SeqCst), N);
    });
}

#[test]
fn loom_woken_searcher_fans_out() {
    woken_searcher_fans_out(true);
}

#[test]
#[ignore = "mutant: must fail (assertion), showing the model catches a searcher that wakes one"]
fn mutant_woken_searcher_wakes_one() {
    woken_searcher_fans_out(false);
}

/// Four jobs on four sleeping workers: the first woken searcher, one step from the push
/// that woke it, wakes the other three itself, with no shares, since a wide fan-out is
/// within `FAN_OUT_STEPS` (README, "Fan-out", step 3). The mutant lowers the bound to three
/// steps: the searcher may then wake two, handing one a share, and the fourth worker sleeps
/// on, unwoken, until that one runs.
#[test]
fn loom_woken_searcher_wakes_as_wide_as_its_step_allows() {
    burst_reaches_sleepers_from_its_first_searcher::<4>(1, |_| {});
}

#[test]
#[ignore = "mutant: must fail (assertion), showing the model catches a fan-out narrower than its step allows"]
fn mutant_fan_out_as_narrow_as_a_binary_tree() {
    burst_reaches_sleepers_from_its_first_searcher::<4>(1, |sleep| sleep.model_fan_out_steps = 3);
}

/// A burst of four jobs on a pool of four sleeping workers, where each worker takes one job
/// at most (README, "Fan-out"). The model lowers `FAN_OUT_STEPS` to three, so the first
/// woken worker, one step from the push, wakes two, handing one of them a share of one; the
/// fourth worker is then reached by that one's fan-out, which its share held back nobody
/// else's. Two steps guard the promise the share stands for: it ends with its
/// holder's search, and a last searcher whose fan-out woke nobody makes the hand-off's
/// wake-up whatever the promises say. Either is enough; the mutant drops both, and a leaked
/// promise then keeps the fourth worker asleep with its job queued.
fn fan_out_shares_reach_every_worker(promise_guards: bool) {
    // One preemption: four workers and a pusher are too many threads for two.
    model_bounded(1, move || {
        let mut sleep = Sleep::new(WakePolicy::Searching, 4);
        sleep.promise_guards = promise_guards;
        sleep.model_fan_out_steps = 3;
        let world = Arc::new(World {
            sleep,
            queued: AtomicUsize::new(0),
            taken: AtomicUsize::new(0),
            jobs: 4,
        });
        let handles: Vec<_> = (0..4)
            .map(|index| {
                let world = Arc::clone(&world);
                thread::spawn(move || {
                    let mut me = WakeState::default();
                    while !world.all_taken() {
                        if world.try_take() {
                            world
                                .sleep
                                .found_work(&mut me, |_| world.queued.load(Ordering::SeqCst));
                            world.book();
                            return;
                        }
                        world.sleep.sleep(
                            index,
                            &mut me,
                            |_| world.queued.load(Ordering::SeqCst) > 0,
                            || world.all_taken(),
                            None,
                        );
                    }
                })
            })
            .collect();
        while !(0..4).all(|index| world.sleep.parkers[index].is_parked()) {
            thread::yield_now();
        }
        world.queued.fetch_add(4, Ordering::SeqCst);
        world.sleep.notify_injected();
        for handle in handles {
            handle.join().unwrap();
        }
        assert_eq!(world.taken.load(Ordering::SeqCst), 4);
        // Every worker found work and stopped searching: no count and no promise is left.
        if promise_guards {
            assert_eq!(world.sleep.searching_and_promised(), (0, 0));
        }
    });
}

#[test]
fn loom_fan_out_shares_reach_every_worker() {
    fan_out_shares_reach_every_worker(true);
}

#[test]
#[ignore = "mutant: must fail (deadlock), showing what guards a fan-out's promises"]
fn mutant_fan_out_promise_outlives_its_search() {
    fan_out_shares_reach_every_worker(false);
}
