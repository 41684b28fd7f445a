//! The withheld wake-ups' deadline (README, "Budget", step 4): one thread per process,
//! started at the first withheld wake-up, asleep while none is withheld.

use std::sync::{Arc, Condvar, Mutex, OnceLock};
use std::time::Duration;

#[derive(Default)]
pub(super) struct Timer {
    /// The earliest deadline armed and not yet served (0: none).
    due: Mutex<u64>,
    cv: Condvar,
    started: OnceLock<()>,
}

/// Makes `budget`'s withheld wake-ups due at `due_ns`, starting its thread if need be.
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
        let budget = Arc::clone(budget);
        let spawned = std::thread::Builder::new()
            .name("ember-budget-timer".into())
            .spawn(move || run(&budget));
        // Without the thread a withheld wake-up is still made by the next worker
        // that parks; the process's pools then keep waking at once (`admits`
        // refuses nothing once `timer_failed` is seen).
        if spawned.is_err() {
            super::TIMER_FAILED.store(true, std::sync::atomic::Ordering::Relaxed);
        }
    });
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
