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
//!   wake-up, `wake/README.md`) cover them unchanged. The loom model in
//!   `src/loom/delay_kick.rs` checks the hand-off: the kicking worker then blocks on its own
//!   job, and the kicked one must reach a worker that was on its way to sleep.

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
