//! [`ParallelIterator`]: the adapters and consumers of every pipeline. The other traits
//! live beside it, [`IndexedParallelIterator`] in `indexed.rs`, the conversions
//! ([`IntoParallelIterator`], [`FromParallelIterator`], …) in `conversions.rs`, and are
//! re-exported here, where the other files look for them.

use std::cmp::Ordering;
use std::iter::{Product, Sum};

use super::adapters::{Filter, Map, MaxLen, MinLen};
use super::any_limits::{SkipAny, SkipAnyWhile, TakeAny, TakeAnyWhile, WhileSome};
use super::chain::Chain;
use super::extend::{self, ParallelExtend};
use super::flat_map::{FlatMap, FlatMapIter, Flatten, FlattenIter};
use super::fold_adapters::{Fold, FoldWith, TryFold, TryFoldWith};
use super::map_like::{Cloned, Copied, FilterMap, Inspect, MapInit, MapWith, PanicFuse, Update};
use super::plumbing::ProducerCallback;
use super::try_consumers::{self, Try};
use super::{find, fold};

pub use super::conversions::{
    FromParallelIterator, IntoParallelIterator, IntoParallelRefIterator, IntoParallelRefMutIterator,
};
pub use super::indexed::IndexedParallelIterator;

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

    /// Splits the pipeline into pieces of at most `max` positions (items before any
    /// `filter`), even on an idle pool, unless that would go below
    /// [`with_min_len`](Self::with_min_len). `0` counts as `1`.
    ///
    /// ```
    /// use ember::prelude::*;
    /// let pieces = (0..1000u32).into_par_iter().with_max_len(100).fold(|| (), |(), _| ()).count();
    /// assert!(pieces >= 10);
    /// ```
    fn with_max_len(self, max: usize) -> MaxLen<Self> {
        MaxLen::new(self, max)
    }

    /// Maps and keeps the `Some`s: `filter` and `map` in one.
    ///
    /// ```
    /// use ember::prelude::*;
    /// let halves: Vec<u32> = (0..7u32).into_par_iter().filter_map(|x| (x % 2 == 0).then(|| x / 2)).collect();
    /// assert_eq!(halves, [0, 1, 2, 3]);
    /// ```
    fn filter_map<F, R>(self, f: F) -> FilterMap<Self, F>
    where
        F: Fn(Self::Item) -> Option<R> + Sync + Send,
        R: Send,
    {
        FilterMap::new(self, f)
    }

    /// Maps with a state of type `S` that every piece gets a clone of.
    ///
    /// ```
    /// use ember::prelude::*;
    /// let v: Vec<u32> = (0..3u32).into_par_iter().map_with(1, |one, x| x + *one).collect();
    /// assert_eq!(v, [1, 2, 3]);
    /// ```
    fn map_with<S, F, R>(self, init: S, f: F) -> MapWith<Self, S, F>
    where
        S: Clone + Send,
        F: Fn(&mut S, Self::Item) -> R + Sync + Send,
        R: Send,
    {
        MapWith::new(self, init, f)
    }

    /// Maps with a state that `init` makes for every piece.
    ///
    /// ```
    /// use ember::prelude::*;
    /// let v: Vec<String> = (0..3u8)
    ///     .into_par_iter()
    ///     .map_init(String::new, |buf, x| { buf.clear(); buf.push_str(&x.to_string()); buf.clone() })
    ///     .collect();
    /// assert_eq!(v, ["0", "1", "2"]);
    /// ```
    fn map_init<INIT, S, F, R>(self, init: INIT, f: F) -> MapInit<Self, INIT, F>
    where
        INIT: Fn() -> S + Sync + Send,
        F: Fn(&mut S, Self::Item) -> R + Sync + Send,
        R: Send,
    {
        MapInit::new(self, init, f)
    }

    /// Calls `f` on a reference to every item as it passes.
    ///
    /// ```
    /// use ember::prelude::*;
    /// let n = (0..5u8).into_par_iter().inspect(|x| assert!(*x < 5)).count();
    /// assert_eq!(n, 5);
    /// ```
    fn inspect<F>(self, f: F) -> Inspect<Self, F>
    where
        F: Fn(&Self::Item) + Sync + Send,
    {
        Inspect::new(self, f)
    }

    /// Changes every item in place with `f`.
    ///
    /// ```
    /// use ember::prelude::*;
    /// let v: Vec<u32> = (0..3u32).into_par_iter().update(|x| *x *= 3).collect();
    /// assert_eq!(v, [0, 3, 6]);
    /// ```
    fn update<F>(self, f: F) -> Update<Self, F>
    where
        F: Fn(&mut Self::Item) + Sync + Send,
    {
        Update::new(self, f)
    }

    /// Copies items out of references.
    ///
    /// ```
    /// use ember::prelude::*;
    /// assert_eq!([1u8, 2].par_iter().copied().sum::<u8>(), 3);
    /// ```
    fn copied<'a, T>(self) -> Copied<Self>
    where
        T: 'a + Copy + Send + Sync,
        Self: ParallelIterator<Item = &'a T>,
    {
        Copied::new(self)
    }

    /// Clones items out of references.
    ///
    /// ```
    /// use ember::prelude::*;
    /// let v = vec![String::from("x")];
    /// assert_eq!(v.par_iter().cloned().collect::<Vec<_>>(), v);
    /// ```
    fn cloned<'a, T>(self) -> Cloned<Self>
    where
        T: 'a + Clone + Send + Sync,
        Self: ParallelIterator<Item = &'a T>,
    {
        Cloned::new(self)
    }

    /// Maps every item to a parallel iterator and yields all their items, in order. Each
    /// inner iterator runs inside the piece of the item that made it (see [`FlatMap`]).
    ///
    /// ```
    /// use ember::prelude::*;
    /// let v: Vec<u32> = (0..3u32).into_par_iter().flat_map(|x| vec![x; x as usize]).collect();
    /// assert_eq!(v, [1, 2, 2]);
    /// ```
    fn flat_map<F, PI>(self, f: F) -> FlatMap<Self, F>
    where
        F: Fn(Self::Item) -> PI + Sync + Send,
        PI: IntoParallelIterator,
    {
        FlatMap::new(self, f)
    }

    /// Maps every item to a sequential iterator and yields all their items, in order.
    ///
    /// ```
    /// use ember::prelude::*;
    /// let n = (0..4u32).into_par_iter().flat_map_iter(|x| 0..x).count();
    /// assert_eq!(n, 6);
    /// ```
    fn flat_map_iter<F, SI>(self, f: F) -> FlatMapIter<Self, F>
    where
        F: Fn(Self::Item) -> SI + Sync + Send,
        SI: IntoIterator,
        SI::Item: Send,
    {
        FlatMapIter::new(self, f)
    }

    /// Yields the items of every item (each a parallel iterator, or converts into one).
    ///
    /// ```
    /// use ember::prelude::*;
    /// let v: Vec<u8> = vec![vec![1u8], vec![2, 3]].into_par_iter().flatten().collect();
    /// assert_eq!(v, [1, 2, 3]);
    /// ```
    fn flatten(self) -> Flatten<Self>
    where
        Self::Item: IntoParallelIterator,
    {
        Flatten::new(self)
    }

    /// Yields the items of every item (each a sequential iterator, or converts into one).
    ///
    /// ```
    /// use ember::prelude::*;
    /// let v: Vec<u8> = vec![vec![1u8], vec![2, 3]].into_par_iter().flatten_iter().collect();
    /// assert_eq!(v, [1, 2, 3]);
    /// ```
    fn flatten_iter(self) -> FlattenIter<Self>
    where
        Self::Item: IntoIterator,
        <Self::Item as IntoIterator>::Item: Send,
    {
        FlattenIter::new(self)
    }

    /// The items of `self`, then those of `other`.
    ///
    /// ```
    /// use ember::prelude::*;
    /// let v: Vec<u8> = (0..2u8).into_par_iter().chain(5..7u8).collect();
    /// assert_eq!(v, [0, 1, 5, 6]);
    /// ```
    fn chain<C>(self, other: C) -> Chain<Self, C::Iter>
    where
        C: IntoParallelIterator<Item = Self::Item>,
    {
        Chain::new(self, other.into_par_iter())
    }

    /// Once a closure of one piece panics, the other pieces stop at their next item, so the
    /// panic reaches the caller sooner (it is re-raised either way).
    ///
    /// ```
    /// use ember::prelude::*;
    /// assert_eq!((0..10u8).into_par_iter().panic_fuse().count(), 10);
    /// ```
    fn panic_fuse(self) -> PanicFuse<Self> {
        PanicFuse::new(self)
    }

    /// Folds every piece into one accumulator, from `identity()`, with `fold_op`: a
    /// parallel iterator of one accumulator per piece (how many depends on the split), to
    /// combine with `reduce`, `sum`, `collect`… No allocation per item.
    ///
    /// ```
    /// use ember::prelude::*;
    /// let longest = ["a", "abc", "ab"]
    ///     .par_iter()
    ///     .fold(|| 0, |best, s| best.max(s.len()))
    ///     .reduce(|| 0, usize::max);
    /// assert_eq!(longest, 3);
    /// ```
    fn fold<U, ID, F>(self, identity: ID, fold_op: F) -> Fold<Self, ID, F>
    where
        ID: Fn() -> U + Sync + Send,
        F: Fn(U, Self::Item) -> U + Sync + Send,
        U: Send,
    {
        Fold::new(self, identity, fold_op)
    }

    /// [`fold`](Self::fold) from a clone of `init` in every piece.
    ///
    /// ```
    /// use ember::prelude::*;
    /// let total: u32 = (0..5u32).into_par_iter().fold_with(0, |a, x| a + x).sum();
    /// assert_eq!(total, 10);
    /// ```
    fn fold_with<U, F>(self, init: U, fold_op: F) -> FoldWith<Self, U, F>
    where
        U: Clone + Send,
        F: Fn(U, Self::Item) -> U + Sync + Send,
    {
        FoldWith::new(self, init, fold_op)
    }

    /// [`fold`](Self::fold) with a fallible `fold_op` (returning `Option`, `Result` or
    /// `ControlFlow`): a piece stops at its first failure and yields it.
    ///
    /// ```
    /// use ember::prelude::*;
    /// let sum = (0..10u32)
    ///     .into_par_iter()
    ///     .try_fold(|| 0u32, |a, x| a.checked_add(x))
    ///     .try_reduce(|| 0, |a, b| a.checked_add(b));
    /// assert_eq!(sum, Some(45));
    /// ```
    fn try_fold<U, R, ID, F>(self, identity: ID, fold_op: F) -> TryFold<Self, ID, F>
    where
        ID: Fn() -> U + Sync + Send,
        F: Fn(U, Self::Item) -> R + Sync + Send,
        R: Try<Output = U> + Send,
    {
        TryFold::new(self, identity, fold_op)
    }

    /// [`try_fold`](Self::try_fold) from a clone of `init` in every piece.
    ///
    /// ```
    /// use ember::prelude::*;
    /// let r: Result<u32, &str> = (0..4u32)
    ///     .into_par_iter()
    ///     .try_fold_with(0, |a, x| if x < 3 { Ok(a + x) } else { Err("too big") })
    ///     .try_reduce(|| 0, |a, b| Ok(a + b));
    /// assert_eq!(r, Err("too big"));
    /// ```
    fn try_fold_with<U, R, F>(self, init: U, fold_op: F) -> TryFoldWith<Self, U, F>
    where
        U: Clone + Send,
        F: Fn(U, Self::Item) -> R + Sync + Send,
        R: Try<Output = U> + Send,
    {
        TryFoldWith::new(self, init, fold_op)
    }

    /// Calls `f` on every item with a clone of `init` per piece.
    ///
    /// ```
    /// use ember::prelude::*;
    /// use std::sync::mpsc;
    /// let (tx, rx) = mpsc::channel();
    /// (0..3u8).into_par_iter().for_each_with(tx, |tx, x| tx.send(x).unwrap());
    /// let mut got: Vec<u8> = rx.iter().collect();
    /// got.sort();
    /// assert_eq!(got, [0, 1, 2]);
    /// ```
    fn for_each_with<S, F>(self, init: S, f: F)
    where
        S: Clone + Send,
        F: Fn(&mut S, Self::Item) + Sync + Send,
    {
        self.map_with(init, f).for_each(drop)
    }

    /// Calls `f` on every item with a state that `init` makes for every piece.
    ///
    /// ```
    /// use ember::prelude::*;
    /// (0..100u32).into_par_iter().for_each_init(Vec::new, |buf, x| buf.push(x));
    /// ```
    fn for_each_init<INIT, S, F>(self, init: INIT, f: F)
    where
        INIT: Fn() -> S + Sync + Send,
        F: Fn(&mut S, Self::Item) + Sync + Send,
    {
        self.map_init(init, f).for_each(drop)
    }

    /// Calls the fallible `f` on every item; the first failure seen stops the other pieces
    /// at their next item and is returned (which one, when several fail, is not fixed).
    ///
    /// ```
    /// use ember::prelude::*;
    /// let r = (0..100u32).into_par_iter().try_for_each(|x| if x == 42 { Err(x) } else { Ok(()) });
    /// assert_eq!(r, Err(42));
    /// ```
    fn try_for_each<F, R>(self, f: F) -> R
    where
        F: Fn(Self::Item) -> R + Sync + Send,
        R: Try<Output = ()> + Send,
        R::Residual: Send,
    {
        try_consumers::try_reduce(self.map(f), || (), |(), ()| R::from_output(()))
    }

    /// [`try_for_each`](Self::try_for_each) with a clone of `init` per piece.
    ///
    /// ```
    /// use ember::prelude::*;
    /// use std::sync::mpsc;
    /// let (tx, rx) = mpsc::channel();
    /// let r = (0..10u8).into_par_iter().try_for_each_with(tx, |tx, x| tx.send(x));
    /// assert!(r.is_ok());
    /// assert_eq!(rx.iter().count(), 10);
    /// ```
    fn try_for_each_with<S, F, R>(self, init: S, f: F) -> R
    where
        S: Clone + Send,
        F: Fn(&mut S, Self::Item) -> R + Sync + Send,
        R: Try<Output = ()> + Send,
        R::Residual: Send,
    {
        self.map_with(init, f).try_for_each(|r| r)
    }

    /// [`try_for_each`](Self::try_for_each) with a state that `init` makes for every piece.
    ///
    /// ```
    /// use ember::prelude::*;
    /// let r = (0..10u32).into_par_iter().try_for_each_init(String::new, |buf, x| {
    ///     buf.clear();
    ///     buf.push_str(&x.to_string());
    ///     if buf.len() < 2 { Ok(()) } else { Err(x) }
    /// });
    /// assert_eq!(r, Ok(()));
    /// ```
    fn try_for_each_init<INIT, S, F, R>(self, init: INIT, f: F) -> R
    where
        INIT: Fn() -> S + Sync + Send,
        F: Fn(&mut S, Self::Item) -> R + Sync + Send,
        R: Try<Output = ()> + Send,
        R::Residual: Send,
    {
        self.map_init(init, f).try_for_each(|r| r)
    }

    /// [`try_reduce`](Self::try_reduce) without an identity: `None` if there is no item.
    ///
    /// ```
    /// use ember::prelude::*;
    /// let max = [Some(3), Some(9), Some(4)].par_iter().copied().try_reduce_with(|a, b| Some(a.max(b)));
    /// assert_eq!(max, Some(Some(9)));
    /// ```
    fn try_reduce_with<T, OP>(self, op: OP) -> Option<Self::Item>
    where
        Self::Item: Try<Output = T>,
        <Self::Item as Try>::Residual: Send,
        T: Send,
        OP: Fn(T, T) -> Self::Item + Sync + Send,
    {
        try_consumers::try_reduce_with(self, op)
    }

    /// Combines fallible items (`Option`, `Result`, `ControlFlow`) with the fallible `op`
    /// from `identity()`, as [`reduce`](Self::reduce) does; the first failure seen stops
    /// the other pieces and is returned.
    ///
    /// ```
    /// use ember::prelude::*;
    /// let parsed: Result<u32, std::num::ParseIntError> = ["1", "2", "3"]
    ///     .par_iter()
    ///     .map(|s| s.parse::<u32>())
    ///     .try_reduce(|| 0, |a, b| Ok(a + b));
    /// assert_eq!(parsed, Ok(6));
    /// ```
    fn try_reduce<T, ID, OP>(self, identity: ID, op: OP) -> Self::Item
    where
        Self::Item: Try<Output = T>,
        <Self::Item as Try>::Residual: Send,
        T: Send,
        ID: Fn() -> T + Sync + Send,
        OP: Fn(T, T) -> Self::Item + Sync + Send,
    {
        try_consumers::try_reduce(self, identity, op)
    }

    /// Combines the items with the associative `op`; `None` if there is none.
    ///
    /// ```
    /// use ember::prelude::*;
    /// assert_eq!((1..5u32).into_par_iter().reduce_with(|a, b| a * b), Some(24));
    /// ```
    fn reduce_with<OP>(self, op: OP) -> Option<Self::Item>
    where
        OP: Fn(Self::Item, Self::Item) -> Self::Item + Sync + Send,
    {
        fold::run(self, &fold::ReduceWith(op))
    }

    /// The product of the items, as [`Iterator::product`].
    ///
    /// ```
    /// use ember::prelude::*;
    /// assert_eq!((1..6u64).into_par_iter().product::<u64>(), 120);
    /// ```
    fn product<P>(self) -> P
    where
        P: Send + Product<Self::Item> + Product<P>,
    {
        fold::run(self, &fold::Multiplied::new())
    }

    /// The smallest item by `cmp`, the first of equals as [`Iterator::min_by`].
    ///
    /// ```
    /// use ember::prelude::*;
    /// assert_eq!([2.5f64, -1.0, 3.0].par_iter().min_by(|a, b| a.total_cmp(b)), Some(&-1.0));
    /// ```
    fn min_by<F>(self, cmp: F) -> Option<Self::Item>
    where
        F: Fn(&Self::Item, &Self::Item) -> Ordering + Sync + Send,
    {
        fold::best(self, cmp, false)
    }

    /// The largest item by `cmp`, the last of equals as [`Iterator::max_by`].
    ///
    /// ```
    /// use ember::prelude::*;
    /// assert_eq!([2.5f64, -1.0, 3.0].par_iter().max_by(|a, b| a.total_cmp(b)), Some(&3.0));
    /// ```
    fn max_by<F>(self, cmp: F) -> Option<Self::Item>
    where
        F: Fn(&Self::Item, &Self::Item) -> Ordering + Sync + Send,
    {
        fold::best(self, cmp, true)
    }

    /// Some item `predicate` accepts, not necessarily the first; stops every piece once
    /// one is found.
    ///
    /// ```
    /// use ember::prelude::*;
    /// assert_eq!((0..1000u32).into_par_iter().find_any(|x| x % 500 == 499).map(|x| x % 500), Some(499));
    /// ```
    fn find_any<P>(self, predicate: P) -> Option<Self::Item>
    where
        P: Fn(&Self::Item) -> bool + Sync + Send,
    {
        find::find_any(self, predicate)
    }

    /// The first item `predicate` accepts, as [`Iterator::find`]. Once one is found, the
    /// pieces to its right stop at their next item (or never start).
    ///
    /// ```
    /// use ember::prelude::*;
    /// assert_eq!((0..1000u32).into_par_iter().find_first(|x| x % 300 == 299), Some(299));
    /// ```
    fn find_first<P>(self, predicate: P) -> Option<Self::Item>
    where
        P: Fn(&Self::Item) -> bool + Sync + Send,
    {
        find::find_first(self, predicate)
    }

    /// The last item `predicate` accepts. Once one is found, the pieces to its left stop.
    ///
    /// ```
    /// use ember::prelude::*;
    /// assert_eq!((0..1000u32).into_par_iter().find_last(|x| x % 300 == 299), Some(899));
    /// ```
    fn find_last<P>(self, predicate: P) -> Option<Self::Item>
    where
        P: Fn(&Self::Item) -> bool + Sync + Send,
    {
        find::find_last(self, predicate)
    }

    /// The result of `f` for some item where it is `Some` (stopping like `find_any`).
    ///
    /// ```
    /// use ember::prelude::*;
    /// assert_eq!(["x", "7"].par_iter().find_map_any(|s| s.parse::<u8>().ok()), Some(7));
    /// ```
    fn find_map_any<F, R>(self, f: F) -> Option<R>
    where
        F: Fn(Self::Item) -> Option<R> + Sync + Send,
        R: Send,
    {
        self.filter_map(f).find_any(|_| true)
    }

    /// The result of `f` for the first item where it is `Some` (stopping like `find_first`).
    ///
    /// ```
    /// use ember::prelude::*;
    /// assert_eq!(["x", "7", "8"].par_iter().find_map_first(|s| s.parse::<u8>().ok()), Some(7));
    /// ```
    fn find_map_first<F, R>(self, f: F) -> Option<R>
    where
        F: Fn(Self::Item) -> Option<R> + Sync + Send,
        R: Send,
    {
        self.filter_map(f).find_first(|_| true)
    }

    /// The result of `f` for the last item where it is `Some` (stopping like `find_last`).
    ///
    /// ```
    /// use ember::prelude::*;
    /// assert_eq!(["x", "7", "8"].par_iter().find_map_last(|s| s.parse::<u8>().ok()), Some(8));
    /// ```
    fn find_map_last<F, R>(self, f: F) -> Option<R>
    where
        F: Fn(Self::Item) -> Option<R> + Sync + Send,
        R: Send,
    {
        self.filter_map(f).find_last(|_| true)
    }

    /// Splits pairs into two collections, in order.
    ///
    /// ```
    /// use ember::prelude::*;
    /// let (a, b): (Vec<u8>, Vec<char>) = vec![(1, 'a'), (2, 'b')].into_par_iter().unzip();
    /// assert_eq!((a, b), (vec![1, 2], vec!['a', 'b']));
    /// ```
    fn unzip<A, B, FromA, FromB>(self) -> (FromA, FromB)
    where
        Self: ParallelIterator<Item = (A, B)>,
        A: Send,
        B: Send,
        FromA: Default + Send + ParallelExtend<A>,
        FromB: Default + Send + ParallelExtend<B>,
    {
        extend::split(self, |(a, b), left: &mut Vec<A>, right: &mut Vec<B>| {
            left.push(a);
            right.push(b);
        })
    }

    /// Splits the items into those `predicate` accepts and the others, in order.
    ///
    /// ```
    /// use ember::prelude::*;
    /// let (even, odd): (Vec<u8>, Vec<u8>) = (0..6u8).into_par_iter().partition(|x| x % 2 == 0);
    /// assert_eq!((even, odd), (vec![0, 2, 4], vec![1, 3, 5]));
    /// ```
    fn partition<A, B, P>(self, predicate: P) -> (A, B)
    where
        A: Default + Send + ParallelExtend<Self::Item>,
        B: Default + Send + ParallelExtend<Self::Item>,
        P: Fn(&Self::Item) -> bool + Sync + Send,
    {
        extend::split(
            self,
            |item, left: &mut Vec<Self::Item>, right: &mut Vec<Self::Item>| {
                if predicate(&item) {
                    left.push(item);
                } else {
                    right.push(item);
                }
            },
        )
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

    /// Some `n` of the items, in no particular order ([`TakeAny`](super::TakeAny)): the
    /// pieces take items until `n` are taken, whichever come first.
    ///
    /// ```
    /// use ember::prelude::*;
    /// let some: Vec<u32> = (0..1_000u32).into_par_iter().take_any(5).collect();
    /// assert_eq!(some.len(), 5);
    /// ```
    fn take_any(self, n: usize) -> TakeAny<Self> {
        TakeAny::new(self, n)
    }

    /// All but some `n` of the items ([`SkipAny`](super::SkipAny)).
    ///
    /// ```
    /// use ember::prelude::*;
    /// assert_eq!((0..1_000u32).into_par_iter().skip_any(5).count(), 995);
    /// ```
    fn skip_any(self, n: usize) -> SkipAny<Self> {
        SkipAny::new(self, n)
    }

    /// Items while `predicate` accepts them: once it rejects any item, in any piece, every
    /// piece stops ([`TakeAnyWhile`](super::TakeAnyWhile)). Which items come out depends
    /// on the run; in order only in that every piece's taken items precede its stop.
    ///
    /// ```
    /// use ember::prelude::*;
    /// let v: Vec<u32> = (0..100u32).into_par_iter().take_any_while(|x| *x < 50).collect();
    /// assert!(v.iter().all(|x| *x < 50));
    /// ```
    fn take_any_while<P>(self, predicate: P) -> TakeAnyWhile<Self, P>
    where
        P: Fn(&Self::Item) -> bool + Sync + Send,
    {
        TakeAnyWhile::new(self, predicate)
    }

    /// Drops items while `predicate` accepts them, until it rejects any item in any piece:
    /// from then on every piece yields all its items ([`SkipAnyWhile`](super::SkipAnyWhile)).
    ///
    /// ```
    /// use ember::prelude::*;
    /// let v: Vec<u32> = (0..100u32).into_par_iter().skip_any_while(|x| *x < 50).collect();
    /// assert!(v.contains(&99));
    /// ```
    fn skip_any_while<P>(self, predicate: P) -> SkipAnyWhile<Self, P>
    where
        P: Fn(&Self::Item) -> bool + Sync + Send,
    {
        SkipAnyWhile::new(self, predicate)
    }

    /// The values of the `Some` items, stopping every piece once any meets a `None`
    /// ([`WhileSome`](super::WhileSome)).
    ///
    /// ```
    /// use ember::prelude::*;
    /// let v: Vec<u32> = (0..10u32).into_par_iter().map(|x| (x < 100).then_some(x)).while_some().collect();
    /// assert_eq!(v.len(), 10);
    /// ```
    fn while_some<T>(self) -> WhileSome<Self>
    where
        Self: ParallelIterator<Item = Option<T>>,
        T: Send,
    {
        WhileSome::new(self)
    }

    /// Collects the items into a collection: any [`FromParallelIterator`] (a `Vec`, in order;
    /// the standard collections; a `String`; a `Result` or `Option` of one, which stops at
    /// the first `Err` or `None`).
    ///
    /// ```
    /// use ember::prelude::*;
    /// use std::collections::HashMap;
    /// let v: Vec<String> = (0..3u8).into_par_iter().map(|i| i.to_string()).collect();
    /// assert_eq!(v, ["0", "1", "2"]);
    /// let squares: HashMap<u8, u16> = (0..4u8).into_par_iter().map(|i| (i, u16::from(i) * u16::from(i))).collect();
    /// assert_eq!(squares[&3], 9);
    /// let parsed: Result<Vec<u8>, _> = ["1", "x", "3"].par_iter().map(|s| s.parse::<u8>()).collect();
    /// assert!(parsed.is_err());
    /// ```
    fn collect<C>(self) -> C
    where
        C: FromParallelIterator<Self::Item>,
    {
        C::from_par_iter(self)
    }
}
