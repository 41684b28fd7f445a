//! The user's callbacks a pool keeps: the panic handler, and the handlers run on each worker
//! as it starts and as it exits ([`PoolBuilder::start_handler`], [`PoolBuilder::exit_handler`]).
//!
//! Each is user code, called by ember's own frames, so each is contained (`unwind.rs`): a
//! panic of a start or exit handler is caught on the worker, counted in
//! [`PoolStats::panics`](crate::PoolStats::panics) and passed to the panic handler; the worker
//! carries on (into its loop after a start handler, out of the pool after an exit handler). A
//! panic of the panic handler is counted and dropped. The drop of a handler (of what it
//! captured) happens when the pool's registry goes, and a panic there is dropped.
//!
//! [`PoolBuilder::start_handler`]: crate::PoolBuilder::start_handler
//! [`PoolBuilder::exit_handler`]: crate::PoolBuilder::exit_handler

use std::panic::{self, AssertUnwindSafe};

use crate::pool::jobs::job::Panic;
use crate::pool::jobs::unwind::Contained;
use crate::pool::workers::registry::Registry;

/// Called with the payload of a panic that escaped user code nobody waits for.
pub(crate) type PanicHandler = Box<dyn Fn(Panic) + Send + Sync>;

/// Called with a worker's index on that worker, as it starts or exits.
pub(crate) type ThreadHandler = Box<dyn Fn(usize) + Send + Sync>;

/// The callbacks of one pool, as the builder hands them over.
#[derive(Default)]
pub(crate) struct Handlers {
    pub(crate) panic: Option<PanicHandler>,
    pub(crate) start: Option<ThreadHandler>,
    pub(crate) exit: Option<ThreadHandler>,
}

/// The callbacks of one pool, as the registry keeps them: their drops are contained.
pub(crate) struct ContainedHandlers {
    pub(super) panic: Option<Contained<PanicHandler>>,
    start: Option<Contained<ThreadHandler>>,
    exit: Option<Contained<ThreadHandler>>,
}

impl From<Handlers> for ContainedHandlers {
    fn from(handlers: Handlers) -> Self {
        ContainedHandlers {
            panic: handlers.panic.map(Contained::new),
            start: handlers.start.map(Contained::new),
            exit: handlers.exit.map(Contained::new),
        }
    }
}

/// Which worker handler to run.
#[derive(Clone, Copy, Debug)]
pub(crate) enum WorkerEvent {
    Start,
    Exit,
}

impl Registry {
    /// Runs the start or exit handler, if there is one, on worker `index` (the calling
    /// thread): a panic in it is reported, never unwound.
    pub(crate) fn run_worker_handler(&self, event: WorkerEvent, index: usize) {
        let handler = match event {
            WorkerEvent::Start => &self.handlers.start,
            WorkerEvent::Exit => &self.handlers.exit,
        };
        if let Some(handler) = handler {
            if let Err(payload) = panic::catch_unwind(AssertUnwindSafe(|| handler(index))) {
                self.report_panic(payload);
            }
        }
    }
}
