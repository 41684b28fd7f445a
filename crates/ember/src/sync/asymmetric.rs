//! An asymmetric barrier: a [`light`] one for the fast path, nearly free, and a [`heavy`] one
//! for the slow path, which orders against every light one.
//!
//! Two threads that each store, fence and then load (a Dekker pattern: a push and its wake-up
//! check against a sleeper's listing and its last look) normally both pay a `SeqCst` fence, a
//! locked instruction that drains the store buffer. When one side runs far more often than
//! the other, the cost can be moved: the fast side issues only a compiler fence and the slow
//! side a process-wide barrier — Linux's `membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED)`,
//! which makes every running thread of the process execute a full barrier before it returns
//! (a thread not running has passed one already, when it was switched out). For any light
//! barrier L and heavy barrier H, then, either L comes before H and what preceded L is
//! visible after H, or H comes before L and what preceded H is visible after L: the pair
//! orders as two `SeqCst` fences do. See "membarrier(2)", Linux manual page,
//! <https://man7.org/linux/man-pages/man2/membarrier.2.html>, and Dice, Moir and Scherer,
//! "Quickly Reacquirable Locks" (2003), for the asymmetric Dekker pattern.
//!
//! Outside loom, on Linux, [`Barrier::heavy`] is that system call and [`Barrier::light`] a
//! compiler fence; [`available`] says whether the kernel offers the call (it registers the
//! process for it on first use), and where it does not — another system, an old kernel —
//! the pool keeps the `SeqCst` fence on both sides and never calls either. Written here on
//! `libc` rather than taken from the `membarrier` crate: that crate depends on `windows-sys`
//! on every target, which fails to link on Linux with current toolchains (`-lwindows`), and
//! its `light` reads a lazily-initialised strategy on every call, which the push this serves
//! cannot afford.
//!
//! A [`Barrier`] is held by the pool's wake-up state; outside loom it is empty. Under
//! `--cfg loom` it holds the state of a model loom can explore (`model`): the heavy barrier
//! makes each participating thread execute a `SeqCst` fence at the first of its light
//! barriers it reaches while the heavy one waits (a model marks more places where the
//! kernel's interrupt could land between two accesses by calling `light` there).

use std::sync::atomic::{compiler_fence, Ordering};

#[cfg(not(loom))]
pub(crate) use system::available;

/// The pair of barriers (module doc); one per pool's wake-up state.
#[derive(Default)]
pub(crate) struct Barrier {
    #[cfg(loom)]
    model: model::State,
}

impl Barrier {
    /// The fast side: keeps the compiler from moving accesses across it; the processor may
    /// still reorder a store before a later load, which a concurrent [`heavy`](Self::heavy)
    /// undoes.
    #[inline(always)]
    pub(crate) fn light(&self) {
        compiler_fence(Ordering::SeqCst);
        #[cfg(loom)]
        self.model.light();
    }

    /// The slow side: returns once every running thread of the process has executed a full
    /// barrier. Called only where [`available`] said yes.
    pub(crate) fn heavy(&self) {
        #[cfg(loom)]
        self.model.heavy();
        #[cfg(not(loom))]
        system::heavy();
    }

    /// The loom model's state, for the models that drive it.
    #[cfg(all(test, loom))]
    pub(crate) fn model(&self) -> &model::State {
        &self.model
    }
}

/// Under loom: always, so that the models explore the light path.
#[cfg(loom)]
pub(crate) fn available() -> bool {
    true
}

#[cfg(not(loom))]
mod system {
    #[cfg(target_os = "linux")]
    use std::io::Write;
    use std::sync::OnceLock;

    // From the kernel's `include/uapi/linux/membarrier.h`; `libc` does not export them.
    #[cfg(target_os = "linux")]
    const MEMBARRIER_CMD_QUERY: libc::c_int = 0;
    #[cfg(target_os = "linux")]
    const MEMBARRIER_CMD_PRIVATE_EXPEDITED: libc::c_int = 1 << 3;
    #[cfg(target_os = "linux")]
    const MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED: libc::c_int = 1 << 4;

    #[cfg(target_os = "linux")]
    fn membarrier(cmd: libc::c_int) -> libc::c_long {
        // SAFETY: `membarrier` takes two integers and touches no memory of ours; an unknown
        // or unsupported command only returns an error.
        unsafe {
            libc::syscall(
                libc::SYS_membarrier,
                cmd,
                0 as libc::c_int,
                0 as libc::c_int,
            )
        }
    }

    /// Whether the heavy barrier works here; the first call registers the process for it.
    pub(crate) fn available() -> bool {
        static AVAILABLE: OnceLock<bool> = OnceLock::new();
        *AVAILABLE.get_or_init(register)
    }

    #[cfg(target_os = "linux")]
    fn register() -> bool {
        let commands = membarrier(MEMBARRIER_CMD_QUERY);
        let needed = (MEMBARRIER_CMD_PRIVATE_EXPEDITED | MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED)
            as libc::c_long;
        commands >= 0
            && commands & needed == needed
            && membarrier(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED) == 0
    }

