//! The worker loop: pop from the own deque, else look elsewhere, else sleep.
//!
//! A worker's own deque is LIFO (the job it pushed last is the one whose data is warm) and
//! others steal from its other end. Popping from it touches nothing shared beyond the deque
//! itself: no global counter, no sleep state (the wake policy is consulted only through the
//! worker's own [`WakeState`] until it runs out of local work).
//!
//! The same loop serves a worker that waits — inside `join` or `scope`, for a task, for
//! another pool (`wait.rs`): it keeps running its own pool's jobs until what it waits for is
//! done, so waiting never blocks a worker while its pool has work.
//!
//! **Fairness.** Every [`INJECTOR_EVERY`]th look for work starts at the global queue, so a job
//! injected from outside does not wait behind a worker's endless local work (a job that keeps
//! spawning its successor, a long chain of held successors) while every worker is busy.
//!
//! **Lazy joins** ([`Tuning::lazy_joins`](crate::Tuning::lazy_joins)). Offering a
//! `join`'s second half to thieves costs a deque push ordered before its wake-up check
//! (`wake/README.md`) and a pop with a `SeqCst` fence: most of a `join` on two workers. When
//! every worker is busy, nobody takes it. So with lazy joins, a `join` made while no worker
//! wants work (nobody searches or sleeps) keeps its second half on a private list of the
//! worker's. That list is pushed and popped without a fence or an atomic read-modify-write.
//!
//! The next `join` made while some worker wants work first offers the private halves on the
//! deque, oldest (the largest piece) first. So do a wait (`wait_for`, before the worker may
//! sleep) and every shared push (a spawn, a task). So the private halves are always the
//! newest of the worker's jobs, and the deque with the private list on top holds them in the
//! order they were made. The worker then runs its own jobs in the order it would without
//! lazy joins: a first half's spawns before its second half. A second half blocking on such
//! a spawn relies on that.
//!
//! A worker *wants work* from the moment its own work runs out until it runs a job or
//! returns to user code. It starts wanting before it looks elsewhere, so an idle worker is
//! never missed between two states. The count lives on one shared line, changed twice per
//! search, never per `join`. A private half always runs: by its own `join`, which takes it
//! back; once offered, as any half on the deque; or by a worker that steals it on its way to
//! sleep (`private_halves.rs`; `wake/README.md`, "Private steals"). A first half that runs
//! long, or blocks on its second half outside ember, keeps it from an idle worker only until
//! that worker has spun and is about to sleep. Where the system has no heavy barrier there is
//! no such steal, and lazy joins are off by default on several workers
//! (`Tuning::lazy_joins`).
//!
//! **Sequential joins** ([`Tuning::sequential_joins_unchecked`](crate::Tuning::sequential_joins_unchecked),
//! off by default). Keeping a half private still costs a push and a pop on the private stack
//! and the job's frame. With sequential joins, a `join` made while no worker wants work, by a
//! worker that keeps at least [`MIN_KEPT_FOR_SEQUENTIAL`](super::lazy_joins::MIN_KEPT_FOR_SEQUENTIAL) private halves already, runs its two
//! closures as plain calls. Thieves still find work: the halves kept are the oldest, the
//! largest pieces, and a worker that wants work makes the next `join` take the ordinary path,
//! which offers them all. chili also keeps every 64th `join`'s half, for its heartbeat to
//! publish. Here the `join`s themselves see the wanting worker, so that adds nothing. Nothing
//! shared is written on that path and no protocol changes. It reads the same hint
//! (`wants_work`) a private push reads; a stale hint delays an offer to the next `join`.
//! The hazards, which the builder's docs state: a second half run as a call is nobody's to
//! steal, so a first half that waits for it hangs. And it runs before what its first half
//! spawned, which otherwise lies above it on the deque, so a second half that waits for such
//! a job hangs.

use std::cell::Cell;
use std::ptr::NonNull;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crossbeam_deque::{Steal, Worker};

use crate::pool::handlers::WorkerEvent;
use crate::pool::jobs::cache::JobCache;
use crate::pool::jobs::job::{JobRef, Runner, StackJob};
use crate::pool::jobs::latch::{Latch, Waiter};
use crate::pool::jobs::unwind::{guarded_frame, AbortOnUnwind};
use crate::pool::workers::held::Held;
use crate::pool::workers::lazy_joins::LazyJoins;
use crate::pool::workers::owed_wake::OwedWake;
use crate::pool::workers::registry::{
    bump, unbump, DrainRound, Registry, WorkerCounters, WorkerState,
};
use crate::pool::workers::spin::{SpinGovernor, WIDE_SPIN};
use crate::pool::workers::wait::{self, Sleeper};
use crate::trace::TraceKind;
use crate::wake::WakeState;

/// One look for work in this many starts at the global queue (tokio checks it every 61 ticks;
/// a prime keeps the check from falling into step with a periodic workload).
pub(crate) const INJECTOR_EVERY: u32 = 61;

