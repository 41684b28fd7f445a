//! The traits of the parallel iterators: [`ParallelIterator`] (adapters and consumers),
//! [`IndexedParallelIterator`] (pipelines that know their exact length), the conversions
//! into them, and [`FromParallelIterator`] for `collect`.

use std::iter::Sum;

use super::adapters::{Enumerate, Filter, Map, MinLen, Zip};
use super::fold;
use super::plumbing::ProducerCallback;

/// A parallel iterator: a pipeline of items that [`crate::join`] splits over the current
/// pool's workers, adaptively (see [the module doc](crate::iter)). Its consumers return once
/// every item is consumed; a panic of a closure is re-raised to the caller once the other
/// halves running at the time have finished.
///
/// ```
/// use ember::prelude::*;
/// let evens: Vec<u64> = (0..100u64).into_par_iter().filter(|x| x % 2 == 0).collect();
/// assert_eq!(evens.len(), 50);
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a parallel iterator",
    label = "not a parallel iterator",
    note = "`.par_iter()`, `.par_iter_mut()` and `.into_par_iter()` make one from the sources `ember::iter` lists (slices, `Vec`s, arrays, ranges, …), with `use ember::prelude::*;`"
)]
pub trait ParallelIterator: Sized + Send {
    /// The items.
    type Item: Send;

    /// Calls `callback` with this pipeline's producer. Only a source or an adapter of your own
    /// implements it ([`plumbing`](super::plumbing)); code using parallel iterators never
    /// calls it.
    ///
    /// ```
    /// use ember::iter::plumbing::{Producer, ProducerCallback};
    /// use ember::prelude::*;
    /// struct Positions;
    /// impl<T> ProducerCallback<T> for Positions {
    ///     type Output = usize;
    ///     fn callback<P: Producer<Item = T>>(self, producer: P) -> usize {
    ///         producer.len()
    ///     }
    /// }
    /// assert_eq!((0..10u8).into_par_iter().with_producer(Positions), 10);
    /// ```
    fn with_producer<CB: ProducerCallback<Self::Item>>(self, callback: CB) -> CB::Output;

    /// The exact number of items, when the pipeline knows it: `Some` for an indexed pipeline,
    /// which `collect` then writes in place (default `None`). A source of your own that
    /// implements [`IndexedParallelIterator`] returns `Some(self.len())`.
    ///
    /// ```
    /// use ember::prelude::*;
    /// assert_eq!((0..10u8).into_par_iter().opt_len(), Some(10));
    /// assert_eq!((0..10u8).into_par_iter().filter(|x| x % 2 == 0).opt_len(), None);
    /// ```
    fn opt_len(&self) -> Option<usize> {
        None
    }

    /// Applies `f` to every item.
    ///
    /// ```
    /// use ember::prelude::*;
    /// let v: Vec<u64> = (1..4u64).into_par_iter().map(|x| x * 10).collect();
    /// assert_eq!(v, [10, 20, 30]);
    /// ```
    fn map<F, R>(self, f: F) -> Map<Self, F>
    where
        F: Fn(Self::Item) -> R + Sync + Send,
        R: Send,
    {
        Map::new(self, f)
    }

    /// Keeps the items for which `predicate` is true. The result is no longer indexed
    /// (no `enumerate` or `zip` after it), but `collect` still keeps the order.
    ///
    /// ```
    /// use ember::prelude::*;
    /// let odd: Vec<u32> = (0..10u32).into_par_iter().filter(|x| x % 2 == 1).collect();
    /// assert_eq!(odd, [1, 3, 5, 7, 9]);
    /// ```
    fn filter<P>(self, predicate: P) -> Filter<Self, P>
    where
        P: Fn(&Self::Item) -> bool + Sync + Send,
    {
        Filter::new(self, predicate)
    }

    /// Never splits the pipeline into pieces of fewer than `min` positions (items before
    /// any `filter`), so that each piece is worth a fork. `0` and `1` mean no bound.
    ///
    /// ```
    /// use ember::prelude::*;
    /// let pieces = (0..1000u32)
    ///     .into_par_iter()
    ///     .with_min_len(400)
    ///     .map(|_| vec![()])
    ///     .reduce(Vec::new, |mut a, b| { a.extend(b); a });
    /// assert_eq!(pieces.len(), 1000);
    /// ```
    fn with_min_len(self, min: usize) -> MinLen<Self> {
        MinLen::new(self, min)
    }

