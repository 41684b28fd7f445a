//! Helpers shared by the pool test files: the wake policies every test runs under, and a
//! pool built with one of them.

// Each test file is its own crate and uses only some of these.
#![allow(dead_code)]

use ember::{Pool, WakePolicy};

/// Every wake policy, named for failure messages.
pub fn policies() -> Vec<(&'static str, WakePolicy)> {
    vec![
        ("Eager", WakePolicy::Eager),
        ("Searching", WakePolicy::Searching),
        ("Biased { batch: 20 }", WakePolicy::Biased { batch: 20 }),
        ("Biased { batch: 1 }", WakePolicy::Biased { batch: 1 }),
    ]
}

/// A pool of `threads` workers under `policy`.
pub fn pool(policy: WakePolicy, threads: usize) -> Pool {
    Pool::builder()
        .threads(threads)
        .wake(policy)
        .build()
        .expect("valid configuration")
}
