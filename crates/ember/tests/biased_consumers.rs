//! The standalone biased consumer: delivery, shutdown, errors, panics, and the bias itself.

use std::panic::{self, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

use ember::biased::{spawn_consumers, BlockingQueue, SpawnError, TryRecv};

/// Sends `0..items` through `threads` consumers with the given batch and checks that every
/// item was handled exactly once.
fn exactly_once(items: usize, threads: usize, batch: usize) {
    let seen: Arc<Vec<AtomicBool>> = Arc::new((0..items).map(|_| AtomicBool::new(false)).collect());
    let duplicates = Arc::new(AtomicU64::new(0));
    let (tx, rx) = crossbeam_channel::unbounded();
    let consumers = {
        let seen = Arc::clone(&seen);
        let duplicates = Arc::clone(&duplicates);
        spawn_consumers(rx, threads, batch, move |item: usize| {
            if seen[item].swap(true, Ordering::Relaxed) {
                duplicates.fetch_add(1, Ordering::Relaxed);
            }
        })
        .unwrap()
    };
    for item in 0..items {
        tx.send(item).unwrap();
    }
    drop(tx);
    let report = consumers.join_report();

    assert_eq!(report.handled.len(), threads);
    assert_eq!(report.wakeups.len(), threads);
    assert_eq!(report.panics, 0);
    assert_eq!(report.handled.iter().sum::<u64>(), items as u64);
    assert_eq!(duplicates.load(Ordering::Relaxed), 0);
    let missing = seen
        .iter()
        .filter(|flag| !flag.load(Ordering::Relaxed))
        .count();
    assert_eq!(
        missing, 0,
        "{threads} threads, batch {batch}: items never handled"
    );
}

#[test]
fn every_item_is_handled_exactly_once() {
    for threads in [1, 2, 8] {
        for batch in [1, 20] {
            exactly_once(100_000, threads, batch);
        }
    }
}

#[test]
fn a_queue_filled_and_closed_before_spawning_is_drained() {
    let (tx, rx) = crossbeam_channel::unbounded();
    for item in 0..10_000u64 {
        tx.send(item).unwrap();
    }
    drop(tx);
    let sum = Arc::new(AtomicU64::new(0));
    let total = Arc::clone(&sum);
    let consumers = spawn_consumers(rx, 4, 20, move |item: u64| {
        total.fetch_add(item, Ordering::Relaxed);
    })
    .unwrap();
    assert_eq!(consumers.join().iter().sum::<u64>(), 10_000);
    assert_eq!(sum.load(Ordering::Relaxed), 10_000 * 9_999 / 2);
}

#[test]
fn consumers_exit_when_the_channel_closes() {
    for threads in [1, 2, 8] {
        let (tx, rx) = crossbeam_channel::unbounded::<u32>();
        let consumers = spawn_consumers(rx, threads, 20, |_| {}).unwrap();
        assert_eq!(consumers.threads(), threads);
        drop(tx);
        assert_eq!(consumers.join(), vec![0; threads]);
    }
}

#[test]
fn zero_threads_or_zero_batch_is_an_error() {
    let (tx, rx) = crossbeam_channel::unbounded::<u32>();
    let err = spawn_consumers(rx, 0, 20, |_| {}).unwrap_err();
    assert!(matches!(err, SpawnError::ZeroThreads));
    assert!(err.to_string().contains("`threads` >= 1"), "{err}");
    // The queue was dropped: the channel is disconnected.
    assert!(tx.send(1).is_err());

    let (_tx, rx) = crossbeam_channel::unbounded::<u32>();
    let err = spawn_consumers(rx, 4, 0, |_| {}).unwrap_err();
    assert!(matches!(err, SpawnError::ZeroBatch));
    assert!(err.to_string().contains("`batch` >= 1"), "{err}");
    assert!(std::error::Error::source(&err).is_none());
}

#[test]
fn a_panicking_handler_loses_no_other_item() {
    const ITEMS: u64 = 2_000;
    let sum = Arc::new(AtomicU64::new(0));
    let total = Arc::clone(&sum);
    let (tx, rx) = crossbeam_channel::unbounded();
    let consumers = spawn_consumers(rx, 3, 20, move |item: u64| {
        if item % 200 == 0 {
            panic!("item {item} is poison");
        }
        total.fetch_add(item, Ordering::Relaxed);
    })
    .unwrap();
    for item in 0..ITEMS {
        tx.send(item).unwrap();
    }
    drop(tx);
    let report = consumers.join_report();

    let poisoned: Vec<u64> = (0..ITEMS).filter(|item| item % 200 == 0).collect();
    assert_eq!(report.panics, poisoned.len() as u64);
    assert_eq!(report.handled.iter().sum::<u64>(), ITEMS);
    let expected = (0..ITEMS).sum::<u64>() - poisoned.iter().sum::<u64>();
    assert_eq!(sum.load(Ordering::Relaxed), expected);
}

/// Consumer 0 pulls a full batch from a pre-filled queue, so it must wake consumer 1. To make
/// that observable without timing, consumer 0's handler holds its first item until consumer 1
/// has handled one; if the hand-off were lost, consumer 1 would handle nothing.
#[test]
fn sustained_load_wakes_the_next_consumer() {
    let (tx, rx) = crossbeam_channel::unbounded();
    for item in 0..10_000u32 {
        tx.send(item).unwrap();
    }
    drop(tx);
    let helped = Arc::new((Mutex::new(false), Condvar::new()));
    let signal = Arc::clone(&helped);
    let consumers = spawn_consumers(rx, 4, 20, move |_item: u32| {
        let (flag, cvar) = &*signal;
        match std::thread::current().name() {
            Some("biased-0") => {
                let flag = flag.lock().unwrap();
                // A generous bound only so that a broken hand-off fails the assertion below
                // instead of hanging the test run.
                let _ = cvar.wait_timeout_while(flag, Duration::from_secs(60), |helped| !*helped);
            }
            Some("biased-1") => {
                *flag.lock().unwrap() = true;
                cvar.notify_all();
            }
            _ => {}
        }
    })
    .unwrap();
    let handled = consumers.join();
    assert_eq!(handled.iter().sum::<u64>(), 10_000);
    assert!(handled[0] > 0, "{handled:?}");
    assert!(handled[1] > 0, "consumer 1 never woke: {handled:?}");
}

/// The other side of the bias: a trickle of items, each one handled before the next is sent,
/// never fills a batch, so only consumer 0 ever works.
#[test]
fn a_trickle_stays_on_consumer_zero() {
    let (tx, rx) = crossbeam_channel::unbounded();
    let (done_tx, done_rx) = crossbeam_channel::unbounded();
    let consumers = spawn_consumers(rx, 4, 2, move |item: u32| {
        done_tx.send(item).unwrap();
    })
    .unwrap();
    for item in 0..200 {
        tx.send(item).unwrap();
        assert_eq!(done_rx.recv().unwrap(), item);
    }
    drop(tx);
    let report = consumers.join_report();
    assert_eq!(report.handled, [200, 0, 0, 0]);
}

/// A queue that panics when it meets a poisoned item, to check that `join` re-raises the
/// panic instead of hanging.
struct PanickyQueue(crossbeam_channel::Receiver<u32>);

impl BlockingQueue for PanickyQueue {
    type Item = u32;

    fn recv(&self) -> Option<u32> {
        let item = self.0.recv().ok();
        assert_ne!(item, Some(u32::MAX), "queue failure");
        item
    }

    fn try_recv(&self) -> TryRecv<u32> {
        match BlockingQueue::try_recv(&self.0) {
            TryRecv::Item(u32::MAX) => panic!("queue failure"),
            other => other,
        }
    }
}

#[test]
fn a_panicking_queue_is_reraised_by_join() {
    let (tx, rx) = crossbeam_channel::unbounded();
    let consumers = spawn_consumers(PanickyQueue(rx), 3, 4, |_| {}).unwrap();
    for item in 0..100 {
        tx.send(item).unwrap();
    }
    tx.send(u32::MAX).unwrap();
    drop(tx);
    let joined = panic::catch_unwind(AssertUnwindSafe(|| consumers.join()));
    assert!(joined.is_err());
}
