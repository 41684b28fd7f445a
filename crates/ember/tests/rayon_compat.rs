//! The behaviours rayon-core's own unit tests check, checked on ember: what a rayon user
//! relies on when switching imports. One file per area, each test named for the behaviour;
//! where ember deliberately differs from rayon, the test asserts ember's documented behaviour
//! and its doc says why.
//!
//! | file | area |
//! | --- | --- |
//! | `join.rs` | `join`: results, panics, sorting, many joins |
//! | `scope.rs` | `scope`, `scope_fifo`, `in_place_scope`: borrowing, panics, LIFO/FIFO order, stack use |
//! | `spawn.rs` | `spawn`, `spawn_fifo`: running, order, panics and the panic handler, pool drop |
//! | `broadcast.rs` | `broadcast`: every worker once, in order, across pools, panics, sleepers |
//! | `thread_pool.rs` | the pool: install, mutual install, nested pools, handlers, names, yield, build errors |
//! | `stress.rs` | FIFO spawns and broadcasts under load, every item counted in and out |
//!
//! Not ported, because ember has no such API: `join_context`, `spawn_broadcast` (and
//! `Scope::spawn_broadcast`), `spawn_handler`/`build_scoped`/`use_current_thread`,
//! `breadth_first`, the deprecated `Configuration`.

mod common;

#[path = "rayon_compat/broadcast.rs"]
mod broadcast;
#[path = "rayon_compat/join.rs"]
mod join;
#[path = "rayon_compat/scope.rs"]
mod scope;
#[path = "rayon_compat/spawn.rs"]
mod spawn;
#[path = "rayon_compat/stress.rs"]
mod stress;
#[path = "rayon_compat/thread_pool.rs"]
mod thread_pool;

/// A pool of `threads` workers with the default policy.
fn pool(threads: usize) -> ember::Pool {
    ember::Pool::builder()
        .threads(threads)
        .build()
        .expect("valid configuration")
}

/// `len` pseudo-random numbers (xorshift; the tests need variety, not quality).
fn random_u32s(len: usize, seed: u64) -> Vec<u32> {
    let mut x = seed | 1;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x >> 32) as u32
        })
        .collect()
}
