//! The pool itself (rayon-core `thread_pool/test.rs`, `test.rs`, `tests/double_init_fail.rs`,
//! `tests/init_zero_threads.rs`): install, mutual install, nested pools, start and exit
//! handlers, thread names, panics, yielding, and building.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use ember::{BuildError, Pool, Yield};

use super::{pool, AnyScope};

#[test]
#[should_panic(expected = "Hello, world!")]
fn install_propagates_a_panic() {
    pool(2).install(|| panic!("Hello, world!"));
}

/// A handler that counts its calls, and the counter.
fn counting_handler() -> (Arc<AtomicUsize>, impl Fn(usize) + Send + Sync + 'static) {
    let count = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&count);
    (count, move |_| {
        counter.fetch_add(1, Ordering::SeqCst);
    })
}

fn join_a_lot(n: usize) {
    if n > 0 {
        ember::join(|| join_a_lot(n - 1), || join_a_lot(n - 1));
    }
}

/// Dropping the last handle stops every worker, busy before or asleep. Differs from rayon,
/// whose drop returns at once: ember's drop (outside the pool) returns once every worker
/// has exited, so the exit handlers are all counted when it returns.
#[test]
fn dropping_the_pool_stops_its_workers() {
    for busy in [true, false] {
        let (exits, exit_handler) = counting_handler();
        let pool = Pool::builder()
            .threads(22)
            .exit_handler(exit_handler)
            .build()
            .unwrap();
        if busy {
            pool.install(|| join_a_lot(12));
        } else {
            std::thread::sleep(Duration::from_millis(30)); // time to fall asleep
        }
        drop(pool);
        assert_eq!(exits.load(Ordering::SeqCst), 22, "busy before: {busy}");
    }
}

/// A worker that cannot be started fails the build, and the workers started before it are
/// stopped again: as many exit as started.
#[test]
fn a_worker_that_cannot_start_fails_the_build() {
    let (starts, start_handler) = counting_handler();
    let (exits, exit_handler) = counting_handler();
    let built = Pool::builder()
        .threads(10)
        .stack_size(isize::MAX as usize)
        .start_handler(start_handler)
        .exit_handler(exit_handler)
        .build();
    assert!(matches!(built, Err(BuildError::Spawn { .. })), "{built:?}");
    let started = starts.load(Ordering::SeqCst);
    assert!(started <= 1);
    assert_eq!(exits.load(Ordering::SeqCst), started);
}

/// A panic of the naming closure propagates from `build`. Differs from rayon, which has
/// started (and then stops) the threads named before the panic: ember names every thread
/// before it starts any, so none starts.
#[test]
fn a_panic_of_the_naming_closure_propagates_from_build() {
    let (starts, start_handler) = counting_handler();
    let builder = Pool::builder()
        .threads(10)
        .start_handler(start_handler)
        .thread_name(|i| {
            assert!(i < 5, "no name for {i}");
            format!("named #{i}")
        });
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| builder.build()));
    assert!(result.is_err(), "the naming panic propagates");
    assert_eq!(starts.load(Ordering::SeqCst), 0, "no worker started");
}

/// A name the operating system cannot take is a build error naming the worker, raised
/// before any thread starts. Panicked inside `build` before, with two workers running.
#[test]
fn a_thread_name_with_a_nul_byte_is_a_build_error() {
    let (starts, start_handler) = counting_handler();
    let err = Pool::builder()
        .threads(4)
        .start_handler(start_handler)
        .thread_name(|i| {
            if i == 2 {
                "bad\0name".into()
            } else {
                format!("ok-{i}")
            }
        })
        .build()
        .unwrap_err();
    assert!(
        matches!(&err, ember::BuildError::ThreadName { index: 2, name } if name == "bad\0name"),
        "{err:?}"
    );
    assert!(err.to_string().contains("NUL"), "{err}");
    assert_eq!(starts.load(Ordering::SeqCst), 0, "no worker started");
    let prefix = Pool::builder().threads(1).name("a\0b").build().unwrap_err();
    assert!(
        matches!(prefix, ember::BuildError::ThreadName { index: 0, .. }),
        "{prefix:?}"
    );
    // A pool name unused by the workers (they are named by the closure) may hold a NUL: it
    // names only the alarm thread of a pool that defers wake-ups (the default), with the NUL
    // left out. (That thread once took it as it was, and the build panicked; started from a
    // worker, it would fail to start and the pool would silently never defer.)
    let pool = Pool::builder()
        .threads(2)
        .name("pool\0x")
        .thread_name(|i| format!("w{i}"))
        .build()
        .expect("the workers' names are fine");
    crate::common::watch_the_alarm(&pool, "a NUL in the pool's name");
}

