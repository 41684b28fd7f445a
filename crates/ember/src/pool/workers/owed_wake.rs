//! One worker's side of deferred wake-ups (`wake/deferred.rs` has the protocol;
//! `Tuning::defer_wakeups` what it is for): whether the worker owes the wake-up of the job it
//! spawned last, and how many of its next spawns wake at once because the alarm had to make
//! one of its wake-ups. The worker keeps it in one field, [`OwedWake`], and settles the debt
//! at its scheduling points: [`pay`](OwedWake::pay) before it pushes another job or runs
//! something else, [`void`](OwedWake::void) when it pops its own deque.

use std::cell::Cell;
use std::sync::Arc;

use crate::pool::workers::registry::Registry;
use crate::wake::{SpawnWake, SPAWNS_WAKING_AFTER_ALARM};

/// One worker's deferred wake-up (module doc).
pub(crate) struct OwedWake {
    /// Whether this worker owes the wake-up of the job it spawned last, which is alone on
    /// its deque (`WorkerThread::push_spawned`).
    owes: Cell<bool>,
    /// Spawns left that wake a sleeper at once rather than owe it: set when the alarm made
    /// one of this worker's owed wake-ups (`SPAWNS_WAKING_AFTER_ALARM`).
    spawns_waking: Cell<u32>,
}

impl OwedWake {
    pub(crate) fn new() -> Self {
        OwedWake {
            owes: Cell::new(false),
            spawns_waking: Cell::new(0),
        }
    }

    /// Makes the wake-up worker `index` owes, if it owes one: it is about to push another job
    /// or run something else before the one it owes it for.
    #[inline(always)]
    pub(crate) fn pay(&self, registry: &Registry, index: usize) {
        if self.owes.get() {
            self.owes.set(false);
            if registry.sleep.pay_debt(index) {
                self.alarm_made_owed_wake();
            }
        }
    }

    /// After a pop of the own deque: while worker `index` owes a wake-up, the job it owes it
    /// for is the only one on its deque, so the pop took it back, or found it stolen (a look
    /// for work, or a `join` taking back what its first half left above its stolen second
    /// half). Either way nobody needs waking for it.
    #[inline(always)]
    pub(crate) fn void(&self, registry: &Registry, index: usize) {
        if self.owes.get() {
            self.owes.set(false);
            if registry.sleep.void_debt(index) {
                self.alarm_made_owed_wake();
            }
        }
    }

    /// After worker `index` pushed a job it spawned onto its own deque, which now holds
    /// `len()` jobs: the wake-up check of that push, which may leave the wake-up owed
    /// (`Sleep::notify_spawned`), or start the pool's alarm thread the first time one would be.
    #[inline(always)]
    pub(crate) fn notify_spawned(
        &self,
        registry: &Arc<Registry>,
        index: usize,
        len: impl Fn() -> usize,
    ) {
        let waking = self.spawns_waking.get();
        match registry.sleep.notify_spawned(index, waking == 0, len) {
            SpawnWake::Settled => {}
            // Only with `waking` above 0 (`may_owe` false); saturating all the same, so that
            // no change elsewhere can wrap it and stop deferral for good.
            SpawnWake::MadeInsteadOfOwed => self.spawns_waking.set(waking.saturating_sub(1)),
            SpawnWake::Owed => self.owes.set(true),
            SpawnWake::AlarmUnwatched => registry.alarm_thread.start_once(registry),
        }
    }

    /// The alarm made a wake-up this worker owed: its spawning job ran past the bound.
    #[cold]
    fn alarm_made_owed_wake(&self) {
        self.spawns_waking.set(SPAWNS_WAKING_AFTER_ALARM);
    }
}
