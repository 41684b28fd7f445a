//! Integer ranges: `(a..b).into_par_iter()` for every primitive integer type up to 64 bits
//! and `usize`/`isize`.

use std::ops::Range;

use super::plumbing::Producer;
use super::traits::IntoParallelIterator;

indexed_source! {
    /// `(a..b).into_par_iter()`: the integers of a range.
    ///
    /// ```
    /// use ember::prelude::*;
    /// assert_eq!((-5..5i32).into_par_iter().sum::<i32>(), -5);
    /// ```
    RangeIter<T> where [Range<T>: Producer<Item = T>, T: Send] { producer: Range<T> } => T
}

macro_rules! range_producer {
    ($($t:ty => $unsigned:ty),* $(,)?) => {$(
        impl Producer for Range<$t> {
            type Item = $t;
            type IntoIter = Range<$t>;
            #[inline]
            fn len(&self) -> usize {
                if self.start >= self.end {
                    return 0;
                }
                // The distance as the unsigned type: exact, even across zero.
                let distance = (self.end as $unsigned).wrapping_sub(self.start as $unsigned);
                usize::try_from(distance).expect("ember: a parallel range longer than usize::MAX")
            }
            fn split_at(self, index: usize) -> (Self, Self) {
                let mid = (self.start as $unsigned).wrapping_add(index as $unsigned) as $t;
                (self.start..mid, mid..self.end)
            }
            fn into_iter(self) -> Range<$t> {
                self
            }
        }

        impl IntoParallelIterator for Range<$t> {
            type Iter = RangeIter<$t>;
            type Item = $t;
            fn into_par_iter(self) -> RangeIter<$t> {
                RangeIter { producer: self }
            }
        }
    )*};
}

range_producer! {
    u8 => u8, u16 => u16, u32 => u32, u64 => u64, usize => usize,
    i8 => u8, i16 => u16, i32 => u32, i64 => u64, isize => usize,
}
