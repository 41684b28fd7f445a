//! The flow's submission queue (`flow/queue.rs`): the double-buffered and lockstep queues
//! between the submitting thread and the scheduler thread lose, duplicate and reorder nothing,
//! and a close racing a push is seen.

use crate::flow::queue::SubmissionQueue;
use loom::sync::Arc;
use loom::thread;

fn model(f: impl Fn() + Sync + Send + 'static) {
    let mut builder = loom::model::Builder::new();
    builder.preemption_bound = Some(3);
    builder.check(f);
}

/// Two producers push two items each while the scheduler swaps; the scheduler waits for
/// exactly four items without the queue being closed, so a lost wake-up leaves every
/// thread blocked and loom reports the deadlock. Every item arrives once, each producer's
/// items in order; after `close` the queue is drained and refuses pushes.
fn run(lockstep: bool) {
    model(move || {
        let queue = Arc::new(SubmissionQueue::<(usize, usize)>::new());
        let producers: Vec<_> = (0..2)
            .map(|p| {
                let queue = queue.clone();
                thread::spawn(move || {
                    for i in 0..2 {
                        queue.push((p, i)).expect("open");
                    }
                })
            })
            .collect();
        let mut seen = Vec::new();
        let mut back = Vec::new();
        while seen.len() < 4 {
            let more = if lockstep {
                queue.take_lockstep(|item| seen.push(item))
            } else {
                let more = queue.take(&mut back);
                seen.append(&mut back);
                more
            };
            assert!(more, "the queue is open");
        }
        for p in producers {
            p.join().unwrap();
        }
        assert_eq!(seen.len(), 4, "duplicated: {seen:?}");
        for p in 0..2 {
            let mine: Vec<usize> = seen.iter().filter(|s| s.0 == p).map(|s| s.1).collect();
            assert_eq!(mine, vec![0, 1], "reordered: {seen:?}");
        }
        queue.close();
        assert!(!queue.take(&mut back), "closed and drained");
        assert!(queue.push((9, 9)).is_err());
    });
}

/// A close racing a push: the scheduler gets the item or the push is refused, never
/// neither, and the scheduler wakes up for the close.
#[test]
fn loom_close_races_push() {
    model(|| {
        let queue = Arc::new(SubmissionQueue::<u8>::new());
        let pusher = {
            let queue = queue.clone();
            thread::spawn(move || queue.push(1).is_ok())
        };
        let closer = {
            let queue = queue.clone();
            thread::spawn(move || queue.close())
        };
        let mut got = Vec::new();
        let mut back = Vec::new();
        while queue.take(&mut back) {
            got.append(&mut back);
        }
        closer.join().unwrap();
        let accepted = pusher.join().unwrap();
        assert_eq!(got.len(), usize::from(accepted));
    });
}

#[test]
fn loom_double_buffered_queue_loses_and_reorders_nothing() {
    run(false);
}

#[test]
fn loom_lockstep_queue_loses_and_reorders_nothing() {
    run(true);
}
