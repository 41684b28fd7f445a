//! Dropping the last `Pool` handle runs every queued task, then lets the workers go.
//!
//! * 10,000 queued tasks all run when the pool is dropped right after spawning them, for each
//!   policy and 1, 2 and 8 workers.
//! * When the drop returns, every worker that ran a task has exited (a thread-local guard set
//!   by the tasks counts thread exits).
//! * When the last handle is dropped on a worker (a task held the last clone), the tasks it
//!   queued still run and the workers still exit: nothing deadlocks.
//! * Dropping a clone leaves the pool running for the other handles.

use std::cell::RefCell;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{mpsc, Arc, Mutex};

mod common;
use common::{policies, pool};
use ember::{Pool, WakePolicy};

const QUEUED: usize = 10_000;

/// Reports through its channel when the thread holding it exits.
struct ExitGuard(Mutex<mpsc::Sender<()>>);

impl Drop for ExitGuard {
    fn drop(&mut self) {
        let _ = self.0.lock().map(|tx| tx.send(()));
    }
}

thread_local! {
    static EXIT_GUARD: RefCell<Option<ExitGuard>> = const { RefCell::new(None) };
}

/// Installs an exit guard on the current thread unless it has one; returns whether it did.
fn watch_thread_exit(exits: &Mutex<mpsc::Sender<()>>) -> bool {
    EXIT_GUARD.with(|guard| {
        let mut guard = guard.borrow_mut();
        if guard.is_some() {
            return false;
        }
        *guard = Some(ExitGuard(Mutex::new(exits.lock().unwrap().clone())));
        true
    })
}

#[test]
fn drop_runs_every_queued_task() {
    for threads in [1, 2, 8] {
        for (name, policy) in policies() {
            let pool = pool(policy, threads);
            let counter = Arc::new(AtomicUsize::new(0));
            for _ in 0..QUEUED {
                let counter = Arc::clone(&counter);
                pool.spawn(move || {
                    counter.fetch_add(1, Ordering::Relaxed);
                });
            }
            drop(pool);
            assert_eq!(
                counter.load(Ordering::Relaxed),
                QUEUED,
                "{name}, {threads} workers: tasks run by the time drop returned"
            );
        }
    }
}

#[test]
fn drop_returns_after_the_workers_exited() {
    for (name, policy) in policies() {
        let pool = pool(policy, 2);
        let (exit_tx, exit_rx) = mpsc::channel();
        let exit_tx = Arc::new(Mutex::new(exit_tx));
        let watched = Arc::new(AtomicUsize::new(0));
        for _ in 0..1000 {
            let (exit_tx, watched) = (Arc::clone(&exit_tx), Arc::clone(&watched));
            pool.spawn(move || {
                if watch_thread_exit(&exit_tx) {
                    watched.fetch_add(1, Ordering::SeqCst);
                }
            });
        }
        drop(pool);
        let watched = watched.load(Ordering::SeqCst);
        assert!(watched >= 1, "{name}: no worker ran a task");
        let exited = exit_rx.try_iter().count();
        assert_eq!(
            exited, watched,
            "{name}: workers still running when drop returned ({exited} of {watched} exited)"
        );
    }
}

#[test]
fn last_handle_dropped_on_a_worker_still_drains_and_stops() {
    for (name, policy) in policies() {
        let pool = pool(policy, 2);
        let (exit_tx, exit_rx) = mpsc::channel();
        let exit_tx = Arc::new(Mutex::new(exit_tx));
        let (ran_tx, ran_rx) = mpsc::channel();
        let (go_tx, go_rx) = mpsc::channel::<()>();
        let watched = Arc::new(AtomicUsize::new(0));

        let last = pool.clone();
        {
            let (exit_tx, watched) = (Arc::clone(&exit_tx), Arc::clone(&watched));
            pool.spawn(move || {
                // Wait until the test's own handle is gone, so that `last` is the last one.
                go_rx.recv().unwrap();
                if watch_thread_exit(&exit_tx) {
                    watched.fetch_add(1, Ordering::SeqCst);
                }
                for _ in 0..1000 {
                    let (exit_tx, watched, ran_tx) =
                        (Arc::clone(&exit_tx), Arc::clone(&watched), ran_tx.clone());
                    last.spawn(move || {
                        if watch_thread_exit(&exit_tx) {
                            watched.fetch_add(1, Ordering::SeqCst);
                        }
                        ran_tx.send(()).unwrap();
                    });
                }
                drop(last);
            });
        }
        drop(pool);
        go_tx.send(()).unwrap();

        for i in 0..1000 {
            ran_rx
                .recv()
                .unwrap_or_else(|_| panic!("{name}: only {i} of 1000 queued tasks ran"));
        }
        // Every watched worker thread must exit; a worker that deadlocks joining itself never
        // does, and this test then hangs.
        let watched = watched.load(Ordering::SeqCst);
        drop(exit_tx);
        for _ in 0..watched {
            exit_rx.recv().unwrap();
        }
    }
}

#[test]
fn dropping_a_clone_keeps_the_pool_running() {
    for (name, policy) in policies() {
        let pool = pool(policy, 2);
        let clone = pool.clone();
        drop(pool);
        let (tx, rx) = mpsc::channel();
        clone.spawn(move || tx.send(7).unwrap());
        assert_eq!(rx.recv().unwrap(), 7, "{name}");
        assert_eq!(clone.join(|| 1, || 2), (1, 2), "{name}");
        clone.wait_idle();
    }
}