/// The start handler runs in a pool that exists: `Pool::current` is that pool. Was `None`
/// for a worker that started before the build had finished.
#[test]
fn the_start_handler_sees_its_pool() {
    let seen = Arc::new(AtomicUsize::new(0));
    let seen_by = Arc::clone(&seen);
    let pool = Pool::builder()
        .threads(3)
        .start_handler(move |index| {
            if ember::Pool::current().is_some_and(|pool| pool.current_thread_index() == Some(index))
            {
                seen_by.fetch_add(1, Ordering::SeqCst);
            }
        })
        .build()
        .unwrap();
    pool.broadcast(|_| ()); // every worker has started
    assert_eq!(seen.load(Ordering::SeqCst), 3);
}

#[test]
fn a_pool_installs_into_itself() {
    let pool = pool(1);
    assert!(pool.install(|| pool.install(|| true)));
}

/// Pool 1's only worker waits for pool 2, whose only worker waits for pool 1: no deadlock,
/// since a waiting worker runs its own pool's jobs. Then again with pauses long enough for
/// the idle worker of each pool to fall asleep.
#[test]
fn pools_install_into_each_other() {
    for nap in [Duration::ZERO, Duration::from_millis(30)] {
        let (pool1, pool2) = (pool(1), pool(1));
        let ok = pool1.install(|| {
            pool2.install(|| {
                std::thread::sleep(nap);
                pool1.install(|| {
                    std::thread::sleep(nap);
                    true
                })
            })
        });
        assert!(ok, "nap {nap:?}");
    }
}

#[test]
fn a_pool_reports_its_size_and_its_workers_index() {
    let pool = pool(22);
    assert_eq!((pool.threads(), pool.current_num_threads()), (22, 22));
    assert_eq!(pool.current_thread_index(), None);
    let (index, free_index, size) = pool.install(|| {
        (
            pool.current_thread_index(),
            ember::current_thread_index(),
            ember::current_num_threads(),
        )
    });
    assert!(index.unwrap() < 22);
    assert_eq!((free_index, size), (index, 22));
    // On another pool's worker, the index is that pool's business.
    assert_eq!(super::pool(1).install(|| pool.current_thread_index()), None);
}

/// Every worker runs the start handler once, with its index, already as a worker of the
/// pool; and the exit handler once as it leaves.
#[test]
fn start_and_exit_handlers_run_on_every_worker() {
    const THREADS: usize = 16;
    let started = Arc::new(Mutex::new(Vec::new()));
    let log = Arc::clone(&started);
    let (exits, exit_handler) = counting_handler();
    let pool = Pool::builder()
        .threads(THREADS)
        .start_handler(move |index| {
            assert_eq!(ember::current_thread_index(), Some(index));
            log.lock().unwrap().push(index);
        })
        .exit_handler(exit_handler)
        .build()
        .unwrap();
    pool.broadcast(|_| ()); // every worker is past its start handler
    let mut indices = started.lock().unwrap().clone();
    indices.sort_unstable();
    assert_eq!(indices, (0..THREADS).collect::<Vec<_>>());
    assert_eq!(exits.load(Ordering::SeqCst), 0);
    drop(pool);
    assert_eq!(exits.load(Ordering::SeqCst), THREADS);
}

/// Start and exit handlers that panic: each panic goes to the panic handler and is counted,
/// and the workers live on (the pool still runs jobs).
#[test]
fn panicking_handlers_are_contained() {
    const THREADS: usize = 16;
    let (handled, panic_handler) = counting_handler();
    let pool = Pool::builder()
        .threads(THREADS)
        .start_handler(|_| panic!("a start handler panics"))
        .exit_handler(|_| panic!("an exit handler panics"))
        .panic_handler(move |_payload| panic_handler(0))
        .build()
        .unwrap();
    assert_eq!(pool.broadcast(|ctx| ctx.index()).len(), THREADS);
    assert_eq!(pool.stats().panics, THREADS as u64);
    assert_eq!(handled.load(Ordering::SeqCst), THREADS);
    drop(pool);
    assert_eq!(handled.load(Ordering::SeqCst), 2 * THREADS);
}

