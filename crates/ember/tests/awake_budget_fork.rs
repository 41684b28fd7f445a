//! A process forked while its pools share the awake-core budget (`wake/README.md`, "Budget"):
//! the child's pools share a budget of the child's own. Alone in its binary, since it forks:
//! no other test's threads may hold anything at the fork.
#![cfg(target_os = "linux")]

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{mpsc, Arc, Barrier};
use std::time::{Duration, Instant};

use ember::{Pool, Tuning};

/// Guards against a hang only: every wait below ends long before, unless something is lost.
const HANG: Duration = Duration::from_secs(60);

fn pool(threads: usize, name: &str) -> Pool {
    Pool::builder()
        .threads(threads)
        .name(name)
        .tuning(Tuning::new().awake_budget(true))
        .build()
        .expect("pool")
}

/// Waits for `done`, at most [`HANG`]; whether it came.
fn wait_for(mut done: impl FnMut() -> bool) -> bool {
    let until = Instant::now() + HANG;
    while !done() {
        if Instant::now() > until {
            return false;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    true
}

/// Whether this process runs the budget's timer thread (its name cut to the kernel's 15
/// bytes).
fn timer_thread_runs() -> bool {
    let Ok(tasks) = std::fs::read_dir("/proc/self/task") else {
        return false;
    };
    tasks.flatten().any(|task| {
        std::fs::read_to_string(task.path().join("comm"))
            .is_ok_and(|comm| comm.trim_end().starts_with("ember-budget-ti"))
    })
}

/// The child: a pool of two whose two jobs must run at once. Its exit status says how far
/// it got (0: all of it).
fn child() -> i32 {
    let Ok(pool) = Pool::builder()
        .threads(2)
        .name("child")
        .tuning(Tuning::new().awake_budget(true))
        .build()
    else {
        return 2;
    };
    // Both workers asleep, so that each job needs a wake-up.
    if !wait_for(|| pool.stats().per_worker.iter().all(|w| w.parks > 0)) {
        return 3;
    }
    let barrier = Arc::new(Barrier::new(3));
    for _ in 0..2 {
        let barrier = barrier.clone();
        pool.spawn(move || {
            barrier.wait();
        });
    }
    // Opens only once both jobs run at once.
    barrier.wait();
    pool.wait_idle();
    0
}

/// The parent's pools have every worker but one blocked in a job and the budget spent, and
/// its timer thread runs, when it forks. The child, with none of those threads, builds a
/// budgeted pool and needs both its workers awake at once: it must not count the parent's
/// workers, nor wait for a timer thread it does not have.
#[test]
fn a_forked_child_starts_with_a_budget_of_its_own() {
    let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
    let blocked = cores.max(2);
    // One worker more than the jobs that block: a sleeper for the wake-ups to withhold.
    let parents = [pool(blocked + 1, "parent-a"), pool(blocked + 1, "parent-b")];
    let started = Arc::new(AtomicUsize::new(0));
    let (release_tx, release_rx) = mpsc::channel::<()>();
    let release_rx = Arc::new(std::sync::Mutex::new(release_rx));
    for p in &parents {
        for _ in 0..blocked {
            let (started, release_rx) = (started.clone(), release_rx.clone());
            p.spawn(move || {
                started.fetch_add(1, Ordering::SeqCst);
                // Blocks until the sender is dropped.
                let _ = release_rx.lock().map(|rx| rx.recv());
            });
        }
    }
    // Blocked on the mutex or in `recv`, every job holds its worker awake.
    assert!(
        wait_for(|| started.load(Ordering::SeqCst) == 2 * blocked),
        "the parent's jobs all run"
    );
    // With both pools' blocked workers over the cores, a wake-up is withheld, which starts
    // the timer thread.
    assert!(
        wait_for(|| {
            parents[0].spawn(|| {});
            timer_thread_runs()
        }),
        "the budget's timer thread starts"
    );
    // SAFETY: fork(2) in a test binary running this one test. The child runs only its own
    // code and ember's, then `_exit`s without running the parent's destructors or exit
    // handlers; the allocator it uses is fork-safe.
    let pid = unsafe { libc::fork() };
    assert!(pid >= 0, "fork: {}", std::io::Error::last_os_error());
    if pid == 0 {
        let code = std::panic::catch_unwind(child).unwrap_or(1);
        // SAFETY: ends the child at once, as a child of fork(2) must.
        unsafe { libc::_exit(code) };
    }
    let mut status = 0;
    let reaped = wait_for(|| {
        // SAFETY: waitpid(2) on our own child, not reaped yet; `status` is writable.
        let rc = unsafe { libc::waitpid(pid, &mut status, libc::WNOHANG) };
        assert!(rc >= 0, "waitpid: {}", std::io::Error::last_os_error());
        rc == pid
    });
    if !reaped {
        // SAFETY: kill(2) and waitpid(2) on our own child, not reaped yet.
        unsafe {
            libc::kill(pid, libc::SIGKILL);
            libc::waitpid(pid, &mut status, 0);
        }
    }
    drop(release_tx);
    for p in &parents {
        p.wait_idle();
    }
    assert!(reaped, "the child hung");
    assert!(
        libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
        "the child failed: status {status:#x}"
    );
}
