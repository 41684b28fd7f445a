//! loom models of every container written in this crate.
//!
//! Run with `RUSTFLAGS="--cfg loom" CARGO_TARGET_DIR=target/loom cargo test -p ember-containers
//! --release`. Each model explores every interleaving of its threads up to a preemption bound
//! and checks that no item is lost or handed out twice.
#![cfg(loom)]

use std::panic::{self, AssertUnwindSafe};

use ember_containers::amp_deque::{self, Fixed, Published, Variant};
use ember_containers::{SpmcBatch, TreiberStack};
use loom::sync::Arc;
use loom::thread;

fn model(f: impl Fn() + Sync + Send + 'static) {
    let mut builder = loom::model::Builder::new();
    builder.preemption_bound = Some(3);
    builder.check(f);
}

/// Joins `threads` and yields every item their pops got.
fn popped<I: IntoIterator<Item = Option<usize>>>(
    threads: Vec<thread::JoinHandle<I>>,
) -> impl Iterator<Item = usize> {
    threads
        .into_iter()
        .flat_map(|thread| thread.join().unwrap())
        .flatten()
}

/// Two threads that each pop `batch` twice.
fn two_consumers_popping_twice(
    batch: &Arc<SpmcBatch<usize>>,
) -> Vec<thread::JoinHandle<[Option<usize>; 2]>> {
    (0..2)
        .map(|_| {
            let batch = Arc::clone(batch);
            thread::spawn(move || [batch.pop(), batch.pop()])
        })
        .collect()
}

/// Asserts that `got` holds each of `expected` exactly once.
fn assert_each_once(mut got: Vec<usize>, expected: &[usize]) {
    got.sort_unstable();
    if let Some(pair) = got.windows(2).find(|pair| pair[0] == pair[1]) {
        panic!("duplicate item {} in {got:?}", pair[0]);
    }
    assert_eq!(got, expected, "lost item");
}

#[test]
fn treiber_push_pop_races() {
    model(|| {
        let stack = Arc::new(TreiberStack::new());
        stack.push(0);
        let workers: Vec<_> = [1, 2]
            .into_iter()
            .map(|item| {
                let stack = Arc::clone(&stack);
                thread::spawn(move || {
                    stack.push(item);
                    stack.pop()
                })
            })
            .collect();
        let mut got: Vec<usize> = workers
            .into_iter()
            .filter_map(|worker| worker.join().unwrap())
            .collect();
        got.extend(std::iter::from_fn(|| stack.pop()));
        assert_each_once(got, &[0, 1, 2]);
    });
}

#[test]
fn treiber_concurrent_pops() {
    model(|| {
        let stack = Arc::new(TreiberStack::new());
        for item in 0..3 {
            stack.push(item);
        }
        let poppers: Vec<_> = (0..2)
            .map(|_| {
                let stack = Arc::clone(&stack);
                thread::spawn(move || [stack.pop(), stack.pop()])
            })
            .collect();
        let got: Vec<usize> = popped(poppers).collect();
        // Four pops of three items: all three come out, one pop finds the stack empty.
        assert_each_once(got, &[0, 1, 2]);
        assert!(stack.is_empty());
    });
}

#[test]
fn spmc_claims_while_producer_appends() {
    model(|| {
        let batch = Arc::new(SpmcBatch::with_capacity(2));
        let consumers: Vec<_> = (0..2)
            .map(|_| {
                let batch = Arc::clone(&batch);
                thread::spawn(move || batch.pop())
            })
            .collect();
        batch.try_push(0).unwrap();
        batch.try_push(1).unwrap();
        let mut got: Vec<usize> = consumers
            .into_iter()
            .filter_map(|consumer| consumer.join().unwrap())
            .collect();
        got.extend(std::iter::from_fn(|| batch.pop()));
        assert_each_once(got, &[0, 1]);
    });
}