    /// Calls `f` on every item, in no particular order.
    ///
    /// ```
    /// use ember::prelude::*;
    /// use std::sync::atomic::{AtomicU64, Ordering};
    /// let total = AtomicU64::new(0);
    /// (1..=100u64).collect::<Vec<_>>().par_iter().for_each(|x| {
    ///     total.fetch_add(*x, Ordering::Relaxed);
    /// });
    /// assert_eq!(total.into_inner(), 5050);
    /// ```
    fn for_each<F>(self, f: F)
    where
        F: Fn(Self::Item) + Sync + Send,
    {
        fold::run(self, &fold::ForEach(f))
    }

    /// The sum of the items, as [`Iterator::sum`] (it panics on overflow where that does).
    ///
    /// ```
    /// use ember::prelude::*;
    /// let squares: u64 = (0..1_000u64).into_par_iter().map(|x| x * x).sum();
    /// assert_eq!(squares, 332_833_500);
    /// ```
    fn sum<S>(self) -> S
    where
        S: Send + Sum<Self::Item> + Sum<S>,
    {
        fold::run(self, &fold::Summed::new())
    }

    /// The number of items.
    ///
    /// ```
    /// use ember::prelude::*;
    /// assert_eq!((0..1_000u32).into_par_iter().filter(|x| x % 3 == 0).count(), 334);
    /// ```
    fn count(self) -> usize {
        fold::run(self, &fold::Count)
    }

    /// The smallest item, the first of equals as [`Iterator::min`]; `None` if there is none.
    ///
    /// ```
    /// use ember::prelude::*;
    /// assert_eq!([5, 3, 9].par_iter().min(), Some(&3));
    /// ```
    fn min(self) -> Option<Self::Item>
    where
        Self::Item: Ord,
    {
        fold::best(self, Ord::cmp, false)
    }

    /// The largest item, the last of equals as [`Iterator::max`]; `None` if there is none.
    ///
    /// ```
    /// use ember::prelude::*;
    /// assert_eq!((0..7i32).into_par_iter().map(|x| x % 4).max(), Some(3));
    /// ```
    fn max(self) -> Option<Self::Item>
    where
        Self::Item: Ord,
    {
        fold::best(self, Ord::cmp, true)
    }

    /// The item whose key is smallest, the first of equals as [`Iterator::min_by_key`].
    ///
    /// ```
    /// use ember::prelude::*;
    /// let words = ["pear", "fig", "kiwi", "yam"];
    /// assert_eq!(words.par_iter().min_by_key(|w| w.len()), Some(&"fig"));
    /// ```
    fn min_by_key<K, F>(self, f: F) -> Option<Self::Item>
    where
        K: Ord + Send,
        F: Fn(&Self::Item) -> K + Sync + Send,
    {
        fold::best_by_key(self, f, false)
    }

    /// The item whose key is largest, the last of equals as [`Iterator::max_by_key`].
    ///
    /// ```
    /// use ember::prelude::*;
    /// let words = ["pear", "fig", "kiwi", "yam"];
    /// assert_eq!(words.par_iter().max_by_key(|w| w.len()), Some(&"kiwi"));
    /// ```
    fn max_by_key<K, F>(self, f: F) -> Option<Self::Item>
    where
        K: Ord + Send,
        F: Fn(&Self::Item) -> K + Sync + Send,
    {
        fold::best_by_key(self, f, true)
    }

    /// Combines the items with `op`, starting every piece from `identity()`, which must be a
    /// neutral element of `op`; `op` must be associative (pieces combine in order, but
    /// grouped differently from run to run).
    ///
    /// ```
    /// use ember::prelude::*;
    /// let product = (1..=10u64).collect::<Vec<_>>().into_par_iter().reduce(|| 1, |a, b| a * b);
    /// assert_eq!(product, 3_628_800);
    /// ```
    fn reduce<ID, OP>(self, identity: ID, op: OP) -> Self::Item
    where
        ID: Fn() -> Self::Item + Sync + Send,
        OP: Fn(Self::Item, Self::Item) -> Self::Item + Sync + Send,
    {
        fold::run(self, &fold::Reduce { identity, op })
    }

