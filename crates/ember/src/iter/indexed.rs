//! [`IndexedParallelIterator`]: the pipelines that know their exact length, and what only
//! they can do (`enumerate`, `zip`, `take`, `skip`, `rev`, `position_*`, …).

use super::adapters::{Enumerate, Zip};
use super::collect;
use super::take_skip::{Rev, Skip, StepBy, Take};
use super::traits::{IntoParallelIterator, ParallelIterator};

/// A parallel iterator that knows its exact length: slices, `Vec`s, ranges, chunks, and
/// `map`, `enumerate`, `zip`, `with_min_len` of those (not `filter`).
///
/// ```
/// use ember::prelude::*;
/// assert_eq!((0..10u32).into_par_iter().map(|x| x + 1).len(), 10);
/// ```
// No `is_empty`, as in rayon: `len() == 0` is what ported code says.
#[allow(clippy::len_without_is_empty)]
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not an indexed parallel iterator",
    label = "its exact length is not known",
    note = "`enumerate`, `zip` and `len` need a pipeline that knows its length: slices, `Vec`s, ranges, chunks, and `map`, `enumerate`, `zip`, `with_min_len` of those; `filter` loses it, and a sequential `Iterator` is no parallel iterator (`.par_iter()`, `.into_par_iter()`)"
)]
pub trait IndexedParallelIterator: ParallelIterator {
    /// The number of items.
    ///
    /// ```
    /// use ember::prelude::*;
    /// assert_eq!(vec![1, 2, 3].par_chunks(2).len(), 2);
    /// ```
    fn len(&self) -> usize;

    /// Pairs every item with its index.
    ///
    /// ```
    /// use ember::prelude::*;
    /// let v: Vec<(usize, char)> = ['a', 'b'].par_iter().enumerate().map(|(i, c)| (i, *c)).collect();
    /// assert_eq!(v, [(0, 'a'), (1, 'b')]);
    /// ```
    fn enumerate(self) -> Enumerate<Self> {
        Enumerate::new(self)
    }

    /// Pairs the items of `self` and `other` in order, stopping at the shorter one.
    ///
    /// ```
    /// use ember::prelude::*;
    /// let a = vec![1, 2, 3];
    /// let b = vec![10, 20];
    /// let sums: Vec<i32> = a.par_iter().zip(&b).map(|(x, y)| x + y).collect();
    /// assert_eq!(sums, [11, 22]);
    /// ```
    fn zip<Z>(self, other: Z) -> Zip<Self, Z::Iter>
    where
        Z: IntoParallelIterator,
        Z::Iter: IndexedParallelIterator,
    {
        Zip::new(self, other.into_par_iter())
    }

    /// The first `n` items.
    ///
    /// ```
    /// use ember::prelude::*;
    /// assert_eq!((0..100u32).into_par_iter().take(10).sum::<u32>(), 45);
    /// ```
    fn take(self, n: usize) -> Take<Self> {
        Take::new(self, n)
    }

    /// All but the first `n` items.
    ///
    /// ```
    /// use ember::prelude::*;
    /// assert_eq!((0..100u32).into_par_iter().skip(90).min(), Some(90));
    /// ```
    fn skip(self, n: usize) -> Skip<Self> {
        Skip::new(self, n)
    }

    /// Every `step`-th item, from the first. Panics if `step` is 0.
    ///
    /// ```
    /// use ember::prelude::*;
    /// let v: Vec<u32> = (0..7u32).into_par_iter().step_by(3).collect();
    /// assert_eq!(v, [0, 3, 6]);
    /// ```
    fn step_by(self, step: usize) -> StepBy<Self> {
        assert!(step != 0, "ember: step_by with a step of 0");
        StepBy::new(self, step)
    }

    /// The items in reverse order.
    ///
    /// ```
    /// use ember::prelude::*;
    /// let v: Vec<char> = ['a', 'b', 'c'].par_iter().rev().copied().collect();
    /// assert_eq!(v, ['c', 'b', 'a']);
    /// ```
    fn rev(self) -> Rev<Self> {
        Rev::new(self)
    }

    /// The index of some item `predicate` accepts (stopping like `find_any`).
    ///
    /// ```
    /// use ember::prelude::*;
    /// assert_eq!([3, 1, 4].par_iter().position_any(|x| *x == 4), Some(2));
    /// ```
    fn position_any<P>(self, predicate: P) -> Option<usize>
    where
        P: Fn(Self::Item) -> bool + Sync + Send,
    {
        self.map(predicate)
            .enumerate()
            .find_any(|(_, hit)| *hit)
            .map(|(i, _)| i)
    }

    /// The index of the first item `predicate` accepts, as [`Iterator::position`]
    /// (stopping like `find_first`).
    ///
    /// ```
    /// use ember::prelude::*;
    /// assert_eq!([3, 1, 4, 1].par_iter().position_first(|x| *x == 1), Some(1));
    /// ```
    fn position_first<P>(self, predicate: P) -> Option<usize>
    where
        P: Fn(Self::Item) -> bool + Sync + Send,
    {
        self.map(predicate)
            .enumerate()
            .find_first(|(_, hit)| *hit)
            .map(|(i, _)| i)
    }

    /// The index of the last item `predicate` accepts (stopping like `find_last`).
    ///
    /// ```
    /// use ember::prelude::*;
    /// assert_eq!([3, 1, 4, 1].par_iter().position_last(|x| *x == 1), Some(3));
    /// ```
    fn position_last<P>(self, predicate: P) -> Option<usize>
    where
        P: Fn(Self::Item) -> bool + Sync + Send,
    {
        self.map(predicate)
            .enumerate()
            .find_last(|(_, hit)| *hit)
            .map(|(i, _)| i)
    }

    /// Collects the items, in order, into `target`, replacing what it held and reusing its
    /// allocation.
    ///
    /// ```
    /// use ember::prelude::*;
    /// let mut v = Vec::with_capacity(10);
    /// (0..10u32).into_par_iter().map(|x| x * 2).collect_into_vec(&mut v);
    /// assert_eq!(v[9], 18);
    /// ```
    fn collect_into_vec(self, target: &mut Vec<Self::Item>) {
        target.clear();
        collect::append(target, self);
    }
}
