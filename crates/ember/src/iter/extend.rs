//! [`ParallelExtend`] (`par_extend`) for `Vec`, and the consumers that fill two collections:
//! `unzip` and `partition`. Each piece sorts its items into two vectors of its own; the
//! pieces' vectors are then appended in order to each side.

use std::marker::PhantomData;

use super::collect::append;
use super::fold::{self, Fold};
use super::traits::{IntoParallelIterator, ParallelIterator};

/// A collection that can be extended with the items of a parallel iterator: `Vec<T>`, in
/// the items' order.
///
/// ```
/// use ember::prelude::*;
/// let mut v = vec![0u32];
/// v.par_extend((1..4u32).into_par_iter().map(|x| x * 10));
/// assert_eq!(v, [0, 10, 20, 30]);
/// ```
pub trait ParallelExtend<T: Send> {
    /// Adds the items of `par_iter` to the collection.
    ///
    /// ```
    /// use ember::prelude::*;
    /// let mut v: Vec<u32> = Vec::new();
    /// v.par_extend((0..100u32).into_par_iter().filter(|x| x % 10 == 0));
    /// assert_eq!(v.len(), 10);
    /// ```
    fn par_extend<I>(&mut self, par_iter: I)
    where
        I: IntoParallelIterator<Item = T>;
}

impl<T: Send> ParallelExtend<T> for Vec<T> {
    fn par_extend<I>(&mut self, par_iter: I)
    where
        I: IntoParallelIterator<Item = T>,
    {
        append(self, par_iter.into_par_iter());
    }
}

/// Copies the referenced items in, as `Extend<&T>` does.
///
/// ```
/// use ember::prelude::*;
/// let mut v = vec![1u8];
/// v.par_extend(&[2u8, 3]);
/// assert_eq!(v, [1, 2, 3]);
/// ```
impl<'a, T: Copy + Send + Sync + 'a> ParallelExtend<&'a T> for Vec<T> {
    fn par_extend<I>(&mut self, par_iter: I)
    where
        I: IntoParallelIterator<Item = &'a T>,
    {
        append(self, par_iter.into_par_iter().copied());
    }
}

/// The pieces' pairs of vectors, in order, as `sort` fills them.
struct Sides<P, L, R>(P, PhantomData<fn() -> (L, R)>);

type Pieces<L, R> = Vec<(Vec<L>, Vec<R>)>;

impl<T, L: Send, R: Send, P> Fold<T> for Sides<P, L, R>
where
    P: Fn(T, &mut Vec<L>, &mut Vec<R>) + Sync,
{
    type Acc = Pieces<L, R>;
    fn leaf<I: Iterator<Item = T>>(&self, items: I) -> Pieces<L, R> {
        let (mut left, mut right) = (Vec::new(), Vec::new());
        items.for_each(|item| (self.0)(item, &mut left, &mut right));
        vec![(left, right)]
    }
    fn combine(&self, mut left: Pieces<L, R>, mut right: Pieces<L, R>) -> Pieces<L, R> {
        left.append(&mut right);
        left
    }
}

/// Sorts the items of `iter` into two collections with `sort`, in order.
pub(super) fn split<I, L, R, A, B, P>(iter: I, sort: P) -> (A, B)
where
    I: ParallelIterator,
    L: Send,
    R: Send,
    A: Default + Send + ParallelExtend<L>,
    B: Default + Send + ParallelExtend<R>,
    P: Fn(I::Item, &mut Vec<L>, &mut Vec<R>) + Sync,
{
    let pieces = fold::run(iter, &Sides(sort, PhantomData));
    let (mut lefts, mut rights) = (Vec::new(), Vec::new());
    for (left, right) in pieces {
        lefts.push(left);
        rights.push(right);
    }
    let mut a = A::default();
    a.par_extend(lefts.into_iter().flatten().collect::<Vec<L>>());
    let mut b = B::default();
    b.par_extend(rights.into_iter().flatten().collect::<Vec<R>>());
    (a, b)
}
