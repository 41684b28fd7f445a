//! What a pool is built with: the protocol switches users may tune ([`Tuning`]), and the
//! one resolved configuration ([`PoolConfig`]) that the registry, the sleep state and every
//! worker read.
//!
//! `PoolBuilder` keeps the settings every pool has (threads, names, handlers, stack size,
//! wake policy, tracing, pinning, spin). The switches that exist to trade one cost of the
//! protocols against another, which the lab turns one by one, live in `Tuning`, so that a
//! new one (a process-wide budget of awake workers, say) is added there without growing the
//! builder. `PoolBuilder::build` resolves both, once, into a `PoolConfig`: a default that
//! depends on the machine or the number of workers is decided there and nowhere else.

use std::time::Duration;

use crate::wake::{WakePolicy, DEFAULT_DEFER_NS};

/// Switches of ember's protocols that trade one cost against another, for experiments and
/// for workloads that know what they need. The defaults are what a pool should run with;
/// each switch says what it changes and what it costs. A switch that can hang a correct
/// program says so in its name (`_unchecked`).
///
/// Built with its methods, each of which returns the changed value, and passed to
/// [`PoolBuilder::tuning`](crate::PoolBuilder::tuning):
///
/// ```
/// use ember::{Pool, Tuning};
/// let tuning = Tuning::new()
///     .delay_kick(false)
///     .defer_wakeups_for(std::time::Duration::from_millis(1));
/// let pool = Pool::builder().threads(2).tuning(tuning).build()?;
/// assert_eq!(pool.join(|| 1, || 2), (1, 2));
/// # Ok::<(), ember::BuildError>(())
/// ```
///
/// Values out of range are handled as each method says (a deferral bound is raised or
/// lowered to the range it allows); nothing here is checked later than
/// [`PoolBuilder::build`](crate::PoolBuilder::build).
#[derive(Clone, Debug, PartialEq, Eq)]
#[must_use = "a tuning does nothing until passed to `PoolBuilder::tuning`"]
pub struct Tuning {
    delay_kick: bool,
    /// `None`: wake-ups are made at the push.
    defer_wakeups: Option<Duration>,
    /// `None`: the default, on where private steals exist and for one worker.
    lazy_joins: Option<bool>,
    sequential_joins: bool,
}

impl Default for Tuning {
    fn default() -> Self {
        Tuning {
            delay_kick: true,
            defer_wakeups: Some(Duration::from_nanos(DEFAULT_DEFER_NS)),
            lazy_joins: None,
            sequential_joins: false,
        }
    }
}

impl Tuning {
    /// The defaults: delay-kick on, wake-ups deferred for 100 µs, lazy joins where they are
    /// safe, sequential joins off.
    pub fn new() -> Self {
        Self::default()
    }

    /// Whether successors released by a task finishing on a worker stay with that worker
    /// until it next looks for work (default `true`; `task` module, "Delay-kick"). A plain
    /// spawn's successor has its own knob, [`defer_wakeups`](Self::defer_wakeups), also on
    /// by default.
    pub fn delay_kick(mut self, on: bool) -> Self {
        self.delay_kick = on;
        self
    }

