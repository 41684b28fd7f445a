//! Waiting for work another thread finishes, without taking a worker away from its pool.
//!
//! # The rule
//!
//! A thread that is a worker of pool A and waits for anything — a job of pool B (`join`,
//! `scope`, `install`, `parallel_for` on B), a [`Task`](crate::Task), an idle pool, a flow, the
//! exit of a pool it drops — keeps running A's jobs while it waits, and sleeps on A's own
//! parker only when A has none; whoever finishes what it waits for wakes it there. A thread
//! that is no pool's worker blocks. So pools may call each other in any pattern: A's jobs
//! never wait for a worker of A that is itself blocked waiting for B (rayon calls the same rule
//! `in_worker_cross`).
//!
//! The waiter says who it is with a [`Sleeper`]; the finisher makes the awaited condition true
//! first and then calls [`Sleeper::wake`]. The parkers keep a token, so a wake-up that lands
//! between the waiter's last look at the condition and its park is not lost.
//!
//! # The cost: nested helping uses the stack
//!
//! A worker that helps while it waits runs the other jobs on top of its own stack frame. A
//! chain of calls A → B → A → … nests one such frame per hop on each worker involved, so its
//! depth is bounded by the workers' stack size ([`PoolBuilder::stack_size`], 2 MiB by default
//! in std: about 1 KiB a hop in release builds and 2 KiB in debug ones, so chains of 1,000
//! hops run in debug and 3,000 in release; the tests run 64).
//!
//! # Waits that cannot end
//!
//! Some waits are impossible and are reported with a panic instead of hanging: waiting for a
//! pool to be idle (or for a flow on it) from one of its own jobs, directly or through other
//! pools. "Through other pools" is tracked by a thread-local list of the pools that have a job
//! blocked until the current thread's work is done ([`blocked_pools_contain`]); it follows the
//! work that `install`/`join`/`scope`/`parallel_for` move to another pool and run on the
//! thread that takes it, and a scope's jobs. It does not follow a `join` half stolen by a
//! thief of the other pool, a `parallel_for` chunk run by a helper job, or a task joined with
//! `Task::join`: a wait reached that way is a deadlock, not a panic (documented on the waits
//! it concerns).
//!
//! [`PoolBuilder::stack_size`]: crate::PoolBuilder::stack_size

use std::cell::RefCell;
use std::sync::Arc;
use std::time::Instant;

use crate::sync::atomic::{fence, AtomicBool, AtomicUsize, Ordering};
use crate::sync::thread::{self, Thread};
use crate::sync::{lock, Mutex};

use crate::pool::workers::registry::Registry;
use crate::pool::workers::worker::WorkerThread;

/// A waiting thread, and how to wake it.
#[derive(Clone)]
pub(crate) enum Sleeper {
    /// Worker `index` of `registry`: it runs its pool's jobs while waiting and sleeps on its
    /// own parker. The `Arc` keeps the registry alive for the waker, who may belong to another
    /// pool.
    Worker {
        registry: Arc<Registry>,
        index: usize,
    },
    /// A thread that is no pool's worker: it parks with [`std::thread::park`] (loom's, in the
    /// models).
    Thread(Thread),
}

impl Sleeper {
    /// The calling thread.
    pub(crate) fn current() -> Sleeper {
        WorkerThread::with_any_current(|worker| match worker {
            Some(worker) => Sleeper::Worker {
                registry: Arc::clone(&worker.registry),
                index: worker.index,
            },
            None => Sleeper::Thread(thread::current()),
        })
    }

    /// Wakes the sleeper, which then looks at what it waits for. Call it after making that
    /// condition true.
    pub(crate) fn wake(&self) {
        match self {
            Sleeper::Worker { registry, index } => registry.sleep.wake_worker(*index),
            Sleeper::Thread(thread) => thread.unpark(),
        }
    }
}

/// Blocks the calling thread until `done()` holds or `deadline` passes, and returns whether
/// `done()` held. A worker runs its own pool's jobs meanwhile.
///
/// Whoever makes `done()` true must then wake [`Sleeper::current()`] of this thread (taken
/// before the call).
pub(crate) fn block_until(done: &dyn Fn() -> bool, deadline: Option<Instant>) -> bool {
    WorkerThread::with_any_current(|worker| match worker {
        Some(worker) => worker.wait_for(done, deadline),
        None => loop {
            if done() {
                return true;
            }
            // The park token covers a wake-up between the look above and the park; spurious
            // returns loop.
            match deadline {
                None => thread::park(),
                Some(deadline) => {
                    let now = Instant::now();
                    if now >= deadline {
                        return done();
                    }
                    park_timeout(deadline - now);
                }
            }
        },
    })
}

#[cfg(not(loom))]
fn park_timeout(timeout: std::time::Duration) {
    thread::park_timeout(timeout);
}

/// The models never wait with a deadline; loom has no timed park.
#[cfg(loom)]
fn park_timeout(_timeout: std::time::Duration) {
    thread::park();
}

/// Sleepers waiting for one condition, woken all at once when it may have come true (an idle
/// pool, the exit of a pool's workers, a flow's last task).
///
/// A waiter registers, then (after a `SeqCst` fence, in [`wait`](Self::wait)) checks the
/// condition; a notifier makes the condition true, then (after its own fence) reads whether
/// anybody waits. One of the two sees the other, as in the wake protocol (`wake/README.md`,
/// "no lost wake-up").
///
/// A notifier checks the condition again *under the list's lock* before it wakes anybody
/// ([`notify_if`](Self::notify_if)). Without that, a notifier that saw the condition hold
/// could wake a waiter that registered *after* the condition stopped holding — a `wait_idle`
/// caller that saw the pool idle itself, returned, spawned more and waits again — and that
/// waiter would return with its tasks outstanding. Under the lock, the notifier sees every
/// change a waiter made before it registered.
pub(crate) struct WaitList {
    waiters: Mutex<Vec<Waiting>>,
    len: AtomicUsize,
}

