//! The Searching policy's counter of searching workers (README: "Searching").

use super::{Sleep, WakeState};

/// The most sleepers a woken searcher wakes when it finds work (README, "Fan-out"). With the
/// shares it hands them, a burst reaches `n` sleepers in about `log2(n)` steps rather than `n`.
pub(crate) const FAN_OUT: usize = 4;
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
    /// searching.
    #[cold]
    pub(super) fn wake_searcher(&self) {
        self.wake_searchers(1, 1);
    }

    /// Wakes up to `most` sleepers, most recently parked first, each counted as a searcher,
    /// while fewer than `target` workers search. Each check and count happen under the
    /// sleeper-set lock, so two wakers racing here never take the count past `target`.
    /// Each sleeper is unparked before the next is chosen: the first starts soonest.
    #[cold]
    fn wake_searchers(&self, target: usize, most: usize) {
        for _ in 0..most {
            // The awake-core budget may withhold this wake-up (README, "Budget").
            if !self.budget_allows_when(|| {
                self.sleepers.len() != 0 && self.num_searching.load(Ordering::SeqCst) < target
            }) {
                return;
            }
            let woken = self.sleepers.pop_latest_if(
                || self.num_searching.load(Ordering::SeqCst) < target,
                |index| {
                    self.num_searching.fetch_add(1, Ordering::SeqCst);
                    self.woken_to_search[index].store(1, Ordering::SeqCst);
                },
            );
            match woken {
                Some(index) => self.unpark_listed(index),
                None => return,
            }
        }
    }

    /// A woken searcher's fan-out (README, "Fan-out"): wakes sleepers for the `jobs` that
    /// neither a searcher nor a promised wake-up covers, at most [`FAN_OUT`] of them, and
    /// hands each a share of what is left to wake in turn: about a half to the first, a
    /// quarter to the next, an eighth to the third, the rest to the last. The burst then spreads as a binomial tree.
    /// All are chosen before the first is unparked, so the tree does not depend on which
    /// wakee the kernel runs first, nor on whether one preempts its waker. Returns whether
    /// it woke anybody.
    #[cold]
    fn fan_out(&self, jobs: usize) -> bool {
        let mut chosen = [0; FAN_OUT];
        let mut count = 0;
        for turn in 1..=FAN_OUT {
            // The awake-core budget may withhold the rest of the fan-out (README, "Budget").
            if !self.budget_allows_when(|| {
                self.sleepers.len() != 0
                    && self.num_searching.load(Ordering::SeqCst)
                        + self.promised.load(Ordering::SeqCst)
                        < jobs
            }) {
                break;
            }
            let share = std::cell::Cell::new(0);
            let woken = self.sleepers.pop_latest_if(
                || {
                    let covered = self.num_searching.load(Ordering::SeqCst)
                        + self.promised.load(Ordering::SeqCst);
                    let left = jobs.saturating_sub(covered);
                    let rest = left.saturating_sub(1);
                    let whole = if turn == FAN_OUT { rest } else { rest / 2 };
                    // A wakee keeps its share in a `u32`; past that, fewer wake-ups are
                    // promised, which only leaves more to the wakers that follow.
                    share.set(whole.min(u32::MAX as usize));
                    left > 0
                },
                |index| {
                    self.num_searching.fetch_add(1, Ordering::SeqCst);
                    self.promised.fetch_add(share.get(), Ordering::SeqCst);
                    self.woken_to_search[index].store(share.get() + 1, Ordering::SeqCst);
                },
            );
            match woken {
                Some(index) => chosen[count] = index,
                None => break,
            }
            count += 1;
        }
        for &index in &chosen[..count] {
            self.unpark_listed(index);
        }
        count > 0
    }

    /// Whether a woken searcher fans out: always, but in the loom mutant that shows what the
    /// fan-out does (`mutant_woken_searcher_wakes_one`).
    #[inline(always)]
    fn fans_out(&self) -> bool {
        #[cfg(all(test, loom))]
        if !self.fan_out {
            return false;
        }
        true
    }

    /// The most searchers there may be: half the workers, rounded up (at least one).
    fn searcher_cap(&self) -> usize {
        self.workers.div_ceil(2)
    }

    /// Joins the searchers if fewer than half the workers search already.
    pub(super) fn try_start_searching(&self, me: &mut WakeState) -> bool {
        if me.searching {
            return true;
        }
        // The cap is checked and taken in two steps, as Go does: a race can let one extra
        // worker search, which costs a little spinning and nothing else.
        if self.num_searching.load(Ordering::SeqCst) >= self.searcher_cap() {
            return false;
        }
        self.num_searching.fetch_add(1, Ordering::SeqCst);
        me.searching = true;
        true
    }

    /// A searcher found work: it stops searching, and the last searcher to stop wakes one
    /// more if work is still visible, because pushes made while it searched woke nobody.
    /// A searcher that was woken fans out instead: it wakes up to [`FAN_OUT`] more, while the
    /// searchers and the promised wake-ups cover fewer jobs than are visible, and makes the
    /// last searcher's wake-up if that woke nobody (README, "Fan-out").
    ///
    /// Go and Tokio wake one more unconditionally, which under light load costs a second
    /// wake-up per job (the woken searcher finds nothing). Looking first is safe. A push that
    /// skipped its wake-up because this worker searched read the count before the decrement
    /// in `stop_searching`. So after the fence below, its job is visible to `visible`. A push
    /// that reads the count after the decrement sees zero and wakes a sleeper itself.
    ///
    /// A light push (README, "Light pushes") has no fence to make it visible to that look. So
    /// while some worker is listed as a light pusher and somebody sleeps, a look that finds
    /// nothing is made again after the heavy barrier.
    pub(super) fn found_work_searching(
        &self,
        me: &mut WakeState,
        visible: impl Fn(usize) -> usize,
    ) {
        if !me.searching {
            return;
        }
        let woken = me.woken;
        let last = self.stop_searching(me);
        if !(last || woken) {
            return;
        }
        // StoreLoad: our decrement before the look at the queues (the hand-off's proof).
        fence(Ordering::SeqCst);
        // The hand-off asks only whether any job is left; a fan-out counts them, as far as the
        // searchers there are and the wake-ups it may make.
        let most = if woken {
            // Enough to cover every searcher, every promise and every sleeper; never zero, so
            // that any job at all is counted.
            (self.num_searching.load(Ordering::SeqCst)
                + self.promised.load(Ordering::SeqCst)
                + self.sleepers.len())
            .max(1)
        } else {
            1
        };
        let mut jobs = visible(most);
        if jobs == 0 {
            if !(last && self.light_push_missed(|| visible(1) > 0)) {
                return;
            }
            jobs = 1;
        }
        // Every searcher, ourselves gone, will take one of the visible jobs, and every
        // promise wakes one more: wake for the rest. Not capped at half the workers, as a
        // search started by a worker itself is: these searchers are woken for jobs already
        // there, and stop at their first. The last searcher wakes one whatever the promises
        // say: a promise is a hint, the hand-off is the proof.
        let woke = woken && self.fans_out() && self.fan_out(jobs);
        #[cfg(all(test, loom))]
        if !self.promise_guards {
            if last && !woken {
                self.wake_searcher();
            }
            return;
        }
        if last && !woke {
            self.wake_searcher();
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
        #[cfg(all(test, loom))]
        let forget_share = !self.promise_guards;
        #[cfg(not(all(test, loom)))]
        let forget_share = false;
        if me.woken && !forget_share {
            // Our share is ours to make now, or nobody's: the promise ends before the count
            // drops, so the last searcher finds every promise of the others ended.
            self.promised.fetch_sub(me.share as usize, Ordering::SeqCst);
            me.share = 0;
        }
        me.woken = false;
        // SeqCst RMW: it is ordered against a pusher's fenced read of the count (README).
        self.num_searching.fetch_sub(1, Ordering::SeqCst) == 1
    }
}
