//! `PoolBuilder`: configuration, checked before any thread starts.

use std::panic::{self, AssertUnwindSafe};
use std::sync::Arc;
use std::time::Duration;

use crossbeam_deque::Worker;

use super::alarm_thread::AlarmThread;
use super::handlers::{ContainedHandlers, Handlers, PanicHandler, ThreadHandler};
use super::job::Panic;
use super::registry::Registry;
use super::unwind::drop_silently;
use super::worker::WorkerThread;
use super::{Pool, PoolInner};
use crate::error::BuildError;
use crate::trace::Tracer;
use crate::wake::WakePolicy;

/// How long an idle worker that may search keeps looking before it sleeps, by default.
///
/// Long enough to catch the next job of a busy producer without a sleep/wake round trip
/// (a futex wake costs several microseconds), short enough that a pool under light load burns
/// little CPU.
const DEFAULT_SPIN: Duration = Duration::from_micros(10);

/// Configures and builds a [`Pool`].
///
/// ```
/// let pool = ember::Pool::builder()
///     .threads(2)
///     .wake(ember::WakePolicy::Biased { batch: 20 })
///     .name("db-build")
///     .build()?;
/// assert_eq!(pool.threads(), 2);
/// # Ok::<(), ember::BuildError>(())
/// ```
#[must_use = "a builder does nothing until `build` is called"]
pub struct PoolBuilder {
    threads: Option<usize>,
    wake: WakePolicy,
    delay_kick: bool,
    defer_wakeups: Option<Duration>,
    /// `None`: the default, on for one worker only.
    lazy_joins: Option<bool>,
    sequential_joins: bool,
    pin_workers: bool,
    name: String,
    spin: Duration,
    stack_size: Option<usize>,
    trace: bool,
    /// `thread_name`'s closure; a `Mutex` (never contended) keeps the builder `Sync` with an
    /// `FnMut` that is only `Send`.
    thread_name: Option<std::sync::Mutex<ThreadNamer>>,
    panic_handler: Option<PanicHandler>,
    start_handler: Option<ThreadHandler>,
    exit_handler: Option<ThreadHandler>,
    /// Tests only: the operating system "refuses" to start this worker.
    #[cfg(test)]
    refuse_spawn_at: Option<usize>,
    /// Tests only: starting this worker panics (as `std` does on some platforms for a stack
    /// size it cannot set).
    #[cfg(test)]
    panic_spawn_at: Option<usize>,
}

/// Names worker `index`'s thread.
type ThreadNamer = Box<dyn FnMut(usize) -> String + Send>;

/// A [`ThreadNamer`] that stays on the building thread.
pub(crate) type LocalNamer<'a> = Box<dyn FnMut(usize) -> String + 'a>;

impl Default for PoolBuilder {
    fn default() -> Self {
        PoolBuilder {
            threads: None,
            wake: WakePolicy::default(),
            delay_kick: true,
            defer_wakeups: Some(Duration::from_nanos(crate::wake::DEFAULT_DEFER_NS)),
            lazy_joins: None,
            sequential_joins: false,
            pin_workers: false,
            name: "ember".to_owned(),
            spin: DEFAULT_SPIN,
            stack_size: None,
            trace: false,
            thread_name: None,
            panic_handler: None,
            start_handler: None,
            exit_handler: None,
            #[cfg(test)]
            refuse_spawn_at: None,
            #[cfg(test)]
            panic_spawn_at: None,
        }
    }
}

impl std::fmt::Debug for PoolBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PoolBuilder")
            .field("threads", &self.threads)
            .field("wake", &self.wake)
            .field("delay_kick", &self.delay_kick)
            .field("defer_wakeups", &self.defer_wakeups)
            .field("lazy_joins", &self.lazy_joins)
            .field("sequential_joins", &self.sequential_joins)
            .field("pin_workers", &self.pin_workers)
            .field("name", &self.name)
            .field("spin", &self.spin)
            .field("stack_size", &self.stack_size)
            .field("trace", &self.trace)
            .field("thread_name", &self.thread_name.is_some())
            .field("panic_handler", &self.panic_handler.is_some())
            .field("start_handler", &self.start_handler.is_some())
            .field("exit_handler", &self.exit_handler.is_some())
            .finish()
    }
}

