//! The Biased policy: worker 0 answers the global queue, overload wakes the next
//! (README: "Biased").

use super::{Sleep, WakeState};
use crate::sync::atomic::{fence, Ordering};

impl Sleep {
    /// A push on the global injector wakes worker 0, and only worker 0, if it sleeps.
    pub(super) fn notify_biased_injected(&self) {
        // StoreLoad: order the push before reading whether worker 0 is listed; worker 0 lists
        // itself before its last look at the queues (README).
        fence(Ordering::SeqCst);
        if !self.sleepers.is_listed(0) {
            return;
        }
        if let Some(index) = self.sleepers.pop_exact(0) {
            self.unpark_listed(index);
        }
    }

    /// A push on a worker's own deque: its owner runs it unless the deque has grown by a
    /// whole batch, which counts as overload.
    pub(super) fn notify_biased_local(&self, batch: usize, local_len: usize) {
        if local_len >= batch && local_len % batch == 0 {
            self.wake_lowest();
        }
    }

    /// Counts a job taken; every `batch` jobs in a row with work still visible is overload.
    pub(super) fn found_work_biased(
        &self,
        me: &mut WakeState,
        batch: usize,
        pending: impl FnOnce() -> bool,
    ) {
        // Counted up to `batch` and restarted, rather than tested with `%`: a division on
        // every job taken (a `join` popping its own half back is one) is not free.
        me.streak += 1;
        if me.streak >= batch {
            me.streak = 0;
            if pending() {
                self.wake_lowest();
            }
        }
    }

    /// Overload: wake the lowest-numbered sleeper, if any.
    ///
    /// Correctness never depends on this wake-up (the overloaded worker is awake and runs the
    /// work itself eventually), but a lost one would serialise work behind a long job. The
    /// fence orders the caller's look at the queues (`pending`) before its look at the
    /// sleeper set, against a sleeper's listing and last look: either the sleeper sees the
    /// work, or this sees the sleeper. It costs one fence per `batch` jobs.
    pub(super) fn wake_lowest(&self) {
        fence(Ordering::SeqCst);
        if self.sleepers.len() == 0 {
            return;
        }
        if let Some(index) = self.sleepers.pop_lowest() {
            self.unpark_listed(index);
        }
    }
}
