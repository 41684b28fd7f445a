//! Ranges: `(a..b).into_par_iter()` and `(a..=b).into_par_iter()` for every primitive
//! integer type, `u128` and `i128` included, and `char`.
//!
//! A range is indexed while its length fits a `usize`. A longer one (`0..u128::MAX`) still
//! runs, unindexed: its producer has 2^62 positions (on 64-bit targets), each a run of about
//! the same number of integers, so that it splits evenly; only the indexed operations
//! (`len`, `enumerate`, `zip`) refuse it, with a panic that says so.

use std::iter::Chain;
use std::ops::{Range, RangeInclusive};

use super::plumbing::{Producer, ProducerCallback};
use super::traits::{IndexedParallelIterator, IntoParallelIterator, ParallelIterator};

/// The types whose ranges are parallel iterators (sealed: ember implements it for the
/// primitive integers and `char`).
///
/// ```
/// use ember::iter::RangeInteger;
/// use ember::prelude::*;
/// fn total<T: RangeInteger>(r: std::ops::Range<T>) -> usize
/// where
///     std::ops::Range<T>: Iterator<Item = T>,
/// {
///     r.into_par_iter().count()
/// }
/// assert_eq!(total(0..10u128) + total('a'..'c'), 12);
/// ```
pub trait RangeInteger: private::Sealed + Copy + Ord + Send + Sync + 'static {}

mod private {
    /// What a range producer needs of its integers.
    pub trait Sealed: Sized {
        /// The greatest value.
        const MAX: Self;
        /// The number of values in `start..end` (`start <= end`).
        fn gap(start: Self, end: Self) -> u128;
        /// The value `n` steps after `start` (`n` at most the gap to a valid value).
        fn forward(start: Self, n: u128) -> Self;
    }
}

macro_rules! range_integer {
    ($($t:ty => $unsigned:ty),* $(,)?) => {$(
        impl private::Sealed for $t {
            const MAX: $t = <$t>::MAX;
            #[inline]
            fn gap(start: $t, end: $t) -> u128 {
                // The distance as the unsigned type: exact, even across zero.
                (end as $unsigned).wrapping_sub(start as $unsigned) as u128
            }
            #[inline]
            fn forward(start: $t, n: u128) -> $t {
                (start as $unsigned).wrapping_add(n as $unsigned) as $t
            }
        }
        impl RangeInteger for $t {}
    )*};
}

range_integer! {
    u8 => u8, u16 => u16, u32 => u32, u64 => u64, u128 => u128, usize => usize,
    i8 => u8, i16 => u16, i32 => u32, i64 => u64, i128 => u128, isize => usize,
}

/// The surrogate code points, which no `char` takes.
const SURROGATES: Range<u32> = 0xD800..0xE000;

impl private::Sealed for char {
    const MAX: char = char::MAX;
    fn gap(start: char, end: char) -> u128 {
        let skipped = if (start as u32) < SURROGATES.start && end as u32 >= SURROGATES.end {
            SURROGATES.len() as u32
        } else {
            0
        };
        u128::from(end as u32 - start as u32 - skipped)
    }
    fn forward(start: char, n: u128) -> char {
        let mut value = start as u32 + n as u32;
        if (start as u32) < SURROGATES.start && value >= SURROGATES.start {
            value += SURROGATES.len() as u32;
        }
        char::from_u32(value).expect("ember: a char range stepped past char::MAX")
    }
}
impl RangeInteger for char {}

/// The positions of a source that has no length, or one too long for a `usize`: about
/// 2^32 halvings' worth of pieces, far more than any pool splits into, and small enough
/// that adapters adding lengths (`chain`) do not overflow.
pub(super) const UNINDEXED_POSITIONS: usize = 1 << (usize::BITS / 2);

/// The positions of a range too long for a `usize`: as many as a `usize` comfortably
/// counts (a quarter of its values, so that `chain` and an inclusive range's last value
/// still add up), so that each holds as few integers as can be (about 2^28 for
/// `0..10^27`), and a search that halves its way to one position (`find_last`) walks
/// only that many.
const HUGE_RANGE_POSITIONS: usize = 1 << (usize::BITS - 2);

/// The length of a range, as a `usize` if it fits.
fn fitting(count: u128) -> Option<usize> {
    usize::try_from(count).ok()
}

/// The integers of `range` over `positions` positions (at most as many as integers): one
/// integer each while the range fits a `usize`, else [`HUGE_RANGE_POSITIONS`] runs of about
/// the same length.
#[derive(Debug)]
struct RangeProducer<T> {
    range: Range<T>,
    positions: usize,
}

