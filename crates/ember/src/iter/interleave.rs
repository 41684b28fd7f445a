//! [`Interleave`] and [`InterleaveShortest`]: the items of two indexed pipelines, taken in
//! turn. A piece knows how many items each side holds and which side goes first, so it
//! splits at any position.

use super::plumbing::{Producer, ProducerCallback};
use super::traits::{IndexedParallelIterator, ParallelIterator};

/// Positions `a.len() + b.len()`: alternately from `a` and `b` (from `b` first if
/// `b_first`), while both have items, then from the one left.
struct Alternate<PA, PB> {
    a: PA,
    b: PB,
    b_first: bool,
}

impl<PA: Producer, PB: Producer<Item = PA::Item>> Producer for Alternate<PA, PB> {
    type Item = PA::Item;
    type IntoIter = AlternateIter<PA::IntoIter, PB::IntoIter>;
    fn len(&self) -> usize {
        self.a.len() + self.b.len()
    }
    fn split_at(self, index: usize) -> (Self, Self) {
        let (na, nb) = (self.a.len(), self.b.len());
        // How many of the first `index` positions the side going first holds.
        let (first, second) = if self.b_first { (nb, na) } else { (na, nb) };
        let paired = first.min(second);
        let from_first = if index <= 2 * paired {
            index.div_ceil(2)
        } else if first > second {
            index - second
        } else {
            first
        };
        let (from_a, from_b) = if self.b_first {
            (index - from_first, from_first)
        } else {
            (from_first, index - from_first)
        };
        let (a_left, a_right) = self.a.split_at(from_a);
        let (b_left, b_right) = self.b.split_at(from_b);
        (
            Alternate {
                a: a_left,
                b: b_left,
                b_first: self.b_first,
            },
            Alternate {
                a: a_right,
                b: b_right,
                b_first: self.b_first ^ (index % 2 == 1),
            },
        )
    }
    fn into_iter(self) -> Self::IntoIter {
        AlternateIter {
            a: self.a.into_iter(),
            b: self.b.into_iter(),
            b_next: self.b_first,
        }
    }
    fn min_len(&self) -> usize {
        self.a.min_len().max(self.b.min_len())
    }
    fn max_len(&self) -> usize {
        self.a.max_len().min(self.b.max_len())
    }
}

/// A leaf of [`Alternate`].
struct AlternateIter<A, B> {
    a: A,
    b: B,
    b_next: bool,
}

impl<T, A: Iterator<Item = T>, B: Iterator<Item = T>> Iterator for AlternateIter<A, B> {
    type Item = T;
    #[inline]
    fn next(&mut self) -> Option<T> {
        if self.b_next {
            match self.b.next() {
                Some(item) => {
                    self.b_next = false;
                    Some(item)
                }
                None => self.a.next(),
            }
        } else {
            match self.a.next() {
                Some(item) => {
                    self.b_next = true;
                    Some(item)
                }
                None => self.b.next(),
            }
        }
    }
}

/// Receives `a`'s producer, then `b`'s.
struct First<CB, B> {
    callback: CB,
    b: B,
}

impl<T, CB, B> ProducerCallback<T> for First<CB, B>
where
    CB: ProducerCallback<T>,
    B: IndexedParallelIterator<Item = T>,
{
    type Output = CB::Output;
    fn callback<PA: Producer<Item = T>>(self, a: PA) -> CB::Output {
        self.b.with_producer(Second {
            callback: self.callback,
            a,
        })
    }
}

struct Second<CB, PA> {
    callback: CB,
    a: PA,
}

impl<T, CB: ProducerCallback<T>, PA: Producer<Item = T>> ProducerCallback<T> for Second<CB, PA> {
    type Output = CB::Output;
    fn callback<PB: Producer<Item = T>>(self, b: PB) -> CB::Output {
        self.callback.callback(Alternate {
            a: self.a,
            b,
            b_first: false,
        })
    }
}

/// [`IndexedParallelIterator::interleave`]: the items of both, alternately, then the rest of
/// the longer one.
///
/// ```
/// use ember::prelude::*;
/// let v: Vec<u32> = (0..3u32).into_par_iter().interleave(10..15u32).collect();
/// assert_eq!(v, [0, 10, 1, 11, 2, 12, 13, 14]);
/// ```
#[derive(Clone, Debug)]
#[must_use = "parallel iterators do nothing until consumed"]
pub struct Interleave<A, B> {
    a: A,
    b: B,
}

impl<A, B> Interleave<A, B> {
    pub(super) fn new(a: A, b: B) -> Self {
        Interleave { a, b }
    }
}

impl<A, B> ParallelIterator for Interleave<A, B>
where
    A: IndexedParallelIterator,
    B: IndexedParallelIterator<Item = A::Item>,
{
    type Item = A::Item;
    fn with_producer<CB: ProducerCallback<A::Item>>(self, callback: CB) -> CB::Output {
        self.a.with_producer(First {
            callback,
            b: self.b,
        })
    }
    fn opt_len(&self) -> Option<usize> {
        Some(self.len())
    }
}

impl<A, B> IndexedParallelIterator for Interleave<A, B>
where
    A: IndexedParallelIterator,
    B: IndexedParallelIterator<Item = A::Item>,
{
    fn len(&self) -> usize {
        self.a
            .len()
            .checked_add(self.b.len())
            .expect("ember: interleave length overflows")
    }
}

/// [`IndexedParallelIterator::interleave_shortest`]: the items of both, alternately, from
/// the first, until the side whose turn it is has none left.
///
/// ```
/// use ember::prelude::*;
/// let v: Vec<u32> = (0..3u32).into_par_iter().interleave_shortest(10..15u32).collect();
/// assert_eq!(v, [0, 10, 1, 11, 2, 12]);
/// let w: Vec<u32> = (0..5u32).into_par_iter().interleave_shortest(10..12u32).collect();
/// assert_eq!(w, [0, 10, 1, 11, 2]);
/// ```
#[derive(Clone, Debug)]
#[must_use = "parallel iterators do nothing until consumed"]
pub struct InterleaveShortest<A, B> {
    inner: Interleave<super::take_skip::Take<A>, super::take_skip::Take<B>>,
}

impl<A, B> InterleaveShortest<A, B>
where
    A: IndexedParallelIterator,
    B: IndexedParallelIterator<Item = A::Item>,
{
    pub(super) fn new(a: A, b: B) -> Self {
        let (na, nb) = (a.len(), b.len());
        let (ta, tb) = if na <= nb { (na, na) } else { (nb + 1, nb) };
        InterleaveShortest {
            inner: Interleave::new(a.take(ta), b.take(tb)),
        }
    }
}

impl<A, B> ParallelIterator for InterleaveShortest<A, B>
where
    A: IndexedParallelIterator,
    B: IndexedParallelIterator<Item = A::Item>,
{
    type Item = A::Item;
    fn with_producer<CB: ProducerCallback<A::Item>>(self, callback: CB) -> CB::Output {
        self.inner.with_producer(callback)
    }
    fn opt_len(&self) -> Option<usize> {
        Some(self.inner.len())
    }
}

impl<A, B> IndexedParallelIterator for InterleaveShortest<A, B>
where
    A: IndexedParallelIterator,
    B: IndexedParallelIterator<Item = A::Item>,
{
    fn len(&self) -> usize {
        self.inner.len()
    }
}
