//! [`FlatMap`], [`FlatMapIter`], [`Flatten`], [`FlattenIter`]: every item becomes many. The
//! outer items split as their base does. In a leaf, each inner parallel iterator of
//! `flat_map`/`flatten` is driven into a piece of the leaf's consumer with the bridge of its
//! own, so it splits over the pool too (nested parallelism, as rayon's): an outer item that
//! expands into a huge range is spread like the range itself, and nothing is buffered. The
//! consumer is split over a leaf's outer items in order, in balanced groups, and a search
//! that is over (`find_*`, `any`) stops before the next outer item.
//!
//! Pulled one item at a time (only a `chain` or `zip` of one does, which drive no
//! consumer), each inner iterator's items are buffered first.

use super::adapters::{Wrap, WrapCallback};
use super::map_like::adapter;
use super::plumbing::{drive, Consumer, Producer, ProducerCallback, Reducer};
use super::traits::{IntoParallelIterator, ParallelIterator};

/// The state of `flat_map` and `flatten`: what each item becomes (a shared closure, or the
/// identity).
#[derive(Clone, Copy)]
struct Expand<F>(F);

impl<T, F, PI> Wrap<T> for Expand<F>
where
    F: Fn(T) -> PI + Copy + Send,
    PI: IntoParallelIterator,
{
    type Item = PI::Item;
    type IntoIter<It: Iterator<Item = T>> = FlatLeaf<It, F, PI::Item>;
    fn split(self, _index: usize) -> (Self, Self) {
        (self, self)
    }
    fn wrap<It: Iterator<Item = T>>(self, items: It) -> Self::IntoIter<It> {
        FlatLeaf {
            items,
            expand: self.0,
            front: None,
        }
    }
    fn fold_into<It, C>(self, items: It, consumer: C) -> C::Result
    where
        It: Iterator<Item = T>,
        C: Consumer<PI::Item>,
    {
        let mut outer = Outer {
            items,
            expand: self.0,
            done: false,
        };
        // Groups of outer items, each split into a balanced tree of consumer pieces: all of
        // them at once when the leaf knows its count, else 1, 2, 4, … items.
        let (low, high) = outer.items.size_hint();
        let mut group = if high == Some(low) { low.max(1) } else { 1 };
        let mut rest = consumer;
        let mut acc: Option<(C::Result, C::Reducer)> = None;
        loop {
            if outer.done || rest.full() {
                let tail = rest.fold(std::iter::empty());
                return match acc {
                    None => tail,
                    Some((acc, reducer)) => reducer.reduce(acc, tail),
                };
            }
            let (here, next, reducer) = rest.split_at(group);
            let result = outer.tree(group, here);
            acc = Some(match acc {
                None => (result, reducer),
                Some((acc, previous)) => (previous.reduce(acc, result), reducer),
            });
            rest = next;
            group = group.saturating_mul(2);
        }
    }
}

/// The outer items of a `flat_map` leaf, expanded one by one into consumer pieces.
struct Outer<It, F> {
    items: It,
    expand: F,
    /// Whether `items` ran out.
    done: bool,
}

impl<T, It, F, PI> Outer<It, F>
where
    It: Iterator<Item = T>,
    F: Fn(T) -> PI,
    PI: IntoParallelIterator,
{
    /// Drives the next `count` outer items (fewer if they run out) into `consumer`, split
    /// into a balanced tree of pieces, in order.
    fn tree<C: Consumer<PI::Item>>(&mut self, count: usize, consumer: C) -> C::Result {
        if self.done {
            return consumer.fold(std::iter::empty());
        }
        if consumer.full() {
            // Nothing here can matter any more: pass the items by.
            let skipped = self.items.by_ref().take(count).count();
            self.done = skipped < count;
            return consumer.fold(std::iter::empty());
        }
        if count <= 1 {
            return match self.items.next() {
                Some(item) => drive((self.expand)(item).into_par_iter(), consumer),
                None => {
                    self.done = true;
                    consumer.fold(std::iter::empty())
                }
            };
        }
        let mid = count / 2;
        let (left, right, reducer) = consumer.split_at(mid);
        let left = self.tree(mid, left);
        let right = self.tree(count - mid, right);
        reducer.reduce(left, right)
    }
}

/// A leaf of `flat_map`: the outer items, and the rest of the inner items of the current
/// one when pulled one by one.
pub(super) struct FlatLeaf<It, F, U> {
    items: It,
    expand: F,
    front: Option<std::vec::IntoIter<U>>,
}

/// Folds one inner producer into an accumulator: the output of a producer callback cannot
/// name the producer's type, but an accumulator it can.
struct FoldInner<'g, B, G> {
    acc: B,
    g: &'g mut G,
}

impl<B, U, G: FnMut(B, U) -> B> ProducerCallback<U> for FoldInner<'_, B, G> {
    type Output = B;
    fn callback<P: Producer<Item = U>>(self, producer: P) -> B {
        producer.into_iter().fold(self.acc, self.g)
    }
}

/// Buffers one inner producer's items.
struct Buffer;

impl<U> ProducerCallback<U> for Buffer {
    type Output = Vec<U>;
    fn callback<P: Producer<Item = U>>(self, producer: P) -> Vec<U> {
        producer.into_iter().collect()
    }
}

