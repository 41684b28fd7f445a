//! The awake-core budget shared by the pools of a process, and opt-in by the processes of a
//! machine (`wake/README.md`, "Budget").
//!
//! Each pool joins the process's [`Budget`] when it is built ([`Budget::join`]) and leaves it
//! when its last worker exits ([`Membership::leave`]), not when the last reference to its
//! state goes: a task may keep that alive long after the workers are gone. The budget counts
//! nothing itself: a pool's awake workers are those not listed in its sleeper set, which each
//! pool keeps anyway, and the budget adds them up when somebody asks. So a pool alone in its
//! process pays nothing for the budget; a wake-up decision in a process of several pools
//! reads every pool's count.
//!
//! `rule` is the decision itself; [`Budget::admits`] feeds it; [`Budget::withhold`] keeps a
//! wake-up it refused for at most the bound; [`Budget::core_released`] hands a withheld
//! wake-up to the core a parking worker gives back. `machine.rs` is the shared-memory
//! segment behind `EMBER_MACHINE_BUDGET=1`.

// Under loom only the models join a budget: pools are built without one.
#![cfg_attr(loom, allow(dead_code))]

#[cfg(all(target_os = "linux", not(loom)))]
pub(crate) mod machine;

use crate::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use crate::sync::{lock, Mutex};
use std::sync::Arc;
use std::sync::Weak;

/// The most a withheld wake-up waits: after this it is made anyway, if its job is still
/// queued (README, "Budget", step 4).
pub(crate) const WITHHELD_BOUND_NS: u64 = 1_000_000;

/// What the budget asks of a pool.
pub(crate) trait Member: Send + Sync {
    /// Workers not listed as sleepers: running, searching, or blocked in user code.
    fn awake(&self) -> usize;
    /// Makes a wake-up the budget withheld, if a job is still queued and a worker sleeps.
    fn wake_withheld(&self);
}

/// The decision: may a pool with `mine` awake workers wake one more, while the pools (of the
/// process, or of the machine) have `total` awake workers, `pools_awake` of them with at
/// least one, against `cores`?
///
/// A pool with none awake always may (step 1): otherwise its queued job could wait with
/// nobody to run it. While fewer than two pools are awake the budget has no one to share
/// with, and the pool behaves as it would alone (step 2).
#[inline]
pub(crate) fn rule(mine: usize, total: usize, pools_awake: usize, cores: usize) -> bool {
    mine == 0 || pools_awake < 2 || total < cores
}

struct Entry {
    id: usize,
    member: Weak<dyn Member>,
}

/// A withheld wake-up: whose, and when it is made anyway.
struct Withheld {
    id: usize,
    member: Weak<dyn Member>,
    due_ns: u64,
}

/// The budget of one process.
pub(crate) struct Budget {
    /// Pools that joined and have not left.
    pools: AtomicUsize,
    members: Mutex<Vec<Entry>>,
    next_id: AtomicUsize,
    /// The cores the process may use.
    cores: usize,
    /// Wake-ups withheld, oldest first; `withheld_len` mirrors its length for a lock-free
    /// look on a parking worker's path.
    withheld: Mutex<Vec<Withheld>>,
    withheld_len: AtomicUsize,
    #[cfg(not(loom))]
    timer: timer::Timer,
    #[cfg(all(target_os = "linux", not(loom)))]
    machine: std::sync::OnceLock<Option<machine::Segment>>,
    /// Step 1 of the rule, which only the loom mutant turns off
    /// (`mutant_idle_pool_refused`).
    #[cfg(loom)]
    exempt_idle: bool,
}

/// A pool's place in the budget. The pool leaves when its last worker exits
/// ([`leave`](Self::leave)), or, if it never had one, when this is dropped.
pub(crate) struct Membership {
    budget: Arc<Budget>,
    id: usize,
    machine: bool,
    left: AtomicBool,
}

impl Membership {
    /// The budget joined.
    pub(crate) fn budget(&self) -> &Arc<Budget> {
        &self.budget
    }

    /// Whether this pool counts against other processes too.
    pub(crate) fn machine(&self) -> bool {
        self.machine
    }

    /// This pool's id in the budget.
    pub(crate) fn id(&self) -> usize {
        self.id
    }

    /// Leaves the budget, once: the pool's workers have exited, so it counts for nothing
    /// from now on, even while a task or other handle keeps the pool's state alive.
    pub(crate) fn leave(&self) {
        if !self.left.swap(true, Ordering::SeqCst) {
            self.budget.leave(self.id);
        }
    }
}

