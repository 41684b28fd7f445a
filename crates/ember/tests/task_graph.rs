//! Dependent tasks: every task runs exactly once, only after all its inputs finished.
//!
//! For each wake policy (`Eager`, `Searching`, `Biased { batch: 20 }`), with delay-kick on and
//! off, and with 1, 2 and 8 workers:
//!
//! * diamonds, a wide fan-in (one task after 1,000) and a wide fan-out (1,000 after one);
//! * a chain of 100,000 tasks, each checking that it is the next in sequence;
//! * random DAGs (seeded; edges from lower to higher index only, some inputs repeated, some
//!   nodes events completed by another thread), where each task checks its inputs' finished
//!   flags and counts its own runs;
//! * events completed before and after `after(..)`, from another thread;
//! * `Task::join` from outside the pool and from inside a worker (which helps, also on one
//!   thread);
//! * failure: a panicking task cancels exactly its direct and transitive dependents, a chain
//!   of 100,000 behind a panic is cancelled without a deep stack, an event dropped without
//!   completion cancels its dependents, and an input of another pool is `ForeignPool`;
//! * a pool dropped while tasks wait on an event still runs them once it completes;
//! * delay-kick: what `PoolStats::kicks` counts, and (printed, not asserted) the share of a
//!   chain's tasks that ran on their predecessor's thread.
//!
//! Nothing here depends on timing: every assertion holds under any schedule.

use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::thread::{self, ThreadId};

use ember::{Event, Pool, Task, TaskError, WakePolicy};
use proptest::prelude::RngExt;
use proptest::test_runner::{RngAlgorithm, TestRng};

const POLICIES: [WakePolicy; 3] = [
    WakePolicy::Eager,
    WakePolicy::Searching,
    WakePolicy::Biased { batch: 20 },
];
const THREADS: [usize; 3] = [1, 2, 8];

/// One pool configuration.
#[derive(Clone, Copy, Debug)]
struct Config {
    policy: WakePolicy,
    delay_kick: bool,
    threads: usize,
}

impl Config {
    fn pool(self) -> Pool {
        Pool::builder()
            .threads(self.threads)
            .wake(self.policy)
            .tuning(ember::Tuning::new().delay_kick(self.delay_kick))
            .build()
            .unwrap()
    }
}

/// Every configuration: policy x delay-kick x workers.
fn configs() -> Vec<Config> {
    let mut all = Vec::new();
    for policy in POLICIES {
        for delay_kick in [true, false] {
            for threads in THREADS {
                all.push(Config {
                    policy,
                    delay_kick,
                    threads,
                });
            }
        }
    }
    all
}

/// A seeded generator, so every run builds the same graphs.
fn seeded(seed: u64) -> TestRng {
    let mut bytes = [0u8; 32];
    bytes[..8].copy_from_slice(&seed.to_le_bytes());
    TestRng::from_seed(RngAlgorithm::ChaCha, &bytes)
}

/// What the tasks of a graph record: runs per node, finished flags, and violations.
struct Book {
    runs: Vec<AtomicUsize>,
    finished: Vec<AtomicBool>,
    /// Nodes that ran before one of their inputs had finished.
    early: Mutex<Vec<usize>>,
}

impl Book {
    fn new(nodes: usize) -> Arc<Self> {
        Arc::new(Book {
            runs: (0..nodes).map(|_| AtomicUsize::new(0)).collect(),
            finished: (0..nodes).map(|_| AtomicBool::new(false)).collect(),
            early: Mutex::new(Vec::new()),
        })
    }

    /// The body of node `node` with inputs `inputs`.
    fn run(&self, node: usize, inputs: &[usize]) {
        if inputs
            .iter()
            .any(|&input| !self.finished[input].load(Ordering::Acquire))
        {
            self.early.lock().unwrap().push(node);
        }
        self.runs[node].fetch_add(1, Ordering::Relaxed);
        self.finished[node].store(true, Ordering::Release);
    }

    /// Asserts that every task node ran exactly once and none ran early.
    fn check(&self, tasks: impl Iterator<Item = usize>, what: &str) {
        let early = self.early.lock().unwrap();
        assert!(
            early.is_empty(),
            "{what}: nodes {:?} ran before an input finished",
            &early[..early.len().min(10)]
        );
        let wrong: Vec<(usize, usize)> = tasks
            .map(|node| (node, self.runs[node].load(Ordering::Relaxed)))
            .filter(|&(_, runs)| runs != 1)
            .take(10)
            .collect();
        assert!(
            wrong.is_empty(),
            "{what}: (node, runs) not run exactly once: {wrong:?}"
        );
    }
}

