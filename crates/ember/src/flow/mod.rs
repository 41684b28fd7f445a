//! Flow: tasks that declare what they read and write; ember infers the graph.
//!
//! Instead of wiring `after(..)` by hand, a task declares its accesses to logical buffers
//! ([`BufferId`]) as [`Region`]s; the flow orders every pair of tasks whose accesses overlap and
//! at least one of which writes (read-after-write, write-after-read, write-after-write), in
//! submission order, and runs each task on the pool as a dependent task once its inputs are
//! done. The user owns the data; the flow only tracks the index spaces.
//!
//! ```
//! use std::sync::{Arc, Mutex};
//! use ember::flow::{Flow, FlowOptions, Region};
//!
//! let pool = ember::Pool::builder().threads(2).build().unwrap();
//! let flow = Flow::new(&pool, FlowOptions::default());
//! let a = flow.buffer([4]);
//! let data = Arc::new(Mutex::new(vec![0u64; 4]));
//!
//! for step in 0..3u64 {
//!     let data = data.clone();
//!     flow.submit(|cg| {
//!         cg.read_write(&a, Region::all());
//!         cg.run(move || data.lock().unwrap().iter_mut().for_each(|x| *x = *x * 10 + step));
//!     })?;
//! }
//! flow.wait()?;
//! assert_eq!(*data.lock().unwrap(), vec![12; 4]);
//! println!("{:?}", flow.stats());
//! # Ok::<(), ember::flow::FlowError>(())
//! ```
//!
//! # Buffers that own their data, and range kernels
//!
//! A [`Buffer<T, D>`](Buffer) owns its elements. A command group declares *accessors* on it,
//! each with a [range mapper](map) (a function from a chunk of the kernel's range to the
//! region the chunk touches), and sets a kernel over a range with
//! [`CommandGroup::parallel_for`]. The flow cuts the range into one chunk per worker, runs
//! every chunk as its own task ordered by the regions its mappers give it, and hands the
//! kernel views of exactly those regions ([`Chunk::read`], [`Chunk::write`]).
//! [`Flow::read_back`] copies a buffer out once its last writer has run.
//!
//! ```
//! use ember::flow::{map, Buffer, Flow};
//! # let pool = ember::Pool::builder().threads(2).build().unwrap();
//! let flow = Flow::new(&pool, Default::default());
//! let n = 16;
//! let u = [Buffer::new(&flow, [n], |[i]| i as f64), Buffer::new(&flow, [n], |_| 0.0)];
//! for step in 0..4 {
//!     let (src, dst) = (&u[step % 2], &u[(step + 1) % 2]);
//!     flow.submit(|cg| {
//!         let src = src.read(cg, map::neighbourhood([1]));
//!         let dst = dst.write(cg, map::one_to_one());
//!         cg.parallel_for([n], move |chunk| {
//!             let (src, mut dst) = (chunk.read(&src), chunk.write(&dst));
//!             for [i] in chunk.items() {
//!                 let (l, r) = (src[[i.saturating_sub(1)]], src[[(i + 1).min(n - 1)]]);
//!                 dst[[i]] = 0.5 * (l + r);
//!             }
//!         });
//!     })?;
//! }
//! let smooth = flow.read_back(&u[0])?;
//! assert_eq!(smooth[8], 8.0); // a line stays a line away from the ends
//! # Ok::<(), ember::flow::FlowError>(())
//! ```
//!
//! | file | holds |
//! | --- | --- |
//! | `region.rs` | [`Region`], [`Box3`]: boxes and unions of boxes, the access-pattern helpers |
//! | `buffer.rs` | [`BufferId`]: logical buffers of 1, 2 or 3 dimensions; [`Buffer`], which owns its data |
//! | `map.rs` | range mappers: from a chunk of a range to a region |
//! | `kernel.rs` | [`Chunk`], accessors and their views: what a range kernel sees |
//! | `lower.rs` | from a command group to its tasks: its chunks, and on a distributed flow this rank's part, sends and receives |
//! | `read_back.rs` | [`Flow::read_back`]: the host's copy of a buffer |
//! | `ownership.rs` | the distributed flow's ownership map: which rank last wrote each region, and the messages each command group needs |
//! | `dist.rs` | [`dist`]: the distributed flow's transport and its checks; the design is in `flow/README.md` |
//! | `scheduler.rs` | the analysis side: submissions, task outcomes, the scheduler and its engines |
//! | `graph.rs` | dependency inference: the per-buffer region map, the edge rule, horizons |
//! | `queue.rs` | the double-buffered (and lockstep) submission queue, its invariants, its loom model |
//!
//! # Scheduler modes
//!
//! - [`Mode::Inline`]: `submit` analyses the task on the calling thread and spawns it.
//! - [`Mode::Lockstep`]: `submit` pushes onto a queue; a scheduler thread takes the queued
//!   tasks and analyses them *holding the queue's mutex*, so submitters wait for it. The
//!   baseline.
//! - [`Mode::DoubleBuffered`] (default): the scheduler thread swaps the queue's two buffers and
//!   analyses its batch without the lock; submitters only ever wait for a push.
//!
//! In every mode tasks are analysed in submission order (the order in which `submit` calls
//! take the queue's lock, or the inline mutex). The scheduler thread is stopped and joined when
//! the flow is dropped, after it has analysed and spawned everything submitted. A
//! [distributed](Flow::distributed) flow's drop first makes its collective check and, if
//! every rank agrees and none had a task that panicked or was cancelled, waits for every task
//! of the flow to end, its messages included, unless a task is lost meanwhile on some rank
//! (see [`dist`]). Dropped on a pool's worker, it hands that collective part to a thread of
//! its own and returns at once: a wait there would run the pool's jobs, and another flow's
//! drop among them would be nested in this one (`flow/README.md`, "A drop on a worker"). The
//! transport counts such drops ([`dist::Transport::background_drops`]) so that its owner can
//! wait for them before it ends. An explicit `wait` or `read_back` made inside a job is the
//! program's to nest alike on every rank, as MPI collectives are.
//!
//! # Choosing a mode
//!
//! The lab's `flow` experiment measures the three modes against each other
//! (`crates/ember-lab/MEASUREMENTS.md`, "Flow modes").
//!
//! - `DoubleBuffered` (the default) holds the submitting thread the least: it only builds and
//!   pushes tasks, while the analysis runs on the scheduler thread. Use it when the submitting
//!   thread has other work, or when submission is a bottleneck.
//! - Any scheduler thread adds one hand-off, a thread wake-up, before the first task can
//!   start. End to end it is lost in the run.
//! - `Inline` has no hand-off, so on a machine whose cores are all busy with the pool's
//!   workers it generates graphs fastest; the analysis then runs on, and holds, the
//!   submitting thread. It also needs no extra thread.
//! - `Lockstep` exists to be measured against: a submitter that pushes while the scheduler
//!   analyses waits for the whole batch.
//!
//! # Errors and failure
//!
//! - A region outside its buffer, or with the wrong number of dimensions, and a buffer of
//!   another flow are reported by [`Flow::submit`] (the command group records the first such
//!   error; the task is not submitted at all). [`Region::all`] and [`Region::neighbourhood`]
//!   are clamped to the buffer and never out of bounds.
//! - A kernel that panics ends its task as panicked; every task that depends on it, directly
//!   or transitively, never runs (it is cancelled). Horizons are part of the graph, so a task
//!   submitted after a horizon that follows the failed task is cancelled too if it touches a
//!   buffer the failed task touched, even a part it did not: after a panic that buffer's data
//!   is suspect. A task that touches none of those buffers runs, unless it depends through
//!   some other buffer on a cancelled task. Nothing hangs: [`Flow::wait`] returns
//!   [`FlowError::Failed`] with the counts (and the first panic message) once every task has
//!   either run or been cancelled.
//! - Do not call [`Flow::wait`] from inside a kernel: it waits for that kernel too.

