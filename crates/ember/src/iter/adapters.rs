//! The adapters: [`Map`], [`Filter`], [`Enumerate`], [`Zip`], [`MinLen`], [`MaxLen`]. Each
//! wraps its base's producer: splitting is the base's, and a leaf is the base's sequential
//! iterator wrapped by the matching `Iterator` adapter (`map`, `filter`, `zip`, …), so a leaf
//! runs as fast as the sequential loop would. [`Wrap`] is what the other adapter files build
//! on too.

use std::ops::Range;

use super::plumbing::{Consumer, Producer, ProducerCallback, Search};
use super::traits::{IndexedParallelIterator, ParallelIterator};

/// What an adapter adds to its base producer: its own state (a closure, an offset, a
/// minimum), how that state splits, and how it wraps a leaf's iterator over items `T`.
pub(super) trait Wrap<T>: Sized + Send {
    /// The items of the wrapped leaves.
    type Item;
    /// A leaf's iterator, wrapped.
    type IntoIter<I: Iterator<Item = T>>: Iterator<Item = Self::Item>;
    /// The states of the positions `..index` and `index..`.
    fn split(self, index: usize) -> (Self, Self);
    /// Wraps the iterator over a leaf.
    fn wrap<I: Iterator<Item = T>>(self, items: I) -> Self::IntoIter<I>;
    /// Folds a leaf's items, wrapped, into `consumer`. Only `flat_map` does more than
    /// `consumer.fold(self.wrap(items))`: it drives each inner iterator into a piece of it.
    #[inline]
    fn fold_into<I, C>(self, items: I, consumer: C) -> C::Result
    where
        I: Iterator<Item = T>,
        C: Consumer<Self::Item>,
    {
        consumer.fold(self.wrap(items))
    }
    /// The fewest positions of a leaf, given the base's.
    fn min_len(&self, base: usize) -> usize {
        base
    }
    /// The most positions of a leaf, given the base's.
    fn max_len(&self, base: usize) -> usize {
        base
    }
}

/// A base producer and an adapter's state: splits where the base splits.
pub(super) struct Wrapped<P, X> {
    pub(super) base: P,
    pub(super) extra: X,
}

impl<P: Producer, X: Wrap<P::Item>> Producer for Wrapped<P, X> {
    type Item = X::Item;
    type IntoIter = X::IntoIter<P::IntoIter>;
    fn len(&self) -> usize {
        self.base.len()
    }
    fn split_at(self, index: usize) -> (Self, Self) {
        let (left, right) = self.base.split_at(index);
        let (extra_left, extra_right) = self.extra.split(index);
        (
            Wrapped {
                base: left,
                extra: extra_left,
            },
            Wrapped {
                base: right,
                extra: extra_right,
            },
        )
    }
    fn into_iter(self) -> Self::IntoIter {
        self.extra.wrap(self.base.into_iter())
    }
    fn min_len(&self) -> usize {
        self.extra.min_len(self.base.min_len())
    }
    fn max_len(&self) -> usize {
        self.extra.max_len(self.base.max_len())
    }
    #[inline]
    fn fold_with<C: Consumer<X::Item>>(self, consumer: C) -> C::Result {
        // The base folds into the consumer wrapped with this adapter's state: the same leaf
        // loop as `consumer.fold(self.into_iter())`, unless the base splits the consumer
        // itself (a `flat_map` below this adapter).
        self.base.fold_with(WrapConsumer {
            extra: self.extra,
            consumer,
        })
    }
}

/// A consumer of an adapter's output, as a consumer of the adapter's input: what a base
/// producer folds into when it splits its consumer itself.
pub(super) struct WrapConsumer<X, C> {
    extra: X,
    consumer: C,
}

impl<T, X: Wrap<T>, C: Consumer<X::Item>> Consumer<T> for WrapConsumer<X, C> {
    type Result = C::Result;
    type Reducer = C::Reducer;
    fn split_at(self, index: usize) -> (Self, Self, C::Reducer) {
        let (extra_left, extra_right) = self.extra.split(index);
        let (left, right, reducer) = self.consumer.split_at(index);
        (
            WrapConsumer {
                extra: extra_left,
                consumer: left,
            },
            WrapConsumer {
                extra: extra_right,
                consumer: right,
            },
            reducer,
        )
    }
    #[inline]
    fn fold<I: Iterator<Item = T>>(self, items: I) -> C::Result {
        self.extra.fold_into(items, self.consumer)
    }
    fn full(&self) -> bool {
        self.consumer.full()
    }
    fn search(&self) -> Search {
        self.consumer.search()
    }
}

