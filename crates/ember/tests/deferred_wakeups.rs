//! Deferred wake-ups of spawned jobs (`Tuning::defer_wakeups` under Searching): a spawn
//! onto the spawner's empty deque owes its wake-up until the spawner's next scheduling point,
//! or until the pool's alarm makes it.

mod common;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

use ember::{Pool, WakePolicy};

/// A job that spawns its successor and then blocks on it outside ember (a channel) never
/// reaches a scheduling point: only the alarm can make the wake-up its spawn owed, and the
/// successor must run on another worker, which sleeps. Hung with the alarm never set (a
/// debt that leaves it clear).
#[test]
fn a_spawner_blocked_on_its_successor_is_relieved() {
    // The default bound, one raised to the 10 µs floor, and a long one.
    let bounds = [None, Some(Duration::ZERO), Some(Duration::from_millis(1))];
    for (threads, bound) in [2, 3].into_iter().flat_map(|t| bounds.map(|b| (t, b))) {
        let pool = match bound {
            None => common::pool_deferring(WakePolicy::Searching, threads, true),
            Some(bound) => Pool::builder()
                .threads(threads)
                .tuning(ember::Tuning::new().defer_wakeups_for(bound))
                .build()
                .unwrap(),
        };
        common::no_deadlock("blocked spawner", move || {
            for round in 0..200u64 {
                if round % 50 == 0 {
                    // Every other worker spins out and sleeps: the spawn owes its wake-up.
                    std::thread::sleep(Duration::from_millis(5));
                }
                let (done_tx, done_rx) = mpsc::channel();
                let handle = pool.clone();
                pool.spawn(move || {
                    let (tx, rx) = mpsc::channel();
                    handle.spawn(move || tx.send(round).unwrap());
                    done_tx.send(rx.recv().unwrap()).unwrap();
                });
                assert_eq!(done_rx.recv().unwrap(), round);
            }
            let stats = pool.stats();
            assert!(stats.deferred_wakeups_made <= stats.deferred_wakeups);
        });
    }
}

/// One link of a chain: counts itself, then spawns the next (or reports); every 64th link
/// runs on for a while after its spawn, past the deferral's bound, so that the alarm makes
/// some owed wake-ups and the next link runs elsewhere meanwhile.
fn link(pool: Pool, chain: usize, left: u64, ran: Arc<Vec<AtomicU64>>, done: mpsc::Sender<usize>) {
    ran[chain].fetch_add(1, Ordering::Relaxed);
    if left == 0 {
        done.send(chain).unwrap();
        return;
    }
    let next = pool.clone();
    pool.spawn(move || link(next, chain, left - 1, ran, done));
    if left % 64 == 0 {
        let start = Instant::now();
        while start.elapsed() < Duration::from_micros(300) {
            std::hint::spin_loop();
        }
    }
}

/// One chain of 1,000 links on `pool` once its other workers have spun out and slept, every
/// link counted.
fn chain_on_an_idle_pool(pool: &Pool) {
    std::thread::sleep(Duration::from_millis(20));
    let ran = Arc::new(vec![AtomicU64::new(0)]);
    let (done_tx, done_rx) = mpsc::channel();
    let (next, counts) = (pool.clone(), Arc::clone(&ran));
    pool.spawn(move || link(next, 0, 999, counts, done_tx));
    done_rx.recv().unwrap();
    assert_eq!(ran[0].load(Ordering::Relaxed), 1_000);
}

/// Chains of spawns, several at once, every link counted in and out: none lost, none run
/// twice, on pools that defer and one that does not.
#[test]
fn chains_of_spawns_run_every_link_once() {
    const CHAINS: usize = 8;
    const LINKS: u64 = 2_000;
    for (name, threads, defer) in [
        ("2 workers", 2, true),
        ("3 workers", 3, true),
        ("4 workers", 4, true),
        ("2 workers, not deferring", 2, false),
    ] {
        let pool = Pool::builder()
            .threads(threads)
            .tuning(ember::Tuning::new().defer_wakeups(defer))
            .build()
            .unwrap();
        common::no_deadlock(name, move || {
            let ran: Arc<Vec<AtomicU64>> =
                Arc::new((0..CHAINS).map(|_| AtomicU64::new(0)).collect());
            let (done_tx, done_rx) = mpsc::channel();
            for chain in 0..CHAINS {
                let (next, ran, done) = (pool.clone(), Arc::clone(&ran), done_tx.clone());
                pool.spawn(move || link(next, chain, LINKS - 1, ran, done));
            }
            let mut finished: Vec<usize> = (0..CHAINS).map(|_| done_rx.recv().unwrap()).collect();
            finished.sort_unstable();
            assert_eq!(
                finished,
                (0..CHAINS).collect::<Vec<_>>(),
                "{name}: each chain once"
            );
            pool.wait_idle();
            for (chain, count) in ran.iter().enumerate() {
                assert_eq!(
                    count.load(Ordering::Relaxed),
                    LINKS,
                    "{name}: chain {chain}"
                );
            }
            let stats = pool.stats();
            if !defer {
                assert_eq!(stats.deferred_wakeups, 0, "{name}");
            }
            assert!(
                stats.deferred_wakeups_made <= stats.deferred_wakeups,
                "{name}"
            );
        });
    }
}

