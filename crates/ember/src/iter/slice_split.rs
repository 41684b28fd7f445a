//! The views of a slice cut where its items say: [`ParallelSlice::par_split`],
//! [`par_split_inclusive`](ParallelSlice::par_split_inclusive) and
//! [`par_chunk_by`](ParallelSlice::par_chunk_by). The positions are the slice's items; a
//! piece of positions yields the pieces of the slice whose cut lies in it (looking back
//! past its start for where the first one begins), and the piece that ends the slice also
//! yields what follows the last cut. Unindexed: how many pieces there are is only known
//! once every item has been looked at.
//!
//! [`ParallelSlice::par_split`]: super::ParallelSlice::par_split

use std::ops::Range;

use super::plumbing::{Producer, ProducerCallback};
use super::traits::ParallelIterator;

/// Where a slice is cut.
pub(super) trait Cut<T>: Sync {
    /// If the slice is cut at item `at`: where the piece before ends, and where the next
    /// one starts.
    fn cut(&self, slice: &[T], at: usize) -> Option<(usize, usize)>;
    /// Whether an empty last piece (after a cut at the very end, or of an empty slice) is
    /// left out.
    const SKIP_EMPTY_LAST: bool;
}

/// `par_split`: the items the predicate accepts separate the pieces, and are left out.
pub(super) struct Separator<P>(pub(super) P);

impl<T, P: Fn(&T) -> bool + Sync> Cut<T> for Separator<P> {
    #[inline]
    fn cut(&self, slice: &[T], at: usize) -> Option<(usize, usize)> {
        (self.0)(&slice[at]).then_some((at, at + 1))
    }
    const SKIP_EMPTY_LAST: bool = false;
}

/// `par_split_inclusive`: the items the predicate accepts end their pieces.
pub(super) struct Terminator<P>(pub(super) P);

impl<T, P: Fn(&T) -> bool + Sync> Cut<T> for Terminator<P> {
    #[inline]
    fn cut(&self, slice: &[T], at: usize) -> Option<(usize, usize)> {
        (self.0)(&slice[at]).then_some((at + 1, at + 1))
    }
    const SKIP_EMPTY_LAST: bool = true;
}

/// `par_chunk_by`: a piece ends after an item the predicate does not pair with the next.
pub(super) struct Runs<P>(pub(super) P);

impl<T, P: Fn(&T, &T) -> bool + Sync> Cut<T> for Runs<P> {
    #[inline]
    fn cut(&self, slice: &[T], at: usize) -> Option<(usize, usize)> {
        let next = slice.get(at + 1)?;
        (!(self.0)(&slice[at], next)).then_some((at + 1, at + 1))
    }
    const SKIP_EMPTY_LAST: bool = true;
}

/// The positions `range` of `slice`, cut by `cut`.
struct CutProducer<'a, 'c, T, C> {
    slice: &'a [T],
    range: Range<usize>,
    /// Whether this is the rightmost piece, which yields what follows the last cut.
    last: bool,
    cut: &'c C,
}

impl<'a, 'c, T: Sync, C: Cut<T>> Producer for CutProducer<'a, 'c, T, C> {
    type Item = &'a [T];
    type IntoIter = Pieces<'a, 'c, T, C>;
    fn len(&self) -> usize {
        self.range.len()
    }
    fn split_at(self, index: usize) -> (Self, Self) {
        let mid = self.range.start + index;
        (
            CutProducer {
                range: self.range.start..mid,
                last: false,
                ..self
            },
            CutProducer {
                range: mid..self.range.end,
                ..self
            },
        )
    }
    fn into_iter(self) -> Pieces<'a, 'c, T, C> {
        Pieces {
            slice: self.slice,
            at: self.range.start,
            end: self.range.end,
            start: None,
            last_done: !self.last,
            cut: self.cut,
        }
    }
}

/// The pieces of the slice whose cut lies in `at..end`.
pub(super) struct Pieces<'a, 'c, T, C> {
    slice: &'a [T],
    at: usize,
    end: usize,
    /// Where the current piece starts, once known.
    start: Option<usize>,
    /// Whether the piece after the last cut is yielded (or not this leaf's to yield).
    last_done: bool,
    cut: &'c C,
}

