//! The Searching policy's counter of searching workers (README: "Searching").

use super::{Sleep, WakeState};

/// The steps of wake-ups a burst is meant to reach its sleepers in (README, "Fan-out"): a
/// woken searcher `s` steps from the burst's first waker wakes at most this many minus `s`
/// sleepers itself, and hands the rest out as shares. Wide rather than binary: a wake-up's
/// latency (the wakee's start on another core) costs far more than making one more.
pub(crate) const FAN_OUT_STEPS: usize = 7;
/// The most wake-ups a pusher makes for its backlog in a burst (README, "Backlog"): fewer than
/// [`FAN_OUT_STEPS`], so that each searcher it wakes may still fan out several wide, whichever
/// of them the kernel runs first.
const BACKLOG_STEPS: usize = 3;
/// The fewest sleepers a woken searcher may wake itself, however many steps from the first
/// waker: two keep a large burst's tree of shares logarithmic in depth.
const LEAST_WIDTH: usize = 2;
use crate::sync::atomic::{fence, Ordering};

/// Wake-ups a worker makes within this long of the first of its burst belong to that burst:
/// their steps add up. Later ones start a burst afresh, one step from their waker.
const BURST_WINDOW_US: u64 = 1_000;

/// The latest wake-up a worker made in its current burst (README, "Fan-out"): its step, and
/// when the burst's first was made. Only its worker touches it, so plain atomics (not the
/// models' ones) do: it steers how wide a fan-out is, never whether anybody is woken.
#[derive(Default)]
pub(super) struct LatestStep {
    step: std::sync::atomic::AtomicUsize,
    since_us: std::sync::atomic::AtomicU64,
}

/// What a waker leaves a searcher it woke (`Sleep::woken_to_search`): the share of wake-ups
/// it hands it (README, "Fan-out") and its step (README, "Fan-out"). Stored as one word, never
/// zero: the share plus one in the low bits, the step in the top byte.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct WokenNote {
    pub(super) share: u16,
    pub(super) step: u8,
}

impl WokenNote {
    const STEP_SHIFT: u32 = usize::BITS - 8;

    /// A note of `share` and `step`, each clamped to its field: a share cut short only leaves
    /// more to the wakers that follow, and steps past 255 only steer widths.
    pub(super) fn new(share: usize, step: usize) -> Self {
        WokenNote {
            share: share.min(u16::MAX as usize) as u16,
            step: step.min(u8::MAX as usize) as u8,
        }
    }

    pub(super) fn word(self) -> usize {
        (self.share as usize + 1) | ((self.step as usize) << Self::STEP_SHIFT)
    }

    pub(super) fn read(word: usize) -> Self {
        WokenNote {
            share: ((word & ((1 << Self::STEP_SHIFT) - 1)) - 1) as u16,
            step: (word >> Self::STEP_SHIFT) as u8,
        }
    }
}

impl Sleep {
    /// A push: wake one sleeper, as a searcher, only if nobody is searching already.
    pub(super) fn notify_searching(&self) {
        // StoreLoad: order the push before reading the searcher count and the sleeper set.
        // A searcher that stops after this read re-checks the queues after its own fence and
        // sees the push; one that stopped before it is no longer counted (README).
        fence(Ordering::SeqCst);
        if self.num_searching.load(Ordering::SeqCst) == 0 && self.sleepers.len() != 0 {
            self.wake_searcher();
        }
    }

    /// Searching's rule for a push on the pusher's own deque, which now holds `local_len()`,
    /// read after its fence: a sleeper is woken if nobody searches, as for any push, or if
    /// the deque holds more jobs than the searchers and promised wake-ups cover, besides the
    /// one its pusher runs itself (README, "Backlog").
    ///
    /// Inlined at every push site is one load and one branch: with nobody asleep, as in a busy
    /// pool, there is nobody to wake. The rest is out of line. Two inlined checks with a call
    /// on each branch slowed every push of every policy, though they ran no more instructions
    /// (the lab's MEASUREMENTS.md, "Full width's cost on 2 cores"): the push sites are the
    /// hottest path there is, and their shape is part of their cost.
    #[inline(always)]
    pub(super) fn wake_for_local_push(&self, local_len: impl FnOnce() -> usize) {
        // Both loads come after the push's fence or light barrier, so either order would hold. A
        // sleeper missed here fences after its listing and sees the push; while a searcher is
        // counted, the last one to stop fences and looks (README, "Searching", "Light pushes").
        if self.sleepers.len() != 0 {
            self.wake_for_local_push_slow(local_len);
        }
    }

