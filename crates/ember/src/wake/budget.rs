//! Where the wake decisions ask the awake-core budget (README, "Budget"; the budget itself is
//! `budget/mod.rs`). A pool built with the budget holds a [`BudgetLink`] in its `Sleep`; one
//! built without it, or alone in its process, decides as if there were none.

use std::sync::Weak;

use super::{Sleep, WakePolicy, WokenNote};
use crate::budget::{Member, Membership};
use crate::sync::atomic::Ordering;

/// A pool's place in the budget, and the pool as the budget sees it.
pub(crate) struct BudgetLink {
    membership: Membership,
    member: Weak<dyn Member>,
}

impl Sleep {
    /// Joins the process's budget as `member` (the pool's registry), also the machine's with
    /// `machine`. Called once, when the pool is built.
    #[cfg(not(loom))]
    pub(crate) fn join_budget(&self, member: Weak<dyn Member>, machine: bool) {
        let membership = crate::budget::Budget::process().join(member.clone(), machine);
        let _ = self.budget.set(BudgetLink { membership, member });
    }

    /// The pool's workers have all exited: it leaves the budget, where exited workers would
    /// otherwise count as awake for as long as anything keeps the pool's state.
    pub(crate) fn leave_budget(&self) {
        if let Some(link) = self.budget.get() {
            link.membership.leave();
        }
    }

    /// Workers not listed as asleep: running, searching, on their way to sleep, or blocked
    /// in user code. A hint, read without the lock.
    #[inline]
    pub(crate) fn awake(&self) -> usize {
        self.workers - self.sleepers.len().min(self.workers)
    }

    /// Steps 1–3 of the budget, for a wake-up about to be made: whether to make it. A refused
    /// one is withheld (step 4). Without a link, or alone in the process, one load.
    #[inline]
    pub(super) fn budget_allows(&self) -> bool {
        self.budget_allows_when(|| true)
    }

    /// [`budget_allows`](Self::budget_allows) for a wake-up made only if `wanted` says so
    /// (a hint read before the sleeper set's lock): a wake-up nobody wants is not withheld.
    /// `wanted` is read only where the budget is shared.
    #[inline]
    pub(super) fn budget_allows_when(&self, wanted: impl FnOnce() -> bool) -> bool {
        match self.budget.get() {
            Some(link) if link.membership.budget().shared(link.membership.machine()) => {
                !wanted() || self.budget_allows_shared(link)
            }
            _ => true,
        }
    }

    #[cold]
    fn budget_allows_shared(&self, link: &BudgetLink) -> bool {
        let budget = link.membership.budget();
        if budget.admits(self.awake(), link.membership.machine()) {
            return true;
        }
        // Not kept where no timer thread could make it later: made now instead.
        !budget.withhold(
            link.membership.id(),
            link.member.clone(),
            crate::sync::clock::now_ns(),
        )
    }

    /// Step 5: whether a worker about to search should give its core back instead. Without a
    /// link, or alone in the process, one load.
    #[inline]
    pub(crate) fn over_budget(&self) -> bool {
        match self.budget.get() {
            Some(link) if link.membership.budget().shared(link.membership.machine()) => {
                link.membership.budget().over(link.membership.machine())
            }
            _ => false,
        }
    }

    /// A worker of this pool parks: the core it gives back goes to a wake-up withheld from
    /// another pool (step 4). One load while nothing is withheld.
    #[inline]
    pub(super) fn core_released(&self) {
        if let Some(link) = self.budget.get() {
            link.membership.budget().core_released(link.membership.id());
        }
    }

    /// Makes a wake-up the budget withheld, the caller having seen a queued job after a
    /// `SeqCst` fence: what the push would have made, without asking the budget again.
    pub(crate) fn make_withheld_wake(&self) {
        match self.policy {
            WakePolicy::Searching => {
                let woken = self.sleepers.pop_latest_if(
                    || self.num_searching.load(Ordering::SeqCst) == 0,
                    // Woken to search, with no share of a fan-out to pass on.
                    |index| self.count_woken(index, WokenNote::new(0, 1)),
                );
                if let Some(index) = woken {
                    self.unpark_listed(index);
                }
            }
            WakePolicy::Eager => {
                if let Some(index) = self.sleepers.pop_latest() {
                    self.unpark_listed(index);
                }
            }
            // Biased's wake-ups do not ask the budget.
            WakePolicy::Biased { .. } => {}
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use std::sync::Arc;

    use crate::{Pool, Tuning};

    fn pool(threads: usize, name: &str) -> Pool {
        Pool::builder()
            .threads(threads)
            .name(name)
            .tuning(Tuning::new().awake_budget(true))
            .build()
            .expect("pool")
    }

    /// A pool dropped while a task of it is still held keeps its registry, but its workers
    /// have exited: they count for nothing, and another pool's wake-ups are not withheld on
    /// their account. (The only test of the library that joins its own process's budget;
    /// others do so in child processes.)
    #[test]
    fn a_dropped_pool_leaves_the_budget_with_its_workers_not_its_last_handle() {
        let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
        let a = pool(cores, "budget-gone");
        let b = pool(2, "budget-stays");
        let task = a.task(|| 7).spawn();
        let a_registry = Arc::downgrade(a.registry());
        // Drops the last handle: waits for A's workers to exit.
        drop(a);
        assert!(
            a_registry.upgrade().is_some(),
            "the task keeps A's registry"
        );
        // One of B's workers blocks in a job, so B has one awake whatever the others do.
        let (started_tx, started_rx) = std::sync::mpsc::channel();
        let (release_tx, release_rx) = std::sync::mpsc::channel::<()>();
        b.spawn(move || {
            started_tx.send(()).unwrap();
            let _ = release_rx.recv();
        });
        started_rx
            .recv_timeout(std::time::Duration::from_secs(60))
            .expect("B runs its job");
        // A's exited workers, were they counted awake, would fill the budget with B's one:
        // B's next wake-up would be withheld.
        assert!(
            b.registry().sleep.budget_allows(),
            "B's wake-up withheld on account of a dropped pool's workers"
        );
        release_tx.send(()).unwrap();
        b.wait_idle();
        assert_eq!(task.join().ok(), Some(7));
    }
}