/// Receives a base producer and hands it on, wrapped with `extra`.
pub(super) struct WrapCallback<CB, X> {
    pub(super) callback: CB,
    pub(super) extra: X,
}

impl<T, CB, X> ProducerCallback<T> for WrapCallback<CB, X>
where
    X: Wrap<T>,
    CB: ProducerCallback<X::Item>,
{
    type Output = CB::Output;
    fn callback<P: Producer<Item = T>>(self, base: P) -> CB::Output {
        self.callback.callback(Wrapped {
            base,
            extra: self.extra,
        })
    }
}

/// `map`'s state: the function, shared by every piece.
struct MapFn<'f, F>(&'f F);

impl<'f, T, R, F: Fn(T) -> R + Sync> Wrap<T> for MapFn<'f, F> {
    type Item = R;
    type IntoIter<I: Iterator<Item = T>> = std::iter::Map<I, &'f F>;
    fn split(self, _index: usize) -> (Self, Self) {
        (MapFn(self.0), MapFn(self.0))
    }
    fn wrap<I: Iterator<Item = T>>(self, items: I) -> Self::IntoIter<I> {
        items.map(self.0)
    }
}

/// `filter`'s state: the predicate, shared by every piece.
struct FilterFn<'f, F>(&'f F);

impl<'f, T, F: Fn(&T) -> bool + Sync> Wrap<T> for FilterFn<'f, F> {
    type Item = T;
    type IntoIter<I: Iterator<Item = T>> = std::iter::Filter<I, &'f F>;
    fn split(self, _index: usize) -> (Self, Self) {
        (FilterFn(self.0), FilterFn(self.0))
    }
    fn wrap<I: Iterator<Item = T>>(self, items: I) -> Self::IntoIter<I> {
        items.filter(self.0)
    }
}

/// `enumerate`'s state: the indices of the piece's positions.
struct Indices(Range<usize>);

impl<T> Wrap<T> for Indices {
    type Item = (usize, T);
    type IntoIter<I: Iterator<Item = T>> = std::iter::Zip<Range<usize>, I>;
    fn split(self, index: usize) -> (Self, Self) {
        let mid = self.0.start + index;
        (Indices(self.0.start..mid), Indices(mid..self.0.end))
    }
    fn wrap<I: Iterator<Item = T>>(self, items: I) -> Self::IntoIter<I> {
        self.0.zip(items)
    }
}

/// `zip`'s state: the other side's producer, of the same length as the base.
struct ZipWith<B>(B);

impl<T, B: Producer> Wrap<T> for ZipWith<B> {
    type Item = (T, B::Item);
    type IntoIter<I: Iterator<Item = T>> = std::iter::Zip<I, B::IntoIter>;
    fn split(self, index: usize) -> (Self, Self) {
        let (left, right) = self.0.split_at(index);
        (ZipWith(left), ZipWith(right))
    }
    fn wrap<I: Iterator<Item = T>>(self, items: I) -> Self::IntoIter<I> {
        items.zip(self.0.into_iter())
    }
    fn min_len(&self, base: usize) -> usize {
        base.max(self.0.min_len())
    }
    fn max_len(&self, base: usize) -> usize {
        base.min(self.0.max_len())
    }
}

/// `with_min_len`'s state: the minimum.
struct AtLeast(usize);

impl<T> Wrap<T> for AtLeast {
    type Item = T;
    type IntoIter<I: Iterator<Item = T>> = I;
    fn split(self, _index: usize) -> (Self, Self) {
        (AtLeast(self.0), AtLeast(self.0))
    }
    fn wrap<I: Iterator<Item = T>>(self, items: I) -> I {
        items
    }
    fn min_len(&self, base: usize) -> usize {
        base.max(self.0)
    }
}

/// `with_max_len`'s state: the maximum.
struct AtMost(usize);

impl<T> Wrap<T> for AtMost {
    type Item = T;
    type IntoIter<I: Iterator<Item = T>> = I;
    fn split(self, _index: usize) -> (Self, Self) {
        (AtMost(self.0), AtMost(self.0))
    }
    fn wrap<I: Iterator<Item = T>>(self, items: I) -> I {
        items
    }
    fn max_len(&self, base: usize) -> usize {
        base.min(self.0.max(1))
    }
}

