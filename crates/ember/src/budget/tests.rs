//! The process budget's accounting, its withheld wake-ups and its timer thread.

use super::*;
use std::sync::atomic::AtomicUsize as StdUsize;

struct Fake {
    awake: StdUsize,
    woken: StdUsize,
}

impl Member for Fake {
    fn awake(&self) -> usize {
        self.awake.load(Ordering::SeqCst)
    }
    fn wake_withheld(&self) {
        self.woken.fetch_add(1, Ordering::SeqCst);
    }
}

fn fake(awake: usize) -> std::sync::Arc<Fake> {
    std::sync::Arc::new(Fake {
        awake: StdUsize::new(awake),
        woken: StdUsize::new(0),
    })
}

fn weak(f: &std::sync::Arc<Fake>) -> Weak<dyn Member> {
    let w: Weak<Fake> = std::sync::Arc::downgrade(f);
    w
}

#[test]
fn the_rule() {
    // A pool with nobody awake always gets a worker.
    assert!(rule(0, 100, 5, 2));
    // Alone, a pool is not limited.
    assert!(rule(3, 3, 1, 2));
    // Shared: up to the cores.
    assert!(rule(1, 1, 2, 2) || rule(1, 2, 2, 2));
    assert!(rule(1, 1, 2, 2));
    assert!(!rule(1, 2, 2, 2));
    assert!(!rule(2, 5, 3, 4));
}

#[test]
fn pools_are_counted_in_and_out() {
    let budget = Arc::new(Budget::new(2));
    let (a, b, c) = (fake(1), fake(2), fake(0));
    let ma = budget.join(weak(&a), false);
    assert!(!budget.shared(false));
    assert!(budget.shared(true));
    let mb = budget.join(weak(&b), false);
    let mc = budget.join(weak(&c), false);
    assert_eq!(budget.pools(), 3);
    assert!(budget.shared(false));
    assert_eq!(budget.awake(), (3, 2));
    assert!(!budget.admits(1, false));
    assert!(budget.admits(0, false));
    assert!(budget.over(false));
    drop(mb);
    assert_eq!(budget.awake(), (1, 1));
    assert!(budget.admits(1, false));
    assert!(!budget.over(false));
    drop((ma, mc));
    assert_eq!(budget.pools(), 0);
    assert_eq!(budget.awake(), (0, 0));
}

#[test]
fn a_withheld_wake_up_goes_to_the_next_core_given_back_elsewhere() {
    let budget = Arc::new(Budget::new(2));
    let (a, b) = (fake(1), fake(1));
    let ma = budget.join(weak(&a), false);
    let mb = budget.join(weak(&b), false);
    assert!(budget.withhold(ma.id(), weak(&a), crate::sync::clock::now_ns()));
    assert!(budget.withhold(ma.id(), weak(&a), crate::sync::clock::now_ns()));
    assert_eq!(budget.withheld(), 1, "one per pool");
    // A's own worker parking gives nothing to A: it had a worker awake to spare.
    budget.core_released(ma.id());
    assert_eq!(a.woken.load(Ordering::SeqCst), 0);
    budget.core_released(mb.id());
    assert_eq!(a.woken.load(Ordering::SeqCst), 1);
    assert_eq!(budget.withheld(), 0);
    drop((ma, mb));
}

/// Where the timer thread cannot be started, a wake-up the budget would withhold is made
/// at once: nothing else would make it while no worker of another pool parks.
#[cfg(not(loom))]
#[test]
fn without_its_timer_thread_the_budget_withholds_nothing() {
    let budget = Arc::new(Budget::new(2));
    budget.timer.refuse_start.store(true, Ordering::Relaxed);
    let (a, b) = (fake(1), fake(1));
    let ma = budget.join(weak(&a), false);
    let mb = budget.join(weak(&b), false);
    assert!(!budget.admits(1, false), "the rule alone would withhold it");
    let kept = budget.withhold(ma.id(), weak(&a), crate::sync::clock::now_ns());
    assert!(!kept, "the caller makes it");
    // B's workers never park: only the caller could still make A's wake-up.
    assert_eq!(
        budget.withheld(),
        0,
        "a withheld wake-up with no timer to make it"
    );
    assert!(budget.admits(1, false), "the budget then withholds nothing");
    drop((ma, mb));
}

#[test]
fn a_pool_that_leaves_takes_its_withheld_wake_up_with_it() {
    let budget = Arc::new(Budget::new(2));
    let (a, b) = (fake(1), fake(1));
    let ma = budget.join(weak(&a), false);
    let mb = budget.join(weak(&b), false);
    assert!(budget.withhold(ma.id(), weak(&a), 0));
    drop(ma);
    assert_eq!(budget.withheld(), 0);
    budget.core_released(mb.id());
    assert_eq!(a.woken.load(Ordering::SeqCst), 0);
}