impl PoolBuilder {
    /// The longest [`spin`](Self::spin): one hour. A longer one, up to `Duration::MAX` ("spin
    /// forever"), is clamped to it, so that a worker can always add its spin, even ten times
    /// over (a busy pool's longer spin), to the clock.
    pub const MAX_SPIN: Duration = Duration::from_secs(60 * 60);

    /// The most worker threads a pool may have: 65,535, rayon's limit on 64-bit targets. More
    /// ([`threads`](Self::threads) or `EMBER_NUM_THREADS`) is a
    /// [`BuildError::TooManyThreads`], returned before anything is allocated per worker.
    pub const MAX_THREADS: usize = (1 << 16) - 1;

    /// A builder with the defaults: one worker per available CPU, the default
    /// [`WakePolicy`], delay-kick on, threads named `ember-0`, `ember-1`, ….
    pub fn new() -> Self {
        Self::default()
    }

    /// Number of worker threads (at least 1). Default: [`std::thread::available_parallelism`].
    /// (rayon's `num_threads(0)` means "automatic"; here `threads(0)` is a
    /// [`BuildError::ZeroThreads`]: leave it unset for automatic.)
    pub fn threads(mut self, threads: usize) -> Self {
        self.threads = Some(threads);
        self
    }

    /// The wake policy; see [`WakePolicy`].
    pub fn wake(mut self, policy: WakePolicy) -> Self {
        self.wake = policy;
        self
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
    /// nothing and no alarm thread starts. It covers [`Pool::spawn`],
    /// [`spawn_fifo`](Pool::spawn_fifo) and [`ember::spawn`](crate::spawn) inside the pool;
    /// `join` and `scope` are unaffected.
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
    /// let pool = ember::Pool::builder().threads(2).build().unwrap(); // deferring
    /// let waking_at_once = ember::Pool::builder().threads(2).defer_wakeups(false).build();
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
        self.defer_wakeups = on.then_some(Duration::from_nanos(crate::wake::DEFAULT_DEFER_NS));
        self
    }

