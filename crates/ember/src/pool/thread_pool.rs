//! rayon's names for the pool and its builder, so that rayon code ports by changing imports:
//! [`ThreadPool`] is [`Pool`], [`ThreadPoolBuildError`] is [`BuildError`], and
//! [`ThreadPoolBuilder`] takes rayon's builder methods, with rayon's meanings, onto a
//! [`PoolBuilder`].

use super::builder::LocalNamer;
use super::ops::ambient;
use super::{Pool, PoolBuilder};
use crate::error::BuildError;

/// rayon's name for [`Pool`]: `install`, `join`, `scope`, `scope_fifo`, `in_place_scope`,
/// `spawn`, `spawn_fifo`, `broadcast`, `current_num_threads`, `current_thread_index`,
/// `yield_now` and `yield_local` are all there, with rayon's signatures. Unlike rayon's, a
/// `Pool` is a cheap `Clone` handle, and dropping the last handle outside the pool waits for
/// the workers to finish.
///
/// ```
/// use ember::{ThreadPool, ThreadPoolBuilder};
/// let pool: ThreadPool = ThreadPoolBuilder::new().num_threads(2).build().unwrap();
/// assert_eq!(pool.install(|| ember::current_num_threads()), 2);
/// ```
pub type ThreadPool = Pool;

/// rayon's name for [`BuildError`], which says what went wrong and what to change.
///
/// ```
/// use ember::ThreadPoolBuilder;
/// ember::current_num_threads(); // the global pool exists from here on
/// let err: ember::ThreadPoolBuildError = ThreadPoolBuilder::new().build_global().unwrap_err();
/// assert!(err.to_string().contains("global pool exists already"));
/// ```
pub type ThreadPoolBuildError = BuildError;

/// rayon's `ThreadPoolBuilder`: rayon's methods, with rayon's meanings, for porting rayon code
/// as it is. [`PoolBuilder`] (`Pool::builder()`) is ember's own builder, with ember's settings
/// (the wake policy, a name prefix, deferred wake-ups, …); its [`threads(0)`](PoolBuilder::threads)
/// is an error where rayon's `num_threads(0)` means "automatic".
///
/// Not here: `spawn_handler`, `build_scoped` and `use_current_thread` (ember starts its
/// workers itself, as `std` threads, and never adopts the calling thread), and the deprecated
/// `breadth_first`.
///
/// ```
/// use ember::ThreadPoolBuilder;
/// let pool = ThreadPoolBuilder::new()
///     .num_threads(3)
///     .thread_name(|i| format!("decoder #{i}"))
///     .build()?;
/// let names = pool.broadcast(|_| std::thread::current().name().unwrap().to_owned());
/// assert_eq!(names, ["decoder #0", "decoder #1", "decoder #2"]);
/// # Ok::<(), ember::ThreadPoolBuildError>(())
/// ```
#[must_use = "a builder does nothing until `build` is called"]
#[derive(Default)]
pub struct ThreadPoolBuilder {
    builder: PoolBuilder,
    /// `0`: automatic.
    num_threads: usize,
    /// The naming closure; rayon's need not be `Send`, as it runs on the building thread.
    thread_name: Option<LocalNamer<'static>>,
}

impl std::fmt::Debug for ThreadPoolBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ThreadPoolBuilder")
            .field("num_threads", &self.num_threads)
            .field("builder", &self.builder)
            .field("thread_name", &self.thread_name.is_some())
            .finish()
    }
}

impl ThreadPoolBuilder {
    /// A builder with rayon's defaults: one worker per CPU (or `EMBER_NUM_THREADS`), the
    /// standard library's stack size, no handlers. ember's other settings keep their
    /// defaults ([`PoolBuilder::new`]).
    ///
    /// ```
    /// let pool = ember::ThreadPoolBuilder::new().build().unwrap();
    /// assert!(pool.current_num_threads() >= 1);
    /// ```
    pub fn new() -> Self {
        Self::default()
    }

