//! Runs one of ember's hot paths a given number of times, for instruction counting:
//!
//! ```sh
//! cargo build --release -p ember --example hot_paths
//! valgrind --tool=callgrind --callgrind-out-file=/dev/null \
//!     target/release/examples/hot_paths join 200000
//! ```
//!
//! Run it at two counts and divide the difference of the totals by the difference of the
//! counts: that is the cost of one operation, with start-up and shut-down cancelled out.
//! Instruction counts are repeatable where wall time on a shared machine is not. The pool
//! has one worker so that no thief interleaves differently from run to run, with lazy joins
//! off (the offered path: a `join` made while some worker wants work, or any `join` where the
//! system has no heavy barrier) unless `EMBER_LAZY` is set (the private path, which the
//! default takes while every worker is busy).
//!
//! * `join N`: N calls of `ember::join` with empty halves, made from inside a pool job (the
//!   ambient pool: rayon's `rayon::join` inside `install`).
//! * `pool-join N`: the same through `Pool::join` on the pool's handle.
//! * `spawn N`: N `Pool::spawn`s of empty jobs from inside a pool job (onto the worker's own
//!   deque), then `wait_idle`.
//! * `spawn-outside N`: the same, spawned from the main thread (onto the global queue).
//! * `chain N`: a chain of N jobs, each spawning the next as its last act (the lab's
//!   chained spawn on one worker): a spawn, a look for work and a run per link.

use std::hint::black_box;

fn main() {
    let mut args = std::env::args().skip(1);
    let (what, n) = match (args.next(), args.next().map(|n| n.parse::<u64>())) {
        (Some(what), Some(Ok(n))) => (what, n),
        _ => {
            eprintln!("usage: hot_paths join|pool-join|spawn|spawn-outside|chain N");
            std::process::exit(2);
        }
    };
    let pool = ember::Pool::builder()
        .threads(1)
        .tuning(ember::Tuning::new().lazy_joins_unchecked(std::env::var_os("EMBER_LAZY").is_some()))
        .build()
        .expect("a one-thread pool");
    match what.as_str() {
        "join" => pool.install(|| {
            for i in 0..n {
                black_box(ember::join(|| black_box(i), || black_box(i + 1)));
            }
        }),
        "pool-join" => {
            let inner = pool.clone();
            pool.join(
                move || {
                    for i in 0..n {
                        black_box(inner.join(|| black_box(i), || black_box(i + 1)));
                    }
                },
                || (),
            );
        }
        "spawn" => {
            let inner = pool.clone();
            pool.spawn(move || {
                for _ in 0..n {
                    inner.spawn(|| {
                        black_box(());
                    });
                }
            });
            pool.wait_idle();
        }
        "spawn-outside" => {
            for _ in 0..n {
                pool.spawn(|| {
                    black_box(());
                });
            }
            pool.wait_idle();
        }
        "chain" => {
            let inner = pool.clone();
            pool.spawn(move || link(inner, n));
            pool.wait_idle();
        }
        other => {
            eprintln!("unknown hot path `{other}`: join, pool-join, spawn, spawn-outside or chain");
            std::process::exit(2);
        }
    }
}

/// One link of `chain`: spawns the next while any are left.
fn link(pool: ember::Pool, left: u64) {
    if left > 0 {
        let next = pool.clone();
        pool.spawn(move || link(next, black_box(left - 1)));
    }
}