    /// [`defer_wakeups(true)`](Self::defer_wakeups) with `bound` for the alarm instead of
    /// 100 µs. Bounds are held between 10 µs and 1 s. A longer bound moves the alarm less
    /// often, which helps where setting a timer is slow. The hazard: a spawner runs on
    /// longer before a sleeper is woken for its spawned job. Of this and
    /// [`defer_wakeups`](Self::defer_wakeups), the last call wins.
    ///
    /// ```
    /// let pool = ember::Pool::builder()
    ///     .threads(2)
    ///     .defer_wakeups_for(std::time::Duration::from_millis(1))
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
    /// The hazard: without the heavy barrier there is no such steal, so lazy joins are off
    /// there on several workers. Turned on there, a first half must wait for its second
    /// only through ember: a `join`, a wait, or
    /// [`yield_now`](crate::yield_now)/[`yield_local`](crate::yield_local), which offer the
    /// private halves. Otherwise it may wait forever. `lazy_joins(false)` offers every half
    /// at once.
    ///
    /// A pool of one worker has them unless told otherwise. Nobody else can run what is on
    /// its deque, and it runs its jobs in the same order either way. A first half that
    /// blocks on its second outside ember hangs a one-worker pool with or without them.
    ///
    /// ```
    /// let pool = ember::Pool::builder().threads(2).lazy_joins(true).build().unwrap();
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
        self.lazy_joins = Some(on);
        self
    }

    /// Whether most `join`s made while every worker is busy run their two closures one after
    /// the other, as plain calls, keeping nothing for thieves (default: off). It is for
    /// fork-join code whose two halves never wait for each other. With it on, such a wait
    /// can hang even while other workers are idle.
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
    ///     .sequential_joins(true)
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
    pub fn sequential_joins(mut self, on: bool) -> Self {
        self.sequential_joins = on;
        self
    }

    /// Prefix of the worker threads' names: `name-0`, `name-1`, … (default `ember`), and the
    /// name of the pool's alarm thread, `name-alarm`, where it defers wake-ups
    /// ([`defer_wakeups`](Self::defer_wakeups)). [`thread_name`](Self::thread_name)
    /// overrides it for the workers; the prefix still names the alarm thread, and the pool
    /// in traces.
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.name = name.into();
        self
    }

    /// Names worker `i`'s thread `f(i)`, instead of `name-i` (see [`name`](Self::name)).
    ///
    /// `f` is called for every worker before any thread starts. A panic in it is re-raised by
    /// [`build`](Self::build), and no thread is started. (rayon starts the threads named so
    /// far and stops them again; ember starts none.)
    ///
    /// ```
    /// let pool = ember::Pool::builder()
    ///     .threads(2)
    ///     .thread_name(|i| format!("decoder #{i}"))
    ///     .build()
    ///     .unwrap();
    /// let name = pool.install(|| std::thread::current().name().map(str::to_owned));
    /// assert!(name.unwrap().starts_with("decoder #"));
    /// ```
    pub fn thread_name<F>(mut self, f: F) -> Self
    where
        F: FnMut(usize) -> String + Send + 'static,
    {
        self.thread_name = Some(std::sync::Mutex::new(Box::new(f)));
        self
    }

    /// Called on every worker thread, with its index, when it starts, before it runs any job
    /// (e.g. to set up thread-local state). The worker is already part of the pool there:
    /// [`current_thread_index`](crate::current_thread_index) is its index, and the free
    /// functions ([`ember::spawn`](crate::spawn), …) and
    /// [`Pool::current`](crate::Pool::current) act on this pool. It runs only once every
    /// worker has started: a build that fails runs no handler at all.
    ///
    /// A panic in the handler is caught on the worker, counted in
    /// [`PoolStats::panics`](crate::PoolStats::panics) and passed to the
    /// [`panic_handler`](Self::panic_handler); the worker then starts as usual, as in rayon.
    ///
    /// ```
    /// use std::sync::atomic::{AtomicUsize, Ordering};
    /// use std::sync::Arc;
    /// let started = Arc::new(AtomicUsize::new(0));
    /// let counter = Arc::clone(&started);
    /// let pool = ember::Pool::builder()
    ///     .threads(3)
    ///     .start_handler(move |_index| {
    ///         counter.fetch_add(1, Ordering::SeqCst);
    ///     })
    ///     .build()
    ///     .unwrap();
    /// pool.broadcast(|_| ()); // runs on every worker, so every worker has started
    /// assert_eq!(started.load(Ordering::SeqCst), 3);
    /// ```
    pub fn start_handler<H>(mut self, handler: H) -> Self
    where
        H: Fn(usize) + Send + Sync + 'static,
    {
        self.start_handler = Some(Box::new(handler));
        self
    }

    /// Called on every worker thread, with its index, as it leaves the pool at shutdown,
    /// once the pool has drained. No job of the running pool runs on any worker after its
    /// exit handler began. Jobs the handler spawns still run before the worker exits, on any
    /// worker: the others wait until every handler has returned. The hazard is as in the
    /// running pool: under [`WakePolicy::Biased`](crate::WakePolicy::Biased) a job spawned
    /// onto the worker's own deque wakes nobody. So a handler must not block on one outside
    /// ember (a channel); `join`, `scope` or a task's `join` run it.
    /// Dropping the last [`Pool`] handle outside the pool returns after every exit handler
    /// has returned (rayon's drop returns at once and the handlers run later).
    ///
    /// A panic in the handler is caught, counted in
    /// [`PoolStats::panics`](crate::PoolStats::panics) and passed to the
    /// [`panic_handler`](Self::panic_handler), as for [`start_handler`](Self::start_handler).
    ///
    /// ```
    /// use std::sync::atomic::{AtomicUsize, Ordering};
    /// use std::sync::Arc;
    /// let exited = Arc::new(AtomicUsize::new(0));
    /// let counter = Arc::clone(&exited);
    /// let pool = ember::Pool::builder()
    ///     .threads(3)
    ///     .exit_handler(move |_index| {
    ///         counter.fetch_add(1, Ordering::SeqCst);
    ///     })
    ///     .build()
    ///     .unwrap();
    /// drop(pool); // outside the pool: waits for the workers to exit
    /// assert_eq!(exited.load(Ordering::SeqCst), 3);
    /// ```
    pub fn exit_handler<H>(mut self, handler: H) -> Self
    where
        H: Fn(usize) + Send + Sync + 'static,
    {
        self.exit_handler = Some(Box::new(handler));
        self
    }

    /// How long a worker keeps looking for work before it sleeps (default 10 µs). It applies
    /// to an idle worker allowed to search, and to a worker waiting inside the pool (for its
    /// `join`'s stolen half, a task, a scope). The worker spins with
    /// [`std::hint::spin_loop`], yields once ([`std::thread::yield_now`]), looks again and
    /// sleeps. It spins ten times as long while half the pool's other workers, two at least,
    /// are awake, so a wide parallel stretch stays awake between its rounds. Zero sleeps at
    /// once. A worker whose last spins all found nothing stops spinning until one finds work
    /// again (it probes now and then), so a pool under light load does not burn the spin per
    /// job. A spin longer than [`MAX_SPIN`](Self::MAX_SPIN) (one hour) is clamped to it.
    pub fn spin(mut self, spin: Duration) -> Self {
        self.spin = spin.min(Self::MAX_SPIN);
        self
    }

    /// Pins each worker to one processor (default off): worker `i` to the `i`-th of the
    /// processors the building thread may run on, round-robin when there are more workers
    /// than processors. Linux only; elsewhere, or where the system refuses, workers run
    /// unpinned. [`WorkerStats::pinned_to`](crate::WorkerStats::pinned_to) says where each
    /// worker is pinned.
    ///
    /// Why: on virtual machines whose idle processors read as preempted to the guest, Linux
    /// may queue a woken worker on its waker's busy processor rather than the idle one, so a
    /// job spawned for another worker waits out its spawner (up to the whole of a long
    /// parent). Pinned, the worker is woken on its own processor.
    ///
    /// Hazards:
    /// - A pinned worker cannot move off a processor that other work keeps busy. Pin a pool
    ///   only where it has the processors it pins to: one pool per machine, or pools built
    ///   on disjoint sets from threads already restricted (`taskset`, a cpuset). A container
    ///   whose CPU quota is below the host's processors still sees them all. Several such
    ///   processes would pin to the same first ones.
    /// - Threads inherit their creator's processors. A thread started from inside a pinned
    ///   worker is confined to that worker's one processor, and so is a pool built there
    ///   (the global pool too, if first used there). Start them from outside the pool.
    /// - Machines with more than 1024 processors are not pinned.
    ///
    /// ```
    /// let pool = ember::Pool::builder().threads(2).pin_workers(true).build().unwrap();
    /// assert_eq!(pool.join(|| 1, || 2), (1, 2));
    /// ```
    pub fn pin_workers(mut self, on: bool) -> Self {
        self.pin_workers = on;
        self
    }

    /// Records per-thread events (task spans with labels, sleeps, wake-ups, steals, kicks)
    /// for [`Pool::trace`] (default off; off costs one branch per recording point).
    pub fn trace(mut self, on: bool) -> Self {
        self.trace = on;
        self
    }

    /// Stack size of each worker thread, and of the alarm thread where the pool defers
    /// wake-ups (it runs no jobs), in bytes (default: the standard library's).
    pub fn stack_size(mut self, bytes: usize) -> Self {
        self.stack_size = Some(bytes);
        self
    }

    /// Called with the payload of every panic that escapes a [`Pool::spawn`]ed closure, on
    /// the thread that ran it, and of every other panic of user code nobody waits for (a
    /// start or exit handler's, a second panic of a `join`, …). The worker survives either
    /// way; the panic is also counted in [`PoolStats::panics`](crate::PoolStats::panics).
    /// (Without a handler rayon aborts the process on such a panic; ember counts it.)
    ///
    /// ```
    /// use std::sync::atomic::{AtomicUsize, Ordering};
    /// use std::sync::Arc;
    /// let seen = Arc::new(AtomicUsize::new(0));
    /// let counter = Arc::clone(&seen);
    /// let pool = ember::Pool::builder()
    ///     .threads(1)
    ///     .panic_handler(move |_payload| {
    ///         counter.fetch_add(1, Ordering::SeqCst);
    ///     })
    ///     .build()
    ///     .unwrap();
    /// pool.spawn(|| panic!("lost cause"));
    /// pool.wait_idle();
    /// assert_eq!(seen.load(Ordering::SeqCst), 1);
    /// ```
    pub fn panic_handler<H>(mut self, handler: H) -> Self
    where
        H: Fn(Box<dyn std::any::Any + Send>) + Send + Sync + 'static,
    {
        self.panic_handler = Some(Box::new(handler));
        self
    }

    /// Whether `threads` was set.
    pub(crate) fn has_threads(&self) -> bool {
        self.threads.is_some()
    }

    /// Builds the pool and makes it the global pool, which the free functions
    /// ([`ember::join`](crate::join), …) use outside every pool. Unless [`threads`](Self::threads)
    /// was set, `EMBER_NUM_THREADS` sizes it (`0` or unset: one per CPU).
    ///
    /// # Errors
    /// [`BuildError::GlobalPoolExists`] if the global pool was built already (explicitly, or
    /// by a free function that needed it), [`BuildError::NumThreadsVar`] if `EMBER_NUM_THREADS`
    /// is not a number, and what [`build`](Self::build) returns.
    ///
    /// ```no_run
    /// ember::Pool::builder().threads(4).name("app").build_global()?;
    /// assert_eq!(ember::current_num_threads(), 4);
    /// # Ok::<(), ember::BuildError>(())
    /// ```
    pub fn build_global(self) -> Result<(), BuildError> {
        super::ambient::build_global(self, None)
    }

    /// Checks the configuration and starts the workers.
    ///
    /// ```
    /// let err = ember::Pool::builder().threads(0).build().unwrap_err();
    /// assert!(err.to_string().contains("threads"));
    /// ```
    pub fn build(mut self) -> Result<Pool, BuildError> {
        let namer = self.thread_name.take().map(|namer| {
            let namer: ThreadNamer = namer
                .into_inner()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            namer as LocalNamer<'static>
        });
        self.build_named(namer)
    }

    /// [`build`](Self::build), the workers named by `namer`, which need not be `Send`: it runs
    /// on this thread, before any worker starts. (`ThreadPoolBuilder::thread_name` takes
    /// such a closure, as rayon's does.)
    pub(crate) fn build_named(self, namer: Option<LocalNamer<'_>>) -> Result<Pool, BuildError> {
        let threads = match self.threads {
            Some(0) => return Err(BuildError::ZeroThreads),
            // Checked before the names, deques and counters of each worker are allocated: an
            // allocation that fails aborts the process.
            Some(requested) if requested > Self::MAX_THREADS => {
                return Err(BuildError::TooManyThreads {
                    requested,
                    max: Self::MAX_THREADS,
                })
            }
            Some(n) => n,
            None => std::thread::available_parallelism()
                .map_or(1, |n| n.get())
                .min(Self::MAX_THREADS),
        };
        if let WakePolicy::Biased { batch: 0 } = self.wake {
            return Err(BuildError::ZeroBatch);
        }
        let handlers = Handlers {
            panic: self.panic_handler,
            start: self.start_handler,
            exit: self.exit_handler,
        };
        let names = match thread_names(namer, &self.name, threads) {
            Ok(names) => names,
            Err(payload) => {
                // No thread has started. The handlers go first, their drops contained, so
                // that no user code runs while the naming closure's panic unwinds.
                drop(ContainedHandlers::from(handlers));
                panic::resume_unwind(payload)
            }
        };
        if let Some(index) = names.iter().position(|name| name.contains('\0')) {
            // The operating system takes names as C strings; std would panic at the spawn.
            drop(ContainedHandlers::from(handlers));
            let name = names.into_iter().nth(index).unwrap_or_default();
            return Err(BuildError::ThreadName { index, name });
        }
        let locals: Vec<Worker<_>> = (0..threads).map(|_| Worker::new_lifo()).collect();
        let stealers = locals.iter().map(Worker::stealer).collect();
        let cpus = if self.pin_workers {
            super::affinity::allowed_cpus()
        } else {
            None
        };
        let registry = Arc::new(Registry::new(
            stealers,
            self.wake,
            self.delay_kick,
            self.defer_wakeups,
            // One worker has no thief: offering a half costs a push and a fenced pop for
            // nobody, and keeping it private changes nothing else. Several workers keep halves
            // private where a worker about to sleep can still steal them, behind the heavy
            // barrier (see `lazy_joins`).
            self.lazy_joins
                .unwrap_or(threads == 1 || crate::sync::asymmetric::available()),
            self.sequential_joins,
            handlers,
            Tracer::new(self.trace, self.name.clone(), threads),
            AlarmThread::new(&self.name, self.stack_size, cpus.clone()),
        ));
        let gate = Arc::new(StartGate::default());
        // A panic out of the loop below (`std::thread::Builder::spawn` panics where it cannot
        // set the stack size) must not leave the started workers at the gate for ever.
        let _fail_on_unwind = FailOnUnwind(&gate);
        let mut handles = Vec::with_capacity(threads);
        let pool_name: Arc<str> = Arc::from(self.name.as_str());
        for ((index, local), name) in locals.into_iter().enumerate().zip(names) {
            let mut builder = std::thread::Builder::new().name(name);
            if let Some(bytes) = self.stack_size {
                builder = builder.stack_size(bytes);
            }
            #[cfg(test)]
            if self.refuse_spawn_at == Some(index) {
                builder = builder.stack_size(usize::MAX / 4);
            }
            #[cfg(test)]
            if self.panic_spawn_at == Some(index) {
                panic!("worker {index} cannot be started");
            }
            let (worker_registry, worker_gate) = (Arc::clone(&registry), Arc::clone(&gate));
            let spin = self.spin;
            let pool_name = Arc::clone(&pool_name);
            let cpu = cpus.as_ref().map(|cpus| cpus[index % cpus.len()]);
            let body = move || {
                // Before anything runs on the worker, its start handler included.
                if let Some(cpu) = cpu {
                    if super::affinity::pin_current_thread(cpu) {
                        worker_registry.counters[index]
                            .pinned
                            .store(cpu + 1, std::sync::atomic::Ordering::Relaxed);
                    }
                }
                if worker_gate.wait() {
                    WorkerThread::run(worker_registry, index, local, spin, &pool_name);
                } else {
                    worker_registry.worker_exited(index);
                }
            };
            match builder.spawn(body) {
                Ok(handle) => handles.push(handle),
                Err(source) => {
                    // The pool never existed: the workers started so far leave before they
                    // run anything.
                    gate.open(false);
                    for handle in handles {
                        let _ = handle.join();
                    }
                    return Err(BuildError::Spawn { index, source });
                }
            }
        }
        let inner = Arc::new(PoolInner {
            registry,
            handles: std::sync::Mutex::new(handles),
        });
        let _ = inner.registry.handle.set(Arc::downgrade(&inner));
        gate.open(true);
        Ok(Pool { inner })
    }
}

