//! The command group: what a task declares before it is submitted.

use std::sync::Arc;

use super::buffer::ErasedStorage;
use super::graph::{Access, Mode as AccessMode};
use super::kernel::{Chunk, ChunkCtx};
use super::map::RangeMapper;
use super::region::Misfit;
use super::{Box3, BufferId, FlowError, Region};

/// An accessor's declaration: which buffer, how, and its range mapper.
pub(crate) struct Typed {
    pub buffer: BufferId,
    pub mode: AccessMode,
    pub mapper: Arc<dyn RangeMapper>,
    pub storage: Arc<dyn ErasedStorage>,
}

/// A kernel over a range, erased to run on any chunk.
pub(crate) type ChunkKernel = Arc<dyn Fn(ChunkCtx) + Send + Sync>;

/// A `parallel_for`: its range (`dims` dimensions, the others `0..1`) and kernel.
pub(crate) struct RangeKernel {
    pub dims: usize,
    pub range: Box3,
    pub kernel: ChunkKernel,
}

/// A task before it is submitted: its accesses and its kernel. See [`Flow::submit`](super::Flow::submit).
///
/// ```
/// use ember::flow::{Flow, Region};
/// # let pool = ember::Pool::builder().threads(1).build().unwrap();
/// let flow = Flow::new(&pool, Default::default());
/// let (a, b, c) = (flow.buffer([64, 64]), flow.buffer([64, 64]), flow.buffer([64]));
/// let rows = 0..16;
/// flow.submit(|cg| {
///     cg.read(&a, Region::transposed([rows.clone(), 0..64])) // columns 0..16 of `a`
///         .write(&b, Region::one_to_one([rows.clone(), 0..64])) // rows 0..16 of `b`
///         .read_write(&c, Region::all())
///         .label("transpose rows 0..16");
///     cg.run(|| { /* the kernel: touches the user's data */ });
/// })?;
/// flow.wait()?;
/// # Ok::<(), ember::flow::FlowError>(())
/// ```
pub struct CommandGroup {
    pub(super) flow: u64,
    pub(super) accesses: Vec<Access>,
    pub(super) error: Option<FlowError>,
    pub(super) kernel: Option<Box<dyn FnOnce() + Send + 'static>>,
    pub(super) label: Option<String>,
    /// Unique among the command groups of the process: accessors name it.
    pub(super) group: u64,
    pub(super) typed: Vec<Typed>,
    pub(super) range: Option<RangeKernel>,
    pub(super) chunks: Option<usize>,
}

static NEXT_GROUP: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);

impl CommandGroup {
    /// Declares that the task reads `region` of `buffer`.
    pub fn read(&mut self, buffer: &BufferId, region: impl Into<Region>) -> &mut Self {
        self.access(buffer, region.into(), AccessMode::Read)
    }

    /// Declares that the task writes `region` of `buffer` (without reading it first).
    pub fn write(&mut self, buffer: &BufferId, region: impl Into<Region>) -> &mut Self {
        self.access(buffer, region.into(), AccessMode::Write)
    }

    /// Declares that the task reads and then writes `region` of `buffer`.
    pub fn read_write(&mut self, buffer: &BufferId, region: impl Into<Region>) -> &mut Self {
        self.access(buffer, region.into(), AccessMode::ReadWrite)
    }

    /// Names the task in traces (see [`PoolBuilder::trace`](crate::PoolBuilder::trace)).
    pub fn label(&mut self, label: impl Into<String>) -> &mut Self {
        self.label = Some(label.into());
        self
    }

    /// Sets the task's kernel. Without one the task runs nothing but is still ordered like
    /// any other (a barrier over its accesses).
    pub fn run(&mut self, kernel: impl FnOnce() + Send + 'static) {
        if self.range.is_some() {
            self.declaration("a command group has either run or parallel_for, not both");
        }
        self.kernel = Some(Box::new(kernel));
    }