#[test]
fn threads_are_named_by_the_closure_or_the_prefix() {
    let names = |pool: Pool| pool.broadcast(|_| std::thread::current().name().map(str::to_owned));
    let named = names(
        Pool::builder()
            .threads(3)
            .thread_name(|i| format!("compat #{i}"))
            .build()
            .unwrap(),
    );
    let expected: Vec<_> = (0..3).map(|i| Some(format!("compat #{i}"))).collect();
    assert_eq!(named, expected);
    let prefixed = names(Pool::builder().threads(2).name("pre").build().unwrap());
    assert_eq!(
        prefixed,
        [Some("pre-0".to_owned()), Some("pre-1".to_owned())]
    );
}

#[test]
fn every_builder_method_chains_and_the_default_builds() {
    Pool::builder()
        .thread_name(|i| format!("thread_name_{i}"))
        .threads(5)
        .panic_handler(|_| {})
        .stack_size(4_000_000)
        .start_handler(|_| {})
        .exit_handler(|_| {})
        .build()
        .unwrap();
    ember::PoolBuilder::default().build().unwrap();
}

/// Differs from rayon, where `num_threads(0)` means "automatic": in ember it is an error
/// (leave `threads` unset for one worker per CPU).
#[test]
fn zero_threads_is_an_error() {
    let built = Pool::builder().threads(0).build();
    assert!(matches!(built, Err(BuildError::ZeroThreads)));
}

#[test]
fn the_global_pool_is_built_once() {
    assert!(ember::current_num_threads() > 0); // builds it, if no other test did
    let again = ember::PoolBuilder::new().build_global();
    assert!(
        matches!(again, Err(BuildError::GlobalPoolExists)),
        "{again:?}"
    );
}

/// One scope per pool, ten pools deep, and the innermost body spawns into every one of them,
/// borrowing the same counter; with `scope` and with `scope_fifo`.
#[test]
fn scopes_of_ten_pools_nest() {
    fn nest<'s>(
        pools: &[Pool],
        fifo: bool,
        scopes: Vec<AnyScope<'_, 's>>,
        counter: &'s AtomicUsize,
    ) {
        match pools.split_first() {
            Some((pool, rest)) => AnyScope::open(Some(pool), fifo, move |s| {
                let mut scopes = scopes;
                scopes.push(s);
                nest(rest, fifo, scopes, counter)
            }),
            None => scopes.into_iter().for_each(|s| {
                s.spawn(move |_| {
                    counter.fetch_add(1, Ordering::Relaxed);
                })
            }),
        }
    }
    let pools: Vec<Pool> = (0..10).map(|_| pool(1)).collect();
    let counter = AtomicUsize::new(0);
    nest(&pools, false, Vec::new(), &counter);
    nest(&pools, true, Vec::new(), &counter);
    assert_eq!(counter.into_inner(), 2 * pools.len());
}

/// `yield_now` runs a job queued on the worker, or one from the global queue; `yield_local`
/// only the worker's own; both say whether they ran one, and `None` off a worker.
#[test]
fn yielding_runs_one_pending_job() {
    assert_eq!((ember::yield_now(), ember::yield_local()), (None, None));
    let pool = pool(1);
    let (tx, rx) = std::sync::mpsc::channel();
    let rx = Mutex::new(rx);
    let received = || rx.lock().unwrap().try_recv();
    pool.install(|| {
        let tx_local = tx.clone();
        ember::spawn(move || tx_local.send("local").unwrap());
        assert_eq!(ember::yield_local(), Some(Yield::Executed));
        assert_eq!(received(), Ok("local"));
        assert_eq!(ember::yield_local(), Some(Yield::Idle));

        // From a thread outside the pool, the job goes on the global queue.
        std::thread::scope(|t| {
            t.spawn(|| pool.spawn(move || tx.send("global").unwrap()));
        });
        assert_eq!(pool.yield_local(), Some(Yield::Idle), "not a local job");
        assert_eq!(pool.yield_now(), Some(Yield::Executed));
        assert_eq!(received(), Ok("global"));
        assert_eq!(ember::yield_now(), Some(Yield::Idle));
    });
    // On another pool's worker, this pool's yield has nothing to say.
    assert_eq!(super::pool(1).install(|| pool.yield_now()), None);
}