/// Holds every worker back until the build has started them all, so that no user code (a
/// start handler, a job it spawns, a broadcast) runs in a pool whose build may yet fail, and
/// [`Pool::current`] works in the start handler. Plain `std` locking: it is passed once per
/// worker, far from any hot path.
#[derive(Default)]
struct StartGate {
    /// `None` until the build ends; then whether it succeeded.
    built: std::sync::Mutex<Option<bool>>,
    opened: std::sync::Condvar,
}

impl StartGate {
    /// Ends the build, successful or not; the first call decides.
    fn open(&self, built: bool) {
        self.built
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .get_or_insert(built);
        self.opened.notify_all();
    }

    /// Whether the build succeeded, once it has ended.
    fn wait(&self) -> bool {
        let mut built = self
            .built
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        loop {
            if let Some(built) = *built {
                return built;
            }
            built = self
                .opened
                .wait(built)
                .unwrap_or_else(|poisoned| poisoned.into_inner());
        }
    }
}

/// Fails the build at the gate if it unwinds before the gate opened.
struct FailOnUnwind<'g>(&'g StartGate);

impl Drop for FailOnUnwind<'_> {
    fn drop(&mut self) {
        if std::thread::panicking() {
            self.0.open(false);
        }
    }
}

/// The worker threads' names: `namer(i)`, or `prefix-i` without a namer; or the panic of
/// `namer` (the namer is dropped either way, a panic of its drop dropped).
fn thread_names(
    namer: Option<LocalNamer<'_>>,
    prefix: &str,
    threads: usize,
) -> Result<Vec<String>, Panic> {
    let Some(mut namer) = namer else {
        return Ok((0..threads)
            .map(|index| format!("{prefix}-{index}"))
            .collect());
    };
    let names = panic::catch_unwind(AssertUnwindSafe(|| (0..threads).map(&mut namer).collect()));
    drop_silently(namer);
    names
}

