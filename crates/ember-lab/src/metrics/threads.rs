//! CPU time of a group of this process's threads, found by name.
//!
//! "The CPU a pool burns" is the CPU of its worker threads, not of the process: a producer
//! that sleeps between spawns pays its own timer wake-ups whatever pool it feeds. Linux gives
//! every thread a CPU clock that any thread of the process can read
//! (`clock_gettime` on the clock id glibc's `pthread_getcpuclockid` builds from the thread
//! id), so the pool's threads are found in `/proc/self/task` by the name prefix the
//! experiment gave them, and their clocks summed — peers included, whose threads we do not
//! own.

use std::fs;

/// Nanoseconds of CPU used so far by the threads of this process whose name starts with
/// `prefix`, and how many there are. `None` if `/proc/self/task` cannot be read.
pub fn threads_cpu_ns(prefix: &str) -> Option<(u64, usize)> {
    let mut total = 0u64;
    let mut count = 0usize;
    for entry in fs::read_dir("/proc/self/task").ok()? {
        let Ok(entry) = entry else { continue };
        let Some(tid) = entry
            .file_name()
            .to_str()
            .and_then(|s| s.parse::<i32>().ok())
        else {
            continue;
        };
        let Ok(comm) = fs::read_to_string(entry.path().join("comm")) else {
            continue; // the thread exited meanwhile
        };
        if !comm.trim_end().starts_with(prefix) {
            continue;
        }
        if let Some(ns) = thread_cpu_ns(tid) {
            total += ns;
            count += 1;
        }
    }
    Some((total, count))
}

/// CPU time of thread `tid` of this process.
fn thread_cpu_ns(tid: i32) -> Option<u64> {
    // The per-thread scheduler clock: (~tid << 3) | CPUCLOCK_PERTHREAD_MASK | CPUCLOCK_SCHED,
    // as the kernel's posix-cpu-timers define it and glibc builds it.
    let clock: libc::clockid_t = (!tid << 3) | 4 | 2;
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec; an invalid clock id (a thread that exited)
    // makes the call fail with EINVAL, which is handled, and writes nothing.
    let rc = unsafe { libc::clock_gettime(clock, &mut ts) };
    (rc == 0).then(|| ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64)
}

#[cfg(test)]
mod tests {
    use super::threads_cpu_ns;
    use std::sync::mpsc;

    #[test]
    fn finds_named_threads_and_sees_their_cpu() {
        let (tx, rx) = mpsc::channel::<()>();
        let (ready_tx, ready_rx) = mpsc::channel::<()>();
        let handle = std::thread::Builder::new()
            .name("cpu-probe-x".into())
            .spawn(move || {
                // Burn a measurable amount of CPU, then wait to be measured.
                let mut x = 0u64;
                for i in 0..20_000_000u64 {
                    x = std::hint::black_box(x.wrapping_add(i));
                }
                ready_tx.send(()).unwrap();
                rx.recv().unwrap();
                x
            })
            .unwrap();
        ready_rx.recv().unwrap();
        let (ns, count) = threads_cpu_ns("cpu-probe-").expect("/proc/self/task readable");
        tx.send(()).unwrap();
        handle.join().unwrap();
        assert_eq!(count, 1);
        assert!(ns > 0, "a thread that ran a loop has used CPU");
        assert_eq!(threads_cpu_ns("no-such-thread-").unwrap(), (0, 0));
    }
}