impl<T, C: Cut<T>> Pieces<'_, '_, T, C> {
    /// Where the piece holding position `at` starts: just after the cut before it.
    fn start_before(&self, at: usize) -> usize {
        (0..at)
            .rev()
            .find_map(|i| self.cut.cut(self.slice, i).map(|(_, next)| next))
            .unwrap_or(0)
    }
}

impl<'a, T, C: Cut<T>> Iterator for Pieces<'a, '_, T, C> {
    type Item = &'a [T];
    fn next(&mut self) -> Option<&'a [T]> {
        while self.at < self.end {
            let at = self.at;
            self.at += 1;
            if let Some((end, next)) = self.cut.cut(self.slice, at) {
                let start = match self.start {
                    Some(start) => start,
                    None => self.start_before(at),
                };
                self.start = Some(next);
                return Some(&self.slice[start..end]);
            }
        }
        if self.last_done {
            return None;
        }
        self.last_done = true;
        let start = match self.start {
            Some(start) => start,
            None => self.start_before(self.end),
        };
        let len = self.slice.len();
        (!(C::SKIP_EMPTY_LAST && start >= len)).then(|| &self.slice[start.min(len)..])
    }
}

/// Defines one cut's public iterator.
macro_rules! cut_source {
    ($(#[$doc:meta])* $name:ident = $cut:ident) => {
        $(#[$doc])*
        #[must_use = "parallel iterators do nothing until consumed"]
        pub struct $name<'a, T, P> {
            slice: &'a [T],
            cut: $cut<P>,
        }

        impl<'a, T, P> $name<'a, T, P> {
            pub(super) fn new(slice: &'a [T], predicate: P) -> Self {
                $name { slice, cut: $cut(predicate) }
            }
        }

        impl<T, P: Clone> Clone for $name<'_, T, P> {
            fn clone(&self) -> Self {
                $name { slice: self.slice, cut: $cut(self.cut.0.clone()) }
            }
        }

        impl<T: std::fmt::Debug, P> std::fmt::Debug for $name<'_, T, P> {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.debug_struct(stringify!($name)).field("slice", &self.slice).finish()
            }
        }

        impl<'a, T: Sync, P: Send> ParallelIterator for $name<'a, T, P>
        where
            $cut<P>: Cut<T>,
        {
            type Item = &'a [T];
            fn with_producer<CB: ProducerCallback<&'a [T]>>(self, callback: CB) -> CB::Output {
                callback.callback(CutProducer {
                    slice: self.slice,
                    range: 0..self.slice.len(),
                    last: true,
                    cut: &self.cut,
                })
            }
        }
    };
}

cut_source! {
    /// [`ParallelSlice::par_split`](super::ParallelSlice::par_split): the pieces between
    /// the items a predicate accepts.
    ///
    /// ```
    /// use ember::prelude::*;
    /// let v: Vec<&[u8]> = [1, 0, 2, 3, 0].par_split(|x| *x == 0).collect();
    /// assert_eq!(v, [&[1][..], &[2, 3], &[]]);
    /// ```
    SliceSplit = Separator
}

cut_source! {
    /// [`ParallelSlice::par_split_inclusive`](super::ParallelSlice::par_split_inclusive):
    /// the pieces ended by the items a predicate accepts (which they hold).
    ///
    /// ```
    /// use ember::prelude::*;
    /// let v: Vec<&[u8]> = [1, 0, 2, 3, 0].par_split_inclusive(|x| *x == 0).collect();
    /// assert_eq!(v, [&[1, 0][..], &[2, 3, 0]]);
    /// ```
    SliceSplitInclusive = Terminator
}

cut_source! {
    /// [`ParallelSlice::par_chunk_by`](super::ParallelSlice::par_chunk_by): the runs of
    /// adjacent items a predicate pairs.
    ///
    /// ```
    /// use ember::prelude::*;
    /// let v: Vec<&[u8]> = [1, 1, 2, 3, 3].par_chunk_by(|a, b| a == b).collect();
    /// assert_eq!(v, [&[1, 1][..], &[2], &[3, 3]]);
    /// ```
    ChunkBy = Runs
}