mod buffer;
mod command_group;
pub mod dist;
mod graph;
mod kernel;
mod lower;
pub mod map;
mod options;
mod ownership;
pub(crate) mod queue;
mod read_back;
mod region;
mod scheduler;
mod settle;

pub use buffer::{Buffer, BufferId, Pod};
pub use command_group::CommandGroup;
pub use kernel::{Chunk, Items, ReadAccessor, ReadView, Rows, WriteAccessor, WriteView};
pub use map::RangeMapper;
pub use options::{FlowError, FlowOptions, FlowStats, Mode};
pub use region::{Box3, Region};

use std::collections::HashMap;
use std::fmt;
use std::panic::{self, AssertUnwindSafe};
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use crate::Pool;
use graph::Graph;
use lower::Lowered;
use queue::SubmissionQueue;
use scheduler::{schedule, Completion, Engine, Piece, RunState, Scheduler, Shared, Submission};

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

static NEXT_FLOW: AtomicU64 = AtomicU64::new(1);

/// A stream of access-declared tasks on a [`Pool`]; see the [module doc](self).
pub struct Flow {
    id: u64,
    pool: Pool,
    next_buffer: AtomicU32,
    shared: Arc<Shared>,
    engine: Engine,
    mode: Mode,
    dist: Option<Arc<dist::Dist>>,
}

