//! Deferred wake-ups of spawned jobs, under Searching (README, "Deferred wake-ups").
//!
//! A job that spawns its successor as its last act and ends would, under Searching, wake a
//! sleeper for a job its own worker is about to run. So in a pool that defers wake-ups
//! (`Tuning::defer_wakeups`, the default), such a spawn *owes* that wake-up instead.
//! The job is on the deque, stealable as always; only the wake-up waits. The worker settles
//! the debt at its next scheduling point. Its next push pays it. Its next look for work
//! takes the job back and voids it. If the spawning job still runs the pool's bound later
//! ([`DEFAULT_DEFER_NS`] unless the builder says otherwise), an alarm pays it. So a long
//! parent never holds its successor hostage.
//!
//! The alarm is one per pool (`sync/alarm.rs`). One thread waits for it, asleep while no
//! debt is old. It starts at the first spawn that would owe (`pool/workers/alarm_thread.rs`); until
//! it watches, no spawn owes. Owing workers move the alarm only when it is due within a
//! fifth of the bound (three tenths with a reused stamp, `stamp.rs`). So a chain of short
//! jobs costs a system call about every three quarters of the bound, and no wake-up.

use crossbeam_utils::CachePadded;

use super::stamp::{Stamp, StampCache};
use super::{Sleep, WakePolicy};
use crate::sync::alarm::Alarm;
use crate::sync::atomic::{fence, AtomicBool, AtomicU64, Ordering};
use crate::sync::clock::now_ns;
use crate::sync::{lock, Arc, Mutex};

/// How long a wake-up may stay owed before the alarm makes it, unless the builder says
/// otherwise (100 µs): a spawned job waits for a sleeper no longer than this, plus the
/// alarm's and the sleeper's own latency.
pub(crate) const DEFAULT_DEFER_NS: u64 = 100_000;

/// The shortest bound a pool takes (10 µs): below it the alarm would be moved every few
/// microseconds.
pub(crate) const MIN_DEFER_NS: u64 = 10_000;

/// The longest bound a pool takes (1 s): a job left unstarted that long behind a busy
/// spawner is a hang in all but name, and deadlines stay far from overflowing.
pub(crate) const MAX_DEFER_NS: u64 = 1_000_000_000;

/// After the alarm made one of a worker's wake-ups (its spawning job ran past the bound),
/// the worker's next this many owing spawns wake at once. A job that spawns and then
/// computes is likely to do so again, and its successors should not each wait out the
/// bound. A chain that merely ran one long link pays at most this many wake-ups, then
/// defers again. Spawns that would owe nothing (onto a busy deque, or with a worker
/// searching) leave the count alone.
pub(crate) const SPAWNS_WAKING_AFTER_ALARM: u32 = 16;

/// What a spawn did about the wake-up its push asked for ([`Sleep::notify_spawned`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum SpawnWake {
    /// Made it, or none was needed: the spawner owes nothing.
    Settled,
    /// Made it where, but for `may_owe`, it would have been owed.
    MadeInsteadOfOwed,
    /// Owes it: the spawner settles it later.
    Owed,
    /// Made it because nothing watches the pool's alarm yet: the spawner starts the thread
    /// that will, if nobody has (`pool/workers/alarm_thread.rs`).
    AlarmUnwatched,
}

/// The alarm pays a debt that falls due within this of its firing, rather than setting
/// itself again for a few microseconds.
const DUE_SLOP_NS: u64 = 2_000;

