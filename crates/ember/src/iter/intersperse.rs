//! [`Intersperse`]: a clone of one item between every two items of an indexed pipeline.
//! Position `2i` is the base's item `i`, position `2i + 1` a separator; a piece knows which
//! positions of the whole it covers.

use super::plumbing::{Producer, ProducerCallback};
use super::traits::{IndexedParallelIterator, ParallelIterator};

/// The positions `start..end` of the whole interspersed sequence: the base items whose
/// position `2i` lies there (`base` holds exactly those), separators at the odd positions.
struct Between<P, T> {
    base: P,
    item: T,
    start: usize,
    end: usize,
}

impl<P: Producer<Item = T>, T: Clone + Send> Producer for Between<P, T> {
    type Item = T;
    type IntoIter = BetweenIter<P::IntoIter, T>;
    fn len(&self) -> usize {
        self.end - self.start
    }
    fn split_at(self, index: usize) -> (Self, Self) {
        let mid = self.start + index;
        let (left, right) = self.base.split_at(mid.div_ceil(2) - self.start.div_ceil(2));
        (
            Between {
                base: left,
                item: self.item.clone(),
                start: self.start,
                end: mid,
            },
            Between {
                base: right,
                item: self.item,
                start: mid,
                end: self.end,
            },
        )
    }
    fn into_iter(self) -> Self::IntoIter {
        BetweenIter {
            base: self.base.into_iter(),
            item: self.item,
            at: self.start,
            end: self.end,
        }
    }
    fn min_len(&self) -> usize {
        self.base.min_len()
    }
    fn max_len(&self) -> usize {
        self.base.max_len()
    }
}

/// A leaf of [`Between`].
struct BetweenIter<I, T> {
    base: I,
    item: T,
    at: usize,
    end: usize,
}

impl<I: Iterator<Item = T>, T: Clone> Iterator for BetweenIter<I, T> {
    type Item = T;
    #[inline]
    fn next(&mut self) -> Option<T> {
        if self.at >= self.end {
            return None;
        }
        self.at += 1;
        if self.at % 2 == 1 {
            self.base.next()
        } else {
            Some(self.item.clone())
        }
    }
}

/// [`IndexedParallelIterator::intersperse`]: a clone of `item` between every two items.
///
/// ```
/// use ember::prelude::*;
/// let v: Vec<u8> = vec![1, 2, 3].into_par_iter().intersperse(0).collect();
/// assert_eq!(v, [1, 0, 2, 0, 3]);
/// ```
#[derive(Clone, Debug)]
#[must_use = "parallel iterators do nothing until consumed"]
pub struct Intersperse<I: ParallelIterator> {
    base: I,
    item: I::Item,
}

impl<I: ParallelIterator> Intersperse<I> {
    pub(super) fn new(base: I, item: I::Item) -> Self {
        Intersperse { base, item }
    }
}

impl<I> ParallelIterator for Intersperse<I>
where
    I: IndexedParallelIterator,
    I::Item: Clone,
{
    type Item = I::Item;
    fn with_producer<CB: ProducerCallback<I::Item>>(self, callback: CB) -> CB::Output {
        struct Wrap<CB, T>(CB, T);
        impl<T: Clone + Send, CB: ProducerCallback<T>> ProducerCallback<T> for Wrap<CB, T> {
            type Output = CB::Output;
            fn callback<P: Producer<Item = T>>(self, base: P) -> CB::Output {
                let end = (2 * base.len()).saturating_sub(1);
                self.0.callback(Between {
                    base,
                    item: self.1,
                    start: 0,
                    end,
                })
            }
        }
        self.base.with_producer(Wrap(callback, self.item))
    }
    fn opt_len(&self) -> Option<usize> {
        Some(self.len())
    }
}

impl<I> IndexedParallelIterator for Intersperse<I>
where
    I: IndexedParallelIterator,
    I::Item: Clone,
{
    fn len(&self) -> usize {
        self.base.len().saturating_mul(2).saturating_sub(1)
    }
}
