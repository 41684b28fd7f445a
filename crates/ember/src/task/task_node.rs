//! `Task<T>` and its builder: a closure with inputs, run as a job once they are all done.

use std::panic::{self, AssertUnwindSafe};
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::node::{end, register, Ending, Header, Node};
use super::{Dependency, TaskError};
use crate::pool::{block_until, Pool, Registry, Runner, Sleeper};
use crate::sync::{lock, Mutex};
use crate::trace::Label;

/// A task that runs on a pool once its inputs are done, and its result.
///
/// Made by [`Pool::task`](crate::Pool::task)…[`spawn`](TaskBuilder::spawn). It can stand as an
/// input of other tasks ([`TaskBuilder::after`]); [`join`](Task::join) waits for its result.
/// Dropping the handle does not cancel the task.
///
/// ```
/// let pool = ember::Pool::builder().threads(2).build().unwrap();
/// let a = pool.task(|| 2).spawn();
/// let b = pool.task(|| 3).spawn();
/// let product = pool.task(|| 6).after(&[&a, &b]).spawn();
/// assert_eq!(product.join().unwrap(), 6);
/// ```
pub struct Task<T> {
    node: Arc<TaskNode<T>>,
}

pub(crate) struct TaskNode<T> {
    header: Header,
    func: Mutex<Option<Box<dyn FnOnce() -> T + Send>>>,
    result: Mutex<Option<Result<T, TaskError>>>,
    label: Option<Label>,
    /// Where panics of user drops the task makes are reported (`pool/unwind.rs`).
    registry: Arc<Registry>,
}

impl<T> Drop for TaskNode<T> {
    /// The last reference may go on a worker (the job that ran the task) or wherever the
    /// last dependent or handle is dropped: what the task still owns — a closure that never
    /// ran, a result or panic nobody joined — is user code whose drop may panic.
    fn drop(&mut self) {
        let func = lock(&self.func).take();
        let result = lock(&self.result).take();
        if func.is_some() || result.as_ref().is_some_and(drop_runs_user_code) {
            crate::pool::ops::spawn::kick_held_here();
        }
        self.registry.drop_reporting(func);
        self.registry.drop_reporting(result);
    }
}

/// Whether dropping a task's result may run user code: a value with drop glue, or a panic
/// payload. Where it does not (a `()` or `u64` result), a worker dropping it keeps the
/// successors it holds for itself (delay-kick).
fn drop_runs_user_code<T>(result: &Result<T, TaskError>) -> bool {
    match result {
        Ok(_) => std::mem::needs_drop::<T>(),
        Err(TaskError::Panicked(_)) => true,
        Err(TaskError::Cancelled | TaskError::ForeignPool) => false,
    }
}

impl<T: Send + 'static> Node for TaskNode<T> {
    fn header(&self) -> &Header {
        &self.header
    }

    fn schedule(self: Arc<Self>, registry: &Registry, from_task: bool) {
        crate::pool::ops::spawn::submit(registry, from_task, move |runner| self.run(runner));
    }

    fn record_cancelled(&self) {
        // Dropped on whatever thread ends the task (a worker, or one dropping an event); on a
        // worker, inside an ending that may have released successors it now holds.
        let func = lock(&self.func).take();
        if func.is_some() {
            crate::pool::ops::spawn::kick_held_here();
        }
        self.registry.drop_reporting(func);
        *lock(&self.result) = Some(Err(TaskError::Cancelled));
    }
}

impl<T: Send + 'static> TaskNode<T> {
    fn run(&self, runner: Runner<'_>) {
        runner.start_counted();
        let (registry, worker) = (runner.registry, runner.worker);
        let func = lock(&self.func)
            .take()
            .expect("a task runs once, when its last permit is taken");
        // The span ends before the ending is published, so a joiner sees it in the trace.
        let outcome = registry
            .trace
            .in_task_span(worker, self.label.as_ref(), || {
                panic::catch_unwind(AssertUnwindSafe(func))
            });
        let ending = match outcome {
            Ok(value) => {
                *lock(&self.result) = Some(Ok(value));
                Ending::Succeeded
            }
            Err(payload) => {
                registry.count_panic(worker);
                *lock(&self.result) = Some(Err(TaskError::Panicked(payload)));
                Ending::Failed
            }
        };
        end(registry, self, ending, true);
        registry.count_task_end_here();
    }
}

