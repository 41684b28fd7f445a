//! Pinning workers to processors ([`PoolBuilder::pin_workers`](super::PoolBuilder)).
//!
//! Why a pool would: on virtual machines whose idle processors read as preempted to the
//! guest, Linux may queue a woken worker on its waker's busy processor instead of the idle
//! one, and the worker then waits out whatever its waker runs (`perf sched` shows the wakee
//! moved to the waker's processor). A worker pinned to
//! its own processor is woken there. Two calls on `libc`, already a dependency; the
//! `core_affinity` crate would add one for them.
//!
//! The sets are `libc::cpu_set_t`, 1024 processors: on a machine with more, the system
//! refuses to fill one and workers run unpinned.

/// The processors a `cpu_set_t` can name: its bits (not `CPU_SETSIZE`, which some libcs
/// set lower than the type holds).
#[cfg(target_os = "linux")]
const SET_BITS: usize = 8 * std::mem::size_of::<libc::cpu_set_t>();

/// The processors this thread may run on, in order, or `None` where that cannot be known
/// (off Linux, or if the system refuses to say).
#[cfg(target_os = "linux")]
pub(super) fn allowed_cpus() -> Option<Vec<usize>> {
    // SAFETY: `cpu_set_t` is plain data, valid all zeroes.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: `set` is a writable `cpu_set_t` of the size passed; pid 0 is this thread.
    let rc =
        unsafe { libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) };
    if rc != 0 {
        return None;
    }
    let cpus: Vec<usize> = (0..SET_BITS)
        // SAFETY: `cpu` is below the set's bit count.
        .filter(|&cpu| unsafe { libc::CPU_ISSET(cpu, &set) })
        .collect();
    (!cpus.is_empty()).then_some(cpus)
}

#[cfg(not(target_os = "linux"))]
pub(super) fn allowed_cpus() -> Option<Vec<usize>> {
    None
}

/// Pins the calling thread to processor `cpu`; whether the system agreed. A refusal (the
/// processor went offline, a cgroup changed) leaves the thread where it was: a pool runs
/// unpinned rather than not at all.
pub(super) fn pin_current_thread(cpu: usize) -> bool {
    allow_current_thread(&[cpu])
}

/// Lets the calling thread run on `cpus` only; whether the system agreed (a refusal leaves
/// it where it was). The alarm's thread of a pool of pinned workers, started from one of
/// them, would otherwise inherit that worker's single processor.
#[cfg(target_os = "linux")]
pub(super) fn allow_current_thread(cpus: &[usize]) -> bool {
    if cpus.is_empty() || cpus.iter().any(|&cpu| cpu >= SET_BITS) {
        return false;
    }
    // SAFETY: `cpu_set_t` is plain data, valid all zeroes.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    for &cpu in cpus {
        // SAFETY: `cpu` is below the set's bit count (checked above).
        unsafe { libc::CPU_SET(cpu, &mut set) };
    }
    // SAFETY: `set` is a valid `cpu_set_t` of the size passed; pid 0 is this thread.
    unsafe { libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) == 0 }
}

#[cfg(not(target_os = "linux"))]
pub(super) fn allow_current_thread(_cpus: &[usize]) -> bool {
    false
}
