//! Where the chains of `micro` and `cycle` report to the thread that waits for them: a
//! queue behind a mutex, and a condition variable that the one waiting thread blocks on.
//!
//! Why not a channel, as elsewhere in the lab: a crossbeam-channel receive (and std's
//! `mpsc`, built the same way) spins, then yields the processor a few times, before it
//! registers and blocks. `micro`'s chained spawn waits for each of its
//! 1,000 chains in turn, and on a 2-core machine the waiting thread, woken by the worker
//! that ran the last chain, often lands on that worker's processor: each of its yields
//! then hands the processor to the worker and back, a context switch counted against the
//! system under test, and whether it lands there changes from run to run
//! (`MEASUREMENTS.md`, "The mailbox", gives the switch counts either way). Here the
//! waiting thread blocks at once, unless the wave's reports are already in, and is woken
//! once a wave, when the last report it waits for arrives (a channel would wake it for
//! each): at most one switch of the waiter per wave, whatever the system.
//!
//! Hand-written because that is what a channel does not do: a receive that never spins or
//! yields and wakes once for many values. A few lines of `std`.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

struct Shared<T> {
    state: Mutex<State<T>>,
    /// Signalled when the values the waiter wants have all arrived, or the last sender is
    /// gone.
    complete: Condvar,
    /// Live [`Post`]s: once there are none, nothing more can arrive. Outside the mutex, so
    /// that a chain's clone and drop of its sender do not take the lock the waiter wakes to:
    /// only the last drop takes it, after its decrement. A waiter reads the count holding
    /// the lock, so a last drop either comes before that read (which then sees 0: the drop's
    /// decrement happens before the lock it takes next, and that lock before or after the
    /// waiter's) or waits for the lock until the waiter sleeps, and then wakes it.
    senders: AtomicUsize,
}

struct State<T> {
    /// Values not yet received, oldest first.
    values: Vec<T>,
    /// How many values the waiting thread waits for; 0 while it does not wait.
    wanted: usize,
}

impl<T> Shared<T> {
    /// The state; a panic while it was held (only a `Vec` whose capacity overflows can
    /// do that) left it whole.
    fn state(&self) -> MutexGuard<'_, State<T>> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// The sending side: cloned into every chain.
pub struct Post<T> {
    shared: Arc<Shared<T>>,
}

impl<T> Clone for Post<T> {
    fn clone(&self) -> Self {
        self.shared.senders.fetch_add(1, Ordering::Relaxed);
        Post {
            shared: Arc::clone(&self.shared),
        }
    }
}

impl<T> Drop for Post<T> {
    /// The last one wakes a waiter: every sender is gone (the threads holding them panicked,
    /// say), so what it waits for will not come.
    fn drop(&mut self) {
        if self.shared.senders.fetch_sub(1, Ordering::AcqRel) != 1 {
            return;
        }
        let waiting = self.shared.state().wanted != 0;
        if waiting {
            self.shared.complete.notify_one();
        }
    }
}

impl<T> Post<T> {
    /// Leaves `value` for the waiting thread, and wakes it if that completes what it waits
    /// for (and only then: a wave's reports wake it once, not once each).
    pub fn send(&self, value: T) {
        let mut state = self.shared.state();
        state.values.push(value);
        let complete = state.wanted != 0 && state.values.len() >= state.wanted;
        drop(state);
        if complete {
            self.shared.complete.notify_one();
        }
    }
}

/// What a wait that ended short got.
#[derive(Debug, PartialEq)]
pub struct Shortfall<T> {
    /// The values that did arrive, oldest first.
    pub arrived: Vec<T>,
    /// Whether the wait ended because every [`Post`] was gone, rather than at its timeout.
    pub senders_gone: bool,
}

impl<T> Shortfall<T> {
    /// When the wait ended, for a panic message; `timeout` was the wait's.
    pub fn when(&self, timeout: Duration) -> String {
        if self.senders_gone {
            "before every sender was gone".to_string()
        } else {
            format!("in {timeout:?}")
        }
    }
}

/// The receiving side, for one waiting thread.
pub struct Mailbox<T> {
    shared: Arc<Shared<T>>,
}

/// A new mailbox and its first sender.
pub fn mailbox<T>() -> (Post<T>, Mailbox<T>) {
    let shared = Arc::new(Shared {
        state: Mutex::new(State {
            values: Vec::new(),
            wanted: 0,
        }),
        complete: Condvar::new(),
        senders: AtomicUsize::new(1),
    });
    (
        Post {
            shared: Arc::clone(&shared),
        },
        Mailbox { shared },
    )
}

impl<T> Mailbox<T> {
    /// The `count` oldest values, oldest first, blocking until that many have arrived; if
    /// `timeout` passes first, or every [`Post`] is dropped before they do, the fewer that
    /// did (taken out of the mailbox) and which of the two ended the wait.
    pub fn recv_many(&self, count: usize, timeout: Duration) -> Result<Vec<T>, Shortfall<T>> {
        let deadline = Instant::now() + timeout;
        let mut state = self.shared.state();
        loop {
            if state.values.len() >= count {
                state.wanted = 0;
                return Ok(state.values.drain(..count).collect());
            }
            let senders_gone = self.shared.senders.load(Ordering::Acquire) == 0;
            let left = deadline.checked_duration_since(Instant::now());
            let Some(left) = left.filter(|_| !senders_gone) else {
                state.wanted = 0;
                return Err(Shortfall {
                    arrived: std::mem::take(&mut state.values),
                    senders_gone,
                });
            };
            state.wanted = count;
            state = self
                .shared
                .complete
                .wait_timeout(state, left)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
    }

    /// The oldest value, if one has arrived.
    pub fn try_recv(&self) -> Option<T> {
        let mut state = self.shared.state();
        (!state.values.is_empty()).then(|| state.values.remove(0))
    }
}

#[cfg(test)]
mod tests {
    use super::{mailbox, Shortfall};
    use std::time::Duration;