    /// A push that found somebody asleep: a searcher if nobody searches, else the backlog's
    /// wake-up if its deque holds one.
    #[cold]
    #[inline(never)]
    fn wake_for_local_push_slow(&self, local_len: impl FnOnce() -> usize) {
        if self.num_searching.load(Ordering::SeqCst) == 0 {
            self.wake_searcher();
        } else {
            self.wake_for_backlog_if_any(local_len);
        }
    }

    /// A push that found somebody searching: the backlog's wake-up, if its deque holds one
    /// (README, "Backlog"). A backlog needs three jobs at least: the pusher's own next, one for
    /// the searcher counted, one uncovered. The searchers counted cover the job pushed, so
    /// the count is not checked for zero again: should it have dropped to zero since the
    /// caller's read, the last searcher's look saw the job. Called only by a push that found
    /// somebody asleep.
    #[cold]
    #[inline(never)]
    pub(super) fn wake_for_backlog_if_any(&self, local_len: impl FnOnce() -> usize) {
        if !self.backlog_wakes() {
            return;
        }
        let local_len = local_len();
        if local_len >= 3 {
            self.wake_for_backlog(local_len);
        }
    }

    /// Whether a pusher wakes for its backlog: always, but in the loom mutant that shows what
    /// that step does (`mutant_backlog_waits_for_the_first_wakee`).
    #[inline(always)]
    pub(super) fn backlog_wakes(&self) -> bool {
        #[cfg(all(test, loom))]
        if !self.backlog_wakes {
            return false;
        }
        true
    }

    /// The backlog's wake-up (README, "Backlog"): a worker whose deque holds `local_len`
    /// jobs while somebody searches wakes one more sleeper as a searcher, under the sleeper
    /// set's lock, while the searchers and the promises, plus the job it runs itself, cover
    /// fewer. It wakes at the next step of its burst (one past its latest wake-up's), not beyond
    /// [`BACKLOG_STEPS`]: past that, the searchers it woke fan out themselves. Its wakee holds
    /// a share as wide as its own fan-out may be.
    #[cold]
    fn wake_for_backlog(&self, local_len: usize) {
        let uncovered = || {
            self.num_searching.load(Ordering::SeqCst) + self.promised.load(Ordering::SeqCst) + 1
                < local_len
        };
        if !uncovered() {
            return;
        }
        // A push on a worker's own deque is made on that worker.
        let Some(me) = self.current_worker() else {
            return;
        };
        let step = self.next_step(me);
        if step > BACKLOG_STEPS {
            return;
        }
        // The awake-core budget may withhold this wake-up (README, "Budget"). Then the burst's
        // backlog wakes nobody more: its next pushes would only ask the budget again.
        if !self.budget_allows_when(|| self.sleepers.len() != 0 && uncovered()) {
            self.note_step(me, step.max(BACKLOG_STEPS));
            return;
        }
        // Its share is its whole fan-out: a searcher that arrives before it then leaves it the
        // jobs it will wake for, rather than handing them further down a tree of its own.
        let note = WokenNote::new(self.fan_out_steps().saturating_sub(step), step);
        let woken = self
            .sleepers
            .pop_latest_if(uncovered, |index| self.count_woken(index, note));
        if let Some(index) = woken {
            self.note_step(me, step);
            self.unpark_listed(index);
        }
    }

    /// Wakes the most recently parked worker and counts it as a searcher, unless somebody is
    /// searching. The check and the count happen under the sleeper-set lock, so two wakers
    /// racing here never count two. Its wakee is one step past the waker's latest step if
    /// the waker is a worker of the pool that took that step within [`BURST_WINDOW_US`], one
    /// step from the waker otherwise, and always one step in a pool where steps steer no width
    /// ([`steps_steer`](Self::steps_steer); README, "Fan-out").
    #[cold]
    pub(super) fn wake_searcher(&self) {
        self.wake_searcher_past(0);
    }