#[cfg(test)]
mod tests {
    use super::PoolBuilder;
    use crate::error::BuildError;
    use crate::wake::WakePolicy;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;

    /// The operating system refuses the third of four workers: the build fails with that
    /// index, and the two started workers leave without running any user code (no start or
    /// exit handler) in a pool that never existed. Before the start gate they ran both
    /// handlers, and any job a start handler spawned.
    #[test]
    fn a_refused_worker_fails_the_build_and_the_started_ones_leave() {
        for wake in [
            WakePolicy::Eager,
            WakePolicy::Searching,
            WakePolicy::Biased { batch: 20 },
        ] {
            let handled = Arc::new(AtomicUsize::new(0));
            let (starts, exits) = (Arc::clone(&handled), Arc::clone(&handled));
            let mut builder = PoolBuilder::new()
                .threads(4)
                .wake(wake)
                .start_handler(move |_| {
                    starts.fetch_add(1, Ordering::SeqCst);
                })
                .exit_handler(move |_| {
                    exits.fetch_add(1, Ordering::SeqCst);
                });
            builder.refuse_spawn_at = Some(2);
            match builder.build() {
                Err(BuildError::Spawn { index: 2, .. }) => {}
                other => panic!("{wake:?}: expected a refused worker 2, got {other:?}"),
            }
            // `build` joined the started workers before it returned.
            assert_eq!(handled.load(Ordering::SeqCst), 0, "{wake:?}");
        }
    }