/// Set to a pool's name in a build with the test-only `fault-injection` feature, makes that
/// pool's workers panic in their loop, in ember's own frames, for the tests of what such a
/// panic does (`tests/pool_panics.rs`). Other builds never read it.
#[cfg(feature = "fault-injection")]
const FAULT_VAR: &str = "EMBER_FAULT_WORKER_LOOP";

guarded_frame!(WorkerLoop, "a worker's loop");
guarded_frame!(
    MovedJobWait,
    "a wait for a job moved to a worker (the job lives in the waiting frame)"
);

thread_local! {
    /// The address of the worker running on this thread (null on other threads). Every `join`
    /// reads it, so it is a plain `Cell`. [`WorkerThread::run`] sets it for the time the
    /// worker's body runs, during which that frame owns the worker and does not move it.
    static CURRENT: Cell<*const WorkerThread> = const { Cell::new(std::ptr::null()) };
}

/// Why a worker looks for work: what else may end the look.
#[derive(Clone, Copy)]
enum Looking {
    /// Idle: in the worker loop or the drain, with nothing else to wait for.
    Idle,
    /// In `wait_for`, until its condition holds or `deadline` passes: such a worker spins
    /// without searching (`find_work`).
    Waiting { deadline: Option<Instant> },
}

/// One worker's thread-local state.
pub(crate) struct WorkerThread {
    pub(crate) registry: Arc<Registry>,
    pub(crate) index: usize,
    /// `registry.counters[index]`, found once: every job and spawn counts itself there.
    counters: NonNull<WorkerCounters>,
    local: Worker<JobRef>,
    wake: Cell<WakeState>,
    /// Successors held for delay-kick (`held.rs`).
    held: Held<JobRef>,
    rng: Cell<u64>,
    /// Looks for work left before the next one starts at the global queue (fairness).
    until_injector: Cell<u32>,
    /// Whether the next fairness check starts at the broadcast queue rather than the global
    /// queue: they take turns, so that neither can starve the other.
    broadcast_first: Cell<bool>,
    /// Lazy and sequential joins: the private halves and what goes with them
    /// (`lazy_joins.rs`).
    pub(in crate::pool) lazy: LazyJoins,
    /// The wake-up this worker may owe for the job it spawned last (`owed_wake.rs`).
    owed_wake: OwedWake,
    spin: Duration,
    spin_governor: SpinGovernor,
    /// Freed blocks of spawned jobs, for the next spawns on this thread (`jobs/cache.rs`).
    job_cache: JobCache,
}

impl WorkerThread {
    /// Whether this thread is one of the workers of the pool with id `registry_id`.
    pub(crate) fn is_current(registry_id: usize) -> bool {
        Self::with_current(registry_id, |worker| worker.is_some())
    }

    /// Calls `f` with the worker of the pool with id `registry_id` running on this thread, if
    /// any (the path every `join` takes).
    #[inline]
    pub(crate) fn with_current<R>(
        registry_id: usize,
        f: impl FnOnce(Option<&WorkerThread>) -> R,
    ) -> R {
        Self::with_any_current(
            |worker| f(worker.filter(|worker| worker.registry.id == registry_id)),
        )
    }

    /// Calls `f` with the worker running on this thread, of whatever pool, if any.
    #[inline]
    pub(crate) fn with_any_current<R>(f: impl FnOnce(Option<&WorkerThread>) -> R) -> R {
        let worker = CURRENT.with(Cell::get);
        // SAFETY: a non-null `CURRENT` is the worker this thread is running: `run` sets it
        // once the worker has its place in `run`'s frame, and `Unregister` clears it before
        // the worker is dropped, whether the body returns or unwinds. The reference is only
        // lent to `f`, which runs on this thread inside that time.
        f(unsafe { worker.as_ref() })
    }