impl Drop for Membership {
    fn drop(&mut self) {
        self.leave();
    }
}

impl Budget {
    /// A budget of `cores`.
    pub(crate) fn new(cores: usize) -> Self {
        Budget {
            pools: AtomicUsize::new(0),
            members: Mutex::new(Vec::new()),
            next_id: AtomicUsize::new(0),
            cores: cores.max(1),
            withheld: Mutex::new(Vec::new()),
            withheld_len: AtomicUsize::new(0),
            #[cfg(not(loom))]
            timer: timer::Timer::default(),
            #[cfg(all(target_os = "linux", not(loom)))]
            machine: std::sync::OnceLock::new(),
            #[cfg(loom)]
            exempt_idle: true,
        }
    }

    /// Turns step 1 of the rule off (the loom mutant).
    #[cfg(loom)]
    pub(crate) fn set_exempt_idle(&mut self, on: bool) {
        self.exempt_idle = on;
    }

    /// The process's budget: the cores it may use are `available_parallelism`, which on
    /// Linux is the affinity mask narrowed by the cgroup's CPU quota.
    ///
    /// A child of `fork` gets a budget of its own at its first call: the one it inherited
    /// lists the parent's pools, whose workers it does not have, may have had a lock held
    /// at the fork by a thread it does not have, and counts on a timer thread it does not
    /// have. That one is left untouched, never freed: freeing it could take those locks,
    /// or give back the parent's machine-wide lease.
    ///
    /// A child is told apart by its fork generation ([`fork_generation`]), not only by its
    /// pid: a descendant can have the pid the budget was made in (pid 1 of a new pid
    /// namespace, as its ancestor was in its own; or a pid reused after wrapping).
    #[cfg(not(loom))]
    pub(crate) fn process() -> Arc<Budget> {
        use std::sync::atomic::{AtomicPtr, Ordering};

        /// The process's budget, and which process it is.
        struct Process {
            pid: u32,
            forks: usize,
            budget: Arc<Budget>,
        }

        // Written with a compare-and-swap rather than under a lock: a lock could be held
        // at a fork, and a child could never take it.
        static PROCESS: AtomicPtr<Process> = AtomicPtr::new(std::ptr::null_mut());
        // Read before the budget is published, so a fork after this read makes the
        // published generation stale in the child.
        let forks = fork_generation();
        let pid = std::process::id();
        loop {
            let current = PROCESS.load(Ordering::Acquire);
            // SAFETY: a non-null pointer in `PROCESS` comes from `Box::into_raw` below and
            // is never freed; the Acquire load pairs with the Release of the swap that
            // stored it, so the `Process` it points to is initialised.
            if let Some(p) = unsafe { current.as_ref() } {
                if p.pid == pid && p.forks == forks {
                    return Arc::clone(&p.budget);
                }
            }
            let cores = std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get);
            let fresh = Box::into_raw(Box::new(Process {
                pid,
                forks,
                budget: Arc::new(Budget::new(cores)),
            }));
            if PROCESS
                .compare_exchange(current, fresh, Ordering::AcqRel, Ordering::Acquire)
                .is_err()
            {
                // SAFETY: `fresh` came from `Box::into_raw` above and nobody else saw it.
                drop(unsafe { Box::from_raw(fresh) });
            }
        }
    }

    /// Pools that joined and have not left.
    #[cfg(test)]
    pub(crate) fn pools(&self) -> usize {
        self.pools.load(Ordering::Relaxed)
    }

    /// Adds `member` to the budget; with `machine`, this process also joins the machine's
    /// segment (refused: see [`machine_segment`](Self::machine_segment)).
    pub(crate) fn join(self: &Arc<Self>, member: Weak<dyn Member>, machine: bool) -> Membership {
        // The segment is opened, or refused and said so, while the pool is built rather
        // than at a wake-up decision: opening may wait for another process's creation.
        #[cfg(all(target_os = "linux", not(loom)))]
        if machine {
            let _ = self.machine_segment();
        }
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        lock(&self.members).push(Entry { id, member });
        self.pools.fetch_add(1, Ordering::SeqCst);
        Membership {
            budget: Arc::clone(self),
            id,
            machine,
            left: AtomicBool::new(false),
        }
    }

    fn leave(&self, id: usize) {
        lock(&self.members).retain(|e| e.id != id);
        self.pools.fetch_sub(1, Ordering::SeqCst);
        let mut withheld = lock(&self.withheld);
        withheld.retain(|w| w.id != id);
        self.withheld_len.store(withheld.len(), Ordering::Relaxed);
    }

    /// Whether a wake-up decision must ask the budget: two or more pools in the process, or
    /// a pool counting against the machine. One relaxed load.
    #[inline]
    pub(crate) fn shared(&self, membership_machine: bool) -> bool {
        membership_machine || self.pools.load(Ordering::Relaxed) >= 2
    }

    /// The process's awake workers and how many of its pools have one, as each pool's
    /// sleeper set says now.
    pub(crate) fn awake(&self) -> (usize, usize) {
        // Upgraded under the lock, counted and dropped after it: the pool whose last
        // reference is dropped here leaves the budget, which takes the lock.
        let live: Vec<Arc<dyn Member>> = lock(&self.members)
            .iter()
            .filter_map(|e| e.member.upgrade())
            .collect();
        let mut total = 0;
        let mut pools = 0;
        for m in &live {
            let a = m.awake();
            total += a;
            pools += usize::from(a > 0);
        }
        drop(live);
        (total, pools)
    }

    /// May a pool with `mine` awake workers wake one more? `machine`: count the other
    /// processes of the machine too (and renew this process's lease).
    pub(crate) fn admits(&self, mine: usize, machine: bool) -> bool {
        #[cfg(loom)]
        let mine = if self.exempt_idle { mine } else { mine.max(1) };
        if mine == 0 || self.timer_failed() {
            return true;
        }
        let (mut total, mut pools) = self.awake();
        if machine {
            let others = self.machine_others(total);
            total += others;
            pools += usize::from(others > 0);
        }
        rule(mine, total, pools, self.cores)
    }

    /// Whether the awake workers exceed the cores while two or more pools are awake: a
    /// searcher then gives its core back (README, "Budget", step 3).
    pub(crate) fn over(&self, machine: bool) -> bool {
        if self.timer_failed() {
            return false;
        }
        let (mut total, mut pools) = self.awake();
        if machine {
            let others = self.machine_others(total);
            total += others;
            pools += usize::from(others > 0);
        }
        pools >= 2 && total > self.cores
    }

    /// Keeps pool `id`'s refused wake-up, to be made by the next worker that parks in
    /// another pool or, at the latest, [`WITHHELD_BOUND_NS`] after `now_ns`. One per pool.
    ///
    /// Returns whether it is kept. It is not where the timer thread that makes it at the
    /// bound cannot be started: the caller then makes it now, and every wake-up listed
    /// meanwhile, this pool's included, is made here.
    #[must_use]
    pub(crate) fn withhold(
        self: &Arc<Self>,
        id: usize,
        member: Weak<dyn Member>,
        now_ns: u64,
    ) -> bool {
        let mut withheld = lock(&self.withheld);
        if withheld.iter().any(|w| w.id == id) {
            return true;
        }
        let due_ns = now_ns + WITHHELD_BOUND_NS;
        withheld.push(Withheld { id, member, due_ns });
        self.withheld_len.store(withheld.len(), Ordering::SeqCst);
        drop(withheld);
        #[cfg(not(loom))]
        timer::arm(self, due_ns);
        if !self.timer_failed() {
            return true;
        }
        // Whoever listed a wake-up armed the timer after listing it, and sees the failure
        // once `arm` returns: each makes every wake-up still listed, its own included,
        // through `wake_withheld`. Its own listing may have been merged with a later
        // withholder of the same pool, which was told "kept" and relies on the listing
        // being made; taking it back unmade would lose that wake-up. The caller still makes
        // its own: at worst one wake-up more than needed.
        self.hand_over(None, u64::MAX, usize::MAX);
        false
    }

    /// Whether the timer thread could not be started: the budget then withholds nothing,
    /// as if there were none.
    #[cfg(not(loom))]
    fn timer_failed(&self) -> bool {
        self.timer.failed()
    }

    /// Under loom the models have no timer thread, and never a failed one.
    #[cfg(loom)]
    fn timer_failed(&self) -> bool {
        false
    }

    /// A worker of pool `id` parks, giving its core back: the oldest wake-up withheld from
    /// another pool is made now. A lock-free look when nothing is withheld.
    #[inline]
    pub(crate) fn core_released(&self, id: usize) {
        if self.withheld_len.load(Ordering::Relaxed) != 0 {
            self.hand_over(Some(id), u64::MAX, 1);
        }
    }

    /// Makes up to `most` withheld wake-ups due by `now_ns` of pools other than `skip`;
    /// returns the earliest deadline still withheld, if any.
    fn hand_over(&self, skip: Option<usize>, now_ns: u64, most: usize) -> Option<u64> {
        let mut made = Vec::new();
        let next = {
            let mut withheld = lock(&self.withheld);
            let mut i = 0;
            while i < withheld.len() && made.len() < most {
                if Some(withheld[i].id) != skip && withheld[i].due_ns <= now_ns {
                    made.push(withheld.remove(i).member);
                } else {
                    i += 1;
                }
            }
            self.withheld_len.store(withheld.len(), Ordering::SeqCst);
            withheld.iter().map(|w| w.due_ns).min()
        };
        // Every wake-up is made before any pool's last reference can be dropped here: that
        // drop may run user code (a registry's `Drop`), which may panic, and a panic must
        // not keep the rest from being made.
        let live: Vec<Arc<dyn Member>> = made.iter().filter_map(Weak::upgrade).collect();
        for m in &live {
            m.wake_withheld();
        }
        drop(live);
        next
    }

    /// Wake-ups withheld now (tests).
    #[cfg(test)]
    pub(crate) fn withheld(&self) -> usize {
        lock(&self.withheld).len()
    }

    /// The other processes' awake workers, publishing `mine` for them; 0 where the segment
    /// is refused or off Linux.
    #[cfg(all(target_os = "linux", not(loom)))]
    fn machine_others(&self, mine: usize) -> usize {
        match self.machine_segment() {
            Some(s) => s.publish_and_count(mine, machine::now_ms()),
            None => 0,
        }
    }

    #[cfg(not(all(target_os = "linux", not(loom))))]
    fn machine_others(&self, _mine: usize) -> usize {
        0
    }

    /// The machine's segment, opened at the first call (the build of the first pool that
    /// asks for it); `None` where it is refused (another layout, not private, no shared
    /// memory), which is said on stderr once per process.
    #[cfg(all(target_os = "linux", not(loom)))]
    pub(crate) fn machine_segment(&self) -> Option<&machine::Segment> {
        self.machine
            .get_or_init(|| match machine::Segment::open(&machine::default_name()) {
                Ok(s) => Some(s),
                Err(why) => {
                    // Once per process. A child of fork says it again for itself (the fork
                    // handler clears `SAID`): its new budget opens the segment again, and
                    // may be refused for a reason of its own.
                    if !SAID.swap(true, std::sync::atomic::Ordering::Relaxed) {
                        eprintln!(
                            "ember: the machine-wide awake-worker budget \
                             (EMBER_MACHINE_BUDGET=1 or Tuning::machine_budget) is off in this \
                             process, whose pools share only the process's budget: {why}"
                        );
                    }
                    None
                }
            })
            .as_ref()
    }
}

