//! Wake policies: who is woken when work appears, and when a worker may go to sleep.
//!
//! The protocol of each policy, its invariants and the argument that no wake-up is lost are in
//! `README.md` beside this file (included below). This module is the only place where a worker
//! decides to sleep or to wake another; the pool calls it at six points:
//!
//! | pool event | call |
//! | --- | --- |
//! | a job pushed on the global injector | [`Sleep::notify_injected`] |
//! | a job pushed on a worker's own deque | [`Sleep::notify_local`] |
//! | a `join`'s second half pushed there, behind a light barrier (Searching) | [`Sleep::notify_join_half`] |
//! | a worker's own deque is empty, it may look elsewhere | [`Sleep::start_searching`] |
//! | a worker took a job (own deque or elsewhere) | [`Sleep::found_work`] |
//! | a worker found nothing anywhere | [`Sleep::sleep`] |
//!
//! plus [`Sleep::wake_worker`] for a latch whose waiter is a worker, and [`Sleep::wake_all`]
//! at shutdown.
//!
//! The struct is written against `crate::sync`, so the loom models in `src/loom/` drive this
//! very code.
#![doc = include_str!("README.md")]

mod biased;
mod budget;
mod deferred;
mod notes;
mod searching;
pub(crate) mod stamp;

pub(crate) use notes::Woken;

pub(crate) use deferred::{SpawnWake, DEFAULT_DEFER_NS, SPAWNS_WAKING_AFTER_ALARM};

use crossbeam_utils::CachePadded;

use crate::config::PoolConfig;
use crate::park::{Parker, SleeperSet};
use crate::sync::asymmetric::{self, Barrier};
use crate::sync::atomic::{fence, AtomicBool, AtomicU64, AtomicUsize, Ordering};
use searching::WokenNote;

/// Which workers a pool wakes when work appears.
///
/// ```
/// let pool = ember::Pool::builder()
///     .threads(2)
///     .wake(ember::WakePolicy::Biased { batch: 20 })
///     .build()
///     .unwrap();
/// let (a, b) = pool.join(|| 1, || 2);
/// assert_eq!(a + b, 3);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum WakePolicy {
    /// Every push that finds a sleeper wakes one, the most recently parked. A channel-fed
    /// pool does the same: under light load, almost every item costs a wake-up.
    Eager,
    /// The Go/Tokio rule. A push wakes a sleeper only if no worker is searching for work. A
    /// searcher that finds work stops searching; if it was the last one, it wakes one more.
    /// At most half the workers search at once. The most recently parked worker wakes.
    Searching,
    /// The biased work queue. Workers are numbered. Only worker 0 is woken for new work on
    /// the global queue. The lowest-numbered sleeper is woken only when a running worker is
    /// overloaded: it took `batch` jobs in a row without sleeping, or its own deque holds
    /// `batch` jobs. Low-numbered workers stay hot. High-numbered ones wake only under
    /// sustained load, and sleep first when it falls. Use it for streams of many small jobs.
    ///
    /// Hazards. A job waits behind up to about `batch` others before a second worker joins
    /// in. A job that blocks its thread (on I/O, a lock, a channel fed by another job) holds
    /// up the jobs queued behind it until its worker is overloaded or frees up. If it waits
    /// for one of them, it waits forever: a `join` whose first half receives from a channel
    /// its second half sends on hangs an otherwise idle Biased pool (`batch` above 1).
    /// Waiting through [`Pool::join`](crate::Pool::join) or
    /// [`Pool::scope`](crate::Pool::scope) is safe: the waiting worker runs the queued jobs
    /// itself. Coarse fork-join runs serially: `join(a, b)` with two 200 ms halves takes
    /// 400 ms on an idle pool, because one pushed half is not overload.
    Biased {
        /// Jobs a worker takes in a row before it wakes the next one. Must be at least 1.
        batch: usize,
    },
}

