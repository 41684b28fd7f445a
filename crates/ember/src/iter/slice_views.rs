//! The views of a slice that [`ParallelSlice`](super::ParallelSlice) makes by position:
//! [`ChunksExact`], [`RChunks`], [`RChunksExact`], [`Windows`], [`ArrayWindows`]. Each is a
//! function from a position to a sub-slice, over a range of positions that splits anywhere
//! ([`ViewProducer`]); every one is indexed.

use std::ops::Range;

use super::plumbing::{Producer, ProducerCallback};
use super::traits::{IndexedParallelIterator, ParallelIterator};

/// How a view cuts its slice: the number of views, and the one at a position.
pub(super) trait View: Copy + Send {
    /// The views' type.
    type Item;
    /// How many views there are.
    fn count(&self) -> usize;
    /// The view at `index < count()`.
    fn get(&self, index: usize) -> Self::Item;
}

/// A range of a view's positions: splits anywhere, iterates from both ends.
#[derive(Clone, Debug)]
pub(super) struct ViewProducer<V> {
    view: V,
    range: Range<usize>,
}

impl<V: View> Producer for ViewProducer<V> {
    type Item = V::Item;
    type IntoIter = ViewIter<V>;
    fn len(&self) -> usize {
        self.range.len()
    }
    fn split_at(self, index: usize) -> (Self, Self) {
        let mid = self.range.start + index;
        (
            ViewProducer {
                view: self.view,
                range: self.range.start..mid,
            },
            ViewProducer {
                view: self.view,
                range: mid..self.range.end,
            },
        )
    }
    fn into_iter(self) -> ViewIter<V> {
        ViewIter {
            view: self.view,
            range: self.range,
        }
    }
}

/// The views of a range of positions, in order.
pub(super) struct ViewIter<V> {
    view: V,
    range: Range<usize>,
}

impl<V: View> Iterator for ViewIter<V> {
    type Item = V::Item;
    #[inline]
    fn next(&mut self) -> Option<V::Item> {
        self.range.next().map(|i| self.view.get(i))
    }
    fn size_hint(&self) -> (usize, Option<usize>) {
        self.range.size_hint()
    }
}

impl<V: View> DoubleEndedIterator for ViewIter<V> {
    fn next_back(&mut self) -> Option<V::Item> {
        self.range.next_back().map(|i| self.view.get(i))
    }
}

impl<V: View> ExactSizeIterator for ViewIter<V> {}

/// Defines a view's public iterator, over a [`ViewProducer`].
macro_rules! view_source {
    ($(#[$doc:meta])* $name:ident<$($c:ident)?> = $view:ident => $item:ty) => {
        $(#[$doc])*
        #[derive(Debug)]
        #[must_use = "parallel iterators do nothing until consumed"]
        pub struct $name<'a, T $(, const $c: usize)?> {
            producer: ViewProducer<$view<'a, T $(, $c)?>>,
        }

        impl<'a, T: Sync $(, const $c: usize)?> $name<'a, T $(, $c)?> {
            pub(super) fn new(view: $view<'a, T $(, $c)?>) -> Self {
                let range = 0..view.count();
                $name { producer: ViewProducer { view, range } }
            }
        }

        impl<T $(, const $c: usize)?> Clone for $name<'_, T $(, $c)?> {
            fn clone(&self) -> Self {
                $name { producer: ViewProducer { view: self.producer.view, range: self.producer.range.clone() } }
            }
        }

        impl<'a, T: Sync + 'a $(, const $c: usize)?> ParallelIterator for $name<'a, T $(, $c)?> {
            type Item = $item;
            fn with_producer<CB: ProducerCallback<$item>>(self, callback: CB) -> CB::Output {
                callback.callback(self.producer)
            }
            fn opt_len(&self) -> Option<usize> {
                Some(self.producer.len())
            }
        }

        impl<'a, T: Sync + 'a $(, const $c: usize)?> IndexedParallelIterator
            for $name<'a, T $(, $c)?>
        {
            fn len(&self) -> usize {
                self.producer.len()
            }
        }
    };
}

/// Chunks of exactly `size` items, from the front (the remainder left out).
#[derive(Debug)]
pub(super) struct ExactFront<'a, T> {
    pub(super) slice: &'a [T],
    pub(super) size: usize,
}

/// Chunks of `size` items from the back (the last one, at the front, shorter), or of
/// exactly `size` (the remainder, at the front, left out).
#[derive(Debug)]
pub(super) struct FromBack<'a, T> {
    pub(super) slice: &'a [T],
    pub(super) size: usize,
    pub(super) exact: bool,
}

/// Overlapping windows of `size` items.
#[derive(Debug)]
pub(super) struct Overlapping<'a, T> {
    pub(super) slice: &'a [T],
    pub(super) size: usize,
}