/// A node of a graph under test: a task, or an event another thread completes.
enum Handle {
    Task(Task<usize>),
    Event(Arc<Event>),
}

impl Handle {
    fn dep(&self) -> &dyn ember::Dependency {
        match self {
            Handle::Task(task) => task,
            Handle::Event(event) => &**event,
        }
    }
}

/// Builds the graph `inputs` (node i waits for `inputs[i]`, all lower than i); nodes in
/// `events` are events, completed by a second thread in a shuffled order while the graph is
/// still being built. Joins every task and checks the book.
fn run_graph(pool: &Pool, inputs: &[Vec<usize>], events: &HashSet<usize>, seed: u64, what: &str) {
    let book = Book::new(inputs.len());
    let (tx, rx) = mpsc::channel::<(usize, Arc<Event>)>();
    let completer = {
        let book = Arc::clone(&book);
        thread::spawn(move || {
            let mut rng = seeded(seed ^ 0xE7E7);
            let mut pending: Vec<(usize, Arc<Event>)> = Vec::new();
            let complete_one = |pending: &mut Vec<(usize, Arc<Event>)>, rng: &mut TestRng| {
                let (node, event) = pending.swap_remove(rng.random_range(0..pending.len()));
                book.run(node, &[]);
                event.complete();
            };
            for item in rx {
                pending.push(item);
                if rng.random_range(0..3) == 0 {
                    complete_one(&mut pending, &mut rng);
                }
            }
            while !pending.is_empty() {
                complete_one(&mut pending, &mut rng);
            }
        })
    };
    let mut handles: Vec<Handle> = Vec::with_capacity(inputs.len());
    for (node, node_inputs) in inputs.iter().enumerate() {
        if events.contains(&node) {
            let event = Arc::new(pool.event());
            tx.send((node, Arc::clone(&event))).unwrap();
            handles.push(Handle::Event(event));
            continue;
        }
        let deps: Vec<&dyn ember::Dependency> =
            node_inputs.iter().map(|&i| handles[i].dep()).collect();
        let body_inputs = node_inputs.clone();
        let body_book = Arc::clone(&book);
        let task = pool
            .task(move || {
                body_book.run(node, &body_inputs);
                node
            })
            .after(&deps)
            .spawn();
        handles.push(Handle::Task(task));
    }
    drop(tx);
    for (node, handle) in handles.into_iter().enumerate() {
        if let Handle::Task(task) = handle {
            assert_eq!(task.join().unwrap(), node, "{what}: node {node}");
        }
    }
    completer.join().unwrap();
    book.check(0..inputs.len(), what);
}

#[test]
fn diamonds() {
    // 100 diamonds in a row: the bottom of one is the top of the next.
    let mut inputs: Vec<Vec<usize>> = vec![Vec::new()];
    for d in 0..100 {
        let top = 3 * d;
        inputs.push(vec![top]);
        inputs.push(vec![top]);
        inputs.push(vec![top + 1, top + 2]);
    }
    for config in configs() {
        let pool = config.pool();
        run_graph(&pool, &inputs, &HashSet::new(), 0, &format!("{config:?}"));

        // One diamond with values: d = b + c, b and c read a.
        let a = pool.task(|| 20u64).spawn();
        let gate = pool.event();
        let b = pool.task(|| 1u64).after(&[&a, &gate]).spawn();
        let c = pool.task(|| 2u64).after(&[&a]).spawn();
        let d = pool.task(|| 3u64).after(&[&b, &c]).spawn();
        assert!(!d.is_finished());
        gate.complete();
        assert_eq!(d.join().unwrap(), 3);
        assert!(b.is_finished() && c.is_finished() && a.is_finished());
        assert_eq!(
            a.join().unwrap() + b.join().unwrap() + c.join().unwrap(),
            23
        );
    }
}