/// The debts of one pool's workers and the alarm that bounds them.
pub(crate) struct Debts {
    /// How long a wake-up may stay owed before the alarm makes it.
    defer_ns: u64,
    /// A worker that owes a wake-up moves the alarm only when it is due within this, or later
    /// than its own debt allows. This is a fifth of `defer_ns`; three tenths with a reused
    /// stamp. Debts made back to back then move it about once per three quarters of the
    /// bound. Setting an
    /// alarm due that soon is a system call that reprograms the processor's timer, far
    /// dearer than one due after the next scheduler tick. So the alarm is moved as seldom as
    /// the bound allows. Moved less often, it would fire between two debts and wake its
    /// thread for nothing.
    rearm_ns: u64,
    /// When worker `i` began to owe a wake-up ([`now_ns`]), or 0. Never later than that
    /// (`stamp.rs`): a reading reused from an owe before.
    since: Box<[CachePadded<AtomicU64>]>,
    /// Each worker's last clock reading, reused for the owes that follow it (`stamp.rs`).
    stamps: Box<[CachePadded<StampCache>]>,
    /// The deadline the alarm is set for, or 0 while it is clear.
    armed: CachePadded<AtomicU64>,
    /// Serialises setting the alarm with the look at `since` that chose its deadline.
    arming: Mutex<()>,
    /// The alarm and its thread's flags, shared with that thread. While it waits, the thread
    /// holds no more of the pool than this; it holds the pool itself only while it pays.
    /// `pool/workers/alarm_thread.rs` says when it may still be the one to drop the pool's state.
    watch: Arc<Watch>,
    /// The longest time a wake-up stayed owed before it was made, in ns.
    longest: AtomicU64,
    /// The steps of `owe` and of `Sleep::notify_spawned` a loom mutant switches off (`Steps`).
    #[cfg(all(test, loom))]
    pub(crate) steps: Steps,
}

impl Debts {
    /// Debts for `workers` workers owed for at most `defer_ns` (held between
    /// [`MIN_DEFER_NS`] and [`MAX_DEFER_NS`]), where the system has an alarm.
    pub(super) fn new(workers: usize, defer_ns: u64) -> Option<Debts> {
        let defer_ns = defer_ns.clamp(MIN_DEFER_NS, MAX_DEFER_NS);
        Some(Debts {
            defer_ns,
            rearm_ns: defer_ns / 5,
            since: (0..workers)
                .map(|_| CachePadded::new(AtomicU64::new(0)))
                .collect(),
            stamps: (0..workers).map(|_| CachePadded::default()).collect(),
            armed: CachePadded::new(AtomicU64::new(0)),
            arming: Mutex::new(()),
            watch: Arc::new(Watch {
                alarm: Alarm::new()?,
                watched: AtomicBool::new(false),
                stopped: AtomicBool::new(false),
            }),
            longest: AtomicU64::new(0),
            #[cfg(all(test, loom))]
            steps: Steps::ALL,
        })
    }

    /// Worker `me` owes a wake-up from `stamp` on (the time, or a reading taken for an
    /// earlier owe, `stamp.rs`); `clock` reads the time afresh, which this does only to
    /// set the alarm or to tell whether it must. The store, then the look at `armed`, pairs
    /// with [`rearm`](Self::rearm)'s store of 0, then its look at `since` (a Dekker
    /// pattern): either this look sees the alarm cleared and sets it, or that look sees this
    /// debt.
    pub(crate) fn owe(&self, me: usize, stamp: Stamp, clock: impl FnOnce() -> u64) {
        let steps = self.steps();
        let now = stamp.at;
        self.since[me].store(now, Ordering::Relaxed);
        // StoreLoad: the debt before the look at the alarm (module doc, README).
        if steps.owe_fence {
            fence(Ordering::SeqCst);
        }
        let armed = self.armed.load(Ordering::Relaxed);
        // Clear, due soon, or set later than this debt allows (a newer debt chose it): set
        // it again. Otherwise it fires in time, and a chain of short jobs pays no system
        // call. Already due (at or before `now`), it has fired or is firing. Its thread's
        // pass will see this debt, or clear `armed` first so a later debt sets it. Setting
        // it again would cost a system call per debt while that thread waits for a processor.
        // A reused stamp is older than the owe: by under a tenth of the bound at a steady
        // pace (`stamp.rs`). So the alarm counts as due soon that much earlier. It is then
        // moved before it fires, without a clock read to tell how soon it is due.
        let soon_ns = if stamp.reused {
            self.rearm_ns + self.stale_ns()
        } else {
            self.rearm_ns
        };
        let clear = armed == 0;
        let due_soon = armed > now && armed < now.saturating_add(soon_ns);
        let too_late = armed > now.saturating_add(self.defer_ns);
        if !(steps.owe_sets_alarm && (clear || due_soon || too_late)) {
            return;
        }
        let fresh = clock();
        if fresh.saturating_sub(now) > self.stale_ns() {
            // A reused reading gone stale (a link far longer than those before it): stamped
            // afresh, unless the alarm's pass claimed the debt meanwhile. An old stamp would
            // make this debt, and the next ones, look due long before they are.
            self.stamps[me].refresh(fresh);
            if steps.restamp_if_owed {
                let _ = self.since[me].compare_exchange(
                    now,
                    fresh,
                    Ordering::Relaxed,
                    Ordering::Relaxed,
                );
            } else {
                self.since[me].store(fresh, Ordering::Relaxed);
            }
        }
        self.rearm(fresh, None);
    }

