//! FIFO spawns and broadcasts under load, for every wake policy: several external threads at
//! once spawn FIFO jobs from outside and from inside jobs, open FIFO scopes with nested FIFO
//! spawns, and broadcast from outside and from inside a job, pausing now and then so that
//! workers fall asleep between bursts. Every item has its own slot, so once the drivers are
//! done and the pool is idle each must have run exactly once (a lost FIFO indirection, a
//! broadcast job run twice or stranded, would show here or hang the test).

use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::Arc;
use std::time::Duration;

use ember::{Pool, ScopeFifo};

use super::common::{no_deadlock, policies, pool};

const THREADS: usize = 4;
const DRIVERS: usize = 3;
const ROUNDS: usize = 100;
const FIFO_SPAWNS: usize = 50;
const FAN_OUT: usize = 20;
const SCOPE_JOBS: usize = 20;
/// Items per round: FIFO spawns from outside, a fan-out from inside a job, scope jobs and
/// their nested jobs, and two broadcasts.
const PER_ROUND: usize = FIFO_SPAWNS + FAN_OUT + 2 * SCOPE_JOBS + 2 * THREADS;

struct Tally(Vec<AtomicU8>);

impl Tally {
    fn mark(&self, item: usize) {
        self.0[item].fetch_add(1, Ordering::Relaxed);
    }
}

/// One driver's rounds, over its own block of item numbers.
fn drive(pool: &Pool, tally: &Arc<Tally>, driver: usize) {
    for round in 0..ROUNDS {
        let base = (driver * ROUNDS + round) * PER_ROUND;
        let mut item = base..base + PER_ROUND;
        for _ in 0..FIFO_SPAWNS {
            let (tally, item) = (Arc::clone(tally), item.next().unwrap());
            pool.spawn_fifo(move || tally.mark(item));
        }
        let fan_out: Vec<usize> = item.by_ref().take(FAN_OUT).collect();
        let fan_tally = Arc::clone(tally);
        pool.spawn(move || {
            for item in fan_out {
                let tally = Arc::clone(&fan_tally);
                ember::spawn_fifo(move || tally.mark(item));
            }
        });
        let scope_items: Vec<(usize, usize)> = (0..SCOPE_JOBS)
            .map(|_| (item.next().unwrap(), item.next().unwrap()))
            .collect();
        pool.scope_fifo(|s: &ScopeFifo<'_>| {
            for &(outer, nested) in &scope_items {
                s.spawn_fifo(move |s| {
                    tally.mark(outer);
                    s.spawn_fifo(move |_| tally.mark(nested));
                });
            }
        });
        let outside = item.next().unwrap();
        pool.broadcast(|ctx| tally.mark(outside + ctx.index()));
        let inside = outside + THREADS;
        pool.install(|| ember::broadcast(|ctx| tally.mark(inside + ctx.index())));
        if round % 10 == 9 {
            std::thread::sleep(Duration::from_millis(2)); // let the workers fall asleep
        }
    }
}

fn stress(name: &'static str, policy: ember::WakePolicy) {
    no_deadlock(name, move || {
        let pool = pool(policy, THREADS);
        let items = DRIVERS * ROUNDS * PER_ROUND;
        let tally = Arc::new(Tally((0..items).map(|_| AtomicU8::new(0)).collect()));
        std::thread::scope(|t| {
            for driver in 0..DRIVERS {
                let (pool, tally) = (&pool, &tally);
                t.spawn(move || drive(pool, tally, driver));
            }
        });
        pool.wait_idle();
        let wrong: Vec<(usize, u8)> = (0..items)
            .map(|item| (item, tally.0[item].load(Ordering::Relaxed)))
            .filter(|&(_, runs)| runs != 1)
            .take(10)
            .collect();
        assert!(
            wrong.is_empty(),
            "{name}: items not run exactly once: {wrong:?}"
        );
    });
}

#[test]
fn fifo_spawns_and_broadcasts_under_load() {
    for (name, policy) in policies() {
        stress(name, policy);
    }
}
