//! [`Chain`]: the items of one parallel iterator, then another's. Its producer holds both
//! producers and splits whichever side the position falls in.

use super::plumbing::{Producer, ProducerCallback};
use super::traits::{IndexedParallelIterator, ParallelIterator};

/// [`ParallelIterator::chain`]: the items of `a`, then those of `b`.
///
/// ```
/// use ember::prelude::*;
/// let v: Vec<u32> = (0..2u32).into_par_iter().chain(vec![7, 8]).collect();
/// assert_eq!(v, [0, 1, 7, 8]);
/// ```
#[derive(Clone, Debug)]
#[must_use = "parallel iterators do nothing until consumed"]
pub struct Chain<A, B> {
    a: A,
    b: B,
}

impl<A, B> Chain<A, B> {
    pub(super) fn new(a: A, b: B) -> Self {
        Chain { a, b }
    }
}

impl<A, B> ParallelIterator for Chain<A, B>
where
    A: ParallelIterator,
    B: ParallelIterator<Item = A::Item>,
{
    type Item = A::Item;

    fn with_producer<CB: ProducerCallback<A::Item>>(self, callback: CB) -> CB::Output {
        // `a`'s producer first, then `b`'s inside its callback.
        struct First<CB, B> {
            callback: CB,
            b: B,
        }
        impl<CB, B, T> ProducerCallback<T> for First<CB, B>
        where
            B: ParallelIterator<Item = T>,
            CB: ProducerCallback<T>,
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
        impl<CB, PA, T> ProducerCallback<T> for Second<CB, PA>
        where
            PA: Producer<Item = T>,
            CB: ProducerCallback<T>,
        {
            type Output = CB::Output;
            fn callback<PB: Producer<Item = T>>(self, b: PB) -> CB::Output {
                self.callback.callback(Both { a: self.a, b })
            }
        }
        self.a.with_producer(First {
            callback,
            b: self.b,
        })
    }

    fn opt_len(&self) -> Option<usize> {
        self.a.opt_len()?.checked_add(self.b.opt_len()?)
    }
}

impl<A, B> IndexedParallelIterator for Chain<A, B>
where
    A: IndexedParallelIterator,
    B: IndexedParallelIterator<Item = A::Item>,
{
    fn len(&self) -> usize {
        self.a
            .len()
            .checked_add(self.b.len())
            .expect("ember: a chain longer than usize::MAX")
    }
}

/// `chain`'s producer: `a`'s positions, then `b`'s.
struct Both<PA, PB> {
    a: PA,
    b: PB,
}

impl<T, PA: Producer<Item = T>, PB: Producer<Item = T>> Producer for Both<PA, PB> {
    type Item = T;
    type IntoIter = std::iter::Chain<PA::IntoIter, PB::IntoIter>;
    fn len(&self) -> usize {
        // Saturating: two unindexed sources of many positions each (a `usize` range whole)
        // may hold more than a `usize` counts; the pipeline is unindexed then, and a length
        // of `usize::MAX` only bounds how it splits.
        self.a.len().saturating_add(self.b.len())
    }
    fn split_at(self, index: usize) -> (Self, Self) {
        let a_len = self.a.len();
        if index <= a_len {
            let (a_left, a_right) = self.a.split_at(index);
            let (b_none, b) = self.b.split_at(0);
            (
                Both {
                    a: a_left,
                    b: b_none,
                },
                Both { a: a_right, b },
            )
        } else {
            let (a, a_none) = self.a.split_at(a_len);
            let (b_left, b_right) = self.b.split_at(index - a_len);
            (
                Both { a, b: b_left },
                Both {
                    a: a_none,
                    b: b_right,
                },
            )
        }
    }
    fn into_iter(self) -> Self::IntoIter {
        self.a.into_iter().chain(self.b.into_iter())
    }
    fn min_len(&self) -> usize {
        self.a.min_len().max(self.b.min_len())
    }
    fn max_len(&self) -> usize {
        self.a.max_len().min(self.b.max_len())
    }
}
