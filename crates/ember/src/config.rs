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
use crate::BuildError;

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
    /// `None`: on exactly when the machine-wide budget is.
    awake_budget: Option<bool>,
    /// `None`: from `EMBER_MACHINE_BUDGET`.
    machine_budget: Option<bool>,
}

impl Default for Tuning {
    fn default() -> Self {
        Tuning {
            delay_kick: true,
            defer_wakeups: Some(Duration::from_nanos(DEFAULT_DEFER_NS)),
            lazy_joins: None,
            sequential_joins: false,
            awake_budget: None,
            machine_budget: None,
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

    /// Whether a spawn that would wake a sleeper owes that wake-up instead (default `true`).
    ///
    /// It applies to a job spawned by a worker onto its own empty deque, under
    /// [`WakePolicy::Searching`], on Linux, in pools of several workers. Elsewhere it changes
    /// nothing and no alarm thread starts. It covers [`Pool::spawn`](crate::Pool::spawn),
    /// [`spawn_fifo`](crate::Pool::spawn_fifo) and [`ember::spawn`](crate::spawn) inside the
    /// pool; `join` and `scope` are unaffected.
    ///
    /// The job is stealable at once; only the wake-up waits. The spawner's next push makes
    /// it. Its next look for work voids it by taking the job back. So a job that spawns its
    /// successor as its last act wakes nobody, and a chain of spawns stays on one thread. If
    /// the spawner runs on instead, an alarm makes the wake-up 100 µs after the spawn, plus
    /// the alarm's latency. The alarm is a `timerfd` with one more thread per pool,
    /// `NAME-alarm`. That thread starts at the first spawn that would owe, which wakes at
    /// once, so a pool that only joins, scopes or takes spawns from outside never has it.
    /// [`PoolStats::longest_deferral`](crate::PoolStats) reports the longest a wake-up stayed
    /// owed.
    ///
    /// Costs and hazards. Keeping the alarm ahead of a chain of spawns means moving a timer
    /// about every 75 µs, a system call. A job that spawns and runs on holds its successor
    /// for the bound before a sleeper is woken. Once the alarm has made one of a worker's
    /// wake-ups, that worker's next 16 owing spawns wake at once, so such a job loses the
    /// bound about once in 17 spawns. `defer_wakeups(false)` wakes at the push whenever
    /// Searching's rule asks for one. [`defer_wakeups_for`](Self::defer_wakeups_for) sets a
    /// longer bound, which moves the timer less often. The lab measures the trade
    /// (`crates/ember-lab/MEASUREMENTS.md`, "Deferred wake-ups").
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
    /// 100 µs. Bounds are held between 10 µs and 1 s. A longer bound moves the alarm less
    /// often, which helps where setting a timer is slow. The hazard: a spawner runs on
    /// longer before a sleeper is woken for its spawned job. Of this and
    /// [`defer_wakeups`](Self::defer_wakeups), the last call wins.
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
    /// instead of offering it to thieves. Default: on where the system has the heavy barrier
    /// private steals need (`membarrier`, Linux 4.14 and later), and on a pool of one worker
    /// everywhere; off otherwise.
    ///
    /// Offering the half costs a deque push and a fenced pop back, most of a `join`'s cost.
    /// When every worker is busy, nobody takes it. With lazy joins the half stays on a
    /// private stack, pushed and popped without a fence. The worker offers its private
    /// halves, oldest first, at its next `join` made while some worker wants work (searches
    /// or sleeps). It also offers them at every spawn, task or kicked successor, at
    /// [`yield_now`](crate::yield_now), and before it waits. So its jobs run in the order
    /// they would without lazy joins. Fine recursive fork-join then runs at a fraction of
    /// the cost, with the same parallelism.
    ///
    /// A first half that runs long without joining, or blocks on its second half outside
    /// ember (a channel, a lock, a flag), never offers it. So a worker that found no work
    /// steals the oldest private half of another worker on its way to sleep. The steal sits
    /// behind a heavy barrier, a `membarrier` system call the owner never pays. Such a half
    /// waits for a free worker no longer than that worker spins before it sleeps.
    ///
    /// The hazard: without the heavy barrier there is no such steal, so `lazy_joins(true)`
    /// keeps them off there on several workers.
    /// [`lazy_joins_unchecked(true)`](Self::lazy_joins_unchecked) turns them on all the same.
    /// `lazy_joins(false)` offers every half at once.
    ///
    /// A pool of one worker has them unless told otherwise. Nobody else can run what is on
    /// its deque, and it runs its jobs in the same order either way. A first half that
    /// blocks on its second outside ember hangs a one-worker pool with or without them.
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
    /// the other, as plain calls, keeping nothing for thieves (default: off). It is for
    /// fork-join code whose two halves never wait for each other. With it on, such a wait
    /// can hang even while other workers are idle; `_unchecked` says ember cannot check the
    /// rule below.
    ///
    /// With lazy joins, a `join` made while no worker wants work keeps its second half on a
    /// private stack, and takes it back after the first half. That costs a few dozen
    /// instructions and several memory accesses per `join`. Fine recursion over data that
    /// misses the cache pays it at every node. With sequential joins, such a `join` runs `a`
    /// and then `b` with none of that, once this worker already keeps at least three second
    /// halves of earlier `join`s. Thieves can still take those. Once a worker wants work, the
    /// next `join` offers the kept halves as always. This follows the chili crate's `join`
    /// (<https://github.com/dragostis/chili>), which runs most `join`s as two calls and
    /// publishes work on a heartbeat. Here a worker that wants work is the signal, and
    /// nothing ticks while the pool is idle.
    ///
    /// The hazard: it gives up the guarantees lazy joins keep. A second half run this way is
    /// nobody's to steal while its first half runs. A first half that waits for it by any
    /// means waits forever: a channel, a lock, a flag, and here ember too
    /// ([`yield_now`](crate::yield_now), a scope, a task, a wait on another pool). And the
    /// second half runs as soon as the first returns, before the jobs the first half
    /// spawned. A second half that waits for one of them may wait forever too. So neither
    /// half, nor anything it runs or spawns, may wait for the other half or for what it
    /// spawned. A panic in `a` is re-raised once `b` has run, as in every `join`. It takes
    /// effect only with lazy joins ([`lazy_joins`](Self::lazy_joins); on by default on
    /// Linux). `scope`, spawns and tasks run as without it.
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

    /// Whether the pool shares the process's awake-core budget with the process's other
    /// pools (`wake/README.md`, "Budget"). Default: off, unless the machine-wide budget is
    /// on ([`machine_budget`](Self::machine_budget), or `EMBER_MACHINE_BUDGET=1` for an
    /// unmodified binary), which needs it.
    ///
    /// While two or more pools of the process have awake workers, a wake-up that would take
    /// the awake workers of all of them past the cores the process may use is withheld,
    /// unless the pool has no awake worker. A withheld wake-up is made by the next worker
    /// that parks in another pool, or 1 ms later if its job is still queued. A pool alone
    /// in its process behaves as if it had no budget. `false` leaves the pool out: its
    /// wake-ups are never withheld, and its workers count for nobody.
    ///
    /// The hazard, and why it is off by default: a withheld wake-up whose job is still
    /// queued after the bound is made by a timer thread. Where jobs run longer than the
    /// bound, that thread's switches come on top of the wake-up it deferred, so the pools
    /// can switch more than without a budget (`crates/ember-lab/MEASUREMENTS.md`,
    /// "The awake-core budget (several pools)").
    ///
    /// ```
    /// let alone = ember::Tuning::new().awake_budget(false);
    /// let pool = ember::Pool::builder().threads(2).tuning(alone).build().unwrap();
    /// assert_eq!(pool.join(|| 1, || 2), (1, 2));
    /// ```
    pub fn awake_budget(mut self, on: bool) -> Self {
        self.awake_budget = Some(on);
        self
    }

    /// Whether the pool's awake workers also count against the other processes of the
    /// machine that joined the machine-wide budget, and theirs against it (Linux only).
    /// Default: on if the environment has `EMBER_MACHINE_BUDGET=1`, off if it is unset or
    /// `0`; another value is refused by `build`. It turns
    /// [`awake_budget`](Self::awake_budget) on unless that is set to `false`, which leaves
    /// the pool out of both.
    ///
    /// The processes share a segment of shared memory, one per user (mode 0600). Each
    /// publishes its count as a lease of 100 ms that it renews at its wake-up decisions; a
    /// process killed while it holds one costs the others nothing once it expires. A process
    /// counts the others whose CPUs overlap its own, against the cores it may use. A
    /// segment of another layout, or not private to the user, is ignored with a warning on
    /// stderr. `machine_budget(true)` off Linux is refused by `build`.
    ///
    /// ```
    /// let tuning = ember::Tuning::new().machine_budget(false);
    /// let pool = ember::Pool::builder().threads(2).tuning(tuning).build().unwrap();
    /// assert_eq!(pool.install(|| 2 + 2), 4);
    /// ```
    pub fn machine_budget(mut self, on: bool) -> Self {
        self.machine_budget = Some(on);
        self
    }
}

/// What `EMBER_MACHINE_BUDGET` asks for: `Ok(None)` if unset.
fn machine_budget_var() -> Result<Option<bool>, BuildError> {
    match std::env::var("EMBER_MACHINE_BUDGET") {
        Err(std::env::VarError::NotPresent) => Ok(None),
        Ok(v) if v == "1" => Ok(Some(true)),
        Ok(v) if v == "0" || v.is_empty() => Ok(Some(false)),
        Ok(value) => Err(BuildError::MachineBudgetVar { value }),
        Err(std::env::VarError::NotUnicode(v)) => Err(BuildError::MachineBudgetVar {
            value: v.to_string_lossy().into_owned(),
        }),
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
    /// `Tuning::awake_budget` (pools join no budget under loom).
    #[cfg_attr(loom, allow(dead_code))]
    pub(crate) awake_budget: bool,
    /// `Tuning::machine_budget`, the environment read.
    #[cfg_attr(loom, allow(dead_code))]
    pub(crate) machine_budget: bool,
}

impl PoolConfig {
    /// Resolves `tuning` for a pool of `workers` workers.
    pub(crate) fn resolve(
        tuning: &Tuning,
        workers: usize,
        wake: WakePolicy,
        spin: Duration,
    ) -> Result<Self, BuildError> {
        let machine_budget = match (tuning.awake_budget, tuning.machine_budget) {
            // A pool left out of the budget reads no variable of the budget's.
            (Some(false), _) => false,
            (_, Some(on)) => on,
            (_, None) => machine_budget_var()?.unwrap_or(false),
        };
        if machine_budget && !cfg!(target_os = "linux") {
            return Err(BuildError::MachineBudgetUnsupported);
        }
        // One worker has no thief: offering a half costs a push and a fenced pop for nobody,
        // and keeping it private changes nothing else. Several workers keep halves private
        // where a worker about to sleep can still steal them, behind the heavy barrier
        // (`Tuning::lazy_joins`).
        let lazy_joins = tuning
            .lazy_joins
            .unwrap_or(workers == 1 || crate::sync::asymmetric::available());
        Ok(PoolConfig {
            workers,
            wake,
            delay_kick: tuning.delay_kick,
            defer_ns: tuning
                .defer_wakeups
                .map(|bound| u64::try_from(bound.as_nanos()).unwrap_or(u64::MAX)),
            lazy_joins,
            sequential_joins: tuning.sequential_joins && lazy_joins,
            spin,
            awake_budget: tuning.awake_budget.unwrap_or(machine_budget),
            machine_budget: tuning.awake_budget.unwrap_or(true) && machine_budget,
        })
    }

    /// The configuration the loom models (and the wake state's unit tests) drive: `workers`
    /// workers under `wake`, every switch off.
    #[cfg(test)]
    pub(crate) fn for_model(wake: WakePolicy, workers: usize) -> Self {
        PoolConfig {
            workers,
            wake,
            delay_kick: false,
            defer_ns: None,
            lazy_joins: false,
            sequential_joins: false,
            spin: Duration::ZERO,
            awake_budget: false,
            machine_budget: false,
        }
    }
}
