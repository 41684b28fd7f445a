//! One consumer's loop: pull up to a batch without blocking, wake the next consumer when the
//! batch came full, handle it, then wait (consumer 0 on the queue, the others on their own
//! parkers) and, on close, pass the exit on. The protocol and its invariants are in the
//! parent module.

use std::panic::{self, AssertUnwindSafe};

use super::{BlockingQueue, TryRecv};
use crate::park::Parker;
use crate::sync::atomic::{AtomicBool, Ordering};

/// What every consumer thread shares.
pub(super) struct Shared<Q, F> {
    pub(super) queue: Q,
    pub(super) handler: F,
    pub(super) batch: usize,
    /// `parkers[i - 1]` belongs to consumer `i`; consumer 0 waits on the queue instead.
    pub(super) parkers: Box<[Parker]>,
    /// Set when the consumers must quit without pulling: a spawn failed or a queue call
    /// panicked. Read after every park.
    pub(super) stop: AtomicBool,
}

/// One consumer's counts, returned by its thread.
#[derive(Default)]
pub(super) struct Tally {
    pub(super) handled: u64,
    pub(super) panics: u64,
    pub(super) wakeups: u64,
}

/// How a pull ended.
#[derive(PartialEq, Eq)]
enum Pull {
    /// `batch` items pulled without waiting: the puller is overloaded.
    Full,
    /// The queue ran dry before the batch was full.
    Empty,
    /// The queue is closed and drained.
    Closed,
}

/// Passes the exit on to the next consumer (invariant 4), also when unwinding.
struct HandOff<'a> {
    next: Option<&'a Parker>,
    stop: &'a AtomicBool,
}

impl Drop for HandOff<'_> {
    fn drop(&mut self) {
        if std::thread::panicking() {
            // The queue panicked: the chain cannot rely on seeing `Closed`.
            self.stop.store(true, Ordering::SeqCst);
        }
        if let Some(next) = self.next {
            next.unpark();
        }
    }
}

impl<Q, F> Shared<Q, F>
where
    Q: BlockingQueue,
    F: Fn(Q::Item),
{
    /// The body of consumer `index`.
    pub(super) fn consume(&self, index: usize) -> Tally {
        let mut tally = Tally::default();
        // Consumer 0 has no parker of its own, and the last consumer no successor.
        let own = index.checked_sub(1).map(|i| &self.parkers[i]);
        // Unparks the next consumer on every return, and on unwinding.
        let _hand_off = HandOff {
            next: self.parkers.get(index),
            stop: &self.stop,
        };
        if let Some(own) = own {
            // Start asleep: a consumer > 0 joins in only once its predecessor is overloaded.
            if !self.park(own, &mut tally) {
                return tally;
            }
        }
        // Capped so that a huge `batch` does not allocate up front.
        let mut items = Vec::with_capacity(self.batch.min(256));
        loop {
            let pull = self.pull(&mut items);
            if pull == Pull::Full {
                // Overloaded: let the next consumer pull while this one handles its batch.
                // If it is between finding the queue empty and parking, the token makes its
                // park return, and it pulls again (see "Why no wake-up is lost").
                if let Some(next) = self.parkers.get(index) {
                    next.unpark();
                }
            }
            // A panicking item must not cost the rest of the batch. `AssertUnwindSafe`: what
            // the handler shares with other calls is its own to keep consistent, exactly as
            // with a panic on a thread of its own.
            for item in items.drain(..) {
                tally.handled += 1;
                if panic::catch_unwind(AssertUnwindSafe(|| (self.handler)(item))).is_err() {
                    tally.panics += 1;
                }
            }
            match pull {
                Pull::Full => {}
                Pull::Closed => return tally,
                Pull::Empty => match own {
                    Some(own) => {
                        if !self.park(own, &mut tally) {
                            return tally;
                        }
                    }
                    None => {
                        tally.wakeups += 1;
                        match self.queue.recv() {
                            Some(item) => items.push(item),
                            None => return tally,
                        }
                    }
                },
            }
        }
    }

    /// Pulls into `items` without blocking until it holds `batch` items or the queue is
    /// empty or closed.
    fn pull(&self, items: &mut Vec<Q::Item>) -> Pull {
        while items.len() < self.batch {
            match self.queue.try_recv() {
                TryRecv::Item(item) => items.push(item),
                TryRecv::Empty => return Pull::Empty,
                TryRecv::Closed => return Pull::Closed,
            }
        }
        Pull::Full
    }

    /// Parks on `own` until unparked; `false` if the consumer must quit without pulling.
    fn park(&self, own: &Parker, tally: &mut Tally) -> bool {
        if own.park(None) {
            tally.wakeups += 1;
        }
        !self.stop.load(Ordering::SeqCst)
    }
}
