//! ember: a work-scheduling runtime that keeps work on warm threads and cold threads asleep.
//!
//! A [`Pool`] runs closures on worker threads, each with its own LIFO deque, stealing from one
//! another when idle. What sets it apart is *who wakes*: the [`WakePolicy`] decides, on every
//! push, whether a sleeping worker is woken and which one, so that a pool under light or
//! bursty load does not pay a wake-up, a context switch and a CPU migration for almost every
//! job.
//!
//! ```
//! let pool = ember::Pool::builder()
//!     .threads(4)
//!     .wake(ember::WakePolicy::Searching)
//!     .name("db-build")
//!     .build()?;
//!
//! let (a, b) = pool.join(|| (1..=1000u64).sum::<u64>(), || 42);
//! assert_eq!((a, b), (500_500, 42));
//!
//! let mut parts = vec![0u64; 8];
//! pool.scope(|s| {
//!     for (i, part) in parts.iter_mut().enumerate() {
//!         s.spawn(move |_| *part = i as u64 * 10);
//!     }
//! });
//! assert_eq!(parts.iter().sum::<u64>(), 280);
//!
//! pool.spawn(|| println!("fire and forget"));
//! pool.wait_idle();
//! println!("{:?}", pool.stats());
//! # Ok::<(), ember::BuildError>(())
//! ```
//!
//! Coming from rayon: the free functions ([`join`], [`scope`], [`spawn`], [`broadcast`], …)
//! and the builder keep rayon-core's names; the differences are listed in the README
//! ("Coming from rayon") and, one line each, in the docs of the items concerned.
//!
//! For a serial producer feeding a channel, [`biased::spawn_consumers`] is the same idea
//! without a pool: consumer 0 takes the items, and each consumer wakes the next only when
//! it is overloaded.
//!
//! # Choosing a wake policy
//!
//! Measured with `cargo run --release -p ember-lab` on a 2-core Linux VM (medians of 5 runs;
//! worker counts above 2 are oversubscription, not scaling). Context switches are voluntary +
//! involuntary, whole process.
//!
//! | workload | Searching (default) | Biased { batch: 20 } | Eager | best peer |
//! | --- | --- | --- | --- | --- |
//! | producer-consumer, 3 pools × 2 workers, 1000 items each: context switches | 379 | 455 | 1,163 | 384 (crossbeam-channel, batched) |
//! | producer-consumer, 3 pools × 8 workers, 4000 items each: context switches | 848 | 1,191 | 3,725 | 1,106 (crossbeam-channel) |
//! | light load, a job per ms: CPU of the pool's own threads | 5.1 ms/s | 5.3 ms/s | 5.3 ms/s | 7.2 ms/s (crossbeam-channel); rayon 77 ms/s |
//! | one token passed round a ring, 2 workers: context switches | 313 | 10 | 76 | 5,294 (tokio) |
//! | `join` of two 200 ms halves on an idle 2-worker pool | 200 ms | 400 ms | 204 ms | — |
//!
//! In the producer-consumer rows the machine is saturated (three producers and their pools on
//! two cores), and most switches are the kernel's time slicing: the experiment's `floor` row,
//! the same producer and consumer threads doing the same work with no queue at all, has 194
//! and 324.
//!
//! [`WakePolicy::Biased`] keeps work on the lowest-numbered threads: a chain of jobs stays on
//! one thread (the ring row), and with a single producer-fed pool on the machine it has the
//! fewest switches of all (1 pool × 2 workers, 1000 items: 52, Searching 63, best peer 95).
//! But by design it runs coarse fork-join serially and lets a blocked job hold up the jobs
//! queued behind it. [`WakePolicy::Searching`] has no such failure mode and matches or beats
//! the best peer in every row above, so it is the default; pick `Biased` for a dedicated pool
//! fed chains or streams of small jobs. [`WakePolicy::Eager`] is the channel-like baseline
//! the other two are measured against.
//!
//! # Modules
//!
//! | module | holds |
//! | --- | --- |
//! | `pool` | [`Pool`], [`PoolBuilder`], [`Scope`], [`ScopeFifo`]: the worker loop, `join`, `scope`, `spawn_fifo`, `broadcast`, the free functions on the current pool |
//! | `wake` | [`WakePolicy`] and the wake protocols (`wake/README.md`) |
//! | `park` | per-worker parking and the sleeper set that decides who wakes |
//! | [`biased`] | the standalone biased consumer over any blocking queue |
//! | `task` | [`Task`], [`Event`], [`TaskBuilder`]: dependent tasks, forward permits, delay-kick |
//! | [`flow`] | access-declared tasks: dependency inference on a scheduler thread fed by a double-buffered queue |
//! | [`iter`] | parallel iterators and sorts on the current pool ([`prelude`]: `use ember::prelude::*;`) |
//! | `trace` | [`Trace`]: per-thread event recording and Chrome trace export |
//! | `stats` | [`PoolStats`] |
#![warn(missing_docs)]

pub mod biased;
mod error;
pub mod flow;
pub mod iter;
mod park;
mod pool;
mod stats;
mod sync;
mod task;
mod trace;
mod wake;

pub use error::BuildError;
pub use iter::prelude;
pub use pool::{
    broadcast, current_num_threads, current_thread_index, in_place_scope, in_place_scope_fifo,
    join, scope, scope_fifo, spawn, spawn_fifo, yield_local, yield_now, BroadcastContext, Pool,
    PoolBuilder, Scope, ScopeFifo, Yield,
};
pub use stats::{PoolStats, WorkerStats};
pub use task::{Dependency, Event, Task, TaskBuilder, TaskError};
pub use trace::{Trace, TraceEvent, TraceKind};
pub use wake::WakePolicy;
