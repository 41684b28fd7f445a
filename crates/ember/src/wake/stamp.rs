//! Stamping owed wake-ups without a clock read per owe (README, "Deferred wake-ups").
//!
//! A worker that owes a wake-up stamps the debt with when it began, and the alarm pays it
//! the pool's bound after that stamp (`deferred.rs`). The clock read was most of an owe's
//! cost: the time-stamp counter takes about 13 ns on the virtual machines the lab runs on,
//! where a link of a chain of spawns, which owes on every link, takes 70–90 ns. So a worker
//! reuses its last reading for the owes that follow, as many as its recent pace fits into
//! a tenth of the bound, and then reads the clock again.
//!
//! **Why a reused reading keeps the bound.** A reading is taken before every owe it stamps,
//! so a stamp is never later than its owe: a debt can only look older than it is, and is
//! paid at most the bound after it began. What an old stamp can cost is a wake-up made
//! early, or the alarm firing for nothing. At a steady pace a stamp is at most a tenth of
//! the bound old, so the owner still moves the alarm before it fires (it moves it when it
//! is due within a fifth of the bound); a reading is reused only where at least
//! [`MIN_REUSE`] owes fit into that tenth, so that a few longer links do not undo that. A
//! link far longer than those before it (or the worker preempted) leaves the next stamps
//! old: if one of them sets the alarm, the owner, which reads the clock to set it, notices
//! and stamps afresh (`Debts::owe`); if the alarm is already set within the debt's bound,
//! it keeps the old stamp and may be paid early. A worker that runs out of work, or pays a
//! debt, forgets its reading ([`StampCache::forget`]), so the next run of owes starts with
//! a fresh one.
//!
//! Owner-only state, in plain atomics that only the owning worker touches (the alarm and
//! the loom models never do): nothing here is a protocol between threads.

use std::sync::atomic::{AtomicU64, Ordering};

/// Most owes one reading stamps.
const MAX_REUSE: u64 = 256;

/// Fewest owes a reading is reused for, or it stamps only its own: at a pace that fits
/// only two or three into the budget, a few links a little longer than the last ones
/// already leave a stamp older than the fifth of the bound ahead at which the owner moves
/// the alarm, and the alarm fires for nothing.
const MIN_REUSE: u64 = 4;

/// One worker's last clock reading and how many more owes may use it.
#[derive(Debug, Default)]
pub(crate) struct StampCache {
    /// The last reading, or 0 (forgotten).
    at: AtomicU64,
    /// Owes the last reading was allowed to stamp, itself included.
    reuse: AtomicU64,
    /// Owes it may still stamp.
    left: AtomicU64,
}

impl StampCache {
    /// The stamp for an owe now: the last reading while it may still be used, else a new
    /// one from `clock`, reused for as many owes as the pace of the last ones fits into
    /// `budget_ns`.
    #[inline]
    pub(crate) fn stamp(&self, budget_ns: u64, clock: impl FnOnce() -> u64) -> u64 {
        let left = self.left.load(Ordering::Relaxed);
        if left > 0 {
            self.left.store(left - 1, Ordering::Relaxed);
            return self.at.load(Ordering::Relaxed);
        }
        self.read(budget_ns, clock())
    }

    /// Takes `now` as the new reading; the last one stamped `reuse` owes since it was taken,
    /// so their pace says how many the new one may.
    #[inline(never)]
    fn read(&self, budget_ns: u64, now: u64) -> u64 {
        let at = self.at.load(Ordering::Relaxed);
        let reuse = match now.checked_sub(at) {
            // Forgotten, or a clock that stood still or went back: no pace to go by.
            _ if at == 0 => 1,
            None | Some(0) => 1,
            Some(elapsed) => {
                let owes = self.reuse.load(Ordering::Relaxed);
                match budget_ns.saturating_mul(owes) / elapsed {
                    fits if fits < MIN_REUSE => 1,
                    fits => fits.min(MAX_REUSE),
                }
            }
        };
        self.restart(now, reuse);
        now
    }

    /// The owner read the clock for another reason and found `stamp` older than the budget
    /// allows (a long link): `now` becomes the reading, stamping only the owe at hand.
    pub(crate) fn refresh(&self, now: u64) {
        self.restart(now, 1);
    }

    /// The owner ran out of work: the next owe, after however long, reads the clock.
    pub(crate) fn forget(&self) {
        if self.at.load(Ordering::Relaxed) != 0 {
            self.restart(0, 1);
        }
    }