    /// How old a reused reading may be (a tenth of the bound, `stamp.rs`): under the fifth
    /// of it ahead at which an owner moves the alarm, so that at a steady pace the alarm is
    /// moved before it fires.
    fn stale_ns(&self) -> u64 {
        self.defer_ns / 10
    }

    /// Worker `me`'s stamp for an owe now, `clock` read if a new reading is due
    /// (`stamp.rs`): readings are reused for as many owes as fit into half of `stale_ns`.
    #[inline]
    fn stamp(&self, me: usize, clock: impl FnOnce() -> u64) -> Stamp {
        self.stamps[me].stamp(self.stale_ns() / 2, clock)
    }

    /// The steps `owe` and `notify_spawned` take: all of them, but in a loom mutant.
    #[inline(always)]
    fn steps(&self) -> Steps {
        #[cfg(all(test, loom))]
        return self.steps;
        #[cfg(not(all(test, loom)))]
        Steps::ALL
    }

    /// Voids worker `me`'s debt, if it has one: nobody will be woken for it by this worker.
    /// Only 0 is ever stored by others (the alarm's compare-and-swap), so a plain store is
    /// enough; a debt the alarm made meanwhile cost one needless wake-up. Returns whether
    /// the alarm had claimed it (`since` already 0).
    fn void(&self, me: usize) -> bool {
        if self.since[me].load(Ordering::Relaxed) != 0 {
            self.since[me].store(0, Ordering::Relaxed);
            return false;
        }
        true
    }

    /// Worker `me` claims its own debt for payment; returns when it began (0: none, or the
    /// alarm claimed it first). A swap, as the alarm's compare-and-swap: each debt is paid
    /// once. The run of owes is broken: the next one reads the clock afresh (`stamp.rs`).
    fn claim(&self, me: usize) -> u64 {
        self.stamps[me].forget();
        if self.since[me].load(Ordering::Relaxed) == 0 {
            return 0;
        }
        self.since[me].swap(0, Ordering::Relaxed)
    }

    fn record(&self, owed_ns: u64) {
        if owed_ns > self.longest.load(Ordering::Relaxed) {
            self.longest.fetch_max(owed_ns, Ordering::Relaxed);
        }
    }

    /// Sets the alarm for the earliest deadline among the debts, or clears it if there is
    /// none. With `pay` (the alarm fired at `now`), first pays every debt due by then.
    fn rearm(&self, now: u64, pay: Option<&dyn Fn(usize)>) {
        let _arming = lock(&self.arming);
        self.armed.store(0, Ordering::Relaxed);
        // StoreLoad: the cleared alarm before the look at the debts, pairing with `owe`.
        fence(Ordering::SeqCst);
        // Stamped after `now` by more than the slop: a clock that jumped back
        // (`sync/clock.rs`; a worker stamping between this pass's clock read and its look
        // is later by less). Such a debt's deadline would lie past the jump: it is due at
        // once, an early wake-up rather than a held one.
        let stamped_ahead = |owed: u64| owed > now.saturating_add(DUE_SLOP_NS);
        let due = |owed: u64| {
            owed.saturating_add(self.defer_ns) <= now.saturating_add(DUE_SLOP_NS)
                || stamped_ahead(owed)
        };
        let mut next = u64::MAX;
        for (worker, since) in self.since.iter().enumerate() {
            let mut owed = since.load(Ordering::Relaxed);
            if let Some(pay) = pay.filter(|_| owed != 0 && due(owed)) {
                if since
                    .compare_exchange(owed, 0, Ordering::SeqCst, Ordering::SeqCst)
                    .is_ok()
                {
                    self.record(now.saturating_sub(owed));
                    pay(worker);
                    continue;
                }
                // Settled, and maybe owed again since: a new debt. (One owed again under the
                // same reused stamp passes the compare-and-swap above as the old one would:
                // due by that stamp, it is paid all the same.)
                owed = since.load(Ordering::Relaxed);
            }
            if owed != 0 {
                next = next.min(match stamped_ahead(owed) {
                    true => now,
                    false => owed.saturating_add(self.defer_ns),
                });
            }
        }
        if next == u64::MAX {
            self.watch.alarm.set(0);
        } else {
            self.watch.alarm.set(next);
            self.armed.store(next, Ordering::Relaxed);
        }
    }
}

