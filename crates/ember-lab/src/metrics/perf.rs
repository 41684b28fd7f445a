//! The kernel's software counters `context-switches` and `cpu-migrations` (perf_event_open).
//!
//! A counter is opened on the calling thread with `inherit`, so every thread the run creates
//! after the counter opens — and every thread those create — is counted too; a child's counts
//! are folded into the counter when the child exits. Threads that already exist when the
//! counter opens are *not* counted: a trial must create its pools inside its run.
//!
//! Scheduler events happen in the kernel. A counter restricted to user space (what the kernel
//! allows an unprivileged process when `perf_event_paranoid` ≥ 2) would read 0 whatever
//! happened, so the lab never opens such a counter: if the kernel refuses kernel-side
//! counting, the metrics are absent and tables say `n/a` with the reason.

use crate::experiment::Metrics;
use perf_event::events::Software;
use perf_event::{Builder, Counter};

/// The two counters of one run.
pub struct PerfCounters {
    switches: Counter,
    migrations: Counter,
}

fn open(event: Software) -> std::io::Result<Counter> {
    Builder::new(event)
        .observe_self()
        .any_cpu()
        .include_kernel()
        .inherit(true)
        .build()
}

fn paranoid() -> String {
    std::fs::read_to_string("/proc/sys/kernel/perf_event_paranoid")
        .map(|s| s.trim().to_string())
        .unwrap_or_else(|_| "unknown".into())
}

impl PerfCounters {
    /// Opens and starts both counters. The error explains why the kernel refused.
    pub fn start() -> Result<PerfCounters, String> {
        let explain = |e: std::io::Error| {
            format!(
                "perf_event_open refused: {e}; perf_event_paranoid={}",
                paranoid()
            )
        };
        let mut switches = open(Software::CONTEXT_SWITCHES).map_err(explain)?;
        let mut migrations = open(Software::CPU_MIGRATIONS).map_err(explain)?;
        switches.enable().map_err(explain)?;
        migrations.enable().map_err(explain)?;
        Ok(PerfCounters {
            switches,
            migrations,
        })
    }

    /// Stops the counters and adds `perf_ctx_switches` and `migrations` to `m`.
    pub fn stop(mut self, m: &mut Metrics) -> Result<(), String> {
        let read = |c: &mut Counter| -> Result<u64, String> {
            c.disable().map_err(|e| format!("perf disable: {e}"))?;
            c.read().map_err(|e| format!("perf read: {e}"))
        };
        let switches = read(&mut self.switches)?;
        let migrations = read(&mut self.migrations)?;
        m.insert("perf_ctx_switches".into(), switches as f64);
        m.insert("migrations".into(), migrations as f64);
        Ok(())
    }
}

/// Whether this process may count scheduler events; `Err` holds the reason it may not.
pub fn probe() -> Result<(), String> {
    PerfCounters::start().map(drop)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    /// A thread created after the counters open, sleeping 20 times, is counted (inherit).
    #[test]
    fn inherited_thread_sleeps_are_counted() {
        let counters = match PerfCounters::start() {
            Ok(c) => c,
            Err(reason) => {
                eprintln!("perf counters unavailable, nothing to check: {reason}");
                return;
            }
        };
        std::thread::spawn(|| {
            for _ in 0..20 {
                std::thread::sleep(Duration::from_millis(1));
            }
        })
        .join()
        .unwrap();
        let mut m = Metrics::new();
        counters.stop(&mut m).unwrap();
        assert!(m["perf_ctx_switches"] >= 20.0, "{m:?}");
        assert!(m.contains_key("migrations"));
    }
}
