//! The adapters: [`Map`], [`Filter`], [`Enumerate`], [`Zip`], [`MinLen`]. Each wraps its
//! base's producer: splitting is the base's, and a leaf is the base's sequential iterator
//! wrapped by the matching `Iterator` adapter (`map`, `filter`, `zip`, …), so a leaf runs as
//! fast as the sequential loop would.

use std::ops::Range;

use super::plumbing::{Producer, ProducerCallback};
use super::traits::{IndexedParallelIterator, ParallelIterator};

/// Defines a callback that receives a base producer and hands `$wrap` of it to the next one.
macro_rules! wrapping_callback {
    ($name:ident <$($lt:lifetime,)? $($g:ident),*> [$($ig:ident),*] { $($field:ident: $ty:ty),* }
        where [$($bounds:tt)*], item $in:ty => $out:ty,
        |$base:ident| $wrap:expr) => {
        struct $name<$($lt,)? CB $(, $g)*> {
            callback: CB,
            $($field: $ty,)*
        }
        impl<$($lt,)? CB $(, $g)* $(, $ig)*> ProducerCallback<$in> for $name<$($lt,)? CB $(, $g)*>
        where
            CB: ProducerCallback<$out>,
            $($bounds)*
        {
            type Output = CB::Output;
            fn callback<BP: Producer<Item = $in>>(self, $base: BP) -> CB::Output {
                let $name { callback, $($field),* } = self;
                callback.callback($wrap)
            }
        }
    };
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
        wrapping_callback!(MapCallback<'f, F> [T, R] { f: &'f F }
            where [F: Fn(T) -> R + Sync, T: Send], item T => R,
            |base| MapProducer { base, f });
        base.with_producer(MapCallback { callback, f: &f })
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

struct MapProducer<'f, P, F> {
    base: P,
    f: &'f F,
}

impl<'f, P, F, R> Producer for MapProducer<'f, P, F>
where
    P: Producer,
    F: Fn(P::Item) -> R + Sync,
{
    type Item = R;
    type IntoIter = std::iter::Map<P::IntoIter, &'f F>;
    fn len(&self) -> usize {
        self.base.len()
    }
    fn split_at(self, index: usize) -> (Self, Self) {
        let (left, right) = self.base.split_at(index);
        let f = self.f;
        (
            MapProducer { base: left, f },
            MapProducer { base: right, f },
        )
    }
    fn into_iter(self) -> Self::IntoIter {
        self.base.into_iter().map(self.f)
    }
    fn min_len(&self) -> usize {
        self.base.min_len()
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
        wrapping_callback!(FilterCallback<'p, P> [T] { predicate: &'p P }
            where [P: Fn(&T) -> bool + Sync], item T => T,
            |base| FilterProducer { base, predicate });
        base.with_producer(FilterCallback {
            callback,
            predicate: &predicate,
        })
    }
}

struct FilterProducer<'p, P, F> {
    base: P,
    predicate: &'p F,
}

impl<'p, P, F> Producer for FilterProducer<'p, P, F>
where
    P: Producer,
    F: Fn(&P::Item) -> bool + Sync,
{
    type Item = P::Item;
    type IntoIter = std::iter::Filter<P::IntoIter, &'p F>;
    fn len(&self) -> usize {
        self.base.len()
    }
    fn split_at(self, index: usize) -> (Self, Self) {
        let (left, right) = self.base.split_at(index);
        let predicate = self.predicate;
        (
            FilterProducer {
                base: left,
                predicate,
            },
            FilterProducer {
                base: right,
                predicate,
            },
        )
    }
    fn into_iter(self) -> Self::IntoIter {
        self.base.into_iter().filter(self.predicate)
    }
    fn min_len(&self) -> usize {
        self.base.min_len()
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
        wrapping_callback!(EnumerateCallback<> [T] { }
            where [T: Send], item T => (usize, T),
            |base| EnumerateProducer { base, offset: 0 });
        self.base.with_producer(EnumerateCallback { callback })
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

struct EnumerateProducer<P> {
    base: P,
    /// The index of the first position.
    offset: usize,
}

impl<P: Producer> Producer for EnumerateProducer<P> {
    type Item = (usize, P::Item);
    type IntoIter = std::iter::Zip<Range<usize>, P::IntoIter>;
    fn len(&self) -> usize {
        self.base.len()
    }
    fn split_at(self, index: usize) -> (Self, Self) {
        let (left, right) = self.base.split_at(index);
        (
            EnumerateProducer {
                base: left,
                offset: self.offset,
            },
            EnumerateProducer {
                base: right,
                offset: self.offset + index,
            },
        )
    }
    fn into_iter(self) -> Self::IntoIter {
        let end = self.offset + self.base.len();
        (self.offset..end).zip(self.base.into_iter())
    }
    fn min_len(&self) -> usize {
        self.base.min_len()
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
                self.callback.callback(ZipProducer { a, b })
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

/// Two producers of the same length, in lock-step.
struct ZipProducer<A, B> {
    a: A,
    b: B,
}

impl<A: Producer, B: Producer> Producer for ZipProducer<A, B> {
    type Item = (A::Item, B::Item);
    type IntoIter = std::iter::Zip<A::IntoIter, B::IntoIter>;
    fn len(&self) -> usize {
        self.a.len()
    }
    fn split_at(self, index: usize) -> (Self, Self) {
        let (a_left, a_right) = self.a.split_at(index);
        let (b_left, b_right) = self.b.split_at(index);
        (
            ZipProducer {
                a: a_left,
                b: b_left,
            },
            ZipProducer {
                a: a_right,
                b: b_right,
            },
        )
    }
    fn into_iter(self) -> Self::IntoIter {
        self.a.into_iter().zip(self.b.into_iter())
    }
    fn min_len(&self) -> usize {
        self.a.min_len().max(self.b.min_len())
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
        wrapping_callback!(MinLenCallback<> [T] { min: usize }
            where [T: Send], item T => T,
            |base| MinLenProducer { base, min });
        self.base.with_producer(MinLenCallback {
            callback,
            min: self.min,
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

struct MinLenProducer<P> {
    base: P,
    min: usize,
}

impl<P: Producer> Producer for MinLenProducer<P> {
    type Item = P::Item;
    type IntoIter = P::IntoIter;
    fn len(&self) -> usize {
        self.base.len()
    }
    fn split_at(self, index: usize) -> (Self, Self) {
        let (left, right) = self.base.split_at(index);
        let min = self.min;
        (
            MinLenProducer { base: left, min },
            MinLenProducer { base: right, min },
        )
    }
    fn into_iter(self) -> Self::IntoIter {
        self.base.into_iter()
    }
    fn min_len(&self) -> usize {
        self.base.min_len().max(self.min)
    }
}
