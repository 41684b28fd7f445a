//! The machinery under the parallel iterators, public so that you can write sources and
//! consumers of your own: producers, consumers, and [`drive`], the adaptive bridge that
//! splits one against the other with [`crate::join`].
//!
//! A pipeline is a *producer* (a splittable source of positions: a slice, a range, a `Vec`,
//! wrapped by `map`, `filter`, … adapters) driven into a *consumer* (`sum`, `collect`, …).
//! [`drive`] halves both at the same position while the splitter allows it, runs the halves
//! with `join`, folds each leaf's positions sequentially with an ordinary `Iterator`, and
//! combines the two halves' results with the consumer's reducer, left before right.
//!
//! What you implement, for what:
//!
//! | to write | implement |
//! | --- | --- |
//! | a source (a collection, a tree, a sequence of your own) | [`Producer`], and [`ParallelIterator`] (its `with_producer` calls the callback with your producer) and [`IndexedParallelIterator`](super::IndexedParallelIterator) |
//! | an adapter of another pipeline | [`ProducerCallback`] (receives the inner producer, wraps it in your [`Producer`]) |
//! | a consumer (a reduction of your own) | [`Consumer`] and [`Reducer`], run by [`drive`]; a search that stops early also says which end it looks at ([`Consumer::search`]) |
//! | a producer whose leaf drives pipelines of its own (as `flat_map`'s does) | [`Producer::fold_with`], splitting the consumer it is given |
//!
//! These are ember's traits, not rayon's: smaller (no unindexed consumers, no folders, no
//! `max_len`), so a rayon `Producer` or `Consumer` does not port as it is, but its
//! `split_at` and its sequential iterator carry over. Code that only uses parallel iterators
//! never needs this module.
//!
//! ```
//! use ember::iter::plumbing::{Producer, ProducerCallback};
//! use ember::prelude::*;
//! use std::ops::Range;
//!
//! /// The squares of a range of numbers.
//! struct Squares(Range<u64>);
//!
//! /// Its producer: the range, split at any position.
//! struct SquaresProducer(Range<u64>);
//!
//! impl Producer for SquaresProducer {
//!     type Item = u64;
//!     type IntoIter = std::iter::Map<Range<u64>, fn(u64) -> u64>;
//!     fn len(&self) -> usize {
//!         (self.0.end - self.0.start) as usize
//!     }
//!     fn split_at(self, index: usize) -> (Self, Self) {
//!         let mid = self.0.start + index as u64;
//!         (SquaresProducer(self.0.start..mid), SquaresProducer(mid..self.0.end))
//!     }
//!     fn into_iter(self) -> Self::IntoIter {
//!         self.0.map(|x| x * x)
//!     }
//! }
//!
//! impl ParallelIterator for Squares {
//!     type Item = u64;
//!     fn with_producer<CB: ProducerCallback<u64>>(self, callback: CB) -> CB::Output {
//!         callback.callback(SquaresProducer(self.0))
//!     }
//!     fn opt_len(&self) -> Option<usize> {
//!         Some(self.len())
//!     }
//! }
//!
//! impl IndexedParallelIterator for Squares {
//!     fn len(&self) -> usize {
//!         (self.0.end - self.0.start) as usize
//!     }
//! }
//!
//! let squares: Vec<u64> = Squares(0..5).collect();
//! assert_eq!(squares, [0, 1, 4, 9, 16]);
//! assert_eq!(Squares(0..1000).enumerate().filter(|(i, sq)| i * i == *sq as usize).count(), 1000);
//! ```
//!
//! # Splitting: split while stolen
//!
//! A pipeline starts with a budget of about [`crate::current_num_threads`] splits, halved at
//! every level, so a pool with nothing else to do gets a couple of leaves per worker. A half that
//! runs on another worker than the one that forked it was *stolen*: some worker was idle, so
//! that half gets a fresh budget and splits again. A half that its own worker pops back never
//! resets: on a busy pool, or one whose policy does not wake sleepers for the halves
//! ([`crate::WakePolicy::Biased`]), the leaves stay coarse and no worker is woken for work
//! one thread can do. No leaf is ever split below the pipeline's `with_min_len`.
//!
//! The splitter itself stays private: how a pipeline splits is ember's business.