impl Sleep {
    /// Worker-side: a job spawned on worker `me` was pushed on its own deque, which now holds
    /// `local_len()`. As [`notify_local`](Self::notify_local), with one exception. Where the
    /// pool defers wake-ups (Searching, `defer_wakeups`, an alarm) and the job is alone on the
    /// deque, a wake-up the push would make is owed instead. Then it returns
    /// [`SpawnWake::Owed`], and the caller settles it ([`void_debt`](Self::void_debt) or
    /// [`pay_debt`](Self::pay_debt)).
    ///
    /// With `may_owe` false (the spawner's last debt outlived the bound, `push_spawned`) a
    /// wake-up that would have been owed is made at once, as without deferral, and the
    /// result is [`SpawnWake::MadeInsteadOfOwed`].
    #[inline]
    pub(crate) fn notify_spawned(
        &self,
        me: usize,
        may_owe: bool,
        local_len: impl FnOnce() -> usize,
    ) -> SpawnWake {
        let Some(debts) = &self.debts else {
            self.notify_local(local_len);
            return SpawnWake::Settled;
        };
        debug_assert_eq!(self.policy, WakePolicy::Searching);
        // StoreLoad, as every push (README, "Pushing").
        if debts.steps().spawn_fence {
            fence(Ordering::SeqCst);
        }
        // Nobody asleep: nobody to wake, as for any local push (`wake_for_local_push`).
        if self.sleepers.len() == 0 {
            return SpawnWake::Settled;
        }
        if self.num_searching.load(Ordering::SeqCst) != 0 {
            // A backlog's wake-up is never owed: it is for a job beyond the one its spawner
            // runs next (README, "Backlog").
            self.wake_for_backlog_if_any(local_len);
            return SpawnWake::Settled;
        }
        // The wake-up is made at once unless the job is alone on the deque, an alarm
        // watches (no debt may be made before: `pool/workers/alarm_thread.rs`) and `may_owe`.
        let made = if local_len() != 1 {
            SpawnWake::Settled
        } else if !debts.watch.watched.load(Ordering::Relaxed) {
            SpawnWake::AlarmUnwatched
        } else if !may_owe {
            SpawnWake::MadeInsteadOfOwed
        } else {
            self.defer_wake(debts, me);
            return SpawnWake::Owed;
        };
        self.wake_searcher();
        made
    }

    #[cold]
    fn defer_wake(&self, debts: &Debts, me: usize) {
        let counters = &self.counters[me];
        counters.deferred.store(
            counters.deferred.load(Ordering::Relaxed) + 1,
            Ordering::Relaxed,
        );
        debts.owe(me, debts.stamp(me, now_ns), now_ns);
    }

    /// Worker `me` is out of work: its next owe, after however long, reads the clock.
    #[inline]
    pub(crate) fn forget_stamp(&self, me: usize) {
        if let Some(debts) = &self.debts {
            debts.stamps[me].forget();
        }
    }

    /// Worker `me` took back the job whose wake-up it owed, or found it taken: nobody needs
    /// waking for it. (No clock is read here, on the path of every link of a chain: the
    /// longest deferral is measured on debts that were paid.) Returns whether the alarm had
    /// made the wake-up already: the spawning job ran past the bound.
    #[inline]
    pub(crate) fn void_debt(&self, me: usize) -> bool {
        match &self.debts {
            Some(debts) => debts.void(me),
            None => false,
        }
    }

    /// Worker `me` goes on to something else before the job whose wake-up it owes: the
    /// wake-up is made now. Returns whether the alarm had made it already.
    #[cold]
    pub(crate) fn pay_debt(&self, me: usize) -> bool {
        let Some(debts) = &self.debts else {
            return false;
        };
        let since = debts.claim(me);
        if since == 0 {
            return true;
        }
        debts.record(now_ns().saturating_sub(since));
        self.make_owed_wake(me);
        false
    }

    /// About to park: clears the alarm unless a debt needs it, so that it does not wake the
    /// watching thread for nothing after a chain ends.
    pub(crate) fn release_alarm(&self) {
        if let Some(debts) = &self.debts {
            if debts.armed.load(Ordering::Relaxed) != 0 {
                debts.rearm(now_ns(), None);
            }
        }
    }