/// A default pool of two workers whose alarm is watched (spawns owe), with no wake-up the
/// alarm made yet, so that no worker's window of wake-ups made at once is open. (A link
/// preempted past the bound has the alarm make one: then a new pool is tried.)
fn watched_default_pool() -> Pool {
    for _ in 0..10 {
        let pool = Pool::builder().threads(2).build().unwrap();
        let stats = common::chains_until_one_defers(&pool, 50);
        // Elsewhere than on Linux nothing is deferred: any pool will do.
        let watched = stats.deferred_wakeups > 0 || !cfg!(target_os = "linux");
        if watched && stats.deferred_wakeups_made == 0 {
            return pool;
        }
    }
    panic!("ten pools in a row either never deferred or had a link preempted past the bound");
}

/// A chain on an otherwise idle pool owes the wake-ups its links' spawns would have made, by
/// default, once the first such spawn has started the alarm's thread; a pool told not to,
/// under another policy, or of one worker, never defers one.
#[test]
fn searching_pools_defer_unless_told_not_to() {
    common::watch_the_alarm(&Pool::builder().threads(2).build().unwrap(), "default");
    let chain = |pool: &Pool| {
        chain_on_an_idle_pool(pool);
        pool.stats()
    };
    common::watch_the_alarm(
        &common::pool_deferring(WakePolicy::Searching, 2, true),
        "defer_wakeups(true)",
    );
    assert_eq!(
        chain(&common::pool_deferring(WakePolicy::Searching, 2, false)).deferred_wakeups,
        0
    );
    assert_eq!(
        chain(&common::pool_deferring(WakePolicy::Eager, 2, true)).deferred_wakeups,
        0
    );
    assert_eq!(
        chain(&common::pool_deferring(WakePolicy::Searching, 1, true)).deferred_wakeups,
        0
    );
}

/// A bound past the ceiling is lowered to 1 s: its deadlines do not overflow (a debug build
/// would panic in the worker), a chain runs, and a blocked spawner is relieved after it.
#[test]
fn a_bound_past_the_ceiling_is_lowered_to_one_second() {
    let pool = Pool::builder()
        .threads(2)
        .tuning(ember::Tuning::new().defer_wakeups_for(Duration::MAX))
        .build()
        .unwrap();
    common::no_deadlock("1 s bound", move || {
        chain_on_an_idle_pool(&pool);
        let (tx, rx) = mpsc::channel();
        let handle = pool.clone();
        pool.spawn(move || {
            let (inner_tx, inner_rx) = mpsc::channel();
            handle.spawn(move || inner_tx.send(7).unwrap());
            tx.send(inner_rx.recv().unwrap()).unwrap();
        });
        assert_eq!(rx.recv().unwrap(), 7);
    });
}

/// Once the alarm has had to make a spawner's owed wake-up (the spawner ran on past the
/// bound), that worker's next spawns wake a sleeper at once instead of owing it again, so a
/// job that spawns and then runs on holds its successor for the bound once in so many
/// spawns, not at every spawn. Each round spawns a successor while the other worker sleeps,
/// then blocks on it outside ember; only the first round's spawn owes its wake-up (each
/// would, with every spawn left to owe).
#[test]
fn after_the_alarm_made_a_wake_up_the_next_spawns_wake_at_once() {
    const ROUNDS: u64 = 4;
    owes_once_on_a_watched_pool("spawner running on", |handle| {
        let me = ember::current_thread_index();
        for _ in 0..ROUNDS {
            // The other worker spins out and sleeps: a spawn now would wake it.
            std::thread::sleep(Duration::from_millis(20));
            let (tx, rx) = mpsc::channel();
            handle.spawn(move || tx.send(ember::current_thread_index()).unwrap());
            // No scheduling point while blocked here: the other worker runs it.
            assert_ne!(rx.recv().unwrap(), me);
        }
    });
}

/// Runs `rounds` as a job on a default pool whose alarm is watched, with a handle to that
/// pool, then checks that exactly one of the job's spawns owed its wake-up and that the
/// alarm (or the job) made it: none where nothing is deferred (not Linux).
fn owes_once_on_a_watched_pool(what: &'static str, rounds: impl FnOnce(&Pool) + Send + 'static) {
    common::no_deadlock(what, move || {
        let pool = watched_default_pool();
        let before = pool.stats();
        let handle = pool.clone();
        let (done_tx, done_rx) = mpsc::channel();
        pool.spawn(move || {
            rounds(&handle);
            done_tx.send(handle.stats()).unwrap();
        });
        let stats = done_rx.recv().unwrap();
        // The alarm is a Linux `timerfd`: elsewhere nothing is deferred.
        let owed = u64::from(cfg!(target_os = "linux"));
        let made = stats.deferred_wakeups_made - before.deferred_wakeups_made;
        assert_eq!(
            stats.deferred_wakeups - before.deferred_wakeups,
            owed,
            "{what}, owed: {stats:?}"
        );
        assert_eq!(made, owed, "{what}, made: {stats:?}");
    });
}

