//! The state dump a pool prints with `{:?}`: what a user needs to see when something hangs.
//!
//! It reads only what other threads may read at any time (atomics, the deques' lengths, the
//! sleeper set under its lock), so it can be printed from any thread while the pool runs. It is
//! a moment's approximation: each number is exact, but they are not read at one instant.

use std::fmt;

use crate::pool::workers::registry::{Registry, WorkerState};

/// One worker's line in the dump.
struct WorkerDump<'r> {
    registry: &'r Registry,
    index: usize,
}

impl fmt::Debug for WorkerDump<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use std::sync::atomic::Ordering::Relaxed;
        let counters = &self.registry.counters[self.index];
        let state = match counters.state() {
            WorkerState::Running => "running",
            WorkerState::Sleeping => "sleeping",
            WorkerState::Exited => "exited",
        };
        f.debug_struct("Worker")
            .field("index", &self.index)
            .field("state", &format_args!("{state}"))
            .field("nested_waits", &counters.waits.load(Relaxed))
            .field("deque", &self.registry.stealers[self.index].len())
            .field("broadcasts", &self.registry.broadcasts[self.index].len())
            .field("held", &counters.held.load(Relaxed))
            .field("tasks_run", &counters.tasks.load(Relaxed))
            .finish()
    }
}

/// Writes the dump of `registry`.
pub(super) fn fmt_registry(registry: &Registry, f: &mut fmt::Formatter<'_>) -> fmt::Result {
    let workers: Vec<WorkerDump<'_>> = (0..registry.workers())
        .map(|index| WorkerDump { registry, index })
        .collect();
    f.debug_struct("Pool")
        .field("threads", &registry.workers())
        .field("wake", &registry.sleep.policy())
        .field("delay_kick", &registry.config.delay_kick)
        .field("terminating", &registry.terminating())
        .field("outstanding_tasks", &registry.outstanding())
        .field("injector", &registry.injector.len())
        .field("searching", &registry.sleep.searching())
        .field("sleeping", &registry.sleep.sleeping())
        .field("workers", &workers)
        .finish()
}
