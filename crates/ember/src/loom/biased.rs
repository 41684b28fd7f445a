//! loom models of the standalone biased consumers (`biased/`): the overload hand-off down the
//! chain of consumers is never lost, and closing the queue reaches every consumer, in turn.
//! They drive the real `spawn_consumers` over a small closable queue of loom primitives.

use std::collections::VecDeque;
use std::sync::Arc;

use crate::biased::{spawn_consumers, BlockingQueue, TryRecv};
use crate::sync::{lock, Condvar, Mutex};

/// The smallest closable queue over the model-checked primitives.
#[derive(Default)]
struct Queue {
    state: Mutex<State>,
    ready: Condvar,
}

#[derive(Default)]
struct State {
    items: VecDeque<u32>,
    closed: bool,
}

impl Queue {
    fn push(&self, items: &[u32]) {
        lock(&self.state).items.extend(items);
        self.ready.notify_one();
    }

    fn close(&self) {
        lock(&self.state).closed = true;
        self.ready.notify_all();
    }
}

impl BlockingQueue for Queue {
    type Item = u32;

    fn recv(&self) -> Option<u32> {
        let mut state = lock(&self.state);
        loop {
            if let Some(item) = state.items.pop_front() {
                return Some(item);
            }
            if state.closed {
                return None;
            }
            state = self.ready.wait(state).unwrap();
        }
    }

    fn try_recv(&self) -> TryRecv<u32> {
        let mut state = lock(&self.state);
        match state.items.pop_front() {
            Some(item) => TryRecv::Item(item),
            None if state.closed => TryRecv::Closed,
            None => TryRecv::Empty,
        }
    }
}

fn model(f: impl Fn() + Sync + Send + 'static) {
    // `Builder::new` reads `LOOM_MAX_PREEMPTIONS`; without it, three preemptions keep a
    // run short while covering every interleaving the arguments in the module doc use.
    let mut builder = loom::model::Builder::new();
    if builder.preemption_bound.is_none() {
        builder.preemption_bound = Some(3);
    }
    builder.check(f);
}

/// Items pushed while the consumers run, then a close: each item is handled exactly once
/// and both consumers exit (loom reports a deadlock if one parks forever).
#[test]
fn close_reaches_every_consumer() {
    model(|| {
        let queue = Arc::new(Queue::default());
        let seen = Arc::new(Mutex::new(Vec::new()));
        let log = Arc::clone(&seen);
        let consumers = spawn_consumers(Arc::clone(&queue), 2, 1, move |item| {
            lock(&log).push(item);
        })
        .unwrap();
        queue.push(&[1]);
        queue.push(&[2]);
        queue.close();
        let handled = consumers.join();
        assert_eq!(handled.iter().sum::<u64>(), 2);
        let mut seen = lock(&seen).clone();
        seen.sort_unstable();
        assert_eq!(seen, [1, 2]);
    });
}

/// The close travels down a chain of three, through a consumer that may itself be
/// awake, parking, or parked when its predecessor exits.
#[test]
fn close_travels_down_the_chain() {
    model(|| {
        let queue = Arc::new(Queue::default());
        let consumers = spawn_consumers(Arc::clone(&queue), 3, 1, |_| {}).unwrap();
        queue.push(&[1]);
        queue.close();
        assert_eq!(consumers.join().iter().sum::<u64>(), 1);
    });
}

/// The overload hand-off is never lost. Items 2 and 3 arrive together, and whoever
/// handles one of them waits until the other is being handled too, so both consumers must
/// hold one at once. If consumer 0 takes one first, only its hand-off can bring consumer 1
/// in, and consumer 1 may be on its way to park after finding the queue empty right then.
#[test]
fn overload_hand_off_is_not_lost() {
    model(|| {
        let queue = Arc::new(Queue::default());
        let started = Arc::new((Mutex::new([false; 2]), Condvar::new()));
        let rendezvous = Arc::clone(&started);
        let consumers = spawn_consumers(Arc::clone(&queue), 2, 1, move |item| {
            if item == 1 {
                return;
            }
            let (flags, cvar) = &*rendezvous;
            let mut flags = lock(flags);
            flags[item as usize - 2] = true;
            cvar.notify_all();
            while !flags[3 - item as usize] {
                flags = cvar.wait(flags).unwrap();
            }
        })
        .unwrap();
        queue.push(&[1]);
        queue.push(&[2, 3]);
        queue.close();
        let handled = consumers.join();
        assert_eq!(handled, [2, 1]);
    });
}