use super::traits::ParallelIterator;
use crate::{current_num_threads, current_thread_index, join};

/// A splittable source of positions: the producer of one pipeline. Implement it for a source
/// of your own (see [the module](self)), or to wrap another producer in an adapter.
///
/// Every position of an indexed pipeline yields exactly one item; otherwise a position
/// yields any number (none after a `filter`, many after a `flat_map`, a leaf's `fold` one).
/// A producer that yields more or fewer items than it announced makes `collect` panic
/// (never write out of bounds); other consumers see the items it yields.
///
/// ```
/// use ember::iter::plumbing::Producer;
///
/// /// The non-zero bytes of a slice, as `NonZeroU8`: one position per byte, at most one item.
/// struct NonZero<'a>(&'a [u8]);
///
/// impl<'a> Producer for NonZero<'a> {
///     type Item = std::num::NonZeroU8;
///     type IntoIter = std::iter::FilterMap<std::slice::Iter<'a, u8>, fn(&u8) -> Option<Self::Item>>;
///     fn len(&self) -> usize {
///         self.0.len()
///     }
///     fn split_at(self, index: usize) -> (Self, Self) {
///         let (left, right) = self.0.split_at(index);
///         (NonZero(left), NonZero(right))
///     }
///     fn into_iter(self) -> Self::IntoIter {
///         self.0.iter().filter_map(|&b| std::num::NonZeroU8::new(b))
///     }
/// }
///
/// let (left, right) = NonZero(&[1, 0, 3]).split_at(2);
/// assert_eq!(left.into_iter().map(|b| b.get()).collect::<Vec<_>>(), [1]);
/// assert_eq!(right.len(), 1);
/// ```
// `len` counts positions to split at; nothing asks whether there are none.
#[allow(clippy::len_without_is_empty)]
pub trait Producer: Send + Sized {
    /// What the positions yield.
    type Item;
    /// The sequential iterator over one leaf.
    type IntoIter: Iterator<Item = Self::Item>;
    /// The number of positions.
    fn len(&self) -> usize;
    /// The positions `..index` and `index..`; `index <= self.len()`.
    fn split_at(self, index: usize) -> (Self, Self);
    /// The positions as a sequential iterator.
    fn into_iter(self) -> Self::IntoIter;
    /// The fewest positions a leaf may have (`with_min_len`).
    fn min_len(&self) -> usize {
        1
    }
    /// The most positions a leaf may have (`with_max_len`): longer pieces split even when
    /// the budget is spent, unless that goes below `min_len`.
    fn max_len(&self) -> usize {
        usize::MAX
    }
    /// Folds this leaf into `consumer`: `consumer.fold(self.into_iter())` unless the producer
    /// knows better (`flat_map` drives each inner parallel iterator into a piece of the
    /// consumer, in parallel; an adapter hands the consumer on to its base, wrapped).
    ///
    /// ```
    /// use ember::iter::plumbing::{Consumer, Producer};
    /// use ember::prelude::*;
    /// # struct Sum;
    /// # struct Add;
    /// # impl ember::iter::plumbing::Reducer<u32> for Add { fn reduce(self, l: u32, r: u32) -> u32 { l + r } }
    /// # impl Consumer<u32> for Sum {
    /// #     type Result = u32;
    /// #     type Reducer = Add;
    /// #     fn split_at(self, _: usize) -> (Sum, Sum, Add) { (Sum, Sum, Add) }
    /// #     fn fold<I: Iterator<Item = u32>>(self, items: I) -> u32 { items.sum() }
    /// # }
    /// struct Three;
    /// impl Producer for Three {
    ///     type Item = u32;
    ///     type IntoIter = std::ops::Range<u32>;
    ///     fn len(&self) -> usize { 3 }
    ///     fn split_at(self, _: usize) -> (Self, Self) { unimplemented!() }
    ///     fn into_iter(self) -> Self::IntoIter { 0..3 }
    /// }
    /// assert_eq!(Three.fold_with(Sum), 3);
    /// ```
    fn fold_with<C: Consumer<Self::Item>>(self, consumer: C) -> C::Result {
        consumer.fold(self.into_iter())
    }
}

