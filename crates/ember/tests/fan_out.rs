//! A burst reaches the sleepers through a tree of wake-ups, read from the trace: every worker
//! of a parked 16-worker pool gets one of 16 jobs spawned by one of them, each wake-up is made
//! by a worker of the pool before that worker starts its own job, and every worker is reached
//! within eight steps of wake-ups from the spawner, where a waker's k-th wake-up puts its
//! wakee k steps further than the waker (a chain, each woken worker waking the next, takes
//! 15; so does a spawner waking all 15 itself).
//!
//! The spawner runs on a processor of its own and the other workers share a second one: with
//! 16 threads on two processors, woken workers would otherwise preempt the spawner between
//! its pushes, and a burst pushed over hundreds of microseconds is a trickle, which no rule can
//! fan out (each push then finds the last woken worker done searching, and wakes one more).

// The spawner's processor of its own is set through Linux's affinity calls.
#![cfg(target_os = "linux")]

use std::collections::HashMap;
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use ember::{Pool, TraceEvent, TraceKind};

mod common;
use common::{affinity, pin_to};

const WORKERS: usize = 16;
/// A chain takes 15 steps, a binary tree 7. The spawner wakes up to three searchers at steps
/// 1 to 3, each holding a share as wide as its own fan-out (README, "Backlog"); each fans
/// out to step 7 at most, handing shares of what it cannot make (README, "Fan-out"). Wakers
/// choose all their wakees before unparking any, and the shares count the fan-outs of
/// searchers still on their way, so the tree does not depend on which wakee the kernel runs
/// first; the margin is for jobs a waker counts before the spawner has pushed them all.
const MOST_STEPS: usize = 8;

/// Blocks until `WORKERS` jobs have started, so that no worker can take two: each job needs a
/// worker of its own, and only wake-ups bring the parked ones.
fn burst_job(started: Arc<(Mutex<usize>, Condvar)>) {
    let (count, all) = &*started;
    let mut count = count.lock().unwrap();
    *count += 1;
    all.notify_all();
    let deadline = Instant::now() + Duration::from_secs(20);
    while *count < WORKERS {
        let left = deadline.saturating_duration_since(Instant::now());
        assert!(!left.is_zero(), "only {} of {WORKERS} jobs started", *count);
        count = all.wait_timeout(count, left).unwrap().0;
    }
}

/// Waits until the pool's debug dump shows every worker asleep, twice in a row.
fn wait_until_all_parked(pool: &Pool) {
    let deadline = Instant::now() + Duration::from_secs(20);
    let mut quiet = 0;
    while quiet < 2 {
        assert!(
            Instant::now() < deadline,
            "workers never all slept: {pool:?}"
        );
        std::thread::sleep(Duration::from_millis(50));
        let dump = format!("{pool:?}");
        quiet = if dump.matches("state: sleeping").count() == WORKERS {
            quiet + 1
        } else {
            0
        };
    }
}

/// Lets every worker park, then has one of them spawn `WORKERS` jobs and waits for them.
fn burst(pool: &Pool, spawner_cpu: usize) {
    wait_until_all_parked(pool);
    let started = Arc::new((Mutex::new(0), Condvar::new()));
    let spawner_pool = pool.clone();
    let (done_tx, done_rx) = std::sync::mpsc::channel();
    pool.spawn(move || {
        pin_to(spawner_cpu);
        for _ in 0..WORKERS {
            let started = Arc::clone(&started);
            spawner_pool.spawn(move || burst_job(started));
        }
        done_tx.send(()).unwrap();
    });
    done_rx.recv_timeout(Duration::from_secs(20)).unwrap();
    pool.wait_idle();
}

