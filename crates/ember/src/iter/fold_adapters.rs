//! The adapters that fold each piece into one item: [`Fold`], [`FoldWith`], [`TryFold`],
//! [`TryFoldWith`]. A leaf folds its base's leaf sequentially into one accumulator (no
//! allocation per item) and yields it: the pipeline has one item per piece, to be combined by
//! a consumer (`reduce`, `sum`, `collect`, …).

use std::iter::{once, Once};

use super::adapters::Wrap;
use super::map_like::adapter;
use super::try_consumers::{try_fold_items, Try};

/// `fold`'s state: the identity and the operation, shared by every piece.
struct FoldEach<'f, ID, F>(&'f ID, &'f F);

impl<'f, T, U, ID, F> Wrap<T> for FoldEach<'f, ID, F>
where
    ID: Fn() -> U + Sync,
    F: Fn(U, T) -> U + Sync,
{
    type Item = U;
    type IntoIter<It: Iterator<Item = T>> = Once<U>;
    fn split(self, _index: usize) -> (Self, Self) {
        (FoldEach(self.0, self.1), self)
    }
    fn wrap<It: Iterator<Item = T>>(self, items: It) -> Once<U> {
        once(items.fold((self.0)(), self.1))
    }
}

adapter! {
    /// [`ParallelIterator::fold`](super::ParallelIterator::fold): folds every piece into one
    /// accumulator, starting from `identity()`; yields one item per piece.
    ///
    /// ```
    /// use ember::prelude::*;
    /// let sum: u64 = (0..1_000u32).into_par_iter().fold(|| 0u64, |acc, x| acc + x as u64).sum();
    /// assert_eq!(sum, 499_500);
    /// ```
    Fold<I, ID, F> { identity: ID, fold_op: F } item U; for [U]; where [
        ID: Fn() -> U + Sync + Send,
        F: Fn(U, I::Item) -> U + Sync + Send,
        U: Send,
    ];
    extra |identity, fold_op| FoldEach(&identity, &fold_op);
}

/// `fold_with`'s state: the first accumulator, cloned for every piece, and the operation.
struct FoldFrom<'f, U, F>(U, &'f F);

impl<'f, T, U, F> Wrap<T> for FoldFrom<'f, U, F>
where
    U: Clone + Send,
    F: Fn(U, T) -> U + Sync,
{
    type Item = U;
    type IntoIter<It: Iterator<Item = T>> = Once<U>;
    fn split(self, _index: usize) -> (Self, Self) {
        (FoldFrom(self.0.clone(), self.1), self)
    }
    fn wrap<It: Iterator<Item = T>>(self, items: It) -> Once<U> {
        once(items.fold(self.0, self.1))
    }
}

adapter! {
    /// [`ParallelIterator::fold_with`](super::ParallelIterator::fold_with):
    /// [`fold`](super::ParallelIterator::fold) from a clone of `init` in every piece.
    ///
    /// ```
    /// use ember::prelude::*;
    /// let lens: Vec<usize> = ["ab", "c"].par_iter().fold_with(0, |n, s| n + s.len()).collect();
    /// assert_eq!(lens.iter().sum::<usize>(), 3);
    /// ```
    FoldWith<I, U, F> { init: U, fold_op: F } item U; where [
        U: Clone + Send,
        F: Fn(U, I::Item) -> U + Sync + Send,
    ];
    extra |init, fold_op| FoldFrom(init, &fold_op);
}

/// `try_fold`'s state.
struct TryFoldEach<'f, ID, F>(&'f ID, &'f F);

impl<'f, T, U, R, ID, F> Wrap<T> for TryFoldEach<'f, ID, F>
where
    ID: Fn() -> U + Sync,
    F: Fn(U, T) -> R + Sync,
    R: Try<Output = U>,
{
    type Item = R;
    type IntoIter<It: Iterator<Item = T>> = Once<R>;
    fn split(self, _index: usize) -> (Self, Self) {
        (TryFoldEach(self.0, self.1), self)
    }
    fn wrap<It: Iterator<Item = T>>(self, items: It) -> Once<R> {
        once(try_fold_items(items, (self.0)(), self.1))
    }
}

adapter! {
    /// [`ParallelIterator::try_fold`](super::ParallelIterator::try_fold): folds every piece with a
    /// fallible operation (returning `Option`, `Result` or `ControlFlow`), stopping that piece at
    /// its first failure; yields one result per piece.
    ///
    /// ```
    /// use ember::prelude::*;
    /// let sum = (1..100u8)
    ///     .into_par_iter()
    ///     .try_fold(|| 0u8, |acc, x| acc.checked_add(x))
    ///     .try_reduce(|| 0, |a, b| a.checked_add(b));
    /// assert_eq!(sum, None);
    /// ```
    TryFold<I, ID, F> { identity: ID, fold_op: F } item R; for [U, R]; where [
        ID: Fn() -> U + Sync + Send,
        F: Fn(U, I::Item) -> R + Sync + Send,
        R: Try<Output = U> + Send,
    ];
    extra |identity, fold_op| TryFoldEach(&identity, &fold_op);
}

/// `try_fold_with`'s state.
struct TryFoldFrom<'f, U, F>(U, &'f F);

impl<'f, T, U, R, F> Wrap<T> for TryFoldFrom<'f, U, F>
where
    U: Clone + Send,
    F: Fn(U, T) -> R + Sync,
    R: Try<Output = U>,
{
    type Item = R;
    type IntoIter<It: Iterator<Item = T>> = Once<R>;
    fn split(self, _index: usize) -> (Self, Self) {
        (TryFoldFrom(self.0.clone(), self.1), self)
    }
    fn wrap<It: Iterator<Item = T>>(self, items: It) -> Once<R> {
        once(try_fold_items(items, self.0, self.1))
    }
}

adapter! {
    /// [`ParallelIterator::try_fold_with`](super::ParallelIterator::try_fold_with):
    /// [`try_fold`](super::ParallelIterator::try_fold) from a clone of `init` in every piece.
    ///
    /// ```
    /// use ember::prelude::*;
    /// let all: Result<u32, String> = (0..10u32)
    ///     .into_par_iter()
    ///     .try_fold_with(0, |acc, x| if x < 20 { Ok(acc + x) } else { Err(format!("{x}")) })
    ///     .try_reduce(|| 0, |a, b| Ok(a + b));
    /// assert_eq!(all, Ok(45));
    /// ```
    TryFoldWith<I, U, F> { init: U, fold_op: F } item R; for [R]; where [
        U: Clone + Send,
        F: Fn(U, I::Item) -> R + Sync + Send,
        R: Try<Output = U> + Send,
    ];
    extra |init, fold_op| TryFoldFrom(init, &fold_op);
}
