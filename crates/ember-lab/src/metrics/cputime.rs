//! The calling thread's CPU clock.
//!
//! Experiments bracket their work closures with [`thread_cpu_ns`] and sum the differences:
//! that sum is the run's *useful* CPU, and the harness reports everything else the process
//! burned as *overhead* (scheduling, waking, spinning, channel traffic).

use std::sync::atomic::{AtomicU64, Ordering};

/// CPU time consumed so far by the calling thread, in nanoseconds.
pub fn thread_cpu_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec and CLOCK_THREAD_CPUTIME_ID is supported on
    // every Linux the lab runs on; the call writes only into `ts`.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    assert_eq!(rc, 0, "clock_gettime(CLOCK_THREAD_CPUTIME_ID) failed");
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// Runs `f` and adds the thread CPU time it took to `acc` (nanoseconds).
pub fn timed<R>(acc: &AtomicU64, f: impl FnOnce() -> R) -> R {
    let start = thread_cpu_ns();
    let r = f();
    acc.fetch_add(thread_cpu_ns().saturating_sub(start), Ordering::Relaxed);
    r
}