    /// The alarm and its thread's flags, for the thread that watches it (`Watch::run`).
    pub(crate) fn watch(&self) -> Option<Arc<Watch>> {
        self.debts.as_ref().map(|debts| Arc::clone(&debts.watch))
    }

    /// The alarm fired at `now`: pays the debts due, sets it for the next one.
    pub(crate) fn alarm_fired(&self, now: u64) {
        let Some(debts) = &self.debts else { return };
        debts.rearm(now, Some(&|worker| self.make_owed_wake(worker)));
    }

    /// Makes the wake-up worker `worker` owed, claimed by its owner or the alarm.
    fn make_owed_wake(&self, worker: usize) {
        self.counters[worker].paid.fetch_add(1, Ordering::Relaxed);
        self.notify_searching();
    }

    /// Every worker has exited: the watching thread returns.
    pub(crate) fn stop_watching(&self) {
        if let Some(debts) = &self.debts {
            debts.watch.stopped.store(true, Ordering::SeqCst);
            debts.watch.alarm.set(1);
        }
    }

    /// The longest time a wake-up stayed owed.
    pub(crate) fn longest_deferral(&self) -> std::time::Duration {
        std::time::Duration::from_nanos(
            self.debts
                .as_ref()
                .map_or(0, |debts| debts.longest.load(Ordering::Relaxed)),
        )
    }

    /// The debts, for a model to drive and check.
    #[cfg(all(test, loom))]
    pub(crate) fn debts(&self) -> &Debts {
        self.debts.as_ref().expect("a pool that defers wake-ups")
    }

    /// The same, to switch a step off in a mutant before the model starts.
    #[cfg(all(test, loom))]
    pub(crate) fn debts_mut(&mut self) -> &mut Debts {
        self.debts.as_mut().expect("a pool that defers wake-ups")
    }
}

/// The steps of [`Debts::owe`] and [`Sleep::notify_spawned`] that the loom mutants switch off one
/// at a time.
#[derive(Clone, Copy)]
pub(crate) struct Steps {
    /// The fence between the debt and the look at the alarm.
    pub(crate) owe_fence: bool,
    /// Setting the alarm for the debt when it is clear, due soon, or too late.
    pub(crate) owe_sets_alarm: bool,
    /// Replacing a stale stamp only if the debt is still the one stamped (a plain store
    /// when off).
    pub(crate) restamp_if_owed: bool,
    /// The fence of a spawn's push before its look at the sleepers and the searchers
    /// (`Sleep::notify_spawned`).
    pub(crate) spawn_fence: bool,
}

impl Steps {
    pub(crate) const ALL: Steps = Steps {
        owe_fence: true,
        owe_sets_alarm: true,
        restamp_if_owed: true,
        spawn_fence: true,
    };
}

/// A pool's alarm and the flags of the thread that waits for it.
pub(crate) struct Watch {
    alarm: Alarm,
    /// A thread waits for the alarm; until then no wake-up is deferred.
    watched: AtomicBool,
    /// The pool's workers have all exited: the watching thread returns.
    stopped: AtomicBool,
}

impl Watch {
    /// Whether the pool's workers have all exited.
    pub(crate) fn is_stopped(&self) -> bool {
        self.stopped.load(Ordering::SeqCst)
    }

    /// The watching thread's loop: calls `fired` each time the alarm fires (it pays the debts
    /// due: [`Sleep::alarm_fired`]), until the pool stops it ([`Sleep::stop_watching`]) or
    /// `fired` returns `false` (the pool is gone). Marks the alarm watched first.
    pub(crate) fn run(&self, mut fired: impl FnMut() -> bool) {
        self.watched.store(true, Ordering::Relaxed);
        // Checked before each wait too: a stop that set the alarm while `fired` ran may have
        // been cleared by that very pass (`rearm` clears an alarm no debt needs), and would
        // not fire again. (The model
        // `loom_owed_wake_of_a_blocked_spawner_is_made_by_the_alarm` hangs without it.)
        while !self.stopped.load(Ordering::SeqCst) {
            self.alarm.wait();
            if self.stopped.load(Ordering::SeqCst) || !fired() {
                return;
            }
        }
    }
}

#[cfg(all(test, loom))]
impl Debts {
    /// Marks the alarm watched: the model's own thread waits for it.
    pub(crate) fn mark_watched(&self) {
        self.watch.watched.store(true, Ordering::Relaxed);
    }

