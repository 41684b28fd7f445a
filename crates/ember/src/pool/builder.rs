//! `PoolBuilder`: configuration, checked before any thread starts.

use std::sync::Arc;
use std::time::Duration;

use crossbeam_deque::Worker;

use super::job::Panic;
use super::registry::Registry;
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
    name: String,
    spin: Duration,
    stack_size: Option<usize>,
    trace: bool,
    panic_handler: Option<Box<dyn Fn(Panic) + Send + Sync>>,
}

impl Default for PoolBuilder {
    fn default() -> Self {
        PoolBuilder {
            threads: None,
            wake: WakePolicy::default(),
            delay_kick: true,
            name: "ember".to_owned(),
            spin: DEFAULT_SPIN,
            stack_size: None,
            trace: false,
            panic_handler: None,
        }
    }
}

impl std::fmt::Debug for PoolBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PoolBuilder")
            .field("threads", &self.threads)
            .field("wake", &self.wake)
            .field("delay_kick", &self.delay_kick)
            .field("name", &self.name)
            .field("spin", &self.spin)
            .field("stack_size", &self.stack_size)
            .field("trace", &self.trace)
            .field("panic_handler", &self.panic_handler.is_some())
            .finish()
    }
}

impl PoolBuilder {
    /// A builder with the defaults: one worker per available CPU, the default
    /// [`WakePolicy`], delay-kick on, threads named `ember-0`, `ember-1`, ….
    pub fn new() -> Self {
        Self::default()
    }

    /// Number of worker threads (at least 1). Default: [`std::thread::available_parallelism`].
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
    /// until it next looks for work (default `true`). Plain `spawn`, `join` and `scope` have
    /// no successors, so for them this changes nothing.
    pub fn delay_kick(mut self, on: bool) -> Self {
        self.delay_kick = on;
        self
    }

    /// Prefix of the worker threads' names: `name-0`, `name-1`, … (default `ember`).
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.name = name.into();
        self
    }

    /// How long an idle worker allowed to search keeps looking for work, spinning with
    /// [`std::hint::spin_loop`], before it yields once ([`std::thread::yield_now`]), looks
    /// again and sleeps (default 10 µs). Zero sleeps at once. A worker whose last spins all
    /// found nothing stops spinning until one finds work again (it probes now and then), so a
    /// pool under light load does not burn the spin per job.
    pub fn spin(mut self, spin: Duration) -> Self {
        self.spin = spin;
        self
    }

    /// Records per-thread events (task spans with labels, sleeps, wake-ups, steals, kicks)
    /// for [`Pool::trace`] (default off; off costs one branch per recording point).
    pub fn trace(mut self, on: bool) -> Self {
        self.trace = on;
        self
    }

    /// Stack size of each worker thread, in bytes (default: the standard library's).
    pub fn stack_size(mut self, bytes: usize) -> Self {
        self.stack_size = Some(bytes);
        self
    }

    /// Called with the payload of every panic that escapes a [`Pool::spawn`]ed closure, on
    /// the thread that ran it. The worker survives either way; the panic is also counted in
    /// [`PoolStats::panics`](crate::PoolStats::panics).
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
        super::ambient::build_global(self)
    }

    /// Checks the configuration and starts the workers.
    ///
    /// ```
    /// let err = ember::Pool::builder().threads(0).build().unwrap_err();
    /// assert!(err.to_string().contains("threads"));
    /// ```
    pub fn build(self) -> Result<Pool, BuildError> {
        let threads = match self.threads {
            Some(0) => return Err(BuildError::ZeroThreads),
            Some(n) => n,
            None => std::thread::available_parallelism().map_or(1, |n| n.get()),
        };
        if let WakePolicy::Biased { batch: 0 } = self.wake {
            return Err(BuildError::ZeroBatch);
        }
        let locals: Vec<Worker<_>> = (0..threads).map(|_| Worker::new_lifo()).collect();
        let stealers = locals.iter().map(Worker::stealer).collect();
        let registry = Arc::new(Registry::new(
            stealers,
            self.wake,
            self.delay_kick,
            self.panic_handler,
            Tracer::new(self.trace, self.name.clone(), threads),
        ));
        let mut handles = Vec::with_capacity(threads);
        for (index, local) in locals.into_iter().enumerate() {
            let mut builder = std::thread::Builder::new().name(format!("{}-{index}", self.name));
            if let Some(bytes) = self.stack_size {
                builder = builder.stack_size(bytes);
            }
            let worker_registry = Arc::clone(&registry);
            let spin = self.spin;
            match builder.spawn(move || WorkerThread::run(worker_registry, index, local, spin)) {
                Ok(handle) => handles.push(handle),
                Err(source) => {
                    // Stop the workers already started; the pool never existed.
                    registry.terminate();
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
        Ok(Pool { inner })
    }
}
