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
//! | you run | pick | why |
//! | --- | --- | --- |
//! | anything, or you don't know yet | [`WakePolicy::Searching`] (the default) | it has no workload it handles badly: coarse `join` halves run in parallel at once, a job blocked on a sibling it spawned is not stuck behind it, and a push wakes a sleeper only when nobody is already searching |
//! | a dedicated pool fed chains or streams of small jobs | [`WakePolicy::Biased`] | work stays on the lowest-numbered threads and the others sleep: the fewest switches when one pool owns the machine |
//! | a baseline to compare against | [`WakePolicy::Eager`] | a wake-up per push that finds a sleeper, as a channel-fed pool does |
//!
//! `Searching` is the default because it has no failure mode, not because it wins every
//! table: `Biased` keeps a chain of jobs on one thread (a token passed round a ring on two
//! workers, or a chain of spawns, costs it fewer context switches than `Searching` pays,
//! which wakes a sleeper for a spawned successor its spawner is about to run itself: the
//! lab's `cycle` table with p = 2 and `micro`'s chained spawn give the current figures), but
//! by design it runs coarse fork-join serially (`join` of two 200 ms halves on an idle pool:
//! 400 ms, against 200 ms; `examples/idle_cost.rs` times it under the default) and lets a job
//! that blocks hold up the jobs queued behind it. The numbers behind
//! this, for every policy against rayon, crossbeam, tokio, chili and Go, are the lab's:
//! `cargo run --release -p ember-lab` prints them (the `micro`, `cycle`, `light-load` and
//! `producer-consumer` tables), with a claims table that says, with confidence intervals,
//! where ember leads and where it trails. On a machine with fewer cores than workers the lab
//! says so: more workers than cores is oversubscription, not scaling.
//!
//! # The cost of a `join`
//!
//! On a pool of several workers a [`join`] offers its second half on the worker's deque and
//! pops it back (rayon's path). The pop carries a `SeqCst` fence, as in rayon. The push must
//! be ordered before its wake-up check too: that is what lets the first half wait for the
//! second outside ember (a channel the second half sends on); without it the wake-up for the
//! half can be lost to a worker going to sleep, and the `join` hangs (`wake/README.md`,
//! "Pushing"; rayon documents that such a `join` may deadlock). Under the default policy,
//! on Linux, the push pays only a compiler fence for that, and a worker about to sleep
//! pays a process-wide barrier (`membarrier`) instead, only while some worker has pushed a
//! half since it last slept ("Light pushes" in the same README); under Eager, and where the
//! system has no such barrier, the push carries a `SeqCst` fence, which makes a `join` on
//! two workers take 15–38 % longer. A worker whose
//! half was stolen spins for it before sleeping, without taking the place of a worker
//! searching for pushed work. A pool of one worker, which has no thief, keeps the half on a
//! private list: no atomic operation, no fence. [`PoolBuilder::lazy_joins`] does the same on
//! bigger pools while every worker is busy, at the costs its docs name (chili's crate makes
//! the same trade with a heartbeat thread; ember needs none). The lab's `micro` fork-join
//! (`fib(30)`) and tree-sum tables, with 1 and 2 workers, measure each path against rayon and
//! chili, and its claims table states the verdict per table.
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
