//! The withheld wake-ups' deadline (README, "Budget", step 4): one thread per process,
//! started at the first withheld wake-up, asleep while none is withheld.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, OnceLock};
use std::time::Duration;

#[derive(Default)]
pub(super) struct Timer {
    /// The earliest deadline armed and not yet served (0: none).
    due: Mutex<u64>,
    cv: Condvar,
    started: OnceLock<()>,
    /// Set if the thread could not be started, or ended by a panic: the budget then
    /// withholds nothing.
    failed: AtomicBool,
    /// Makes the thread's start fail, as the system may (tests).
    #[cfg(test)]
    pub(super) refuse_start: AtomicBool,
}

impl Timer {
    /// Whether the thread could not be started, or has ended. Read after [`arm`] returns,
    /// a failed start is final: it is recorded before `arm`'s one-time start returns to any
    /// caller. A thread that ends sets it before it makes the wake-ups still listed.
    pub(super) fn failed(&self) -> bool {
        self.failed.load(Ordering::SeqCst)
    }
}

/// Makes `budget`'s withheld wake-ups due at `due_ns`, starting its thread if need be. If
/// the thread cannot be started the deadline is served by nobody: the caller sees
/// [`Timer::failed`] and makes its wake-ups itself.
pub(super) fn arm(budget: &Arc<super::Budget>, due_ns: u64) {
    let t = &budget.timer;
    {
        let mut due = crate::sync::lock(&t.due);
        if *due == 0 || due_ns < *due {
            *due = due_ns;
            t.cv.notify_one();
        }
    }
    t.started.get_or_init(|| {
        let spawned = start(budget);
        if spawned.is_err() {
            t.failed.store(true, Ordering::SeqCst);
        }
    });
}

/// Starts the thread that serves `budget`'s deadlines.
fn start(budget: &Arc<super::Budget>) -> std::io::Result<std::thread::JoinHandle<()>> {
    #[cfg(test)]
    if budget.timer.refuse_start.load(Ordering::Relaxed) {
        return Err(std::io::Error::other("refused by the test"));
    }
    let budget = Arc::clone(budget);
    std::thread::Builder::new()
        .name("ember-budget-timer".into())
        .spawn(move || {
            // The thread drops the last reference to a pool whose wake-up it makes when
            // that pool is gone meanwhile, which runs user code (a registry's `Drop`). If
            // that panics, the budget goes on as if the thread had never started: nothing
            // is withheld from then on, and every wake-up still listed is made here, each
            // before any drop (`hand_over`). A withholder that listed before `failed` is
            // set has its listing made below; one that lists after sees `failed` and makes
            // its own (`Budget::withhold`).
            let ended = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| run(&budget)));
            if ended.is_err() {
                budget.timer.failed.store(true, Ordering::SeqCst);
                let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                    budget.hand_over(None, u64::MAX, usize::MAX)
                }));
            }
        })
}

fn run(budget: &super::Budget) {
    let t = &budget.timer;
    loop {
        let mut due = crate::sync::lock(&t.due);
        while *due == 0 {
            due = t.cv.wait(due).unwrap_or_else(|p| p.into_inner());
        }
        let now = crate::sync::clock::now_ns();
        if *due > now {
            let wait = Duration::from_nanos(*due - now);
            drop(
                t.cv.wait_timeout(due, wait)
                    .unwrap_or_else(|p| p.into_inner()),
            );
            continue;
        }
        *due = 0;
        drop(due);
        // Wake-ups made from here run user code nowhere: `wake_withheld` only unparks.
        if let Some(next) = budget.hand_over(None, now, usize::MAX) {
            let mut due = crate::sync::lock(&t.due);
            if *due == 0 || next < *due {
                *due = next;
            }
        }
    }
}
