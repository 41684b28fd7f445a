//! Slices: `par_iter()`, `par_iter_mut()`, [`ParallelSlice::par_chunks`],
//! [`ParallelSliceMut::par_chunks_mut`] and the parallel sorts (`sort.rs`), for `[T]`, and
//! so for `Vec<T>` and arrays, which dereference to it.

use std::cmp::Ordering;

use super::plumbing::Producer;
use super::slice_split::{ChunkBy, SliceSplit, SliceSplitInclusive};
use super::slice_views::{
    ArrayOverlapping, ArrayWindows, ChunksExact, ExactFront, FromBack, Overlapping, RChunks,
    RChunksExact, Windows,
};
use super::sort::{self, ByCmp, ByKey, Natural};
use super::traits::IntoParallelIterator;

impl<'a, T: Sync> Producer for &'a [T] {
    type Item = &'a T;
    type IntoIter = std::slice::Iter<'a, T>;
    fn len(&self) -> usize {
        <[T]>::len(self)
    }
    fn split_at(self, index: usize) -> (Self, Self) {
        <[T]>::split_at(self, index)
    }
    fn into_iter(self) -> Self::IntoIter {
        self.iter()
    }
}

impl<'a, T: Send> Producer for &'a mut [T] {
    type Item = &'a mut T;
    type IntoIter = std::slice::IterMut<'a, T>;
    fn len(&self) -> usize {
        <[T]>::len(self)
    }
    fn split_at(self, index: usize) -> (Self, Self) {
        self.split_at_mut(index)
    }
    fn into_iter(self) -> Self::IntoIter {
        self.iter_mut()
    }
}

/// Chunks of `size` items of a slice (the last one shorter), shared or mutable.
#[derive(Debug)]
pub(super) struct ChunksOf<S> {
    slice: S,
    size: usize,
}

impl<S> ChunksOf<S> {
    fn new(slice: S, size: usize) -> Self {
        assert!(size != 0, "chunk size must not be zero");
        ChunksOf { slice, size }
    }
}

/// The chunking of one kind of slice reference.
pub(super) trait Chunkable: Producer {
    /// The sequential iterator over chunks.
    type Chunks: Iterator;
    fn chunks(self, size: usize) -> Self::Chunks;
}

impl<'a, T: Sync> Chunkable for &'a [T] {
    type Chunks = std::slice::Chunks<'a, T>;
    fn chunks(self, size: usize) -> Self::Chunks {
        <[T]>::chunks(self, size)
    }
}

impl<'a, T: Send> Chunkable for &'a mut [T] {
    type Chunks = std::slice::ChunksMut<'a, T>;
    fn chunks(self, size: usize) -> Self::Chunks {
        self.chunks_mut(size)
    }
}

impl<S: Chunkable> Producer for ChunksOf<S> {
    type Item = <S::Chunks as Iterator>::Item;
    type IntoIter = S::Chunks;
    fn len(&self) -> usize {
        self.slice.len().div_ceil(self.size)
    }
    fn split_at(self, index: usize) -> (Self, Self) {
        let at = index.saturating_mul(self.size).min(self.slice.len());
        let (left, right) = self.slice.split_at(at);
        let size = self.size;
        (
            ChunksOf { slice: left, size },
            ChunksOf { slice: right, size },
        )
    }
    fn into_iter(self) -> S::Chunks {
        self.slice.chunks(self.size)
    }
}

indexed_source! {
    /// `par_iter()` of a slice (or `Vec`, or array): its items by reference.
    ///
    /// ```
    /// use ember::prelude::*;
    /// let v = vec![3, 1, 2];
    /// assert_eq!(v.par_iter().max(), Some(&3));
    /// ```
    SliceIter<'a, T> where [T: Sync + 'a] { producer: &'a [T] } => &'a T
}

indexed_source! {
    /// `par_iter_mut()` of a slice (or `Vec`, or array): its items by mutable reference.
    ///
    /// ```
    /// use ember::prelude::*;
    /// let mut v = [1, 2, 3];
    /// v.par_iter_mut().for_each(|x| *x += 1);
    /// assert_eq!(v, [2, 3, 4]);
    /// ```
    SliceIterMut<'a, T> where [T: Send + 'a] { producer: &'a mut [T] } => &'a mut T
}

