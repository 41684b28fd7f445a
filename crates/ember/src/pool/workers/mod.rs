//! The workers and their queues: the state one pool's workers share (`registry.rs`), the
//! worker loop (`worker.rs`), and what each worker keeps besides its deque: successors held
//! for delay-kick (`held.rs`), lazy joins' state (`lazy_joins.rs`) over the private `join`
//! halves (`private_halves.rs`), the wake-up it may owe (`owed_wake.rs`), `spawn_fifo` jobs
//! (`fifo.rs`); how long it spins (`spin.rs`), how it and other threads wait (`wait.rs`), and
//! the pool's alarm thread for deferred wake-ups (`alarm_thread.rs`).

pub(crate) mod alarm_thread;
pub(crate) mod fifo;
pub(crate) mod held;
pub(crate) mod lazy_joins;
pub(crate) mod owed_wake;
pub(crate) mod private_halves;
pub(crate) mod registry;
pub(crate) mod spin;
pub(crate) mod wait;
pub(crate) mod worker;
