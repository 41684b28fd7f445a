//! [`repeat`], [`repeatn`], [`once`], [`empty`]: sources that make their items.

use super::option::OptionProducer;
use super::plumbing::{Producer, ProducerCallback};
use super::range::UNINDEXED_POSITIONS;
use super::traits::{IndexedParallelIterator, IntoParallelIterator, ParallelIterator};
use super::Zip;

/// An endless parallel iterator of clones of `element`: bound it with
/// [`take`](Repeat::take), or [`zip`](Repeat::zip) it with a finite iterator; otherwise only
/// a consumer that stops early (`any`) ends.
///
/// ```
/// use ember::prelude::*;
/// let v: Vec<(u32, char)> = ember::iter::repeat('x').zip(vec![1, 2]).map(|(c, n)| (n, c)).collect();
/// assert_eq!(v, [(1, 'x'), (2, 'x')]);
/// assert!(ember::iter::repeat(7).any(|x| x == 7));
/// ```
pub fn repeat<T: Clone + Send>(element: T) -> Repeat<T> {
    Repeat { element }
}

/// [`repeat`]: clones of one element, without end.
///
/// ```
/// use ember::prelude::*;
/// let v: Vec<u8> = ember::iter::repeat(1u8).take(3).collect();
/// assert_eq!(v, [1, 1, 1]);
/// ```
#[derive(Clone, Debug)]
#[must_use = "parallel iterators do nothing until consumed"]
pub struct Repeat<T> {
    element: T,
}

impl<T: Clone + Send> Repeat<T> {
    /// The first `n` items: `n` clones of the element, indexed.
    ///
    /// ```
    /// use ember::prelude::*;
    /// assert_eq!(ember::iter::repeat(2u32).take(5).sum::<u32>(), 10);
    /// ```
    pub fn take(self, n: usize) -> RepeatN<T> {
        repeatn(self.element, n)
    }

    /// Pairs each item of `other` with a clone of the element.
    ///
    /// ```
    /// use ember::prelude::*;
    /// let v: Vec<(i32, i32)> = ember::iter::repeat(0).zip(vec![5, 6]).collect();
    /// assert_eq!(v, [(0, 5), (0, 6)]);
    /// ```
    pub fn zip<Z>(self, other: Z) -> Zip<RepeatN<T>, Z::Iter>
    where
        Z: IntoParallelIterator,
        Z::Iter: IndexedParallelIterator,
    {
        let other = other.into_par_iter();
        let n = other.len();
        self.take(n).zip(other)
    }
}

impl<T: Clone + Send> ParallelIterator for Repeat<T> {
    type Item = T;
    fn with_producer<CB: ProducerCallback<T>>(self, callback: CB) -> CB::Output {
        callback.callback(Endless {
            element: self.element,
            positions: UNINDEXED_POSITIONS,
        })
    }
}

/// Clones of an element without end: every piece of positions is endless.
struct Endless<T> {
    element: T,
    positions: usize,
}

impl<T: Clone + Send> Producer for Endless<T> {
    type Item = T;
    type IntoIter = std::iter::Repeat<T>;
    fn len(&self) -> usize {
        self.positions
    }
    fn split_at(self, index: usize) -> (Self, Self) {
        let left = Endless {
            element: self.element.clone(),
            positions: index,
        };
        let right = Endless {
            positions: self.positions - index,
            ..self
        };
        (left, right)
    }
    fn into_iter(self) -> Self::IntoIter {
        std::iter::repeat(self.element)
    }
}

/// `n` clones of `element`, as [`repeatn`] (rayon's newer name for it).
///
/// ```
/// use ember::prelude::*;
/// assert_eq!(ember::iter::repeat_n('x', 3).collect::<String>(), "xxx");
/// ```
pub fn repeat_n<T: Clone + Send>(element: T, n: usize) -> RepeatN<T> {
    repeatn(element, n)
}