/// One registered waiter: its flag, set by a notifier before the wake-up, and how to wake it.
struct Waiting {
    notified: Arc<AtomicBool>,
    sleeper: Sleeper,
}

impl WaitList {
    pub(crate) fn new() -> Self {
        WaitList {
            waiters: Mutex::new(Vec::new()),
            len: AtomicUsize::new(0),
        }
    }

    /// Whether anybody waits: a hint for notifiers, which call it after a `SeqCst` fence.
    pub(crate) fn is_empty(&self) -> bool {
        self.len.load(Ordering::SeqCst) == 0
    }

    /// Waits until `condition()` is seen to hold — by this waiter, or by a notifier after it
    /// registered — or `deadline` passes; returns whether it was seen. Notifiers call
    /// [`notify_changed`](Self::notify_changed) with the same condition.
    pub(crate) fn wait(&self, condition: &dyn Fn() -> bool, deadline: Option<Instant>) -> bool {
        let notified = self.register();
        // StoreLoad: the registration is visible before the condition is read, pairing with
        // the fence a notifier makes between the change and its look at the list.
        fence(Ordering::SeqCst);
        if condition() {
            self.unregister(&notified);
            return true;
        }
        if block_until(&|| notified.load(Ordering::Acquire), deadline) {
            return true;
        }
        self.unregister(&notified);
        notified.load(Ordering::Acquire) || condition()
    }

    fn register(&self) -> Arc<AtomicBool> {
        let notified = Arc::new(AtomicBool::new(false));
        let mut waiters = lock(&self.waiters);
        waiters.push(Waiting {
            notified: Arc::clone(&notified),
            sleeper: Sleeper::current(),
        });
        self.len.store(waiters.len(), Ordering::SeqCst);
        notified
    }

    fn unregister(&self, notified: &Arc<AtomicBool>) {
        let mut waiters = lock(&self.waiters);
        waiters.retain(|w| !Arc::ptr_eq(&w.notified, notified));
        self.len.store(waiters.len(), Ordering::SeqCst);
    }

    /// The notifier's side, called after a change that may have made `condition` true: a
    /// `SeqCst` fence (the change before the look at the list, pairing with the one in
    /// [`wait`](Self::wait)); then, if anybody waits and the condition holds, the wake-up of
    /// [`notify_if`](Self::notify_if). Costs a fence and a load when nobody waits.
    pub(crate) fn notify_changed(&self, condition: impl Fn() -> bool) {
        fence(Ordering::SeqCst);
        if !self.is_empty() && condition() {
            self.notify_if(condition);
        }
    }

    /// Wakes every registered waiter if `condition()` holds, checked under the list's lock,
    /// so that it holds after every registration it wakes (type doc). The caller made the
    /// change, then a `SeqCst` fence, and [`is_empty`](Self::is_empty) said somebody waits.
    pub(crate) fn notify_if(&self, condition: impl FnOnce() -> bool) {
        let woken = {
            let mut waiters = lock(&self.waiters);
            if waiters.is_empty() || !condition() {
                return;
            }
            self.len.store(0, Ordering::SeqCst);
            std::mem::take(&mut *waiters)
        };
        for waiting in woken {
            waiting.notified.store(true, Ordering::Release);
            waiting.sleeper.wake();
        }
    }
}

thread_local! {
    /// Ids of the pools that have a job blocked until this thread's current work is done (see
    /// the module doc). Empty on almost every thread almost always.
    static BLOCKED: RefCell<Vec<usize>> = const { RefCell::new(Vec::new()) };
}

/// Whether pool `id` has a job blocked until this thread's current work is done.
pub(crate) fn blocked_pools_contain(id: usize) -> bool {
    BLOCKED.with(|blocked| blocked.borrow().contains(&id))
}

/// The pools that would be blocked by work handed on from this thread: those blocked on it
/// already, plus `own`, the pool of the worker handing it on (if it is one). Each pool once.
pub(crate) fn blocked_pools_with(own: Option<usize>) -> Vec<usize> {
    BLOCKED.with(|blocked| {
        let mut pools = blocked.borrow().clone();
        if let Some(own) = own.filter(|own| !pools.contains(own)) {
            pools.push(own);
        }
        pools
    })
}

/// Runs `f` with `pools` added to this thread's blocked pools (removed again afterwards, also
/// on unwinding). A pool already listed is not listed twice: a chain of calls between two
/// pools keeps the list at two entries however deep it goes.
pub(crate) fn with_blocked_pools<R>(pools: &[usize], f: impl FnOnce() -> R) -> R {
    if pools.is_empty() {
        return f();
    }
    struct Restore(usize);
    impl Drop for Restore {
        fn drop(&mut self) {
            BLOCKED.with(|blocked| blocked.borrow_mut().truncate(self.0));
        }
    }
    let _restore = Restore(BLOCKED.with(|blocked| {
        let mut blocked = blocked.borrow_mut();
        let len = blocked.len();
        for &pool in pools {
            if !blocked.contains(&pool) {
                blocked.push(pool);
            }
        }
        len
    }));
    f()
}