/// A job still running when the last handle is dropped spawns a helper and waits for it:
/// the idle worker must not have left (it sleeps until the pool has drained), and runs it.
/// Hung before: the idle worker left at its first empty look. With deferred wake-ups (the
/// pool's alarm watched first: until then a spawn wakes at once) the spawn owes its wake-up
/// and the alarm makes it, and the drop must end (the alarm's thread stops after the last
/// worker); the first version of that thread could miss its stop here.
#[test]
fn a_job_running_at_drop_may_spawn_and_wait() {
    for (name, policy) in common::unbiased_policies() {
        for defer in (0..20).flat_map(|_| [false, true]) {
            let what = format!("{name}, deferring: {defer}");
            let pool = common::pool_deferring(policy, 2, defer);
            watch_the_alarm(&pool, policy, defer, &what);
            let (started_tx, started_rx) = mpsc::channel();
            let (done_tx, done_rx) = mpsc::channel();
            pool.spawn(move || {
                started_tx.send(()).unwrap();
                // The drop below begins meanwhile; the other worker finds nothing.
                std::thread::sleep(std::time::Duration::from_millis(5));
                let (tx, rx) = mpsc::channel();
                ember::spawn(move || tx.send(7).unwrap());
                done_tx.send(rx.recv().unwrap()).unwrap();
            });
            started_rx.recv().unwrap();
            common::no_deadlock(&what, move || drop(pool));
            assert_eq!(done_rx.recv().unwrap(), 7, "{what}");
        }
    }
}

/// An exit handler that spawns a job and blocks on it outside ember (a channel): another
/// worker runs it, since no worker leaves while a handler runs. Not under Biased, where a
/// push onto the worker's own deque wakes nobody (documented on `exit_handler`). Guards the
/// shutdown drain's second round: without it the other workers had left, and this hung.
#[test]
fn an_exit_handler_may_spawn_and_wait() {
    for (name, policy) in common::unbiased_policies() {
        // With deferred wake-ups (the alarm watched first) the spawn owes its wake-up and the
        // alarm makes it while the workers exit.
        for (threads, defer) in [(2, false), (3, false), (2, true), (3, true)] {
            let ran = Arc::new(AtomicUsize::new(0));
            let counter = Arc::clone(&ran);
            let pool = Pool::builder()
                .threads(threads)
                .wake(policy)
                .tuning(ember::Tuning::new().defer_wakeups(defer))
                .exit_handler(move |index| {
                    if index == 0 {
                        // Late: the other workers have long found no work.
                        std::thread::sleep(std::time::Duration::from_millis(20));
                        let (tx, rx) = mpsc::channel();
                        let counter = Arc::clone(&counter);
                        ember::spawn(move || {
                            counter.fetch_add(1, Ordering::SeqCst);
                            tx.send(()).unwrap();
                        });
                        rx.recv().unwrap();
                    }
                })
                .build()
                .unwrap();
            watch_the_alarm(&pool, policy, defer, name);
            common::no_deadlock(name, move || drop(pool));
            assert_eq!(
                ran.load(Ordering::SeqCst),
                1,
                "{name}, {threads} workers, deferring: {defer}"
            );
        }
    }
}

/// No job of the running pool runs on a worker after its exit handler began: a job still
/// running at the drop broadcasts after the other worker has found no work. Failed before
/// the exit handler waited for the pool to drain: the broadcast ran on a worker whose
/// handler had already run.
#[test]
fn no_job_runs_on_a_worker_after_its_exit_handler() {
    for (name, policy) in common::policies() {
        let exited = Arc::new(std::sync::Mutex::new(Vec::new()));
        let late = Arc::new(AtomicUsize::new(0));
        let on_exit = Arc::clone(&exited);
        let pool = Pool::builder()
            .threads(2)
            .wake(policy)
            .exit_handler(move |index| on_exit.lock().unwrap().push(index))
            .build()
            .unwrap();
        let (started_tx, started_rx) = mpsc::channel();
        let (exited_seen, late_count) = (Arc::clone(&exited), Arc::clone(&late));
        pool.spawn(move || {
            started_tx.send(()).unwrap();
            // Long enough for the other worker to find no work after the drop.
            std::thread::sleep(std::time::Duration::from_millis(100));
            ember::broadcast(|context| {
                if exited_seen.lock().unwrap().contains(&context.index()) {
                    late_count.fetch_add(1, Ordering::SeqCst);
                }
            });
        });
        started_rx.recv().unwrap();
        common::no_deadlock(name, move || drop(pool));
        assert_eq!(late.load(Ordering::SeqCst), 0, "{name}");
        assert_eq!(exited.lock().unwrap().len(), 2, "{name}");
    }
}

/// Exit handlers may need each other: each one broadcasts (a job on every worker, the
/// others' included) and waits for it. Every handler's broadcast runs on both workers.
#[test]
fn exit_handlers_may_broadcast() {
    for (name, policy) in common::policies() {
        let ran = Arc::new(AtomicUsize::new(0));
        let counter = Arc::clone(&ran);
        let pool = Pool::builder()
            .threads(2)
            .wake(policy)
            .exit_handler(move |_| {
                let counter = Arc::clone(&counter);
                ember::broadcast(move |_| counter.fetch_add(1, Ordering::SeqCst));
            })
            .build()
            .unwrap();
        common::no_deadlock(name, move || drop(pool));
        assert_eq!(ran.load(Ordering::SeqCst), 4, "{name}");
    }
}

/// Where `pool` defers (Searching, `defer`), waits until its alarm's thread watches, so
/// that the scenario that follows can owe (`common::watch_the_alarm`).
fn watch_the_alarm(pool: &Pool, policy: WakePolicy, defer: bool, what: &str) {
    if defer && matches!(policy, WakePolicy::Searching) {
        common::watch_the_alarm(pool, what);
    }
}