impl<T: RangeInteger> RangeProducer<T> {
    fn new(range: Range<T>) -> Self {
        let count = Self::count(&range);
        let positions = fitting(count).unwrap_or(HUGE_RANGE_POSITIONS);
        RangeProducer { range, positions }
    }

    fn count(range: &Range<T>) -> u128 {
        if range.start < range.end {
            T::gap(range.start, range.end)
        } else {
            0
        }
    }
}

impl<T: RangeInteger> Producer for RangeProducer<T>
where
    Range<T>: Iterator<Item = T>,
{
    type Item = T;
    type IntoIter = Range<T>;
    #[inline]
    fn len(&self) -> usize {
        self.positions
    }
    fn split_at(self, index: usize) -> (Self, Self) {
        let count = Self::count(&self.range);
        // One integer a position while the range fits, else `count * index / positions`
        // rounded down, exactly (a split at the middle position cuts the integers in half):
        // each side keeps at least one integer a position.
        let positions = self.positions as u128;
        let cut = if count == positions {
            index as u128
        } else if index == self.positions {
            count
        } else {
            // `count % positions < positions <= 2^63`, times `index < positions`: no overflow.
            count / positions * index as u128 + count % positions * index as u128 / positions
        };
        let mid = T::forward(self.range.start, cut);
        (
            RangeProducer {
                range: self.range.start..mid,
                positions: index,
            },
            RangeProducer {
                range: mid..self.range.end,
                positions: self.positions - index,
            },
        )
    }
    fn into_iter(self) -> Range<T> {
        self.range
    }
}

/// An inclusive range that ends at its type's greatest value: `start..MAX`, then `MAX`.
#[derive(Debug)]
struct ToMax<T> {
    range: RangeProducer<T>,
    last: Option<T>,
}

impl<T: RangeInteger> Producer for ToMax<T>
where
    Range<T>: Iterator<Item = T>,
{
    type Item = T;
    type IntoIter = Chain<Range<T>, std::option::IntoIter<T>>;
    fn len(&self) -> usize {
        self.range.positions + usize::from(self.last.is_some())
    }
    fn split_at(self, index: usize) -> (Self, Self) {
        if index > self.range.positions {
            // The whole range, and the last value, go left.
            let empty = RangeProducer {
                range: T::MAX..T::MAX,
                positions: 0,
            };
            let right = ToMax {
                range: empty,
                last: None,
            };
            return (self, right);
        }
        let (left, right) = self.range.split_at(index);
        (
            ToMax {
                range: left,
                last: None,
            },
            ToMax {
                range: right,
                last: self.last,
            },
        )
    }
    fn into_iter(self) -> Self::IntoIter {
        self.range.range.chain(self.last)
    }
}

/// `(a..b).into_par_iter()`: the integers (or `char`s) of a range.
///
/// Indexed while its length fits a `usize`: [`len`](IndexedParallelIterator::len),
/// `enumerate` and `zip` panic on a longer one, which every other operation runs.
///
/// ```
/// use ember::prelude::*;
/// assert_eq!((-5..5i32).into_par_iter().sum::<i32>(), -5);
/// let huge = (0..u128::MAX).into_par_iter();
/// assert!(huge.clone().any(|x| x == 12345));
/// assert_eq!(huge.filter(|x| x % 7 == 0).map(|x| x / 7).any(|x| x == 3), true);
/// ```
#[derive(Clone, Debug)]
#[must_use = "parallel iterators do nothing until consumed"]
pub struct RangeIter<T> {
    range: Range<T>,
}

impl<T: RangeInteger> ParallelIterator for RangeIter<T>
where
    Range<T>: Iterator<Item = T>,
{
    type Item = T;

    fn with_producer<CB: ProducerCallback<T>>(self, callback: CB) -> CB::Output {
        callback.callback(RangeProducer::new(self.range))
    }

    fn opt_len(&self) -> Option<usize> {
        fitting(RangeProducer::count(&self.range))
    }
}

impl<T: RangeInteger> IndexedParallelIterator for RangeIter<T>
where
    Range<T>: Iterator<Item = T>,
{
    fn len(&self) -> usize {
        self.opt_len()
            .expect("ember: an indexed operation on a range longer than usize::MAX")
    }
}

impl<T: RangeInteger> IntoParallelIterator for Range<T>
where
    Range<T>: Iterator<Item = T>,
{
    type Iter = RangeIter<T>;
    type Item = T;
    fn into_par_iter(self) -> RangeIter<T> {
        RangeIter { range: self }
    }
}