    /// Whether worker `me` owes a wake-up.
    pub(crate) fn owed(&self, me: usize) -> bool {
        self.since[me].load(Ordering::SeqCst) != 0
    }

    /// Whether the alarm is set to fire.
    pub(crate) fn alarm_is_set(&self) -> bool {
        self.watch.alarm.is_set()
    }
}

#[cfg(all(test, not(loom), target_os = "linux"))]
mod tests {
    use super::{Debts, Stamp};
    use std::cell::Cell;

    /// The bound of every test's debts (the default, 100 µs).
    const BOUND: u64 = 100_000;

    fn debts(workers: usize) -> Debts {
        Debts::new(workers, BOUND).expect("a timerfd")
    }

    /// A debt stamped after the alarm's "now" (a clock that jumped back) is paid at the
    /// alarm's next pass, and meanwhile the alarm is set no later than the bound from that
    /// "now": a stamp past the jump must not put its deadline past it too.
    #[test]
    fn a_debt_stamped_in_the_future_is_paid_not_held() {
        let debts = debts(2);
        let now = 1_000_000_000;
        let future = now + 3_600_000_000_000;
        debts.owe(1, Stamp::fresh(future), || future);
        debts.rearm(now, None);
        let armed = debts.armed.load(std::sync::atomic::Ordering::Relaxed);
        assert!(
            armed != 0 && armed <= now + BOUND,
            "alarm set for {armed}, past the bound from {now}"
        );
        let paid = Cell::new(None);
        debts.rearm(now, Some(&|worker| paid.set(Some(worker))));
        assert_eq!(
            paid.get(),
            Some(1),
            "the debt stamped in the future was not paid"
        );
        assert_eq!(debts.since[1].load(std::sync::atomic::Ordering::Relaxed), 0);
    }

    /// Nor do other workers' re-arms slide its deadline along with their "now": each
    /// leaves the alarm due at once.
    #[test]
    fn re_arms_do_not_slide_a_future_stamped_debt() {
        let debts = debts(2);
        let now = 1_000_000_000;
        debts.owe(1, Stamp::fresh(now + 3_600_000_000_000), || {
            now + 3_600_000_000_000
        });
        for k in 0..5 {
            let later = now + k * BOUND * 4 / 5;
            debts.rearm(later, None);
            let armed = debts.armed.load(std::sync::atomic::Ordering::Relaxed);
            assert!(
                armed != 0 && armed <= later,
                "re-arm {k} at {later} set the alarm for {armed}, not due at once"
            );
        }
    }

    /// A reused reading found stale when the owe sets the alarm (a long link since it was
    /// taken) is replaced by the fresh one, so the debt is not taken for one long due; one
    /// within a tenth of the bound is kept.
    #[test]
    fn a_stale_reused_stamp_is_renewed_when_the_alarm_is_set() {
        use std::sync::atomic::Ordering::Relaxed;
        let debts = debts(2);
        let stale = 1_000_000_000;
        let now = stale + 5 * BOUND;
        let reused = |at| Stamp { at, reused: true };
        debts.owe(0, reused(stale), || now);
        assert_eq!(debts.since[0].load(Relaxed), now, "the stale stamp stayed");
        assert_eq!(debts.armed.load(Relaxed), now + BOUND);
        debts.void(0);
        debts.rearm(now, None);
        let recent = now - BOUND / 20;
        debts.owe(1, reused(recent), || now);
        assert_eq!(debts.since[1].load(Relaxed), recent);
        assert_eq!(debts.armed.load(Relaxed), recent + BOUND);
    }

    /// A re-stamp also renews the worker's reading, and a payment by the owner forgets it:
    /// either way its next owe reads the clock instead of reusing the old reading.
    #[test]
    fn a_re_stamp_or_a_payment_ends_the_reuse_of_a_reading() {
        let debts = debts(1);
        let primed = |at: u64| {
            // Two readings 100 ns apart: the second is reused for the next owe.
            debts.stamps[0].forget();
            debts.stamp(0, || at);
            debts.stamp(0, || at + 100);
            let reused = debts.stamp(0, || unreachable!("reused"));
            assert_eq!(
                reused,
                Stamp {
                    at: at + 100,
                    reused: true
                }
            );
            reused
        };
        let stamp = primed(1_000_000_000);
        let fresh = stamp.at + 5 * BOUND;
        debts.owe(0, stamp, || fresh);
        assert_eq!(
            debts.stamp(0, || fresh + 7).at,
            fresh + 7,
            "reused after a re-stamp"
        );
        debts.void(0);
        debts.rearm(fresh, None);
        let stamp = primed(fresh + 1_000);
        debts.owe(0, stamp, || stamp.at);
        assert_eq!(debts.claim(0), stamp.at);
        assert_eq!(
            debts.stamp(0, || stamp.at + 9).at,
            stamp.at + 9,
            "reused after a payment"
        );
    }