/// `n` clones of `element` (the last item is `element` itself), indexed.
///
/// ```
/// use ember::prelude::*;
/// let v: Vec<String> = ember::iter::repeatn(String::from("ab"), 3).collect();
/// assert_eq!(v, ["ab", "ab", "ab"]);
/// ```
pub fn repeatn<T: Clone + Send>(element: T, n: usize) -> RepeatN<T> {
    RepeatN { element, n }
}

/// [`repeatn`]: `n` clones of an element.
///
/// ```
/// use ember::prelude::*;
/// assert_eq!(ember::iter::repeatn('z', 4).len(), 4);
/// ```
#[derive(Clone, Debug)]
#[must_use = "parallel iterators do nothing until consumed"]
pub struct RepeatN<T> {
    element: T,
    n: usize,
}

impl<T: Clone + Send> ParallelIterator for RepeatN<T> {
    type Item = T;
    fn with_producer<CB: ProducerCallback<T>>(self, callback: CB) -> CB::Output {
        callback.callback(Clones {
            element: self.element,
            n: self.n,
        })
    }
    fn opt_len(&self) -> Option<usize> {
        Some(self.n)
    }
}

impl<T: Clone + Send> IndexedParallelIterator for RepeatN<T> {
    fn len(&self) -> usize {
        self.n
    }
}

/// `n` clones of an element.
struct Clones<T> {
    element: T,
    n: usize,
}

impl<T: Clone + Send> Producer for Clones<T> {
    type Item = T;
    type IntoIter = std::iter::RepeatN<T>;
    fn len(&self) -> usize {
        self.n
    }
    fn split_at(self, index: usize) -> (Self, Self) {
        let left = Clones {
            element: self.element.clone(),
            n: index,
        };
        let right = Clones {
            n: self.n - index,
            ..self
        };
        (left, right)
    }
    fn into_iter(self) -> Self::IntoIter {
        std::iter::repeat_n(self.element, self.n)
    }
}

/// One item, indexed.
///
/// ```
/// use ember::prelude::*;
/// let v: Vec<(u8, char)> = ember::iter::once(9).zip(['a']).collect();
/// assert_eq!(v, [(9, 'a')]);
/// ```
pub fn once<T: Send>(item: T) -> Once<T> {
    Once { item }
}

/// [`once`]: one item.
///
/// ```
/// use ember::prelude::*;
/// assert_eq!(ember::iter::once("x").count(), 1);
/// ```
#[derive(Clone, Debug)]
#[must_use = "parallel iterators do nothing until consumed"]
pub struct Once<T> {
    item: T,
}

impl<T: Send> ParallelIterator for Once<T> {
    type Item = T;
    fn with_producer<CB: ProducerCallback<T>>(self, callback: CB) -> CB::Output {
        callback.callback(OptionProducer(Some(self.item)))
    }
    fn opt_len(&self) -> Option<usize> {
        Some(1)
    }
}

impl<T: Send> IndexedParallelIterator for Once<T> {
    fn len(&self) -> usize {
        1
    }
}

/// No items, indexed.
///
/// ```
/// use ember::prelude::*;
/// assert_eq!(ember::iter::empty::<u32>().sum::<u32>(), 0);
/// ```
pub fn empty<T: Send>() -> Empty<T> {
    Empty {
        item: std::marker::PhantomData,
    }
}

/// [`empty`]: no items.
///
/// ```
/// use ember::prelude::*;
/// assert_eq!(ember::iter::empty::<String>().len(), 0);
/// ```
#[derive(Debug)]
#[must_use = "parallel iterators do nothing until consumed"]
pub struct Empty<T> {
    item: std::marker::PhantomData<fn() -> T>,
}

impl<T> Clone for Empty<T> {
    fn clone(&self) -> Self {
        Empty {
            item: std::marker::PhantomData,
        }
    }
}

impl<T: Send> ParallelIterator for Empty<T> {
    type Item = T;
    fn with_producer<CB: ProducerCallback<T>>(self, callback: CB) -> CB::Output {
        callback.callback(OptionProducer(None))
    }
    fn opt_len(&self) -> Option<usize> {
        Some(0)
    }
}

impl<T: Send> IndexedParallelIterator for Empty<T> {
    fn len(&self) -> usize {
        0
    }
}