    /// The number of worker threads. `0`, the default, means automatic, as in rayon: the
    /// value of `EMBER_NUM_THREADS` (ember's `RAYON_NUM_THREADS`) if it is set to a number
    /// other than 0, else one per available CPU. More than
    /// [`PoolBuilder::MAX_THREADS`] is an error at `build` (rayon silently builds its
    /// maximum), and so is an `EMBER_NUM_THREADS` that is not a number (rayon ignores it).
    ///
    /// ```
    /// let pool = ember::ThreadPoolBuilder::new().num_threads(2).build().unwrap();
    /// assert_eq!(pool.current_num_threads(), 2);
    /// let automatic = ember::ThreadPoolBuilder::new().num_threads(0).build().unwrap();
    /// assert!(automatic.current_num_threads() >= 1);
    /// ```
    pub fn num_threads(mut self, num_threads: usize) -> Self {
        self.num_threads = num_threads;
        self
    }

    /// Names worker `i`'s thread `closure(i)` (default: `ember-0`, `ember-1`, …). The closure
    /// runs on the thread that calls `build`, for every worker before any starts, so it need
    /// not be `Send`. A panic in it is re-raised by `build`, and no worker starts (rayon stops
    /// those it had started); a name with a NUL byte is a
    /// [`BuildError::ThreadName`] (rayon panics).
    ///
    /// ```
    /// use std::rc::Rc;
    /// let prefix = Rc::new(String::from("io")); // not `Send`
    /// let pool = ember::ThreadPoolBuilder::new()
    ///     .num_threads(1)
    ///     .thread_name(move |i| format!("{prefix}-{i}"))
    ///     .build()
    ///     .unwrap();
    /// let name = pool.install(|| std::thread::current().name().map(str::to_owned));
    /// assert_eq!(name.as_deref(), Some("io-0"));
    /// ```
    pub fn thread_name<F>(mut self, closure: F) -> Self
    where
        F: FnMut(usize) -> String + 'static,
    {
        self.thread_name = Some(Box::new(closure));
        self
    }

    /// The stack size of each worker thread, in bytes ([`PoolBuilder::stack_size`]).
    ///
    /// ```
    /// let pool = ember::ThreadPoolBuilder::new()
    ///     .num_threads(1)
    ///     .stack_size(8 << 20)
    ///     .build()
    ///     .unwrap();
    /// assert_eq!(pool.install(|| 1 + 1), 2);
    /// ```
    pub fn stack_size(mut self, stack_size: usize) -> Self {
        self.builder = self.builder.stack_size(stack_size);
        self
    }

    /// Called on every worker, with its index, when it starts ([`PoolBuilder::start_handler`]).
    ///
    /// ```
    /// use std::sync::atomic::{AtomicUsize, Ordering};
    /// use std::sync::Arc;
    /// let started = Arc::new(AtomicUsize::new(0));
    /// let counter = Arc::clone(&started);
    /// let pool = ember::ThreadPoolBuilder::new()
    ///     .num_threads(2)
    ///     .start_handler(move |_| {
    ///         counter.fetch_add(1, Ordering::SeqCst);
    ///     })
    ///     .build()
    ///     .unwrap();
    /// pool.broadcast(|_| ()); // every worker has started
    /// assert_eq!(started.load(Ordering::SeqCst), 2);
    /// ```
    pub fn start_handler<H>(mut self, start_handler: H) -> Self
    where
        H: Fn(usize) + Send + Sync + 'static,
    {
        self.builder = self.builder.start_handler(start_handler);
        self
    }

    /// Called on every worker, with its index, as it exits ([`PoolBuilder::exit_handler`]).
    /// Dropping the pool outside it waits for these (rayon's drop does not).
    ///
    /// ```
    /// use std::sync::atomic::{AtomicUsize, Ordering};
    /// use std::sync::Arc;
    /// let exited = Arc::new(AtomicUsize::new(0));
    /// let counter = Arc::clone(&exited);
    /// let pool = ember::ThreadPoolBuilder::new()
    ///     .num_threads(2)
    ///     .exit_handler(move |_| {
    ///         counter.fetch_add(1, Ordering::SeqCst);
    ///     })
    ///     .build()
    ///     .unwrap();
    /// drop(pool);
    /// assert_eq!(exited.load(Ordering::SeqCst), 2);
    /// ```
    pub fn exit_handler<H>(mut self, exit_handler: H) -> Self
    where
        H: Fn(usize) + Send + Sync + 'static,
    {
        self.builder = self.builder.exit_handler(exit_handler);
        self
    }