    /// Whether `predicate` is true for some item. Once one is found, pieces not yet started
    /// are skipped and running ones stop at their next item.
    ///
    /// ```
    /// use ember::prelude::*;
    /// assert!((0..1_000_000u64).into_par_iter().any(|x| x == 999));
    /// ```
    fn any<P>(self, predicate: P) -> bool
    where
        P: Fn(Self::Item) -> bool + Sync + Send,
    {
        fold::run(self, &fold::Any::new(predicate, false))
    }

    /// Whether `predicate` is true for every item (stopping early like [`any`](Self::any)).
    ///
    /// ```
    /// use ember::prelude::*;
    /// assert!(vec![2, 4, 8].par_iter().all(|x| x % 2 == 0));
    /// ```
    fn all<P>(self, predicate: P) -> bool
    where
        P: Fn(Self::Item) -> bool + Sync + Send,
    {
        !fold::run(self, &fold::Any::new(predicate, true))
    }

    /// Collects the items, in order, into a collection (a `Vec`).
    ///
    /// ```
    /// use ember::prelude::*;
    /// let v: Vec<String> = (0..3u8).into_par_iter().map(|i| i.to_string()).collect();
    /// assert_eq!(v, ["0", "1", "2"]);
    /// ```
    fn collect<C>(self) -> C
    where
        C: FromParallelIterator<Self::Item>,
    {
        C::from_par_iter(self)
    }
}

/// A parallel iterator that knows its exact length: slices, `Vec`s, ranges, chunks, and
/// `map`, `enumerate`, `zip`, `with_min_len` of those (not `filter`).
///
/// ```
/// use ember::prelude::*;
/// assert_eq!((0..10u32).into_par_iter().map(|x| x + 1).len(), 10);
/// ```
// No `is_empty`, as in rayon: `len() == 0` is what ported code says.
#[allow(clippy::len_without_is_empty)]
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not an indexed parallel iterator",
    label = "its exact length is not known",
    note = "`enumerate`, `zip` and `len` need a pipeline that knows its length: slices, `Vec`s, ranges, chunks, and `map`, `enumerate`, `zip`, `with_min_len` of those; `filter` loses it, and a sequential `Iterator` is no parallel iterator (`.par_iter()`, `.into_par_iter()`)"
)]
pub trait IndexedParallelIterator: ParallelIterator {
    /// The number of items.
    ///
    /// ```
    /// use ember::prelude::*;
    /// assert_eq!(vec![1, 2, 3].par_chunks(2).len(), 2);
    /// ```
    fn len(&self) -> usize;

    /// Pairs every item with its index.
    ///
    /// ```
    /// use ember::prelude::*;
    /// let v: Vec<(usize, char)> = ['a', 'b'].par_iter().enumerate().map(|(i, c)| (i, *c)).collect();
    /// assert_eq!(v, [(0, 'a'), (1, 'b')]);
    /// ```
    fn enumerate(self) -> Enumerate<Self> {
        Enumerate::new(self)
    }

    /// Pairs the items of `self` and `other` in order, stopping at the shorter one.
    ///
    /// ```
    /// use ember::prelude::*;
    /// let a = vec![1, 2, 3];
    /// let b = vec![10, 20];
    /// let sums: Vec<i32> = a.par_iter().zip(&b).map(|(x, y)| x + y).collect();
    /// assert_eq!(sums, [11, 22]);
    /// ```
    fn zip<Z>(self, other: Z) -> Zip<Self, Z::Iter>
    where
        Z: IntoParallelIterator,
        Z::Iter: IndexedParallelIterator,
    {
        Zip::new(self, other.into_par_iter())
    }
}