    /// A debt that is neither due nor in the future stays owed through the alarm's pass.
    #[test]
    fn a_young_debt_is_not_paid() {
        let debts = debts(2);
        let now = 1_000_000_000;
        debts.owe(0, Stamp::fresh(now), || now);
        let paid = Cell::new(None);
        debts.rearm(now + BOUND / 2, Some(&|worker| paid.set(Some(worker))));
        assert_eq!(paid.get(), None);
        assert_eq!(
            debts.armed.load(std::sync::atomic::Ordering::Relaxed),
            now + BOUND
        );
    }

    /// A chain of `links` links on one worker, its pace drawn by `link` (ns, from a seeded
    /// generator) on a fake clock; each link ends by voiding the last debt and owing the
    /// next, with the stamps the worker would use, and the alarm fires whenever the clock
    /// passes it. Returns (alarm firings that paid nothing, debts paid before their bound,
    /// clock reads).
    fn chain(links: u64, mut link: impl FnMut(&mut dyn FnMut() -> u64) -> u64) -> (u64, u64, u64) {
        use std::sync::atomic::Ordering::Relaxed;
        let debts = debts(1);
        let clock = Cell::new(1_000_000_000u64);
        let reads = Cell::new(0);
        let read = || {
            reads.set(reads.get() + 1);
            clock.get()
        };
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        let mut random = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        let (mut for_nothing, mut early, mut owed_at) = (0, 0, 0);
        for _ in 0..links {
            let end = clock.get() + link(&mut random);
            loop {
                let armed = debts.armed.load(Relaxed);
                if armed == 0 || armed > end {
                    break;
                }
                clock.set(clock.get().max(armed));
                let paid = Cell::new(false);
                debts.rearm(clock.get(), Some(&|_| paid.set(true)));
                if !paid.get() {
                    for_nothing += 1;
                } else if clock.get() - owed_at < BOUND {
                    early += 1;
                }
            }
            clock.set(end);
            debts.void(0);
            owed_at = clock.get();
            let stamp = debts.stamp(0, read);
            debts.owe(0, stamp, read);
        }
        (for_nothing, early, reads.get())
    }

    /// Reused readings keep the alarm ahead of a chain at steady and jittery paces with links
    /// well under a fifth of the bound (it never fires for nothing, no debt is paid early)
    /// and read the clock for a few owes in a hundred at 100 ns a link. A pace that swings
    /// between short and 50 times longer links makes it fire for nothing now and then, and
    /// pay a few debts early, costs the docs state; a fresh reading per owe would not. (Each
    /// debt stays owed for its whole link, as a job's that spawns and runs on; a chain's
    /// would be voided at the next pop.)
    #[test]
    fn reused_stamps_keep_the_alarm_ahead_of_a_chain() {
        let links = 100_000;
        for (mean, jitter) in [
            (100, 0),
            (100, 90),
            (600, 550),
            (1_250, 1_000),
            (2_500, 2_000),
            (3_000, 2_900),
            (5_000, 4_900),
            (9_000, 4_500),
        ] {
            let (for_nothing, early, reads) =
                chain(links, |random| mean - jitter + random() % (2 * jitter + 1));
            assert_eq!(
                (for_nothing, early),
                (0, 0),
                "{mean}±{jitter} ns a link: alarm firings for nothing, early payments"
            );
            if mean == 100 {
                assert!(reads < links / 20, "{reads} clock reads for {links} owes");
            }
        }
        let (for_nothing, early, _) = chain(
            links,
            |random| if random() % 10 == 0 { 10_000 } else { 200 },
        );
        assert!(
            for_nothing < links / 1_000 && early < links / 10_000,
            "a swinging pace: {for_nothing} firings for nothing, {early} early payments"
        );
    }
}
