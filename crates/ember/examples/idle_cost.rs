//! What an idle pool costs, and whether a coarse `join` still runs in parallel:
//!
//! ```sh
//! cargo run --release -p ember --example idle_cost
//! ```
//!
//! For a pool of two workers, with and without lazy joins and with sequential joins, it
//! prints the CPU time the pool's
//! threads used over 5 s with nothing to do (from `/proc/self/task/*/schedstat`, so Linux
//! only; nanosecond resolution), then the wall time of a `join` of two 200 ms halves made on
//! that idle pool (≈ 200 ms when the halves run in parallel, 400 ms when they do not). That
//! `join` is made three `join`s deep, the depth from which sequential joins may run two
//! halves as plain calls (once a worker keeps three halves for thieves); on an idle pool the
//! sleeping worker wants work, so each of those `join`s offers its half rather than keeping
//! it, and the option leaves a coarse `join` parallel.

use std::time::{Duration, Instant};

/// CPU time, in nanoseconds, of this process's threads whose name starts with `prefix`.
fn threads_cpu_ns(prefix: &str) -> Option<u64> {
    let mut total = 0;
    for entry in std::fs::read_dir("/proc/self/task").ok()? {
        let path = entry.ok()?.path();
        let name = std::fs::read_to_string(path.join("comm")).unwrap_or_default();
        if name.starts_with(prefix) {
            let schedstat = std::fs::read_to_string(path.join("schedstat")).ok()?;
            total += schedstat.split_whitespace().next()?.parse::<u64>().ok()?;
        }
    }
    Some(total)
}

/// `f` called `depth` `join`s deep, each with an empty other half.
fn nested(depth: u32, f: impl FnOnce() + Send) {
    if depth == 0 {
        f()
    } else {
        ember::join(|| nested(depth - 1, f), || ());
    }
}

fn busy(for_: Duration) {
    let start = Instant::now();
    while start.elapsed() < for_ {
        std::hint::spin_loop();
    }
}

fn main() {
    let configurations = [
        (
            "lazy_joins(false)",
            ember::Pool::builder().tuning(ember::Tuning::new().lazy_joins(false)),
        ),
        (
            "lazy_joins(true) ",
            ember::Pool::builder().tuning(ember::Tuning::new().lazy_joins_unchecked(true)),
        ),
        (
            "sequential_joins ",
            ember::Pool::builder().tuning(ember::Tuning::new().sequential_joins_unchecked(true)),
        ),
    ];
    for (configuration, builder) in configurations {
        let pool = builder
            .threads(2)
            .name("idle-cost")
            .build()
            .expect("a pool of two workers");
        // Wake both workers once, then let them go to sleep.
        pool.install(|| ember::join(|| busy(Duration::from_millis(1)), || ()));
        std::thread::sleep(Duration::from_millis(100));
        let before = threads_cpu_ns("idle-cost");
        std::thread::sleep(Duration::from_secs(5));
        let after = threads_cpu_ns("idle-cost");
        let idle = match (before, after) {
            (Some(before), Some(after)) => format!("{:.3} ms", (after - before) as f64 / 1e6),
            _ => "unknown (no /proc/self/task/*/schedstat here)".to_string(),
        };
        let start = Instant::now();
        pool.install(|| {
            nested(3, || {
                ember::join(
                    || busy(Duration::from_millis(200)),
                    || busy(Duration::from_millis(200)),
                );
            })
        });
        println!(
            "{configuration}: pool threads' CPU over 5 s idle: {idle}; \
             join of two 200 ms halves on the idle pool: {:.1} ms",
            start.elapsed().as_secs_f64() * 1e3
        );
    }
}