impl Flow {
    /// A new flow whose tasks run on `pool`. With a threaded mode it starts the scheduler
    /// thread; if the operating system refuses one, the flow runs [`Mode::Inline`] instead
    /// (see [`FlowStats::mode`]).
    pub fn new(pool: &Pool, options: FlowOptions) -> Flow {
        let shared = Arc::new(Shared::default());
        let scheduler = Scheduler {
            pool: pool.clone(),
            graph: Graph::new(options.horizon_every),
            handles: HashMap::new(),
            prune_at: 1024,
            shared: shared.clone(),
        };
        let id = NEXT_FLOW.fetch_add(1, Ordering::Relaxed);
        let (engine, mode) = match options.mode {
            Mode::Inline => (Engine::Inline(Mutex::new(scheduler)), Mode::Inline),
            threaded => {
                let queue = Arc::new(SubmissionQueue::new());
                let cell = Arc::new(Mutex::new(Some(scheduler)));
                let started = Arc::new(std::sync::Barrier::new(2));
                let spawned = {
                    let queue = queue.clone();
                    let cell = cell.clone();
                    let started = started.clone();
                    std::thread::Builder::new()
                        .name(format!("ember-flow-{id}"))
                        .spawn(move || {
                            let scheduler = lock(&cell).take();
                            started.wait();
                            if let Some(scheduler) = scheduler {
                                schedule(scheduler, &queue, threaded);
                            }
                        })
                };
                match spawned {
                    Ok(thread) => {
                        // A thread the kernel has just created may wait a scheduling period
                        // or two before it first runs; that wait belongs to creating the flow,
                        // not to its first submission.
                        started.wait();
                        (
                            Engine::Threaded {
                                queue,
                                thread: Some(thread),
                            },
                            threaded,
                        )
                    }
                    Err(_) => {
                        let scheduler = lock(&cell).take().expect("the thread never started");
                        (Engine::Inline(Mutex::new(scheduler)), Mode::Inline)
                    }
                }
            }
        };
        Flow {
            id,
            pool: pool.clone(),
            next_buffer: AtomicU32::new(0),
            shared,
            engine,
            mode,
            dist: None,
        }
    }

    /// A flow that runs on every rank of a distributed job, each rank this same program;
    /// `transport` reaches the other ranks (`ember-mpi` gives one over MPI). See
    /// [`dist`] for what each rank runs and what moves between them.
    ///
    /// With a transport of one rank it behaves as [`Flow::new`], plus the bookkeeping.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use ember::flow::dist::Transport;
    /// use ember::flow::{map, Buffer, Flow};
    ///
    /// /// The transport of a job of one rank: nothing to send to.
    /// struct Alone;
    /// impl Transport for Alone {
    ///     fn rank(&self) -> usize { 0 }
    ///     fn ranks(&self) -> usize { 1 }
    ///     fn open_flow(&self) -> u64 { 0 }
    ///     fn send(&self, _: usize, _: u64, _: Vec<u8>) { unreachable!() }
    ///     fn receive(&self, _: usize, _: u64, _: usize, _: Box<dyn FnOnce(Vec<u8>) + Send>) {
    ///         unreachable!()
    ///     }
    ///     fn abort(&self, message: &str) { eprintln!("{message}") }
    /// }
    ///
    /// # let pool = ember::Pool::builder().threads(2).build().unwrap();
    /// let flow = Flow::distributed(&pool, Default::default(), Arc::new(Alone));
    /// let b = Buffer::new(&flow, [4], |[i]| i as u32);
    /// flow.submit(|cg| {
    ///     let b = b.read_write(cg, map::one_to_one());
    ///     cg.parallel_for([4], move |chunk| {
    ///         let mut b = chunk.write(&b);
    ///         for [i] in chunk.items() { b[[i]] += 1; }
    ///     });
    /// })?;
    /// assert_eq!(flow.read_back(&b)?, [1, 2, 3, 4]);
    /// assert_eq!(flow.transfer_stats().bytes_sent, 0);
    /// # Ok::<(), ember::flow::FlowError>(())
    /// ```
    pub fn distributed(
        pool: &Pool,
        options: FlowOptions,
        transport: Arc<dyn dist::Transport>,
    ) -> Flow {
        let mut flow = Flow::new(pool, options);
        flow.dist = Some(Arc::new(dist::Dist::new(transport)));
        flow
    }

