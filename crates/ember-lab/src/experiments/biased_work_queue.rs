//! The biased work queue of R. O'Callahan, "Biased work queues" (Pernosco,
//! <https://github.com/rocallahan/biased-work-queues>), re-implemented from the write-up's
//! description as a peer row (`biased-work-queue`), so that the lab compares ember with the
//! published technique itself and not only with ember's own version of it.
//!
//! Consumers are numbered `0..n`. A consumer that needs work takes as many items as it can
//! from the channel without blocking, up to [`BATCH`]. If it took none it sleeps: consumer 0
//! on the channel itself, consumer `i > 0` on a parker of its own, which consumer `i - 1`
//! unparks when it took a full batch without blocking (it is "overloaded"). So low-numbered
//! consumers stay busy and high-numbered ones wake only under sustained load. A consumer that
//! finds the channel closed and empty unparks the next one on its way out, so every consumer
//! ends.

use crossbeam_channel::{Receiver, TryRecvError};
use crossbeam_utils::sync::{Parker, Unparker};
use std::thread::{self, JoinHandle};

/// Items a consumer takes at once, and the count that makes it wake the next consumer (the
/// publication's `BATCH_SIZE`).
pub const BATCH: usize = 20;

/// One consumer's end of the queue.
struct Consumer<T> {
    rx: Receiver<T>,
    /// Where this consumer sleeps, unless it is consumer 0 (which sleeps on `rx`).
    parker: Option<Parker>,
    /// Wakes the next consumer, unless this is the last.
    next: Option<Unparker>,
}

impl<T> Consumer<T> {
    /// The next batch of items, or `None` once the channel is closed and empty.
    fn next_batch(&self) -> Option<Vec<T>> {
        let mut batch = Vec::with_capacity(BATCH);
        loop {
            while batch.len() < BATCH {
                match self.rx.try_recv() {
                    Ok(item) => batch.push(item),
                    Err(TryRecvError::Empty) => break,
                    Err(TryRecvError::Disconnected) if batch.is_empty() => {
                        self.wake_next();
                        return None;
                    }
                    Err(TryRecvError::Disconnected) => return Some(batch),
                }
            }
            if !batch.is_empty() {
                if batch.len() == BATCH {
                    self.wake_next();
                }
                return Some(batch);
            }
            match &self.parker {
                Some(parker) => parker.park(),
                // Consumer 0: block on the channel; a closed channel shows on the next try.
                None => batch.extend(self.rx.recv().ok()),
            }
        }
    }

    fn wake_next(&self) {
        if let Some(next) = &self.next {
            next.unpark();
        }
    }
}

/// Starts `threads` consumer threads named `name-i` on `rx`, each calling `handle` on every
/// item it takes; they end when the channel is closed and drained.
pub fn spawn<T: Send + 'static>(
    rx: Receiver<T>,
    threads: usize,
    name: &str,
    handle: impl Fn(T) + Send + Clone + 'static,
) -> Vec<JoinHandle<()>> {
    let parkers: Vec<Parker> = (1..threads.max(1)).map(|_| Parker::new()).collect();
    let unparkers: Vec<Unparker> = parkers.iter().map(|p| p.unparker().clone()).collect();
    let mut parkers = parkers.into_iter();
    (0..threads.max(1))
        .map(|i| {
            let consumer = Consumer {
                rx: rx.clone(),
                parker: if i == 0 { None } else { parkers.next() },
                next: unparkers.get(i).cloned(),
            };
            let handle = handle.clone();
            thread::Builder::new()
                .name(format!("{name}-{i}"))
                .spawn(move || {
                    while let Some(batch) = consumer.next_batch() {
                        batch.into_iter().for_each(&handle);
                    }
                })
                .expect("spawn a biased-work-queue consumer")
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicU64, Ordering};
    use std::sync::Arc;

    /// Every item is handled exactly once and every consumer ends, whether the producer
    /// outruns the consumers or trickles.
    #[test]
    fn handles_every_item_once_and_ends() {
        for (threads, items, trickle) in [(1, 50, false), (3, 1000, false), (4, 60, true)] {
            let (tx, rx) = crossbeam_channel::unbounded::<u64>();
            let sum = Arc::new(AtomicU64::new(0));
            let count = Arc::new(AtomicU64::new(0));
            let (s, c) = (sum.clone(), count.clone());
            let handles = spawn(rx, threads, "bwq-test", move |x| {
                s.fetch_add(x, Ordering::Relaxed);
                c.fetch_add(1, Ordering::Relaxed);
            });
            for x in 0..items {
                tx.send(x).unwrap();
                if trickle {
                    std::thread::yield_now();
                }
            }
            drop(tx);
            for h in handles {
                h.join().unwrap();
            }
            assert_eq!(count.load(Ordering::Relaxed), items);
            assert_eq!(sum.load(Ordering::Relaxed), items * (items - 1) / 2);
        }
    }
}
