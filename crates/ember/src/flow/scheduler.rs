//! The analysis side of a flow: the tasks of a submission, their outcomes, the scheduler
//! that infers their dependencies and spawns them on the pool, and the engines (inline, or
//! a scheduler thread fed by the submission queue) that run it.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use super::graph::{Access, Graph, NodeId};
use super::queue::SubmissionQueue;
use super::{lock, Mode};
use crate::pool::WaitList;
use crate::{Pool, Task};

/// One task of a submission: checked accesses, the wrapped kernel, and events it waits for
/// besides its accesses.
pub(super) struct Piece {
    pub(super) accesses: Vec<Access>,
    pub(super) job: Box<dyn FnOnce() + Send + 'static>,
    pub(super) label: Option<String>,
    pub(super) events: Vec<crate::Event>,
}

/// What reaches the scheduler: the tasks of one command group (one, or one per chunk of a
/// range), analysed together so that no other group's tasks come between them.
pub(super) struct Submission {
    pub(super) pieces: Vec<Piece>,
}

#[derive(Default)]
pub(super) struct Outcomes {
    pub(super) pending: usize,
    pub(super) panicked: usize,
    pub(super) cancelled: usize,
    pub(super) first_panic: Option<String>,
    /// Whether any task of the flow ever panicked or was cancelled: never reset (unlike the
    /// counts, which `wait` resets), for the drop's check.
    pub(super) troubled: bool,
}

pub(super) struct Shared {
    pub(super) outcomes: Mutex<Outcomes>,
    /// `wait` callers, woken when `pending` falls to zero.
    pub(super) waiters: WaitList,
    /// A distributed flow's drop, woken when `pending` falls to zero, when a task ends
    /// panicked or unrun, and when another rank's outcome arrives (see `settle.rs`).
    pub(super) settle: WaitList,
    pub(super) tasks: AtomicU64,
    pub(super) edges: AtomicU64,
    pub(super) horizons: AtomicU64,
    pub(super) analysis_ns: AtomicU64,
}

impl Default for Shared {
    fn default() -> Self {
        Shared {
            outcomes: Mutex::default(),
            waiters: WaitList::new(),
            settle: WaitList::new(),
            tasks: AtomicU64::default(),
            edges: AtomicU64::default(),
            horizons: AtomicU64::default(),
            analysis_ns: AtomicU64::default(),
        }
    }
}

/// Counts a task out when its job is dropped: after running, after panicking (the drop
/// happens during unwinding), or unrun because the pool cancelled it.
pub(super) struct Completion {
    pub(super) shared: Arc<Shared>,
    pub(super) state: RunState,
}

#[derive(PartialEq)]
pub(super) enum RunState {
    NotRun,
    Panicked,
    Done,
}

impl Completion {
    pub(super) fn set(&mut self, state: RunState) {
        self.state = state;
    }
}

impl Drop for Completion {
    fn drop(&mut self) {
        let all_done = {
            let mut o = lock(&self.shared.outcomes);
            match self.state {
                RunState::NotRun => {
                    o.cancelled += 1;
                    o.troubled = true;
                }
                RunState::Panicked => {
                    o.panicked += 1;
                    o.troubled = true;
                }
                RunState::Done => {}
            }
            o.pending -= 1;
            o.pending == 0
        };
        if all_done {
            let shared = &self.shared;
            shared
                .waiters
                .notify_changed(|| lock(&shared.outcomes).pending == 0);
        }
        if all_done || self.state != RunState::Done {
            self.shared.settle.notify_changed(|| true);
        }
    }
}

/// The analysis side: the graph and the handles of the tasks it still names.
pub(super) struct Scheduler {
    pub(super) pool: Pool,
    pub(super) graph: Graph,
    pub(super) handles: HashMap<NodeId, Task<()>>,
    pub(super) prune_at: usize,
    pub(super) shared: Arc<Shared>,
}

impl Scheduler {
    pub(super) fn analyse(&mut self, sub: Submission) {
        for piece in sub.pieces {
            self.analyse_piece(piece);
        }
    }