impl Default for WakePolicy {
    /// [`WakePolicy::Searching`]: the one policy with no workload it handles badly. Coarse
    /// `join` halves run in parallel at once, and no job waits behind a blocked one. It
    /// wakes far less than [`Eager`](WakePolicy::Eager). [`Biased`](WakePolicy::Biased)
    /// wakes less still for streams of small jobs, and is the better choice there; see
    /// "Choosing a wake policy" in the crate docs.
    fn default() -> Self {
        WakePolicy::Searching
    }
}

/// What one worker carries between calls into [`Sleep`]; owned by that worker alone.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct WakeState {
    /// Counted in `Sleep::num_searching` (Searching only).
    searching: bool,
    /// Jobs taken since this worker last slept or was last counted overloaded, up to the
    /// policy's `batch` (Biased only).
    streak: usize,
    /// A waker took this worker out of the sleeper set for a queued job (Eager and Biased;
    /// Searching counts it as a searcher instead), and it has not passed that on yet.
    picked: bool,
    /// A waker counted this worker as a searcher and woke it, and it has not found work
    /// since (Searching): the job it finds first is where it fans out (README, "Fan-out").
    woken: bool,
    /// The wake-ups this worker was handed to make, if `woken` (README, "Fan-out").
    /// A `u16` and a `u8` beside the flags keep the state two words, which every look for
    /// work and every sleep copies.
    share: u16,
    /// How many steps of wake-ups this worker is from the first waker of its burst, if
    /// `woken` (README, "Fan-out"): it bounds how many it wakes itself.
    step: u8,
    /// This worker is listed in `Sleep::light_pushers` (README, "Light pushes"): it may have
    /// pushed a `join` half with a light barrier since it last went to sleep.
    light_pushes: bool,
}

impl WakeState {
    /// Whether this worker is listed as a light pusher (README, "Light pushes").
    #[inline(always)]
    pub(crate) fn light_pushes(&self) -> bool {
        self.light_pushes
    }
}

/// Wake-up counters of one worker.
#[derive(Default)]
pub(crate) struct WakeCounters {
    /// Wake-ups aimed at this worker (by any thread).
    pub(crate) issued: AtomicU64,
    /// Times this worker blocked and was woken.
    pub(crate) received: AtomicU64,
    /// Times this worker blocked.
    pub(crate) parks: AtomicU64,
    /// Wake-ups of jobs this worker spawned that it owed instead of making (`deferred.rs`).
    pub(crate) deferred: AtomicU64,
    /// Those of them made after all: at its next push, or by the alarm.
    pub(crate) paid: AtomicU64,
}

