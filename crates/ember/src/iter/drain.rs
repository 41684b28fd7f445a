//! `par_drain`: [`ParallelDrainRange`] (a range of a `Vec` or `VecDeque`) and
//! [`ParallelDrainFull`] (every item of a map, set or heap).
//!
//! A `Vec`'s drained items are lent in place, as `Vec::into_par_iter` lends them: the
//! vector keeps its head, the items of the range belong to the producer, and once the
//! pipeline is over (finished, or unwinding from a panic) the tail is moved down behind
//! the head, as [`Vec::drain`] leaves it. The other collections move the drained items into
//! a `Vec` first.

use std::collections::VecDeque;
use std::marker::PhantomData;
use std::ops::{Bound, Range, RangeBounds};
use std::ptr;

use super::plumbing::ProducerCallback;
use super::traits::{IndexedParallelIterator, ParallelIterator};
use super::vec::{DrainProducer, VecIntoIter};

/// `par_drain(range)`: removes a range of items and yields them by value, as the
/// sequential `drain(range)` does. Items the pipeline does not reach (after a panic, or an
/// `any` that stopped early) are dropped; the collection is left as the sequential drain
/// leaves it.
///
/// ```
/// use ember::prelude::*;
/// let mut v: Vec<u32> = (0..10).collect();
/// let drained: Vec<u32> = v.par_drain(2..5).collect();
/// assert_eq!(drained, [2, 3, 4]);
/// assert_eq!(v, [0, 1, 5, 6, 7, 8, 9]);
/// ```
pub trait ParallelDrainRange<Idx = usize> {
    /// The parallel iterator.
    type Iter: ParallelIterator<Item = Self::Item>;
    /// Its items.
    type Item: Send;

    /// Removes `range` from the collection and yields its items.
    ///
    /// # Panics
    /// If the range starts after it ends, or ends after the collection, as `drain` does.
    ///
    /// ```
    /// use ember::prelude::*;
    /// use std::collections::VecDeque;
    /// let mut d: VecDeque<i32> = (0..6).collect();
    /// assert_eq!(d.par_drain(..2).sum::<i32>(), 1);
    /// assert_eq!(d, [2, 3, 4, 5]);
    /// ```
    fn par_drain<R: RangeBounds<Idx>>(self, range: R) -> Self::Iter;
}

/// `par_drain()`: removes every item of a collection and yields them by value; the
/// collection is left empty (with its capacity).
///
/// ```
/// use ember::prelude::*;
/// use std::collections::HashMap;
/// let mut m: HashMap<u32, u32> = (0..100).map(|i| (i, i * 2)).collect();
/// let total: u32 = m.par_drain().map(|(_, v)| v).sum();
/// assert_eq!(total, 9900);
/// assert!(m.is_empty());
/// ```
pub trait ParallelDrainFull {
    /// The parallel iterator.
    type Iter: ParallelIterator<Item = Self::Item>;
    /// Its items.
    type Item: Send;

    /// Removes every item of the collection and yields them.
    ///
    /// ```
    /// use ember::prelude::*;
    /// use std::collections::HashSet;
    /// let mut s: HashSet<u8> = (1..=4).collect();
    /// assert_eq!(s.par_drain().map(u32::from).sum::<u32>(), 10);
    /// assert!(s.is_empty());
    /// ```
    fn par_drain(self) -> Self::Iter;
}

/// The positions `range` names in a collection of `len` items, checked as `drain` checks.
fn bounds<R: RangeBounds<usize>>(range: R, len: usize) -> Range<usize> {
    let start = match range.start_bound() {
        Bound::Included(&s) => s,
        Bound::Excluded(&s) => s.checked_add(1).expect("drain range start overflows usize"),
        Bound::Unbounded => 0,
    };
    let end = match range.end_bound() {
        Bound::Included(&e) => e.checked_add(1).expect("drain range end overflows usize"),
        Bound::Excluded(&e) => e,
        Bound::Unbounded => len,
    };
    assert!(
        start <= end,
        "drain range starts at {start} but ends at {end}"
    );
    assert!(
        end <= len,
        "drain range end {end} is out of range for length {len}"
    );
    start..end
}

/// [`ParallelDrainRange::par_drain`] of a `Vec`: the items of a range, by value.
///
/// Dropped without being consumed, it drains its range sequentially. Forgotten
/// (`mem::forget`), it leaves the vector as it was before the drain.
///
/// ```
/// use ember::prelude::*;
/// let mut v = vec!["a".to_string(), "b".into(), "c".into()];
/// let upper: Vec<String> = v.par_drain(1..).map(|s| s.to_uppercase()).collect();
/// assert_eq!((upper, v), (vec!["B".to_string(), "C".into()], vec!["a".to_string()]));
/// ```
#[derive(Debug)]
#[must_use = "parallel iterators do nothing until consumed"]
pub struct VecDrain<'a, T: Send> {
    vec: &'a mut Vec<T>,
    range: Range<usize>,
    /// The vector's length when the drain was made: the tail is `range.end..len`.
    len: usize,
    /// The items of `range` were lent to a producer: the tail is to move down on drop.
    lent: bool,
}

