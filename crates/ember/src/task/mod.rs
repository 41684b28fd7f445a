//! Dependent tasks: tasks that start when their inputs are done, without a thread blocking
//! on each input.
//!
//! ```
//! let pool = ember::Pool::builder().threads(2).build().unwrap();
//! let io = pool.event();                                   // completed by someone else
//! let read = pool.task(|| 20u64).spawn();
//! let sum = pool.task(|| 22u64).spawn();
//! let total = pool
//!     .task(|| 42u64)
//!     .after(&[&io, &read, &sum])                          // runs once all three are done
//!     .label("total")
//!     .spawn();
//! std::thread::spawn(move || io.complete());               // e.g. an IO thread
//! assert_eq!(total.join().unwrap(), 42);
//! assert_eq!(read.join().unwrap() + sum.join().unwrap(), 42);
//! ```
//!
//! | file | holds |
//! | --- | --- |
//! | `node.rs` | forward permits, successor release, cancellation (the protocol) |
//! | `successors.rs` | the lock-free list of waiting successors |
//! | `task_node.rs` | [`Task`] and [`TaskBuilder`]: a closure run once its inputs end |
//! | `event.rs` | [`Event`]: an input completed from anywhere |
//! | `mod.rs` | [`Pool::task`](crate::Pool::task) and [`Pool::event`](crate::Pool::event), defined here rather than in the pool |
//!
//! # Delay-kick
//!
//! When a task finishing on a worker makes successors runnable, the pool (with
//! [`Tuning::delay_kick`](crate::Tuning::delay_kick), the default) does not push them
//! at once, which would wake a sleeping worker for work that the finishing worker is about to
//! look for. The worker holds them; when it next looks for work it takes the first for
//! itself and only then *kicks* the rest (pushes them and lets the wake policy wake workers
//! for them). A chain of tasks thus stays on one warm thread. Successors made runnable from
//! outside the pool (an [`Event`] completed by an IO thread) are pushed as usual. A plain
//! spawn has successors too — a job that spawns the next as its last act — and by default
//! gets the same treatment by other means: a spawn onto the worker's empty deque owes its
//! wake-up until the worker's next scheduling point, or 100 µs; see
//! [`Tuning::defer_wakeups`](crate::Tuning::defer_wakeups).
//!
//! # Failure
//!
//! A task that panics ends as [`TaskError::Panicked`]; every task that depends on it, directly
//! or not, never runs and ends as [`TaskError::Cancelled`]. An [`Event`] dropped without being
//! completed cancels its dependents the same way, so nothing waits forever on an input that
//! can no longer come.

mod event;
pub(crate) mod node;
pub(crate) mod successors;
mod task_node;

pub use event::Event;
pub use task_node::{Task, TaskBuilder};

use std::fmt;

use node::NodeRef;

use crate::Pool;

/// The pool's door to dependent tasks; defined here, beside the tasks, so that the pool itself
/// knows nothing of them (as `pool/ops/ambient.rs` does for the free functions).
impl Pool {
    /// Starts building a dependent task that runs `f`; see [`TaskBuilder`].
    ///
    /// ```
    /// let pool = ember::Pool::builder().threads(2).build().unwrap();
    /// let read = pool.task(|| vec![1u8, 2, 3]).spawn();
    /// let len = pool.task(|| 3usize).after(&[&read]).spawn();
    /// assert_eq!(len.join().unwrap(), 3);
    /// assert_eq!(read.join().unwrap(), vec![1, 2, 3]);
    /// ```
    pub fn task<F, T>(&self, f: F) -> TaskBuilder<'_, F>
    where
        F: FnOnce() -> T + Send + 'static,
        T: Send + 'static,
    {
        TaskBuilder::new(self, f)
    }

    /// A new, not yet completed [`Event`] of this pool.
    pub fn event(&self) -> Event {
        Event::new(self)
    }
}

/// Why a [`Task`] produced no value.
#[non_exhaustive]
pub enum TaskError {
    /// The task's closure panicked; the payload is the panic's, for
    /// [`std::panic::resume_unwind`].
    Panicked(Box<dyn std::any::Any + Send + 'static>),
    /// An input failed (panicked, was cancelled, or was an [`Event`] dropped without being
    /// completed), so the task never ran.
    Cancelled,
    /// An input belongs to another pool; the task never ran. Tasks can only depend on tasks
    /// and events of their own pool.
    ForeignPool,
}

/// The message of a panic payload, if it is a string (as `panic!` with a message makes it).
pub(crate) fn panic_message(payload: &(dyn std::any::Any + Send)) -> Option<&str> {
    payload
        .downcast_ref::<&str>()
        .copied()
        .or_else(|| payload.downcast_ref::<String>().map(String::as_str))
}

/// The variant, as `#[derive(Debug)]` would show it: `Panicked("message")` (`Panicked(..)`
/// for a payload that is not a string), `Cancelled`, `ForeignPool`. `Display` gives the
/// sentence that says what happened and what to do.
///
/// ```
/// let pool = ember::Pool::builder().threads(1).build().unwrap();
/// let err = pool.task(|| -> u8 { panic!("boom") }).spawn().join().unwrap_err();
/// assert_eq!(format!("{err:?}"), r#"Panicked("boom")"#);
/// assert_eq!(err.to_string(), "the task panicked: boom");
/// ```
impl fmt::Debug for TaskError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TaskError::Panicked(payload) => match panic_message(&**payload) {
                Some(message) => f.debug_tuple("Panicked").field(&message).finish(),
                None => f.write_str("Panicked(..)"),
            },
            TaskError::Cancelled => f.write_str("Cancelled"),
            TaskError::ForeignPool => f.write_str("ForeignPool"),
        }
    }
}

impl fmt::Display for TaskError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TaskError::Panicked(payload) => {
                let message = panic_message(&**payload).unwrap_or("a non-string payload");
                write!(f, "the task panicked: {message}")
            }
            TaskError::Cancelled => write!(
                f,
                "the task was cancelled: one of its inputs panicked, was cancelled, or was an \
                 event dropped without being completed"
            ),
            TaskError::ForeignPool => write!(
                f,
                "the task depends on a task or event of another pool; create its inputs with \
                 the same pool (pool.task / pool.event)"
            ),
        }
    }
}

impl std::error::Error for TaskError {}

/// Something a task can wait for in [`TaskBuilder::after`]: a [`Task`] or an [`Event`].
///
/// A dependency that has already finished counts as satisfied (or, if it failed, cancels the
/// dependent at once).
pub trait Dependency: sealed::Sealed {}

mod sealed {
    /// Keeps [`Dependency`](super::Dependency) implemented by this crate's types only.
    pub trait Sealed {
        fn node(&self) -> super::node::NodeRef;
    }
}

impl<T: Send + 'static> Dependency for Task<T> {}
impl Dependency for Event {}

impl<T: Send + 'static> sealed::Sealed for Task<T> {
    fn node(&self) -> NodeRef {
        NodeRef(self.node_arc())
    }
}

impl sealed::Sealed for Event {
    fn node(&self) -> NodeRef {
        NodeRef(self.node_arc())
    }
}