/// Whether this process said that the machine's segment is refused; cleared in a child
/// of fork.
#[cfg(all(target_os = "linux", not(loom)))]
static SAID: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Forks this process's line has been through since the fork handler was registered: each
/// child of `fork` sees one more than its parent had. The handler is registered at the
/// first call.
///
/// Every fork after the first call has returned is counted. A fork while that call is still
/// registering the handler (or while a second caller, which does not wait for it, has
/// returned meanwhile), and a child made by a raw `clone` that runs no fork handlers, are
/// told apart by their pid only.
#[cfg(not(loom))]
fn fork_generation() -> usize {
    static FORKS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    static REGISTERED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

    /// Runs in the child of every `fork`, where only async-signal-safe calls are allowed:
    /// a lock-free atomic add and a lock-free atomic store.
    #[cfg(unix)]
    extern "C" fn in_child() {
        FORKS.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        #[cfg(target_os = "linux")]
        SAID.store(false, std::sync::atomic::Ordering::Relaxed);
    }

    #[cfg(unix)]
    if !REGISTERED.swap(true, std::sync::atomic::Ordering::SeqCst) {
        // SAFETY: `in_child` is a plain `extern "C"` function that never unwinds and makes
        // only async-signal-safe calls (lock-free atomics), as a handler run in the child
        // of a fork of a threaded process must; it lives as long as the process.
        let rc = unsafe { libc::pthread_atfork(None, None, Some(in_child)) };
        // Only ENOMEM: then a descendant with an ancestor's pid is not told apart, which
        // is no reason to fail the pool's build.
        let _ = rc;
    }
    #[cfg(not(unix))]
    let _ = &REGISTERED;
    FORKS.load(std::sync::atomic::Ordering::SeqCst)
}

#[cfg(not(loom))]
mod timer;

#[cfg(test)]
mod tests;
