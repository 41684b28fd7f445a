//! rayon's names, spelled as rayon code spells them: `ThreadPoolBuilder` (rayon's methods and
//! meanings: `num_threads(0)` is automatic, `thread_name` takes a closure that need not be
//! `Send`), `ThreadPool`, `ThreadPoolBuildError` and `max_num_threads`.

use std::rc::Rc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use ember::{ThreadPool, ThreadPoolBuildError, ThreadPoolBuilder};

/// What "automatic" means: `EMBER_NUM_THREADS` if set to a count other than 0, else one
/// worker per CPU.
fn automatic() -> usize {
    std::env::var("EMBER_NUM_THREADS")
        .ok()
        .and_then(|value| value.trim().parse().ok())
        .filter(|&n: &usize| n > 0)
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
}

#[test]
fn num_threads_sets_the_size_and_zero_means_automatic() {
    for n in [1, 2, 5] {
        let pool = ThreadPoolBuilder::new().num_threads(n).build().unwrap();
        assert_eq!(pool.current_num_threads(), n);
    }
    let zero = ThreadPoolBuilder::new().num_threads(0).build().unwrap();
    assert_eq!(zero.current_num_threads(), automatic());
    let unset = ThreadPoolBuilder::new().build().unwrap();
    assert_eq!(unset.current_num_threads(), automatic());
    // The last call wins, 0 included.
    let reset = ThreadPoolBuilder::new()
        .num_threads(3)
        .num_threads(0)
        .build()
        .unwrap();
    assert_eq!(reset.current_num_threads(), automatic());
}

#[test]
fn too_many_threads_is_an_error_naming_the_limit() {
    let err = ThreadPoolBuilder::new()
        .num_threads(ember::max_num_threads() + 1)
        .build()
        .unwrap_err();
    assert!(
        matches!(err, ThreadPoolBuildError::TooManyThreads { max, .. } if max == ember::max_num_threads()),
        "{err:?}"
    );
}

#[test]
fn every_builder_method_chains_with_rayon_s_closures() {
    let (starts, exits) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let (s, e) = (Arc::clone(&starts), Arc::clone(&exits));
    let pool: ThreadPool = ThreadPoolBuilder::new()
        .thread_name(|i| format!("thread_name_{i}"))
        .num_threads(5)
        .panic_handler(|_| {})
        .stack_size(4_000_000)
        .start_handler(move |_| {
            s.fetch_add(1, Ordering::SeqCst);
        })
        .exit_handler(move |_| {
            e.fetch_add(1, Ordering::SeqCst);
        })
        .build()
        .unwrap();
    let names = pool.broadcast(|_| std::thread::current().name().map(str::to_owned));
    let expected: Vec<_> = (0..5).map(|i| Some(format!("thread_name_{i}"))).collect();
    assert_eq!(names, expected);
    assert_eq!(starts.load(Ordering::SeqCst), 5);
    drop(pool);
    assert_eq!(exits.load(Ordering::SeqCst), 5);
    ThreadPoolBuilder::default().build().unwrap();
    assert!(format!("{:?}", ThreadPoolBuilder::new().num_threads(2)).contains("num_threads: 2"));
}

/// rayon's `thread_name` takes any `FnMut(usize) -> String + 'static`: state that is not
/// `Send` works, and so does a closure that counts its calls.
#[test]
fn thread_name_takes_a_closure_that_is_not_send() {
    let prefix = Rc::new("local".to_owned());
    let mut calls = 0;
    let pool = ThreadPoolBuilder::new()
        .num_threads(2)
        .thread_name(move |i| {
            calls += 1;
            format!("{prefix}-{i}-{calls}")
        })
        .build()
        .unwrap();
    let names = pool.broadcast(|_| std::thread::current().name().map(str::to_owned));
    assert_eq!(
        names,
        [Some("local-0-1".to_owned()), Some("local-1-2".to_owned())]
    );
}

/// A panic of the naming closure reaches the caller of `build`, and no worker starts; a NUL
/// byte in a name is an error naming the worker.
#[test]
fn a_bad_thread_name_fails_the_build_before_any_worker_starts() {
    let starts = Arc::new(AtomicUsize::new(0));
    let s = Arc::clone(&starts);
    let builder = ThreadPoolBuilder::new()
        .num_threads(4)
        .start_handler(move |_| {
            s.fetch_add(1, Ordering::SeqCst);
        })
        .thread_name(|i| {
            assert!(i < 2, "no name for {i}");
            format!("w{i}")
        });
    let built = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| builder.build()));
    assert!(built.is_err(), "the naming panic propagates");
    let err = ThreadPoolBuilder::new()
        .num_threads(3)
        .thread_name(|i| if i == 1 { "a\0b".into() } else { "ok".into() })
        .build()
        .unwrap_err();
    assert!(
        matches!(err, ThreadPoolBuildError::ThreadName { index: 1, .. }),
        "{err:?}"
    );
    assert_eq!(starts.load(Ordering::SeqCst), 0, "no worker started");
}

/// As in rayon, the global pool is built once: after it exists, explicitly or through a free
/// function, `build_global` is an error (and the naming closure is never called).
#[test]
fn a_second_build_global_is_an_error() {
    assert!(ember::current_num_threads() > 0); // builds the global pool if no test did
    let err = ThreadPoolBuilder::new()
        .num_threads(2)
        .thread_name(|_| unreachable!("no pool is built"))
        .build_global()
        .unwrap_err();
    assert!(
        matches!(err, ThreadPoolBuildError::GlobalPoolExists),
        "{err:?}"
    );
    assert!(
        format!("{err:?}").contains("call build_global once"),
        "Debug carries the message: {err:?}"
    );
}

/// rayon code driving a `ThreadPool` through its methods, unchanged but for the import.
#[test]
fn a_thread_pool_offers_rayon_s_methods() {
    let pool = ThreadPoolBuilder::new().num_threads(2).build().unwrap();
    assert_eq!(pool.install(|| 6 * 7), 42);
    assert_eq!(pool.join(|| 1, || 2), (1, 2));
    let mut parts = [0; 4];
    pool.scope(|s| {
        for (i, part) in parts.iter_mut().enumerate() {
            s.spawn(move |_| *part = i);
        }
    });
    assert_eq!(parts, [0, 1, 2, 3]);
    let fifo = AtomicUsize::new(0);
    pool.scope_fifo(|s| {
        s.spawn_fifo(|_| {
            fifo.fetch_add(1, Ordering::SeqCst);
        })
    });
    assert_eq!(fifo.into_inner(), 1);
    assert_eq!(pool.in_place_scope(|_| 5), 5);
    let (tx, rx) = std::sync::mpsc::channel();
    let tx2 = tx.clone();
    pool.spawn(move || tx.send(1).unwrap());
    pool.spawn_fifo(move || tx2.send(2).unwrap());
    let mut got: Vec<i32> = rx.iter().take(2).collect();
    got.sort_unstable();
    assert_eq!(got, [1, 2]);
    assert_eq!(pool.broadcast(|ctx| ctx.index()), [0, 1]);
    assert_eq!(pool.current_num_threads(), 2);
    assert_eq!(pool.current_thread_index(), None);
    assert!(pool.install(|| pool.current_thread_index()).unwrap() < 2);
    assert_eq!(pool.yield_now(), None, "not on a worker");
    assert!(pool.install(|| pool.yield_local()).is_some());
}

#[test]
fn max_num_threads_is_the_builders_limit() {
    assert_eq!(ember::max_num_threads(), ember::PoolBuilder::MAX_THREADS);
    assert!(ember::max_num_threads() >= ember::current_num_threads());
}
