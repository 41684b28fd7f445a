//! `ember::iter::plumbing` from outside the crate: a source and a consumer written by a user
//! run like ember's own (checked against the sequential `Iterator`, on pools of 1, 2 and 4
//! workers), and a user's producer that breaks its promises, or panics, cannot make ember
//! write out of bounds, leak or drop an item twice.

use std::ops::Range;
use std::panic::{self, AssertUnwindSafe};
use std::sync::atomic::{AtomicIsize, Ordering};
use std::sync::Arc;

use ember::iter::plumbing::{drive, Consumer, Producer, ProducerCallback, Reducer};
use ember::prelude::*;
use ember::Pool;

fn pool(threads: usize) -> Pool {
    Pool::builder().threads(threads).build().unwrap()
}

/// A user's source: an item for every `i` of a range. `extra` makes each leaf yield that
/// many more items than it has positions, or (below 0) fewer: a broken producer. `panic_at`
/// panics at that `i`.
struct Source {
    range: Range<u64>,
    extra: i64,
    panic_at: Option<u64>,
    live: Arc<AtomicIsize>,
}

/// An item that counts itself in `live` while it exists.
struct Tracked {
    value: u64,
    live: Arc<AtomicIsize>,
}

impl Tracked {
    fn new(value: u64, live: &Arc<AtomicIsize>) -> Tracked {
        live.fetch_add(1, Ordering::SeqCst);
        Tracked {
            value,
            live: Arc::clone(live),
        }
    }
}

impl Drop for Tracked {
    fn drop(&mut self) {
        self.live.fetch_sub(1, Ordering::SeqCst);
    }
}

struct SourceProducer(Source);

impl Producer for SourceProducer {
    type Item = Tracked;
    type IntoIter = std::vec::IntoIter<Tracked>;

    fn len(&self) -> usize {
        (self.0.range.end - self.0.range.start) as usize
    }

    fn split_at(self, index: usize) -> (Self, Self) {
        let Source {
            range,
            extra,
            panic_at,
            live,
        } = self.0;
        let mid = range.start + index as u64;
        let left = Source {
            range: range.start..mid,
            extra,
            panic_at,
            live: Arc::clone(&live),
        };
        let right = Source {
            range: mid..range.end,
            extra,
            panic_at,
            live,
        };
        (SourceProducer(left), SourceProducer(right))
    }

    fn into_iter(self) -> Self::IntoIter {
        let s = self.0;
        let len = (s.range.end - s.range.start) as i64;
        let extra = (0..s.extra.max(0)).map(|_| u64::MAX);
        s.range
            .clone()
            .take((len + s.extra.min(0)).max(0) as usize)
            .chain(extra)
            .map(|i| {
                assert!(Some(i) != s.panic_at, "planned panic at {i}");
                Tracked::new(i, &s.live)
            })
            .collect::<Vec<_>>()
            .into_iter()
    }
}

impl ParallelIterator for Source {
    type Item = Tracked;
    fn with_producer<CB: ProducerCallback<Tracked>>(self, callback: CB) -> CB::Output {
        callback.callback(SourceProducer(self))
    }
    fn opt_len(&self) -> Option<usize> {
        Some(self.len())
    }
}

impl IndexedParallelIterator for Source {
    fn len(&self) -> usize {
        (self.range.end - self.range.start) as usize
    }
}

fn source(range: Range<u64>, live: &Arc<AtomicIsize>) -> Source {
    Source {
        range,
        extra: 0,
        panic_at: None,
        live: Arc::clone(live),
    }
}

/// A user's consumer: the sum and the number of items, and the items in order.
struct Stats;
struct Merge;

type Summary = (u64, usize, Vec<u64>);

impl Consumer<Tracked> for Stats {
    type Result = Summary;
    type Reducer = Merge;
    fn split_at(self, _index: usize) -> (Self, Self, Merge) {
        (Stats, Stats, Merge)
    }
    fn fold<I: Iterator<Item = Tracked>>(self, items: I) -> Summary {
        items.fold((0, 0, Vec::new()), |(sum, n, mut seen), item| {
            seen.push(item.value);
            (sum + item.value, n + 1, seen)
        })
    }
}

impl Reducer<Summary> for Merge {
    fn reduce(self, left: Summary, right: Summary) -> Summary {
        let mut seen = left.2;
        seen.extend(right.2);
        (left.0 + right.0, left.1 + right.1, seen)
    }
}