    /// The body of worker thread `index` of the pool named `pool_name`: runs until the pool
    /// terminates and every queue is empty.
    pub(crate) fn run(
        registry: Arc<Registry>,
        index: usize,
        local: Worker<JobRef>,
        pool_name: &str,
    ) {
        let spin = registry.config.spin;
        let lazy = LazyJoins::new(&registry, index);
        let counters = NonNull::from(&*registry.counters[index]);
        let worker = WorkerThread {
            registry,
            index,
            counters,
            local,
            wake: Cell::new(WakeState::default()),
            held: Held::new(),
            rng: Cell::new(0x9E37_79B9_7F4A_7C15 ^ (index as u64 + 1)),
            until_injector: Cell::new(INJECTOR_EVERY),
            broadcast_first: Cell::new(true),
            lazy,
            owed_wake: OwedWake::new(),
            spin,
            spin_governor: SpinGovernor::default(),
            job_cache: JobCache::new(),
        };
        CURRENT.with(|current| current.set(&worker));
        worker.registry.sleep.enter(index);
        // Declared after `worker`, so dropped before it.
        let _unregister = Unregister;
        // Says the worker is gone however its body ends, so that nobody waits for it forever.
        let exited = Exited(&worker);
        // Declared last, so dropped first while unwinding: the process aborts before a dead
        // worker is counted out.
        let abort_if_panics = AbortIfWorkerPanics { index, pool_name };
        worker
            .registry
            .run_worker_handler(WorkerEvent::Start, index);
        #[cfg(feature = "fault-injection")]
        if std::env::var_os(FAULT_VAR).is_some_and(|name| name == pool_name) {
            panic!("{FAULT_VAR}: a fault injected into worker {index}'s loop");
        }
        worker.run_until_drained(DrainRound::Jobs);
        // The running pool has drained: no job of it runs any more. The handler is user code:
        // the worker must not stay counted as a searcher while it runs (a job it spawns and
        // waits for would skip its wake-up). What it queues may need every worker — a
        // broadcast, or (not under Biased, whose own-deque pushes wake nobody) a job it
        // blocks on — so the workers drain once more before they leave.
        worker.leave_wait();
        worker.registry.run_worker_handler(WorkerEvent::Exit, index);
        worker.run_until_drained(DrainRound::ExitHandlers);
        // Nothing can be queued any more; the broadcast queue closes only empty all the same
        // (`broadcast.rs`), the defence of that argument.
        loop {
            while let Some(job) = worker.find_work(&|| true, Looking::Idle) {
                worker.run_job(job);
            }
            if worker.registry.close_broadcasts(index) {
                break;
            }
        }
        worker.exit();
        // Counted out under the guard too: a panic there would leave the pool's drop waiting
        // for a worker that is gone.
        drop(exited);
        std::mem::forget(abort_if_panics);
    }

    /// Runs jobs until the pool has shut down and `round` has drained: every worker found no
    /// work at the same time after shutdown began (`Registry::drain_in`). A worker that finds
    /// none earlier sleeps counted as drained, because a job (or exit handler) still running
    /// on another worker may yet spawn work and wait for it; woken, it counts itself out
    /// again before it looks.
    fn run_until_drained(&self, round: DrainRound) {
        let terminating = || self.registry.terminating();
        let drained = || self.registry.drained(round);
        loop {
            // Read before the look: a job queued before shutdown began (the thread that drops
            // the last handle may have injected it an instant earlier) is then visible to it.
            let shutting_down = terminating();
            if let Some(job) = self.find_work(&terminating, Looking::Idle) {
                self.run_job(job);
                continue;
            }
            if !shutting_down {
                self.idle(&terminating, None);
                continue;
            }
            if self.registry.drain_in(round) {
                return;
            }
            self.idle(&drained, None);
            if drained() {
                return;
            }
            self.registry.drain_out(round);
        }
    }

    /// The worker leaves the pool: it stops being counted as a searcher (a count nobody would
    /// ever take back would make pushes skip their wake-ups) and hands on what it holds
    /// (nothing: its last look for work took the held successors first).
    fn exit(&self) {
        self.leave_wait();
        debug_assert!(self.held.is_empty(), "a worker exits holding successors");
        debug_assert!(
            self.lazy.is_empty(),
            "a worker exits holding private join halves"
        );
    }

    /// Runs jobs until `latch` is set, sleeping when there are none.
    pub(crate) fn wait_until(&self, latch: &Latch<'_>) {
        self.wait_for(&|| latch.probe(), None);
    }

    /// Runs jobs until `done` holds or `deadline` passes, sleeping when there are none;
    /// returns whether `done` held. Whoever makes `done` true must then wake this worker
    /// (`Sleep::wake_worker`).
    pub(crate) fn wait_for(&self, done: &dyn Fn() -> bool, deadline: Option<Instant>) -> bool {
        // Private join halves below this wait must be reachable while it lasts.
        self.offer_all_private();
        let waits = &self.counters().waits;
        bump(waits);
        let held = loop {
            if done() {
                break true;
            }
            if deadline.is_some_and(|deadline| Instant::now() >= deadline) {
                break false;
            }
            if let Some(job) = self.find_work(done, Looking::Waiting { deadline }) {
                self.run_job(job);
            } else if !done() {
                self.idle(done, deadline);
            }
        };
        unbump(waits);
        self.leave_wait();
        held
    }

    /// Back to user code, which may run long: a search in progress ends, held successors
    /// must not wait for it, and a task that ended meanwhile may have left the pool idle.
    fn leave_wait(&self) {
        self.count_wanting(false);
        self.check_idle();
        let mut wake = self.wake.get();
        self.registry
            .sleep
            .leave(&mut wake, |most| self.registry.visible_jobs(most));
        self.wake.set(wake);
        self.kick_held();
    }

    /// Holds a successor released by a task that finished here (delay-kick).
    pub(crate) fn hold(&self, job: JobRef) {
        bump(&self.counters().held);
        self.held.hold(job);
    }

    /// Pushes every held successor for others to take.
    #[inline]
    pub(crate) fn kick_held(&self) {
        self.held.kick_all(|job| self.kick(job));
    }

    fn kick(&self, job: JobRef) {
        let counters = self.counters();
        unbump(&counters.held);
        bump(&counters.kicks);
        self.registry.trace.mark(self.index, TraceKind::Kick, 1);
        self.push_after_private(job);
    }