/// [`ParallelIterator::map`]: applies a function to every item.
///
/// ```
/// use ember::prelude::*;
/// let lens: Vec<usize> = vec!["a", "bcd"].into_par_iter().map(str::len).collect();
/// assert_eq!(lens, [1, 3]);
/// ```
#[derive(Clone, Debug)]
#[must_use = "parallel iterators do nothing until consumed"]
pub struct Map<I, F> {
    base: I,
    f: F,
}

impl<I, F> Map<I, F> {
    pub(super) fn new(base: I, f: F) -> Self {
        Map { base, f }
    }
}

impl<I, F, R> ParallelIterator for Map<I, F>
where
    I: ParallelIterator,
    F: Fn(I::Item) -> R + Sync + Send,
    R: Send,
{
    type Item = R;

    fn with_producer<CB: ProducerCallback<R>>(self, callback: CB) -> CB::Output {
        let Map { base, f } = self;
        base.with_producer(WrapCallback {
            callback,
            extra: MapFn(&f),
        })
    }

    fn opt_len(&self) -> Option<usize> {
        self.base.opt_len()
    }
}

impl<I, F, R> IndexedParallelIterator for Map<I, F>
where
    I: IndexedParallelIterator,
    F: Fn(I::Item) -> R + Sync + Send,
    R: Send,
{
    fn len(&self) -> usize {
        self.base.len()
    }
}

/// [`ParallelIterator::filter`]: keeps the items a predicate accepts.
///
/// ```
/// use ember::prelude::*;
/// assert_eq!((0..10u8).into_par_iter().filter(|x| *x > 6).count(), 3);
/// ```
#[derive(Clone, Debug)]
#[must_use = "parallel iterators do nothing until consumed"]
pub struct Filter<I, P> {
    base: I,
    predicate: P,
}

impl<I, P> Filter<I, P> {
    pub(super) fn new(base: I, predicate: P) -> Self {
        Filter { base, predicate }
    }
}

impl<I, P> ParallelIterator for Filter<I, P>
where
    I: ParallelIterator,
    P: Fn(&I::Item) -> bool + Sync + Send,
{
    type Item = I::Item;

    fn with_producer<CB: ProducerCallback<I::Item>>(self, callback: CB) -> CB::Output {
        let Filter { base, predicate } = self;
        base.with_producer(WrapCallback {
            callback,
            extra: FilterFn(&predicate),
        })
    }
}

/// [`IndexedParallelIterator::enumerate`]: pairs every item with its index.
///
/// ```
/// use ember::prelude::*;
/// let last = (10..20u32).into_par_iter().enumerate().max_by_key(|(i, _)| *i);
/// assert_eq!(last, Some((9, 19)));
/// ```
#[derive(Clone, Debug)]
#[must_use = "parallel iterators do nothing until consumed"]
pub struct Enumerate<I> {
    base: I,
}

impl<I> Enumerate<I> {
    pub(super) fn new(base: I) -> Self {
        Enumerate { base }
    }
}

impl<I: IndexedParallelIterator> ParallelIterator for Enumerate<I> {
    type Item = (usize, I::Item);

    fn with_producer<CB: ProducerCallback<Self::Item>>(self, callback: CB) -> CB::Output {
        let len = self.base.len();
        self.base.with_producer(WrapCallback {
            callback,
            extra: Indices(0..len),
        })
    }

    fn opt_len(&self) -> Option<usize> {
        Some(self.base.len())
    }
}

impl<I: IndexedParallelIterator> IndexedParallelIterator for Enumerate<I> {
    fn len(&self) -> usize {
        self.base.len()
    }
}

/// [`IndexedParallelIterator::zip`]: pairs the items of two indexed iterators, stopping at
/// the shorter one (the rest of the longer one is dropped unused).
///
/// ```
/// use ember::prelude::*;
/// let mut out = vec![0; 3];
/// out.par_iter_mut().zip(&[1, 2, 3]).for_each(|(o, x)| *o = x * x);
/// assert_eq!(out, [1, 4, 9]);
/// ```
#[derive(Clone, Debug)]
#[must_use = "parallel iterators do nothing until consumed"]
pub struct Zip<A, B> {
    a: A,
    b: B,
}

