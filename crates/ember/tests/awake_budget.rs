//! The awake-core budget shared by a process's pools (`wake/README.md`, "Budget"): it must
//! never keep a pool's queued jobs from a worker for good, nor lose or repeat a job.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Barrier};
use std::time::Duration;

use ember::{Pool, Tuning};

mod budget_fork;
use budget_fork::pool;

/// Keeps every worker of `pool` busy spinning until `stop` is set: one job per worker, each
/// respawning itself, so the pool always has queued work and every worker awake.
fn saturate(pool: &Pool, stop: &Arc<AtomicBool>) {
    fn spin(pool: Pool, stop: Arc<AtomicBool>) {
        let until = std::time::Instant::now() + Duration::from_micros(200);
        while std::time::Instant::now() < until {
            std::hint::spin_loop();
        }
        if !stop.load(Ordering::Relaxed) {
            let p = pool.clone();
            pool.spawn(move || spin(p, stop));
        }
    }
    for _ in 0..pool.current_num_threads() * 2 {
        let (p, s) = (pool.clone(), stop.clone());
        pool.spawn(move || spin(p, s));
    }
}

/// A pool whose jobs block (here on each other, as jobs blocked on I/O or a lock hold their
/// workers) still runs `threads` of them at once beside two saturated pools: a wake-up the
/// budget withholds because the blocked workers count as awake is made after the bound.
/// Without the bound the barrier below would never open.
#[test]
fn blocked_jobs_run_threads_at_once_beside_two_saturated_pools() {
    let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
    let threads = cores.max(2);
    let stop = Arc::new(AtomicBool::new(false));
    let busy = [pool(cores, "busy-a"), pool(cores, "busy-b")];
    for p in &busy {
        saturate(p, &stop);
    }
    let sleepy = pool(threads, "sleepy");
    for round in 0..3 {
        let barrier = Arc::new(Barrier::new(threads + 1));
        let ran = Arc::new(AtomicUsize::new(0));
        for _ in 0..threads {
            let (b, r) = (barrier.clone(), ran.clone());
            sleepy.spawn(move || {
                r.fetch_add(1, Ordering::SeqCst);
                // Opens only once every job of this round runs at once.
                b.wait();
            });
        }
        barrier.wait();
        sleepy.wait_idle();
        assert_eq!(ran.load(Ordering::SeqCst), threads, "round {round}");
    }
    stop.store(true, Ordering::Relaxed);
    for p in &busy {
        p.wait_idle();
    }
}

/// Three pools, each fed from two outside threads and from its own jobs (spawns and joins),
/// run every job exactly once: counted in and out per pool.
#[test]
fn three_pools_count_every_item_in_and_out() {
    const PER_FEEDER: usize = 2_000;
    let pools: Vec<Pool> = (0..3).map(|i| pool(2, &format!("count-{i}"))).collect();
    let ins: Vec<Arc<AtomicUsize>> = (0..3).map(|_| Arc::new(AtomicUsize::new(0))).collect();
    let outs: Vec<Arc<AtomicUsize>> = (0..3).map(|_| Arc::new(AtomicUsize::new(0))).collect();
    std::thread::scope(|s| {
        for (i, p) in pools.iter().enumerate() {
            for _ in 0..2 {
                let (p, inn, out) = (p.clone(), ins[i].clone(), outs[i].clone());
                s.spawn(move || {
                    for n in 0..PER_FEEDER {
                        inn.fetch_add(1, Ordering::SeqCst);
                        let (p2, inn2, out2) = (p.clone(), inn.clone(), out.clone());
                        p.spawn(move || {
                            out2.fetch_add(1, Ordering::SeqCst);
                            if n % 4 == 0 {
                                // A job that spawns another, and one that joins.
                                inn2.fetch_add(1, Ordering::SeqCst);
                                let out3 = out2.clone();
                                p2.spawn(move || {
                                    out3.fetch_add(1, Ordering::SeqCst);
                                });
                            } else if n % 4 == 1 {
                                inn2.fetch_add(2, Ordering::SeqCst);
                                ember::join(
                                    || out2.fetch_add(1, Ordering::SeqCst),
                                    || out2.fetch_add(1, Ordering::SeqCst),
                                );
                            }
                        });
                    }
                });
            }
        }
    });
    for (i, p) in pools.iter().enumerate() {
        p.wait_idle();
        let (inn, out) = (
            ins[i].load(Ordering::SeqCst),
            outs[i].load(Ordering::SeqCst),
        );
        assert_eq!(inn, out, "pool {i}: {inn} in, {out} out");
        assert!(inn >= 2 * PER_FEEDER);
    }
}

/// Pools come and go while others work: each pool's jobs all run, and a pool built with the
/// budget off runs beside them the same way.
#[test]
fn pools_joining_and_leaving_lose_nothing() {
    let steady = pool(2, "steady");
    let counted = Arc::new(AtomicUsize::new(0));
    for round in 0..20 {
        let transient = Pool::builder()
            .threads(2)
            .tuning(Tuning::new().awake_budget(round % 2 == 0))
            .build()
            .expect("pool");
        let mine = Arc::new(AtomicUsize::new(0));
        for _ in 0..100 {
            let (c, m) = (counted.clone(), mine.clone());
            steady.spawn(move || {
                c.fetch_add(1, Ordering::SeqCst);
            });
            transient.spawn(move || {
                m.fetch_add(1, Ordering::SeqCst);
            });
        }
        drop(transient); // runs every queued job first
        assert_eq!(mine.load(Ordering::SeqCst), 100, "round {round}");
    }
    steady.wait_idle();
    assert_eq!(counted.load(Ordering::SeqCst), 2_000);
}
