//! Panics in user code: workers survive, `join` and `scope` re-raise only after their siblings.
//!
//! * A panicking spawned task does not kill its worker: on a one-thread pool later tasks still
//!   run; `stats().panics` counts it; the `panic_handler` receives the payload unchanged.
//! * `join` re-raises a panic of either closure, from outside and from inside a worker, and
//!   only after the other closure has finished.
//! * `scope` re-raises a panic of a job, of a nested job, or of its own body, and only after
//!   every job spawned in it has finished.
//!
//! The slow siblings sleep for a few milliseconds. The sleeps are not synchronisation: they only
//! make a premature re-raise observable; the checks hold whatever the timing.

use std::any::Any;
use std::panic::{self, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::thread;
use std::time::Duration;

use ember::Pool;

mod common;
use common::{policies, pool};

/// The message of a `panic!` payload, if it has one.
fn message(payload: &(dyn Any + Send)) -> Option<&str> {
    payload
        .downcast_ref::<&str>()
        .copied()
        .or_else(|| payload.downcast_ref::<String>().map(String::as_str))
}

fn slow_sibling(done: &AtomicBool) {
    thread::sleep(Duration::from_millis(20));
    done.store(true, Ordering::SeqCst);
}

#[test]
fn panicking_task_does_not_kill_the_worker() {
    for (name, policy) in policies() {
        let (payload_tx, payload_rx) = mpsc::channel::<Box<dyn Any + Send>>();
        let payload_tx = Mutex::new(payload_tx);
        let pool = Pool::builder()
            .threads(1)
            .wake(policy)
            .panic_handler(move |payload: Box<dyn Any + Send>| {
                payload_tx.lock().unwrap().send(payload).unwrap();
            })
            .build()
            .expect("valid configuration");

        pool.spawn(|| panic!("task panic"));
        pool.spawn(|| panic::panic_any(42u32));
        let first = payload_rx.recv().unwrap();
        assert_eq!(
            message(&*first),
            Some("task panic"),
            "{name}: first payload"
        );
        let second = payload_rx.recv().unwrap();
        assert_eq!(
            second.downcast_ref::<u32>(),
            Some(&42),
            "{name}: second payload"
        );

        let ran = Arc::new(AtomicUsize::new(0));
        for _ in 0..100 {
            let ran = Arc::clone(&ran);
            pool.spawn(move || {
                ran.fetch_add(1, Ordering::Relaxed);
            });
        }
        pool.wait_idle();
        assert_eq!(
            ran.load(Ordering::Relaxed),
            100,
            "{name}: tasks after the panics"
        );
        let stats = pool.stats();
        assert_eq!(stats.panics, 2, "{name}: stats().panics");
        assert_eq!(
            stats.per_worker[0].panics, 2,
            "{name}: per_worker[0].panics"
        );
        assert!(
            payload_rx.try_recv().is_err(),
            "{name}: the handler got more panics than tasks panicked"
        );
    }
}

#[test]
fn panicking_task_without_a_handler_is_counted_and_the_worker_lives_on() {
    for (name, policy) in policies() {
        let pool = pool(policy, 1);
        for _ in 0..3 {
            pool.spawn(|| panic!("unhandled task panic"));
        }
        pool.wait_idle();
        let (tx, rx) = mpsc::channel();
        pool.spawn(move || tx.send(()).unwrap());
        rx.recv()
            .unwrap_or_else(|_| panic!("{name}: a task after the panics did not run"));
        pool.wait_idle();
        assert_eq!(pool.stats().panics, 3, "{name}: stats().panics");
    }
}

/// Runs `pool.join(left, right)` under `catch_unwind` where one side panics at once and the other
/// is slow; returns the payload and whether the slow side had finished when the panic arrived.
fn join_with_one_panic(pool: &Pool, left_panics: bool) -> (Option<String>, bool) {
    let done = AtomicBool::new(false);
    let result = panic::catch_unwind(AssertUnwindSafe(|| {
        pool.join(
            || {
                if left_panics {
                    panic!("left panicked");
                }
                slow_sibling(&done);
            },
            || {
                if !left_panics {
                    panic!("right panicked");
                }
                slow_sibling(&done);
            },
        )
    }));
    let finished = done.load(Ordering::SeqCst);
    match result {
        Ok(_) => (None, finished),
        Err(payload) => (Some(message(&*payload).unwrap_or("").to_owned()), finished),
    }
}

fn check_join_panic(pool: &Pool, left_panics: bool, label: &str) {
    let expected = if left_panics {
        "left panicked"
    } else {
        "right panicked"
    };
    let (payload, sibling_finished) = join_with_one_panic(pool, left_panics);
    assert_eq!(
        payload.as_deref(),
        Some(expected),
        "{label}: join must re-raise the panic"
    );
    assert!(
        sibling_finished,
        "{label}: join re-raised before the other closure finished"
    );
}

#[test]
fn join_reraises_either_panic_after_the_sibling_finished_from_outside() {
    for threads in [1, 2] {
        for (name, policy) in policies() {
            let pool = pool(policy, threads);
            for left_panics in [true, false] {
                let label = format!("{name}, {threads} workers, left panics: {left_panics}");
                check_join_panic(&pool, left_panics, &label);
            }
            assert_eq!(pool.join(|| 1, || 2), (1, 2), "{name}: join after panics");
        }
    }
}

#[test]
fn join_reraises_either_panic_after_the_sibling_finished_from_inside() {
    for threads in [1, 2] {
        for (name, policy) in policies() {
            let pool = pool(policy, threads);
            for left_panics in [true, false] {
                let (tx, rx) = mpsc::channel();
                let inner = pool.clone();
                pool.spawn(move || tx.send(join_with_one_panic(&inner, left_panics)).unwrap());
                let (payload, sibling_finished) = rx.recv().unwrap();
                let label = format!("{name}, {threads} workers, left panics: {left_panics}");
                let expected = if left_panics {
                    "left panicked"
                } else {
                    "right panicked"
                };
                assert_eq!(payload.as_deref(), Some(expected), "{label}: payload");
                assert!(
                    sibling_finished,
                    "{label}: join re-raised before the other closure finished"
                );
            }
            pool.wait_idle();
        }
    }
}

#[test]
fn join_reraises_when_both_closures_panic() {
    for (name, policy) in policies() {
        let pool = pool(policy, 2);
        let result = panic::catch_unwind(AssertUnwindSafe(|| {
            pool.join(|| panic!("left panicked"), || panic!("right panicked"))
        }));
        let payload = result.expect_err("join must re-raise");
        let text = message(&*payload).unwrap_or("");
        assert!(
            text == "left panicked" || text == "right panicked",
            "{name}: unexpected payload {text:?}"
        );
        assert_eq!(pool.join(|| 3, || 4), (3, 4), "{name}: join after panics");
    }
}

/// Where the panic comes from in a scope.
#[derive(Clone, Copy, Debug)]
enum ScopePanic {
    Job,
    NestedJob,
    Body,
}

/// Runs a scope with 31 slow jobs and one panic from `origin`; returns the payload and how many
/// slow jobs had finished when the panic arrived.
fn scope_with_panic(pool: &Pool, origin: ScopePanic) -> (Option<String>, usize) {
    let finished = AtomicUsize::new(0);
    let result = panic::catch_unwind(AssertUnwindSafe(|| {
        pool.scope(|s| {
            match origin {
                ScopePanic::Job => s.spawn(|_| panic!("scope panicked")),
                ScopePanic::NestedJob => s.spawn(|s2| s2.spawn(|_| panic!("scope panicked"))),
                ScopePanic::Body => {}
            }
            for _ in 0..31 {
                s.spawn(|_| {
                    thread::sleep(Duration::from_millis(1));
                    finished.fetch_add(1, Ordering::SeqCst);
                });
            }
            if let ScopePanic::Body = origin {
                panic!("scope panicked");
            }
        });
    }));
    let finished = finished.load(Ordering::SeqCst);
    match result {
        Ok(()) => (None, finished),
        Err(payload) => (Some(message(&*payload).unwrap_or("").to_owned()), finished),
    }
}

#[test]
fn scope_reraises_after_every_job_finished() {
    for threads in [1, 2] {
        for (name, policy) in policies() {
            let pool = pool(policy, threads);
            for origin in [ScopePanic::Job, ScopePanic::NestedJob, ScopePanic::Body] {
                let label = format!("{name}, {threads} workers, panic in {origin:?}");
                let (payload, finished) = scope_with_panic(&pool, origin);
                assert_eq!(
                    payload.as_deref(),
                    Some("scope panicked"),
                    "{label}: payload"
                );
                assert_eq!(
                    finished, 31,
                    "{label}: scope re-raised before every job finished"
                );
            }
            let (tx, rx) = mpsc::channel();
            let inner = pool.clone();
            pool.spawn(move || tx.send(scope_with_panic(&inner, ScopePanic::Job)).unwrap());
            let (payload, finished) = rx.recv().unwrap();
            let label = format!("{name}, {threads} workers, inside a worker");
            assert_eq!(
                payload.as_deref(),
                Some("scope panicked"),
                "{label}: payload"
            );
            assert_eq!(finished, 31, "{label}: scope re-raised too early");
            pool.wait_idle();
        }
    }
}

/// The pool of `child_worker_loop_panics`, whose workers the parent has panic in their loop.
const FAULTY_POOL: &str = "faulty-pool";

/// A panic in ember's own code on a worker, outside every job, aborts the process with a
/// message naming the worker and its pool, rather than leaving a dead worker whose jobs
/// nobody runs. The fault is injected (`EMBER_FAULT_WORKER_LOOP`) in a child process: this
/// test binary, rerun on the `#[ignore]`d child below.
#[test]
fn a_panic_in_a_worker_loop_aborts_naming_the_worker_and_the_pool() {
    let output = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "child_worker_loop_panics",
            "--ignored",
            "--nocapture",
            "--test-threads=1",
        ])
        .env("EMBER_FAULT_WORKER_LOOP", FAULTY_POOL)
        // Short panic reports: the two faulty workers' reports can interleave, and a
        // backtrace's lines between them could split the message the test looks for.
        .env("RUST_BACKTRACE", "0")
        .output()
        .expect("the test binary reruns");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        !output.status.success() && !stdout.contains("survived"),
        "the child should have aborted ({}):\n{stdout}\n{stderr}",
        output.status
    );
    #[cfg(unix)]
    {
        use std::os::unix::process::ExitStatusExt;
        assert_eq!(
            output.status.signal(),
            Some(6),
            "SIGABRT ({}):\n{stderr}",
            output.status
        );
    }
    assert!(stderr.contains("a fault injected into worker"), "{stderr}");
    assert!(
        stderr.contains("ember: worker ") && stderr.contains(&format!("of pool {FAULTY_POOL:?}")),
        "the message names the worker and the pool:\n{stderr}"
    );
}

#[test]
#[ignore = "run by the test above, in a child process"]
fn child_worker_loop_panics() {
    // One worker: its report alone on stderr, whole.
    let pool = Pool::builder()
        .name(FAULTY_POOL)
        .threads(1)
        .build()
        .unwrap();
    let (tx, rx) = mpsc::channel();
    pool.spawn(move || {
        let _ = tx.send(());
    });
    // The process aborts first. A worker lost to the panic instead leaves the job unrun: this
    // only bounds the wait.
    let ran = rx.recv_timeout(Duration::from_secs(20)).is_ok();
    println!("survived; the job ran: {ran}");
}
