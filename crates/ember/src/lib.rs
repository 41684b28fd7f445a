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
//! For a serial producer feeding a channel, [`biased::spawn_consumers`] is the same idea
//! without a pool: consumer 0 takes the items, and each consumer wakes the next only when
//! it is overloaded.
//!
//! # Coming from rayon
//!
//! Code written against rayon ports by changing imports: `rayon::` becomes `ember::`, as in
//! this program, rayon's but for its imports:
//!
//! ```
//! use ember::prelude::*;
//! use ember::ThreadPoolBuilder;
//!
//! let pool = ThreadPoolBuilder::new()
//!     .num_threads(4)
//!     .thread_name(|i| format!("worker-{i}"))
//!     .build()
//!     .unwrap();
//! let sum: u64 = pool.install(|| (1..101u64).into_par_iter().map(|x| x * x).sum());
//! assert_eq!(sum, 338_350);
//! let (a, b) = ember::join(|| 1, || 2);
//! assert_eq!(a + b, 3);
//! ```
//!
//! | rayon | ember | what differs |
//! | --- | --- | --- |
//! | `join`, `scope`, `scope_fifo`, `in_place_scope`, `in_place_scope_fifo`, `spawn`, `spawn_fifo`, `broadcast`, `yield_now`, `yield_local`, `current_num_threads`, `current_thread_index`, `max_num_threads` | the same names in `ember::` | nothing |
//! | `Scope`, `ScopeFifo`, `BroadcastContext`, `Yield` | the same names | nothing |
//! | `ThreadPoolBuilder` | `ThreadPoolBuilder`: rayon's methods (`num_threads`, `thread_name`, `stack_size`, `start_handler`, `exit_handler`, `panic_handler`, `build`, `build_global`) and meanings | the build errors below |
//! | `ThreadPool` | `ThreadPool`, another name for `Pool` (`install`, `join`, `scope`, `scope_fifo`, `in_place_scope(_fifo)`, `spawn`, `spawn_fifo`, `broadcast`, `current_num_threads`, `current_thread_index`, `yield_now`, `yield_local`) | a cheap `Clone` handle; dropping it waits (below) |
//! | `ThreadPoolBuildError` | `ThreadPoolBuildError`, another name for `BuildError` | an enum to match on; its message (`Display` and `Debug`) says what to change |
//! | `RAYON_NUM_THREADS` | `EMBER_NUM_THREADS` | a value that is not a number is an error |
//! | `use rayon::prelude::*;` | `use ember::prelude::*;` | a subset of rayon's iterators, listed in `ember::iter` |
//! | `rayon::iter::plumbing` | `ember::iter::plumbing` | ember's own, smaller traits: a rayon `Producer` or `Consumer` is rewritten, not ported |
//! | `join_context`, `spawn_broadcast`, `Scope::spawn_broadcast`, `spawn_handler`, `build_scoped`, `use_current_thread`, `breadth_first`, `current_thread_has_pending_tasks` | not provided | ember starts its workers itself and never adopts the calling thread |
//!
//! `Pool::builder()` (`PoolBuilder`) is ember's own builder, with ember's settings (the wake
//! policy, a name prefix, deferred wake-ups, lazy joins, pinning); it spells rayon's
//! `num_threads(n)` as `threads(n)`.
//!
//! Where ember deliberately differs, and why:
//!
//! | what | rayon | ember | why |
//! | --- | --- | --- | --- |
//! | `PoolBuilder::threads(0)` | (`num_threads(0)`) one thread per CPU | `BuildError::ZeroThreads`; leave `threads` unset for one per CPU (`ThreadPoolBuilder::num_threads(0)` keeps rayon's meaning) | a zero computed by mistake should not become every CPU |
//! | more than 65,535 threads | builds 65,535 | `BuildError::TooManyThreads` | a request that cannot be met is reported, not trimmed |
//! | `EMBER_NUM_THREADS` not a number | ignored | `BuildError::NumThreadsVar` from `ThreadPoolBuilder::build` and either `build_global`; the global pool built on first use says so on stderr and uses one thread per CPU | a typo in the environment is seen |
//! | `EMBER_MACHINE_BUDGET` other than `1`, `0` or empty | (no such variable) | `BuildError::MachineBudgetVar` from `build`, unless the pool's `Tuning` says whether it joins; the global pool says so on stderr and joins no machine-wide budget | a typo in the environment is seen, and never stops the global pool |
//! | `PoolBuilder::build` without `threads` | (`build` without `num_threads`) `RAYON_NUM_THREADS`, else one thread per CPU | one thread per CPU: the variable sizes only the global pool and `ThreadPoolBuilder`'s pools | a pool sized in code is not resized by the environment |
//! | a spawned job panics, no panic handler | the process aborts | the panic is counted in `PoolStats::panics`, the worker lives on | one job's panic does not end the process; the count shows it |
//! | the last handle is dropped | returns at once; the workers stop later | outside the pool: runs every queued job (and what running jobs still spawn), then returns once every worker and its exit handler is done; on a worker: starts the shutdown and returns | when `drop` returns, the threads and what the exit handlers release are gone |
//! | the `thread_name` closure panics | the threads started so far are stopped | `build` re-raises the panic before any thread starts | every name is made before any thread starts |
//! | a thread name holds a NUL byte | panics | `BuildError::ThreadName`, naming the worker | an error to handle, not a panic |
//! | a build fails | handlers may have run | no start or exit handler runs | no user code runs in a pool that never existed |
//! | the error type | an opaque struct | `BuildError`, an enum; `{:?}` prints its message too | `.unwrap()` and `?` from `main` say what to change |
//! | `WakePolicy::Biased` (opt-in) | no such policy | keeps coarse `join` halves on one worker until it is overloaded | the fewest threads awake for chains of small jobs; the default, `Searching`, runs halves in parallel as rayon does |
//! | a `join` made while every worker is busy (Linux) | its second half is pushed on the deque | kept private (no push, no fence); a worker about to sleep still steals it (`Tuning::lazy_joins`) | cheaper joins; a first half may still wait for its second outside ember. `lazy_joins(false)` gives rayon's path; `sequential_joins_unchecked(true)` (opt-in) runs most such joins as two plain calls, and then the halves must never wait for each other |
//! | a job spawned onto its worker's empty deque (Linux, default policy) | wakes a sleeper | owes the wake-up to the spawner's next push, or 100 µs, kept by one more thread per pool, `NAME-alarm` (`Tuning::defer_wakeups`) | the spawner usually runs it next itself: fewer wake-ups and context switches on chains of spawns |
//!
//! # Choosing a wake policy
//!
//! | you run | pick | why |
//! | --- | --- | --- |
//! | anything, or you don't know yet | [`WakePolicy::Searching`] (the default) | it has no workload it handles badly: coarse `join` halves run in parallel at once, a job blocked on a sibling it spawned is not stuck behind it, and a push wakes a sleeper only when nobody is already searching |
//! | a dedicated pool fed chains or streams of small jobs | [`WakePolicy::Biased`] | work stays on the lowest-numbered threads and the others sleep: the fewest switches when one pool owns the machine |
//! | a baseline to compare against | [`WakePolicy::Eager`] | a wake-up per push that finds a sleeper, as a channel-fed pool does |
//!
//! `Searching` is the default because it has no failure mode, not because it is fastest
//! everywhere. A job that spawns its successor and ends would wake a sleeper that finds
//! nothing, or steals the chain away to a cold core. So by default a spawn onto the
//! worker's empty deque owes that wake-up until the spawner's next scheduling point, or
//! 100 µs ([`Tuning::defer_wakeups`](crate::Tuning::defer_wakeups), Linux). Chains of spawns then stay on one thread.
//! The hazard: the successor of a job that spawns and runs on waits the 100 µs, plus the
//! alarm's latency, before anybody is woken for it. Once the alarm has had to wake for a
//! worker, that worker's next 16 owing spawns wake at once, so such a job holds a successor
//! about once in 17 spawns. `defer_wakeups(false)` wakes at the push. `Biased` keeps chains
//! and streams of jobs on the fewest threads without a timer. By design it runs coarse
//! fork-join serially (`join` of two 200 ms halves on an idle pool takes 400 ms;
//! `examples/idle_cost.rs` times it), and a job that blocks holds up those queued behind it.
//! Whatever the policy, a woken worker starts only when the kernel runs it. On a virtual
//! machine that may be after its waker's job, on the waker's processor;
//! [`PoolBuilder::pin_workers`] pins each worker to its own processor.
//!
//! The lab (`cargo run --release -p ember-lab`) measures every policy against rayon,
//! crossbeam, tokio, chili and Go, and checks ember's claims with confidence intervals; its
//! recorded figures are in `crates/ember-lab/MEASUREMENTS.md`. On a machine with fewer cores
//! than workers it says so: more workers than cores is oversubscription, not scaling.
//!
//! # The cost of a `join`
//!
//! Under the defaults on Linux a [`join`] made while every worker is busy keeps its second
//! half on a private stack of its worker's ([`Tuning::lazy_joins`](crate::Tuning::lazy_joins)). Nobody would take
//! it, so it is pushed and popped with no atomic read-modify-write and no fence. The next
//! `join` made while some worker wants work offers the private halves on the deque. A
//! worker about to sleep steals the oldest private half of a worker that has not offered
//! it: its first half runs long, or blocks on that very half outside ember. The steal sits
//! behind a process-wide barrier (`membarrier`) that the owner never pays (`wake/README.md`,
//! "Private steals"). chili's crate makes the same trade with a heartbeat; lazy joins need
//! no timer and no extra thread.
//!
//! An offered half goes on the worker's deque and is popped back (rayon's path). The pop
//! carries a `SeqCst` fence, as in rayon. The push must also be ordered before its wake-up
//! check. That lets the first half wait for the second outside ember, say on a channel the
//! second half sends on. Without it the wake-up can be lost to a worker going to sleep, and
//! the `join` hangs (`wake/README.md`, "Pushing"; rayon documents that
//! such a `join` may deadlock). Under the default policy on Linux the push pays only a
//! compiler fence. A worker about to sleep then pays the process-wide barrier, while some
//! worker has pushed a half since it last slept ("Light pushes" in the same README). Under
//! Eager, and where the system has no such barrier, the push carries a `SeqCst` fence.
//! Without the barrier a pool of several workers offers every half: lazy joins are off
//! there, as a half could not be stolen. A worker whose half was stolen spins for it before
//! sleeping, without taking the place of a worker searching for pushed work.
//!
//! A private half still costs a push, a pop and the job's frame. Code whose first halves
//! never wait for their second halves may opt into [`Tuning::sequential_joins_unchecked`](crate::Tuning::sequential_joins_unchecked): a
//! `join` made while no worker wants work, below three halves already kept for thieves, then
//! runs its closures as two plain calls, as most of chili's do. Fine recursion over data
//! that misses the cache gains most. The hazard: two halves that wait for each other (or for
//! what the other spawned) hang there.
//!
//! # Modules
//!
//! | module | holds |
//! | --- | --- |
//! | `pool` | [`Pool`], [`PoolBuilder`], [`Scope`], [`ScopeFifo`], rayon's names ([`ThreadPool`], [`ThreadPoolBuilder`], [`ThreadPoolBuildError`]): the worker loop, `join`, `scope`, `spawn_fifo`, `broadcast`, the free functions on the current pool |
//! | `wake` | [`WakePolicy`] and the wake protocols (`wake/README.md`) |
//! | `park` | per-worker parking and the sleeper set that decides who wakes |
//! | [`biased`] | the standalone biased consumer over any blocking queue |
//! | `task` | [`Task`], [`Event`], [`TaskBuilder`]: dependent tasks, forward permits, delay-kick |
//! | [`flow`] | access-declared tasks: dependency inference on a scheduler thread fed by a double-buffered queue |
//! | [`iter`] | parallel iterators and sorts on the current pool ([`prelude`]: `use ember::prelude::*;`), and their [`plumbing`](iter::plumbing) |
//! | `trace` | [`Trace`]: per-thread event recording and Chrome trace export |
//! | `stats` | [`PoolStats`] |
#![warn(missing_docs)]
#![deny(clippy::undocumented_unsafe_blocks, unsafe_op_in_unsafe_fn)]

pub mod biased;
mod budget;
mod config;
mod error;
pub mod flow;
pub mod iter;
#[cfg(all(test, loom))]
mod loom;
mod park;
mod pool;
mod stats;
mod sync;
mod task;
mod trace;
mod wake;

mod paths;
pub use paths::{
    array, collections, option, range, range_inclusive, result, slice, str, string, vec,
};

pub use config::Tuning;
pub use error::BuildError;
pub use iter::prelude;
pub use pool::{
    broadcast, current_num_threads, current_thread_index, in_place_scope, in_place_scope_fifo,
    join, max_num_threads, scope, scope_fifo, spawn, spawn_fifo, yield_local, yield_now,
    BroadcastContext, Pool, PoolBuilder, Scope, ScopeFifo, ThreadPool, ThreadPoolBuildError,
    ThreadPoolBuilder, Yield,
};
pub use stats::{PoolStats, WorkerStats};
pub use task::{Dependency, Event, Task, TaskBuilder, TaskError};
pub use trace::{Trace, TraceEvent, TraceKind};
pub use wake::WakePolicy;