    /// This process's rank and the number of ranks: `(0, 1)` unless the flow is
    /// [distributed](Self::distributed).
    pub fn rank(&self) -> (usize, usize) {
        match &self.dist {
            Some(d) => (d.transport.rank(), d.transport.ranks()),
            None => (0, 1),
        }
    }

    /// What this rank has sent and received of buffer data (all zero unless the flow is
    /// [distributed](Self::distributed)).
    pub fn transfer_stats(&self) -> dist::TransferStats {
        self.dist.as_ref().map(|d| d.stats()).unwrap_or_default()
    }

    /// A new logical buffer with a 1-, 2- or 3-D index space of the given extent.
    ///
    /// ```
    /// # let pool = ember::Pool::builder().threads(1).build().unwrap();
    /// let flow = ember::flow::Flow::new(&pool, Default::default());
    /// let line = flow.buffer([100]);
    /// let grid = flow.buffer([64, 64]);
    /// let cube = flow.buffer([8, 8, 8]);
    /// assert_eq!((line.dims(), grid.dims(), cube.dims()), (1, 2, 3));
    /// ```
    pub fn buffer<const D: usize>(&self, extent: [usize; D]) -> BufferId {
        let index = self.next_buffer.fetch_add(1, Ordering::Relaxed);
        BufferId::new(self.id, index, extent)
    }

    /// Submits one task: `build` declares its accesses on the [`CommandGroup`] and sets its
    /// kernel with [`CommandGroup::run`]. The task runs on the pool after every earlier task
    /// whose accesses conflict with its own.
    ///
    /// Returns an error, and submits nothing, if a declared region does not fit its buffer or
    /// a buffer belongs to another flow (the first such error is reported).
    ///
    /// ```
    /// use ember::flow::{Flow, FlowError, Region};
    /// # let pool = ember::Pool::builder().threads(1).build().unwrap();
    /// let flow = Flow::new(&pool, Default::default());
    /// let a = flow.buffer([10]);
    /// let err = flow.submit(|cg| { cg.write(&a, 5..11); cg.run(|| {}) }).unwrap_err();
    /// assert!(matches!(err, FlowError::OutOfBounds { .. }));
    /// flow.submit(|cg| { cg.write(&a, Region::neighbourhood([5..10], [1])); cg.run(|| {}) })?;
    /// flow.wait()?;
    /// # Ok::<(), FlowError>(())
    /// ```
    pub fn submit(&self, build: impl FnOnce(&mut CommandGroup)) -> Result<(), FlowError> {
        let mut cg = CommandGroup::new(self.id);
        build(&mut cg);
        if let Some(error) = cg.error.take() {
            return Err(error);
        }
        match &self.dist {
            None => {
                let tasks = self.lower(cg)?;
                self.push(tasks)
            }
            Some(dist) => {
                // Planned and pushed under one lock: every group in one order, the order of
                // the plans' tags.
                let mut state = lock(&dist.state);
                let tasks = self.lower_distributed(cg, dist, &mut state)?;
                self.push(tasks)
            }
        }
    }

    /// Wraps every task's kernel so that its end is counted, and hands the tasks to the
    /// scheduler as one submission.
    fn push(&self, tasks: Vec<Lowered>) -> Result<(), FlowError> {
        lock(&self.shared.outcomes).pending += tasks.len();
        let pieces = tasks
            .into_iter()
            .map(|task| Piece {
                job: self.wrap(task.kernel),
                accesses: task.accesses,
                label: task.label,
                events: task.events,
            })
            .collect();
        let submission = Submission { pieces };
        match &self.engine {
            Engine::Inline(scheduler) => {
                lock(scheduler).analyse(submission);
                Ok(())
            }
            Engine::Threaded { queue, .. } => {
                queue.push(submission).map_err(|_| FlowError::Stopped)
            }
        }
    }