    /// [`wake_searcher`](Self::wake_searcher), its wakee at least `least + 1` steps from the
    /// burst's first waker: a woken searcher's hand-off passes its own step.
    #[cold]
    fn wake_searcher_past(&self, least: usize) {
        let nobody_searches = || self.num_searching.load(Ordering::SeqCst) == 0;
        // The awake-core budget may withhold this wake-up (README, "Budget").
        if !self.budget_allows_when(|| self.sleepers.len() != 0 && nobody_searches()) {
            return;
        }
        // Where steps steer no width, this wake-up is not one of the waker's burst: it
        // reads neither the waker's index nor the clock (`steps_steer`), and notes no step.
        let me = if self.steps_steer() {
            self.current_worker()
        } else {
            None
        };
        let step = me.map_or(1, |me| self.next_step(me)).max(least + 1);
        let note = WokenNote::new(0, step);
        let woken = self
            .sleepers
            .pop_latest_if(nobody_searches, |index| self.count_woken(index, note));
        if let Some(index) = woken {
            if let Some(me) = me {
                self.note_step(me, step);
            }
            self.unpark_listed(index);
        }
    }

    /// The step of the next wake-up worker `me` makes: one past its latest, if its burst
    /// began within [`BURST_WINDOW_US`]; else one, and a burst begins now (README,
    /// "Fan-out").
    fn next_step(&self, me: usize) -> usize {
        use std::sync::atomic::Ordering::Relaxed;
        let latest = &self.latest_step[me];
        let now = self.now_us();
        if now.saturating_sub(latest.since_us.load(Relaxed)) <= BURST_WINDOW_US {
            latest.step.load(Relaxed) + 1
        } else {
            self.begin_burst(me, now);
            1
        }
    }

    /// Whether steps steer any fan-out's width: only in a pool of more than
    /// [`LEAST_WIDTH`] + 1 workers. In a smaller one every fan-out may wake all the others
    /// whatever its step, so a push's or hand-off's wake-up (`wake_searcher_past`) reads no
    /// clock there. That read, on the pusher's path between its push and its next pop, made
    /// a worker woken for a token passed between two workers sleep far more often (the lab's
    /// MEASUREMENTS.md, "Full width's cost on 2 cores"). The backlog's wake-ups still count
    /// steps in every pool: their cap is not a width.
    #[inline(always)]
    fn steps_steer(&self) -> bool {
        self.workers > LEAST_WIDTH + 1
    }

    /// Microseconds on the clock of [`LatestStep`].
    fn now_us(&self) -> u64 {
        self.epoch.elapsed().as_micros() as u64
    }

    /// Worker `me`'s burst begins at `now` ([`now_us`](Self::now_us)), with no step taken
    /// yet: a wake-up that does not come to pass leaves the next one at the burst's first step.
    fn begin_burst(&self, me: usize, now: u64) {
        use std::sync::atomic::Ordering::Relaxed;
        let latest = &self.latest_step[me];
        latest.since_us.store(now, Relaxed);
        latest.step.store(0, Relaxed);
    }

    /// Worker `me` made a wake-up `step` steps from its burst's first waker.
    fn note_step(&self, me: usize, step: usize) {
        self.latest_step[me]
            .step
            .store(step, std::sync::atomic::Ordering::Relaxed);
    }

    /// Counts sleeper `index`, just taken out of the sleeper set under its lock, as a
    /// searcher woken with `note`: its count, its share in `promised` (which ends with its
    /// search, README "Fan-out", step 1), and the note it reads when it wakes.
    pub(super) fn count_woken(&self, index: usize, note: WokenNote) {
        self.num_searching.fetch_add(1, Ordering::SeqCst);
        if note.share > 0 {
            self.promised
                .fetch_add(note.share as usize, Ordering::SeqCst);
        }
        self.woken_to_search[index].store(note.word(), Ordering::SeqCst);
    }

