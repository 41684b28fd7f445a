//! Process-wide CPU time and context switches from `getrusage`.
//!
//! `RUSAGE_SELF` covers every thread of the process, including threads that have already
//! exited, so a run that joins its threads before returning is fully accounted by the
//! difference of two snapshots taken around it. `RUSAGE_CHILDREN` is added in, so a run that
//! starts child processes (`producer-consumer --processes`) and waits for them is accounted
//! the same way.

use crate::experiment::Metrics;

/// One `getrusage(RUSAGE_SELF)` snapshot.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Rusage {
    /// User CPU time, seconds.
    pub user_s: f64,
    /// System CPU time, seconds.
    pub sys_s: f64,
    /// Voluntary context switches (the thread blocked).
    pub voluntary: i64,
    /// Involuntary context switches (the thread was preempted).
    pub involuntary: i64,
}

fn seconds(tv: libc::timeval) -> f64 {
    tv.tv_sec as f64 + tv.tv_usec as f64 * 1e-6
}

impl Rusage {
    /// The usage so far of this process and of its waited-for children.
    pub fn now() -> Rusage {
        let own = Rusage::of(libc::RUSAGE_SELF);
        let children = Rusage::of(libc::RUSAGE_CHILDREN);
        Rusage {
            user_s: own.user_s + children.user_s,
            sys_s: own.sys_s + children.sys_s,
            voluntary: own.voluntary + children.voluntary,
            involuntary: own.involuntary + children.involuntary,
        }
    }

    fn of(who: libc::c_int) -> Rusage {
        // SAFETY: `rusage` is plain old data; an all-zero value is valid.
        let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
        // SAFETY: `ru` is a valid, writable rusage and `who` is RUSAGE_SELF or
        // RUSAGE_CHILDREN, both always accepted.
        let rc = unsafe { libc::getrusage(who, &mut ru) };
        assert_eq!(rc, 0, "getrusage({who}) failed");
        Rusage {
            user_s: seconds(ru.ru_utime),
            sys_s: seconds(ru.ru_stime),
            voluntary: ru.ru_nvcsw,
            involuntary: ru.ru_nivcsw,
        }
    }

    /// What happened between `earlier` and `self`.
    pub fn since(&self, earlier: &Rusage) -> Rusage {
        Rusage {
            user_s: self.user_s - earlier.user_s,
            sys_s: self.sys_s - earlier.sys_s,
            voluntary: self.voluntary - earlier.voluntary,
            involuntary: self.involuntary - earlier.involuntary,
        }
    }

    /// Adds this delta to `m` under the lab's metric names.
    pub fn record(&self, m: &mut Metrics) {
        m.insert("user_s".into(), self.user_s);
        m.insert("sys_s".into(), self.sys_s);
        m.insert("cpu_s".into(), self.user_s + self.sys_s);
        m.insert("voluntary_ctx_switches".into(), self.voluntary as f64);
        m.insert("involuntary_ctx_switches".into(), self.involuntary as f64);
        m.insert(
            "ctx_switches".into(),
            (self.voluntary + self.involuntary) as f64,
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    /// Each sleep blocks the sleeping thread, which the kernel counts as a voluntary switch;
    /// the thread is joined before the second snapshot, so its counts are in `RUSAGE_SELF`.
    #[test]
    fn sleeps_show_as_voluntary_switches() {
        const SLEEPS: i64 = 20;
        let before = Rusage::now();
        std::thread::spawn(|| {
            for _ in 0..SLEEPS {
                std::thread::sleep(Duration::from_millis(1));
            }
        })
        .join()
        .unwrap();
        let d = Rusage::now().since(&before);
        assert!(
            d.voluntary >= SLEEPS,
            "{SLEEPS} sleeps but only {} voluntary switches",
            d.voluntary
        );
        let mut m = Metrics::new();
        d.record(&mut m);
        assert_eq!(
            m["ctx_switches"],
            m["voluntary_ctx_switches"] + m["involuntary_ctx_switches"]
        );
    }

    #[test]
    fn cpu_time_is_monotonic() {
        let a = Rusage::now();
        let b = Rusage::now();
        let d = b.since(&a);
        assert!(d.user_s >= 0.0 && d.sys_s >= 0.0);
    }
}
