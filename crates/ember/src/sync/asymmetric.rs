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
//! Outside loom, on Linux, [`heavy`] is that system call and [`light`] a compiler fence;
//! [`available`] says whether the kernel offers the call (it registers the process for it on
//! first use), and where it does not — another system, an old kernel — the pool keeps the
//! `SeqCst` fence on both sides and never calls either. Written here on `libc` rather than
//! taken from the `membarrier` crate: that crate depends on `windows-sys` on every target,
//! which fails to link on Linux with current toolchains (`-lwindows`), and its `light` reads
//! a lazily-initialised strategy on every call, which the push this serves cannot afford.
//!
//! Under `--cfg loom` the pair is [`model`]'s, which loom can explore: the heavy barrier makes
//! each participating thread execute a `SeqCst` fence at the first of its light barriers it
//! reaches while the heavy one waits (a model marks more such places with `model::light`
//! where the kernel's interrupt could land between two accesses).

#[cfg(loom)]
pub(crate) use model::{available, heavy, light};
#[cfg(not(loom))]
pub(crate) use system::{available, heavy, light};

#[cfg(not(loom))]
mod system {
    use std::sync::atomic::{compiler_fence, Ordering};
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

    /// Whether [`heavy`] works here; the first call registers the process for it.
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

    /// The fast side: keeps the compiler from moving accesses across it; the processor may
    /// still reorder a store before a later load, which a concurrent [`heavy`] undoes.
    #[inline(always)]
    pub(crate) fn light() {
        compiler_fence(Ordering::SeqCst);
    }

    /// The slow side: returns once every running thread of the process has executed a full
    /// barrier. Called only where [`available`] said yes.
    #[cfg(target_os = "linux")]
    pub(crate) fn heavy() {
        if membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED) != 0 {
            // The registered command cannot fail; if the kernel broke that promise, a light
            // push could go unseen and a `join` hang. Stopping loudly beats hanging.
            eprintln!("ember: membarrier failed after registration; aborting");
            std::process::abort();
        }
    }

    #[cfg(not(target_os = "linux"))]
    pub(crate) fn heavy() {
        unreachable!("no light pushes where the heavy barrier is unavailable")
    }
}

#[cfg(loom)]
pub(crate) mod model {
    //! The heavy barrier as loom can explore it. Threads that issue light barriers register
    //! as *participants* ([`participate`]) before they start. [`heavy`] makes a `SeqCst`
    //! fence, bumps an epoch, and waits until every other participant has acknowledged it;
    //! a participant acknowledges at its next [`light`] by a `SeqCst` fence of its own, and a participant that will not run pool code again leaves
    //! ([`retire`]), as a blocked thread needs no interrupt. Then `heavy` fences again.
    //!
    //! This is no stronger than the kernel's barrier: the kernel fences every thread at
    //! whatever instruction it is running, the model only participants, only at their light
    //! barriers, and only if they see the epoch. A model passes only if
    //! every such landing place is safe.

    use std::cell::Cell;

    use loom::sync::atomic::{fence, AtomicUsize, Ordering};

    const PARTICIPANTS: usize = 4;

    /// Always: the models explore the light path.
    pub(crate) fn available() -> bool {
        true
    }

    loom::lazy_static! {
        static ref EPOCH: AtomicUsize = AtomicUsize::new(0);
        static ref ACKED: [AtomicUsize; PARTICIPANTS] =
            std::array::from_fn(|_| AtomicUsize::new(0));
        static ref REGISTERED: AtomicUsize = AtomicUsize::new(0);
    }

    loom::thread_local! {
        static ME: Cell<Option<usize>> = const { Cell::new(None) };
    }

    /// Registers participant `index` (from the model's main thread, before the threads start).
    pub(crate) fn register(index: usize) {
        REGISTERED.fetch_or(1 << index, Ordering::SeqCst);
    }

    /// Makes the calling thread participant `index` (registered with [`register`]).
    pub(crate) fn participate(index: usize) {
        ME.with(|me| me.set(Some(index)));
    }

    /// The calling participant will not touch the pool again (it joins other threads):
    /// heavy barriers stop waiting for it.
    pub(crate) fn retire() {
        if let Some(me) = ME.with(Cell::get) {
            fence(Ordering::SeqCst);
            ACKED[me].store(usize::MAX, Ordering::SeqCst);
            ME.with(|cell| cell.set(None));
        }
    }

    /// A light barrier: a compiler fence, and the landing place of a pending heavy one.
    pub(crate) fn light() {
        let Some(me) = ME.with(Cell::get) else {
            return;
        };
        let epoch = EPOCH.load(Ordering::SeqCst);
        if ACKED[me].load(Ordering::Relaxed) < epoch {
            fence(Ordering::SeqCst);
            ACKED[me].store(epoch, Ordering::SeqCst);
        }
    }

    /// A heavy barrier: waits until every other participant has fenced.
    pub(crate) fn heavy() {
        fence(Ordering::SeqCst);
        let epoch = EPOCH.fetch_add(1, Ordering::SeqCst) + 1;
        let me = ME.with(Cell::get);
        let registered = REGISTERED.load(Ordering::SeqCst);
        for other in 0..PARTICIPANTS {
            if registered & (1 << other) == 0 || Some(other) == me {
                continue;
            }
            while ACKED[other].load(Ordering::SeqCst) < epoch {
                // A thread inside the system call is where the kernel may fence it too.
                light();
                loom::thread::yield_now();
            }
        }
        fence(Ordering::SeqCst);
    }
}
