//! `PoolBuilder`: configuration, checked before any thread starts.

use std::panic::{self, AssertUnwindSafe};
use std::sync::Arc;
use std::time::Duration;

use crossbeam_deque::Worker;

use super::handlers::{ContainedHandlers, Handlers, PanicHandler, ThreadHandler};
use super::{Pool, PoolInner};
use crate::config::{PoolConfig, Tuning};
use crate::error::BuildError;
use crate::pool::jobs::job::Panic;
use crate::pool::jobs::unwind::drop_silently;
use crate::pool::workers::alarm_thread::AlarmThread;
use crate::pool::workers::registry::Registry;
use crate::pool::workers::worker::WorkerThread;
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
    tuning: Tuning,
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
            tuning: Tuning::default(),
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
            .field("tuning", &self.tuning)
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
    /// [`WakePolicy`] and [`Tuning`], threads named `ember-0`, `ember-1`, ….
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

    /// The protocol switches (lazy and sequential joins, deferred wake-ups, delay-kick): see
    /// [`Tuning`]. Each call replaces the whole value; the default is [`Tuning::default`].
    ///
    /// ```
    /// let tuning = ember::Tuning::new().delay_kick(false);
    /// let pool = ember::Pool::builder().threads(2).tuning(tuning).build()?;
    /// assert_eq!(pool.join(|| 1, || 2), (1, 2));
    /// # Ok::<(), ember::BuildError>(())
    /// ```
    pub fn tuning(mut self, tuning: Tuning) -> Self {
        self.tuning = tuning;
        self
    }

    /// [`Tuning::delay_kick`], on this builder's tuning.
    #[deprecated(note = "use PoolBuilder::tuning(Tuning::new().delay_kick(..))")]
    pub fn delay_kick(mut self, on: bool) -> Self {
        self.tuning = self.tuning.delay_kick(on);
        self
    }

    /// [`Tuning::defer_wakeups`], on this builder's tuning.
    #[deprecated(note = "use PoolBuilder::tuning(Tuning::new().defer_wakeups(..))")]
    pub fn defer_wakeups(mut self, on: bool) -> Self {
        self.tuning = self.tuning.defer_wakeups(on);
        self
    }

    /// [`Tuning::defer_wakeups_for`], on this builder's tuning.
    #[deprecated(note = "use PoolBuilder::tuning(Tuning::new().defer_wakeups_for(..))")]
    pub fn defer_wakeups_for(mut self, bound: Duration) -> Self {
        self.tuning = self.tuning.defer_wakeups_for(bound);
        self
    }

    /// [`Tuning::lazy_joins_unchecked`] (`true` turned lazy joins on also where the system
    /// lacks the heavy barrier), on this builder's tuning.
    #[deprecated(
        note = "use PoolBuilder::tuning(Tuning::new().lazy_joins(..)), or lazy_joins_unchecked to force them on"
    )]
    pub fn lazy_joins(mut self, on: bool) -> Self {
        self.tuning = self.tuning.lazy_joins_unchecked(on);
        self
    }

    /// [`Tuning::sequential_joins_unchecked`], on this builder's tuning.
    #[deprecated(note = "use PoolBuilder::tuning(Tuning::new().sequential_joins_unchecked(..))")]
    pub fn sequential_joins(mut self, on: bool) -> Self {
        self.tuning = self.tuning.sequential_joins_unchecked(on);
        self
    }

    /// Prefix of the worker threads' names: `name-0`, `name-1`, … (default `ember`), and the
    /// name of the pool's alarm thread, `name-alarm`, where it defers wake-ups
    /// ([`Tuning::defer_wakeups`]). [`thread_name`](Self::thread_name)
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
        crate::pool::ops::ambient::build_global(self, None)
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
        // Resolved (and refused) before the handlers are taken: no user code drops here.
        let config = PoolConfig::resolve(&self.tuning, threads, self.wake, self.spin)?;
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
            config,
            handlers,
            Tracer::new(self.trace, self.name.clone(), threads),
            AlarmThread::new(&self.name, self.stack_size, cpus.clone()),
        ));
        // The budget is the process's; the loom models drive pools without it.
        #[cfg(not(loom))]
        if registry.config.awake_budget {
            let member: std::sync::Weak<dyn crate::budget::Member> =
                Arc::downgrade(&registry) as std::sync::Weak<Registry>;
            registry
                .sleep
                .join_budget(member, registry.config.machine_budget);
        }
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
                    WorkerThread::run(worker_registry, index, local, &pool_name);
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
