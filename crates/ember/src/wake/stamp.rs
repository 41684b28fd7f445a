//! Stamping owed wake-ups without a clock read per owe (README, "Deferred wake-ups").
//!
//! A worker that owes a wake-up stamps the debt with when it began, and the alarm pays it
//! the pool's bound after that stamp (`deferred.rs`). The clock read was most of an owe's
//! cost, and a chain of spawns owes on every link. So a worker reuses its last reading for
//! the owes that follow, as many as its recent pace fits into a twentieth of the bound.
//! Then it reads the clock again (`crates/ember-lab/MEASUREMENTS.md`, "Stamps and the
//! clock").
//!
//! **Why a reused reading keeps the bound.** A reading is taken before every owe it stamps,
//! so a stamp is never later than its owe. A debt can only look older than it is, and is
//! paid at most the bound after it began. An old stamp can cost a wake-up made early, or the
//! alarm firing for nothing: its thread wakes, finds nothing due, and sets it again. That
//! is because the owner moves the alarm when it is due within a fifth of the bound of its
//! stamp, and an old stamp makes the alarm look further off than it is. So:
//!
//! * a reading is reused for as many owes as the last ones' pace fits into a twentieth of
//!   the bound. At a steady pace, or one that swings by half, a stamp stays under a tenth
//!   of the bound old;
//! * the reuse at most doubles from one reading to the next. It is none where fewer than
//!   [`MIN_REUSE`] owes fit, so a run of a few short links does not set a long reuse;
//! * an owe with a reused stamp moves the alarm a tenth of the bound earlier than one with
//!   a fresh reading (`Debts::owe`);
//! * the owner reads the clock whenever it moves the alarm. It replaces a stamp it then
//!   finds older than a tenth of the bound (a link far longer than those before it, a
//!   preempted worker) by that reading;
//! * a worker that runs out of work, or pays a debt, forgets its reading
//!   ([`StampCache::forget`]), so the next run of owes starts afresh.
//!
//! Steady or jittery chains, with links well under a fifth of the bound, never let the alarm
//! fire for nothing. Links that swing between short and fifty times longer still do now and
//! then, and get a few debts paid early. `reused_stamps_keep_the_alarm_ahead_of_a_chain` in
//! `deferred.rs` drives such chains on a fake clock.
//!
//! Owner-only state, in plain atomics that only the owning worker touches (the alarm and
//! the loom models never do): nothing here is a protocol between threads.

use std::sync::atomic::{AtomicU64, Ordering};

/// Most owes one reading stamps.
const MAX_REUSE: u64 = 256;

/// Fewest owes that must fit into the budget for a reading to be reused at all: where only
/// two or three do, a few links a little longer than the last ones leave a stamp older than
/// the owner's margin.
const MIN_REUSE: u64 = 4;

/// The stamp of an owe: a time no later than the owe, read for it or reused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Stamp {
    pub(crate) at: u64,
    /// Read for an earlier owe: older than this one by an unknown amount, under a tenth of
    /// the bound at a steady pace.
    pub(crate) reused: bool,
}

impl Stamp {
    /// A reading taken for this owe.
    pub(crate) fn fresh(at: u64) -> Stamp {
        Stamp { at, reused: false }
    }
}

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
    pub(crate) fn stamp(&self, budget_ns: u64, clock: impl FnOnce() -> u64) -> Stamp {
        let left = self.left.load(Ordering::Relaxed);
        if left > 0 {
            self.left.store(left - 1, Ordering::Relaxed);
            return Stamp {
                at: self.at.load(Ordering::Relaxed),
                reused: true,
            };
        }
        Stamp::fresh(self.read(budget_ns, clock()))
    }

    /// Takes `now` as the new reading; the last one stamped `reuse` owes since it was taken,
    /// so their pace says how many the new one may.
    #[inline(never)]
    fn read(&self, budget_ns: u64, now: u64) -> u64 {
        let at = self.at.load(Ordering::Relaxed);
        let reuse = match now.checked_sub(at) {
            Some(elapsed) if at != 0 && elapsed > 0 => {
                let owes = self.reuse.load(Ordering::Relaxed);
                match budget_ns.saturating_mul(owes) / elapsed {
                    fits if fits < MIN_REUSE => 1,
                    fits => fits.min(MAX_REUSE).min(2 * owes),
                }
            }
            // Forgotten, or a clock that stood still or went back: no pace to go by.
            _ => 1,
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
            let stamp = cache
                .stamp(BUDGET, || {
                    reads.set(reads.get() + 1);
                    clock.get()
                })
                .at;
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
        assert_eq!(cache.stamp(BUDGET, || clock.get()).at, clock.get());
        owe_at_pace(&cache, &clock, 1_000, 100);
        clock.set(clock.get() + 1_000);
        cache.refresh(clock.get());
        clock.set(clock.get() + 100);
        assert_eq!(cache.stamp(BUDGET, || clock.get()).at, clock.get());
    }

    #[test]
    fn a_clock_that_stands_still_or_goes_back_gives_no_reuse() {
        let cache = StampCache::default();
        let reads = Cell::new(0);
        let stamp_at = |now: u64| {
            cache
                .stamp(BUDGET, || {
                    reads.set(reads.get() + 1);
                    now
                })
                .at
        };
        stamp_at(1_000);
        stamp_at(1_100);
        // 100 ns per owe, but one owe to go by: the reading stamps 2 owes (reuse at most
        // doubles from one reading to the next), the first included.
        assert_eq!(stamp_at(1_200), 1_100);
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