#[test]
fn a_burst_reaches_every_sleeper_through_a_tree() {
    let cpus = affinity();
    if cpus.len() < 2 {
        eprintln!("skipped: one processor allowed, so the spawner cannot push undisturbed");
        return;
    }
    let (spawner_cpu, others_cpu) = (cpus[0], cpus[1]);
    let pool = Pool::builder()
        .threads(WORKERS)
        .trace(true)
        .start_handler(move |_| pin_to(others_cpu))
        .build()
        .unwrap();
    // A first burst starts what a pool starts lazily (the alarm's thread, at the first spawn
    // that owes a wake-up), so that the measured one is not held up by a thread's creation.
    burst(&pool, spawner_cpu);
    let _ = pool.trace();
    burst(&pool, spawner_cpu);
    let events = pool.trace().events().to_vec();

    let tasks: Vec<&TraceEvent> = events
        .iter()
        .filter(|e| e.kind == TraceKind::Task)
        .collect();
    assert_eq!(
        tasks.len(),
        WORKERS + 1,
        "the spawner's job and the burst: {tasks:?}"
    );
    let spawner = tasks[0];
    let burst = &tasks[1..];
    // Each worker ran one job of the burst: its start, by worker.
    let mut job_start: HashMap<usize, u64> = HashMap::new();
    for job in burst {
        assert!(
            job_start.insert(job.worker, job.start_ns).is_none(),
            "worker {} ran two jobs of the burst",
            job.worker
        );
    }
    assert_eq!(job_start.len(), WORKERS);

    // The wake-ups of the burst: each parked worker but the spawner's was woken once for it.
    let wakes: Vec<&TraceEvent> = events
        .iter()
        .filter(|e| e.kind == TraceKind::Wake && e.start_ns >= spawner.start_ns)
        .collect();
    let mut woken: HashMap<usize, &TraceEvent> = HashMap::new();
    for wake in &wakes {
        assert!(
            woken.insert(wake.worker, wake).is_none(),
            "worker {} woken twice in the burst: {wakes:?}",
            wake.worker
        );
    }
    assert_eq!(woken.len(), WORKERS - 1, "{wakes:?}");
    assert!(!woken.contains_key(&spawner.worker));

    // Each wake-up was made by a worker of the pool, before that worker started its job.
    let mut made_by: HashMap<usize, Vec<(u64, usize)>> = HashMap::new();
    for wake in woken.values() {
        let waker = wake
            .woken_by
            .expect("a burst wake-up made outside the pool");
        let at = wake.woken_at_ns.expect("a traced wake-up without its time");
        assert!(
            at <= job_start[&waker],
            "worker {waker} woke worker {} at {at} ns, after starting its job at {} ns",
            wake.worker,
            job_start[&waker]
        );
        made_by.entry(waker).or_default().push((at, wake.worker));
    }

    // Hops from the spawner, and steps, where a waker's k-th wake-up puts its wakee k steps
    // further than the waker.
    let mut hops: HashMap<usize, usize> = HashMap::from([(spawner.worker, 0)]);
    let mut steps: HashMap<usize, usize> = HashMap::from([(spawner.worker, 0)]);
    let mut frontier = vec![spawner.worker];
    while let Some(waker) = frontier.pop() {
        let mut wakees = made_by.remove(&waker).unwrap_or_default();
        wakees.sort();
        for (k, (_, wakee)) in wakees.into_iter().enumerate() {
            hops.insert(wakee, hops[&waker] + 1);
            steps.insert(wakee, steps[&waker] + k + 1);
            frontier.push(wakee);
        }
    }
    assert!(
        made_by.is_empty(),
        "wake-ups by workers nobody woke: {made_by:?}"
    );
    assert_eq!(hops.len(), WORKERS);
    let deepest = hops.values().copied().max().unwrap();
    let longest = steps.values().copied().max().unwrap();
    eprintln!("the burst reached {WORKERS} workers in {deepest} hops, {longest} steps");
    assert!(
        longest <= MOST_STEPS,
        "the burst took {longest} steps ({deepest} hops) of wake-ups to reach every worker: \
         {steps:?}"
    );
}