/// Receives the producer of a pipeline (whose type only the pipeline knows): implement it to
/// do something with the producer of any [`ParallelIterator`], such as wrapping it in an
/// adapter's producer, and pass it to [`ParallelIterator::with_producer`].
///
/// ```
/// use ember::iter::plumbing::{Producer, ProducerCallback};
/// use ember::prelude::*;
///
/// /// How many positions a pipeline's producer has.
/// struct Positions;
///
/// impl<T> ProducerCallback<T> for Positions {
///     type Output = usize;
///     fn callback<P: Producer<Item = T>>(self, producer: P) -> usize {
///         producer.len()
///     }
/// }
///
/// assert_eq!(vec![1, 2, 3].par_iter().filter(|x| **x > 1).with_producer(Positions), 3);
/// ```
pub trait ProducerCallback<T> {
    /// What the callback returns.
    type Output;
    /// Runs with the pipeline's producer.
    fn callback<P: Producer<Item = T>>(self, producer: P) -> Self::Output;
}

/// Where the items of a pipeline go: split alongside the producer, folded per leaf. Implement
/// it, with a [`Reducer`], for a reduction of your own, and run it with [`drive`].
///
/// ```
/// use ember::iter::plumbing::{drive, Consumer, Reducer};
/// use ember::prelude::*;
///
/// /// The smallest and the largest item, in one pass.
/// struct MinMax;
/// struct Widen;
///
/// impl Consumer<i64> for MinMax {
///     type Result = Option<(i64, i64)>;
///     type Reducer = Widen;
///     fn split_at(self, _index: usize) -> (Self, Self, Widen) {
///         (MinMax, MinMax, Widen)
///     }
///     fn fold<I: Iterator<Item = i64>>(self, items: I) -> Option<(i64, i64)> {
///         items.fold(None, |acc, x| Widen.reduce(acc, Some((x, x))))
///     }
/// }
///
/// impl Reducer<Option<(i64, i64)>> for Widen {
///     fn reduce(self, l: Option<(i64, i64)>, r: Option<(i64, i64)>) -> Option<(i64, i64)> {
///         match (l, r) {
///             (Some(l), Some(r)) => Some((l.0.min(r.0), l.1.max(r.1))),
///             (l, r) => l.or(r),
///         }
///     }
/// }
///
/// let values = (0..10_000i64).into_par_iter().map(|x| (x * 37) % 1_001 - 500);
/// assert_eq!(drive(values, MinMax), Some((-500, 500)));
/// ```
pub trait Consumer<T>: Send + Sized {
    /// What a leaf, and a combination of leaves, results in.
    type Result: Send;
    /// Combines the results of two halves.
    type Reducer: Reducer<Self::Result>;
    /// The consumers of positions `..index` and `index..`, and how to combine their results.
    fn split_at(self, index: usize) -> (Self, Self, Self::Reducer);
    /// Consumes one leaf's items.
    fn fold<I: Iterator<Item = T>>(self, items: I) -> Self::Result;
    /// Whether the result is already known (`any` found one): stop splitting.
    fn full(&self) -> bool {
        false
    }
    /// Which items the consumer is after: [`Search::Every`] for a consumer that takes them
    /// all (the default); a search that stops early says from which end it looks, and the
    /// bridge then visits that end of every piece first.
    fn search(&self) -> Search {
        Search::Every
    }
}

/// What a [`Consumer`] is after, so that the bridge visits the pieces that matter first.
///
/// ```
/// use ember::iter::plumbing::Search;
/// assert_ne!(Search::Front, Search::Back);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Search {
    /// Every item (`sum`, `collect`, …): pieces run in any order.
    Every,
    /// An item near the front (`find_first`, `find_any`, `any`): the front of each piece is
    /// visited first, in pieces that grow from there, and the rest is skipped once
    /// [`Consumer::full`] says so.
    Front,
    /// An item near the back (`find_last`): the back of each piece first, and the right
    /// half of every split runs on the forking thread, the left half offered to thieves.
    Back,
}

