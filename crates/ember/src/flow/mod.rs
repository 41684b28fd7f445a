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
//! | `dist.rs` | [`dist`]: the distributed flow's plan of messages and its checks; the design is in `flow/README.md` |
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
//! the flow is dropped, after it has analysed and spawned everything submitted.
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
pub mod map;
mod options;
pub(crate) mod queue;
mod region;

pub use buffer::{Buffer, BufferId, Pod};
pub use command_group::CommandGroup;
pub use kernel::{Chunk, Items, ReadAccessor, ReadView, Rows, WriteAccessor, WriteView};
pub use map::RangeMapper;
pub use options::{FlowError, FlowOptions, FlowStats, Mode};
pub use region::{Box3, Region};

use std::collections::{HashMap, HashSet};
use std::fmt;
use std::panic::{self, AssertUnwindSafe};
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use crate::pool::WaitList;
use crate::{Pool, Task};
use graph::{Access, Graph, NodeId};
use queue::SubmissionQueue;

/// One task of a submission: checked accesses, the wrapped kernel, and events it waits for
/// besides its accesses.
struct Piece {
    accesses: Vec<Access>,
    job: Box<dyn FnOnce() + Send + 'static>,
    label: Option<String>,
    events: Vec<crate::Event>,
}

/// What reaches the scheduler: the tasks of one command group (one, or one per chunk of a
/// range), analysed together so that no other group's tasks come between them.
struct Submission {
    pieces: Vec<Piece>,
}

/// A task before the flow wraps its kernel.
pub(crate) struct Lowered {
    accesses: Vec<Access>,
    kernel: Option<Box<dyn FnOnce() + Send + 'static>>,
    label: Option<String>,
    events: Vec<crate::Event>,
}

#[derive(Default)]
struct Outcomes {
    pending: usize,
    panicked: usize,
    cancelled: usize,
    first_panic: Option<String>,
}

struct Shared {
    outcomes: Mutex<Outcomes>,
    /// `wait` callers, woken when `pending` falls to zero.
    waiters: WaitList,
    tasks: AtomicU64,
    edges: AtomicU64,
    horizons: AtomicU64,
    analysis_ns: AtomicU64,
}