impl<A, B> Zip<A, B> {
    pub(super) fn new(a: A, b: B) -> Self {
        Zip { a, b }
    }
}

impl<A, B> ParallelIterator for Zip<A, B>
where
    A: IndexedParallelIterator,
    B: IndexedParallelIterator,
{
    type Item = (A::Item, B::Item);

    fn with_producer<CB: ProducerCallback<Self::Item>>(self, callback: CB) -> CB::Output {
        // `a`'s producer first, then `b`'s inside its callback, then both cut to the shorter.
        struct First<CB, B> {
            callback: CB,
            b: B,
        }
        impl<CB, B, T> ProducerCallback<T> for First<CB, B>
        where
            B: IndexedParallelIterator,
            CB: ProducerCallback<(T, B::Item)>,
        {
            type Output = CB::Output;
            fn callback<PA: Producer<Item = T>>(self, a: PA) -> CB::Output {
                self.b.with_producer(Second {
                    callback: self.callback,
                    a,
                })
            }
        }
        struct Second<CB, PA> {
            callback: CB,
            a: PA,
        }
        impl<CB, PA, U> ProducerCallback<U> for Second<CB, PA>
        where
            PA: Producer,
            CB: ProducerCallback<(PA::Item, U)>,
        {
            type Output = CB::Output;
            fn callback<PB: Producer<Item = U>>(self, b: PB) -> CB::Output {
                let len = self.a.len().min(b.len());
                let (a, _) = self.a.split_at(len);
                let (b, _) = b.split_at(len);
                self.callback.callback(Wrapped {
                    base: a,
                    extra: ZipWith(b),
                })
            }
        }
        self.a.with_producer(First {
            callback,
            b: self.b,
        })
    }

    fn opt_len(&self) -> Option<usize> {
        Some(self.len())
    }
}

impl<A, B> IndexedParallelIterator for Zip<A, B>
where
    A: IndexedParallelIterator,
    B: IndexedParallelIterator,
{
    fn len(&self) -> usize {
        self.a.len().min(self.b.len())
    }
}

/// [`ParallelIterator::with_min_len`]: never splits into pieces of fewer positions.
///
/// ```
/// use ember::prelude::*;
/// let total: u64 = (0..10_000u64).into_par_iter().with_min_len(1_000).sum();
/// assert_eq!(total, 49_995_000);
/// ```
#[derive(Clone, Debug)]
#[must_use = "parallel iterators do nothing until consumed"]
pub struct MinLen<I> {
    base: I,
    min: usize,
}

impl<I> MinLen<I> {
    pub(super) fn new(base: I, min: usize) -> Self {
        MinLen { base, min }
    }
}

impl<I: ParallelIterator> ParallelIterator for MinLen<I> {
    type Item = I::Item;

    fn with_producer<CB: ProducerCallback<I::Item>>(self, callback: CB) -> CB::Output {
        self.base.with_producer(WrapCallback {
            callback,
            extra: AtLeast(self.min),
        })
    }

    fn opt_len(&self) -> Option<usize> {
        self.base.opt_len()
    }
}

impl<I: IndexedParallelIterator> IndexedParallelIterator for MinLen<I> {
    fn len(&self) -> usize {
        self.base.len()
    }
}

/// [`ParallelIterator::with_max_len`]: splits every piece longer than a maximum.
///
/// ```
/// use ember::prelude::*;
/// let pieces = (0..100u32).into_par_iter().with_max_len(10).fold(|| 0, |n, _| n + 1).count();
/// assert!(pieces >= 10);
/// ```
#[derive(Clone, Debug)]
#[must_use = "parallel iterators do nothing until consumed"]
pub struct MaxLen<I> {
    base: I,
    max: usize,
}

impl<I> MaxLen<I> {
    pub(super) fn new(base: I, max: usize) -> Self {
        MaxLen { base, max }
    }
}

impl<I: ParallelIterator> ParallelIterator for MaxLen<I> {
    type Item = I::Item;

    fn with_producer<CB: ProducerCallback<I::Item>>(self, callback: CB) -> CB::Output {
        self.base.with_producer(WrapCallback {
            callback,
            extra: AtMost(self.max),
        })
    }

    fn opt_len(&self) -> Option<usize> {
        self.base.opt_len()
    }
}

impl<I: IndexedParallelIterator> IndexedParallelIterator for MaxLen<I> {
    fn len(&self) -> usize {
        self.base.len()
    }
}