    fn restart(&self, at: u64, reuse: u64) {
        self.at.store(at, Ordering::Relaxed);
        self.reuse.store(reuse, Ordering::Relaxed);
        self.left.store(reuse - 1, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::{StampCache, MAX_REUSE};
    use std::cell::Cell;

    const BUDGET: u64 = 10_000;

    /// Owes `n` times, `step` ns apart on a fake clock; returns the clock reads made and the
    /// oldest stamp seen (how long before its owe it was read).
    fn owe_at_pace(cache: &StampCache, clock: &Cell<u64>, n: u64, step: u64) -> (u64, u64) {
        let reads = Cell::new(0);
        let mut oldest = 0;
        for _ in 0..n {
            clock.set(clock.get() + step);
            let stamp = cache.stamp(BUDGET, || {
                reads.set(reads.get() + 1);
                clock.get()
            });
            assert!(stamp <= clock.get(), "a stamp later than its owe");
            oldest = oldest.max(clock.get() - stamp);
        }
        (reads.get(), oldest)
    }

    #[test]
    fn a_fast_steady_pace_reads_the_clock_once_per_budget() {
        let cache = StampCache::default();
        let clock = Cell::new(1_000_000);
        owe_at_pace(&cache, &clock, 1_000, 100);
        // Warmed up: 100 ns per owe fits 100 owes into the 10 µs budget.
        let (reads, oldest) = owe_at_pace(&cache, &clock, 10_000, 100);
        assert!(
            (95..=105).contains(&reads),
            "{reads} reads for 10,000 owes 100 ns apart"
        );
        assert!(oldest < BUDGET, "a stamp {oldest} ns old at a steady pace");
    }

    #[test]
    fn a_very_fast_pace_is_capped() {
        let cache = StampCache::default();
        let clock = Cell::new(1_000_000);
        owe_at_pace(&cache, &clock, 1_000, 1);
        let (reads, _) = owe_at_pace(&cache, &clock, MAX_REUSE * 10, 1);
        assert_eq!(reads, 10, "one read per {MAX_REUSE} owes");
    }

    #[test]
    fn a_slow_pace_reads_the_clock_every_owe() {
        let cache = StampCache::default();
        let clock = Cell::new(1_000_000);
        let (reads, oldest) = owe_at_pace(&cache, &clock, 100, BUDGET);
        assert_eq!(reads, 100);
        assert_eq!(oldest, 0);
    }

    #[test]
    fn a_pace_that_fits_fewer_than_the_minimum_reads_every_owe() {
        let cache = StampCache::default();
        let clock = Cell::new(1_000_000);
        // Three owes fit into the budget: below the minimum, no reuse.
        let (reads, oldest) = owe_at_pace(&cache, &clock, 100, BUDGET / 3);
        assert_eq!(reads, 100);
        assert_eq!(oldest, 0);
        // Five do: reuse.
        let (reads, _) = owe_at_pace(&cache, &clock, 100, BUDGET / 5);
        assert!(reads < 50, "{reads} reads for 100 owes at five per budget");
    }

    #[test]
    fn after_a_slowdown_the_reuse_shrinks_at_the_next_read() {
        let cache = StampCache::default();
        let clock = Cell::new(1_000_000);
        owe_at_pace(&cache, &clock, 1_000, 100);
        // The pace drops to 5 µs per owe: at most one reuse runs out on the old pace, then
        // every stamp is at most one owe old.
        owe_at_pace(&cache, &clock, MAX_REUSE, 5_000);
        let (reads, oldest) = owe_at_pace(&cache, &clock, 100, 5_000);
        assert!(reads >= 50, "{reads} reads for 100 owes 5 µs apart");
        assert!(oldest <= BUDGET, "a stamp {oldest} ns old");
    }

    #[test]
    fn forgetting_or_refreshing_reads_at_the_next_owe() {
        let cache = StampCache::default();
        let clock = Cell::new(1_000_000);
        owe_at_pace(&cache, &clock, 1_000, 100);
        cache.forget();
        clock.set(clock.get() + 1_000_000_000);
        assert_eq!(cache.stamp(BUDGET, || clock.get()), clock.get());
        owe_at_pace(&cache, &clock, 1_000, 100);
        clock.set(clock.get() + 1_000);
        cache.refresh(clock.get());
        clock.set(clock.get() + 100);
        assert_eq!(cache.stamp(BUDGET, || clock.get()), clock.get());
    }

    #[test]
    fn a_clock_that_stands_still_or_goes_back_gives_no_reuse() {
        let cache = StampCache::default();
        let reads = Cell::new(0);
        let stamp_at = |now: u64| {
            cache.stamp(BUDGET, || {
                reads.set(reads.get() + 1);
                now
            })
        };
        stamp_at(1_000);
        stamp_at(1_100);
        // 100 ns per owe: the reading stamps 100 owes, the first included.
        for _ in 0..99 {
            assert_eq!(stamp_at(1_200), 1_100);
        }
        assert_eq!(reads.get(), 2);
        // Back: no reuse, so the next owe reads again.
        assert_eq!(stamp_at(500), 500);
        assert_eq!(stamp_at(500), 500);
        assert_eq!(reads.get(), 4);
        // Still: no reuse either.
        assert_eq!(stamp_at(500), 500);
        assert_eq!(reads.get(), 5);
    }
}