    const LONG: Duration = Duration::from_secs(60);

    #[test]
    fn values_from_another_thread_arrive_in_order() {
        let (post, mailbox) = mailbox();
        let sender = std::thread::spawn(move || (0..100).for_each(|i| post.send(i)));
        let first = mailbox.recv_many(60, LONG).unwrap();
        let rest = mailbox.recv_many(40, LONG).unwrap();
        sender.join().unwrap();
        assert_eq!([first, rest].concat(), (0..100).collect::<Vec<_>>());
        assert_eq!(mailbox.try_recv(), None);
    }

    #[test]
    fn a_wait_that_times_out_returns_what_arrived() {
        let (post, mailbox) = mailbox();
        post.send(7);
        assert_eq!(
            mailbox.recv_many(2, Duration::from_millis(10)),
            Err(Shortfall {
                arrived: vec![7],
                senders_gone: false,
            })
        );
        assert_eq!(mailbox.try_recv(), None);
    }

    /// The waiter's own timeout is a day, so only the last sender's drop can end its wait
    /// within the watchdog's minute.
    #[test]
    fn a_wait_ends_once_every_sender_is_gone() {
        let (post, mailbox) = mailbox();
        let (result_tx, result_rx) = std::sync::mpsc::channel();
        let waiter = std::thread::spawn(move || {
            result_tx
                .send(mailbox.recv_many(3, Duration::from_secs(86_400)))
                .unwrap()
        });
        let second = post.clone();
        post.send(1);
        drop(post);
        std::thread::sleep(Duration::from_millis(50));
        second.send(2);
        drop(second);
        let result = result_rx
            .recv_timeout(LONG)
            .expect("the wait outlived every sender");
        let shortfall = Shortfall {
            arrived: vec![1, 2],
            senders_gone: true,
        };
        assert_eq!(result, Err(shortfall));
        waiter.join().unwrap();
    }

    #[test]
    fn values_beyond_those_waited_for_stay_for_later() {
        let (post, mailbox) = mailbox();
        (1..=3).for_each(|i| post.send(i));
        assert_eq!(mailbox.recv_many(2, LONG), Ok(vec![1, 2]));
        assert_eq!(mailbox.try_recv(), Some(3));
    }
}
