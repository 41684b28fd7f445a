//! Events: inputs completed from anywhere, once.

use std::sync::Arc;

use crate::sync::atomic::{AtomicBool, Ordering};

use super::node::{end, Ending, Header, Node};
use crate::pool::{Pool, Registry};

/// A one-shot input for dependent tasks, completed from any thread by [`Event::complete`]
/// (an IO thread, a timer, another pool…).
///
/// Tasks that name it in [`after`](super::TaskBuilder::after) start once it is complete
/// (and their other inputs are done). An event keeps its pool running until it is completed
/// or dropped.
///
/// **Clones.** `Event` is a cheap `Clone` handle to one event: any clone may complete it
/// (an IO thread completes its clone while other code still names another in `after`), and
/// the first completion counts. Only when *every* clone has been dropped without the event
/// being completed are its dependents cancelled: they never run, and their `join` returns
/// [`TaskError::Cancelled`](super::TaskError::Cancelled).
///
/// ```
/// let pool = ember::Pool::builder().threads(2).build().unwrap();
/// let loaded = pool.event();
/// let parse = pool.task(|| "parsed").after(&[&loaded]).spawn();
/// assert!(!parse.is_finished());
/// let io = loaded.clone();
/// std::thread::spawn(move || io.complete()); // an IO thread completes its clone
/// assert_eq!(parse.join().unwrap(), "parsed");
/// assert!(loaded.is_complete());
/// ```
#[derive(Clone)]
pub struct Event {
    handle: crate::sync::Arc<EventHandle>,
}

/// What the clones of one event share; dropped with the last clone.
struct EventHandle {
    node: Arc<EventNode>,
    /// Where the ending is published.
    registry: Arc<Registry>,
    /// Keeps the pool (and so the workers that will run the dependents) alive; `None` only
    /// in the loom models, which have no pool.
    _pool: Option<Pool>,
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
        Self::on(Arc::clone(pool.registry()), Some(pool.clone()))
    }

    /// An event whose ending is published on `registry`, keeping `pool` alive.
    pub(crate) fn on(registry: Arc<Registry>, pool: Option<Pool>) -> Self {
        Event {
            handle: crate::sync::Arc::new(EventHandle {
                node: Arc::new(EventNode {
                    header: Header::new(registry.id, 0),
                    done: AtomicBool::new(false),
                }),
                registry,
                _pool: pool,
            }),
        }
    }

    /// Completes the event: dependents whose other inputs are done become runnable. Further
    /// calls, through this clone or any other, do nothing.
    pub fn complete(&self) {
        self.handle.finish(Ending::Succeeded);
    }

    /// Whether [`complete`](Self::complete) has been called (through any clone).
    pub fn is_complete(&self) -> bool {
        self.handle.node.header.has_ended()
    }

    pub(crate) fn node_arc(&self) -> Arc<dyn Node> {
        self.handle.node.clone()
    }
}

impl EventHandle {
    /// Ends the event once: the first call wins (`done`), later ones do nothing.
    fn finish(&self, ending: Ending) {
        if self.node.done.swap(true, Ordering::AcqRel) {
            return;
        }
        end(&self.registry, &*self.node, ending, false);
    }
}

impl Drop for EventHandle {
    /// The last clone is gone. If none completed the event, its dependents can never run,
    /// so they are cancelled, not leaked. Every clone's `complete` happened before this drop
    /// (the reference count's release/acquire orders them), so `finish` sees it and a
    /// completed event stays completed.
    fn drop(&mut self) {
        self.finish(Ending::Failed);
        // The pool handle goes last (fields drop after this body): if it is the last one,
        // dependents were pushed already and the pool's drop runs them before joining its
        // workers.
    }
}

impl std::fmt::Debug for Event {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Event")
            .field("complete", &self.is_complete())
            .finish()
    }
}
