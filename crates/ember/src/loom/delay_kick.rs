//! loom model of delay-kick (`pool/workers/held.rs`).
//!
//! Worker 0 finishes a task that releases two successors, holds them, takes one and kicks
//! the other through the real `Sleep::notify_local`, then blocks in its own successor
//! until the kicked one has run. Worker 1 starts idle and goes to sleep concurrently. If
//! the kick's wake-up were lost, both would block and loom would report a deadlock.

use loom::sync::atomic::{AtomicUsize, Ordering};
use loom::sync::Arc;
use loom::thread;

use crate::pool::workers::held::Held;
use crate::sync::{lock, Condvar, Mutex};
use crate::wake::{Sleep, WakePolicy, WakeState};

fn kicked_successor_reaches_sleeper(policy: WakePolicy) {
    let mut builder = loom::model::Builder::new();
    builder.preemption_bound = Some(3);
    builder.check(move || {
        let sleep = Arc::new(Sleep::new(policy, 2));
        let local0 = Arc::new(AtomicUsize::new(0)); // worker 0's deque, as a count
        let ran = Arc::new((Mutex::new(0usize), Condvar::new()));

        let take = |queue: &AtomicUsize| {
            let mut n = queue.load(Ordering::SeqCst);
            while n > 0 {
                match queue.compare_exchange(n, n - 1, Ordering::SeqCst, Ordering::SeqCst) {
                    Ok(_) => return true,
                    Err(actual) => n = actual,
                }
            }
            false
        };

        let thief = {
            let (sleep, local0, ran) = (Arc::clone(&sleep), Arc::clone(&local0), Arc::clone(&ran));
            thread::spawn(move || {
                let mut me = WakeState::default();
                loop {
                    if *lock(&ran.0) == 2 {
                        return;
                    }
                    sleep.start_searching(&mut me);
                    if take(&local0) {
                        sleep.found_work(&mut me, |_| 0);
                        let mut count = lock(&ran.0);
                        *count += 1;
                        ran.1.notify_all();
                        continue;
                    }
                    sleep.sleep(
                        1,
                        &mut me,
                        |_| local0.load(Ordering::SeqCst) > 0,
                        || *lock(&ran.0) == 2,
                        None,
                    );
                }
            })
        };

        // Worker 0: two successors released by a finished task.
        let held = Held::new();
        held.hold("first");
        held.hold("second");
        let mine = held.take_and_kick(|_job| {
            let len = local0.fetch_add(1, Ordering::SeqCst) + 1;
            sleep.notify_local(|| len);
        });
        assert_eq!(mine, Some("first"));
        // Run "first": it finishes only once "second" has run elsewhere.
        let mut count = lock(&ran.0);
        *count += 1;
        ran.1.notify_all();
        while *count < 2 {
            count = ran.1.wait(count).unwrap();
        }
        drop(count);
        sleep.wake_all();
        thief.join().unwrap();
        assert_eq!(local0.load(Ordering::SeqCst), 0);
    });
}

#[test]
fn loom_delay_kick_eager() {
    kicked_successor_reaches_sleeper(WakePolicy::Eager);
}

#[test]
fn loom_delay_kick_searching() {
    kicked_successor_reaches_sleeper(WakePolicy::Searching);
}

#[test]
fn loom_delay_kick_biased() {
    kicked_successor_reaches_sleeper(WakePolicy::Biased { batch: 1 });
}