    /// Whether a job spawned on a worker onto its empty deque, whose push would wake a
    /// sleeper, owes that wake-up instead (default `true`; [`WakePolicy::Searching`] on
    /// Linux, on pools of several workers only: elsewhere, under the other policies, and
    /// with one worker, this changes nothing, and no alarm thread is started).
    ///
    /// The job is stealable at once; only the wake-up waits. The spawner's next push makes
    /// it, and its next look for work voids it by taking the job back, so a job that spawns
    /// its successor as its last act wakes nobody: a chain of spawns, or a token passed
    /// round a ring, stays on one thread while the others sleep. If the spawner runs on
    /// instead, an alarm makes the wake-up 100 µs after the spawn, plus the alarm's own
    /// latency (a `timerfd`, and one more thread per pool, `NAME-alarm`, blocked on it; it
    /// starts at the first spawn that would owe a wake-up, which makes that one at once, so
    /// a pool that only joins, scopes or takes spawns from outside never has it).
    /// [`PoolStats::longest_deferral`](crate::PoolStats) reports the longest a wake-up
    /// stayed owed. Applies to [`Pool::spawn`](crate::Pool::spawn), [`spawn_fifo`](crate::Pool::spawn_fifo) and
    /// [`ember::spawn`](crate::spawn) inside the pool; `join` and `scope` are unaffected.
    ///
    /// What it costs: keeping the alarm 100 µs ahead of a chain of spawns means setting a
    /// timer that soon, a system call that reprograms the processor's timer, at a chain's
    /// start and then about every 75 µs; on the virtual machines the lab runs on that call
    /// takes 3–17 µs (under 1 µs for one due after the next scheduler tick). A job that
    /// spawns and then runs on holds its successor for the bound before a sleeper is woken
    /// for it; once the alarm has had to make one of a worker's wake-ups, that worker's next
    /// 16 spawns that would owe one make it at once, so a job that spawns and computes loses
    /// the bound about once in 17 spawns, not at every one. `defer_wakeups(false)` makes the
    /// wake-up at the push whenever Searching's rule asks for one. The lab's `ember-no-defer`
    /// rows (`micro`'s chained spawn and successor hold, `cycle`) show the trade against the
    /// default: far less CPU and fewer context switches on chains, a successor of a long
    /// parent held for about the bound now and then.
    /// [`defer_wakeups_for`](Self::defer_wakeups_for) sets a longer bound, which costs less.
    ///
    /// ```
    /// use std::sync::mpsc;
    /// use ember::Tuning;
    /// let pool = ember::Pool::builder().threads(2).build().unwrap(); // deferring
    /// let waking_at_once = ember::Pool::builder()
    ///     .threads(2)
    ///     .tuning(Tuning::new().defer_wakeups(false))
    ///     .build();
    /// assert!(waking_at_once.is_ok());
    /// let (tx, rx) = mpsc::channel();
    /// let handle = pool.clone();
    /// pool.spawn(move || {
    ///     // The successor may wait for a wake-up while this job runs on, never for ever.
    ///     handle.spawn(move || tx.send(7).unwrap());
    ///     std::thread::sleep(std::time::Duration::from_millis(5));
    /// });
    /// assert_eq!(rx.recv().unwrap(), 7);
    /// ```
    pub fn defer_wakeups(mut self, on: bool) -> Self {
        self.defer_wakeups = on.then_some(Duration::from_nanos(DEFAULT_DEFER_NS));
        self
    }

    /// [`defer_wakeups(true)`](Self::defer_wakeups) with `bound` for the alarm instead of
    /// 100 µs (between 10 µs and 1 s; bounds outside are raised or lowered to them). A
    /// longer bound moves the alarm less often and lets a spawner run on longer before a
    /// sleeper is woken for its spawned job: where setting a timer is slow, 1 ms brings
    /// chains of spawns near the speed of a wake-up per spawn (the lab's
    /// `ember-deferred-1ms` rows). Of this and [`defer_wakeups`](Self::defer_wakeups), the
    /// last call wins.
    ///
    /// ```
    /// let tuning = ember::Tuning::new().defer_wakeups_for(std::time::Duration::from_millis(1));
    /// let pool = ember::Pool::builder()
    ///     .threads(2)
    ///     .tuning(tuning)
    ///     .build()
    ///     .unwrap();
    /// assert_eq!(pool.install(|| 2 + 2), 4);
    /// ```
    pub fn defer_wakeups_for(mut self, bound: Duration) -> Self {
        self.defer_wakeups = Some(bound);
        self
    }