/// Overlapping windows of `N` items, as arrays.
#[derive(Debug)]
pub(super) struct ArrayOverlapping<'a, T, const N: usize> {
    pub(super) slice: &'a [T],
}

macro_rules! copy_view {
    ($($name:ident $(<$c:ident>)?),*) => {$(
        impl<T $(, const $c: usize)?> Clone for $name<'_, T $(, $c)?> {
            fn clone(&self) -> Self {
                *self
            }
        }
        impl<T $(, const $c: usize)?> Copy for $name<'_, T $(, $c)?> {}
    )*};
}
copy_view!(ExactFront, FromBack, Overlapping, ArrayOverlapping<N>);

impl<'a, T: Sync> View for ExactFront<'a, T> {
    type Item = &'a [T];
    fn count(&self) -> usize {
        self.slice.len() / self.size
    }
    #[inline]
    fn get(&self, index: usize) -> &'a [T] {
        &self.slice[index * self.size..(index + 1) * self.size]
    }
}

impl<'a, T: Sync> View for FromBack<'a, T> {
    type Item = &'a [T];
    fn count(&self) -> usize {
        if self.exact {
            self.slice.len() / self.size
        } else {
            self.slice.len().div_ceil(self.size)
        }
    }
    #[inline]
    fn get(&self, index: usize) -> &'a [T] {
        let end = self.slice.len() - index * self.size;
        &self.slice[end.saturating_sub(self.size)..end]
    }
}

impl<'a, T: Sync> View for Overlapping<'a, T> {
    type Item = &'a [T];
    fn count(&self) -> usize {
        (self.slice.len() + 1).saturating_sub(self.size)
    }
    #[inline]
    fn get(&self, index: usize) -> &'a [T] {
        &self.slice[index..index + self.size]
    }
}

impl<'a, T: Sync, const N: usize> View for ArrayOverlapping<'a, T, N> {
    type Item = &'a [T; N];
    fn count(&self) -> usize {
        (self.slice.len() + 1).saturating_sub(N)
    }
    #[inline]
    fn get(&self, index: usize) -> &'a [T; N] {
        self.slice[index..index + N]
            .try_into()
            .expect("a window of N items")
    }
}

view_source! {
    /// [`ParallelSlice::par_chunks_exact`](super::ParallelSlice::par_chunks_exact): chunks of
    /// exactly `size` items; the remainder is left out.
    ///
    /// ```
    /// use ember::prelude::*;
    /// let v: Vec<&[u8]> = [1, 2, 3, 4, 5].par_chunks_exact(2).collect();
    /// assert_eq!(v, [&[1, 2][..], &[3, 4]]);
    /// ```
    ChunksExact<> = ExactFront => &'a [T]
}

view_source! {
    /// [`ParallelSlice::par_rchunks`](super::ParallelSlice::par_rchunks): chunks of `size`
    /// items from the back; the last one (the slice's front) may be shorter.
    ///
    /// ```
    /// use ember::prelude::*;
    /// let v: Vec<&[u8]> = [1, 2, 3, 4, 5].par_rchunks(2).collect();
    /// assert_eq!(v, [&[4, 5][..], &[2, 3], &[1]]);
    /// ```
    RChunks<> = FromBack => &'a [T]
}

view_source! {
    /// [`ParallelSlice::par_rchunks_exact`](super::ParallelSlice::par_rchunks_exact): chunks
    /// of exactly `size` items from the back; the remainder (at the front) is left out.
    ///
    /// ```
    /// use ember::prelude::*;
    /// let v: Vec<&[u8]> = [1, 2, 3, 4, 5].par_rchunks_exact(2).collect();
    /// assert_eq!(v, [&[4, 5][..], &[2, 3]]);
    /// ```
    RChunksExact<> = FromBack => &'a [T]
}

view_source! {
    /// [`ParallelSlice::par_windows`](super::ParallelSlice::par_windows): every run of
    /// `size` adjacent items.
    ///
    /// ```
    /// use ember::prelude::*;
    /// let v: Vec<&[u8]> = [1, 2, 3].par_windows(2).collect();
    /// assert_eq!(v, [&[1, 2][..], &[2, 3]]);
    /// ```
    Windows<> = Overlapping => &'a [T]
}

view_source! {
    /// [`ParallelSlice::par_array_windows`](super::ParallelSlice::par_array_windows): every
    /// run of `N` adjacent items, as an array.
    ///
    /// ```
    /// use ember::prelude::*;
    /// let v: Vec<&[u8; 2]> = [1, 2, 3].par_array_windows::<2>().collect();
    /// assert_eq!(v, [&[1, 2], &[2, 3]]);
    /// ```
    ArrayWindows<N> = ArrayOverlapping => &'a [T; N]
}
