//! The loom models of ember's concurrent protocols, one file per protocol.
//!
//! Run them all with
//! `RUSTFLAGS="--cfg loom" CARGO_TARGET_DIR=target/loom cargo test -p ember --release --lib loom`.

mod biased;
mod broadcast;
mod deferred;
mod delay_kick;
mod fifo;
mod lifecycle;
mod light_push;
mod local_push;
pub(crate) mod model_deque;
mod private_halves;
mod sleep;
pub(crate) mod support;
mod task;
mod wait_list;