    fn analyse_piece(&mut self, sub: Piece) {
        let start = Instant::now();
        let added = self.graph.add(&sub.accesses);
        let horizon = !added.horizon.is_empty();
        let horizon_edges: usize = added.horizon.iter().map(|(_, deps)| deps.len()).sum();
        // Counted before spawning, so they are complete once `wait` sees the tasks end.
        self.shared.tasks.fetch_add(1, Ordering::Relaxed);
        self.shared
            .edges
            .fetch_add((added.deps.len() + horizon_edges) as u64, Ordering::Relaxed);
        if horizon {
            self.shared.horizons.fetch_add(1, Ordering::Relaxed);
        }
        let task = self.spawn(sub.job, &added.deps, &sub.events, sub.label);
        self.handles.insert(added.id, task);
        for (h, deps) in added.horizon {
            let node = self.spawn(Box::new(|| {}), &deps, &[], None);
            self.handles.insert(h, node);
        }
        if horizon || self.handles.len() >= self.prune_at {
            // After a horizon the graph names one node per buffer it tracks.
            let live: HashSet<NodeId> = self.graph.live().into_iter().collect();
            self.handles.retain(|id, _| live.contains(id));
            self.prune_at = 2 * self.handles.len() + 1024;
        }
        self.shared
            .analysis_ns
            .fetch_add(start.elapsed().as_nanos() as u64, Ordering::Relaxed);
    }

    fn spawn(
        &self,
        job: Box<dyn FnOnce() + Send + 'static>,
        deps: &[NodeId],
        events: &[crate::Event],
        label: Option<String>,
    ) -> Task<()> {
        let inputs: Vec<&dyn crate::Dependency> = deps
            .iter()
            .map(|d| &self.handles[d] as &dyn crate::Dependency)
            .chain(events.iter().map(|e| e as &dyn crate::Dependency))
            .collect();
        let builder = self.pool.task(job).after(&inputs);
        match label {
            Some(label) => builder.label(label).spawn(),
            None => builder.spawn(),
        }
    }
}

pub(super) enum Engine {
    Inline(Mutex<Scheduler>),
    Threaded {
        queue: Arc<SubmissionQueue<Submission>>,
        thread: Option<std::thread::JoinHandle<()>>,
    },
}

/// Closes the queue and drops whatever is left in it if the scheduler thread unwinds, so
/// the dropped jobs count as cancelled and `wait` does not hang.
pub(super) struct CloseOnExit(Arc<SubmissionQueue<Submission>>);

impl Drop for CloseOnExit {
    fn drop(&mut self) {
        self.0.close();
        let mut rest = Vec::new();
        while self.0.take(&mut rest) {
            rest.clear();
        }
    }
}

pub(super) fn schedule(
    mut scheduler: Scheduler,
    queue: &Arc<SubmissionQueue<Submission>>,
    mode: Mode,
) {
    let _close = CloseOnExit(queue.clone());
    if mode == Mode::Lockstep {
        while queue.take_lockstep(|sub| scheduler.analyse(sub)) {}
    } else {
        let mut back = Vec::new();
        while queue.take(&mut back) {
            for sub in back.drain(..) {
                scheduler.analyse(sub);
            }
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::flow::{Flow, FlowOptions};

    fn handles(flow: &Flow) -> (usize, usize) {
        match &flow.engine {
            Engine::Inline(scheduler) => {
                let s = lock(scheduler);
                (s.handles.len(), s.graph.tracked())
            }
            Engine::Threaded { .. } => unreachable!("inline flows only"),
        }
    }

    /// Over a long run with horizons the scheduler keeps handles only for what the graph
    /// still names: at most one horizon's worth of tasks and a horizon node per buffer. Without horizons, reads of a buffer nobody
    /// writes pile up as readers: the growth horizons exist to stop.
    #[test]
    fn scheduler_state_stays_bounded_over_a_long_run() {
        let pool = Pool::builder().threads(2).build().unwrap();
        for horizon_every in [64, 0] {
            let flow = Flow::new(
                &pool,
                FlowOptions {
                    mode: Mode::Inline,
                    horizon_every,
                },
            );
            let a = flow.buffer([64]);
            let b = flow.buffer([8, 8]);
            let mut most = (0, 0);
            for i in 0..20_000 {
                flow.submit(|cg| {
                    cg.read(&a, i % 64..i % 64 + 1);
                    cg.write(&b, [i % 8..i % 8 + 1, 0..8]);
                    cg.run(|| {});
                })
                .unwrap();
                let (live, tracked) = handles(&flow);
                most = (most.0.max(live), most.1.max(tracked));
            }
            flow.wait().unwrap();
            assert_eq!(flow.stats().tasks, 20_000);
            if horizon_every > 0 {
                assert!(most.0 <= 64 + 2, "{} handles", most.0);
                assert!(most.1 <= 2 * 64 + 8, "{} tracked", most.1);
                assert_eq!(flow.stats().horizons, 20_000 / 64);
            } else {
                assert!(most.1 > 19_000, "readers accumulate: {}", most.1);
            }
        }
    }
}
