//! The chaos test's task graphs: dependent tasks and events on one pool, and how each
//! `Task::join` is checked against the plan (see `chaos.rs` for the whole).
//!
//! A graph's plan fixes every task's outcome before it exists: a task runs only if every
//! input succeeds (a completed event, a task that runs without panicking), else it is
//! cancelled. Its body never waits (`Plan::wait`): the worker would run other queued jobs
//! meanwhile, and one of them may be waiting for this very task (TBB calls this
//! moonlighting; it is a deadlock of the test's plan, not of the pool). Every event is
//! completed or dropped before anything joins a task of the graph.

use std::panic::{self, AssertUnwindSafe};
use std::sync::atomic::Ordering;
use std::sync::Arc;

use ember::{Dependency, Event, Task, TaskError};
use proptest::prelude::RngExt;
use proptest::test_runner::TestRng;

use crate::ledger::{Charge, Count, Expect, Kind, Ledger, Site};
use crate::ops::{body, job_on, World};
use crate::SIZES;

/// A task's result; its `Drop` may panic.
struct Val {
    id: u32,
    _charge: Charge,
}

/// A node of a random task graph.
enum Node {
    Event {
        event: Option<Event>,
        ok: bool,
    },
    Task {
        task: Option<Task<Val>>,
        id: u32,
        expect: Expect,
    },
}

impl Node {
    fn dep(&self) -> Option<&dyn Dependency> {
        match self {
            Node::Event { event, .. } => event.as_ref().map(|e| e as &dyn Dependency),
            Node::Task { task, .. } => task.as_ref().map(|t| t as &dyn Dependency),
        }
    }

    /// Whether it succeeds (a completed event, a task that runs without panicking).
    fn ok(&self) -> bool {
        match self {
            Node::Event { ok, .. } => *ok,
            Node::Task { expect, .. } => *expect == Expect::Run,
        }
    }
}

/// Completes the event if planned, and drops it (uncompleted, that cancels its dependents).
fn end_event(ledger: &Ledger, event: Event, ok: bool) {
    if ok {
        event.complete();
        ledger.count(Count::EventCompleted);
    } else {
        ledger.count(Count::EventDropped);
    }
    ledger.drop_guarded(event);
}