indexed_source! {
    /// [`ParallelSlice::par_chunks`]: chunks of a slice.
    ///
    /// ```
    /// use ember::prelude::*;
    /// let sums: Vec<u32> = [1, 2, 3, 4, 5].par_chunks(2).map(|c| c.iter().sum()).collect();
    /// assert_eq!(sums, [3, 7, 5]);
    /// ```
    Chunks<'a, T> where [T: Sync + 'a] { producer: ChunksOf<&'a [T]> } => &'a [T]
}

indexed_source! {
    /// [`ParallelSliceMut::par_chunks_mut`]: mutable chunks of a slice.
    ///
    /// ```
    /// use ember::prelude::*;
    /// let mut v = [0u8; 5];
    /// v.par_chunks_mut(2).enumerate().for_each(|(i, c)| c.fill(i as u8));
    /// assert_eq!(v, [0, 0, 1, 1, 2]);
    /// ```
    ChunksMut<'a, T> where [T: Send + 'a] { producer: ChunksOf<&'a mut [T]> } => &'a mut [T]
}

// Shared views copy: their parallel iterators clone, as rayon's do.
impl<T> Clone for SliceIter<'_, T> {
    fn clone(&self) -> Self {
        SliceIter {
            producer: self.producer,
        }
    }
}

impl<T> Clone for Chunks<'_, T> {
    fn clone(&self) -> Self {
        Chunks {
            producer: ChunksOf { ..self.producer },
        }
    }
}

impl<'a, T: Sync + 'a> IntoParallelIterator for &'a [T] {
    type Iter = SliceIter<'a, T>;
    type Item = &'a T;
    fn into_par_iter(self) -> Self::Iter {
        SliceIter { producer: self }
    }
}

impl<'a, T: Send + 'a> IntoParallelIterator for &'a mut [T] {
    type Iter = SliceIterMut<'a, T>;
    type Item = &'a mut T;
    fn into_par_iter(self) -> Self::Iter {
        SliceIterMut { producer: self }
    }
}

impl<'a, T: Sync + 'a> IntoParallelIterator for &'a Vec<T> {
    type Iter = SliceIter<'a, T>;
    type Item = &'a T;
    fn into_par_iter(self) -> Self::Iter {
        self.as_slice().into_par_iter()
    }
}

impl<'a, T: Send + 'a> IntoParallelIterator for &'a mut Vec<T> {
    type Iter = SliceIterMut<'a, T>;
    type Item = &'a mut T;
    fn into_par_iter(self) -> Self::Iter {
        self.as_mut_slice().into_par_iter()
    }
}

impl<'a, T: Sync + 'a, const N: usize> IntoParallelIterator for &'a [T; N] {
    type Iter = SliceIter<'a, T>;
    type Item = &'a T;
    fn into_par_iter(self) -> Self::Iter {
        self.as_slice().into_par_iter()
    }
}

impl<'a, T: Send + 'a, const N: usize> IntoParallelIterator for &'a mut [T; N] {
    type Iter = SliceIterMut<'a, T>;
    type Item = &'a mut T;
    fn into_par_iter(self) -> Self::Iter {
        self.as_mut_slice().into_par_iter()
    }
}

/// Parallel operations on shared slices (and `Vec`s and arrays, through `Deref`).
///
/// ```
/// use ember::prelude::*;
/// let v: Vec<u32> = (0..10).collect();
/// assert_eq!(v.par_chunks(4).count(), 3);
/// ```
pub trait ParallelSlice<T: Sync> {
    /// A parallel iterator over chunks of `size` items (the last one may be shorter).
    ///
    /// # Panics
    /// If `size` is 0.
    ///
    /// ```
    /// use ember::prelude::*;
    /// let v = [1, 2, 3, 4, 5];
    /// let firsts: Vec<i32> = v.par_chunks(2).map(|c| c[0]).collect();
    /// assert_eq!(firsts, [1, 3, 5]);
    /// ```
    fn par_chunks(&self, size: usize) -> Chunks<'_, T>;

    /// Chunks of exactly `size` items, the remainder left out ([`ChunksExact`]). Panics if
    /// `size` is 0.
    fn par_chunks_exact(&self, size: usize) -> ChunksExact<'_, T>;

    /// Chunks of `size` items from the back, the last one shorter ([`RChunks`]). Panics if
    /// `size` is 0.
    fn par_rchunks(&self, size: usize) -> RChunks<'_, T>;

    /// Chunks of exactly `size` items from the back, the remainder left out
    /// ([`RChunksExact`]). Panics if `size` is 0.
    fn par_rchunks_exact(&self, size: usize) -> RChunksExact<'_, T>;

