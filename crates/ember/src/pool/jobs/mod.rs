//! Jobs and what they end with: the type-erased job a queue holds and the frames that run it
//! (`job.rs`), the per-thread cache of spawned jobs' blocks (`cache.rs`), the latches a
//! waiter waits on (`latch.rs`), and how a panic of user code is contained (`unwind.rs`).

pub(crate) mod cache;
pub(crate) mod job;
pub(crate) mod latch;
pub(crate) mod unwind;