impl Default for Shared {
    fn default() -> Self {
        Shared {
            outcomes: Mutex::default(),
            waiters: WaitList::new(),
            tasks: AtomicU64::default(),
            edges: AtomicU64::default(),
            horizons: AtomicU64::default(),
            analysis_ns: AtomicU64::default(),
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// Counts a task out when its job is dropped: after running, after panicking (the drop
/// happens during unwinding), or unrun because the pool cancelled it.
struct Completion {
    shared: Arc<Shared>,
    state: RunState,
}

#[derive(PartialEq)]
enum RunState {
    NotRun,
    Panicked,
    Done,
}

impl Completion {
    fn set(&mut self, state: RunState) {
        self.state = state;
    }
}

impl Drop for Completion {
    fn drop(&mut self) {
        let all_done = {
            let mut o = lock(&self.shared.outcomes);
            match self.state {
                RunState::NotRun => o.cancelled += 1,
                RunState::Panicked => o.panicked += 1,
                RunState::Done => {}
            }
            o.pending -= 1;
            o.pending == 0
        };
        if all_done {
            let shared = &self.shared;
            shared
                .waiters
                .notify_changed(|| lock(&shared.outcomes).pending == 0);
        }
    }
}

/// The analysis side: the graph and the handles of the tasks it still names.
struct Scheduler {
    pool: Pool,
    graph: Graph,
    handles: HashMap<NodeId, Task<()>>,
    prune_at: usize,
    shared: Arc<Shared>,
}

impl Scheduler {
    fn analyse(&mut self, sub: Submission) {
        for piece in sub.pieces {
            self.analyse_piece(piece);
        }
    }

    fn analyse_piece(&mut self, sub: Piece) {
        let start = Instant::now();
        let added = self.graph.add(&sub.accesses);
        let horizon = !added.horizon.is_empty();
        let horizon_edges: usize = added.horizon.iter().map(|(_, deps)| deps.len()).sum();
        // Counted before spawning, so they are complete once `wait` sees the tasks end.
        self.shared.tasks.fetch_add(1, Ordering::Relaxed);
        self.shared
            .edges
            .fetch_add((added.deps.len() + horizon_edges) as u64, Ordering::Relaxed);
        if horizon {
            self.shared.horizons.fetch_add(1, Ordering::Relaxed);
        }
        let task = self.spawn(sub.job, &added.deps, &sub.events, sub.label);
        self.handles.insert(added.id, task);
        for (h, deps) in added.horizon {
            let node = self.spawn(Box::new(|| {}), &deps, &[], None);
            self.handles.insert(h, node);
        }
        if horizon || self.handles.len() >= self.prune_at {
            // After a horizon the graph names one node per buffer it tracks.
            let live: HashSet<NodeId> = self.graph.live().into_iter().collect();
            self.handles.retain(|id, _| live.contains(id));
            self.prune_at = 2 * self.handles.len() + 1024;
        }
        self.shared
            .analysis_ns
            .fetch_add(start.elapsed().as_nanos() as u64, Ordering::Relaxed);
    }

    fn spawn(
        &self,
        job: Box<dyn FnOnce() + Send + 'static>,
        deps: &[NodeId],
        events: &[crate::Event],
        label: Option<String>,
    ) -> Task<()> {
        let inputs: Vec<&dyn crate::Dependency> = deps
            .iter()
            .map(|d| &self.handles[d] as &dyn crate::Dependency)
            .chain(events.iter().map(|e| e as &dyn crate::Dependency))
            .collect();
        let builder = self.pool.task(job).after(&inputs);
        match label {
            Some(label) => builder.label(label).spawn(),
            None => builder.spawn(),
        }
    }
}

enum Engine {
    Inline(Mutex<Scheduler>),
    Threaded {
        queue: Arc<SubmissionQueue<Submission>>,
        thread: Option<std::thread::JoinHandle<()>>,
    },
}

/// Closes the queue and drops whatever is left in it if the scheduler thread unwinds, so
/// the dropped jobs count as cancelled and `wait` does not hang.
struct CloseOnExit(Arc<SubmissionQueue<Submission>>);

impl Drop for CloseOnExit {
    fn drop(&mut self) {
        self.0.close();
        let mut rest = Vec::new();
        while self.0.take(&mut rest) {
            rest.clear();
        }
    }
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

    /// A command group on a distributed flow: this rank's part of the range, and the
    /// messages it sends and receives for the group (see [`dist`]).
    fn lower_distributed(
        &self,
        cg: CommandGroup,
        dist: &Arc<dist::Dist>,
        state: &mut dist::DistState,
    ) -> Result<Vec<Lowered>, FlowError> {
        let Some(range) = &cg.range else {
            let hash = dist::declaration_hash(cg.label.as_deref(), None, &cg.accesses, &[]);
            let label = cg.label.clone();
            let tasks = self.lower(cg)?;
            dist::Dist::record(state, hash, label.as_deref());
            return Ok(tasks);
        };
        let transport = &dist.transport;
        let (me, ranks) = (transport.rank(), transport.ranks());
        let per_rank = dist::rank_accesses(&cg.typed, &range.range, range.dims, ranks)?;
        let mine = dist::rank_part(&range.range, ranks, me);
        let parts = cg.chunks.unwrap_or_else(|| self.pool.threads()).max(1);
        for chunk in split(&mine, parts) {
            let regions = chunk_regions(&cg.typed, &chunk, range.dims)?;
            for (k, boxes) in regions.iter().enumerate() {
                if !dist::covered(boxes, &per_rank[k].per_rank[me]) {
                    return Err(FlowError::Declaration(format!(
                        "the range mapper of accessor {k} maps a part of rank {me}'s chunk \
                         outside the region it maps the whole chunk to; a mapper must be \
                         monotone"
                    )));
                }
            }
        }
        let transfers = dist::Ownership::plan(&mut state.ownership, &per_rank)
            .map_err(FlowError::Declaration)?;
        let hash = dist::declaration_hash(
            cg.label.as_deref(),
            Some((range.dims, &range.range)),
            &cg.accesses,
            &per_rank,
        );
        dist::Dist::record(state, hash, cg.label.as_deref());
        let mut tasks = Vec::new();
        for t in transfers.iter().filter(|t| t.from == me) {
            let typed = &cg.typed[t.access];
            let (storage, area, to, tag) = (typed.storage.clone(), t.area, t.to, t.tag);
            let dist = dist.clone();
            tasks.push(Lowered {
                accesses: vec![Access {
                    buffer: typed.buffer.index,
                    extent: typed.buffer.extent,
                    mode: graph::Mode::Read,
                    boxes: vec![area],
                }],
                kernel: Some(Box::new(move || {
                    // SAFETY: this task declared a read of `area`, so no task writes it
                    // while it runs.
                    let bytes = unsafe { storage.pack(&area) };
                    dist.stats.messages_sent.fetch_add(1, Ordering::Relaxed);
                    dist.stats
                        .bytes_sent
                        .fetch_add(bytes.len() as u64, Ordering::Relaxed);
                    dist.transport.send(to, tag, bytes);
                })),
                label: Some("send".into()),
                events: Vec::new(),
            });
        }
        for t in transfers.iter().filter(|t| t.to == me) {
            let typed = &cg.typed[t.access];
            let (storage, area) = (typed.storage.clone(), t.area);
            let arrived = self.pool.event();
            let slot: Arc<Mutex<Option<Vec<u8>>>> = Arc::default();
            let (into, done) = (slot.clone(), arrived.clone());
            let len = area.volume() * storage.element_size();
            transport.receive(
                t.from,
                t.tag,
                len,
                Box::new(move |bytes| {
                    *lock(&into) = Some(bytes);
                    done.complete();
                }),
            );
            let dist = dist.clone();
            tasks.push(Lowered {
                accesses: vec![Access {
                    buffer: typed.buffer.index,
                    extent: typed.buffer.extent,
                    mode: graph::Mode::Write,
                    boxes: vec![area],
                }],
                kernel: Some(Box::new(move || {
                    // Another length: the ranks diverged, which the next check reports.
                    if let Some(bytes) = lock(&slot).take().filter(|b| b.len() == len) {
                        dist.stats.messages_received.fetch_add(1, Ordering::Relaxed);
                        dist.stats
                            .bytes_received
                            .fetch_add(bytes.len() as u64, Ordering::Relaxed);
                        // SAFETY: this task declared a write of `area`, so no other task
                        // touches it while it runs.
                        unsafe { storage.unpack(&area, &bytes) };
                    }
                })),
                label: Some("receive".into()),
                events: vec![arrived],
            });
        }
        let mut cg = cg;
        let range = cg.range.take().expect("checked above");
        let mut local = range;
        local.range = mine;
        cg.range = Some(local);
        tasks.extend(self.lower(cg)?);
        Ok(tasks)
    }

    /// Turns a checked command group into its tasks: itself, or one per chunk of its range.
    fn lower(&self, cg: CommandGroup) -> Result<Vec<Lowered>, FlowError> {
        let Some(range) = cg.range else {
            if !cg.typed.is_empty() {
                return Err(FlowError::Declaration(
                    "accessors of a Buffer need a parallel_for kernel".into(),
                ));
            }
            return Ok(vec![Lowered {
                accesses: cg.accesses,
                kernel: cg.kernel,
                label: cg.label,
                events: Vec::new(),
            }]);
        };
        let parts = cg.chunks.unwrap_or_else(|| self.pool.threads()).max(1);
        let mut out = Vec::new();
        for chunk in split(&range.range, parts) {
            let regions = chunk_regions(&cg.typed, &chunk, range.dims)?;
            let mut accesses = cg.accesses.clone();
            for (t, boxes) in cg.typed.iter().zip(&regions) {
                accesses.push(Access {
                    buffer: t.buffer.index,
                    extent: t.buffer.extent,
                    mode: t.mode,
                    boxes: boxes.clone(),
                });
            }
            let kernel = range.kernel.clone();
            let ctx = kernel::ChunkCtx {
                group: cg.group,
                range: chunk,
                regions,
            };
            out.push(Lowered {
                accesses,
                kernel: Some(Box::new(move || kernel(ctx))),
                label: cg.label.clone(),
                events: Vec::new(),
            });
        }
        Ok(out)
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

    /// Copies out the whole of `buffer` once every task submitted before that writes it has
    /// run: the host's read. It waits only for those tasks (and the ones they wait for),
    /// not for the whole flow.
    ///
    /// Returns [`FlowError::Failed`] if the copy could not be made because a task it waits
    /// for failed (the counts are those [`wait`](Self::wait) would report, and are reset
    /// the same way). On a [distributed](Self::distributed) flow every rank must call it, for
    /// the same buffer, where the others do: it first checks that, and returns
    /// [`FlowError::NotCollective`] or [`FlowError::Diverged`], submitting nothing, if not
    /// (see [`dist`]).
    ///
    /// ```
    /// use ember::flow::{map, Buffer, Flow};
    /// # let pool = ember::Pool::builder().threads(2).build().unwrap();
    /// let flow = Flow::new(&pool, Default::default());
    /// let b = Buffer::new(&flow, [4], |[i]| i as i32);
    /// flow.submit(|cg| {
    ///     let b = b.read_write(cg, map::one_to_one());
    ///     cg.parallel_for([4], move |chunk| {
    ///         let mut b = chunk.write(&b);
    ///         for [i] in chunk.items() {
    ///             b[[i]] *= -1;
    ///         }
    ///     });
    /// })?;
    /// assert_eq!(flow.read_back(&b)?, [0, -1, -2, -3]);
    /// # Ok::<(), ember::flow::FlowError>(())
    /// ```
    ///
    /// # Panics
    /// When called from a job of the flow's pool, as [`wait`](Self::wait) does.
    pub fn read_back<T: Pod + Send + Sync, const D: usize>(
        &self,
        buffer: &Buffer<T, D>,
    ) -> Result<Vec<T>, FlowError> {
        self.pool.check_not_waiting_for_itself("Flow::read_back");
        let out = Arc::new(ReadBack::<T> {
            value: Mutex::new(None),
            waiters: WaitList::new(),
        });
        if let Some(dist) = &self.dist {
            // Before the group below: a rank whose others make another call must not
            // submit it, or it would wait for data that no rank sends.
            dist.check(dist::Call::ReadBack(buffer.id().index))?;
        }
        let guard = Mutex::new(Some(ReadBackGuard(out.clone())));
        // One item per rank: every rank reads the whole buffer.
        let ranks = self.rank().1;
        self.submit(|cg| {
            let all = buffer.read(cg, map::all());
            cg.label("read_back")
                .chunks(1)
                .parallel_for([ranks], move |chunk| {
                    let data = chunk.read(&all).copy_all().expect("the whole buffer");
                    if let Some(g) = lock(&guard).take() {
                        g.set(Some(data));
                    }
                });
        })?;
        out.waiters.wait(&|| lock(&out.value).is_some(), None);
        let value = lock(&out.value).take().expect("set before the wake-up");
        match value {
            Some(data) => Ok(data),
            None => Err(self.wait().err().unwrap_or(FlowError::Failed {
                panicked: 0,
                cancelled: 1,
                first_panic: None,
            })),
        }
    }

    /// Waits until every task submitted so far has run or been cancelled.
    ///
    /// Returns [`FlowError::Failed`] if any kernel panicked (or any task was cancelled) since
    /// the previous `wait`; the counts start again from zero afterwards. On a
    /// [distributed](Self::distributed) flow it first checks that every rank calls `wait`
    /// here and submitted the same command groups, and returns [`FlowError::NotCollective`]
    /// or [`FlowError::Diverged`] if not (see [`dist`]). Called on a worker of another pool,
    /// that worker runs its own pool's jobs while it waits.
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

/// Where `read_back` finds its copy: `Some(None)` if the copying task never ran.
struct ReadBack<T> {
    value: Mutex<Option<Option<Vec<T>>>>,
    waiters: WaitList,
}

/// Sets the copy (or, dropped unused because the task was cancelled, its absence) and
/// wakes the reader.
struct ReadBackGuard<T>(Arc<ReadBack<T>>);

impl<T> ReadBackGuard<T> {
    fn set(self, data: Option<Vec<T>>) {
        *lock(&self.0.value) = Some(data);
        let out = self.0.clone();
        std::mem::forget(self);
        out.waiters.notify_changed(|| lock(&out.value).is_some());
    }
}

impl<T> Drop for ReadBackGuard<T> {
    fn drop(&mut self) {
        let out = self.0.clone();
        *lock(&out.value) = Some(None);
        out.waiters.notify_changed(|| lock(&out.value).is_some());
    }
}

/// `range` cut along its first dimension into at most `parts` non-empty boxes, as even as
/// can be (sizes differ by at most one).
pub(crate) fn split(range: &Box3, parts: usize) -> Vec<Box3> {
    if range.is_empty() {
        return Vec::new();
    }
    let n = range.hi[0] - range.lo[0];
    (0..parts)
        .map(|k| {
            let mut b = *range;
            b.lo[0] = range.lo[0] + n * k / parts;
            b.hi[0] = range.lo[0] + n * (k + 1) / parts;
            b
        })
        .filter(|b| !b.is_empty())
        .collect()
}

/// The boxes every accessor's mapper gives `chunk`, checked against its buffer.
fn chunk_regions(
    typed: &[command_group::Typed],
    chunk: &Box3,
    dims: usize,
) -> Result<Vec<Vec<Box3>>, FlowError> {
    typed
        .iter()
        .map(|t| {
            // A mapper is user code: its panic becomes this submission's error.
            let region = panic::catch_unwind(AssertUnwindSafe(|| t.mapper.map(chunk, dims)))
                .map_err(|payload| {
                    let message = crate::task::panic_message(&*payload).unwrap_or("(no message)");
                    FlowError::Declaration(format!("a range mapper panicked: {message}"))
                })?;
            region
                .resolve(t.buffer.dims(), t.buffer.extent)
                .map_err(|misfit| match misfit {
                    region::Misfit::Dimensions { region } => FlowError::Dimensions {
                        buffer: t.buffer,
                        region,
                    },
                    region::Misfit::OutOfBounds { region } => FlowError::OutOfBounds {
                        buffer: t.buffer,
                        region,
                    },
                })
        })
        .collect()
}

fn schedule(mut scheduler: Scheduler, queue: &Arc<SubmissionQueue<Submission>>, mode: Mode) {
    let _close = CloseOnExit(queue.clone());
    if mode == Mode::Lockstep {
        while queue.take_lockstep(|sub| scheduler.analyse(sub)) {}
    } else {
        let mut back = Vec::new();
        while queue.take(&mut back) {
            for sub in back.drain(..) {
                scheduler.analyse(sub);
            }
        }
    }
}

impl Drop for Flow {
    fn drop(&mut self) {
        if let Some(dist) = &self.dist {
            // Dropping the flow is collective too: its check tells the other ranks, whose
            // calls at the same check fail unless they drop theirs.
            let _ = dist.check(dist::Call::Drop);
        }
        if let Engine::Threaded { queue, thread } = &mut self.engine {
            queue.close();
            if let Some(thread) = thread.take() {
                let _ = thread.join();
            }
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

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    fn handles(flow: &Flow) -> (usize, usize) {
        match &flow.engine {
            Engine::Inline(scheduler) => {
                let s = lock(scheduler);
                (s.handles.len(), s.graph.tracked())
            }
            Engine::Threaded { .. } => unreachable!("inline flows only"),
        }
    }

    /// Over a long run with horizons the scheduler keeps handles only for what the graph
    /// still names: at most one horizon's worth of tasks and a horizon node per buffer. Without horizons, reads of a buffer nobody
    /// writes pile up as readers: the growth horizons exist to stop.
    #[test]
    fn scheduler_state_stays_bounded_over_a_long_run() {
        let pool = Pool::builder().threads(2).build().unwrap();
        for horizon_every in [64, 0] {
            let flow = Flow::new(
                &pool,
                FlowOptions {
                    mode: Mode::Inline,
                    horizon_every,
                },
            );
            let a = flow.buffer([64]);
            let b = flow.buffer([8, 8]);
            let mut most = (0, 0);
            for i in 0..20_000 {
                flow.submit(|cg| {
                    cg.read(&a, i % 64..i % 64 + 1);
                    cg.write(&b, [i % 8..i % 8 + 1, 0..8]);
                    cg.run(|| {});
                })
                .unwrap();
                let (live, tracked) = handles(&flow);
                most = (most.0.max(live), most.1.max(tracked));
            }
            flow.wait().unwrap();
            assert_eq!(flow.stats().tasks, 20_000);
            if horizon_every > 0 {
                assert!(most.0 <= 64 + 2, "{} handles", most.0);
                assert!(most.1 <= 2 * 64 + 8, "{} tracked", most.1);
                assert_eq!(flow.stats().horizons, 20_000 / 64);
            } else {
                assert!(most.1 > 19_000, "readers accumulate: {}", most.1);
            }
        }
    }
}