/// Run only as the child of `a_refused_segment_is_said_once_when_the_pool_is_built`: builds
/// two pools on the machine-wide budget, whose segment the parent made unusable, marks on
/// stderr where the builds end, then lets their workers start and runs work in both.
#[cfg(all(target_os = "linux", not(loom)))]
#[test]
#[ignore = "the child of a_refused_segment_is_said_once_when_the_pool_is_built"]
fn refused_segment_child() {
    if std::env::var(machine::TEST_NAME_VAR).is_err() {
        return;
    }
    // The workers start only once the builds have ended, so that none of them makes a
    // wake-up decision before.
    let gate = std::sync::Arc::new((std::sync::Mutex::new(false), std::sync::Condvar::new()));
    let pools: Vec<crate::Pool> = (0..2)
        .map(|_| {
            let gate = gate.clone();
            crate::Pool::builder()
                .threads(2)
                .tuning(crate::Tuning::new().machine_budget(true))
                .start_handler(move |_| {
                    let (open, cv) = &*gate;
                    let mut open = open.lock().unwrap();
                    while !*open {
                        open = cv.wait(open).unwrap();
                    }
                })
                .build()
                .expect("pool")
        })
        .collect();
    eprintln!("built");
    *gate.0.lock().unwrap() = true;
    gate.1.notify_all();
    for pool in &pools {
        for _ in 0..100 {
            pool.spawn(|| {});
        }
        pool.install(|| crate::join(|| (), || ()));
        pool.wait_idle();
    }
    eprintln!("ran");
}

/// Runs the ignored test `child` of this binary in a process of its own, with the machine
/// segment named after `what` and refused (readable by others, so not private; were
/// /dev/shm missing, it would be refused all the same); returns the child's stderr once it
/// succeeded.
#[cfg(all(target_os = "linux", not(loom)))]
fn run_with_a_refused_segment(child: &str, what: &str) -> String {
    use std::os::unix::fs::PermissionsExt;
    let name = format!("/ember-budget-test-{what}-{}", std::process::id());
    let file = format!("/dev/shm{name}");
    if std::fs::write(&file, [0u8; 64]).is_ok() {
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o644)).unwrap();
    }
    let output = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            &format!("budget::tests::{child}"),
            "--ignored",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(machine::TEST_NAME_VAR, &name)
        .env_remove("EMBER_MACHINE_BUDGET")
        .output()
        .unwrap();
    let _ = std::fs::remove_file(&file);
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    assert!(output.status.success(), "the child failed: {stderr}");
    stderr
}

/// A segment the process cannot use is said once, on stderr, when the first pool that asks
/// for it is built: not in a wake-up decision later, nor once per pool or per decision.
#[cfg(all(target_os = "linux", not(loom)))]
#[test]
fn a_refused_segment_is_said_once_when_the_pool_is_built() {
    let stderr = run_with_a_refused_segment("refused_segment_child", "refused");
    let lines: Vec<&str> = stderr.lines().collect();
    let said: Vec<usize> = (0..lines.len())
        .filter(|&i| lines[i].contains("machine-wide"))
        .collect();
    let built = lines.iter().position(|l| *l == "built").expect("built");
    assert!(lines.contains(&"ran"), "{stderr}");
    assert_eq!(said.len(), 1, "said once: {stderr}");
    assert!(said[0] < built, "said when the pool is built: {stderr}");
}

/// Two withholders of one pool race on a timer whose start fails. One may be told "kept"
/// because the other's listing of the pool is there; that listing must then be made
/// through `wake_withheld`, not taken back by the other, whose own wake-up is made under
/// its caller's condition only. Many rounds, since the merge needs the two to interleave.
#[cfg(not(loom))]
#[test]
fn a_failed_timer_makes_a_merged_wake_up() {
    for round in 0..5000 {
        let budget = Arc::new(Budget::new(2));
        budget.timer.refuse_start.store(true, Ordering::Relaxed);
        let (a, b) = (fake(1), fake(1));
        let ma = budget.join(weak(&a), false);
        let mb = budget.join(weak(&b), false);
        let barrier = Arc::new(std::sync::Barrier::new(2));
        let id = ma.id();
        let t = {
            let (budget, barrier, a) = (budget.clone(), barrier.clone(), a.clone());
            std::thread::spawn(move || {
                barrier.wait();
                budget.withhold(id, weak(&a), 0)
            })
        };
        barrier.wait();
        let mine = budget.withhold(id, weak(&a), 0);
        let theirs = t.join().unwrap();
        assert_eq!(budget.withheld(), 0, "round {round}: left listed");
        assert!(
            !(mine || theirs) || a.woken.load(Ordering::SeqCst) > 0,
            "round {round}: a wake-up told \"kept\" was never made"
        );
        drop((ma, mb));
    }
}

/// A pool whose last reference the timer thread drops, with a `Drop` that panics.
struct PanicsOnDrop {
    /// Its only strong reference, given up when its wake-up is made.
    me: std::sync::Mutex<Option<std::sync::Arc<PanicsOnDrop>>>,
}

impl Member for PanicsOnDrop {
    fn awake(&self) -> usize {
        1
    }
    fn wake_withheld(&self) {
        drop(self.me.lock().unwrap().take());
    }
}

/// Set when a [`PanicsOnDrop`] is dropped, just before it panics.
static PANICKED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

