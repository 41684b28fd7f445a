//! Successor hold: how long a job spawned by a parent that then runs on waits before it
//! starts, on a pool whose other workers sleep. A pool that keeps a spawned job back for its
//! spawner (tokio's LIFO slot, ember's deferred wake-up, a biased queue) must not let a long
//! parent hold it hostage: tokio's LIFO slot did, and users measured 20× slowdowns (tokio
//! issue 4941, <https://github.com/tokio-rs/tokio/issues/4941>).
//!
//! Each of `parents` parents is spawned from outside on an idle pool (the measuring thread
//! waits `GAP` between parents, so every other worker has gone back to sleep). It notes the
//! time, spawns one successor, and spins for `PARENT` (1 ms) without reaching a scheduling
//! point. The successor reports how long after its spawn it started. `hold_max_us` and
//! `hold_median_us` are the longest and the median of a run's holds; `ns_per_op` is the mean
//! hold. ember rows also give `longest_deferral_us`, as in every `micro` table. The
//! `ember-deferred-1ms` row's bound equals the parent's run, so there the alarm and the
//! parent's end land together: that row shows the cost of a long bound, not the bound at
//! work.
//!
//! A hold's floor is the kernel's. On a virtual machine whose idle processors read as
//! preempted to the guest (`vcpu_is_preempted`), the scheduler may queue a woken worker on
//! its waker's busy processor rather than the idle one, and it then waits out the whole
//! parent: `perf sched record` shows `sched_migrate_task` moving the woken worker to the
//! spawner's processor, and every system's `hold_max_us`, rayon's included, near the
//! parent's run in such runs. The `ember-pinned` row (`pin_workers(true)`) pins each worker
//! to its own processor, where the kernel must wake it.
//!
//! The `floor` row measures that floor with no pool: a parent thread hands each successor
//! over a channel to a thread parked on it, which is woken as a pool wakes a sleeping worker,
//! and spins as the parents do. Its `hold_max_us` is what the kernel alone makes the longest
//! hold on this machine; a pool's longest hold above it is the pool's own.

use super::*;

/// How long each parent runs after spawning its successor.
const PARENT: Duration = Duration::from_millis(1);

/// The pause between parents: long enough for every worker to spin out and sleep.
const GAP: Duration = Duration::from_millis(2);

/// The rows: every ember policy, the rows that vary deferral, the pinned row, rayon and tokio, and the floor.
pub(super) fn hold_group(s: Sizes) -> Group {
    let parents = s.hold_parents;
    Group {
        title: format!(
            "successor hold: {parents} parents each spawn one successor, then run {} µs, {} threads",
            PARENT.as_micros(),
            s.threads
        ),
        params: params([
            (crate::tables::key::BENCHMARK, crate::tables::benchmark::SUCCESSOR_HOLD.into()),
            ("threads", s.threads.into()),
            ("parents", parents.into()),
        ]),
        trials: ember_trials(move |policy| hold_ember(s, policy))
            .into_iter()
            .chain(EmberPolicy::trials(&[EmberPolicy::Pinned], move |policy| {
                hold_ember(s, policy)
            }))
            .chain([
                trial(systems::RAYON, move || hold_rayon(s)),
                trial(systems::TOKIO, move || hold_tokio(s)),
                trial(systems::FLOOR, move || hold_floor(s)),
            ])
            .collect(),
    }
}

/// A parent's body: spawns, through `spawn`, a successor that reports its hold on `tx`, then
/// spins for [`PARENT`].
fn parent(spawn: impl FnOnce(Box<dyn FnOnce() + Send>), tx: Sender<Duration>) {
    let start = Instant::now();
    spawn(Box::new(move || {
        let _ = tx.send(start.elapsed());
    }));
    while start.elapsed() < PARENT {
        std::hint::spin_loop();
    }
}

/// Starts `parents` parents one by one through `start` and collects their holds.
fn measure(parents: usize, system: &str, mut start: impl FnMut(Sender<Duration>)) -> Metrics {
    let (tx, rx) = crossbeam_channel::unbounded();
    let mut holds = Vec::with_capacity(parents);
    for _ in 0..parents {
        std::thread::sleep(GAP);
        start(tx.clone());
        holds.push(recv_or_die(&rx, "successor hold"));
    }
    // Every successor reported once: each parent's one `tx` clone went to its successor.
    drop(tx);
    assert!(
        rx.recv_timeout(TIMEOUT).is_err(),
        "micro: successor hold on {system}: a successor reported twice"
    );
    holds.sort();
    let micros = |d: Duration| d.as_secs_f64() * 1e6;
    let total: Duration = holds.iter().sum();
    let mut metrics = rate(parents as u64, total);
    metrics.insert("hold_max_us".into(), micros(holds[parents - 1]));
    metrics.insert("hold_median_us".into(), micros(holds[parents / 2]));
    metrics
}

fn hold_ember(s: Sizes, policy: EmberPolicy) -> Metrics {
    let pool = policy.build(s.threads, "micro");
    let metrics = measure(s.hold_parents, policy.system().name, |tx| {
        let handle = pool.clone();
        pool.spawn(move || parent(|successor| handle.spawn(successor), tx));
    });
    finish_ember(pool, metrics)
}

fn hold_rayon(s: Sizes) -> Metrics {
    with_rayon(s.threads, |pool| {
        measure(s.hold_parents, "rayon", |tx| {
            pool.spawn(move || parent(rayon::spawn, tx));
        })
    })
}

fn hold_tokio(s: Sizes) -> Metrics {
    let rt = tokio_runtime(s.threads, "micro-tokio");
    let metrics = measure(s.hold_parents, "tokio", |tx| {
        rt.spawn(async move {
            parent(
                |successor| {
                    tokio::spawn(async move { successor() });
                },
                tx,
            )
        });
    });
    drop(rt);
    metrics
}

/// The floor (module doc): two threads and no pool. The parent thread runs each parent; its
/// successor goes over a channel to the other thread, parked on that channel, which runs it.
fn hold_floor(s: Sizes) -> Metrics {
    type Successor = Box<dyn FnOnce() + Send>;
    let (to_parent, parents) = crossbeam_channel::unbounded::<Sender<Duration>>();
    let (to_successor, successors) = crossbeam_channel::unbounded::<Successor>();
    let successor_thread = std::thread::Builder::new()
        .name("hold-successor".into())
        .spawn(move || successors.iter().for_each(|successor| successor()))
        .expect("micro: successor hold: could not start the floor's successor thread");
    let parent_thread = std::thread::Builder::new()
        .name("hold-parent".into())
        .spawn(move || {
            for tx in parents {
                parent(
                    |successor| {
                        to_successor
                            .send(successor)
                            .expect("micro: successor hold: the floor's successor thread died");
                    },
                    tx,
                );
            }
        })
        .expect("micro: successor hold: could not start the floor's parent thread");
    let metrics = measure(s.hold_parents, systems::FLOOR.name, |tx| {
        to_parent
            .send(tx)
            .expect("micro: successor hold: the floor's parent thread died");
    });
    drop(to_parent);
    parent_thread
        .join()
        .expect("micro: successor hold: the floor's parent thread panicked");
    successor_thread
        .join()
        .expect("micro: successor hold: the floor's successor thread panicked");
    metrics
}
