//! Work-queue containers for feeding a pool's workers, each proven correct before it is timed.
//!
//! Which container should hand work to the workers matters less than how work flows through the
//! pool, but every candidate must first be correct. This crate holds the containers that are
//! written here rather than taken from a library, each checked by multi-threaded stress tests
//! that count every item in and out and by [loom] models that explore the interleavings of their
//! push/pop/steal races:
//!
//! - [`TreiberStack`]: an unbounded lock-free MPMC stack, memory reclaimed through
//!   `crossbeam-epoch`.
//! - [`SpmcBatch`]: a bounded single-producer, multi-consumer batch queue whose consumers claim
//!   items with one `fetch_add`.
//! - [`amp_deque`]: the bounded work-stealing deque of *The Art of Multiprocessor Programming*,
//!   both exactly as published ([`amp_deque::Published`], which can hand out one item twice) and
//!   corrected ([`amp_deque::Fixed`]). A loom model finds the published version's counterexample.
//!
//! [`WorkQueue`] is the small interface an experiment drives every shared container through.
//!
//! [loom]: https://docs.rs/loom

pub mod amp_deque;
mod spmc;
mod sync;
mod treiber;

pub use spmc::SpmcBatch;
pub use treiber::TreiberStack;

/// Whether this build runs on loom's model-checked primitives (`--cfg loom`), which only work
/// inside a loom model; the documentation examples return early when it is set.
#[doc(hidden)]
pub const MODEL_CHECKED: bool = cfg!(loom);

/// A container that hands items to a pool's workers.
///
/// Both operations take the calling worker's index (`0..workers`, with the thread that submits
/// work free to use any index it is given, e.g. `0`). Shared containers such as
/// [`TreiberStack`] ignore it; per-worker containers (one SPSC ring or one deque per worker) need
/// it to pick the caller's own ring on `pop` and a target ring on `push`, and taking it in the
/// trait keeps the hot path free of thread-local lookups. Implementations define what an
/// out-of-range index means and document it.
///
/// `push` must not lose `item`: a bounded container that is full waits for room rather than
/// dropping or returning it. `pop` returns `None` when the container looked empty to the caller;
/// it never blocks.
///
/// ```
/// # if ember_containers::MODEL_CHECKED { return; } // loom types only work inside a model
/// use ember_containers::{TreiberStack, WorkQueue};
///
/// fn drain<Q: WorkQueue<u32>>(queue: &Q) -> u32 {
///     let mut sum = 0;
///     while let Some(item) = queue.pop(0) {
///         sum += item;
///     }
///     sum
/// }
///
/// let stack = TreiberStack::new();
/// for i in 1..=4 {
///     WorkQueue::push(&stack, 0, i);
/// }
/// assert_eq!(drain(&stack), 10);
/// ```
pub trait WorkQueue<T>: Send + Sync {
    /// Adds `item`, on behalf of worker `worker`.
    fn push(&self, worker: usize, item: T);

    /// Takes an item, on behalf of worker `worker`, or returns `None` if none was available.
    fn pop(&self, worker: usize) -> Option<T>;
}
