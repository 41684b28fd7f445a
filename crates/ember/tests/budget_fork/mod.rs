//! What the awake-core budget's tests have in common (`wake/README.md`, "Budget"): a pool
//! that shares the budget and, for a process forked while its pools share it, the parent's
//! spent budget, the child's work, and bounded waits on both sides.

// Each test file is its own crate and uses only some of these.
#![allow(dead_code)]

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{mpsc, Arc, Barrier};
use std::time::{Duration, Instant};

use ember::{Pool, Tuning};

/// Guards against a hang only: every wait below ends long before, unless something is lost.
pub const HANG: Duration = Duration::from_secs(60);

/// A child's own bound, in seconds, below its parent's [`HANG`]: past it the child is
/// ended by `SIGALRM`.
pub const CHILD_ALARM_S: u32 = 30;

/// A pool that shares the process's awake-core budget (opt-in).
pub fn pool(threads: usize, name: &str) -> Pool {
    Pool::builder()
        .threads(threads)
        .name(name)
        .tuning(Tuning::new().awake_budget(true))
        .build()
        .expect("pool")
}

/// Waits for `done`, at most `bound`; whether it came.
pub fn wait_for(bound: Duration, mut done: impl FnMut() -> bool) -> bool {
    let until = Instant::now() + bound;
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

/// Two budgeted pools with every worker but one blocked in a job, so the budget is spent,
/// and the budget's timer thread running. Dropping it releases the jobs.
pub struct SpentParent {
    pools: [Pool; 2],
    release: Option<mpsc::Sender<()>>,
}

impl SpentParent {
    pub fn new() -> Self {
        let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
        let blocked = cores.max(2);
        // One worker more than the jobs that block: a sleeper for the wake-ups to withhold.
        let pools = [pool(blocked + 1, "parent-a"), pool(blocked + 1, "parent-b")];
        let started = Arc::new(AtomicUsize::new(0));
        let (release, release_rx) = mpsc::channel::<()>();
        let release_rx = Arc::new(std::sync::Mutex::new(release_rx));
        for p in &pools {
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
            wait_for(HANG, || started.load(Ordering::SeqCst) == 2 * blocked),
            "the parent's jobs all run"
        );
        // With both pools' blocked workers over the cores, a wake-up is withheld, which
        // starts the timer thread.
        assert!(
            wait_for(HANG, || {
                pools[0].spawn(|| {});
                timer_thread_runs()
            }),
            "the budget's timer thread starts"
        );
        SpentParent {
            pools,
            release: Some(release),
        }
    }
}

impl Drop for SpentParent {
    fn drop(&mut self) {
        drop(self.release.take());
        for p in &self.pools {
            p.wait_idle();
        }
    }
}

/// To be called first in a child of fork: it dies with its parent, which would otherwise
/// leave it orphaned and perhaps hung, and ends itself after `alarm_s` seconds.
///
/// `parent`: the parent's pid, to check that it did not die before. `None` for the first
/// process of a pid namespace, which cannot see its parent and ignores its own alarm (as
/// it ignores every signal it has no handler for, but those its parent's namespace sends
/// with the force of `SIGKILL`): its bound is its parent's [`reap`], and the parent's
/// death still kills it.
pub fn bound_child(parent: Option<libc::pid_t>, alarm_s: u32) {
    // SAFETY: prctl(2) with PR_SET_PDEATHSIG and a valid signal number reads no memory of
    // ours; it only sets a flag of this process.
    let rc = unsafe { libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) };
    // SAFETY: getppid(2) has no preconditions. A parent that died before the prctl above
    // left this process to another: end at once.
    if rc != 0 || parent.is_some_and(|p| unsafe { libc::getppid() } != p) {
        // SAFETY: ends this child of fork at once, as it must.
        unsafe { libc::_exit(120) };
    }
    if parent.is_some() {
        // SAFETY: signal(2) restoring the default action and alarm(2) read no memory of
        // ours. The default action, which a test runner started with SIGALRM ignored would
        // otherwise pass on, ends the process.
        unsafe {
            libc::signal(libc::SIGALRM, libc::SIG_DFL);
            libc::alarm(alarm_s);
        }
    }
}

/// The child's work, with none of the parent's threads: its exit status says how far it
/// got (0: all of it).
///
/// First a pool of two whose two jobs must run at once: alone in the process, this pool
/// never asks the budget. Then a pool of blocked jobs beside two saturated pools, which
/// needs its withheld wake-ups made at the bound by the child's own timer thread: with
/// the parent's budget, whose timer thread the child does not have and which counts the
/// parent's blocked workers, it would wait for good (up to the alarm).
pub fn child() -> i32 {
    let Ok(pool) = Pool::builder()
        .threads(2)
        .name("child")
        .tuning(Tuning::new().awake_budget(true))
        .build()
    else {
        return 2;
    };
    // Both workers asleep, so that each job needs a wake-up.
    if !wait_for(HANG, || pool.stats().per_worker.iter().all(|w| w.parks > 0)) {
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
    drop(pool);
    blocked_jobs_beside_saturated_pools()
}

/// The second phase of [`child`], as `blocked_jobs_run_threads_at_once_beside_two_saturated_
/// pools` in `awake_budget.rs`.
fn blocked_jobs_beside_saturated_pools() -> i32 {
    fn spin(pool: Pool, stop: Arc<AtomicBool>) {
        let until = Instant::now() + Duration::from_micros(200);
        while Instant::now() < until {
            std::hint::spin_loop();
        }
        if !stop.load(Ordering::Relaxed) {
            let p = pool.clone();
            pool.spawn(move || spin(p, stop));
        }
    }
    let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
    let threads = cores.max(2);
    let stop = Arc::new(AtomicBool::new(false));
    let busy = [pool(cores, "busy-a"), pool(cores, "busy-b")];
    for p in &busy {
        for _ in 0..p.current_num_threads() * 2 {
            let (q, s) = (p.clone(), stop.clone());
            p.spawn(move || spin(q, s));
        }
    }
    let sleepy = pool(threads, "sleepy");
    for _ in 0..3 {
        let barrier = Arc::new(Barrier::new(threads + 1));
        for _ in 0..threads {
            let b = barrier.clone();
            // Opens only once every job of this round runs at once.
            sleepy.spawn(move || {
                b.wait();
            });
        }
        barrier.wait();
        sleepy.wait_idle();
    }
    stop.store(true, Ordering::Relaxed);
    for p in &busy {
        p.wait_idle();
    }
    0
}

/// Waits for child `pid` at most `bound`, and kills it if it did not end; its wait status,
/// or `None` if it was killed.
pub fn reap(pid: libc::pid_t, bound: Duration) -> Option<i32> {
    let mut status = 0;
    let reaped = wait_for(bound, || {
        // SAFETY: waitpid(2) on our own child, not reaped yet; `status` is writable.
        let rc = unsafe { libc::waitpid(pid, &mut status, libc::WNOHANG) };
        assert!(rc >= 0, "waitpid: {}", std::io::Error::last_os_error());
        rc == pid
    });
    if reaped {
        return Some(status);
    }
    // SAFETY: kill(2) and waitpid(2) on our own child, not reaped yet.
    unsafe {
        libc::kill(pid, libc::SIGKILL);
        libc::waitpid(pid, &mut status, 0);
    }
    None
}

/// A wait status as an exit code: the code, or 128 and the signal, as a shell says it.
pub fn exit_code(status: i32) -> i32 {
    if libc::WIFEXITED(status) {
        libc::WEXITSTATUS(status)
    } else if libc::WIFSIGNALED(status) {
        128 + libc::WTERMSIG(status)
    } else {
        255
    }
}
