//! Diagnostics for the hangs that remain possible (an event nobody completes, a job blocked on
//! something outside the pool): bounded waits, and a state dump printable from any thread. And
//! the waits that cannot end being reported as errors instead of hanging.

use std::sync::mpsc;
use std::time::Duration;

use ember::flow::{Flow, FlowOptions, Mode};
use ember::{Pool, TaskError};

mod common;
use common::{no_deadlock, policies, pool};

/// Long enough for any test machine, as a bound on waits that do end.
const ENOUGH: Duration = common::DEADLOCK;
/// Short, for waits that cannot end.
const SHORT: Duration = Duration::from_millis(20);

#[test]
fn join_timeout_hands_the_task_back_and_joins_it_later() {
    for (name, policy) in policies() {
        let pool = pool(policy, 2);
        let input = pool.event();
        let task = pool.task(|| 7).after(&[&input]).spawn();
        let task = task
            .join_timeout(SHORT)
            .expect_err("the task waits for an event nobody completed yet");
        assert!(!task.is_finished(), "{name}");
        input.complete();
        assert_eq!(
            task.join_timeout(ENOUGH).ok().unwrap().unwrap(),
            7,
            "{name}"
        );
    }
}

/// On a worker of another pool, `join_timeout` helps its own pool while it waits, and gives up
/// at the deadline.
#[test]
fn join_timeout_on_a_worker_of_another_pool() {
    for (name, policy) in policies() {
        let (a, b) = (pool(policy, 1), pool(policy, 1));
        let never = b.event();
        let stuck = b.task(|| ()).after(&[&never]).spawn();
        let (tx, rx) = mpsc::channel();
        a.spawn(move || {
            let outcome = stuck.join_timeout(SHORT);
            tx.send(outcome.is_err()).unwrap();
        });
        let timed_out = no_deadlock(name, move || rx.recv().unwrap());
        assert!(timed_out, "{name}");
        drop(never);
    }
}

#[test]
fn a_cancelled_task_joins_in_time() {
    let pool = pool(ember::WakePolicy::Searching, 1);
    let input = pool.event();
    let task = pool.task(|| 1).after(&[&input]).spawn();
    drop(input);
    assert!(matches!(
        task.join_timeout(ENOUGH).ok().unwrap(),
        Err(TaskError::Cancelled)
    ));
}

#[test]
fn wait_idle_timeout_says_whether_the_pool_became_idle() {
    for (name, policy) in policies() {
        let pool = pool(policy, 2);
        let never = pool.event();
        let stuck = pool.task(|| ()).after(&[&never]).spawn();
        assert!(
            !pool.wait_idle_timeout(SHORT),
            "{name}: a task is outstanding"
        );
        never.complete();
        assert!(pool.wait_idle_timeout(ENOUGH), "{name}");
        assert!(stuck.is_finished(), "{name}");
    }
}

/// `{:?}` of a pool shows what a hang needs: each worker's state and queue, the global queue,
/// sleepers and searchers, outstanding tasks. Printed here from another thread while a job
/// blocks its worker.
#[test]
fn the_debug_dump_shows_a_blocked_worker_and_outstanding_tasks() {
    let pool = pool(ember::WakePolicy::Searching, 1);
    let (started_tx, started) = mpsc::channel();
    let (release, blocked) = mpsc::channel::<()>();
    pool.spawn(move || {
        started_tx.send(()).unwrap();
        blocked.recv().unwrap();
    });
    started.recv().unwrap();
    pool.spawn(|| {});
    let dump = format!("{pool:?}");
    for field in [
        "threads: 1",
        "outstanding_tasks: 2",
        "injector: 1",
        "searching: 0",
        "sleeping: []",
        "state: running",
        "deque: 0",
        "held: 0",
        "nested_waits: 0",
    ] {
        assert!(dump.contains(field), "{field:?} missing from {dump}");
    }
    release.send(()).unwrap();
    assert!(pool.wait_idle_timeout(ENOUGH));
    let dump = format!("{pool:#?}");
    assert!(dump.contains("outstanding_tasks: 0"), "{dump}");
}

/// A kernel that waits for its own flow would wait for itself: it panics with a message (the
/// kernel's task fails; the flow reports it), instead of hanging.
#[test]
fn flow_wait_inside_a_kernel_is_an_error_not_a_hang() {
    let pool = Pool::builder().threads(1).build().unwrap();
    let flow = std::sync::Arc::new(Flow::new(
        &pool,
        FlowOptions {
            mode: Mode::Inline,
            ..Default::default()
        },
    ));
    let (tx, rx) = mpsc::channel();
    let inner = flow.clone();
    flow.submit(|cg| {
        cg.run(move || {
            let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| inner.wait()));
            let message = outcome
                .err()
                .map(|p| common::message(&*p))
                .unwrap_or_default();
            tx.send(message).unwrap();
        })
    })
    .unwrap();
    let message = no_deadlock("Flow::wait in a kernel", move || rx.recv().unwrap());
    assert!(message.contains("Flow::wait"), "{message}");
    flow.wait().unwrap();
}