/// Combines the results of two adjacent halves, left then right: a [`Consumer`]'s, returned
/// by its `split_at`. It must be associative (halves are grouped differently from run to
/// run), not commutative.
///
/// ```
/// use ember::iter::plumbing::Reducer;
///
/// /// Concatenates the strings of two halves, in order.
/// struct Concat;
///
/// impl Reducer<String> for Concat {
///     fn reduce(self, left: String, right: String) -> String {
///         left + &right
///     }
/// }
///
/// assert_eq!(Concat.reduce("ab".into(), "cd".into()), "abcd");
/// ```
pub trait Reducer<R> {
    /// The result of the positions of `left` followed by those of `right`.
    fn reduce(self, left: R, right: R) -> R;
}

/// Runs the pipeline `iter` into `consumer`: splits the pipeline's producer and `consumer`
/// at the same positions, adaptively, over the current pool (as every consumer of ember's
/// does), folds each leaf, and reduces the leaves' results in order. A panic in either is
/// re-raised here once the halves running at the time have finished.
///
/// ```
/// use ember::iter::plumbing::{drive, Consumer, Reducer};
/// use ember::prelude::*;
///
/// /// Counts the items.
/// struct Count;
/// struct Add;
///
/// impl<T> Consumer<T> for Count {
///     type Result = usize;
///     type Reducer = Add;
///     fn split_at(self, _index: usize) -> (Self, Self, Add) {
///         (Count, Count, Add)
///     }
///     fn fold<I: Iterator<Item = T>>(self, items: I) -> usize {
///         items.count()
///     }
/// }
///
/// impl Reducer<usize> for Add {
///     fn reduce(self, left: usize, right: usize) -> usize {
///         left + right
///     }
/// }
///
/// assert_eq!(drive((0..1_000u32).into_par_iter().filter(|x| x % 2 == 0), Count), 500);
/// ```
pub fn drive<I, C>(iter: I, consumer: C) -> C::Result
where
    I: ParallelIterator,
    C: Consumer<I::Item>,
{
    iter.with_producer(Drive(consumer))
}

/// Splits `producer` and `consumer` against each other, as [`drive`] does a pipeline's: for
/// adapters that hold a producer and run pieces of it one after another.
pub(super) fn bridge<P: Producer, C: Consumer<P::Item>>(producer: P, consumer: C) -> C::Result {
    Drive(consumer).callback(producer)
}

/// The callback of [`drive`]: bridges the producer it is given to its consumer.
struct Drive<C>(C);

impl<T, C: Consumer<T>> ProducerCallback<T> for Drive<C> {
    type Output = C::Result;
    fn callback<P: Producer<Item = T>>(self, producer: P) -> C::Result {
        let splitter = Splitter::new(producer.min_len());
        descend(producer, self.0, splitter, false)
    }
}

/// The split budget of one subtree of a recursion: a pipeline's, or a parallel sort's.
#[derive(Clone, Copy)]
pub(super) struct Splitter {
    /// Splits this subtree may still make, halved at every level.
    splits: usize,
    /// The fewest positions of a leaf.
    min: usize,
}

impl Splitter {
    /// The budget of a whole recursion whose leaves have at least `min` positions.
    pub(super) fn new(min: usize) -> Splitter {
        Splitter {
            splits: current_num_threads(),
            min: min.max(1),
        }
    }

    /// Whether a piece of `len` positions splits (`stolen`: it runs on another thread than
    /// the one that forked it); if so, the budget of each half is updated.
    #[inline]
    pub(super) fn split(&mut self, len: usize, stolen: bool) -> bool {
        if len / 2 < self.min {
            return false;
        }
        if stolen {
            // Somebody was idle enough to steal this half: give it a full budget again.
            self.splits = (self.splits / 2).max(current_num_threads());
            true
        } else if self.splits > 0 {
            self.splits /= 2;
            true
        } else {
            false
        }
    }
}

