//! The machinery under the parallel iterators: producers, consumers, and the adaptive bridge
//! that splits one against the other with [`crate::join`].
//!
//! A pipeline is a *producer* (a splittable source of positions: a slice, a range, a `Vec`,
//! wrapped by `map`, `filter`, … adapters) driven into a *consumer* (`sum`, `collect`, …).
//! [`drive`] halves both at the same position while the splitter allows it, runs the halves
//! with `join`, folds each leaf's positions sequentially with an ordinary `Iterator`, and
//! combines the two halves' results with the consumer's reducer, left before right.
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
//! Everything here is crate-private: the traits are public only so that the public iterator
//! traits can name them, in a private module nobody outside can reach.

use super::traits::ParallelIterator;
use crate::{current_num_threads, current_thread_index, join};

/// A splittable source of positions: the producer of one pipeline.
///
/// Every position of an indexed pipeline yields exactly one item; otherwise a position
/// yields any number (none after a `filter`, many after a `flat_map`, a leaf's `fold` one).
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
}

/// Receives the producer of a pipeline (whose type only the pipeline knows).
pub trait ProducerCallback<T> {
    /// What the callback returns.
    type Output;
    /// Runs with the pipeline's producer.
    fn callback<P: Producer<Item = T>>(self, producer: P) -> Self::Output;
}

/// Where the items of a pipeline go: split alongside the producer, folded per leaf.
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
}

/// Combines the results of two adjacent halves, left then right.
pub trait Reducer<R> {
    /// The result of the positions of `left` followed by those of `right`.
    fn reduce(self, left: R, right: R) -> R;
}

/// Runs the pipeline `iter` into `consumer`.
pub(super) fn drive<I, C>(iter: I, consumer: C) -> C::Result
where
    I: ParallelIterator,
    C: Consumer<I::Item>,
{
    iter.with_producer(Drive(consumer))
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
    if consumer.full() || !(splitter.split(len, stolen) || too_long) {
        return consumer.fold(producer.into_iter());
    }
    let mid = len / 2;
    let (left_producer, right_producer) = producer.split_at(mid);
    let (left_consumer, right_consumer, reducer) = consumer.split_at(mid);
    let (left, right) = join_stolen(
        move || descend(left_producer, left_consumer, splitter, false),
        move |stolen| descend(right_producer, right_consumer, splitter, stolen),
    );
    reducer.reduce(left, right)
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
