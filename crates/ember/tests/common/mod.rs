//! Helpers shared by the pool test files: the wake policies every test runs under, a pool
//! built with one of them, a deadlock watchdog, and a loop of `join`s whose first half waits
//! for its second outside ember.

// Each test file is its own crate and uses only some of these.
#![allow(dead_code)]

pub mod jacobi;
pub mod tracked;

use ember::{Pool, WakePolicy};

/// Every wake policy, named for failure messages.
pub fn policies() -> Vec<(&'static str, WakePolicy)> {
    vec![
        ("Eager", WakePolicy::Eager),
        ("Searching", WakePolicy::Searching),
        ("Biased { batch: 20 }", WakePolicy::Biased { batch: 20 }),
        ("Biased { batch: 1 }", WakePolicy::Biased { batch: 1 }),
    ]
}

/// The policies that wake a sleeper for a job pushed on a worker's own deque (all but
/// Biased, which leaves such a job to its pusher by design): for tests whose job blocks
/// outside ember on work it pushed.
pub fn unbiased_policies() -> Vec<(&'static str, WakePolicy)> {
    policies()
        .into_iter()
        .filter(|(_, policy)| !matches!(policy, WakePolicy::Biased { .. }))
        .collect()
}

/// A pool of `threads` workers under `policy`, otherwise as the builder's defaults make it
/// (under Searching that defers spawned jobs' wake-ups, `Tuning::defer_wakeups`).
pub fn pool(policy: WakePolicy, threads: usize) -> Pool {
    Pool::builder()
        .threads(threads)
        .wake(policy)
        .build()
        .expect("valid configuration")
}

/// A pool of `threads` workers under `policy` that defers spawned jobs' wake-ups if `defer`
/// (`Tuning::defer_wakeups`).
pub fn pool_deferring(policy: WakePolicy, threads: usize, defer: bool) -> Pool {
    Pool::builder()
        .threads(threads)
        .wake(policy)
        .tuning(ember::Tuning::new().defer_wakeups(defer))
        .build()
        .expect("valid configuration")
}

/// How long a test waits for progress before it declares a deadlock. A deadlock detector,
/// not a timing threshold: everything it guards finishes in milliseconds.
pub const DEADLOCK: std::time::Duration = std::time::Duration::from_secs(60);

/// Runs `f` on its own thread and returns its result; panics, naming `what`, if `f` has not
/// returned within [`DEADLOCK`] (the thread is left behind, hung). A panic of `f` is re-raised.
pub fn no_deadlock<R: Send + 'static>(what: &str, f: impl FnOnce() -> R + Send + 'static) -> R {
    let (tx, rx) = std::sync::mpsc::channel();
    let handle = std::thread::spawn(move || {
        let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f));
        let _ = tx.send(());
        result
    });
    match rx.recv_timeout(DEADLOCK) {
        Ok(()) => match handle.join().expect("the runner catches panics") {
            Ok(value) => value,
            Err(payload) => std::panic::resume_unwind(payload),
        },
        Err(_) => panic!("{what}: no progress in {DEADLOCK:?}: deadlock"),
    }
}

/// The message of a caught panic's payload (`&str` or `String`), empty for other payloads.
pub fn message(payload: &(dyn std::any::Any + Send)) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_default()
}

/// How many `join`s `blocked_joins` makes: `EMBER_BLOCKED_JOINS`, 20,000 by default (CI runs
/// a release build with more).
pub fn blocked_join_count() -> u64 {
    std::env::var("EMBER_BLOCKED_JOINS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(20_000)
}

/// `joins` `join`s on the current pool, each with a first half that waits outside ember (on a
/// channel) for what its second half sends: only another worker can run the second half.
pub fn blocked_joins(joins: u64, what: &str) {
    for _ in 0..joins {
        let (tx, rx) = std::sync::mpsc::channel();
        let (got, ()) = ember::join(
            move || rx.recv().expect("the second half sends"),
            move || tx.send(7u32).expect("the first half receives"),
        );
        assert_eq!(got, 7, "{what}");
    }
}

/// Chains of short links on an otherwise idle pool, until one owes a wake-up (at most
/// `tries`): the first spawn that would owe one starts the alarm's thread instead, and
/// spawns owe only once that thread watches the alarm. Returns the pool's counters.
pub fn chains_until_one_defers(pool: &Pool, tries: usize) -> ember::PoolStats {
    for _ in 0..tries {
        std::thread::sleep(std::time::Duration::from_millis(5));
        let (tx, rx) = std::sync::mpsc::channel();
        let handle = pool.clone();
        pool.spawn(move || short_link(handle, 200, tx));
        rx.recv().unwrap();
        if pool.stats().deferred_wakeups > 0 {
            break;
        }
    }
    pool.stats()
}

/// Runs chains on `pool`, a pool that defers, until one owes a wake-up, and checks that one
/// did (on Linux; elsewhere, with no alarm, that none did): its alarm's thread, started by
/// the first spawn that would owe one, then watches, and what follows may owe.
pub fn watch_the_alarm(pool: &Pool, what: &str) {
    // Elsewhere than on Linux no try can defer: one chain shows it.
    let tries = if cfg!(target_os = "linux") { 50 } else { 1 };
    let stats = chains_until_one_defers(pool, tries);
    // The alarm is a Linux `timerfd`: elsewhere nothing is deferred.
    assert_eq!(
        stats.deferred_wakeups > 0,
        cfg!(target_os = "linux"),
        "{what}: the alarm's thread did not start: {stats:?}"
    );
}

/// One link of a chain of links that end as soon as they have spawned the next.
fn short_link(pool: Pool, left: u64, done: std::sync::mpsc::Sender<()>) {
    if left == 0 {
        // Let go of the pool first, so that the caller's handle can be the last one.
        drop(pool);
        done.send(()).unwrap();
        return;
    }
    let next = pool.clone();
    pool.spawn(move || short_link(next, left - 1, done));
}

/// Keeps one worker of `pool` busy: spawns a job that spins until the returned `release` is
/// called, and returns once that job runs.
pub fn occupy_a_worker(pool: &Pool) -> impl Fn() + Send + Sync + 'static {
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::{Arc, Barrier};
    let (started, busy) = (Arc::new(Barrier::new(2)), Arc::new(AtomicBool::new(true)));
    pool.spawn({
        let (started, busy) = (started.clone(), busy.clone());
        move || {
            started.wait();
            while busy.load(Ordering::SeqCst) {
                std::hint::spin_loop();
            }
        }
    });
    started.wait();
    move || busy.store(false, Ordering::SeqCst)
}