const LENGTHS: [u64; 5] = [0, 1, 7, 1_000, 20_000];

#[test]
fn a_user_s_source_matches_the_sequential_iterator() {
    for threads in [1, 2, 4] {
        let pool = pool(threads);
        for len in LENGTHS {
            let live = Arc::new(AtomicIsize::new(0));
            let expected: Vec<u64> = (0..len).map(|i| i * 3).collect();
            let got: Vec<u64> = pool.install(|| {
                source(0..len, &live)
                    .map(|t| t.value * 3)
                    .collect::<Vec<_>>()
            });
            assert_eq!(got, expected, "{threads} workers, {len} items");
            let pairs: Vec<(usize, u64)> = pool.install(|| {
                source(0..len, &live)
                    .enumerate()
                    .filter(|(i, _)| i % 2 == 0)
                    .map(|(i, t)| (i, t.value))
                    .collect()
            });
            let expected: Vec<(usize, u64)> =
                (0..len).map(|i| (i as usize, i)).step_by(2).collect();
            assert_eq!(pairs, expected, "{threads} workers, {len} items");
            assert_eq!(live.load(Ordering::SeqCst), 0, "every item dropped once");
        }
    }
}

#[test]
fn a_user_s_consumer_matches_the_sequential_fold() {
    for threads in [1, 2, 4] {
        let pool = pool(threads);
        for len in LENGTHS {
            let live = Arc::new(AtomicIsize::new(0));
            let (sum, n, seen) = pool.install(|| drive(source(0..len, &live), Stats));
            assert_eq!((sum, n), ((0..len).sum::<u64>(), len as usize));
            assert_eq!(seen, (0..len).collect::<Vec<_>>(), "in order");
            // Outside every pool too (the global pool).
            assert_eq!(drive(source(0..len, &live), Stats).1, len as usize);
            assert_eq!(live.load(Ordering::SeqCst), 0);
        }
    }
}

/// A producer whose leaves yield more, or fewer, items than they have positions: `collect`
/// panics with a message naming the broken promise, and drops every item it took, once; the
/// pool lives.
#[test]
fn a_producer_breaking_its_length_makes_collect_panic_cleanly() {
    for (threads, extra) in [1, 2, 4].into_iter().flat_map(|t| [(t, 1), (t, -1)]) {
        let pool = pool(threads);
        let live = Arc::new(AtomicIsize::new(0));
        let broken = Source {
            extra,
            ..source(0..10_000, &live)
        };
        let outcome = pool
            .install(|| panic::catch_unwind(AssertUnwindSafe(|| broken.collect::<Vec<Tracked>>())));
        let payload = outcome.err().expect("collect panics");
        let message = payload
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| payload.downcast_ref::<&str>().map(|s| s.to_string()))
            .unwrap_or_default();
        assert!(message.contains("announced"), "{message}");
        assert_eq!(live.load(Ordering::SeqCst), 0, "{threads} workers");
        assert_eq!(
            pool.install(|| (0..100u32).into_par_iter().sum::<u32>()),
            4950
        );
    }
}

/// A panic inside a user's producer reaches the caller of each kind of consumer; every item
/// made is dropped once, and the pool still runs.
#[test]
fn a_panicking_producer_is_re_raised_and_leaks_nothing() {
    for threads in [1, 2, 4] {
        let pool = pool(threads);
        let live = Arc::new(AtomicIsize::new(0));
        let broken = || Source {
            panic_at: Some(7_001),
            ..source(0..10_000, &live)
        };
        let runs: [&(dyn Fn() + Sync); 4] = [
            &|| drop(broken().collect::<Vec<Tracked>>()),
            &|| drop(drive(broken(), Stats)),
            &|| broken().for_each(drop),
            &|| {
                broken().map(|t| t.value).sum::<u64>();
            },
        ];
        for (kind, run) in runs.iter().enumerate() {
            let outcome = pool.install(|| panic::catch_unwind(AssertUnwindSafe(run)));
            assert!(outcome.is_err(), "consumer {kind}: the panic is re-raised");
            assert_eq!(live.load(Ordering::SeqCst), 0, "consumer {kind}");
        }
        assert_eq!(pool.install(|| drive(source(0..10, &live), Stats).1), 10);
    }
}
