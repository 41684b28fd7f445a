//! What tasks and events have in common: forward permits, successors, and how an ending
//! releases the nodes that wait on it.
//!
//! # Forward permits
//!
//! A node starts with one permit per input plus one held by its creator while it registers
//! with its inputs. Each input that ends takes one permit away; the creator drops its own when
//! registration is complete. Whoever takes the last permit makes the node runnable, so exactly
//! one thread schedules it, and nothing on that path is shared beyond the node's own counter:
//! no lock, no global atomic.
//!
//! # Failure
//!
//! An input that panicked, was cancelled, or (for an event) was dropped without completing
//! marks its successors *cancelled* before taking their permit. A cancelled node whose permits
//! run out does not run: it ends as cancelled at once, which cancels its own successors in
//! turn. Cancellation cascades through a worklist, not recursion, so a chain of 100,000
//! cancelled tasks needs no deep stack.

use std::sync::Arc;

use crate::sync::atomic::{AtomicBool, AtomicU8, AtomicUsize, Ordering};
use crate::sync::{lock, Mutex};

use super::successors::Successors;
use crate::pool::{Registry, Sleeper};

/// How a node ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Ending {
    Succeeded,
    /// Panicked, cancelled, or an event dropped without completing.
    Failed,
}

const PENDING: u8 = 0;
const SUCCEEDED: u8 = 1;
const FAILED: u8 = 2;

/// The part of a task or event the dependency machinery works on.
pub(crate) struct Header {
    /// Id of the owning pool: identifies it without holding it.
    pub(crate) pool_id: usize,
    permits: AtomicUsize,
    cancelled: AtomicBool,
    ending: AtomicU8,
    successors: Successors,
    /// Who waits in `Task::join` for the node to end (a worker of any pool, or a thread).
    joiner: Mutex<Option<Sleeper>>,
}

impl Header {
    /// A header with `inputs` permits for inputs plus one for the creator.
    pub(crate) fn new(pool_id: usize, inputs: usize) -> Self {
        Header {
            pool_id,
            permits: AtomicUsize::new(inputs + 1),
            cancelled: AtomicBool::new(false),
            ending: AtomicU8::new(PENDING),
            successors: Successors::new(),
            joiner: Mutex::new(None),
        }
    }

    pub(crate) fn is_cancelled(&self) -> bool {
        self.cancelled.load(Ordering::Acquire)
    }

    pub(crate) fn cancel(&self) {
        self.cancelled.store(true, Ordering::Release);
    }

    /// Whether the node has ended (its result, if any, is readable after a `true`).
    pub(crate) fn has_ended(&self) -> bool {
        self.ending.load(Ordering::Acquire) != PENDING
    }

    /// Takes one permit; returns whether it was the last (the caller must schedule the node).
    pub(crate) fn release(&self) -> bool {
        // AcqRel: the last releaser must see every earlier releaser's writes (a cancel mark)
        // and the registrations of the creator.
        self.permits.fetch_sub(1, Ordering::AcqRel) == 1
    }

    /// Registers `successor` to be released when this node ends. If it has ended already,
    /// releases it on the spot (cancelling it first if this node failed) and returns whether
    /// that was the successor's last permit.
    pub(crate) fn add_successor(&self, successor: Arc<dyn Node>) -> Option<bool> {
        match self.successors.push(successor) {
            Ok(()) => None,
            Err(successor) => {
                if self.ending.load(Ordering::Acquire) == FAILED {
                    successor.header().cancel();
                }
                Some(successor.header().release())
            }
        }
    }

    /// Registers the caller (a joiner) to be woken at the end, unless it has ended already.
    /// Returns whether to wait.
    pub(crate) fn register_joiner(&self, joiner: Sleeper) -> bool {
        let mut slot = lock(&self.joiner);
        // Checked under the lock that `end` takes after publishing the ending: either this
        // sees the ending, or `end` sees the joiner.
        if self.has_ended() {
            return false;
        }
        *slot = Some(joiner);
        true
    }

    /// Forgets the joiner (its wait timed out), so that the ending wakes nobody.
    pub(crate) fn unregister_joiner(&self) {
        lock(&self.joiner).take();
    }
}

/// A task or event as a dependency, behind the sealed `Dependency` trait (public so the trait
/// can name it, unreachable from outside the crate).
pub struct NodeRef(pub(crate) Arc<dyn Node>);

/// A task or an event, as its inputs see it.
pub(crate) trait Node: Send + Sync + 'static {
    fn header(&self) -> &Header;
    /// Called once, by whoever took the last permit, for a node that is not cancelled:
    /// push it on a queue of `registry` (the node is runnable).
    fn schedule(self: Arc<Self>, registry: &Registry, from_task: bool);
    /// Called once for a cancelled node whose permits ran out: record the cancellation.
    fn record_cancelled(&self);
}

/// Ends `node` and releases its successors: runnable ones are scheduled, cancelled ones end
/// in turn. `from_task` says whether the ending is a task finishing on a worker (its
/// successors are candidates for delay-kick).
pub(crate) fn end(registry: &Registry, node: &dyn Node, ending: Ending, from_task: bool) {
    let mut cancelled: Vec<Arc<dyn Node>> = Vec::new();
    finish_one(registry, node, ending, from_task, &mut cancelled);
    while let Some(next) = cancelled.pop() {
        // The result first: `finish_one` publishes the ending a joiner waits for.
        next.record_cancelled();
        finish_one(registry, &*next, Ending::Failed, false, &mut cancelled);
        registry.count_cancellation_here();
    }
}

/// Publishes one node's ending, wakes its joiner, and releases its successors.
fn finish_one(
    registry: &Registry,
    node: &dyn Node,
    ending: Ending,
    from_task: bool,
    cancelled: &mut Vec<Arc<dyn Node>>,
) {
    let header = node.header();
    header.ending.store(
        match ending {
            Ending::Succeeded => SUCCEEDED,
            Ending::Failed => FAILED,
        },
        Ordering::Release,
    );
    let joiner = lock(&header.joiner).take();
    if let Some(joiner) = joiner {
        joiner.wake();
    }
    for successor in header.successors.close() {
        if ending == Ending::Failed {
            successor.header().cancel();
        }
        if successor.header().release() {
            ready(registry, successor, from_task, cancelled);
        }
    }
}

/// Registers a new `node` with each of its `inputs`, then gives up the creator's permit. If
/// that was the last permit (every input had ended already), the node is scheduled, or ends
/// cancelled at once if an input had failed.
pub(crate) fn register(registry: &Registry, node: Arc<dyn Node>, inputs: &[Arc<dyn Node>]) {
    for input in inputs {
        // The creator's own permit is still held, so this can never be the last one.
        let released_last = input.header().add_successor(node.clone());
        assert_ne!(released_last, Some(true), "the creator's permit was lost");
    }
    if node.header().release() {
        if node.header().is_cancelled() {
            node.record_cancelled();
            end(registry, &*node, Ending::Failed, false);
            registry.count_cancellation_here();
        } else {
            node.schedule(registry, false);
        }
    }
}

/// A node whose permits ran out: run it, or, if cancelled, end it through the worklist.
pub(crate) fn ready(
    registry: &Registry,
    node: Arc<dyn Node>,
    from_task: bool,
    cancelled: &mut Vec<Arc<dyn Node>>,
) {
    if node.header().is_cancelled() {
        cancelled.push(node);
    } else {
        node.schedule(registry, from_task);
    }
}