    /// Pushes a job on this worker's deque with the wake-up check of every push (fenced under
    /// Eager and Searching: `wake/README.md`, "Pushing"): an offered private half, the second
    /// half of a `join` where it is not pushed lightly (`push_join_half_light`), and (through
    /// `push_after_private`) every spawned or kicked job. A `join` pops its half back itself if
    /// nobody took it, but only once its first half returns. A first half that blocks on the
    /// second outside ember (a channel) leaves it to another worker. A wake-up lost to a
    /// worker going to sleep at that moment would hang the `join`. This offers no private
    /// half: a pool without lazy joins has none, and with them `keep_or_push_join_half` offers them
    /// before its own.
    #[inline]
    pub(crate) fn push_notifying(&self, job: JobRef) {
        self.pay_owed_wake();
        self.local.push(job);
        self.registry.sleep.notify_local(|| self.local.len());
    }

    /// Pushes the second half of a `join` (without lazy joins). Under Searching, behind a
    /// light barrier instead of `push_notifying`'s fence (`wake/README.md`, "Light pushes"): the
    /// worker lists itself as a light pusher once, until it next goes to sleep, and whoever
    /// must see its pushes issues the heavy barrier. Other policies push as `push_notifying` does.
    #[inline(always)]
    pub(crate) fn push_join_half_light(&self, job: JobRef) {
        let sleep = &self.registry.sleep;
        if !sleep.light_join_pushes() {
            self.push_notifying(job);
            return;
        }
        self.list_as_light_pusher();
        self.pay_owed_wake();
        self.local.push(job);
        sleep.notify_join_half(|| self.local.len());
    }

    /// Lists this worker in `Sleep::light_pushers` unless it already is, until it next goes to
    /// sleep: before a push with a light barrier, or before keeping a private half (lazy
    /// joins), so that a worker about to sleep issues the heavy barrier that pairs with it
    /// (`wake/README.md`, "Light pushes" and "Private steals"). Once listed, a `Cell` read.
    #[inline(always)]
    fn list_as_light_pusher(&self) {
        // The listing stays out of this body: with it here, every `join` would copy the
        // whole state to the stack to test one byte of it.
        if !self.wake.get().light_pushes() {
            self.list_as_light_pusher_now();
        }
    }

    /// [`list_as_light_pusher`](Self::list_as_light_pusher) once per sleep: the listing.
    #[cold]
    #[inline(never)]
    fn list_as_light_pusher_now(&self) {
        let mut wake = self.wake.get();
        self.registry
            .sleep
            .announce_light_pushes(self.index, &mut wake);
        self.wake.set(wake);
    }

    /// With lazy joins, counts this worker in (or out of) the workers that want work
    /// (`LazyJoins::count_wanting`).
    #[inline(always)]
    fn count_wanting(&self, wants: bool) {
        self.lazy.count_wanting(&self.registry, wants);
    }

    /// This worker's counters (`registry.counters[index]`).
    #[inline(always)]
    pub(crate) fn counters(&self) -> &WorkerCounters {
        // SAFETY: `counters` points into `registry.counters`, a boxed slice the registry
        // never resizes or replaces, and `self.registry` (never reassigned once the worker is
        // built, like `index`) keeps that registry alive as long as `self`.
        unsafe { self.counters.as_ref() }
    }

    /// This worker's cache of job blocks (`jobs/cache.rs`).
    #[inline(always)]
    pub(crate) fn job_cache(&self) -> &JobCache {
        &self.job_cache
    }

    /// With lazy joins: queues the second half of a `join` privately if no worker wants work
    /// (returns `true`), else on the deque, after offering the private halves, oldest first
    /// (module doc, "Lazy joins"): the deque keeps the halves in the order they were made.
    #[inline(always)]
    pub(crate) fn keep_or_push_join_half(&self, job: JobRef) -> bool {
        if self.registry.sleep.private_steals() {
            self.list_as_light_pusher();
        }
        self.lazy
            .keep(&self.registry, job, |job| self.push_notifying(job))
    }

    /// Offers every private half to thieves, oldest first (module doc, "Lazy joins").
    #[inline]
    fn offer_all_private(&self) {
        self.lazy.offer_all(|job| self.push_notifying(job));
    }

    /// Pushes a spawned job or task, which may be what the job running here blocks on, or a
    /// kicked successor (`push_notifying`). It goes above every private join half, which is offered
    /// first: the deque then holds them in the order they were made, as without lazy joins,
    /// and the `join` below takes the spawned job back before its own second half. Left
    /// private, that half would run first, and one that blocks on what the spawned job does
    /// would hang a worker nobody else can relieve (a pool of one).
    #[inline]
    pub(crate) fn push_after_private(&self, job: JobRef) {
        self.offer_all_private();
        self.push_notifying(job);
    }

