//! Events: inputs completed from anywhere, once.

use std::sync::Arc;

use crate::sync::atomic::{AtomicBool, Ordering};

use super::node::{end, Ending, Header, Node};
use crate::pool::{Pool, Registry};

/// A one-shot input for dependent tasks, completed from any thread by [`Event::complete`]
/// (an IO thread, a timer, another pool…).
///
/// Tasks that name it in [`after`](super::TaskBuilder::after) start once it is complete
/// (and their other inputs are done). An event dropped without being completed cancels its
/// dependents: they never run, and their `join` returns
/// [`TaskError::Cancelled`](super::TaskError::Cancelled). An event keeps its pool running
/// until it is completed or dropped.
///
/// ```
/// let pool = ember::Pool::builder().threads(2).build().unwrap();
/// let loaded = pool.event();
/// let parse = pool.task(|| "parsed").after(&[&loaded]).spawn();
/// assert!(!parse.is_finished());
/// loaded.complete();
/// assert_eq!(parse.join().unwrap(), "parsed");
/// ```
pub struct Event {
    node: Arc<EventNode>,
    /// Keeps the pool (and so the workers that will run the dependents) alive.
    pool: Option<Pool>,
}

struct EventNode {
    header: Header,
    done: AtomicBool,
}

impl Node for EventNode {
    fn header(&self) -> &Header {
        &self.header
    }

    fn schedule(self: Arc<Self>, _registry: &Registry, _from_task: bool) {
        unreachable!("an event has no inputs, so nothing schedules it")
    }

    fn record_cancelled(&self) {
        unreachable!("an event has no inputs, so nothing cancels it")
    }
}

impl Event {
    pub(crate) fn new(pool: &Pool) -> Self {
        Event {
            node: Arc::new(EventNode {
                header: Header::new(pool.registry_id(), 0),
                done: AtomicBool::new(false),
            }),
            pool: Some(pool.clone()),
        }
    }

    /// Completes the event: dependents whose other inputs are done become runnable. Further
    /// calls do nothing.
    pub fn complete(&self) {
        self.finish(Ending::Succeeded);
    }

    /// Whether [`complete`](Self::complete) has been called.
    pub fn is_complete(&self) -> bool {
        self.node.header.has_ended()
    }

    fn finish(&self, ending: Ending) {
        if self.node.done.swap(true, Ordering::AcqRel) {
            return;
        }
        if let Some(pool) = &self.pool {
            end(pool.registry(), &*self.node, ending, false);
        }
    }

    pub(super) fn node_arc(&self) -> Arc<dyn Node> {
        self.node.clone()
    }
}

impl Drop for Event {
    fn drop(&mut self) {
        // Never completed: its dependents can never run, so they are cancelled, not leaked.
        self.finish(Ending::Failed);
        // The pool handle goes last: if it is the last one, dependents were pushed already
        // and the pool's drop runs them before joining its workers.
        self.pool.take();
    }
}

impl std::fmt::Debug for Event {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Event")
            .field("complete", &self.is_complete())
            .finish()
    }
}