/// [`join`], telling `b` whether it was stolen: whether it runs on another thread than the
/// caller. Outside every pool the caller has no index and `join` moves both halves onto a
/// worker: `b` counts as stolen, and so starts with a fresh budget.
#[inline]
pub(super) fn join_stolen<A, B, RA, RB>(a: A, b: B) -> (RA, RB)
where
    A: FnOnce() -> RA + Send,
    B: FnOnce(bool) -> RB + Send,
    RA: Send,
    RB: Send,
{
    let forker = current_thread_index();
    join(a, move || b(current_thread_index() != forker))
}

/// Splits `producer` and `consumer` at the same position while `splitter` allows it.
fn descend<P, C>(producer: P, consumer: C, mut splitter: Splitter, stolen: bool) -> C::Result
where
    P: Producer,
    C: Consumer<P::Item>,
{
    let len = producer.len();
    let too_long = len > producer.max_len() && len / 2 >= splitter.min;
    if consumer.full() {
        // The result is known: the items here cannot change it (and a `filter` could
        // swallow them all without the consumer seeing one).
        return consumer.fold(std::iter::empty());
    }
    if !(splitter.split(len, stolen) || too_long) {
        return leaf(producer, consumer);
    }
    let back = consumer.search() == Search::Back;
    let mid = len / 2;
    let (left_producer, right_producer) = producer.split_at(mid);
    let (left_consumer, right_consumer, reducer) = consumer.split_at(mid);
    let (left, right) = if back {
        // A search from the back: this thread takes the right half.
        let (right, left) = join_stolen(
            move || descend(right_producer, right_consumer, splitter, false),
            move |stolen| descend(left_producer, left_consumer, splitter, stolen),
        );
        (left, right)
    } else {
        join_stolen(
            move || descend(left_producer, left_consumer, splitter, false),
            move |stolen| descend(right_producer, right_consumer, splitter, stolen),
        )
    };
    reducer.reduce(left, right)
}

/// Folds one leaf: whole, or, for a search, from the end it looks at.
#[inline]
fn leaf<P, C>(producer: P, consumer: C) -> C::Result
where
    P: Producer,
    C: Consumer<P::Item>,
{
    match consumer.search() {
        Search::Every => producer.fold_with(consumer),
        search => edge_first(producer, consumer, search == Search::Back),
    }
}

/// A search's leaf, sequentially: halves it down to one position at the searched end,
/// folds that first, then the halves of growing size back towards the other end, each
/// skipped once the consumer is full. A leaf whose positions each hold many items (a huge
/// range, a `flat_map`) so finds a match near its end without walking the rest, and a
/// filter that swallows items checks `full` between pieces. `O(log len)` extra splits.
fn edge_first<P, C>(producer: P, consumer: C, back: bool) -> C::Result
where
    P: Producer,
    C: Consumer<P::Item>,
{
    if consumer.full() {
        return consumer.fold(std::iter::empty());
    }
    let len = producer.len();
    if len / 2 < producer.min_len().max(1) {
        return producer.fold_with(consumer);
    }
    let mid = len / 2;
    let (left_producer, right_producer) = producer.split_at(mid);
    let (left_consumer, right_consumer, reducer) = consumer.split_at(mid);
    if back {
        let right = edge_first(right_producer, right_consumer, true);
        let left = if left_consumer.full() {
            left_consumer.fold(std::iter::empty())
        } else {
            left_producer.fold_with(left_consumer)
        };
        reducer.reduce(left, right)
    } else {
        let left = edge_first(left_producer, left_consumer, false);
        let right = if right_consumer.full() {
            right_consumer.fold(std::iter::empty())
        } else {
            right_producer.fold_with(right_consumer)
        };
        reducer.reduce(left, right)
    }
}

#[cfg(test)]
mod tests {
    use super::Splitter;

    #[test]
    fn the_budget_halves_and_a_steal_refills_it() {
        let mut s = Splitter { splits: 4, min: 1 };
        assert!(s.split(100, false));
        assert_eq!(s.splits, 2);
        assert!(s.split(100, false));
        assert!(s.split(100, false));
        assert_eq!(s.splits, 0);
        assert!(!s.split(100, false));
        assert!(s.split(100, true));
        assert!(s.splits >= 1);
        let mut small = Splitter { splits: 8, min: 10 };
        assert!(!small.split(19, true), "halves of 9 are below the minimum");
        assert!(small.split(20, false));
    }
}