    /// Pushes a job spawned here (`spawn`, `spawn_fifo`), as [`push_after_private`](Self::push_after_private)
    /// does. Where the pool defers wake-ups, though, a wake-up for a job alone on the deque is
    /// owed rather than made (`wake/README.md`, "Deferred wake-ups"). A job that spawns its
    /// successor as its last act then runs it next itself, and nobody is woken for it. The
    /// debt is settled at this worker's next scheduling point. Its next push makes the
    /// wake-up. Its next look for work takes the job back or finds it taken (`pop_local`), or
    /// makes the wake-up if it runs something else first (`take_held`, `fairness_turn`). If
    /// the spawning job runs longer, the pool's alarm makes the wake-up the pool's bound
    /// (100 µs by default) after the spawn.
    ///
    /// Once the alarm has had to make one of this worker's wake-ups, its next
    /// [`SPAWNS_WAKING_AFTER_ALARM`](crate::wake::SPAWNS_WAKING_AFTER_ALARM) owing spawns wake at once instead. So a job that spawns
    /// and then computes holds a successor for the bound only once in so many.
    #[inline]
    pub(crate) fn push_spawned(&self, job: JobRef) {
        self.offer_all_private();
        self.pay_owed_wake();
        self.local.push(job);
        self.owed_wake
            .notify_spawned(&self.registry, self.index, || self.local.len());
    }

    /// Makes the wake-up this worker owes, if it owes one (`OwedWake::pay`).
    #[inline(always)]
    fn pay_owed_wake(&self) {
        self.owed_wake.pay(&self.registry, self.index);
    }

    /// Delay-kick: the first held successor, for this worker; the rest go to thieves
    /// (`held.rs`). Taken before anything else, so that a worker never runs other work
    /// while it holds successors no thief can see. The job this worker may owe a wake-up for,
    /// on its deque, runs after it: that wake-up is made before it runs.
    fn take_held(&self) -> Option<JobRef> {
        if self.held.is_empty() {
            return None;
        }
        self.pay_owed_wake();
        let job = self.held.take_and_kick(|job| self.kick(job))?;
        unbump(&self.counters().held);
        self.found_work();
        Some(job)
    }

    /// A job run from inside a `join` returns to it: a check point (`wait_idle.rs`).
    pub(crate) fn check_idle(&self) {
        self.registry.check_idle(self.counters());
    }

    /// Pops the job this worker pushed last, if it is still there. Always inlined: it is on
    /// every `join`'s path, and once the void of an owed wake-up had grown by a branch the
    /// compiler stopped inlining it there (callgrind: an offered `join` 152 -> 169
    /// instructions, a spawn 200 -> 213; inlined again, 153 and 200).
    #[inline(always)]
    pub(crate) fn pop_local(&self) -> Option<JobRef> {
        let job = self.local.pop();
        self.owed_wake.void(&self.registry, self.index);
        let job = job?;
        self.found_work();
        Some(job)
    }

    pub(crate) fn run_job(&self, job: JobRef) {
        self.count_wanting(false);
        // The one place a worker makes a `Runner`: its index and its counters agree.
        let runner = Runner {
            registry: &self.registry,
            worker: self.index,
            counters: self.counters(),
        };
        bump(&runner.counters.tasks);
        // Every job catches the panics of the user code it runs (`unwind.rs`); one that still
        // unwinds would take this worker down, or free a `join` frame a thief still uses.
        let guard = AbortOnUnwind::<WorkerLoop>::new();
        // SAFETY: the job came out of one of this registry's queues, which hand each pushed
        // job to exactly one taker, and its owner keeps it alive until it has run.
        unsafe { job.execute(runner) };
        guard.disarm();
    }

    #[inline]
    pub(crate) fn count_spawn(&self) {
        bump(&self.counters().spawned);
    }

    /// Own deque first (the global queue first every [`INJECTOR_EVERY`]th time); then, as the
    /// policy allows, the global queue and other workers, spinning briefly and then yielding
    /// once before giving up.
    #[inline(always)]
    fn find_work(&self, done: &dyn Fn() -> bool, looking: Looking) -> Option<JobRef> {
        // The common case inline: no held successor, the fairness turn not due, a job on the
        // own deque. Exactly what the full look below does in that case (`pop_local`, its
        // countdown ticked once, and only if a job is taken here), without the call into a
        // function that saves every register it may need for stealing and spinning. An empty
        // pop voids an owed wake-up, as the full look's would; that look pops again.
        let until_injector = self.until_injector.get();
        if until_injector > 1 && self.held.is_empty() {
            if let Some(job) = self.pop_local() {
                self.until_injector.set(until_injector - 1);
                return Some(job);
            }
        }
        self.find_work_in_full(done, looking)
    }