#[test]
fn wide_fan_in_and_fan_out() {
    const WIDTH: usize = 1_000;
    for config in configs() {
        let pool = config.pool();
        let what = format!("{config:?}");

        // Fan-in: one task after 1,000 inputs, half of them registered before they can run.
        let inputs: Vec<Vec<usize>> = (0..=WIDTH)
            .map(|i| {
                if i < WIDTH {
                    Vec::new()
                } else {
                    (0..WIDTH).collect()
                }
            })
            .collect();
        run_graph(
            &pool,
            &inputs,
            &HashSet::new(),
            1,
            &format!("fan-in {what}"),
        );

        let gate = pool.event();
        let book = Book::new(WIDTH + 1);
        let sources: Vec<Task<()>> = (0..WIDTH)
            .map(|i| {
                let book = Arc::clone(&book);
                let builder = pool.task(move || book.run(i, &[]));
                if i % 2 == 0 {
                    builder.after(&[&gate]).spawn()
                } else {
                    builder.spawn()
                }
            })
            .collect();
        let deps: Vec<&dyn ember::Dependency> = sources
            .iter()
            .map(|t| t as &dyn ember::Dependency)
            .collect();
        let sink = {
            let book = Arc::clone(&book);
            let all: Vec<usize> = (0..WIDTH).collect();
            pool.task(move || book.run(WIDTH, &all))
                .after(&deps)
                .spawn()
        };
        assert!(
            !sink.is_finished(),
            "{what}: the sink ran before its gated inputs"
        );
        gate.complete();
        sink.join().unwrap();
        book.check(0..=WIDTH, &format!("gated fan-in {what}"));

        // Fan-out: 1,000 after one, all registered before the one can run.
        let gate = pool.event();
        let book = Book::new(WIDTH + 1);
        let source = {
            let book = Arc::clone(&book);
            pool.task(move || book.run(0, &[])).after(&[&gate]).spawn()
        };
        let sinks: Vec<Task<()>> = (1..=WIDTH)
            .map(|i| {
                let book = Arc::clone(&book);
                pool.task(move || book.run(i, &[0]))
                    .after(&[&source])
                    .spawn()
            })
            .collect();
        gate.complete();
        for sink in sinks {
            sink.join().unwrap();
        }
        source.join().unwrap();
        book.check(0..=WIDTH, &format!("fan-out {what}"));
    }
}

/// A chain of `len` tasks, each after the previous; task i checks that it is i-th. With
/// `gated`, the whole chain waits on an event completed once it is built.
fn chain(pool: &Pool, len: usize, gated: bool, what: &str) {
    let next = Arc::new(AtomicUsize::new(0));
    let out_of_order = Arc::new(Mutex::new(Vec::new()));
    let gate = pool.event();
    let mut tasks: Vec<Task<()>> = Vec::with_capacity(len);
    for i in 0..len {
        let (next, out_of_order) = (Arc::clone(&next), Arc::clone(&out_of_order));
        let builder = pool.task(move || {
            if let Err(seen) = next.compare_exchange(i, i + 1, Ordering::AcqRel, Ordering::Acquire)
            {
                out_of_order.lock().unwrap().push((i, seen));
            }
        });
        let task = match (tasks.last(), gated) {
            (Some(prev), _) => builder.after(&[prev]).spawn(),
            (None, true) => builder.after(&[&gate]).spawn(),
            (None, false) => builder.spawn(),
        };
        tasks.push(task);
    }
    if gated {
        assert!(!tasks[0].is_finished(), "{what}: ran before its event");
    }
    gate.complete();
    for task in tasks.into_iter().rev() {
        task.join().unwrap();
    }
    let out_of_order = out_of_order.lock().unwrap();
    assert!(
        out_of_order.is_empty(),
        "{what}: (task, tasks run before it) out of order: {:?}",
        &out_of_order[..out_of_order.len().min(10)]
    );
    assert_eq!(next.load(Ordering::Acquire), len, "{what}");
}

#[test]
fn chain_of_100_000() {
    for (n, config) in configs().into_iter().enumerate() {
        let pool = config.pool();
        // Gated: the chain is released worker to worker; ungated: built while it runs, so
        // many tasks register on a predecessor that already finished.
        chain(&pool, 100_000, n % 2 == 0, &format!("{config:?}"));
    }
}