    /// Every run of `size` adjacent items ([`Windows`]). Panics if `size` is 0.
    fn par_windows(&self, size: usize) -> Windows<'_, T>;

    /// Every run of `N` adjacent items, as arrays ([`ArrayWindows`]). Panics if `N` is 0.
    fn par_array_windows<const N: usize>(&self) -> ArrayWindows<'_, T, N>;

    /// The pieces between the items `separator` accepts, as [`slice::split`]
    /// ([`SliceSplit`]).
    fn par_split<P>(&self, separator: P) -> SliceSplit<'_, T, P>
    where
        P: Fn(&T) -> bool + Sync + Send;

    /// The pieces ended by the items `separator` accepts, as [`slice::split_inclusive`]
    /// ([`SliceSplitInclusive`]).
    fn par_split_inclusive<P>(&self, separator: P) -> SliceSplitInclusive<'_, T, P>
    where
        P: Fn(&T) -> bool + Sync + Send;

    /// The runs of adjacent items `pred` pairs, as [`slice::chunk_by`] ([`ChunkBy`]).
    fn par_chunk_by<P>(&self, pred: P) -> ChunkBy<'_, T, P>
    where
        P: Fn(&T, &T) -> bool + Sync + Send;
}

impl<T: Sync> ParallelSlice<T> for [T] {
    fn par_chunks(&self, size: usize) -> Chunks<'_, T> {
        Chunks {
            producer: ChunksOf::new(self, size),
        }
    }
    fn par_chunks_exact(&self, size: usize) -> ChunksExact<'_, T> {
        assert!(size != 0, "chunk size must not be zero");
        ChunksExact::new(ExactFront { slice: self, size })
    }

    fn par_rchunks(&self, size: usize) -> RChunks<'_, T> {
        assert!(size != 0, "chunk size must not be zero");
        RChunks::new(FromBack {
            slice: self,
            size,
            exact: false,
        })
    }

    fn par_rchunks_exact(&self, size: usize) -> RChunksExact<'_, T> {
        assert!(size != 0, "chunk size must not be zero");
        RChunksExact::new(FromBack {
            slice: self,
            size,
            exact: true,
        })
    }

    fn par_windows(&self, size: usize) -> Windows<'_, T> {
        assert!(size != 0, "window size must not be zero");
        Windows::new(Overlapping { slice: self, size })
    }

    fn par_array_windows<const N: usize>(&self) -> ArrayWindows<'_, T, N> {
        assert!(N != 0, "window size must not be zero");
        ArrayWindows::new(ArrayOverlapping { slice: self })
    }

    fn par_split<P>(&self, separator: P) -> SliceSplit<'_, T, P>
    where
        P: Fn(&T) -> bool + Sync + Send,
    {
        SliceSplit::new(self, separator)
    }

    fn par_split_inclusive<P>(&self, separator: P) -> SliceSplitInclusive<'_, T, P>
    where
        P: Fn(&T) -> bool + Sync + Send,
    {
        SliceSplitInclusive::new(self, separator)
    }

    fn par_chunk_by<P>(&self, pred: P) -> ChunkBy<'_, T, P>
    where
        P: Fn(&T, &T) -> bool + Sync + Send,
    {
        ChunkBy::new(self, pred)
    }
}

/// Parallel operations on mutable slices (and `Vec`s and arrays, through `DerefMut`):
/// mutable chunks and the parallel sorts.
///
/// The sorts split like the iterators do (see [the module doc](crate::iter)): a slice is
/// partitioned (unstable sorts) or halved (stable sorts) only while the pool has idle
/// workers to take the halves, and each piece is sorted by the standard library's sort of
/// the same kind. A panicking comparator or key function leaves the slice in some
/// permutation of its items, as `slice::sort` does, and the panic is re-raised.
///
/// ```
/// use ember::prelude::*;
/// let mut v = vec![5, 1, 4, 2, 3];
/// v.par_sort_unstable();
/// assert_eq!(v, [1, 2, 3, 4, 5]);
/// ```
pub trait ParallelSliceMut<T: Send> {
    /// A parallel iterator over mutable chunks of `size` items (the last one may be shorter).
    ///
    /// # Panics
    /// If `size` is 0.
    ///
    /// ```
    /// use ember::prelude::*;
    /// let mut v = [1, 2, 3, 4, 5];
    /// v.par_chunks_mut(2).for_each(|c| c.reverse());
    /// assert_eq!(v, [2, 1, 4, 3, 5]);
    /// ```
    fn par_chunks_mut(&mut self, size: usize) -> ChunksMut<'_, T>;