    /// Whether a `join` made while every worker is busy keeps its second half to itself
    /// instead of offering it to thieves (default: on where the system has the heavy barrier
    /// private steals need, `membarrier` on Linux 4.14 and later, and for a pool of one worker
    /// everywhere; off otherwise).
    ///
    /// Offering the half costs a deque push and a fenced pop back, most of a `join`'s cost,
    /// and when every worker is busy nobody takes it. With lazy joins the half stays on a
    /// private stack, pushed and popped without a fence; the worker offers its private halves,
    /// oldest first, at its next `join` made while some worker wants work (searches or
    /// sleeps), at every spawn, task or kicked successor, at [`yield_now`](crate::yield_now),
    /// and before it waits, so its jobs run in the order they would without lazy joins. So
    /// fine recursive fork-join (every first half joining again soon) runs at a fraction of
    /// the cost, with the same parallelism.
    ///
    /// A first half that runs long without joining, or blocks on its second half outside
    /// ember (a channel, a lock, a flag the second half sets), never offers it. So a worker
    /// that found no work steals the oldest private half of another worker on its way to
    /// sleep, behind a heavy barrier (a `membarrier` system call, which the owner's side
    /// never pays): such a half waits for a free worker no longer than that worker spins
    /// before it sleeps. Where the system lacks the heavy barrier there is no such steal,
    /// which is why lazy joins are off there on several workers: turned on, a first half
    /// must not wait for its second other than through ember (a `join`, a wait, or
    /// [`yield_now`](crate::yield_now)/[`yield_local`](crate::yield_local), which offer
    /// the private halves), or it may wait forever: `lazy_joins(true)` keeps them off there,
    /// and [`lazy_joins_unchecked(true)`](Self::lazy_joins_unchecked) turns them on all the
    /// same. `lazy_joins(false)` offers every half at once; the lab's `micro` tables show it as
    /// the `ember-offered` row.
    ///
    /// A pool of one worker has them unless told otherwise. Nobody but that worker can run
    /// what is on its deque, and it runs its jobs in the same order with or without them: a
    /// first half that blocks on its second outside ember hangs a one-worker pool either
    /// way.
    ///
    /// ```
    /// let offered = ember::Tuning::new().lazy_joins(false);
    /// let pool = ember::Pool::builder().threads(2).tuning(offered).build().unwrap();
    /// fn fib(n: u64) -> u64 {
    ///     if n < 2 {
    ///         return n;
    ///     }
    ///     let (a, b) = ember::join(|| fib(n - 1), || fib(n - 2));
    ///     a + b
    /// }
    /// assert_eq!(pool.install(|| fib(25)), 75_025);
    /// ```
    pub fn lazy_joins(mut self, on: bool) -> Self {
        self.lazy_joins = if on { None } else { Some(false) };
        self
    }

    /// [`lazy_joins`](Self::lazy_joins), except that `true` turns lazy joins on also where
    /// the system lacks the heavy barrier a worker about to sleep needs to steal a private
    /// half. There, a first half that waits for its second other than through ember (a
    /// channel, a lock, a flag) may wait forever; `false` is `lazy_joins(false)`.
    ///
    /// ```
    /// let lazy = ember::Tuning::new().lazy_joins_unchecked(true);
    /// let pool = ember::Pool::builder().threads(2).tuning(lazy).build().unwrap();
    /// assert_eq!(pool.join(|| 1, || 2), (1, 2));
    /// ```
    pub fn lazy_joins_unchecked(mut self, on: bool) -> Self {
        self.lazy_joins = Some(on);
        self
    }

