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
//! | `names.rs` | rayon's spellings: `ThreadPoolBuilder` (`num_threads(0)` automatic), `ThreadPool`, `ThreadPoolBuildError`, `max_num_threads` |
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
#[path = "rayon_compat/names.rs"]
mod names;
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

/// Checks the log of 10 outer jobs each spawning 10 inner ones (`i * 10 + j`), made by
/// `order(outer_fifo, inner_fifo)` on one worker, for the four combinations of LIFO and FIFO
/// levels: a LIFO level runs its jobs newest first, a FIFO level oldest first.
fn assert_nested_orders(order: impl Fn(bool, bool) -> Vec<i32>) {
    let level = |fifo: bool| -> Vec<i32> {
        if fifo {
            (0..10).collect()
        } else {
            (0..10).rev().collect()
        }
    };
    for outer_fifo in [false, true] {
        for inner_fifo in [false, true] {
            let expected: Vec<i32> = level(outer_fifo)
                .into_iter()
                .flat_map(|i| level(inner_fifo).into_iter().map(move |j| i * 10 + j))
                .collect();
            assert_eq!(
                order(outer_fifo, inner_fifo),
                expected,
                "outer FIFO: {outer_fifo}, inner FIFO: {inner_fifo}"
            );
        }
    }
}

/// A scope of either kind, so that one test body covers `scope`/`spawn` and
/// `scope_fifo`/`spawn_fifo`.
#[derive(Clone, Copy)]
enum AnyScope<'a, 's> {
    Lifo(&'a ember::Scope<'s>),
    Fifo(&'a ember::ScopeFifo<'s>),
}

impl<'s> AnyScope<'_, 's> {
    /// Opens a scope, FIFO if `fifo`, on `pool` or (`None`) on the current pool.
    fn open<R: Send>(
        pool: Option<&ember::Pool>,
        fifo: bool,
        f: impl for<'b> FnOnce(AnyScope<'b, 's>) -> R + Send,
    ) -> R {
        match (pool, fifo) {
            (None, false) => ember::scope(|s| f(AnyScope::Lifo(s))),
            (None, true) => ember::scope_fifo(|s| f(AnyScope::Fifo(s))),
            (Some(pool), false) => pool.scope(|s| f(AnyScope::Lifo(s))),
            (Some(pool), true) => pool.scope_fifo(|s| f(AnyScope::Fifo(s))),
        }
    }

    /// `spawn` or `spawn_fifo`, as the scope's kind says.
    fn spawn(self, f: impl for<'b> FnOnce(AnyScope<'b, 's>) + Send + 's) {
        match self {
            AnyScope::Lifo(s) => s.spawn(move |s| f(AnyScope::Lifo(s))),
            AnyScope::Fifo(s) => s.spawn_fifo(move |s| f(AnyScope::Fifo(s))),
        }
    }
}
