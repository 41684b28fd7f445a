//! The conversions into parallel iterators ([`IntoParallelIterator`], `par_iter()`,
//! `par_iter_mut()`) and out of them ([`FromParallelIterator`], for `collect`).

use super::traits::ParallelIterator;

/// A value that converts into a parallel iterator: ranges, `Vec`s, slices and references to
/// them (and every parallel iterator, into itself).
///
/// ```
/// use ember::prelude::*;
/// let owned: Vec<String> = vec!["a".into(), "b".into()];
/// let upper: Vec<String> = owned.into_par_iter().map(|s| s.to_uppercase()).collect();
/// assert_eq!(upper, ["A", "B"]);
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be turned into a parallel iterator",
    label = "no `into_par_iter()` for this type",
    note = "`into_par_iter()` takes the sources `ember::iter` lists (ranges, `Vec`s, slices, and references to them) and parallel iterators; a sequential `Iterator` is none of them: iterate its collection with `.par_iter()` / `.into_par_iter()` (`use ember::prelude::*;`)"
)]
pub trait IntoParallelIterator {
    /// The parallel iterator.
    type Iter: ParallelIterator<Item = Self::Item>;
    /// Its items.
    type Item: Send;
    /// Converts `self` into a parallel iterator.
    fn into_par_iter(self) -> Self::Iter;
}

impl<I: ParallelIterator> IntoParallelIterator for I {
    type Iter = I;
    type Item = I::Item;
    fn into_par_iter(self) -> I {
        self
    }
}

/// `par_iter()`: a parallel iterator over references to the items of a collection.
///
/// ```
/// use ember::prelude::*;
/// let v = vec![1u64, 2, 3];
/// assert_eq!(v.par_iter().sum::<u64>(), 6);
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` has no `par_iter()`",
    label = "no `par_iter()` for this type",
    note = "`par_iter()` exists where `&{Self}` turns into a parallel iterator: slices, `Vec`s, arrays, and the other sources `ember::iter` lists (`use ember::prelude::*;`)"
)]
pub trait IntoParallelRefIterator<'data> {
    /// The parallel iterator.
    type Iter: ParallelIterator<Item = Self::Item>;
    /// Its items (references).
    type Item: Send + 'data;
    /// A parallel iterator over `&self`'s items.
    fn par_iter(&'data self) -> Self::Iter;
}

impl<'data, C: ?Sized + 'data> IntoParallelRefIterator<'data> for C
where
    &'data C: IntoParallelIterator,
{
    type Iter = <&'data C as IntoParallelIterator>::Iter;
    type Item = <&'data C as IntoParallelIterator>::Item;
    fn par_iter(&'data self) -> Self::Iter {
        self.into_par_iter()
    }
}

/// `par_iter_mut()`: a parallel iterator over mutable references to a collection's items.
///
/// ```
/// use ember::prelude::*;
/// let mut v = vec![1, 2, 3];
/// v.par_iter_mut().for_each(|x| *x *= 2);
/// assert_eq!(v, [2, 4, 6]);
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` has no `par_iter_mut()`",
    label = "no `par_iter_mut()` for this type",
    note = "`par_iter_mut()` exists where `&mut {Self}` turns into a parallel iterator: slices, `Vec`s, arrays, and the other sources `ember::iter` lists (`use ember::prelude::*;`)"
)]
pub trait IntoParallelRefMutIterator<'data> {
    /// The parallel iterator.
    type Iter: ParallelIterator<Item = Self::Item>;
    /// Its items (mutable references).
    type Item: Send + 'data;
    /// A parallel iterator over `&mut self`'s items.
    fn par_iter_mut(&'data mut self) -> Self::Iter;
}

impl<'data, C: ?Sized + 'data> IntoParallelRefMutIterator<'data> for C
where
    &'data mut C: IntoParallelIterator,
{
    type Iter = <&'data mut C as IntoParallelIterator>::Iter;
    type Item = <&'data mut C as IntoParallelIterator>::Item;
    fn par_iter_mut(&'data mut self) -> Self::Iter {
        self.into_par_iter()
    }
}

/// A collection `collect` can build: `Vec<T>` (in the items' order), the standard
/// collections, `String`, `Box<[T]>`, `Rc<[T]>`, `Arc<[T]>`, `Cow`, `()`, and `Result` /
/// `Option` of any of them.
///
/// ```
/// use ember::iter::FromParallelIterator;
/// let v = Vec::from_par_iter(vec![1, 2, 3]);
/// assert_eq!(v, [1, 2, 3]);
/// ```
#[diagnostic::on_unimplemented(
    message = "a parallel iterator over `{T}` cannot be collected into `{Self}`",
    label = "`collect` cannot build this from items of type `{T}`",
    note = "`collect` builds the collections that implement `FromParallelIterator` (`Vec<T>` among them); collect into a `Vec` and convert it, or check the item type"
)]
pub trait FromParallelIterator<T: Send> {
    /// Builds the collection from `iter`'s items.
    fn from_par_iter<I>(iter: I) -> Self
    where
        I: IntoParallelIterator<Item = T>;
}