/// The window of wake-ups made at once after the alarm's counts only spawns that would have
/// owed one: a burst of spawns that find the other worker awake leaves it open. After the
/// alarm makes the first round's wake-up, a burst of 20 spawns uses one place of the 16
/// (its first job, which wakes the other worker and holds it until the burst is pushed, so
/// that no later spawn of the burst finds a sleeper), and the next round's spawn still
/// wakes at once and owes nothing.
#[test]
fn spawns_that_would_owe_nothing_leave_the_window_open() {
    const BURST: u64 = 20;
    owes_once_on_a_watched_pool("burst after the alarm", |handle| {
        // `jobs` spawns, the first of them held until all are pushed, then a wait for them
        // all outside ember (no scheduling point): the other worker runs them.
        let spawn_and_wait = |jobs: u64| {
            // The other worker spins out and sleeps: the first spawn would wake it.
            std::thread::sleep(Duration::from_millis(20));
            let (tx, rx) = mpsc::channel();
            let (release_tx, release_rx) = mpsc::channel::<()>();
            let first = tx.clone();
            handle.spawn(move || {
                release_rx.recv().unwrap();
                first.send(()).unwrap();
            });
            for _ in 1..jobs {
                let tx = tx.clone();
                handle.spawn(move || tx.send(()).unwrap());
            }
            release_tx.send(()).unwrap();
            for _ in 0..jobs {
                rx.recv().unwrap();
            }
        };
        spawn_and_wait(1);
        spawn_and_wait(BURST);
        spawn_and_wait(1);
    });
}

/// Whether this process has a thread named `name` (Linux: `/proc/self/task/*/comm`).
#[cfg(target_os = "linux")]
fn thread_named(name: &str) -> bool {
    std::fs::read_dir("/proc/self/task")
        .unwrap()
        .filter_map(|entry| std::fs::read_to_string(entry.ok()?.path().join("comm")).ok())
        .any(|comm| comm.trim_end() == name)
}

/// A pool starts the alarm's thread only at the first spawn that would owe a wake-up: one
/// that joins, scopes and takes spawns from outside never has it; a chain of spawns on it
/// starts it, and the pool's drop joins it.
#[cfg(target_os = "linux")]
#[test]
fn the_alarm_thread_starts_at_the_first_spawn_that_would_owe() {
    let pool = Pool::builder()
        .threads(2)
        .name("lazyalarm")
        .build()
        .unwrap();
    common::no_deadlock("lazy alarm thread", move || {
        let sum: u64 = pool.install(|| {
            let (a, b) = ember::join(|| 1u64, || 2u64);
            let mut c = 0;
            ember::scope(|s| s.spawn(|_| c = 3));
            a + b + c
        });
        assert_eq!(sum, 6);
        for _ in 0..100 {
            pool.spawn(|| {});
        }
        pool.wait_idle();
        assert!(
            !thread_named("lazyalarm-alarm"),
            "started without a spawn that owes"
        );
        common::watch_the_alarm(&pool, "lazy alarm thread");
        assert!(
            thread_named("lazyalarm-alarm"),
            "deferring without the alarm's thread"
        );
        // Every job's captures, the chains' pool handles among them, are dropped before
        // `wait_idle` returns: this handle is the last, and its drop joins the threads.
        pool.wait_idle();
        drop(pool);
        assert!(
            !thread_named("lazyalarm-alarm"),
            "the drop left the alarm's thread running"
        );
    });
}

/// `Cpus_allowed_list` of the thread named `name`, or of this one for `None`.
#[cfg(target_os = "linux")]
fn cpus_allowed(name: Option<&str>) -> Option<String> {
    let status = |dir: std::path::PathBuf| std::fs::read_to_string(dir.join("status")).ok();
    let text = match name {
        None => status("/proc/thread-self".into())?,
        Some(name) => std::fs::read_dir("/proc/self/task")
            .ok()?
            .filter_map(|entry| entry.ok().map(|entry| entry.path()))
            .find(|dir| {
                std::fs::read_to_string(dir.join("comm")).is_ok_and(|comm| comm.trim_end() == name)
            })
            .and_then(status)?,
    };
    text.lines()
        .find_map(|line| line.strip_prefix("Cpus_allowed_list:"))
        .map(|list| list.trim().to_owned())
}

/// The alarm's thread of a pool of pinned workers, started from one of them, may run on
/// every processor the pool was built on, not on that worker's one.
#[cfg(target_os = "linux")]
#[test]
fn the_alarm_thread_of_pinned_workers_is_not_pinned() {
    let pool = Pool::builder()
        .threads(2)
        .name("pinalarm")
        .pin_workers(true)
        .build()
        .unwrap();
    let built_on = cpus_allowed(None);
    common::no_deadlock("pinned workers' alarm", move || {
        common::watch_the_alarm(&pool, "pinned workers' alarm");
        assert_eq!(cpus_allowed(Some("pinalarm-alarm")), built_on);
    });
}