    /// [`FAN_OUT_STEPS`], or a model's smaller bound, so that a few workers need shares.
    #[inline(always)]
    fn fan_out_steps(&self) -> usize {
        #[cfg(all(test, loom))]
        return self.model_fan_out_steps;
        #[cfg(not(all(test, loom)))]
        FAN_OUT_STEPS
    }

    /// A woken searcher's fan-out (README, "Fan-out"): wakes sleepers for the `jobs` that
    /// neither a searcher nor a promised wake-up covers. A waker `step` steps from the first
    /// waker wakes up to [`FAN_OUT_STEPS`] minus `step` itself (at least [`LEAST_WIDTH`]) and
    /// hands out what is beyond them as shares: half the excess to the first wakee, half the
    /// rest to the next, all that is left to the last. All are chosen before the first is
    /// unparked, so the tree does not depend on which wakee the kernel runs first, nor on
    /// whether one preempts its waker. Returns whether it woke anybody.
    #[cold]
    fn fan_out(&self, jobs: usize, step: usize) -> bool {
        let width = self.fan_out_steps().saturating_sub(step).max(LEAST_WIDTH);
        let mut chosen = [0; FAN_OUT_STEPS];
        let width = width.min(chosen.len());
        let mut count = 0;
        for turn in 1..=width {
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
                    // Beyond this wakee's own job: what the turns after this one can wake
                    // themselves needs no share.
                    let rest = left.saturating_sub(1);
                    let whole = if turn == width {
                        rest
                    } else {
                        rest.saturating_sub(width - turn).div_ceil(2)
                    };
                    share.set(whole);
                    left > 0
                },
                |index| self.count_woken(index, WokenNote::new(share.get(), step + turn)),
            );
            match woken {
                Some(index) => chosen[count] = index,
                None => break,
            }
            count += 1;
        }
        if count > 0 {
            if let Some(me) = self.current_worker() {
                // Its burst is the one it was woken for: a hand-off or push of its own, later
                // in the window, goes on from here.
                self.begin_burst(me, self.now_us());
                self.note_step(me, step + count);
            }
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
    /// A searcher that was woken fans out instead: it wakes more (up to [`FAN_OUT_STEPS`]), while the
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
        let woke = woken && self.fans_out() && self.fan_out(jobs, me.step as usize);
        #[cfg(all(test, loom))]
        if !self.promise_guards {
            if last && !woken {
                self.wake_searcher();
            }
            return;
        }
        if last && !woke {
            // A woken searcher's hand-off is a step past its own.
            self.wake_searcher_past(if woken { me.step as usize } else { 0 });
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

#[cfg(all(test, not(loom)))]
mod tests {
    use super::WokenNote;
    use crate::config::PoolConfig;
    use crate::wake::{Sleep, WakePolicy};

    #[test]
    fn a_push_wake_in_a_pool_too_small_for_steps_to_steer_a_width_is_step_one() {
        for (workers, step) in [(2, 1), (3, 1), (4, 5)] {
            let sleep =
                Sleep::for_pool(&PoolConfig::for_model(WakePolicy::Searching, workers), None);
            sleep.enter(0);
            // A burst of worker 0 that began at the clock's end: still in its window, so a
            // step past the noted one, wherever steps are kept.
            sleep.begin_burst(0, u64::MAX);
            sleep.note_step(0, 4);
            sleep.sleepers.insert(1);
            sleep.wake_searcher();
            Sleep::exit();
            let note = sleep.woken_to_search[1].load(std::sync::atomic::Ordering::SeqCst);
            assert_eq!(
                WokenNote::read(note).step as usize,
                step,
                "{workers} workers"
            );
        }
    }

    #[test]
    fn a_note_reads_back_as_written_and_is_never_zero() {
        for share in [0, 1, 255, 256, 0x7fff, u16::MAX - 1, u16::MAX] {
            for step in [0, 1, 7, 8, 254, u8::MAX] {
                let note = WokenNote { share, step };
                assert_ne!(note.word(), 0);
                assert_eq!(WokenNote::read(note.word()), note);
            }
        }
    }

    #[test]
    #[cfg(target_pointer_width = "64")]
    fn the_wake_state_stays_two_words() {
        assert!(std::mem::size_of::<super::super::WakeState>() <= 2 * std::mem::size_of::<usize>());
    }
}
