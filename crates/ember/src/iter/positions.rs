//! [`Positions`] and [`ZipEq`]: two indexed adapters made of others (`enumerate` and
//! `filter_map`; `zip` after a length check), under names of their own.

use super::adapters::Zip;
use super::plumbing::ProducerCallback;
use super::traits::{IndexedParallelIterator, ParallelIterator};

/// [`IndexedParallelIterator::positions`]: the indices of the items `predicate` accepts,
/// in order.
///
/// ```
/// use ember::prelude::*;
/// let v: Vec<usize> = [5, 8, 2, 8].par_iter().positions(|x| *x == 8).collect();
/// assert_eq!(v, [1, 3]);
/// ```
#[derive(Clone, Debug)]
#[must_use = "parallel iterators do nothing until consumed"]
pub struct Positions<I, P> {
    base: I,
    predicate: P,
}

impl<I, P> Positions<I, P> {
    pub(super) fn new(base: I, predicate: P) -> Self {
        Positions { base, predicate }
    }
}

impl<I, P> ParallelIterator for Positions<I, P>
where
    I: IndexedParallelIterator,
    P: Fn(I::Item) -> bool + Sync + Send,
{
    type Item = usize;
    fn with_producer<CB: ProducerCallback<usize>>(self, callback: CB) -> CB::Output {
        let predicate = &self.predicate;
        self.base
            .enumerate()
            .filter_map(move |(i, item)| predicate(item).then_some(i))
            .with_producer(callback)
    }
}

/// [`IndexedParallelIterator::zip_eq`]: `zip` of two pipelines of the same length (checked
/// when it is made).
///
/// ```
/// use ember::prelude::*;
/// let v: Vec<(u8, char)> = [1u8, 2].into_par_iter().zip_eq(['a', 'b']).collect();
/// assert_eq!(v, [(1, 'a'), (2, 'b')]);
/// ```
#[derive(Clone, Debug)]
#[must_use = "parallel iterators do nothing until consumed"]
pub struct ZipEq<A, B> {
    zip: Zip<A, B>,
}

impl<A: IndexedParallelIterator, B: IndexedParallelIterator> ZipEq<A, B> {
    pub(super) fn new(a: A, b: B) -> Self {
        let (la, lb) = (a.len(), b.len());
        assert_eq!(
            la, lb,
            "ember: zip_eq of iterators of different lengths ({la} and {lb})"
        );
        ZipEq { zip: a.zip(b) }
    }
}

impl<A, B> ParallelIterator for ZipEq<A, B>
where
    A: IndexedParallelIterator,
    B: IndexedParallelIterator,
{
    type Item = (A::Item, B::Item);
    fn with_producer<CB: ProducerCallback<Self::Item>>(self, callback: CB) -> CB::Output {
        self.zip.with_producer(callback)
    }
    fn opt_len(&self) -> Option<usize> {
        self.zip.opt_len()
    }
}

impl<A, B> IndexedParallelIterator for ZipEq<A, B>
where
    A: IndexedParallelIterator,
    B: IndexedParallelIterator,
{
    fn len(&self) -> usize {
        self.zip.len()
    }
}
