//! The thread that waits for a deferring pool's alarm (`wake/deferred.rs`), started at the
//! first spawn that would owe a wake-up rather than with the workers.
//!
//! Most pools never owe one: a pool that only joins, scopes or takes jobs from outside has
//! no spawner whose successor waits. Started with the workers, every such pool would carry
//! one more thread, and the first pool of a process would also wait, at its drop, for the
//! clock's calibration (a millisecond's sleep, `sync/clock.rs`). So the first spawn that
//! would owe a wake-up while nothing watches the alarm makes that wake-up at once, as
//! without deferral, and starts the thread; spawns owe only once it watches
//! (`Watch::run`, which sets `watched`). Until then, and for ever if the system refuses the
//! thread, nothing is deferred: every spawn wakes as without deferral, so no debt can exist
//! without a thread to pay it. A start the system refuses is not retried.
//!
//! Started from a worker, the thread inherits that worker's scheduling attributes (a nice
//! value or policy a start handler gave it, say); only the affinity `pin_workers` gives a
//! worker is undone, so that the alarm is not tied to one worker's processor.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use crate::pool::workers::registry::Registry;

/// How to start a pool's alarm thread, and its handle once started.
pub(crate) struct AlarmThread {
    /// The thread's name, `NAME-alarm` (a NUL in the pool's name left out).
    name: String,
    /// The workers' stack size, if the builder set one.
    stack_size: Option<usize>,
    /// The processors the pool was built to run on, where its workers are pinned: the
    /// thread, started on a pinned worker, would otherwise inherit that worker's one.
    cpus: Option<Vec<usize>>,
    /// Whether a worker has claimed the start (started, or failed to: never retried).
    claimed: AtomicBool,
    /// The started thread, for the pool's drop to join.
    handle: Mutex<Option<JoinHandle<()>>>,
}

impl AlarmThread {
    /// The alarm thread of a pool named `pool_name`, not started; `cpus`: see the field.
    pub(crate) fn new(
        pool_name: &str,
        stack_size: Option<usize>,
        cpus: Option<Vec<usize>>,
    ) -> Self {
        AlarmThread {
            name: format!("{}-alarm", pool_name.replace('\0', "")),
            stack_size,
            cpus,
            claimed: AtomicBool::new(false),
            handle: Mutex::new(None),
        }
    }

    /// Starts the thread unless some worker already did (or tried). Called on a worker, at
    /// a spawn that made at once the wake-up it would have owed. A thread the system refuses
    /// costs only deferral. The thread holds the pool only while it pays: it drops the pool's
    /// state (the user's handlers among it) only if the last worker exits during such a
    /// pass, rarely (180 of 27,444 pools dropped from inside a job whose exit handler kept a
    /// debt owed), and then on the workers' stack size.
    #[cold]
    pub(crate) fn start_once(&self, registry: &Arc<Registry>) {
        if self.claimed.load(Ordering::Relaxed) || self.claimed.swap(true, Ordering::Relaxed) {
            return;
        }
        let Some(watch) = registry.sleep.watch() else {
            return;
        };
        let pool = Arc::downgrade(registry);
        let cpus = self.cpus.clone();
        let mut builder = std::thread::Builder::new().name(self.name.clone());
        if let Some(bytes) = self.stack_size {
            builder = builder.stack_size(bytes);
        }
        let body = move || {
            // A pool whose workers all exited before this thread ran has nothing left to
            // defer: it skips the clock's calibration, which the pool's drop would wait for.
            if watch.is_stopped() {
                return;
            }
            if let Some(cpus) = cpus {
                crate::pool::affinity::allow_current_thread(&cpus);
            }
            crate::sync::clock::calibrate_clock();
            watch.run(|| match pool.upgrade() {
                Some(registry) => {
                    registry.sleep.alarm_fired(crate::sync::clock::now_ns());
                    true
                }
                None => false,
            })
        };
        // `spawn` panics where it cannot set the stack size; that must not unwind through
        // the spawning job's push.
        match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| builder.spawn(body))) {
            Ok(Ok(handle)) => {
                *self
                    .handle
                    .lock()
                    .unwrap_or_else(|poisoned| poisoned.into_inner()) = Some(handle);
            }
            Ok(Err(_refused)) => {}
            Err(payload) => {
                crate::pool::jobs::unwind::drop_payload(payload);
            }
        }
    }

    /// Waits for the thread to end, if it was started: called by the pool's drop once every
    /// worker has exited, after which the thread returns at its next look at the stop (the
    /// last worker's exit set the alarm to fire).
    pub(crate) fn join(&self) {
        let handle = self
            .handle
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .take();
        if let Some(handle) = handle {
            let _ = handle.join();
        }
    }
}
