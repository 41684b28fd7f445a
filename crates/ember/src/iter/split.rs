//! [`split`]: a parallel iterator over pieces of data that a function splits in two.

use super::plumbing::{Producer, ProducerCallback};
use super::range::UNINDEXED_POSITIONS;
use super::traits::ParallelIterator;

/// A parallel iterator over the pieces of `data`: while the pipeline wants more pieces,
/// `splitter` cuts a piece in two (`(piece, Some(other))`) or says it cuts no further
/// (`(piece, None)`). The items are the final pieces, in the order of the cuts (`collect`
/// keeps it: first halves first).
///
/// ```
/// use ember::iter::split;
/// use ember::prelude::*;
/// // Sum a range by cutting it in halves while it is longer than 1000.
/// let total: u64 = split(0..100_000u64, |r| {
///     if r.end - r.start <= 1000 {
///         return (r, None);
///     }
///     let mid = r.start + (r.end - r.start) / 2;
///     (r.start..mid, Some(mid..r.end))
/// })
/// .map(|r| r.sum::<u64>())
/// .sum();
/// assert_eq!(total, 4_999_950_000);
/// ```
pub fn split<D, S>(data: D, splitter: S) -> Split<D, S>
where
    D: Send,
    S: Fn(D) -> (D, Option<D>) + Sync + Send,
{
    Split { data, splitter }
}

/// [`split`]: pieces of data cut by a function.
///
/// ```
/// use ember::prelude::*;
/// let pieces = ember::iter::split(vec![1, 2, 3, 4], |mut v| {
///     if v.len() < 2 {
///         return (v, None);
///     }
///     let right = v.split_off(v.len() / 2);
///     (v, Some(right))
/// });
/// assert_eq!(pieces.map(|v| v.len()).sum::<usize>(), 4);
/// ```
#[derive(Clone, Debug)]
#[must_use = "parallel iterators do nothing until consumed"]
pub struct Split<D, S> {
    data: D,
    splitter: S,
}

impl<D, S> ParallelIterator for Split<D, S>
where
    D: Send,
    S: Fn(D) -> (D, Option<D>) + Sync + Send,
{
    type Item = D;

    fn with_producer<CB: ProducerCallback<D>>(self, callback: CB) -> CB::Output {
        callback.callback(Pieces {
            data: Some(self.data),
            splitter: &self.splitter,
            positions: UNINDEXED_POSITIONS,
            whole: false,
        })
    }
}

/// A piece of data (or none), and how many more pieces it may be cut into.
struct Pieces<'s, D, S> {
    data: Option<D>,
    splitter: &'s S,
    positions: usize,
    /// The splitter said this piece cuts no further.
    whole: bool,
}

impl<D, S> Producer for Pieces<'_, D, S>
where
    D: Send,
    S: Fn(D) -> (D, Option<D>) + Sync,
{
    type Item = D;
    type IntoIter = std::option::IntoIter<D>;
    fn len(&self) -> usize {
        self.positions
    }
    fn split_at(self, index: usize) -> (Self, Self) {
        let none = Pieces {
            data: None,
            splitter: self.splitter,
            positions: 0,
            whole: true,
        };
        if index == 0 {
            return (none, self);
        }
        let data = match self.data {
            Some(data) if index < self.positions && !self.whole => data,
            data => return (Pieces { data, ..self }, none),
        };
        let (left, right) = (self.splitter)(data);
        match right {
            Some(right) => (
                Pieces {
                    data: Some(left),
                    positions: index,
                    ..self
                },
                Pieces {
                    data: Some(right),
                    positions: self.positions - index,
                    ..self
                },
            ),
            None => (
                Pieces {
                    data: Some(left),
                    positions: 1,
                    whole: true,
                    ..self
                },
                none,
            ),
        }
    }
    fn into_iter(self) -> Self::IntoIter {
        self.data.into_iter()
    }
}
