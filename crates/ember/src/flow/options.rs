//! A flow's configuration, counters and errors.

use std::fmt;

use super::{Box3, BufferId};

/// Where a flow analyses the dependencies of submitted tasks; see the [module doc](super).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Mode {
    /// On the submitting thread, inside `submit`.
    Inline,
    /// On a scheduler thread that holds the submission mutex while it analyses.
    Lockstep,
    /// On a scheduler thread that swaps the two submission buffers and analyses without the
    /// lock.
    #[default]
    DoubleBuffered,
}

/// How a [`Flow`](super::Flow) schedules; build with struct update syntax over `Default`.
///
/// ```
/// use ember::flow::{FlowOptions, Mode};
/// let options = FlowOptions { mode: Mode::Lockstep, ..Default::default() };
/// assert_eq!(options.horizon_every, 256);
/// ```
#[derive(Clone, Debug)]
pub struct FlowOptions {
    /// Where dependencies are analysed. Default: [`Mode::DoubleBuffered`].
    pub mode: Mode,
    /// Insert a horizon after every this many tasks, collapsing the tracking state so its
    /// memory stays bounded; `0` never does. Default: 256.
    pub horizon_every: usize,
}

impl Default for FlowOptions {
    fn default() -> Self {
        FlowOptions {
            mode: Mode::DoubleBuffered,
            horizon_every: 256,
        }
    }
}

/// Counters of a flow, from [`Flow::stats`](super::Flow::stats).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FlowStats {
    /// Tasks analysed and spawned (horizons not included).
    pub tasks: u64,
    /// Dependency edges created, including those to and from horizons.
    pub edges: u64,
    /// Horizons inserted (each has one node per buffer touched since the previous one).
    pub horizons: u64,
    /// Time spent analysing and spawning, in nanoseconds (the last task's share may be added
    /// just after [`Flow::wait`](super::Flow::wait) returns; the other counters are complete by then).
    pub analysis_ns: u64,
    /// The mode the flow actually runs in (`Inline` if the scheduler thread could not be
    /// started).
    pub mode: Mode,
}

/// Why a submission was refused, or what went wrong in the tasks [`Flow::wait`](super::Flow::wait) waited for.
#[derive(Debug)]
#[non_exhaustive]
pub enum FlowError {
    /// A declared box lies (partly) outside its buffer.
    OutOfBounds {
        /// The buffer.
        buffer: BufferId,
        /// The offending box (unused dimensions `0..1`).
        region: Box3,
    },
    /// A declared region has a different number of dimensions than its buffer.
    Dimensions {
        /// The buffer.
        buffer: BufferId,
        /// The region's number of dimensions (`usize::MAX` for a union of mixed ones).
        region: usize,
    },
    /// The buffer was created by another flow.
    ForeignBuffer {
        /// The buffer.
        buffer: BufferId,
    },
    /// Since the last `wait`, some kernels panicked and the tasks after them were cancelled.
    Failed {
        /// Kernels that panicked.
        panicked: usize,
        /// Tasks that never ran because an input failed.
        cancelled: usize,
        /// The first panic's message.
        first_panic: Option<String>,
    },
    /// The flow's scheduler thread is gone (it panicked); nothing more can be submitted.
    Stopped,
    /// A command group that cannot run as declared: two kernels, two accessors of one
    /// buffer, accessors without a range kernel, chunks that write the same elements on
    /// different ranks, a range mapper that is not monotone on several ranks or that
    /// panicked. Says which.
    Declaration(String),
    /// The ranks of a distributed flow submitted different command groups: `task` is the
    /// index (from 0, counting every submission of the flow) of the first that differs.
    Diverged {
        /// The first command group whose declaration differs between ranks.
        task: u64,
        /// What each rank declared there (label and a hash of the declaration).
        detail: String,
    },
    /// The ranks of a distributed flow made different collective calls at the same point:
    /// [`Flow::wait`](super::Flow::wait), [`Flow::read_back`](super::Flow::read_back) (of
    /// which buffer) and dropping the flow must come in the same order on every rank.
    NotCollective {
        /// The call this rank made.
        call: String,
        /// What each rank called there.
        detail: String,
    },
    /// The transport of a distributed flow dropped a message of a collective call without
    /// delivering it (its progress ended): the ranks can no longer agree, and every later
    /// collective call of the flow on this rank fails alike.
    TransportLost {
        /// The call this rank made.
        call: String,
    },
}

impl fmt::Display for FlowError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FlowError::OutOfBounds { buffer, region } => write!(
                f,
                "region {:?}..{:?} lies outside the buffer of extent {:?}; use a smaller box \
                 or Region::neighbourhood, which clamps",
                region.lo,
                region.hi,
                &buffer.extent[..buffer.dims()]
            ),
            FlowError::Dimensions { buffer, region } => write!(
                f,
                "a region with {region} dimensions declared on a buffer with {}",
                buffer.dims()
            ),
            FlowError::ForeignBuffer { .. } => write!(
                f,
                "the buffer belongs to another flow; create it with this flow's buffer()"
            ),
            FlowError::Failed {
                panicked,
                cancelled,
                first_panic,
            } => write!(
                f,
                "{panicked} kernel(s) panicked and {cancelled} task(s) were cancelled; first \
                 panic: {}",
                first_panic.as_deref().unwrap_or("(no message)")
            ),
            FlowError::Stopped => write!(f, "the flow's scheduler thread has stopped"),
            FlowError::Declaration(message) => write!(f, "{message}"),
            FlowError::Diverged { task, detail } => write!(
                f,
                "the ranks submitted different graphs: command group #{task} differs ({detail})"
            ),
            FlowError::NotCollective { call, detail } => write!(
                f,
                "{call} is collective, but the ranks made different calls here ({detail}); \
                 every rank must call wait and read_back, and drop the flow, in the same order"
            ),
            FlowError::TransportLost { call } => write!(
                f,
                "{call} is collective, but the transport dropped a message of it without \
                 delivering it: its progress has ended"
            ),
        }
    }
}

impl std::error::Error for FlowError {}