    #[cfg(not(target_os = "linux"))]
    fn register() -> bool {
        false
    }

    #[cfg(target_os = "linux")]
    pub(super) fn heavy() {
        if membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED) != 0 {
            // The registered command cannot fail; if the kernel broke that promise, a light
            // push could go unseen and a `join` hang. Stopping loudly beats hanging (and a
            // failed write to stderr must not unwind instead).
            let _ = writeln!(
                std::io::stderr(),
                "ember: membarrier failed after registration"
            );
            std::process::abort();
        }
    }

    #[cfg(not(target_os = "linux"))]
    pub(super) fn heavy() {
        unreachable!("no light pushes where the heavy barrier is unavailable")
    }
}

#[cfg(loom)]
pub(crate) mod model {
    //! The heavy barrier as loom can explore it. Threads that issue light barriers are
    //! *participants* ([`State::participate`]). [`State::heavy`] makes a `SeqCst` fence,
    //! bumps an epoch, and waits until every other participant has acknowledged it; a
    //! participant acknowledges at its next light barrier by a `SeqCst` fence of its own,
    //! and one that blocks outside the pool acknowledges every barrier until it runs again
    //! ([`State::quiesce`]), as a switched-out thread needs no interrupt. Then `heavy` fences
    //! again.
    //!
    //! This is no stronger than the kernel's barrier: the kernel fences every thread at
    //! whatever instruction it is running, the model only participants, and only at their
    //! light barriers. A model passes only if every such landing place is safe.

    use loom::sync::atomic::{fence, AtomicUsize, Ordering};
    use loom::thread::ThreadId;

    const PARTICIPANTS: usize = 4;

    #[derive(Default)]
    pub(crate) struct State {
        epoch: AtomicUsize,
        acked: [AtomicUsize; PARTICIPANTS],
        /// Bookkeeping of the model, not part of the protocol: which thread is which
        /// participant.
        threads: std::sync::Mutex<[Option<ThreadId>; PARTICIPANTS]>,
    }

    /// The newest value of `word`, read by a read-modify-write. loom lets a plain load in a
    /// spin loop return a stale value forever, which no processor does; the kernel's own
    /// wait for the barrier's completion never misses it. Every write of these words is a
    /// read-modify-write too: loom can order a plain store after a concurrent one
    /// (tokio-rs/loom#254), and an acknowledgement would be lost.
    fn newest(word: &AtomicUsize) -> usize {
        word.fetch_add(0, Ordering::SeqCst)
    }

    impl State {
        /// Makes the calling thread participant `index`; before any other thread can issue a
        /// heavy barrier.
        #[cfg(test)]
        pub(crate) fn participate(&self, index: usize) {
            self.threads.lock().unwrap()[index] = Some(loom::thread::current().id());
        }

        /// Whether participant `index` was registered. The lock is the model's own
        /// bookkeeping, released before any atomic access: loom may switch threads there.
        fn is_participant(&self, index: usize) -> bool {
            self.threads.lock().unwrap()[index].is_some()
        }

        /// The calling participant blocks outside the pool (for good, if it only joins other
        /// threads afterwards): a thread switched out has passed a full barrier, and the
        /// kernel does not wait for it. [`resume`] when it runs again.
        ///
        /// [`resume`]: State::resume
        #[cfg(test)]
        pub(crate) fn quiesce(&self) {
            if let Some(me) = self.me() {
                fence(Ordering::SeqCst);
                self.acked[me].swap(usize::MAX, Ordering::SeqCst);
            }
        }

        /// The calling participant runs again after [`quiesce`](State::quiesce): switched
        /// in after a barrier, it acknowledges every heavy barrier begun so far.
        #[cfg(test)]
        pub(crate) fn resume(&self) {
            if let Some(me) = self.me() {
                let epoch = newest(&self.epoch);
                self.acked[me].swap(epoch, Ordering::SeqCst);
                fence(Ordering::SeqCst);
            }
        }

        fn me(&self) -> Option<usize> {
            let id = loom::thread::current().id();
            self.threads
                .lock()
                .unwrap()
                .iter()
                .position(|thread| *thread == Some(id))
        }

        /// A light barrier: the landing place of a pending heavy one.
        pub(crate) fn light(&self) {
            let Some(me) = self.me() else {
                return;
            };
            let epoch = newest(&self.epoch);
            if newest(&self.acked[me]) < epoch {
                fence(Ordering::SeqCst);
                self.acked[me].swap(epoch, Ordering::SeqCst);
            }
        }

        /// A heavy barrier: waits until every other participant has fenced.
        pub(crate) fn heavy(&self) {
            fence(Ordering::SeqCst);
            let epoch = self.epoch.fetch_add(1, Ordering::SeqCst) + 1;
            let me = self.me();
            for other in 0..PARTICIPANTS {
                if Some(other) == me || !self.is_participant(other) {
                    continue;
                }
                while newest(&self.acked[other]) < epoch {
                    // A thread inside the system call is where the kernel may fence it too.
                    self.light();
                    loom::thread::yield_now();
                }
            }
            fence(Ordering::SeqCst);
        }
    }
}