    /// [`find_work`](Self::find_work) in full.
    #[inline(never)]
    fn find_work_in_full(&self, done: &dyn Fn() -> bool, looking: Looking) -> Option<JobRef> {
        // An owed wake-up is settled on the way: made before held successors or a fairness
        // turn's job run, voided when the own deque is popped (`pop_local`).
        if let Some(job) = self.take_held() {
            return Some(job);
        }
        if let Some(job) = self.fairness_turn() {
            return Some(job);
        }
        if let Some(job) = self.pop_local() {
            return Some(job);
        }
        if let Some(job) = self.take_broadcast() {
            return Some(job);
        }
        // Out of work of its own: with lazy joins, say so before looking elsewhere. With
        // deferred wake-ups, the next owe, after however long, reads the clock afresh.
        self.count_wanting(true);
        self.registry.sleep.forget_stamp(self.index);
        // A worker waiting for its own `join`'s stolen half (or any awaited condition) spins
        // for it without taking a searcher's place. Its wait ends when the thief finishes.
        // A searcher slot it held would keep an idle worker from spinning for pushed work;
        // with two workers, it is the only slot.
        let (waiting, wait_deadline) = match looking {
            Looking::Waiting { deadline } => (true, deadline),
            Looking::Idle => (false, None),
        };
        let searching = !waiting && {
            let mut wake = self.wake.get();
            let searching = self.registry.sleep.start_searching(&mut wake);
            self.wake.set(wake);
            searching
        };
        if let Some(job) = self.steal() {
            self.found_work();
            return Some(job);
        }
        if !(searching || waiting) || self.spin.is_zero() || !self.spin_governor.should_spin() {
            return None;
        }
        // Searchers over the awake-core budget give their core back first: no spin, straight
        // to the sleep steps, whose last look still sees every queued job (`wake/README.md`,
        // "Budget", step 5). A pool alone in its process reads one flag.
        if searching && self.registry.sleep.over_budget() {
            return None;
        }
        // A timed wait (`join_timeout`, `wait_idle_timeout`) spins no longer than it waits.
        let spin_end = Instant::now() + self.spin_now();
        let deadline = wait_deadline.map_or(spin_end, |wait_deadline| spin_end.min(wait_deadline));
        let mut spins = 1u32;
        while !done() && Instant::now() < deadline {
            for _ in 0..spins {
                std::hint::spin_loop();
            }
            spins = (spins * 2).min(64);
            if let Some(job) = self.steal() {
                return Some(self.found_by_spinning(job));
            }
        }
        if wait_deadline.is_some_and(|wait_deadline| Instant::now() >= wait_deadline) {
            // Cut short by the wait's deadline: neither a hit nor a miss of the spin, and no
            // yield (it could cost the wait a time slice past its deadline).
            return None;
        }
        // A spin that found nothing yields once before the worker sleeps. On a machine with
        // more runnable threads than cores the thread that will produce the work (a producer,
        // a worker finishing a job) may be waiting for this very core: the yield lets it run,
        // where a sleep would cost a switch now and a wake-up (often preempting somebody)
        // later. With nothing else runnable here it returns at once. Only one: yielding on
        // every spin round also hands the core back and forth between two workers passing a
        // chain of jobs, doubling their switches.
        if !done() {
            std::thread::yield_now();
            if let Some(job) = self.steal() {
                return Some(self.found_by_spinning(job));
            }
        }
        // A spin that saw the awaited condition come true (a stolen `join` half finishing)
        // paid as much as one that found a job: the worker goes on without a sleep and a
        // wake-up. Counting it as a miss would turn spinning off for exactly the waits it
        // shortens.
        self.spin_governor.record(done());
        None
    }

    /// Runs one pending job, if there is one, and returns whether it did
    /// ([`ember::yield_now`](crate::yield_now)): a held successor, the own deque, the own
    /// broadcast queue, and unless `local_only`, the global queue and the other workers'
    /// deques. It never spins or sleeps.
    pub(crate) fn yield_once(&self, local_only: bool) -> bool {
        // A caller polling for its own `join`'s second half (lazy joins) must find it.
        self.offer_all_private();
        // Not `find_work`: that one also counts down the fairness turn, which a yield does not.
        let job = self
            .take_held()
            .or_else(|| self.pop_local())
            .or_else(|| self.take_broadcast())
            .or_else(|| {
                if local_only {
                    return None;
                }
                let job = self.steal()?;
                self.found_work();
                Some(job)
            });
        let Some(job) = job else {
            return false;
        };
        self.run_job(job);
        // Back to the caller's code, as from a job run inside a `join`.
        self.check_idle();
        self.kick_held();
        true
    }

    /// How long this look for work may spin: [`WIDE_SPIN`] times the builder's spin in a wide
    /// stretch (`Sleep::wide_stretch`), the builder's spin otherwise (`spin.rs`).
    fn spin_now(&self) -> Duration {
        if self.registry.sleep.wide_stretch() {
            self.spin.saturating_mul(WIDE_SPIN)
        } else {
            self.spin
        }
    }

    /// A spin found `job`: spinning paid, so it stays on (`spin.rs`).
    fn found_by_spinning(&self, job: JobRef) -> JobRef {
        self.spin_governor.record(true);
        self.found_work();
        job
    }

    #[inline]
    pub(in crate::pool) fn found_work(&self) {
        let mut wake = self.wake.get();
        if self
            .registry
            .sleep
            .found_work(&mut wake, |most| self.registry.visible_jobs(most))
        {
            self.wake.set(wake);
        }
    }