    /// Whether most `join`s made while every worker is busy run their two closures one after
    /// the other, as plain calls, keeping nothing for thieves (default: off). For fork-join
    /// code whose two halves never wait for each other: with it on, such a wait can hang
    /// even while other workers are idle, which is what `_unchecked` in its name says: ember
    /// cannot check that a program keeps the rule below.
    ///
    /// With lazy joins, a `join` made while no worker wants work keeps its second half on a
    /// private stack that a worker about to sleep may steal from, and takes it back after the
    /// first half: a few dozen instructions and several memory accesses per `join`, which fine
    /// recursion over data that misses the cache pays at every node. With sequential joins, a
    /// `join` made while no worker wants work, and while this worker already keeps at least
    /// three second halves of earlier `join`s (which thieves can still take), runs `a` and then
    /// `b` with none of that; once a worker wants work, the next `join` offers the kept halves
    /// as always. This follows the chili crate's `join` (<https://github.com/dragostis/chili>),
    /// which runs most `join`s as two calls and publishes work on a heartbeat; here, a worker
    /// that wants work is the signal, and nothing ticks while the pool is idle. The lab's
    /// `micro` fork-join and tree-sum tables show it as the `ember-seq-joins` row.
    ///
    /// The price is the guarantees lazy joins keep. A second half run this way is nobody's to
    /// steal while its first half runs, so a first half that waits for it, by any means (a
    /// channel, a lock, a flag; and here through ember as well: [`yield_now`](crate::yield_now),
    /// a scope, a task, a wait on another pool), waits forever. And the second half runs as
    /// soon as the first returns, before the jobs the first half spawned, which without this
    /// run first on the worker: a second half that waits for one of them may wait forever
    /// too. Neither half, nor anything it runs or spawns, may wait for the other half or for
    /// what the other half spawned. A panic in `a`
    /// is re-raised once `b` has run, as in every `join`. It takes effect only with lazy joins
    /// ([`lazy_joins`](Self::lazy_joins); on by default on Linux), and changes no other
    /// operation: `scope`, spawns and tasks run as without it.
    ///
    /// ```
    /// let pool = ember::Pool::builder()
    ///     .threads(2)
    ///     .tuning(ember::Tuning::new().sequential_joins_unchecked(true))
    ///     .build()
    ///     .unwrap();
    /// fn fib(n: u64) -> u64 {
    ///     if n < 2 {
    ///         return n;
    ///     }
    ///     let (a, b) = ember::join(|| fib(n - 1), || fib(n - 2));
    ///     a + b
    /// }
    /// assert_eq!(pool.install(|| fib(25)), 75_025);
    /// ```
    pub fn sequential_joins_unchecked(mut self, on: bool) -> Self {
        self.sequential_joins = on;
        self
    }
}

/// Everything a pool's protocols read, decided once by `PoolBuilder::build` from the builder
/// and its [`Tuning`]; the registry keeps it (`Registry::config`), and the sleep state and
/// each worker take what they need from it when they are made.
#[derive(Clone, Debug)]
pub(crate) struct PoolConfig {
    /// Worker threads (at least one).
    pub(crate) workers: usize,
    pub(crate) wake: WakePolicy,
    /// `Tuning::delay_kick`.
    pub(crate) delay_kick: bool,
    /// `Tuning::defer_wakeups`: the alarm's bound in nanoseconds, or `None` (not clamped yet:
    /// the deferral state does that, `wake/deferred.rs`).
    pub(crate) defer_ns: Option<u64>,
    /// `Tuning::lazy_joins`, its default decided.
    pub(crate) lazy_joins: bool,
    /// `Tuning::sequential_joins_unchecked`, and only with lazy joins.
    pub(crate) sequential_joins: bool,
    /// `PoolBuilder::spin`, clamped to `PoolBuilder::MAX_SPIN`.
    pub(crate) spin: Duration,
}

impl PoolConfig {
    /// Resolves `tuning` for a pool of `workers` workers.
    pub(crate) fn resolve(
        tuning: &Tuning,
        workers: usize,
        wake: WakePolicy,
        spin: Duration,
    ) -> Self {
        // One worker has no thief: offering a half costs a push and a fenced pop for nobody,
        // and keeping it private changes nothing else. Several workers keep halves private
        // where a worker about to sleep can still steal them, behind the heavy barrier
        // (`Tuning::lazy_joins`).
        let lazy_joins = tuning
            .lazy_joins
            .unwrap_or(workers == 1 || crate::sync::asymmetric::available());
        PoolConfig {
            workers,
            wake,
            delay_kick: tuning.delay_kick,
            defer_ns: tuning
                .defer_wakeups
                .map(|bound| u64::try_from(bound.as_nanos()).unwrap_or(u64::MAX)),
            lazy_joins,
            sequential_joins: tuning.sequential_joins && lazy_joins,
            spin,
        }
    }

    /// The configuration the loom models drive: `workers` workers under `wake`, every
    /// switch off.
    #[cfg(all(test, loom))]
    pub(crate) fn for_model(wake: WakePolicy, workers: usize) -> Self {
        PoolConfig {
            workers,
            wake,
            delay_kick: false,
            defer_ns: None,
            lazy_joins: false,
            sequential_joins: false,
            spin: Duration::ZERO,
        }
    }
}