    /// Starting the third of four workers panics: the panic reaches the caller of `build`,
    /// and the two started workers leave without running user code. Without the gate opened
    /// on unwind they waited at it for ever, holding the registry (and so the handlers) alive:
    /// the drop of the value the handler captured never came.
    #[test]
    fn a_build_that_panics_lets_the_started_workers_leave() {
        struct SignalDrop(std::sync::mpsc::Sender<()>);
        impl Drop for SignalDrop {
            fn drop(&mut self) {
                let _ = self.0.send(());
            }
        }
        let (dropped, registry_gone) = std::sync::mpsc::channel();
        let captured = SignalDrop(dropped);
        let started = Arc::new(AtomicUsize::new(0));
        let starts = Arc::clone(&started);
        let mut builder = PoolBuilder::new().threads(4).start_handler(move |_| {
            let _ = &captured;
            starts.fetch_add(1, Ordering::SeqCst);
        });
        builder.panic_spawn_at = Some(2);
        let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| builder.build()));
        assert!(outcome.is_err(), "the build's panic reaches its caller");
        // A deadlock detector, not a timing threshold: the workers leave at once.
        registry_gone
            .recv_timeout(std::time::Duration::from_secs(60))
            .expect("the started workers still hold the pool");
        assert_eq!(started.load(Ordering::SeqCst), 0);
    }
}