impl<T: Send + 'static> Task<T> {
    /// Whether the task has ended (ran, panicked, or was cancelled).
    pub fn is_finished(&self) -> bool {
        self.node.header.has_ended()
    }

    /// Waits for the task and returns its value, or why there is none.
    ///
    /// On a worker of any pool, the worker runs its own pool's queued jobs while it waits;
    /// elsewhere the calling thread blocks. A task that waits for an [`Event`](crate::Event)
    /// nobody completes, or for the very job that joins it, never ends:
    /// [`join_timeout`](Self::join_timeout) bounds the wait.
    ///
    /// ```
    /// let pool = ember::Pool::builder().threads(2).build().unwrap();
    /// let bad = pool.task(|| -> u32 { panic!("no input") }).spawn();
    /// let after_bad = pool.task(|| 1).after(&[&bad]).spawn();
    /// assert!(matches!(bad.join(), Err(ember::TaskError::Panicked(_))));
    /// assert!(matches!(after_bad.join(), Err(ember::TaskError::Cancelled)));
    /// ```
    pub fn join(self) -> Result<T, TaskError> {
        let header = &self.node.header;
        if !header.has_ended() && header.register_joiner(Sleeper::current()) {
            // The ending wakes this thread (`node::finish_one`).
            block_until(&|| header.has_ended(), None);
        }
        self.take_result()
    }

    /// [`join`](Self::join) for at most `timeout`: `Ok` with what `join` returns if the task
    /// ended in time, else `Err` with the task handed back, to wait again or drop.
    ///
    /// ```
    /// use std::time::Duration;
    /// let pool = ember::Pool::builder().threads(1).build().unwrap();
    /// let input = pool.event();
    /// let task = pool.task(|| 7).after(&[&input]).spawn();
    /// let task = task.join_timeout(Duration::from_millis(10)).unwrap_err(); // still waiting
    /// input.complete();
    /// assert_eq!(task.join_timeout(Duration::from_secs(60)).ok().unwrap().unwrap(), 7);
    /// ```
    pub fn join_timeout(self, timeout: Duration) -> Result<Result<T, TaskError>, Task<T>> {
        let header = &self.node.header;
        if !header.has_ended() && header.register_joiner(Sleeper::current()) {
            // A timeout too long to add to the clock (`Duration::MAX`) means no deadline.
            let deadline = Instant::now().checked_add(timeout);
            if !block_until(&|| header.has_ended(), deadline) {
                header.unregister_joiner();
                // It may have ended between the deadline and the unregistering.
                if !header.has_ended() {
                    return Err(self);
                }
            }
        }
        Ok(self.take_result())
    }

    fn take_result(self) -> Result<T, TaskError> {
        lock(&self.node.result)
            .take()
            .expect("an ended task has a result, taken only by its one handle")
    }

    pub(super) fn node_arc(&self) -> Arc<dyn Node> {
        self.node.clone()
    }
}

impl<T> std::fmt::Debug for Task<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Task")
            .field("finished", &self.node.header.has_ended())
            .field("label", &self.node.label)
            .finish()
    }
}

/// Configures a dependent task; made by [`Pool::task`](crate::Pool::task).
///
/// ```
/// let pool = ember::Pool::builder().threads(2).build().unwrap();
/// let first = pool.task(|| 1).label("first").spawn();
/// let second = pool.task(|| 2).after(&[&first]).label("second").spawn();
/// assert_eq!(second.join().unwrap(), 2);
/// ```
#[must_use = "a task does nothing until `spawn` is called"]
pub struct TaskBuilder<'p, F> {
    pool: &'p Pool,
    func: F,
    inputs: Vec<Arc<dyn Node>>,
    foreign: bool,
    label: Option<Label>,
}

impl<'p, F, T> TaskBuilder<'p, F>
where
    F: FnOnce() -> T + Send + 'static,
    T: Send + 'static,
{
    pub(crate) fn new(pool: &'p Pool, func: F) -> Self {
        TaskBuilder {
            pool,
            func,
            inputs: Vec::new(),
            foreign: false,
            label: None,
        }
    }

    /// Adds inputs: the task starts once every one of them is done. May be called several
    /// times; any width of fan-in is fine. An input that already finished counts as done (or,
    /// if it failed, cancels this task).
    pub fn after(mut self, inputs: &[&dyn Dependency]) -> Self {
        for input in inputs {
            let node = super::sealed::Sealed::node(*input).0;
            if node.header().pool_id != self.pool.registry_id() {
                self.foreign = true;
            }
            self.inputs.push(node);
        }
        self
    }

    /// Names the task in traces (`PoolBuilder::trace`); the text up to the first space or
    /// digit is its *kind*, which timelines colour by.
    pub fn label(mut self, label: impl Into<String>) -> Self {
        self.label = Some(Label::new(label.into()));
        self
    }

    /// Creates the task; it runs once its inputs are done.
    pub fn spawn(self) -> Task<T> {
        let registry = self.pool.registry();
        let node = Arc::new(TaskNode {
            header: Header::new(self.pool.registry_id(), self.inputs.len()),
            func: Mutex::new(Some(Box::new(self.func) as Box<dyn FnOnce() -> T + Send>)),
            result: Mutex::new(None),
            label: self.label,
            registry: Arc::clone(self.pool.registry()),
        });
        if self.foreign {
            let func = lock(&node.func).take();
            node.registry.drop_reporting(func);
            *lock(&node.result) = Some(Err(TaskError::ForeignPool));
            end(registry, &*node, Ending::Failed, false);
            return Task { node };
        }
        registry.count_spawn_here();
        register(registry, node.clone(), &self.inputs);
        Task { node }
    }
}
