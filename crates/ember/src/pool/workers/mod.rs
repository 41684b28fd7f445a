//! The workers and their queues: the state one pool's workers share (`registry.rs`), the
//! worker loop (`worker.rs`), and what each worker keeps besides its deque: successors held
//! for delay-kick (`held.rs`), private `join` halves (`private_halves.rs`), `spawn_fifo` jobs
//! (`fifo.rs`); how long it spins (`spin.rs`), how it and other threads wait (`wait.rs`), and
//! the pool's alarm thread for deferred wake-ups (`alarm_thread.rs`).

pub(crate) mod alarm_thread;
pub(crate) mod fifo;
pub(crate) mod held;
pub(crate) mod private_halves;
pub(crate) mod registry;
pub(crate) mod spin;
pub(crate) mod wait;
pub(crate) mod worker;