    /// Called with the payload of every panic nobody waits for, such as a spawned job's
    /// ([`PoolBuilder::panic_handler`]). Without one, ember counts such a panic in
    /// [`PoolStats::panics`](crate::PoolStats::panics) where rayon aborts the process.
    ///
    /// ```
    /// let (tx, rx) = std::sync::mpsc::channel();
    /// let tx = std::sync::Mutex::new(tx);
    /// let pool = ember::ThreadPoolBuilder::new()
    ///     .num_threads(1)
    ///     .panic_handler(move |_payload| tx.lock().unwrap().send(()).unwrap())
    ///     .build()
    ///     .unwrap();
    /// pool.spawn(|| panic!("lost cause"));
    /// rx.recv().unwrap();
    /// ```
    pub fn panic_handler<H>(mut self, panic_handler: H) -> Self
    where
        H: Fn(Box<dyn std::any::Any + Send>) + Send + Sync + 'static,
    {
        self.builder = self.builder.panic_handler(panic_handler);
        self
    }

    /// Builds the pool.
    ///
    /// # Errors
    /// A [`ThreadPoolBuildError`] whose message says what to change: too many threads, an
    /// `EMBER_NUM_THREADS` that is not a number, a thread name with a NUL byte, a thread the
    /// operating system would not start.
    ///
    /// ```
    /// let pool = ember::ThreadPoolBuilder::new().num_threads(4).build()?;
    /// assert_eq!(pool.join(|| 1, || 2), (1, 2));
    /// # Ok::<(), ember::ThreadPoolBuildError>(())
    /// ```
    pub fn build(self) -> Result<ThreadPool, ThreadPoolBuildError> {
        let (builder, namer) = self.into_parts();
        let builder = ambient::sized_by_env(builder)?;
        match namer {
            Some(namer) => builder.build_named(Some(namer)),
            None => builder.build(),
        }
    }

    /// Builds the pool and makes it the global pool, which the free functions
    /// ([`ember::join`](crate::join), [`ember::spawn`](crate::spawn), …) use outside every
    /// pool, as in rayon.
    ///
    /// # Errors
    /// [`BuildError::GlobalPoolExists`] if the global pool exists already: built before, or
    /// by a free function that needed it (as in rayon, a second `build_global` fails); and
    /// what [`build`](Self::build) returns.
    ///
    /// ```no_run
    /// ember::ThreadPoolBuilder::new().num_threads(4).build_global()?;
    /// assert_eq!(ember::current_num_threads(), 4);
    /// assert!(ember::ThreadPoolBuilder::new().build_global().is_err());
    /// # Ok::<(), ember::ThreadPoolBuildError>(())
    /// ```
    pub fn build_global(self) -> Result<(), ThreadPoolBuildError> {
        let (builder, namer) = self.into_parts();
        ambient::build_global(builder, namer)
    }

    /// The [`PoolBuilder`] (its `threads` left unset for automatic) and the naming closure.
    fn into_parts(self) -> (PoolBuilder, Option<LocalNamer<'static>>) {
        let builder = match self.num_threads {
            0 => self.builder,
            n => self.builder.threads(n),
        };
        (builder, self.thread_name)
    }
}

/// The most worker threads a pool may have ([`PoolBuilder::MAX_THREADS`]), as rayon's
/// `max_num_threads`. rayon builds that many when asked for more; ember's builders return
/// [`BuildError::TooManyThreads`].
///
/// ```
/// assert_eq!(ember::max_num_threads(), ember::PoolBuilder::MAX_THREADS);
/// ```
pub fn max_num_threads() -> usize {
    PoolBuilder::MAX_THREADS
}
