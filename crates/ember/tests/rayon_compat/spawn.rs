//! `spawn` and `spawn_fifo` (rayon-core `spawn/test.rs`, and the spawn tests of
//! `thread_pool/test.rs`).

use std::any::Any;
use std::sync::mpsc::{channel, Sender};
use std::sync::Mutex;
use std::time::Duration;

use super::{assert_nested_orders, pool};

#[test]
fn a_job_spawned_inside_a_scope_runs() {
    let (tx, rx) = channel();
    ember::scope(move |_| ember::spawn(move || tx.send(22).unwrap()));
    assert_eq!(rx.recv().unwrap(), 22);
}

#[test]
fn a_job_spawned_outside_every_pool_runs() {
    let (tx, rx) = channel();
    ember::spawn(move || tx.send(22).unwrap());
    assert_eq!(rx.recv().unwrap(), 22);
    let (tx, rx) = channel();
    ember::spawn_fifo(move || tx.send(23).unwrap());
    assert_eq!(rx.recv().unwrap(), 23);
}

/// A pool whose panic handler sends every payload's message on a channel.
fn pool_reporting_panics() -> (ember::Pool, std::sync::mpsc::Receiver<String>) {
    let (tx, rx) = channel();
    let tx = Mutex::new(tx);
    let pool = ember::Pool::builder()
        .panic_handler(move |payload: Box<dyn Any + Send>| {
            let message = payload
                .downcast_ref::<&str>()
                .map_or("not a &str", |message| message);
            tx.lock().unwrap().send(message.to_owned()).unwrap();
        })
        .build()
        .unwrap();
    (pool, rx)
}

#[test]
fn the_panic_handler_gets_a_spawned_job_s_panic() {
    let (pool, panics) = pool_reporting_panics();
    pool.spawn(|| panic!("Hello, world!"));
    pool.spawn_fifo(|| panic!("Hello, world!"));
    assert_eq!(panics.recv().unwrap(), "Hello, world!");
    assert_eq!(panics.recv().unwrap(), "Hello, world!");
}

/// Jobs spawned with the free functions from inside a pool's job belong to that pool, and
/// so go to its panic handler.
#[test]
fn nested_spawns_use_the_pool_s_panic_handler() {
    const PANICS: usize = 3;
    let (pool, panics) = pool_reporting_panics();
    pool.spawn(|| {
        for _ in 0..PANICS {
            ember::spawn(|| panic!("Hello, world!"));
        }
    });
    for _ in 0..PANICS {
        assert_eq!(panics.recv().unwrap(), "Hello, world!");
    }
}

/// Differs from rayon, which aborts the process when a spawned job panics and the pool has
/// no panic handler: ember counts the panic in `PoolStats::panics`, and the worker lives on.
#[test]
fn a_panic_without_a_handler_is_counted_and_the_worker_lives() {
    let pool = pool(1);
    pool.spawn(|| panic!("counted, not fatal"));
    pool.spawn_fifo(|| panic!("counted, not fatal"));
    pool.wait_idle();
    assert_eq!(pool.stats().panics, 2);
    assert_eq!(pool.install(|| 7), 7, "the only worker still runs jobs");
}

/// A job still running when the last handle is dropped keeps running and may spawn more,
/// which run too. Differs from rayon, whose drop returns at once: dropping ember's last
/// handle outside the pool waits until every queued job has run, so when `drop` returns
/// the nested spawn has run already.
#[test]
fn jobs_outlive_the_dropped_handle_and_still_spawn() {
    let (go_tx, go_rx) = channel::<u32>();
    let (done_tx, done_rx) = channel();
    let pool = pool(2);
    pool.spawn(move || {
        let data = go_rx.recv().unwrap();
        ember::spawn(move || done_tx.send(data).unwrap());
    });
    let sender = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(20));
        go_tx.send(22).unwrap();
    });
    drop(pool);
    assert_eq!(
        done_rx.try_recv(),
        Ok(22),
        "drop waited for the nested spawn"
    );
    sender.join().unwrap();
}

/// Spawns from inside a one-thread pool (so nothing is stolen): 10 outer jobs, each
/// spawning 10 inner ones; each kind LIFO (`spawn`) or FIFO (`spawn_fifo`).
fn spawn_order(outer_fifo: bool, inner_fifo: bool) -> Vec<i32> {
    fn spawn_kind(fifo: bool, f: impl FnOnce() + Send + 'static) {
        if fifo {
            ember::spawn_fifo(f)
        } else {
            ember::spawn(f)
        }
    }
    let (tx, rx) = channel();
    pool(1).install(move || {
        for i in 0..10 {
            let tx = tx.clone();
            spawn_kind(outer_fifo, move || {
                for j in 0..10 {
                    let tx = tx.clone();
                    spawn_kind(inner_fifo, move || tx.send(i * 10 + j).unwrap());
                }
            });
        }
    });
    rx.iter().collect()
}

#[test]
fn spawns_run_newest_first_and_fifo_spawns_oldest_first() {
    assert_nested_orders(spawn_order);
}

/// `spawn` and `spawn_fifo` interleaved on one worker: the FIFO jobs (negative) take the
/// places of their indirections in the LIFO order, exactly as in rayon.
#[test]
fn interleaved_spawns_run_in_rayon_s_order() {
    fn mixed(positive_fifo: bool) -> Vec<i32> {
        fn send(fifo: bool, tx: &Sender<i32>, i: i32) {
            let tx = tx.clone();
            if fifo {
                ember::spawn_fifo(move || tx.send(i).unwrap());
            } else {
                ember::spawn(move || tx.send(i).unwrap());
            }
        }
        let (tx, rx) = channel();
        pool(1).install(move || {
            for i in 0..4 {
                send(positive_fifo, &tx, i);
                if i < 3 {
                    send(!positive_fifo, &tx, -(i + 1));
                }
            }
        });
        rx.iter().collect()
    }
    assert_eq!(mixed(false), [3, -1, 2, -2, 1, -3, 0]);
    assert_eq!(mixed(true), [0, -3, 1, -2, 2, -1, 3]);
}

/// `Pool::spawn` and `Pool::spawn_fifo` from one of the pool's own workers.
#[test]
fn pool_spawns_from_inside_the_pool_keep_their_order() {
    fn order(fifo: bool) -> Vec<i32> {
        let pool = pool(1);
        let (tx, rx) = channel();
        pool.install(|| {
            for i in 0..10 {
                let tx = tx.clone();
                let job = move || tx.send(i).unwrap();
                if fifo {
                    pool.spawn_fifo(job);
                } else {
                    pool.spawn(job);
                }
            }
        });
        drop(tx);
        rx.iter().collect()
    }
    assert_eq!(order(false), (0..10).rev().collect::<Vec<_>>());
    assert_eq!(order(true), (0..10).collect::<Vec<_>>());
}