    /// Counts down to the fairness check and makes it when its turn comes (every
    /// [`INJECTOR_EVERY`]th look for work). A job it finds runs before the one this worker
    /// may owe a wake-up for: that wake-up is made before it runs.
    #[inline(always)]
    fn fairness_turn(&self) -> Option<JobRef> {
        let until_injector = self.until_injector.get() - 1;
        self.until_injector.set(until_injector);
        if until_injector == 0 {
            self.injector_first().inspect(|_| self.pay_owed_wake())
        } else {
            None
        }
    }

    /// The fairness check: takes a job for this worker's broadcast queue, or from the global
    /// queue (a batch of them, into the own deque), before the own work, then counts down
    /// again. Without it, a job that keeps its worker's deque full (a recursive fork, a
    /// self-respawning task) would starve both queues.
    #[cold]
    fn injector_first(&self) -> Option<JobRef> {
        self.until_injector.set(INJECTOR_EVERY);
        let broadcast_first = self.broadcast_first.get();
        self.broadcast_first.set(!broadcast_first);
        if broadcast_first {
            if let Some(job) = self.take_broadcast() {
                return Some(job);
            }
        }
        loop {
            match self.registry.injector.steal_batch_and_pop(&self.local) {
                Steal::Success(job) => {
                    self.took_batch();
                    self.found_work();
                    return Some(job);
                }
                Steal::Retry => {}
                // The broadcast queue's turn was not taken: it may have this one.
                Steal::Empty if broadcast_first => return None,
                Steal::Empty => return self.take_broadcast(),
            }
        }
    }

    /// After a batch taken from the global queue: the jobs moved to this worker's deque were
    /// announced by their injections, but a sleeper whose last look fell between the batch
    /// leaving the global queue and reaching this deque saw neither. So the move counts as a
    /// fenced push (`wake/README.md`, "Pushing"): this worker may block in the job it took,
    /// and one of the moved jobs may be what it waits for.
    #[cold]
    fn took_batch(&self) {
        if !self.local.is_empty() {
            self.registry.sleep.notify_local(|| self.local.len());
        }
    }

    /// Takes a job from the global queue (a batch of them, into the own deque) or from
    /// another worker, starting at a random victim so thieves spread out.
    fn steal(&self) -> Option<JobRef> {
        let registry = &self.registry;
        loop {
            let mut retry = false;
            match registry.injector.steal_batch_and_pop(&self.local) {
                Steal::Success(job) => {
                    self.took_batch();
                    return Some(job);
                }
                Steal::Retry => retry = true,
                Steal::Empty => {}
            }
            match self.steal_from_others(|victim| registry.stealers[victim].steal()) {
                Steal::Success(job) => return Some(job),
                Steal::Retry => retry = true,
                Steal::Empty => {}
            }
            if !retry {
                return None;
            }
        }
    }

    /// One pass over the other workers, from a random victim so that thieves spread out,
    /// with `steal` taking from `victim`: the first job taken (counted and traced as a
    /// steal), else `Retry` if some steal lost a race, else `Empty`.
    #[inline]
    fn steal_from_others(&self, steal: impl Fn(usize) -> Steal<JobRef>) -> Steal<JobRef> {
        let registry = &self.registry;
        let workers = registry.workers();
        let start = self.next_random() as usize % workers;
        let mut retry = false;
        for offset in 0..workers {
            let victim = (start + offset) % workers;
            if victim == self.index {
                continue;
            }
            match steal(victim) {
                Steal::Success(job) => {
                    bump(&self.counters().steals);
                    registry.trace.mark(self.index, TraceKind::Steal, victim);
                    return Steal::Success(job);
                }
                Steal::Retry => retry = true,
                Steal::Empty => {}
            }
        }
        if retry {
            Steal::Retry
        } else {
            Steal::Empty
        }
    }

    /// Goes to sleep through the wake policy, unless work or `done` shows up meanwhile, or
    /// until `deadline`.
    fn idle(&self, done: &dyn Fn() -> bool, deadline: Option<Instant>) {
        self.check_idle();
        let mut wake = self.wake.get();
        let tracing = self.registry.trace.enabled();
        let start = tracing.then(Instant::now);
        let counters = self.counters();
        counters.set_state(WorkerState::Sleeping);
        // A private steal reads `top` before the heavy barrier the sleep may issue, and the
        // rest after it (`private_halves.rs`).
        self.lazy.note_tops(&self.registry);
        let blocked = self.registry.sleep.sleep(
            self.index,
            &mut wake,
            |heavy| {
                self.registry.has_work()
                    || (heavy && self.registry.sleep.private_steals() && self.steal_private())
            },
            done,
            deadline,
        );
        counters.set_state(WorkerState::Running);
        self.wake.set(wake);
        if let Some(job) = self.lazy.take_stolen() {
            // Taken by the last look instead of sleeping: run like any job found.
            self.found_work();
            self.run_job(job);
        }
        if let (true, Some(start)) = (blocked, start) {
            let trace = &self.registry.trace;
            trace.record(self.index, TraceKind::Sleep, start, 0);
            trace.record_wake(self.index, self.registry.sleep.woken(self.index));
        }
    }