/// `fib(n)` by the ambient `ember::join`, with no cut-off.
pub fn fib(n: u64) -> u64 {
    if n < 2 {
        return n;
    }
    let (a, b) = ember::join(|| fib(n - 1), || fib(n - 2));
    a + b
}

/// Under every policy, with 1, 2 and 7 workers, a pool from `pool` gives `fib(22)` and a
/// parallel sum their serial values.
pub fn fork_join_results_match(pool: impl Fn(WakePolicy, usize) -> Pool) {
    use ember::prelude::*;
    for (name, policy) in policies() {
        for threads in [1, 2, 7] {
            let pool = pool(policy, threads);
            assert_eq!(
                pool.install(|| fib(22)),
                17_711,
                "{name}, {threads} workers"
            );
            let sum: u64 = pool.install(|| (0..100_000u64).into_par_iter().map(|x| x % 7).sum());
            assert_eq!(
                sum,
                (0..100_000u64).map(|x| x % 7).sum(),
                "{name}, {threads}"
            );
        }
    }
}

/// The processors the calling thread may run on.
#[cfg(target_os = "linux")]
pub fn affinity() -> Vec<usize> {
    // SAFETY: `cpu_set_t` is plain data, valid all zeroes.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: `set` is a writable `cpu_set_t` of the size passed; pid 0 is this thread.
    let rc =
        unsafe { libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) };
    assert_eq!(rc, 0, "sched_getaffinity failed");
    (0..8 * std::mem::size_of::<libc::cpu_set_t>())
        // SAFETY: `cpu` is below the set's bit count.
        .filter(|&cpu| unsafe { libc::CPU_ISSET(cpu, &set) })
        .collect()
}

/// Whether this system lets a thread pin itself to `cpu` (tried on a throwaway thread).
#[cfg(target_os = "linux")]
pub fn can_pin(cpu: usize) -> bool {
    std::thread::spawn(move || {
        // SAFETY: `cpu_set_t` is plain data, valid all zeroes.
        let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
        // SAFETY: `cpu` is an allowed processor, below the set's bit count.
        unsafe { libc::CPU_SET(cpu, &mut set) };
        // SAFETY: `set` is a valid `cpu_set_t` of the size passed; pid 0 is this thread.
        unsafe { libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) == 0 }
    })
    .join()
    .expect("the probe thread")
}

/// Moves the calling thread to processor `cpu`.
#[cfg(target_os = "linux")]
pub fn pin_to(cpu: usize) {
    // SAFETY: `cpu_set_t` is plain data, valid all zeroes.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: `cpu` is an allowed processor, below the set's bit count.
    unsafe { libc::CPU_SET(cpu, &mut set) };
    // SAFETY: `set` is a valid `cpu_set_t` of the size passed; pid 0 is this thread.
    let rc = unsafe { libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) };
    assert_eq!(rc, 0, "sched_setaffinity to processor {cpu} failed");
}

/// Every wake policy with each of `threads` workers, named for failure messages.
pub fn pools_of(threads: &[usize]) -> Vec<(String, Pool)> {
    let mut pools = Vec::new();
    for (name, policy) in policies() {
        for &n in threads {
            pools.push((format!("{name}, {n} workers"), pool(policy, n)));
        }
    }
    pools
}

/// Runs `parallel` inside each of `pools` and checks it gives `expected`.
pub fn on_pools<R: PartialEq + std::fmt::Debug + Send>(
    pools: &[(String, Pool)],
    expected: &R,
    parallel: impl Fn() -> R + Sync,
) {
    for (name, pool) in pools {
        let got = pool.install(&parallel);
        assert_eq!(&got, expected, "on a pool with {name}");
    }
}

/// Every wake policy with 1, 2 and 4 workers, built once per test binary for all its
/// properties.
pub fn every_pool() -> &'static [(String, Pool)] {
    static POOLS: std::sync::OnceLock<Vec<(String, Pool)>> = std::sync::OnceLock::new();
    POOLS.get_or_init(|| pools_of(&[1, 2, 4]))
}

/// Runs `parallel` on every pool of [`every_pool`] and checks it gives `expected`.
pub fn on_every_pool<R: PartialEq + std::fmt::Debug + Send>(
    expected: &R,
    parallel: impl Fn() -> R + Sync,
) {
    on_pools(every_pool(), expected, parallel);
}

/// Runs `check` on every pool of [`every_pool`], with the pool's name.
pub fn check_on_every_pool(check: impl Fn(&str) + Sync) {
    for (name, pool) in every_pool() {
        pool.install(|| check(name));
    }
}