    /// The job of one task: runs `kernel`, catching its panic, and counts the task out.
    fn wrap(
        &self,
        kernel: Option<Box<dyn FnOnce() + Send + 'static>>,
    ) -> Box<dyn FnOnce() + Send + 'static> {
        let completion = Completion {
            shared: self.shared.clone(),
            state: RunState::NotRun,
        };
        let shared = self.shared.clone();
        let transport = self.dist.as_ref().map(|d| d.transport.clone());
        Box::new(move || {
            let mut completion = completion;
            completion.set(RunState::Panicked);
            if let Some(kernel) = kernel {
                if let Err(payload) = panic::catch_unwind(AssertUnwindSafe(kernel)) {
                    let message = crate::task::panic_message(&*payload).map(str::to_owned);
                    if let Some(transport) = &transport {
                        // The other ranks would wait for what this task should have sent.
                        let text = message.as_deref().unwrap_or("(no message)");
                        transport.abort(&format!("a kernel panicked: {text}"));
                    }
                    let mut o = lock(&shared.outcomes);
                    if o.first_panic.is_none() {
                        o.first_panic = message;
                    }
                    drop(o);
                    // `completion` drops while unwinding and counts the panic.
                    panic::resume_unwind(payload);
                }
            }
            completion.set(RunState::Done);
        })
    }

    /// Waits until every task submitted so far has run or been cancelled.
    ///
    /// Returns [`FlowError::Failed`] if any kernel panicked (or any task was cancelled) since
    /// the previous `wait`; the counts start again from zero afterwards. On a
    /// [distributed](Self::distributed) flow it first checks that every rank calls `wait`
    /// here and submitted the same command groups, and returns [`FlowError::NotCollective`]
    /// or [`FlowError::Diverged`] if not, [`FlowError::TransportLost`] if the transport
    /// dropped a message of the check undelivered (see [`dist`]). Called on a worker of
    /// another pool, that worker runs its own pool's jobs while it waits.
    ///
    /// # Panics
    /// When called from a job of the flow's pool (a kernel, say), directly or through
    /// another pool, as [`Pool::wait_idle`] does: such a wait could wait for itself.
    pub fn wait(&self) -> Result<(), FlowError> {
        self.pool.check_not_waiting_for_itself("Flow::wait");
        if let Some(dist) = &self.dist {
            dist.check(dist::Call::Wait)?;
        }
        self.shared
            .waiters
            .wait(&|| lock(&self.shared.outcomes).pending == 0, None);
        let mut o = lock(&self.shared.outcomes);
        if o.panicked + o.cancelled > 0 {
            let error = FlowError::Failed {
                panicked: o.panicked,
                cancelled: o.cancelled,
                first_panic: o.first_panic.take(),
            };
            o.panicked = 0;
            o.cancelled = 0;
            return Err(error);
        }
        Ok(())
    }

    /// The flow's counters so far (tasks still queued for the scheduler thread are not yet
    /// counted).
    pub fn stats(&self) -> FlowStats {
        FlowStats {
            tasks: self.shared.tasks.load(Ordering::Relaxed),
            edges: self.shared.edges.load(Ordering::Relaxed),
            horizons: self.shared.horizons.load(Ordering::Relaxed),
            analysis_ns: self.shared.analysis_ns.load(Ordering::Relaxed),
            mode: self.mode,
        }
    }
}

impl Drop for Flow {
    fn drop(&mut self) {
        let scheduler = match &mut self.engine {
            Engine::Threaded { queue, thread } => Some((queue.clone(), thread.take())),
            Engine::Inline(_) => None,
        };
        let Some(dist) = &self.dist else {
            drop(settle::EndScheduler(scheduler));
            return;
        };
        let closing = settle::Closing {
            dist: dist.clone(),
            shared: self.shared.clone(),
            scheduler,
        };
        // On a pool's worker (inside one of the flow's own tasks, which run on its pool's
        // workers, in `install`, in work a job waits for through another pool, or in any
        // job) the collective part would block the worker, and a wait there runs the pool's
        // jobs, one of which may make another flow's collective call that the other ranks
        // answer only after this one: it goes on on a thread of its own, which waits for the
        // flow's tasks like any other thread. Elsewhere the drop makes it itself and returns
        // once the flow has settled.
        if settle::on_a_worker() {
            closing.hand_off();
        } else {
            closing.run(true);
        }
    }
}

impl fmt::Debug for Flow {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Flow")
            .field("id", &self.id)
            .field("stats", &self.stats())
            .finish()
    }
}
