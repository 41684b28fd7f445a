//! Multi-threaded stress tests: every item pushed is popped exactly once, for every container.
//!
//! No timing thresholds: each test only counts items in and out.
#![cfg(not(loom))]

use std::sync::atomic::{AtomicBool, AtomicU8, AtomicUsize, Ordering};
use std::thread;

use ember_containers::amp_deque::{self, Fixed};
use ember_containers::{SpmcBatch, TreiberStack, WorkQueue};

/// Per-item counters of how often each item came out.
struct Tally(Vec<AtomicU8>);

impl Tally {
    fn new(items: usize) -> Self {
        Self((0..items).map(|_| AtomicU8::new(0)).collect())
    }

    fn record(&self, item: usize) {
        self.0[item].fetch_add(1, Ordering::Relaxed);
    }

    fn assert_each_once(&self) {
        for (item, count) in self.0.iter().enumerate() {
            assert_eq!(count.load(Ordering::Relaxed), 1, "item {item}");
        }
    }
}

/// Pushes `0..items` from `producers` threads and pops from `consumers` threads until every
/// item has come out.
fn shared_queue(queue: &impl WorkQueue<usize>, producers: usize, consumers: usize, items: usize) {
    let tally = Tally::new(items);
    let popped = AtomicUsize::new(0);
    thread::scope(|s| {
        for p in 0..producers {
            let queue = &queue;
            s.spawn(move || {
                for item in (p..items).step_by(producers) {
                    queue.push(p, item);
                }
            });
        }
        for c in 0..consumers {
            let (queue, tally, popped) = (&queue, &tally, &popped);
            s.spawn(move || {
                while popped.load(Ordering::Relaxed) < items {
                    match queue.pop(producers + c) {
                        Some(item) => {
                            tally.record(item);
                            popped.fetch_add(1, Ordering::Relaxed);
                        }
                        None => thread::yield_now(),
                    }
                }
            });
        }
    });
    tally.assert_each_once();
}

#[test]
fn treiber_stack_mpmc() {
    let stack = TreiberStack::new();
    shared_queue(&stack, 3, 3, 200_000);
    assert!(stack.is_empty());
}

#[test]
fn treiber_stack_drops_leftovers() {
    let stack = TreiberStack::new();
    let marker = std::sync::Arc::new(());
    for _ in 0..10 {
        stack.push(std::sync::Arc::clone(&marker));
    }
    drop(stack.pop());
    drop(stack);
    assert_eq!(std::sync::Arc::strong_count(&marker), 1);
}

#[test]
fn spmc_batch_one_producer() {
    let batch = SpmcBatch::with_capacity(64);
    shared_queue(&batch, 1, 3, 200_000);
    assert!(batch.is_empty());
}

#[test]
fn spmc_batch_drops_leftovers() {
    let marker = std::sync::Arc::new(());
    let batch = SpmcBatch::with_capacity(8);
    for _ in 0..5 {
        batch.try_push(std::sync::Arc::clone(&marker)).unwrap();
    }
    drop(batch.pop());
    drop(batch);
    assert_eq!(std::sync::Arc::strong_count(&marker), 1);
}

#[test]
fn amp_deque_fixed_owner_and_thieves() {
    const ITEMS: usize = 200_000;
    const THIEVES: usize = 3;
    let (mut owner, stealer) = amp_deque::new::<Fixed>(32);
    let tally = Tally::new(ITEMS);
    let owner_done = AtomicBool::new(false);
    thread::scope(|s| {
        for _ in 0..THIEVES {
            let (stealer, tally, owner_done) = (stealer.clone(), &tally, &owner_done);
            s.spawn(move || loop {
                // Read the flag first: once the owner is done and the deque is empty, no item
                // can appear any more.
                let done = owner_done.load(Ordering::Acquire);
                match stealer.pop_top() {
                    Some(item) => tally.record(item),
                    None if done => break,
                    None => thread::yield_now(),
                }
            });
        }
        for item in 0..ITEMS {
            let mut item = item;
            while let Err(back) = owner.push_bottom(item) {
                // Full: work from the bottom (which also resets the deque once it empties).
                if let Some(own) = owner.pop_bottom() {
                    tally.record(own);
                }
                item = back;
            }
            if item % 3 == 0 {
                if let Some(own) = owner.pop_bottom() {
                    tally.record(own);
                }
            }
        }
        while let Some(own) = owner.pop_bottom() {
            tally.record(own);
        }
        owner_done.store(true, Ordering::Release);
    });
    tally.assert_each_once();
}