impl Drop for PanicsOnDrop {
    fn drop(&mut self) {
        PANICKED.store(true, Ordering::SeqCst);
        panic!("a pool's Drop panics on the budget's timer thread (expected by the test)");
    }
}

/// A panic on the timer thread (a pool's `Drop` run there) must not leave later withheld
/// wake-ups with nobody to make them: the budget then withholds nothing, and the wake-ups
/// listed beside the panicking pool's are made too.
#[cfg(not(loom))]
#[test]
fn a_panic_on_the_timer_thread_leaves_no_wake_up_unmade() {
    let budget = Arc::new(Budget::new(2));
    let b = fake(1);
    let p = std::sync::Arc::new(PanicsOnDrop {
        me: std::sync::Mutex::new(None),
    });
    *p.me.lock().unwrap() = Some(p.clone());
    let wp: Weak<dyn Member> = std::sync::Arc::downgrade(&p) as Weak<PanicsOnDrop>;
    drop(p);
    let mp = budget.join(wp.clone(), false);
    let mb = budget.join(weak(&b), false);
    // The panicking pool's first, so that it is made first.
    assert!(budget.withhold(mp.id(), wp, 0));
    assert!(budget.withhold(mb.id(), weak(&b), 0));
    let hang = std::time::Instant::now() + std::time::Duration::from_secs(30);
    let woken = |n| {
        while b.woken.load(Ordering::SeqCst) < n {
            if std::time::Instant::now() > hang {
                return false;
            }
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        true
    };
    assert!(
        woken(1),
        "the wake-up listed beside the panicking pool's is made"
    );
    // The timer thread has made its wake-ups and dropped the pool, which panicked.
    while !PANICKED.load(Ordering::SeqCst) {
        assert!(
            std::time::Instant::now() < hang,
            "the panicking pool is dropped"
        );
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
    let kept = budget.withhold(mb.id(), weak(&b), crate::sync::clock::now_ns());
    assert!(
        !kept || woken(2),
        "a wake-up withheld after the panic is made"
    );
    drop((mp, mb));
}

/// A child of fork says a refused segment again, for itself: the fork handler clears the
/// flag that says it once per process.
#[cfg(all(target_os = "linux", not(loom)))]
#[test]
fn a_forked_child_says_a_refused_segment_again() {
    let stderr = run_with_a_refused_segment("refused_segment_fork_child", "refused-fork");
    let said = stderr
        .lines()
        .filter(|l| l.contains("machine-wide"))
        .count();
    assert_eq!(said, 2, "said once by each process: {stderr}");
}

/// Run only as the child of `a_forked_child_says_a_refused_segment_again`: builds a pool on
/// the machine-wide budget, whose segment the parent made unusable, then forks a child
/// that builds one too.
#[cfg(all(target_os = "linux", not(loom)))]
#[test]
#[ignore = "the child of a_forked_child_says_a_refused_segment_again"]
fn refused_segment_fork_child() {
    if std::env::var(machine::TEST_NAME_VAR).is_err() {
        return;
    }
    // SAFETY: signal(2) restoring SIGALRM's default action and alarm(2) read no memory of
    // ours: this process, which its parent waits for without a bound, ends after 120 s in
    // any case.
    unsafe {
        libc::signal(libc::SIGALRM, libc::SIG_DFL);
        libc::alarm(120);
    }
    let build = || {
        crate::Pool::builder()
            .threads(1)
            .tuning(crate::Tuning::new().machine_budget(true))
            .build()
    };
    let pool = build().expect("pool");
    // SAFETY: getpid(2) has no preconditions.
    let me = unsafe { libc::getpid() };
    // SAFETY: fork(2) in a process running this one test; the child runs only ember's code
    // and the lines below, then `_exit`s without running this process's destructors or
    // exit handlers; the allocator it uses is fork-safe.
    let pid = unsafe { libc::fork() };
    assert!(pid >= 0, "fork: {}", std::io::Error::last_os_error());
    if pid == 0 {
        // SAFETY: prctl(2) with PR_SET_PDEATHSIG and a signal number, getppid(2) and
        // alarm(2) read no memory of ours: the child dies with its parent (or ends at once
        // if the parent died before), and after 30 s in any case, SIGALRM being unhandled.
        unsafe {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0 || libc::getppid() != me {
                libc::_exit(3);
            }
            libc::alarm(30);
        }
        // A panic here must not unwind into the test harness, which would exit 0.
        let code = std::panic::catch_unwind(|| i32::from(build().is_err())).unwrap_or(1);
        // SAFETY: ends the child at once, as a child of fork(2) must.
        unsafe { libc::_exit(code) };
    }
    let mut status = 0;
    // SAFETY: waitpid(2) on our own child; `status` is writable. The child's alarm bounds
    // the wait.
    let rc = unsafe { libc::waitpid(pid, &mut status, 0) };
    assert_eq!(rc, pid, "waitpid: {}", std::io::Error::last_os_error());
    assert!(
        libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
        "the forked child failed: status {status:#x}"
    );
    drop(pool);
}