/// The sleep/wake state of one pool.
pub(crate) struct Sleep {
    policy: WakePolicy,
    workers: usize,
    /// On a line of its own: its lock and count are written at every sleep and wake-up, and
    /// the fields read at every push (the policy, the flags) would otherwise share it.
    sleepers: CachePadded<SleeperSet>,
    pub(crate) parkers: Box<[CachePadded<Parker>]>,
    /// Workers counted as searching (Searching only), including those woken to search.
    num_searching: CachePadded<AtomicUsize>,
    /// Set by a waker that counted worker `i` in `num_searching` before unparking it: 0 if
    /// none did, else a `WokenNote`: the share of the fan-out it was handed and its step
    /// (README, "Fan-out").
    woken_to_search: Box<[AtomicUsize]>,
    /// Worker `i`'s latest step in a burst (README, "Fan-out"). Only worker `i` touches it.
    latest_step: Box<[CachePadded<searching::LatestStep>]>,
    /// When the pool's wake state was made: the clock of `latest_step`.
    epoch: std::time::Instant,
    /// Wake-ups that woken searchers were handed as their share of a fan-out and have not
    /// passed on yet (README, "Fan-out").
    promised: CachePadded<AtomicUsize>,
    /// Worker `i` may have pushed a `join` half with only a light barrier since it last went
    /// to sleep (Searching; README, "Light pushes"), or may hold private halves (lazy joins;
    /// README, "Private steals"). Whoever relies on seeing its pushes issues a heavy barrier
    /// first while any is set.
    light_pushers: Box<[CachePadded<AtomicBool>]>,
    /// Searching, and the system has the heavy barrier (`light_join_pushes`).
    light_join_pushes: bool,
    /// Lazy joins, and the system has the heavy barrier: a worker about to sleep may steal a
    /// private `join` half (README, "Private steals"), whose owner is listed in
    /// `light_pushers` while it may hold one.
    private_steals: bool,
    /// The light and heavy barriers of light pushes.
    pub(crate) barrier: Barrier,
    /// Off only in the loom mutant that shows what the hand-off's heavy barrier guards.
    #[cfg(all(test, loom))]
    pub(crate) hand_off_heavy: bool,
    /// Off only in the loom mutant that shows what the fan-out does.
    #[cfg(all(test, loom))]
    pub(crate) fan_out: bool,
    /// Off only in the loom mutant that shows what guards a fan-out's promises: a share that
    /// ends with its holder's search, and a last searcher that wakes one whatever they say.
    #[cfg(all(test, loom))]
    pub(crate) promise_guards: bool,
    /// `FAN_OUT_STEPS` in the models, which may lower it so that a few workers need shares.
    #[cfg(all(test, loom))]
    pub(crate) model_fan_out_steps: usize,
    /// Off only in the loom mutant that shows what a pusher's backlog wake-ups do.
    #[cfg(all(test, loom))]
    pub(crate) backlog_wakes: bool,
    /// Spawned jobs' owed wake-ups and their alarm (Searching with `defer_wakeups`, several
    /// workers, where the system has an alarm; `deferred.rs`).
    debts: Option<deferred::Debts>,
    counters: Box<[CachePadded<WakeCounters>]>,
    /// Who woke each worker last, and when (`notes.rs`).
    notes: Box<[notes::WakeNote]>,
    /// The trace's epoch, on a pool that traces: wake-ups then note their time too.
    trace_epoch: Option<std::time::Instant>,
    /// No more workers than the process has processors, or too few for a wide stretch
    /// ([`WIDE_STRETCH_OTHERS`]), where the count is not read (`wide_stretch`).
    fits_the_machine: bool,
    /// The pool's place in the awake-core budget, if it joined (`budget.rs`; README,
    /// "Budget"). Set once, before any worker starts.
    budget: std::sync::OnceLock<budget::BudgetLink>,
}

/// The other workers a wide stretch needs awake at least (`Sleep::wide_stretch`): a pool of
/// this many workers or fewer is never in one.
const WIDE_STRETCH_OTHERS: usize = 2;

impl Sleep {
    /// The wake-up state of a pool without lazy joins.
    #[cfg(all(test, loom))]
    pub(crate) fn new(policy: WakePolicy, workers: usize) -> Self {
        Self::for_pool(&PoolConfig::for_model(policy, workers), None)
    }

