//! [`IndexedParallelIterator`]: the pipelines that know their exact length, and what only
//! they can do (`enumerate`, `zip`, `take`, `skip`, `rev`, `position_*`, …).

use super::adapters::{Enumerate, Zip};
use super::blocks::{ExponentialBlocks, UniformBlocks};
use super::collect;
use super::interleave::{Interleave, InterleaveShortest};
use super::intersperse::Intersperse;
use super::item_chunks::{FoldChunks, FoldChunksWith, ItemChunks};
use super::positions::{Positions, ZipEq};
use super::take_skip::{Rev, Skip, StepBy, Take};
use super::traits::{IntoParallelIterator, ParallelIterator};

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

    /// The first `n` items.
    ///
    /// ```
    /// use ember::prelude::*;
    /// assert_eq!((0..100u32).into_par_iter().take(10).sum::<u32>(), 45);
    /// ```
    fn take(self, n: usize) -> Take<Self> {
        Take::new(self, n)
    }

    /// All but the first `n` items.
    ///
    /// ```
    /// use ember::prelude::*;
    /// assert_eq!((0..100u32).into_par_iter().skip(90).min(), Some(90));
    /// ```
    fn skip(self, n: usize) -> Skip<Self> {
        Skip::new(self, n)
    }

    /// Every `step`-th item, from the first. Panics if `step` is 0.
    ///
    /// ```
    /// use ember::prelude::*;
    /// let v: Vec<u32> = (0..7u32).into_par_iter().step_by(3).collect();
    /// assert_eq!(v, [0, 3, 6]);
    /// ```
    fn step_by(self, step: usize) -> StepBy<Self> {
        assert!(step != 0, "ember: step_by with a step of 0");
        StepBy::new(self, step)
    }

    /// The items in reverse order.
    ///
    /// ```
    /// use ember::prelude::*;
    /// let v: Vec<char> = ['a', 'b', 'c'].par_iter().rev().copied().collect();
    /// assert_eq!(v, ['c', 'b', 'a']);
    /// ```
    fn rev(self) -> Rev<Self> {
        Rev::new(self)
    }

    /// The index of some item `predicate` accepts (stopping like `find_any`).
    ///
    /// ```
    /// use ember::prelude::*;
    /// assert_eq!([3, 1, 4].par_iter().position_any(|x| *x == 4), Some(2));
    /// ```
    fn position_any<P>(self, predicate: P) -> Option<usize>
    where
        P: Fn(Self::Item) -> bool + Sync + Send,
    {
        self.map(predicate)
            .enumerate()
            .find_any(|(_, hit)| *hit)
            .map(|(i, _)| i)
    }

    /// The index of the first item `predicate` accepts, as [`Iterator::position`]
    /// (stopping like `find_first`).
    ///
    /// ```
    /// use ember::prelude::*;
    /// assert_eq!([3, 1, 4, 1].par_iter().position_first(|x| *x == 1), Some(1));
    /// ```
    fn position_first<P>(self, predicate: P) -> Option<usize>
    where
        P: Fn(Self::Item) -> bool + Sync + Send,
    {
        self.map(predicate)
            .enumerate()
            .find_first(|(_, hit)| *hit)
            .map(|(i, _)| i)
    }

    /// The index of the last item `predicate` accepts (stopping like `find_last`).
    ///
    /// ```
    /// use ember::prelude::*;
    /// assert_eq!([3, 1, 4, 1].par_iter().position_last(|x| *x == 1), Some(3));
    /// ```
    fn position_last<P>(self, predicate: P) -> Option<usize>
    where
        P: Fn(Self::Item) -> bool + Sync + Send,
    {
        self.map(predicate)
            .enumerate()
            .find_last(|(_, hit)| *hit)
            .map(|(i, _)| i)
    }

    /// Pairs the items of `self` and `other`, which must be as long (panics otherwise).
    ///
    /// ```
    /// use ember::prelude::*;
    /// let v: Vec<(u8, u8)> = (0..3u8).into_par_iter().zip_eq(5..8u8).collect();
    /// assert_eq!(v, [(0, 5), (1, 6), (2, 7)]);
    /// ```
    fn zip_eq<Z>(self, other: Z) -> ZipEq<Self, Z::Iter>
    where
        Z: IntoParallelIterator,
        Z::Iter: IndexedParallelIterator,
    {
        ZipEq::new(self, other.into_par_iter())
    }

    /// The items of `self` and `other` in turn, then the rest of the longer one.
    ///
    /// ```
    /// use ember::prelude::*;
    /// let v: Vec<u8> = [1u8, 2].into_par_iter().interleave([7u8, 8, 9]).collect();
    /// assert_eq!(v, [1, 7, 2, 8, 9]);
    /// ```
    fn interleave<Z>(self, other: Z) -> Interleave<Self, Z::Iter>
    where
        Z: IntoParallelIterator<Item = Self::Item>,
        Z::Iter: IndexedParallelIterator,
    {
        Interleave::new(self, other.into_par_iter())
    }

    /// The items of `self` and `other` in turn, until the side whose turn it is has none.
    ///
    /// ```
    /// use ember::prelude::*;
    /// let v: Vec<u8> = [1u8, 2].into_par_iter().interleave_shortest([7u8, 8, 9]).collect();
    /// assert_eq!(v, [1, 7, 2, 8]);
    /// ```
    fn interleave_shortest<Z>(self, other: Z) -> InterleaveShortest<Self, Z::Iter>
    where
        Z: IntoParallelIterator<Item = Self::Item>,
        Z::Iter: IndexedParallelIterator,
    {
        InterleaveShortest::new(self, other.into_par_iter())
    }

    /// A clone of `item` between every two items. (Indexed pipelines only: ember places
    /// the separators by position.)
    ///
    /// ```
    /// use ember::prelude::*;
    /// let s: String = ['a', 'b', 'c'].into_par_iter().intersperse('-').collect();
    /// assert_eq!(s, "a-b-c");
    /// ```
    fn intersperse(self, item: Self::Item) -> Intersperse<Self>
    where
        Self::Item: Clone,
    {
        Intersperse::new(self, item)
    }

    /// Runs of `size` consecutive items, as `Vec`s (the last one shorter). Panics if `size`
    /// is 0.
    ///
    /// ```
    /// use ember::prelude::*;
    /// let v: Vec<Vec<u8>> = (1..=5u8).into_par_iter().chunks(2).collect();
    /// assert_eq!(v, [vec![1, 2], vec![3, 4], vec![5]]);
    /// ```
    fn chunks(self, size: usize) -> ItemChunks<Self> {
        ItemChunks::new(self, size)
    }

    /// Runs of `size` consecutive items, each folded from `identity()` with `fold_op`.
    /// Panics if `size` is 0.
    ///
    /// ```
    /// use ember::prelude::*;
    /// let v: Vec<u32> = (1..=5u32).into_par_iter().fold_chunks(2, || 0, |a, x| a + x).collect();
    /// assert_eq!(v, [3, 7, 5]);
    /// ```
    fn fold_chunks<U, ID, F>(self, size: usize, identity: ID, fold_op: F) -> FoldChunks<Self, ID, F>
    where
        ID: Fn() -> U + Sync + Send,
        F: Fn(U, Self::Item) -> U + Sync + Send,
        U: Send,
    {
        FoldChunks::new(self, size, identity, fold_op)
    }

    /// Runs of `size` consecutive items, each folded from a clone of `init` with `fold_op`.
    /// Panics if `size` is 0.
    ///
    /// ```
    /// use ember::prelude::*;
    /// let v: Vec<u32> = (1..=5u32).into_par_iter().fold_chunks_with(2, 100, |a, x| a + x).collect();
    /// assert_eq!(v, [103, 107, 105]);
    /// ```
    fn fold_chunks_with<U, F>(self, size: usize, init: U, fold_op: F) -> FoldChunksWith<Self, U, F>
    where
        U: Clone + Send + Sync,
        F: Fn(U, Self::Item) -> U + Sync + Send,
    {
        FoldChunksWith::new(self, size, init, fold_op)
    }

    /// The indices of the items `predicate` accepts, in order.
    ///
    /// ```
    /// use ember::prelude::*;
    /// let v: Vec<usize> = (0..10u32).into_par_iter().positions(|x| x % 4 == 0).collect();
    /// assert_eq!(v, [0, 4, 8]);
    /// ```
    fn positions<P>(self, predicate: P) -> Positions<Self, P>
    where
        P: Fn(Self::Item) -> bool + Sync + Send,
    {
        Positions::new(self, predicate)
    }

    /// The items in blocks that double in size, one block after another, each in parallel:
    /// a search (`find_first`, `any`) looks no further than the block of its answer.
    ///
    /// ```
    /// use ember::prelude::*;
    /// let first = (0..u64::MAX).into_par_iter().by_exponential_blocks().find_first(|x| x % 7 == 6);
    /// assert_eq!(first, Some(6));
    /// ```
    fn by_exponential_blocks(self) -> ExponentialBlocks<Self> {
        ExponentialBlocks::new(self)
    }

    /// The items in blocks of `block_size`, one block after another, each in parallel.
    /// Panics if `block_size` is 0.
    ///
    /// ```
    /// use ember::prelude::*;
    /// let v: Vec<u32> = (0..10u32).into_par_iter().by_uniform_blocks(3).collect();
    /// assert_eq!(v, (0..10).collect::<Vec<_>>());
    /// ```
    fn by_uniform_blocks(self, block_size: usize) -> UniformBlocks<Self> {
        assert!(block_size != 0, "block size must not be zero");
        UniformBlocks::new(self, block_size)
    }

    /// Collects the items, in order, into `target`, replacing what it held and reusing its
    /// allocation.
    ///
    /// ```
    /// use ember::prelude::*;
    /// let mut v = Vec::with_capacity(10);
    /// (0..10u32).into_par_iter().map(|x| x * 2).collect_into_vec(&mut v);
    /// assert_eq!(v[9], 18);
    /// ```
    fn collect_into_vec(self, target: &mut Vec<Self::Item>) {
        target.clear();
        collect::append(target, self);
    }
}
