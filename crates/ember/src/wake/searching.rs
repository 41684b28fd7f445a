//! The Searching policy's counter of searching workers (README: "Searching").

use super::{Sleep, WakeState};
use crate::sync::atomic::{fence, Ordering};

impl Sleep {
    /// A push: wake one sleeper, as a searcher, only if nobody is searching already.
    pub(super) fn notify_searching(&self) {
        // StoreLoad: order the push before reading the searcher count and the sleeper set.
        // A searcher that stops after this read re-checks the queues after its own fence and
        // sees the push; one that stopped before it is no longer counted (README).
        fence(Ordering::SeqCst);
        self.wake_searcher_if_idle();
    }

    /// Wakes a searcher if nobody searches and somebody sleeps.
    #[inline]
    pub(super) fn wake_searcher_if_idle(&self) {
        if self.searcher_wanted() {
            self.wake_searcher();
        }
    }

    /// Searching's rule for a push, read after its fence: a sleeper is woken only if nobody
    /// searches and somebody sleeps (cheap checks first).
    #[inline]
    pub(super) fn searcher_wanted(&self) -> bool {
        self.num_searching.load(Ordering::SeqCst) == 0 && self.sleepers.len() != 0
    }

    /// Wakes the most recently parked worker and counts it as a searcher, unless somebody is
    /// searching. Counting happens under the sleeper-set lock, so two pushers racing here wake
    /// one worker, not two.
    #[cold]
    pub(super) fn wake_searcher(&self) {
        let woken = self.sleepers.pop_latest_if(
            || self.num_searching.load(Ordering::SeqCst) == 0,
            |index| {
                self.num_searching.fetch_add(1, Ordering::SeqCst);
                self.woken_to_search[index].store(true, Ordering::SeqCst);
            },
        );
        if let Some(index) = woken {
            self.unpark_listed(index);
        }
    }

    /// Joins the searchers if fewer than half the workers search already.
    pub(super) fn try_start_searching(&self, me: &mut WakeState) -> bool {
        if me.searching {
            return true;
        }
        // The cap is checked and taken in two steps, as Go does: a race can let one extra
        // worker search, which costs a little spinning and nothing else.
        if 2 * self.num_searching.load(Ordering::SeqCst) >= self.workers {
            return false;
        }
        self.num_searching.fetch_add(1, Ordering::SeqCst);
        me.searching = true;
        true
    }

    /// A searcher found work: it stops searching, and the last searcher to stop wakes one
    /// more if work is still visible, because pushes made while it searched woke nobody.
    ///
    /// Go and Tokio wake one more unconditionally, which under light load costs a second
    /// wake-up per job (the woken searcher finds nothing). Looking first is safe: a push that
    /// skipped its wake-up because this worker searched read the count before the decrement
    /// in `stop_searching`, so after the fence below its job is visible to `pending`; a push
    /// that reads the count after the decrement sees zero and wakes a sleeper itself.
    ///
    /// A light push (README, "Light pushes") has no fence to make it visible to that look. So
    /// while some worker is listed as a light pusher and somebody sleeps, a look that finds
    /// nothing is made again after the heavy barrier.
    pub(super) fn found_work_searching(&self, me: &mut WakeState, pending: impl Fn() -> bool) {
        if me.searching && self.stop_searching(me) {
            fence(Ordering::SeqCst);
            if pending() || self.light_push_missed(pending) {
                self.wake_searcher();
            }
        }
    }

    /// The last searcher's look found nothing: whether a second look, after the heavy
    /// barrier, finds a light push the first one missed. Without sleepers there is nobody to
    /// wake, and a worker that lists itself later issues the heavy barrier itself.
    #[cold]
    fn light_push_missed(&self, pending: impl Fn() -> bool) -> bool {
        if self.sleepers.len() == 0 || !self.light_pushes_possible() {
            return false;
        }
        #[cfg(all(test, loom))]
        if !self.hand_off_heavy {
            return false;
        }
        self.barrier.heavy();
        pending()
    }

    /// Leaves the searchers; returns whether the caller was the last one.
    pub(super) fn stop_searching(&self, me: &mut WakeState) -> bool {
        me.searching = false;
        // SeqCst RMW: it is ordered against a pusher's fenced read of the count (README).
        self.num_searching.fetch_sub(1, Ordering::SeqCst) == 1
    }
}