impl<T, It, F, PI> Iterator for FlatLeaf<It, F, PI::Item>
where
    It: Iterator<Item = T>,
    F: Fn(T) -> PI,
    PI: IntoParallelIterator,
{
    type Item = PI::Item;

    fn next(&mut self) -> Option<PI::Item> {
        loop {
            if let Some(item) = self.front.as_mut().and_then(Iterator::next) {
                return Some(item);
            }
            let outer = self.items.next()?;
            let inner = (self.expand)(outer).into_par_iter().with_producer(Buffer);
            self.front = Some(inner.into_iter());
        }
    }

    fn fold<B, G: FnMut(B, PI::Item) -> B>(self, init: B, mut g: G) -> B {
        let FlatLeaf {
            items,
            expand,
            front,
        } = self;
        let mut acc = init;
        if let Some(front) = front {
            acc = front.fold(acc, &mut g);
        }
        items.fold(acc, |acc, outer| {
            let g = &mut g;
            expand(outer)
                .into_par_iter()
                .with_producer(FoldInner { acc, g })
        })
    }
}

adapter! {
    /// [`ParallelIterator::flat_map`]: maps every item to a parallel iterator (or anything
    /// that converts into one) and yields their items in order.
    ///
    /// ```
    /// use ember::prelude::*;
    /// let v: Vec<u32> = (1..4u32).into_par_iter().flat_map(|n| 0..n).collect();
    /// assert_eq!(v, [0, 0, 1, 0, 1, 2]);
    /// ```
    FlatMap<I, F> { f: F } item <PI as IntoParallelIterator>::Item; for [PI]; where [
        F: Fn(I::Item) -> PI + Sync + Send,
        PI: IntoParallelIterator,
    ];
    extra |f| Expand(&f);
}

/// `flat_map_iter`'s state: the closure, shared.
struct ExpandSeq<'f, F>(&'f F);

impl<'f, T, F, SI> Wrap<T> for ExpandSeq<'f, F>
where
    F: Fn(T) -> SI + Sync,
    SI: IntoIterator,
{
    type Item = SI::Item;
    type IntoIter<It: Iterator<Item = T>> = std::iter::FlatMap<It, SI, &'f F>;
    fn split(self, _index: usize) -> (Self, Self) {
        (ExpandSeq(self.0), ExpandSeq(self.0))
    }
    fn wrap<It: Iterator<Item = T>>(self, items: It) -> Self::IntoIter<It> {
        items.flat_map(self.0)
    }
}

adapter! {
    /// [`ParallelIterator::flat_map_iter`]: maps every item to a sequential iterator and
    /// yields their items in order.
    ///
    /// ```
    /// use ember::prelude::*;
    /// let v: Vec<char> = ["ab", "c"].par_iter().flat_map_iter(|s| s.chars()).collect();
    /// assert_eq!(v, ['a', 'b', 'c']);
    /// ```
    FlatMapIter<I, F> { f: F } item <SI as IntoIterator>::Item; for [SI]; where [
        F: Fn(I::Item) -> SI + Sync + Send,
        SI: IntoIterator,
        SI::Item: Send,
    ];
    extra |f| ExpandSeq(&f);
}

/// The identity, as the expansion of `flatten`.
fn itself<T>(item: T) -> T {
    item
}

/// [`ParallelIterator::flatten`]: yields the items of every item, a parallel iterator (or
/// anything that converts into one), in order.
///
/// ```
/// use ember::prelude::*;
/// let v: Vec<u8> = vec![vec![1, 2], vec![], vec![3]].into_par_iter().flatten().collect();
/// assert_eq!(v, [1, 2, 3]);
/// ```
#[derive(Clone, Debug)]
#[must_use = "parallel iterators do nothing until consumed"]
pub struct Flatten<I> {
    base: I,
}

impl<I> Flatten<I> {
    pub(super) fn new(base: I) -> Self {
        Flatten { base }
    }
}

impl<I> ParallelIterator for Flatten<I>
where
    I: ParallelIterator,
    I::Item: IntoParallelIterator,
{
    type Item = <I::Item as IntoParallelIterator>::Item;
    fn with_producer<CB: ProducerCallback<Self::Item>>(self, callback: CB) -> CB::Output {
        let expand: fn(I::Item) -> I::Item = itself;
        self.base.with_producer(WrapCallback {
            callback,
            extra: Expand(expand),
        })
    }
}

/// [`ParallelIterator::flatten_iter`]: yields the items of every item, a sequential
/// iterator (or anything that converts into one), in order.
///
/// ```
/// use ember::prelude::*;
/// let v: Vec<u8> = vec![vec![1, 2], vec![3]].into_par_iter().flatten_iter().collect();
/// assert_eq!(v, [1, 2, 3]);
/// ```
#[derive(Clone, Debug)]
#[must_use = "parallel iterators do nothing until consumed"]
pub struct FlattenIter<I> {
    base: I,
}

impl<I> FlattenIter<I> {
    pub(super) fn new(base: I) -> Self {
        FlattenIter { base }
    }
}

/// `flatten_iter`'s state.
struct Flat;

impl<T: IntoIterator> Wrap<T> for Flat {
    type Item = T::Item;
    type IntoIter<It: Iterator<Item = T>> = std::iter::Flatten<It>;
    fn split(self, _index: usize) -> (Self, Self) {
        (Flat, Flat)
    }
    fn wrap<It: Iterator<Item = T>>(self, items: It) -> Self::IntoIter<It> {
        items.flatten()
    }
}

impl<I> ParallelIterator for FlattenIter<I>
where
    I: ParallelIterator,
    I::Item: IntoIterator,
    <I::Item as IntoIterator>::Item: Send,
{
    type Item = <I::Item as IntoIterator>::Item;
    fn with_producer<CB: ProducerCallback<Self::Item>>(self, callback: CB) -> CB::Output {
        self.base.with_producer(WrapCallback {
            callback,
            extra: Flat,
        })
    }
}