    /// Sets a kernel over the range `0..range[0] × 0..range[1] × …`: the flow cuts the range
    /// along its first dimension into chunks — one per worker of the pool (see
    /// [`chunks`](Self::chunks)), and on several ranks one per rank first — and runs
    /// `kernel` once per chunk, each chunk as its own task. Accessors declared on
    /// [`Buffer`](super::Buffer)s give each chunk the region their range mapper maps it to;
    /// plain accesses ([`read`](Self::read) and friends) apply to every chunk as declared.
    ///
    /// ```
    /// use ember::flow::{map, Buffer, Flow};
    /// # let pool = ember::Pool::builder().threads(2).build().unwrap();
    /// let flow = Flow::new(&pool, Default::default());
    /// let n = 6;
    /// let a = Buffer::new(&flow, [n, n], |[i, j]| (i * n + j) as f64);
    /// let t = Buffer::new(&flow, [n, n], |_| 0.0);
    /// flow.submit(|cg| {
    ///     let a = a.read(cg, map::transposed());
    ///     let t = t.write(cg, map::one_to_one());
    ///     cg.label("transpose").parallel_for([n, n], move |chunk| {
    ///         let (a, mut t) = (chunk.read(&a), chunk.write(&t));
    ///         for [i, j] in chunk.items() {
    ///             t[[i, j]] = a[[j, i]];
    ///         }
    ///     });
    /// })?;
    /// assert_eq!(flow.read_back(&t)?[1], n as f64);
    /// # Ok::<(), ember::flow::FlowError>(())
    /// ```
    pub fn parallel_for<const D: usize>(
        &mut self,
        range: [usize; D],
        kernel: impl Fn(&Chunk<D>) + Send + Sync + 'static,
    ) {
        const { assert!(D >= 1 && D <= 3, "a range has 1, 2 or 3 dimensions") };
        if self.kernel.is_some() || self.range.is_some() {
            self.declaration("a command group has one kernel: run or parallel_for, once");
        }
        let mut b = Box3::from_extent([1; 3]);
        b.hi[..D].copy_from_slice(&range);
        self.range = Some(RangeKernel {
            dims: D,
            range: b,
            kernel: Arc::new(move |ctx| kernel(&Chunk::new(ctx))),
        });
    }

    /// Cuts the range of [`parallel_for`](Self::parallel_for) into `n` chunks per process
    /// (fewer if the range's first dimension is shorter) instead of one per worker of the
    /// pool. `0` is an error.
    pub fn chunks(&mut self, n: usize) -> &mut Self {
        if n == 0 {
            self.declaration("chunks(0): a range needs at least one chunk");
        }
        self.chunks = Some(n);
        self
    }

    pub(super) fn new(flow: u64) -> Self {
        CommandGroup {
            flow,
            accesses: Vec::new(),
            error: None,
            kernel: None,
            label: None,
            group: NEXT_GROUP.fetch_add(1, std::sync::atomic::Ordering::Relaxed),
            typed: Vec::new(),
            range: None,
            chunks: None,
        }
    }

    /// Records an accessor's declaration; returns its slot.
    pub(super) fn typed(&mut self, typed: Typed) -> usize {
        if self.error.is_none() {
            if typed.buffer.flow != self.flow {
                self.error = Some(FlowError::ForeignBuffer {
                    buffer: typed.buffer,
                });
            } else if self.typed.iter().any(|t| t.buffer == typed.buffer) {
                self.declaration(
                    "two accessors of one buffer in one command group; declare one with the \
                     union of what the kernel needs (read_write, or a wider mapper)",
                );
            }
        }
        self.typed.push(typed);
        self.typed.len() - 1
    }

    fn declaration(&mut self, message: &str) {
        if self.error.is_none() {
            self.error = Some(FlowError::Declaration(message.to_string()));
        }
    }

    fn access(&mut self, buffer: &BufferId, region: Region, mode: AccessMode) -> &mut Self {
        if self.error.is_some() {
            return self;
        }
        if buffer.flow != self.flow {
            self.error = Some(FlowError::ForeignBuffer { buffer: *buffer });
            return self;
        }
        match region.resolve(buffer.dims(), buffer.extent) {
            Ok(boxes) => self.accesses.push(Access {
                buffer: buffer.index,
                extent: buffer.extent,
                mode,
                boxes,
            }),
            Err(Misfit::Dimensions { region }) => {
                self.error = Some(FlowError::Dimensions {
                    buffer: *buffer,
                    region,
                })
            }
            Err(Misfit::OutOfBounds { region }) => {
                self.error = Some(FlowError::OutOfBounds {
                    buffer: *buffer,
                    region,
                })
            }
        }
        self
    }
}