    /// The last look before sleeping, after a heavy barrier: takes the oldest private half of
    /// some other worker that kept it from us (it has not joined, waited or spawned since we
    /// began to want work: its first half runs long, or blocks on that very half), and leaves
    /// it in `stolen_private` for `idle` to run. Also `true`, with nothing taken, if a steal
    /// lost its race while a half may still be left (`PrivateHalves::steal` says `Retry`): we
    /// must not sleep then; the worker looks again, with fresh `top`s and a new barrier.
    #[cold]
    fn steal_private(&self) -> bool {
        match self.steal_from_others(|victim| self.lazy.steal_from(&self.registry, victim)) {
            Steal::Success(job) => {
                self.lazy.set_stolen(job);
                true
            }
            Steal::Retry => true,
            Steal::Empty => false,
        }
    }

    fn next_random(&self) -> u64 {
        // xorshift64: cheap, and only spreads thieves over victims.
        let mut x = self.rng.get();
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.rng.set(x);
        x
    }
}

/// Aborts the process when a worker's body unwinds (rayon-core's `AbortIfPanic`). User code
/// runs there only in frames that catch its panics (`unwind.rs`), so such an unwind is a
/// panic of ember's own code, and the worker it would end may be counted as a searcher (every
/// later push would skip its wake-up) or be the one its queued jobs wait for.
struct AbortIfWorkerPanics<'n> {
    index: usize,
    pool_name: &'n str,
}

impl Drop for AbortIfWorkerPanics<'_> {
    #[cold]
    fn drop(&mut self) {
        eprintln!(
            "ember: worker {} of pool {:?} panicked in ember's own code, outside any job (the \
             panic is printed above); aborting, as a lost worker would strand the jobs left to \
             it. This is a bug in ember: please report it with that panic message.",
            self.index, self.pool_name
        );
        std::process::abort();
    }
}

/// Counts the worker out of its pool when its body returns (an unwind aborts first:
/// [`AbortIfWorkerPanics`]).
struct Exited<'w>(&'w WorkerThread);

impl Drop for Exited<'_> {
    fn drop(&mut self) {
        self.0.registry.worker_exited(self.0.index);
    }
}

/// Clears this thread's `CURRENT` when the worker's body returns or unwinds, so it never
/// outlives the worker it points at.
struct Unregister;

impl Drop for Unregister {
    fn drop(&mut self) {
        CURRENT.with(|current| current.set(std::ptr::null()));
        crate::wake::Sleep::exit();
    }
}

/// Runs `op` on one of `registry`'s workers: at once if this thread is one, otherwise as a
/// job on the global queue while this thread waits.
///
/// A thread that is no pool's worker blocks while it waits; it does not run the pool's jobs:
/// the jobs it would pick up could call back into the pool from outside and nest without
/// bound on its stack. Moving the whole operation onto a worker keeps every `join` and `scope`
/// inside it on the fast path (own deque, pop back) instead. A worker of another pool keeps
/// running its own pool's jobs while it waits (`wait.rs`), so that pools may call each other
/// without deadlock.
pub(crate) fn in_worker<OP, R>(registry: &Arc<Registry>, op: OP) -> R
where
    OP: FnOnce(&WorkerThread) -> R + Send,
    R: Send,
{
    let op = match WorkerThread::with_current(registry.id, |worker| match worker {
        Some(worker) => Ok(op(worker)),
        None => Err(op),
    }) {
        Ok(result) => return result,
        Err(op) => op,
    };
    run_elsewhere(registry, op)
}

/// `in_worker` from a thread that is not one of the pool's workers.
#[cold]
fn run_elsewhere<OP, R>(registry: &Arc<Registry>, op: OP) -> R
where
    OP: FnOnce(&WorkerThread) -> R + Send,
    R: Send,
{
    let sleeper = Sleeper::current();
    // A worker's pool is blocked too: the job it runs now cannot end before `op` has.
    let blocked = wait::blocked_pools_with(match &sleeper {
        Sleeper::Worker { registry, .. } => Some(registry.id),
        Sleeper::Thread(_) => None,
    });
    let job = StackJob::new(
        || {
            wait::with_blocked_pools(&blocked, || {
                WorkerThread::with_current(registry.id, |worker| {
                    op(worker
                        .expect("a job from the global queue runs on one of the pool's workers"))
                })
            })
        },
        Latch::new(Waiter::Sleeper(sleeper)),
    );
    // `job` stays in this frame until its latch is set: the wait below returns only then, and
    // the guard turns an unwind out of it (a bug) into an abort.
    let guard = AbortOnUnwind::<MovedJobWait>::new();
    // SAFETY: as just said, `job` outlives its execution.
    registry.inject(unsafe { job.as_job_ref() });
    wait::block_until(&|| job.latch().probe(), None);
    guard.disarm();
    match job.into_result() {
        Ok(value) => value,
        Err(payload) => std::panic::resume_unwind(payload),
    }
}