#[test]
fn spmc_recycles_only_drained_batches() {
    model(|| {
        let batch = Arc::new(SpmcBatch::with_capacity(1));
        batch.try_push(0).unwrap();
        let consumers = two_consumers_popping_twice(&batch);
        // Succeeds only once `0` was claimed and moved out; otherwise the item comes back.
        let rejected = batch.try_push(1).err();
        let mut got: Vec<usize> = popped(consumers).chain(rejected).collect();
        got.extend(std::iter::from_fn(|| batch.pop()));
        assert_each_once(got, &[0, 1]);
    });
}

#[test]
fn treiber_three_threads() {
    model(|| {
        let stack = Arc::new(TreiberStack::new());
        stack.push(0);
        let mut threads: Vec<_> = [1, 2]
            .into_iter()
            .map(|item| {
                let stack = Arc::clone(&stack);
                thread::spawn(move || {
                    stack.push(item);
                    vec![stack.pop()]
                })
            })
            .collect();
        let popper = Arc::clone(&stack);
        threads.push(thread::spawn(move || vec![popper.pop(), popper.pop()]));
        let mut got: Vec<usize> = popped(threads).collect();
        got.extend(std::iter::from_fn(|| stack.pop()));
        assert_each_once(got, &[0, 1, 2]);
    });
}

#[test]
fn spmc_recycle_under_concurrent_claims() {
    model(|| {
        let batch = Arc::new(SpmcBatch::with_capacity(2));
        batch.try_push(0).unwrap();
        let consumers = two_consumers_popping_twice(&batch);
        // Appends to the live batch, or recycles it once drained, or is refused when full.
        let rejected: Vec<usize> = (1..4)
            .filter_map(|item| batch.try_push(item).err())
            .collect();
        let mut got: Vec<usize> = popped(consumers).chain(rejected).collect();
        got.extend(std::iter::from_fn(|| batch.pop()));
        assert_each_once(got, &[0, 1, 2, 3]);
    });
}

/// The scenario of the published bug: push `0`, `1`; a thief steals `0` up front; then a thief
/// steals once while the owner pops from the bottom three times (a `None` does not stop it: the
/// published version's wrong answer comes from the pop after the one that found the deque
/// empty). Everything taken must be distinct and nothing may be lost.
fn amp_owner_vs_thief<V: Variant>() {
    model(|| {
        let (mut owner, stealer) = amp_deque::new::<V>(4);
        for item in 0..2 {
            owner.push_bottom(item).unwrap();
        }
        let mut got: Vec<usize> = stealer.pop_top().into_iter().collect();
        let thief = thread::spawn(move || stealer.pop_top());
        got.extend((0..3).filter_map(|_| owner.pop_bottom()));
        got.extend(thief.join().unwrap());
        assert_each_once(got, &[0, 1]);
    });
}

/// Two thieves and the owner race for two items, with pushes after the deque may have been
/// reset: the fixed deque must still hand out each item exactly once.
#[test]
fn amp_deque_fixed_two_thieves() {
    model(|| {
        let (mut owner, stealer) = amp_deque::new::<Fixed>(4);
        owner.push_bottom(0).unwrap();
        owner.push_bottom(1).unwrap();
        let thieves: Vec<_> = (0..2)
            .map(|_| {
                let stealer = stealer.clone();
                thread::spawn(move || stealer.pop_top())
            })
            .collect();
        let mut got: Vec<usize> = owner.pop_bottom().into_iter().collect();
        owner.push_bottom(2).unwrap();
        got.extend((0..3).filter_map(|_| owner.pop_bottom()));
        got.extend(
            thieves
                .into_iter()
                .filter_map(|thief| thief.join().unwrap()),
        );
        assert_each_once(got, &[0, 1, 2]);
    });
}

#[test]
fn amp_deque_fixed_has_no_duplicates() {
    amp_owner_vs_thief::<Fixed>();
}

#[test]
fn amp_deque_published_duplicates() {
    let found = panic::catch_unwind(AssertUnwindSafe(amp_owner_vs_thief::<Published>))
        .expect_err("the model checker must find the published deque's counterexample");
    let message = found
        .downcast_ref::<String>()
        .map(String::as_str)
        .or_else(|| found.downcast_ref::<&str>().copied())
        .unwrap_or_default();
    assert!(
        message.starts_with("duplicate item"),
        "the counterexample must be a duplicated item, got: {message:?}"
    );
}
