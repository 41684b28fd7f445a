//! What users call: `join`, `scope`, `spawn`, `broadcast`, `parallel_for` and `wait_idle` on a pool,
//! and the free functions that act on the ambient pool (`ambient.rs`). Each runs on the
//! workers through `workers/` and waits through its latches (`jobs/`).

pub(crate) mod ambient;
pub(crate) mod broadcast;
pub(crate) mod join;
pub(crate) mod parallel_for;
pub(crate) mod scope;
pub(crate) mod spawn;
pub(crate) mod wait_idle;