/// A value that converts into a parallel iterator: ranges, `Vec`s, slices and references to
/// them (and every parallel iterator, into itself).
///
/// ```
/// use ember::prelude::*;
/// let owned: Vec<String> = vec!["a".into(), "b".into()];
/// let upper: Vec<String> = owned.into_par_iter().map(|s| s.to_uppercase()).collect();
/// assert_eq!(upper, ["A", "B"]);
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be turned into a parallel iterator",
    label = "no `into_par_iter()` for this type",
    note = "`into_par_iter()` takes the sources `ember::iter` lists (ranges, `Vec`s, slices, and references to them) and parallel iterators; a sequential `Iterator` is none of them: iterate its collection with `.par_iter()` / `.into_par_iter()` (`use ember::prelude::*;`)"
)]
pub trait IntoParallelIterator {
    /// The parallel iterator.
    type Iter: ParallelIterator<Item = Self::Item>;
    /// Its items.
    type Item: Send;
    /// Converts `self` into a parallel iterator.
    fn into_par_iter(self) -> Self::Iter;
}

impl<I: ParallelIterator> IntoParallelIterator for I {
    type Iter = I;
    type Item = I::Item;
    fn into_par_iter(self) -> I {
        self
    }
}

/// `par_iter()`: a parallel iterator over references to the items of a collection.
///
/// ```
/// use ember::prelude::*;
/// let v = vec![1u64, 2, 3];
/// assert_eq!(v.par_iter().sum::<u64>(), 6);
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` has no `par_iter()`",
    label = "no `par_iter()` for this type",
    note = "`par_iter()` exists where `&{Self}` turns into a parallel iterator: slices, `Vec`s, arrays, and the other sources `ember::iter` lists (`use ember::prelude::*;`)"
)]
pub trait IntoParallelRefIterator<'data> {
    /// The parallel iterator.
    type Iter: ParallelIterator<Item = Self::Item>;
    /// Its items (references).
    type Item: Send + 'data;
    /// A parallel iterator over `&self`'s items.
    fn par_iter(&'data self) -> Self::Iter;
}

impl<'data, C: ?Sized + 'data> IntoParallelRefIterator<'data> for C
where
    &'data C: IntoParallelIterator,
{
    type Iter = <&'data C as IntoParallelIterator>::Iter;
    type Item = <&'data C as IntoParallelIterator>::Item;
    fn par_iter(&'data self) -> Self::Iter {
        self.into_par_iter()
    }
}

/// `par_iter_mut()`: a parallel iterator over mutable references to a collection's items.
///
/// ```
/// use ember::prelude::*;
/// let mut v = vec![1, 2, 3];
/// v.par_iter_mut().for_each(|x| *x *= 2);
/// assert_eq!(v, [2, 4, 6]);
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` has no `par_iter_mut()`",
    label = "no `par_iter_mut()` for this type",
    note = "`par_iter_mut()` exists where `&mut {Self}` turns into a parallel iterator: slices, `Vec`s, arrays, and the other sources `ember::iter` lists (`use ember::prelude::*;`)"
)]
pub trait IntoParallelRefMutIterator<'data> {
    /// The parallel iterator.
    type Iter: ParallelIterator<Item = Self::Item>;
    /// Its items (mutable references).
    type Item: Send + 'data;
    /// A parallel iterator over `&mut self`'s items.
    fn par_iter_mut(&'data mut self) -> Self::Iter;
}

impl<'data, C: ?Sized + 'data> IntoParallelRefMutIterator<'data> for C
where
    &'data mut C: IntoParallelIterator,
{
    type Iter = <&'data mut C as IntoParallelIterator>::Iter;
    type Item = <&'data mut C as IntoParallelIterator>::Item;
    fn par_iter_mut(&'data mut self) -> Self::Iter {
        self.into_par_iter()
    }
}

/// A collection `collect` can build: `Vec<T>`, in the items' order.
///
/// ```
/// use ember::iter::FromParallelIterator;
/// let v = Vec::from_par_iter(vec![1, 2, 3]);
/// assert_eq!(v, [1, 2, 3]);
/// ```
#[diagnostic::on_unimplemented(
    message = "a parallel iterator over `{T}` cannot be collected into `{Self}`",
    label = "`collect` cannot build this from items of type `{T}`",
    note = "`collect` builds the collections that implement `FromParallelIterator` (`Vec<T>` among them); collect into a `Vec` and convert it, or check the item type"
)]
pub trait FromParallelIterator<T: Send> {
    /// Builds the collection from `iter`'s items.
    fn from_par_iter<I>(iter: I) -> Self
    where
        I: IntoParallelIterator<Item = T>;
}
