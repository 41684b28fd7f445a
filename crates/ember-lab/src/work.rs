//! The published experiment's unit of work and its calibration.
//!
//! One unit is a relaxed `fetch_add` on an atomic local to the call: a few nanoseconds of
//! CPU that touches no shared memory, so work costs the same whichever thread runs it and
//! the scheduler is the only thing that differs between rows. `black_box` keeps the compiler
//! from folding the loop away.

use std::hint::black_box;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

/// Does `units` units of work.
pub fn work(units: u64) {
    let counter = AtomicU64::new(0);
    for _ in 0..units {
        black_box(&counter).fetch_add(1, Ordering::Relaxed);
    }
    black_box(counter.load(Ordering::Relaxed));
}

/// Measures how many units this machine does per microsecond on one thread: the best of a
/// few short timings, so a preemption during one of them does not skew the result.
pub fn units_per_us() -> f64 {
    const UNITS: u64 = 200_000;
    work(UNITS); // warm-up
    let best = (0..5)
        .map(|_| {
            let t = Instant::now();
            work(UNITS);
            t.elapsed().as_secs_f64()
        })
        .fold(f64::INFINITY, f64::min);
    UNITS as f64 / (best * 1e6).max(1e-9)
}

#[cfg(test)]
mod tests {
    #[test]
    fn calibration_is_positive_and_finite() {
        let u = super::units_per_us();
        assert!(u.is_finite() && u > 0.0);
    }
}