/// `(a..=b).into_par_iter()`: the integers (or `char`s) of an inclusive range.
///
/// Indexed while its length fits a `usize`, as [`RangeIter`].
///
/// ```
/// use ember::prelude::*;
/// assert_eq!((1..=100u8).into_par_iter().map(u32::from).sum::<u32>(), 5050);
/// assert_eq!((250..=u8::MAX).into_par_iter().count(), 6);
/// assert_eq!(('a'..='e').into_par_iter().collect::<String>(), "abcde");
/// ```
#[derive(Clone, Debug)]
#[must_use = "parallel iterators do nothing until consumed"]
pub struct RangeInclusiveIter<T> {
    range: RangeInclusive<T>,
}

impl<T: RangeInteger> RangeInclusiveIter<T> {
    /// The number of items, which may not fit even a `u128` (`0..=u128::MAX`): `None` then.
    fn count(&self) -> Option<u128> {
        if self.range.is_empty() {
            Some(0)
        } else {
            T::gap(*self.range.start(), *self.range.end()).checked_add(1)
        }
    }
}

impl<T: RangeInteger> ParallelIterator for RangeInclusiveIter<T>
where
    Range<T>: Iterator<Item = T>,
{
    type Item = T;

    fn with_producer<CB: ProducerCallback<T>>(self, callback: CB) -> CB::Output {
        let (start, end) = (*self.range.start(), *self.range.end());
        if self.range.is_empty() {
            return callback.callback(RangeProducer::new(start..start));
        }
        if end < T::MAX {
            return callback.callback(RangeProducer::new(start..T::forward(end, 1)));
        }
        // `start..=MAX` cannot be written `start..MAX + 1`: the range, then the last value.
        // Unless the total fits a `usize` (indexed), the range gets unindexed positions.
        let indexed = self.opt_len().is_some();
        let mut range = RangeProducer::new(start..end);
        if !indexed {
            range.positions = range.positions.min(HUGE_RANGE_POSITIONS);
        }
        callback.callback(ToMax {
            range,
            last: Some(end),
        })
    }

    fn opt_len(&self) -> Option<usize> {
        fitting(self.count()?)
    }
}

impl<T: RangeInteger> IndexedParallelIterator for RangeInclusiveIter<T>
where
    Range<T>: Iterator<Item = T>,
{
    fn len(&self) -> usize {
        self.opt_len()
            .expect("ember: an indexed operation on a range longer than usize::MAX")
    }
}

impl<T: RangeInteger> IntoParallelIterator for RangeInclusive<T>
where
    Range<T>: Iterator<Item = T>,
{
    type Iter = RangeInclusiveIter<T>;
    type Item = T;
    fn into_par_iter(self) -> RangeInclusiveIter<T> {
        RangeInclusiveIter { range: self }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Splits `producer` at `at` (a fraction of its positions) `depth` times down the left
    /// and the right, and checks that the pieces cover the integers in order, with no more
    /// positions than integers.
    fn check_cover<P: Producer<Item = u128>>(producer: P, first: u128, last: u128) {
        fn walk<P: Producer<Item = u128>>(p: P, depth: u32, out: &mut Vec<(usize, P)>) {
            if depth == 0 || p.len() < 2 {
                let len = p.len();
                out.push((len, p));
                return;
            }
            let len = p.len();
            let (l, r) = p.split_at(len / 3 + 1);
            walk(l, depth - 1, out);
            walk(r, depth - 1, out);
        }
        let total = producer.len();
        let mut pieces = Vec::new();
        walk(producer, 6, &mut pieces);
        assert_eq!(pieces.iter().map(|(len, _)| len).sum::<usize>(), total);
        let mut next = Some(first);
        for (len, piece) in pieces {
            // The first two integers of each piece, and that a piece of positions has some.
            let mut items = piece.into_iter();
            match items.next() {
                Some(x) => {
                    assert_eq!(Some(x), next, "pieces must be contiguous");
                    assert!(len > 0 || x == last);
                }
                None => assert_eq!(len, 0),
            }
            // Skip to the piece's end without walking it: the next piece's first value.
            next = items.last().or(next).map(|x| x.wrapping_add(1));
            if next == Some(0) {
                next = None;
            }
        }
    }

    #[test]
    fn huge_ranges_split_into_contiguous_pieces() {
        // `last()` of a `Range` and of a `Chain` are O(1): no piece is walked.
        check_cover(RangeProducer::new(0..u128::MAX), 0, u128::MAX - 1);
        check_cover(
            RangeProducer::new(7..1_000_000_000_000_000_000_000_000),
            7,
            0,
        );
        let mut range = RangeProducer::new(3..u128::MAX);
        range.positions = range.positions.min(HUGE_RANGE_POSITIONS);
        check_cover(
            ToMax {
                range,
                last: Some(u128::MAX),
            },
            3,
            u128::MAX,
        );
        check_cover(RangeProducer::new(10..20), 10, 19);
    }
}