#[test]
fn random_dags() {
    const NODES: usize = 2_000;
    for (n, config) in configs().into_iter().enumerate() {
        let seed = 0x5EED_0000 + n as u64;
        let mut rng = seeded(seed);
        let mut events = HashSet::new();
        let inputs: Vec<Vec<usize>> = (0..NODES)
            .map(|i| {
                if i > 0 && rng.random_range(0..50) == 0 {
                    events.insert(i);
                    return Vec::new();
                }
                if i == 0 {
                    return Vec::new();
                }
                // Mostly near neighbours (long paths), sometimes anything lower; repeats allowed.
                (0..rng.random_range(0..6))
                    .map(|_| {
                        if rng.random_range(0..2) == 0 {
                            i - 1 - rng.random_range(0..i.min(8))
                        } else {
                            rng.random_range(0..i)
                        }
                    })
                    .collect()
            })
            .collect();
        let pool = config.pool();
        run_graph(
            &pool,
            &inputs,
            &events,
            seed,
            &format!("{config:?} seed {seed:#x}"),
        );
    }
}

#[test]
fn events_before_and_after_registration() {
    for config in configs() {
        let pool = config.pool();
        let what = format!("{config:?}");

        let early = pool.event();
        early.complete();
        early.complete(); // a second call does nothing
        assert!(early.is_complete());
        let late = pool.event();
        assert!(!late.is_complete());

        let only_early = pool.task(|| 1).after(&[&early]).spawn();
        let both = pool.task(|| 2).after(&[&early, &late]).spawn();
        let after_both = pool.task(|| 3).after(&[&both, &late]).spawn();
        assert_eq!(only_early.join().unwrap(), 1, "{what}");
        assert!(
            !both.is_finished() && !after_both.is_finished(),
            "{what}: ran before `late`"
        );

        let late = Arc::new(late);
        let completer = {
            let late = Arc::clone(&late);
            thread::spawn(move || late.complete())
        };
        assert_eq!(after_both.join().unwrap(), 3, "{what}");
        assert_eq!(both.join().unwrap(), 2, "{what}");
        completer.join().unwrap();
        assert!(late.is_complete());

        // Many events completed from several threads while tasks register on them.
        let events: Vec<Arc<Event>> = (0..64).map(|_| Arc::new(pool.event())).collect();
        let completers: Vec<_> = events
            .chunks(16)
            .map(|chunk| {
                let chunk: Vec<Arc<Event>> = chunk.to_vec();
                thread::spawn(move || chunk.iter().for_each(|e| e.complete()))
            })
            .collect();
        let tasks: Vec<Task<usize>> = events
            .windows(2)
            .enumerate()
            .map(|(i, pair)| pool.task(move || i).after(&[&*pair[0], &*pair[1]]).spawn())
            .collect();
        for (i, task) in tasks.into_iter().enumerate() {
            assert_eq!(task.join().unwrap(), i, "{what}");
        }
        completers.into_iter().for_each(|c| c.join().unwrap());
    }
}

#[test]
fn join_from_outside_and_from_inside_a_worker() {
    for config in configs() {
        let pool = config.pool();
        let what = format!("{config:?}");

        // From outside, on a task that already finished and on one that has not.
        let done = pool.task(|| 5).spawn();
        while !done.is_finished() {
            thread::yield_now();
        }
        assert_eq!(done.join().unwrap(), 5);

        // From inside: the joined chain cannot start before the joining task opens its gate,
        // so on one worker the joiner must run it itself.
        let gate = pool.event();
        let first = pool.task(|| 1u64).after(&[&gate]).spawn();
        let second = pool.task(|| 2u64).after(&[&first]).spawn();
        let third = pool.task(|| 3u64).after(&[&second]).spawn();
        let joiner = pool
            .task(move || {
                gate.complete();
                third.join().unwrap() * 10
            })
            .spawn();
        assert_eq!(joiner.join().unwrap(), 30, "{what}");
        assert_eq!(first.join().unwrap() + second.join().unwrap(), 3, "{what}");

        // A task that creates a task and joins it, nested a few levels.
        fn nested(pool: Pool, depth: u64) -> u64 {
            if depth == 0 {
                return 1;
            }
            let inner_pool = pool.clone();
            let child = pool.task(move || nested(inner_pool, depth - 1)).spawn();
            child.join().unwrap() + 1
        }
        let outer_pool = pool.clone();
        let outer = pool.task(move || nested(outer_pool, 20)).spawn();
        assert_eq!(outer.join().unwrap(), 21, "{what}");

        // A joined task that panics reports it to the joining task.
        let bad = pool.task(|| -> u8 { panic!("inner failure") }).spawn();
        let reporter = pool
            .task(move || match bad.join() {
                Err(TaskError::Panicked(payload)) => {
                    payload.downcast_ref::<&str>().copied() == Some("inner failure")
                }
                _ => false,
            })
            .spawn();
        assert!(reporter.join().unwrap(), "{what}");
    }
}