impl<'a, T: Send> ParallelDrainRange<usize> for &'a mut Vec<T> {
    type Iter = VecDrain<'a, T>;
    type Item = T;
    fn par_drain<R: RangeBounds<usize>>(self, range: R) -> VecDrain<'a, T> {
        let len = self.len();
        let range = bounds(range, len);
        VecDrain {
            vec: self,
            range,
            len,
            lent: false,
        }
    }
}

impl<T: Send> ParallelIterator for VecDrain<'_, T> {
    type Item = T;

    fn with_producer<CB: ProducerCallback<T>>(mut self, callback: CB) -> CB::Output {
        let Range { start, end } = self.range;
        // SAFETY: `end <= len` (checked by `bounds`). From here the vector counts only its
        // head; the items of `start..end` belong to the producer, the tail `end..` to
        // `self`, whose drop moves it down once every piece of the producer is gone (after
        // the callback returns, or unwinds: `join` waits for both halves).
        unsafe { self.vec.set_len(start) };
        self.lent = true;
        // SAFETY: those items are initialised, inside the buffer, and nobody else reads or
        // drops them (see above); the slice ends before the tail.
        let items = unsafe {
            std::slice::from_raw_parts_mut(self.vec.as_mut_ptr().add(start), end - start)
        };
        // SAFETY: as above: the producer owns these items.
        callback.callback(unsafe { DrainProducer::new(items) })
    }

    fn opt_len(&self) -> Option<usize> {
        Some(self.range.len())
    }
}

impl<T: Send> IndexedParallelIterator for VecDrain<'_, T> {
    fn len(&self) -> usize {
        self.range.len()
    }
}

impl<T: Send> Drop for VecDrain<'_, T> {
    fn drop(&mut self) {
        if !self.lent {
            // Never consumed: drain the range the ordinary way.
            self.vec.drain(self.range.clone());
            return;
        }
        let Range { start, end } = self.range;
        // `set_len(start)` was made; the tail `end..` is still in place, and unowned.
        let tail = self.len - end;
        // SAFETY: the producer consumed, dropped or leaked (a callback may forget it) every
        // item of `start..end`, and nobody reads those slots again, so they are free; the tail's `tail` items move down onto them (the regions may
        // overlap, hence `copy`) and the vector counts them again.
        unsafe {
            let base = self.vec.as_mut_ptr();
            ptr::copy(base.add(end), base.add(start), tail);
            self.vec.set_len(start + tail);
        }
    }
}

/// [`ParallelDrainRange::par_drain`] of a `VecDeque`, and [`ParallelDrainFull::par_drain`]
/// of a map, set or heap: the drained items, moved into a `Vec` when the drain is made.
///
/// ```
/// use ember::prelude::*;
/// use std::collections::BinaryHeap;
/// let mut heap: BinaryHeap<u32> = (1..=10).collect();
/// assert_eq!(heap.par_drain().max(), Some(10));
/// assert!(heap.is_empty());
/// ```
#[derive(Debug)]
#[must_use = "parallel iterators do nothing until consumed"]
pub struct Drained<'a, T> {
    items: VecIntoIter<T>,
    from: PhantomData<&'a mut T>,
}

impl<T> Drained<'_, T> {
    pub(super) fn new(items: Vec<T>) -> Self {
        Drained {
            items: VecIntoIter { vec: items },
            from: PhantomData,
        }
    }
}

impl<T: Send> ParallelIterator for Drained<'_, T> {
    type Item = T;
    fn with_producer<CB: ProducerCallback<T>>(self, callback: CB) -> CB::Output {
        self.items.with_producer(callback)
    }
    fn opt_len(&self) -> Option<usize> {
        self.items.opt_len()
    }
}

impl<T: Send> IndexedParallelIterator for Drained<'_, T> {
    fn len(&self) -> usize {
        self.items.len()
    }
}

/// `string.par_drain(range)`: the chars of a byte range of a `String` (which must lie on
/// char boundaries, as for [`String::drain`]).
///
/// ```
/// use ember::prelude::*;
/// let mut s = String::from("héllo");
/// let upper: String = s.par_drain(..3).map(|c| c.to_ascii_uppercase()).collect();
/// assert_eq!((upper.as_str(), s.as_str()), ("Hé", "llo"));
/// ```
impl<'a> ParallelDrainRange<usize> for &'a mut String {
    type Iter = Drained<'a, char>;
    type Item = char;
    fn par_drain<R: RangeBounds<usize>>(self, range: R) -> Drained<'a, char> {
        let range = bounds(range, self.len());
        Drained::new(self.drain(range).collect())
    }
}

impl<'a, T: Send> ParallelDrainRange<usize> for &'a mut VecDeque<T> {
    type Iter = Drained<'a, T>;
    type Item = T;
    fn par_drain<R: RangeBounds<usize>>(self, range: R) -> Drained<'a, T> {
        let range = bounds(range, self.len());
        Drained::new(self.drain(range).collect())
    }
}
