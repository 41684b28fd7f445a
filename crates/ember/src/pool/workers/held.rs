//! Delay-kick: successors released by a task that finished on a worker are held by that
//! worker until it next looks for work; then it takes the first for itself and kicks the rest.
//!
//! Without it, releasing a successor pushes it at once and the wake policy may wake a sleeper
//! for it — while the releasing worker, about to be idle, finds nothing. With it, the
//! successor that continues a chain runs on the thread whose cache holds its input, and the
//! others are still offered to thieves before the worker starts on its own.
//!
//! # Invariants
//!
//! * Held jobs are invisible to thieves, so a worker never sleeps or blocks with held jobs:
//!   its next look for work (`WorkerThread::find_work`) starts with them, and a worker leaving
//!   a wait inside `join`/`scope`/`Task::join` kicks whatever it still holds before it returns
//!   to user code.
//! * Nor does user code run while a worker holds jobs: the `Drop` of a task's result nobody
//!   will join (the job that ran the task drops the last reference) and of a cancelled task's
//!   closure (inside the ending that cancels it) may block on a held successor, so a worker
//!   kicks what it holds before such a drop (`pool::kick_held_here`).
//! * Kicked jobs go through the ordinary push, so the wake policy's guarantees (no lost
//!   wake-up, `wake/README.md`) cover them unchanged. The loom model below checks the
//!   hand-off: the kicking worker then blocks on its own job, and the kicked one must reach a
//!   worker that was on its way to sleep.

use std::cell::RefCell;
use std::collections::VecDeque;

/// Jobs held back by one worker (its thread only).
pub(crate) struct Held<T> {
    jobs: RefCell<VecDeque<T>>,
}

impl<T> Held<T> {
    pub(crate) fn new() -> Self {
        Held {
            jobs: RefCell::new(VecDeque::new()),
        }
    }

    /// Whether nothing is held.
    pub(crate) fn is_empty(&self) -> bool {
        self.jobs.borrow().is_empty()
    }

    pub(crate) fn hold(&self, job: T) {
        self.jobs.borrow_mut().push_back(job);
    }

    /// Takes the first held job for the caller and kicks the rest through `kick`.
    #[inline]
    pub(crate) fn take_and_kick(&self, kick: impl FnMut(T)) -> Option<T> {
        let mut jobs = self.jobs.borrow_mut();
        let first = jobs.pop_front()?;
        if jobs.is_empty() {
            return Some(first);
        }
        let rest: Vec<T> = jobs.drain(..).collect();
        drop(jobs);
        rest.into_iter().for_each(kick);
        Some(first)
    }

    /// Kicks every held job (the worker is about to run user code for a while).
    #[inline]
    pub(crate) fn kick_all(&self, kick: impl FnMut(T)) {
        if self.jobs.borrow().is_empty() {
            return; // the common case, on every `join`
        }
        self.kick_all_slow(kick);
    }

    #[cold]
    fn kick_all_slow(&self, kick: impl FnMut(T)) {
        let rest: Vec<T> = self.jobs.borrow_mut().drain(..).collect();
        rest.into_iter().for_each(kick);
    }
}

#[cfg(all(test, loom))]
mod loom_tests {
    //! Worker 0 finishes a task that releases two successors, holds them, takes one and kicks
    //! the other through the real `Sleep::notify_local`, then blocks in its own successor
    //! until the kicked one has run. Worker 1 starts idle and goes to sleep concurrently. If
    //! the kick's wake-up were lost, both would block and loom would report a deadlock.
    use loom::sync::atomic::{AtomicUsize, Ordering};
    use loom::sync::Arc;
    use loom::thread;

    use super::Held;
    use crate::sync::{lock, Condvar, Mutex};
    use crate::wake::{Sleep, WakePolicy, WakeState};

    fn kicked_successor_reaches_sleeper(policy: WakePolicy) {
        let mut builder = loom::model::Builder::new();
        builder.preemption_bound = Some(3);
        builder.check(move || {
            let sleep = Arc::new(Sleep::new(policy, 2));
            let local0 = Arc::new(AtomicUsize::new(0)); // worker 0's deque, as a count
            let ran = Arc::new((Mutex::new(0usize), Condvar::new()));

            let take = |queue: &AtomicUsize| {
                let mut n = queue.load(Ordering::SeqCst);
                while n > 0 {
                    match queue.compare_exchange(n, n - 1, Ordering::SeqCst, Ordering::SeqCst) {
                        Ok(_) => return true,
                        Err(actual) => n = actual,
                    }
                }
                false
            };

            let thief = {
                let (sleep, local0, ran) =
                    (Arc::clone(&sleep), Arc::clone(&local0), Arc::clone(&ran));
                thread::spawn(move || {
                    let mut me = WakeState::default();
                    loop {
                        if *lock(&ran.0) == 2 {
                            return;
                        }
                        sleep.start_searching(&mut me);
                        if take(&local0) {
                            sleep.found_work(&mut me, |_| 0);
                            let mut count = lock(&ran.0);
                            *count += 1;
                            ran.1.notify_all();
                            continue;
                        }
                        sleep.sleep(
                            1,
                            &mut me,
                            |_| local0.load(Ordering::SeqCst) > 0,
                            || *lock(&ran.0) == 2,
                            None,
                        );
                    }
                })
            };

            // Worker 0: two successors released by a finished task.
            let held = Held::new();
            held.hold("first");
            held.hold("second");
            let mine = held.take_and_kick(|_job| {
                let len = local0.fetch_add(1, Ordering::SeqCst) + 1;
                sleep.notify_local(|| len);
            });
            assert_eq!(mine, Some("first"));
            // Run "first": it finishes only once "second" has run elsewhere.
            let mut count = lock(&ran.0);
            *count += 1;
            ran.1.notify_all();
            while *count < 2 {
                count = ran.1.wait(count).unwrap();
            }
            drop(count);
            sleep.wake_all();
            thief.join().unwrap();
            assert_eq!(local0.load(Ordering::SeqCst), 0);
        });
    }

    #[test]
    fn loom_delay_kick_eager() {
        kicked_successor_reaches_sleeper(WakePolicy::Eager);
    }

    #[test]
    fn loom_delay_kick_searching() {
        kicked_successor_reaches_sleeper(WakePolicy::Searching);
    }

    #[test]
    fn loom_delay_kick_biased() {
        kicked_successor_reaches_sleeper(WakePolicy::Biased { batch: 1 });
    }
}