pub fn graph_op(w: &Arc<World>, rng: &mut TestRng, target: usize, depth: u32, blocking: bool) {
    let (hz, pool) = (w.cfg.hazards, &w.pools[target]);
    let mut nodes: Vec<Node> = (0..rng.random_range(0..=2))
        .map(|_| Node::Event {
            event: Some(pool.event()),
            ok: !hz.cancels || rng.random_bool(0.6),
        })
        .collect();
    for _ in 0..rng.random_range(1..=5) {
        let picks: Vec<usize> = (0..rng.random_range(0..=nodes.len().min(3)))
            .map(|_| rng.random_range(0..nodes.len()))
            .filter(|&i| nodes[i].dep().is_some())
            .collect();
        let inputs: Vec<&dyn Dependency> = picks.iter().filter_map(|&i| nodes[i].dep()).collect();
        let cancelled = !picks.iter().all(|&i| nodes[i].ok());
        let (token, mut plan) = w.plan(rng, Kind::Task, target, depth + 1, cancelled);
        // A task's body must not wait: a waiting worker runs other jobs, and one of them may
        // be waiting for this very task (or a task after it).
        plan.wait = false;
        let (id, expect) = (
            token.id,
            if cancelled {
                Expect::Cancel
            } else if plan.panic.is_some() {
                Expect::Panic
            } else {
                Expect::Run
            },
        );
        if expect == Expect::Panic {
            w.ledger.task_panics[target].fetch_add(1, Ordering::Relaxed);
        }
        let captured = Charge::new(
            &w.ledger,
            hz.drop_panics && rng.random_bool(0.3),
            Site::ClosureDrop,
            id,
        );
        let result_armed = hz.drop_panics && rng.random_bool(0.3);
        let world = Arc::clone(w);
        let builder = pool
            .task(move || {
                captured.defuse();
                let id = body(&world, token, plan);
                Val {
                    id,
                    _charge: Charge::new(&world.ledger, result_armed, Site::ResultDrop, id),
                }
            })
            .after(&inputs);
        w.ledger.count(Count::Task);
        // With an input failed already, `spawn` cancels the task, dropping the closure here;
        // its `Drop` may panic out of `spawn` (the task ends all the same) or be caught by
        // the pool.
        match panic::catch_unwind(AssertUnwindSafe(|| builder.spawn())) {
            Ok(task) => nodes.push(Node::Task {
                task: Some(task),
                id,
                expect,
            }),
            Err(payload) => {
                w.ledger.receive(payload);
            }
        }
        // Now and then an event ends before later tasks name it (or can no longer name it).
        let early = rng.random_range(0..nodes.len());
        if let Node::Event { event, ok } = &mut nodes[early] {
            if rng.random_bool(0.3) {
                if let (true, Some(event)) = (*ok, event.as_ref()) {
                    event.complete();
                } else if let Some(event) = event.take() {
                    end_event(&w.ledger, event, false);
                }
            }
        }
    }
    if rng.random_bool(0.05) {
        // An input of another pool: the task never runs and says so.
        w.ledger.count(Count::ForeignTask);
        let foreign = w.pools[(target + 1) % SIZES.len()].event();
        let token = w.ledger.token(Kind::Task, Expect::Never, target);
        let id = token.id;
        let task = pool
            .task(move || {
                let token = token; // the whole token, so dropping the closure ends it
                Val {
                    id: token.id,
                    _charge: Charge::inert(),
                }
            })
            .after(&[&foreign])
            .spawn();
        check_task(w, id, Expect::Never, task.join());
    }
    for node in &mut nodes {
        let Node::Event { event, ok } = node else {
            continue;
        };
        let (Some(event), ok) = (event.take(), *ok) else {
            continue;
        };
        if rng.random_bool(0.3) {
            w.ledger.count(Count::EventElsewhere);
            let q = rng.random_range(0..SIZES.len());
            job_on(w, q, move |w| end_event(&w.ledger, event, ok));
        } else {
            end_event(&w.ledger, event, ok);
        }
    }
    for node in nodes {
        let Node::Task {
            task: Some(task),
            id,
            expect,
        } = node
        else {
            continue;
        };
        match rng.random_range(0..4) {
            0 | 1 if blocking => {
                w.ledger.count(Count::TaskJoined);
                w.note_wait(target);
                check_task(w, id, expect, task.join());
            }
            2 => {
                let q = if hz.cross_pool {
                    rng.random_range(0..SIZES.len())
                } else {
                    target
                };
                w.ledger.count(Count::TaskJoinedElsewhere);
                job_on(w, q, move |w| {
                    w.note_wait(target);
                    check_task(w, id, expect, task.join());
                });
            }
            _ => {
                w.ledger.count(Count::TaskDropped);
                w.ledger.drop_guarded(task);
            }
        }
    }
}

/// Checks what `Task::join` gave against the plan.
fn check_task(w: &World, id: u32, expect: Expect, result: Result<Val, TaskError>) {
    if matches!(expect, Expect::Run | Expect::Panic) {
        w.expect_ended(&[id], "Task::join returned before the task's closure ended");
    }
    let got = match (expect, result) {
        (Expect::Run, Ok(val)) if val.id == id => return w.ledger.drop_guarded(val),
        (Expect::Panic, Err(TaskError::Panicked(payload))) => {
            if w.ledger.receive(payload) == Some(id) {
                return;
            }
            "the payload of another panic".to_owned()
        }
        (Expect::Cancel, Err(TaskError::Cancelled))
        | (Expect::Never, Err(TaskError::ForeignPool)) => return,
        (_, Ok(val)) => {
            let got = format!("the value of {}", val.id);
            w.ledger.drop_guarded(val);
            got
        }
        (_, Err(TaskError::Panicked(payload))) => {
            w.ledger.receive(payload);
            "Panicked".to_owned()
        }
        (_, Err(error)) => format!("{error:?}"),
    };
    w.ledger.violation(format!(
        "task {id}: expected {expect:?}, Task::join gave {got}"
    ));
}