/// The message of a `Panicked` error.
fn panic_message(err: TaskError) -> String {
    match err {
        TaskError::Panicked(payload) => payload
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| payload.downcast_ref::<String>().cloned())
            .unwrap_or_default(),
        other => panic!("expected Panicked, got {other}"),
    }
}

fn assert_cancelled(result: Result<(), TaskError>, what: &str) {
    assert!(
        matches!(result, Err(TaskError::Cancelled)),
        "{what}: expected Cancelled, got {result:?}"
    );
}

#[test]
fn a_panic_cancels_exactly_its_dependents() {
    for config in configs() {
        let pool = config.pool();
        let what = format!("{config:?}");
        let ran = Arc::new(Mutex::new(Vec::<&'static str>::new()));
        let task = |name: &'static str| {
            let ran = Arc::clone(&ran);
            move || ran.lock().unwrap().push(name)
        };

        let gate = pool.event();
        let bad = pool
            .task(|| -> () { panic!("bad input") })
            .after(&[&gate])
            .spawn();
        let ok = pool.task(task("ok")).spawn();
        let direct = pool.task(task("direct")).after(&[&bad]).spawn();
        let mixed = pool.task(task("mixed")).after(&[&ok, &direct]).spawn();
        let transitive = pool.task(task("transitive")).after(&[&mixed]).spawn();
        let unrelated = pool.task(task("unrelated")).after(&[&ok]).spawn();
        gate.complete();
        while !bad.is_finished() {
            thread::yield_now();
        }
        // Registered after the panic: cancelled at once.
        let late = pool.task(task("late")).after(&[&bad, &ok]).spawn();
        let late_transitive = pool.task(task("late_transitive")).after(&[&late]).spawn();

        assert_cancelled(late_transitive.join(), &what);
        assert_cancelled(late.join(), &what);
        assert_cancelled(transitive.join(), &what);
        assert_cancelled(mixed.join(), &what);
        assert_cancelled(direct.join(), &what);
        assert_eq!(
            panic_message(bad.join().unwrap_err()),
            "bad input",
            "{what}"
        );
        unrelated.join().unwrap();
        ok.join().unwrap();
        let mut ran = ran.lock().unwrap().clone();
        ran.sort_unstable();
        assert_eq!(ran, ["ok", "unrelated"], "{what}");
        assert!(pool.stats().panics >= 1, "{what}");
    }
}

#[test]
fn a_panic_at_the_head_of_a_100_000_chain_cancels_all() {
    const LEN: usize = 100_000;
    for (n, config) in configs().into_iter().enumerate() {
        let pool = config.pool();
        let what = format!("{config:?}");
        let ran = Arc::new(AtomicUsize::new(0));
        let gate = pool.event();
        // Gated: the whole chain is cancelled by one cascade on the worker where the head
        // panicked; ungated: the chain is still being built as the cancellation runs.
        let head = if n % 2 == 0 {
            pool.task(|| -> () { panic!("head") })
                .after(&[&gate])
                .spawn()
        } else {
            pool.task(|| -> () { panic!("head") }).spawn()
        };
        let mut tail: Vec<Task<()>> = Vec::with_capacity(LEN - 1);
        for _ in 1..LEN {
            let ran = Arc::clone(&ran);
            let builder = pool.task(move || {
                ran.fetch_add(1, Ordering::Relaxed);
            });
            let task = builder.after(&[tail.last().map_or(&head, |t| t)]).spawn();
            tail.push(task);
        }
        gate.complete();
        for task in tail.into_iter().rev() {
            assert_cancelled(task.join(), &what);
        }
        assert_eq!(panic_message(head.join().unwrap_err()), "head");
        assert_eq!(
            ran.load(Ordering::Relaxed),
            0,
            "{what}: a cancelled task ran"
        );
    }
}

#[test]
fn an_event_dropped_without_completion_cancels_its_dependents() {
    for config in configs() {
        let pool = config.pool();
        let what = format!("{config:?}");
        let ran = Arc::new(AtomicUsize::new(0));
        let count = || {
            let ran = Arc::clone(&ran);
            move || {
                ran.fetch_add(1, Ordering::Relaxed);
            }
        };
        let lost = pool.event();
        let kept = pool.event();
        let direct = pool.task(count()).after(&[&lost]).spawn();
        let both = pool.task(count()).after(&[&kept, &lost]).spawn();
        let transitive = pool.task(count()).after(&[&direct]).spawn();
        let independent = pool.task(count()).after(&[&kept]).spawn();
        // Dropped on another thread.
        thread::spawn(move || drop(lost)).join().unwrap();
        assert_cancelled(direct.join(), &what);
        assert_cancelled(transitive.join(), &what);
        // `both` still holds a permit for `kept`: it ends, cancelled, once that completes.
        assert!(!both.is_finished(), "{what}");
        kept.complete();
        assert_cancelled(both.join(), &what);
        independent.join().unwrap();
        assert_eq!(
            ran.load(Ordering::Relaxed),
            1,
            "{what}: only `independent` runs"
        );

        // Completed, then dropped: nothing is cancelled.
        let fine = pool.event();
        let after_fine = pool.task(|| 7).after(&[&fine]).spawn();
        fine.complete();
        drop(fine);
        assert_eq!(after_fine.join().unwrap(), 7, "{what}");
    }
}

#[test]
fn an_input_of_another_pool_is_an_error() {
    for config in configs() {
        let pool = config.pool();
        let other = config.pool();
        let what = format!("{config:?}");
        let ran = Arc::new(AtomicBool::new(false));

        let foreign_event = other.event();
        let foreign_task = other.task(|| 1).spawn();
        let own = pool.event();
        let flag = Arc::clone(&ran);
        let bad = pool
            .task(move || flag.store(true, Ordering::Relaxed))
            .after(&[&own, &foreign_event])
            .spawn();
        let also_bad = pool.task(|| ()).after(&[&foreign_task]).spawn();
        let after_bad = pool.task(|| ()).after(&[&bad]).spawn();
        own.complete();
        foreign_event.complete();

        for result in [bad.join(), also_bad.join()] {
            let err = result.unwrap_err();
            assert!(matches!(err, TaskError::ForeignPool), "{what}: {err:?}");
            let message = err.to_string();
            assert!(
                message.contains("another pool") && message.contains("same pool"),
                "{what}: unclear message: {message}"
            );
        }
        assert_cancelled(after_bad.join(), &what);
        assert!(
            !ran.load(Ordering::Relaxed),
            "{what}: a task with a foreign input ran"
        );
        assert_eq!(foreign_task.join().unwrap(), 1);
    }
}

#[test]
fn a_dropped_pool_still_runs_tasks_waiting_on_an_event() {
    for config in configs() {
        let what = format!("{config:?}");
        let pool = config.pool();
        let ran = Arc::new(AtomicUsize::new(0));
        let later = pool.event();
        let never = pool.event();
        let tasks: Vec<Task<usize>> = (0..10)
            .map(|i| {
                let ran = Arc::clone(&ran);
                pool.task(move || {
                    ran.fetch_add(1, Ordering::Relaxed);
                    i
                })
                .after(&[&later])
                .spawn()
            })
            .collect();
        let second = pool.task(|| 99).after(&[&tasks[9]]).spawn();
        let cancelled = pool.task(|| 0).after(&[&never]).spawn();
        drop(pool);
        // The events hold the pool: completing `later` from another thread runs its tasks;
        // dropping it there, the last handle, shuts the pool down after they ran.
        let completer = thread::spawn(move || {
            later.complete();
            drop(later);
            drop(never);
        });
        for (i, task) in tasks.into_iter().enumerate() {
            assert_eq!(task.join().unwrap(), i, "{what}");
        }
        assert_eq!(second.join().unwrap(), 99, "{what}");
        assert!(
            matches!(cancelled.join(), Err(TaskError::Cancelled)),
            "{what}"
        );
        completer.join().unwrap();
        assert_eq!(ran.load(Ordering::Relaxed), 10, "{what}");
    }
}

/// Runs a gated chain of `len` tasks on `pool`; returns, per task after the first, whether it
/// ran on its predecessor's thread.
fn chain_threads(pool: &Pool, len: usize, work: u32) -> Vec<bool> {
    let seen: Arc<Vec<Mutex<Vec<ThreadId>>>> =
        Arc::new((0..len).map(|_| Mutex::new(Vec::new())).collect());
    let gate = pool.event();
    let mut tasks: Vec<Task<u64>> = Vec::with_capacity(len);
    for i in 0..len {
        let seen = Arc::clone(&seen);
        let builder = pool.task(move || {
            let mut x = i as u64;
            for _ in 0..work {
                x = std::hint::black_box(x.wrapping_mul(6_364_136_223_846_793_005) + 1);
            }
            seen[i].lock().unwrap().push(thread::current().id());
            x
        });
        let task = match tasks.last() {
            Some(prev) => builder.after(&[prev]).spawn(),
            None => builder.after(&[&gate]).spawn(),
        };
        tasks.push(task);
    }
    gate.complete();
    for task in tasks.into_iter().rev() {
        task.join().unwrap();
    }
    let ids: Vec<ThreadId> = seen
        .iter()
        .enumerate()
        .map(|(i, slot)| {
            let slot = slot.lock().unwrap();
            assert_eq!(slot.len(), 1, "task {i} ran {} times", slot.len());
            slot[0]
        })
        .collect();
    ids.windows(2).map(|pair| pair[0] == pair[1]).collect()
}

#[test]
fn delay_kick_keeps_a_chain_together() {
    const LEN: usize = 1_000;
    for policy in POLICIES {
        // Empty tasks, and tasks doing a little work (a few microseconds in a debug build).
        for work in [0, 2_000] {
            let mut shares = Vec::new();
            for delay_kick in [true, false] {
                let pool = Pool::builder()
                    .threads(2)
                    .wake(policy)
                    .tuning(ember::Tuning::new().delay_kick(delay_kick))
                    .build()
                    .unwrap();
                let same = chain_threads(&pool, LEN, work);
                let share = same.iter().filter(|&&s| s).count() as f64 / same.len() as f64;
                shares.push(format!("delay_kick({delay_kick}) {:.1} %", share * 100.0));
            }
            println!(
                "{policy:?}, 2 threads, chain of {LEN} (work {work}): same thread as \
                 predecessor: {}",
                shares.join(", ")
            );
        }
    }
}

/// Successors a task released while its worker ran jobs inside `Pool::join` must not stay
/// held while that worker runs `join`'s second closure inline: nobody else can take them,
/// and the closure may wait for them. Here `b` waits for `second` while the other worker is
/// idle; with delay-kick off `second` is pushed and the idle worker runs it.
#[test]
fn held_successors_are_kicked_before_join_runs_b_inline() {
    for delay_kick in [false, true] {
        let pool = Pool::builder()
            .threads(2)
            .tuning(ember::Tuning::new().delay_kick(delay_kick))
            .build()
            .unwrap();
        // Keep one worker busy until `b` starts, so that nobody steals `b`.
        let (started_tx, started_rx) = mpsc::channel();
        let (release_tx, release_rx) = mpsc::channel::<()>();
        pool.spawn(move || {
            started_tx.send(()).unwrap();
            release_rx.recv().unwrap();
        });
        started_rx.recv().unwrap();
        let (out_tx, out_rx) = mpsc::channel();
        let inner = pool.clone();
        let (_, got) = pool.join(
            move || {
                // Pushed above `b`: `join` pops and runs `first`, whose end releases `second`.
                let first = inner.task(|| ()).spawn();
                inner
                    .task(move || out_tx.send(42).unwrap())
                    .after(&[&first])
                    .spawn();
            },
            move || {
                release_tx.send(()).unwrap();
                // Only a guard against hanging forever: `second` needs microseconds.
                out_rx.recv_timeout(std::time::Duration::from_secs(30))
            },
        );
        assert_eq!(got, Ok(42), "delay_kick({delay_kick})");
    }
}

#[test]
fn kicks_count_the_successors_handed_on() {
    const DEPENDENTS: usize = 10;
    for config in configs() {
        let what = format!("{config:?}");
        let pool = config.pool();
        let gate = pool.event();
        let source = pool.task(|| ()).after(&[&gate]).spawn();
        let dependents: Vec<Task<usize>> = (0..DEPENDENTS)
            .map(|i| pool.task(move || i).after(&[&source]).spawn())
            .collect();
        // The source ends on a worker in its main loop; it holds its ten successors, takes
        // one for itself and kicks the other nine.
        gate.complete();
        for (i, task) in dependents.into_iter().enumerate() {
            assert_eq!(task.join().unwrap(), i);
        }
        source.join().unwrap();
        let kicks = pool.stats().kicks;
        if config.delay_kick {
            assert_eq!(kicks, DEPENDENTS as u64 - 1, "{what}");
        } else {
            assert_eq!(kicks, 0, "{what}");
        }
    }
}

/// Signals when dropped, then waits (outside ember) for the successor of the task that made
/// it to start: a `Drop` that runs while that worker holds the successor, invisible to the
/// idle worker, waits out its guard. Records whether it waited in vain.
struct WaitsForSuccessor {
    started: mpsc::Receiver<()>,
    timed_out: Arc<AtomicBool>,
}

impl Drop for WaitsForSuccessor {
    fn drop(&mut self) {
        // Only a guard against hanging forever: the successor needs microseconds.
        if self
            .started
            .recv_timeout(std::time::Duration::from_secs(20))
            .is_err()
        {
            self.timed_out.store(true, Ordering::SeqCst);
        }
    }
}

/// The policies that wake a sleeper for a job pushed on a worker's own deque: under Biased,
/// user code that blocks outside ember on such a job waits for its own worker by design.
const WAKING_POLICIES: [WakePolicy; 2] = [WakePolicy::Eager, WakePolicy::Searching];

/// A task whose handle is gone before it runs leaves its result to the job that ran it. That
/// result's `Drop` (user code) must not run while the worker holds the successors the task
/// released: here it waits for the successor to start, which only the other, idle worker can
/// do.
#[test]
fn an_unjoined_result_is_dropped_after_the_successors_are_kicked() {
    for policy in WAKING_POLICIES {
        let pool = Pool::builder().threads(2).wake(policy).build().unwrap();
        let timed_out = Arc::new(AtomicBool::new(false));
        let (started_tx, started_rx) = mpsc::channel();
        let gate = pool.event();
        let flag = Arc::clone(&timed_out);
        let first = pool
            .task(move || WaitsForSuccessor {
                started: started_rx,
                timed_out: flag,
            })
            .after(&[&gate])
            .spawn();
        let second = pool
            .task(move || {
                // Fails only if the drop gave up waiting: the assertion below says so.
                let _ = started_tx.send(());
            })
            .after(&[&first])
            .spawn();
        // Gone before `first` can run: its job drops the last reference, and the result.
        drop(first);
        gate.complete();
        second.join().unwrap();
        pool.wait_idle();
        assert!(!timed_out.load(Ordering::SeqCst), "{policy:?}");
    }
}

/// The same for the closure of a task cancelled by the ending that releases a runnable
/// sibling: its drop (user code, inside that ending) waits for the sibling to start.
#[test]
fn a_cancelled_closure_is_dropped_after_the_successors_are_kicked() {
    for policy in WAKING_POLICIES {
        let pool = Pool::builder().threads(2).wake(policy).build().unwrap();
        let timed_out = Arc::new(AtomicBool::new(false));
        let (started_tx, started_rx) = mpsc::channel();
        let gate = pool.event();
        let source = pool.task(|| ()).after(&[&gate]).spawn();
        let sibling = pool
            .task(move || {
                // Fails only if the drop gave up waiting: the assertion below says so.
                let _ = started_tx.send(());
            })
            .after(&[&source])
            .spawn();
        let guard = WaitsForSuccessor {
            started: started_rx,
            timed_out: Arc::clone(&timed_out),
        };
        let doomed_input = pool.event();
        let cancelled = pool
            .task(move || drop(guard))
            .after(&[&source, &doomed_input])
            .spawn();
        // Cancels `cancelled`, whose last permit goes when `source` ends on a worker.
        drop(doomed_input);
        gate.complete();
        sibling.join().unwrap();
        assert!(matches!(cancelled.join(), Err(TaskError::Cancelled)));
        pool.wait_idle();
        assert!(!timed_out.load(Ordering::SeqCst), "{policy:?}");
    }
}