    /// Sorts the slice, stably ([`slice::sort`] in parallel). Halves are sorted in
    /// parallel, then merged; each merge runs on one thread.
    ///
    /// ```
    /// use ember::prelude::*;
    /// let mut v = vec![3, 1, 2];
    /// v.par_sort();
    /// assert_eq!(v, [1, 2, 3]);
    /// ```
    fn par_sort(&mut self)
    where
        T: Ord;

    /// Sorts the slice stably with a comparator ([`slice::sort_by`] in parallel).
    ///
    /// ```
    /// use ember::prelude::*;
    /// let mut v = vec![1, 3, 2];
    /// v.par_sort_by(|a, b| b.cmp(a));
    /// assert_eq!(v, [3, 2, 1]);
    /// ```
    fn par_sort_by<F>(&mut self, compare: F)
    where
        F: Fn(&T, &T) -> Ordering + Sync;

    /// Sorts the slice stably by a key ([`slice::sort_by_key`] in parallel).
    ///
    /// ```
    /// use ember::prelude::*;
    /// let mut v = vec![(2, 'a'), (1, 'b'), (2, 'c')];
    /// v.par_sort_by_key(|p| p.0);
    /// assert_eq!(v, [(1, 'b'), (2, 'a'), (2, 'c')]);
    /// ```
    fn par_sort_by_key<K, F>(&mut self, key: F)
    where
        K: Ord,
        F: Fn(&T) -> K + Sync;

    /// Sorts the slice, not keeping the order of equal items ([`slice::sort_unstable`] in
    /// parallel): partitioned around a sampled median while there are idle workers, each
    /// part sorted by `sort_unstable`.
    ///
    /// ```
    /// use ember::prelude::*;
    /// let mut v: Vec<u64> = (0..10_000).rev().collect();
    /// v.par_sort_unstable();
    /// assert!(v.windows(2).all(|w| w[0] <= w[1]));
    /// ```
    fn par_sort_unstable(&mut self)
    where
        T: Ord;

    /// Sorts the slice with a comparator, not keeping the order of equal items.
    ///
    /// ```
    /// use ember::prelude::*;
    /// let mut v = vec![1.5, -0.5, 0.25];
    /// v.par_sort_unstable_by(|a: &f64, b| a.total_cmp(b));
    /// assert_eq!(v, [-0.5, 0.25, 1.5]);
    /// ```
    fn par_sort_unstable_by<F>(&mut self, compare: F)
    where
        F: Fn(&T, &T) -> Ordering + Sync;

    /// Sorts the slice by a key, not keeping the order of equal items.
    ///
    /// ```
    /// use ember::prelude::*;
    /// let mut v = vec![-3i32, 1, -2];
    /// v.par_sort_unstable_by_key(|x| x.abs());
    /// assert_eq!(v, [1, -2, -3]);
    /// ```
    fn par_sort_unstable_by_key<K, F>(&mut self, key: F)
    where
        K: Ord,
        F: Fn(&T) -> K + Sync;
}

impl<T: Send> ParallelSliceMut<T> for [T] {
    fn par_chunks_mut(&mut self, size: usize) -> ChunksMut<'_, T> {
        ChunksMut {
            producer: ChunksOf::new(self, size),
        }
    }

    fn par_sort(&mut self)
    where
        T: Ord,
    {
        sort::stable(self, &Natural);
    }

    fn par_sort_by<F>(&mut self, compare: F)
    where
        F: Fn(&T, &T) -> Ordering + Sync,
    {
        sort::stable(self, &ByCmp(compare));
    }

    fn par_sort_by_key<K, F>(&mut self, key: F)
    where
        K: Ord,
        F: Fn(&T) -> K + Sync,
    {
        sort::stable(self, &ByKey(key));
    }

    fn par_sort_unstable(&mut self)
    where
        T: Ord,
    {
        sort::unstable(self, &Natural);
    }

    fn par_sort_unstable_by<F>(&mut self, compare: F)
    where
        F: Fn(&T, &T) -> Ordering + Sync,
    {
        sort::unstable(self, &ByCmp(compare));
    }

    fn par_sort_unstable_by_key<K, F>(&mut self, key: F)
    where
        K: Ord,
        F: Fn(&T) -> K + Sync,
    {
        sort::unstable(self, &ByKey(key));
    }
}