    /// The wake-up state of a pool configured by `config`: its workers and policy, with or
    /// without lazy joins (private steals), deferring spawned jobs' wake-ups for at most
    /// `config.defer_ns` or not (`Tuning::defer_wakeups`; Searching only). A pool that traces
    /// passes its trace's epoch, so that wake-ups note their time on the trace's clock.
    pub(crate) fn for_pool(config: &PoolConfig, trace_epoch: Option<std::time::Instant>) -> Self {
        let (policy, workers) = (config.wake, config.workers);
        Sleep {
            policy,
            workers,
            sleepers: CachePadded::new(SleeperSet::new(workers)),
            parkers: (0..workers)
                .map(|_| CachePadded::new(Parker::new()))
                .collect(),
            num_searching: CachePadded::new(AtomicUsize::new(0)),
            woken_to_search: (0..workers).map(|_| AtomicUsize::new(0)).collect(),
            latest_step: (0..workers)
                .map(|_| CachePadded::new(searching::LatestStep::default()))
                .collect(),
            epoch: std::time::Instant::now(),
            promised: CachePadded::new(AtomicUsize::new(0)),
            light_pushers: (0..workers)
                .map(|_| CachePadded::new(AtomicBool::new(false)))
                .collect(),
            light_join_pushes: matches!(policy, WakePolicy::Searching) && asymmetric::available(),
            private_steals: config.lazy_joins && workers > 1 && asymmetric::available(),
            barrier: Barrier::default(),
            #[cfg(all(test, loom))]
            hand_off_heavy: true,
            #[cfg(all(test, loom))]
            fan_out: true,
            #[cfg(all(test, loom))]
            promise_guards: true,
            #[cfg(all(test, loom))]
            model_fan_out_steps: searching::FAN_OUT_STEPS,
            #[cfg(all(test, loom))]
            backlog_wakes: true,
            debts: config
                .defer_ns
                .filter(|_| workers > 1 && matches!(policy, WakePolicy::Searching))
                .and_then(|defer_ns| deferred::Debts::new(workers, defer_ns)),
            counters: (0..workers)
                .map(|_| CachePadded::new(WakeCounters::default()))
                .collect(),
            notes: (0..workers).map(|_| notes::WakeNote::new()).collect(),
            trace_epoch,
            // A pool too small for a wide stretch skips the read: `available_parallelism`
            // reads the building thread's affinity mask and the cgroup's files, a few system
            // calls and tens of microseconds.
            fits_the_machine: workers <= WIDE_STRETCH_OTHERS
                || workers
                    <= std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get),
            budget: std::sync::OnceLock::new(),
        }
    }

    pub(crate) fn policy(&self) -> WakePolicy {
        self.policy
    }

    pub(crate) fn counters(&self, worker: usize) -> &WakeCounters {
        &self.counters[worker]
    }

    /// A job was pushed on the global injector (by anyone).
    pub(crate) fn notify_injected(&self) {
        match self.policy {
            WakePolicy::Eager => self.notify_eager(),
            WakePolicy::Searching => self.notify_searching(),
            WakePolicy::Biased { .. } => self.notify_biased_injected(),
        }
    }

    /// Worker-side: a job was pushed on the caller's own deque, which now holds `local_len()`
    /// (asked only where a policy needs it: Biased's batch, Searching's backlog).
    ///
    /// Under Eager and Searching every such push gets the full Dekker ordering (README,
    /// "Pushing"): the push, a `SeqCst` fence, then the policy's check. That is what lets the
    /// job that pushed it wait for it outside ember — a spawned sibling, or the second half of
    /// a `join` whose first half waits for it. Biased leaves a pushed job to its pusher unless
    /// the deque holds a whole batch, and fences only then, before its wake-up (README,
    /// "Biased").
    #[inline]
    pub(crate) fn notify_local(&self, local_len: impl FnOnce() -> usize) {
        self.notify_local_fenced_or_not(local_len, true);
    }

    /// [`notify_local`](Self::notify_local) without its fence: only for the loom mutant that
    /// shows what the fence guards (`mutant_unfenced_spawn_is_lost`). `join` once pushed its
    /// second half this way, and a first half waiting for it hung.
    #[cfg(all(test, loom))]
    pub(crate) fn notify_local_unfenced(&self, local_len: impl FnOnce() -> usize) {
        self.notify_local_fenced_or_not(local_len, false);
    }

    /// The body of both: `fenced` is a constant at each call, folded away once inlined.
    #[inline(always)]
    fn notify_local_fenced_or_not(&self, local_len: impl FnOnce() -> usize, fenced: bool) {
        match self.policy {
            WakePolicy::Eager => {
                if fenced {
                    fence(Ordering::SeqCst);
                }
                self.wake_latest_if_any();
            }
            WakePolicy::Searching => {
                if fenced {
                    fence(Ordering::SeqCst);
                }
                self.wake_for_local_push(local_len);
            }
            // The pusher runs its own deque before it sleeps; overload wake-ups only add
            // parallelism and carry their own fence (README, "Biased").
            WakePolicy::Biased { batch } => self.notify_biased_local(batch, local_len()),
        }
    }

    /// Whether a worker about to sleep may steal another's private `join` half (README,
    /// "Private steals"): lazy joins, where the system has the heavy barrier.
    #[inline]
    pub(crate) fn private_steals(&self) -> bool {
        self.private_steals
    }

    /// Whether this pool pushes the second half of a `join` with a light barrier
    /// ([`notify_join_half`](Self::notify_join_half)) rather than `notify_local`'s fence:
    /// under Searching, the default, where the system offers the heavy barrier (README,
    /// "Light pushes"). Eager keeps the fence: its pick pass-on relies on it as well. Biased
    /// does not fence such a push anyway.
    #[inline]
    pub(crate) fn light_join_pushes(&self) -> bool {
        self.light_join_pushes
    }

    /// Worker-side, before worker `index`'s first light push since it last went to sleep:
    /// lists it in `light_pushers`, then a `SeqCst` fence. This listing, and each later
    /// push's look at the sleeper set, pair with a sleeper's listing and its look at
    /// `light_pushers` (a Dekker pattern). A sleeper that misses this listing is seen by
    /// every later push's check (README, "Light pushes").
    #[cold]
    pub(crate) fn announce_light_pushes(&self, index: usize, me: &mut WakeState) {
        self.light_pushers[index].store(true, Ordering::Relaxed);
        fence(Ordering::SeqCst);
        me.light_pushes = true;
    }

    /// Worker-side: the second half of a `join` was pushed on the caller's own deque, which
    /// now holds `local_len()` (asked only for a backlog: README, "Backlog"), after
    /// [`announce_light_pushes`](Self::announce_light_pushes). Searching's check behind a
    /// light barrier instead of a fence: whoever must see the push and might not issues the
    /// heavy one (README, "Light pushes").
    #[inline(always)]
    pub(crate) fn notify_join_half(&self, local_len: impl FnOnce() -> usize) {
        self.barrier.light();
        self.wake_for_local_push(local_len);
    }

    /// Whether some worker may have pushed with a light barrier since it last slept: then a
    /// look at the queues that must see every push issues a heavy barrier first.
    fn light_pushes_possible(&self) -> bool {
        (self.light_join_pushes || self.private_steals)
            && self
                .light_pushers
                .iter()
                .any(|pusher| pusher.load(Ordering::SeqCst))
    }

    /// Worker-side: the caller's deque is empty. Returns whether it may search other queues
    /// (and spin doing so) before sleeping; if not, it looks once and goes to sleep.
    #[inline]
    pub(crate) fn start_searching(&self, me: &mut WakeState) -> bool {
        match self.policy {
            WakePolicy::Searching => self.try_start_searching(me),
            WakePolicy::Eager | WakePolicy::Biased { .. } => true,
        }
    }

    /// Worker-side: the caller took a job. `visible(most)` counts the jobs still visible in
    /// the pool's queues, or at least `most` of them when there are more (queried only when
    /// a policy needs it; `visible(1)` only asks whether there are any). Returns whether `me` may have changed: under
    /// Searching only a searcher has anything to do, under Eager only a picked worker;
    /// Biased counts every job. A `join` popping its own half back off the deque lands here
    /// each time, so a worker stores its state back only when this says so
    /// (`WorkerThread::found_work`).
    /// Always inlined. Out of line, the call costs more than the common case: a test and a
    /// return under Searching and Eager, a count and a compare under Biased. The compiler's
    /// own choice flipped with unrelated edits.
    #[inline(always)]
    pub(crate) fn found_work(&self, me: &mut WakeState, visible: impl Fn(usize) -> usize) -> bool {
        match self.policy {
            WakePolicy::Eager => {
                if !me.picked {
                    return false;
                }
                self.pass_on_pick(me, || visible(1) > 0);
            }
            WakePolicy::Searching => {
                if !me.searching {
                    return false;
                }
                self.found_work_searching(me, visible);
            }
            WakePolicy::Biased { batch } => {
                // A job taken uses up a pick: whether more workers wake is the overload
                // rule's call, which `found_work_biased` makes.
                me.picked = false;
                self.found_work_biased(me, batch, || visible(1) > 0);
            }
        }
        true
    }

    /// Worker-side: the caller found no work. Lists it as asleep and looks once more: at
    /// the queues through `work_visible`, and through `done` at what else should keep it
    /// awake (its latch, shutdown). Unless that look found something, it parks until woken
    /// or until `deadline`. Returns whether it really blocked. `work_visible` is told
    /// whether a heavy barrier was issued since the caller's reads before this call; a
    /// private steal needs one (README, "Private steals").
    pub(crate) fn sleep(
        &self,
        index: usize,
        me: &mut WakeState,
        work_visible: impl FnOnce(bool) -> bool,
        done: impl FnOnce() -> bool,
        deadline: Option<std::time::Instant>,
    ) -> bool {
        let was_searching = me.searching;
        if was_searching {
            self.stop_searching(me);
        }
        if me.light_pushes {
            // Every push of ours is behind us; a reader of `false` acquires them all.
            me.light_pushes = false;
            self.light_pushers[index].store(false, Ordering::Release);
        }
        self.clear_note(index);
        self.sleepers.insert(index);
        // StoreLoad: the listing above must be visible before the queues are read below,
        // pairing with the fence a pusher makes between its push and its look at the sleeper
        // set. One of the two sides sees the other (README, "no lost wake-up").
        fence(Ordering::SeqCst);
        let heavy = self.light_pushes_possible();
        if heavy {
            // The same for a light push: the heavy barrier pairs with its light one.
            self.barrier.heavy();
        }
        let work = work_visible(heavy);
        let blocked = if work || done() {
            false
        } else {
            self.release_alarm();
            // The core this worker gives back may make a wake-up the budget withheld from
            // another pool (README, "Budget", step 4).
            self.core_released();
            let counters = &self.counters[index];
            counters.parks.store(
                counters.parks.load(Ordering::Relaxed) + 1,
                Ordering::Relaxed,
            );
            let blocked = self.parkers[index].park(deadline);
            if blocked {
                counters.received.store(
                    counters.received.load(Ordering::Relaxed) + 1,
                    Ordering::Relaxed,
                );
                me.streak = 0;
            }
            blocked
        };
        // Woken by a targeted wake-up, a token, or the last look: un-list ourselves if no
        // waker did. If one did, it picked us for a queued job, which we may not take (a
        // targeted wake-up may have woken us for something else): `leave`/`found_work` pass
        // it on.
        let picked = !self.sleepers.remove(index);
        if picked && !matches!(self.policy, WakePolicy::Searching) {
            me.picked = true;
        }
        let note = self.woken_to_search[index].swap(0, Ordering::SeqCst);
        if note != 0 {
            // A waker picked us and counted us as a searcher.
            me.searching = true;
            me.woken = true;
            let note = WokenNote::read(note);
            me.share = note.share;
            me.step = note.step;
        } else if work && was_searching {
            // The last look found work after all: search again (counted once: no waker
            // counted us), so that taking the work runs the last-searcher hand-off in
            // `found_work`. Pushes made while we searched skipped their wake-up, and we may
            // be the only one who knows.
            self.num_searching.fetch_add(1, Ordering::SeqCst);
            me.searching = true;
        }
        blocked
    }

    /// The searchers counted and the fan-out's promises not yet ended, for models that check
    /// both are back to zero once every worker has stopped searching.
    #[cfg(all(test, loom))]
    pub(crate) fn searching_and_promised(&self) -> (usize, usize) {
        (
            self.num_searching.load(Ordering::SeqCst),
            self.promised.load(Ordering::SeqCst),
        )
    }

    /// Worker-side: the caller stops looking for work to return to user code (its latch was
    /// set while it searched). A searcher must not stay counted while it runs user code:
    /// pushes would skip their wake-up for it. So it stops searching with the same hand-off
    /// as [`found_work`](Self::found_work).
    ///
    /// Under Eager and Biased a worker picked for a queued job (`WakeState::picked`) may
    /// return to user code instead, or (Eager) take another job, such as a broadcast's. It
    /// passes the wake-up on if work is still visible. Otherwise that job could wait behind
    /// user code while every other worker sleeps.
    ///
    /// `visible` counts the jobs still visible, as for `found_work`: a woken searcher's
    /// share held other fan-outs back, so it is made here as it would be at a found job.
    pub(crate) fn leave(&self, me: &mut WakeState, visible: impl Fn(usize) -> usize) {
        match self.policy {
            WakePolicy::Searching => self.found_work_searching(me, visible),
            WakePolicy::Eager | WakePolicy::Biased { .. } => {
                if me.picked {
                    self.pass_on_pick(me, || visible(1) > 0);
                }
            }
        }
    }

    /// A picked worker passes its pick on: StoreLoad, as in the Searching hand-off, then, if
    /// work is still visible, the wake-up a push would make (README, "Leaving a search").
    #[cold]
    fn pass_on_pick(&self, me: &mut WakeState, pending: impl FnOnce() -> bool) {
        me.picked = false;
        fence(Ordering::SeqCst);
        if pending() {
            match self.policy {
                WakePolicy::Biased { .. } => self.wake_lowest(),
                _ => self.wake_latest_if_any(),
            }
        }
    }

    /// Wakes worker `index` whatever it is doing (its latch was set).
    pub(crate) fn wake_worker(&self, index: usize) {
        self.note_wake(index);
        self.counters[index].issued.fetch_add(1, Ordering::Relaxed);
        self.parkers[index].unpark();
    }

    /// Workers counted as searching (Searching only), for diagnostics.
    pub(crate) fn searching(&self) -> usize {
        self.num_searching.load(Ordering::Relaxed)
    }

    /// Whether the pool is in a wide stretch, seen by a worker out of work. Two conditions.
    /// The pool has no more workers than the process has processors; else a spinning worker
    /// holds a processor a runnable worker waits for. And at least two other workers, and
    /// at least half the pool's, are not listed as asleep: they run, search, or are on their
    /// way to sleep. A token passed between workers, or a job at a time, keeps one or two
    /// awake and is not a wide stretch. A hint, read without the lock.
    pub(crate) fn wide_stretch(&self) -> bool {
        if !self.fits_the_machine {
            return false;
        }
        let others_awake = self.workers - 1 - self.sleepers.len().min(self.workers - 1);
        others_awake >= WIDE_STRETCH_OTHERS && 2 * others_awake >= self.workers
    }

    /// The workers listed as asleep, most recently listed last, for diagnostics.
    pub(crate) fn sleeping(&self) -> Vec<usize> {
        self.sleepers.snapshot()
    }

    /// Wakes every worker (shutdown). Each gets a token, so one on its way to park returns.
    pub(crate) fn wake_all(&self) {
        drop(self.sleepers.drain());
        for index in 0..self.workers {
            self.wake_worker(index);
        }
    }

    /// Eager: after the push, wake the most recently parked worker, if any.
    fn notify_eager(&self) {
        // StoreLoad: order the push before the look at the sleeper set (README).
        fence(Ordering::SeqCst);
        self.wake_latest_if_any();
    }

    /// Wakes the most recently parked worker, if any.
    fn wake_latest_if_any(&self) {
        if self.sleepers.len() == 0 || !self.budget_allows() {
            return;
        }
        if let Some(index) = self.sleepers.pop_latest() {
            self.unpark_listed(index);
        }
    }

    /// Unparks a worker a waker took out of the sleeper set.
    fn unpark_listed(&self, index: usize) {
        self.note_wake(index);
        self.counters[index].issued.fetch_add(1, Ordering::Relaxed);
        self.parkers[index].unpark();
    }
}
