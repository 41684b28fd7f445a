//! `Vec<T>::into_par_iter()`: the items by value.
//!
//! The vector's length is set to 0 and its items are lent, as one mutable slice, to a
//! [`DrainProducer`]; the producer's pieces move items out as they are iterated and drop
//! the ones never reached (a `zip` cut, an `any` that stopped early, a panic). The vector
//! itself only frees its buffer, when the pipeline has finished.

use std::mem;
use std::ptr;

use super::plumbing::{Producer, ProducerCallback};
use super::traits::{IndexedParallelIterator, IntoParallelIterator, ParallelIterator};

/// `vec.into_par_iter()`: the items of a `Vec`, by value.
///
/// ```
/// use ember::prelude::*;
/// let words = vec![String::from("a"), String::from("bb")];
/// let total: usize = words.into_par_iter().map(|s| s.len()).sum();
/// assert_eq!(total, 3);
/// ```
#[derive(Clone, Debug)]
#[must_use = "parallel iterators do nothing until consumed"]
pub struct VecIntoIter<T> {
    pub(super) vec: Vec<T>,
}

impl<T: Send> IntoParallelIterator for Vec<T> {
    type Iter = VecIntoIter<T>;
    type Item = T;
    fn into_par_iter(self) -> VecIntoIter<T> {
        VecIntoIter { vec: self }
    }
}

impl<T: Send> ParallelIterator for VecIntoIter<T> {
    type Item = T;

    fn with_producer<CB: ProducerCallback<T>>(self, callback: CB) -> CB::Output {
        let mut vec = self.vec;
        let len = vec.len();
        // SAFETY: from here the items belong to the producer: with the length 0, the vector
        // will only free its buffer (after the callback, or while a panic of it unwinds,
        // once every piece of the producer is gone: `join` waits for both halves).
        unsafe { vec.set_len(0) };
        // SAFETY: the first `len` slots are initialised items nobody else reaches (the
        // vector no longer counts them), and the buffer outlives the callback, which is the
        // only user of the slice (its output type cannot borrow it).
        let items = unsafe { std::slice::from_raw_parts_mut(vec.as_mut_ptr(), len) };
        // SAFETY: as above, the items are initialised and nobody else owns them.
        callback.callback(unsafe { DrainProducer::new(items) })
    }

    fn opt_len(&self) -> Option<usize> {
        Some(self.vec.len())
    }
}

impl<T: Send> IndexedParallelIterator for VecIntoIter<T> {
    fn len(&self) -> usize {
        self.vec.len()
    }
}

/// Owns the items of `items` (initialised, and counted by nobody else): moves them out when
/// iterated, drops the rest when dropped. The producer of every source that lends owned
/// items in place: `Vec`s, arrays, `par_drain`.
pub(super) struct DrainProducer<'a, T> {
    items: &'a mut [T],
}

impl<'a, T> DrainProducer<'a, T> {
    /// A producer that owns the items of `items`.
    ///
    /// # Safety
    /// The items are initialised and nobody else will drop or read them: the producer
    /// moves them out or drops them, each exactly once.
    pub(super) unsafe fn new(items: &'a mut [T]) -> Self {
        DrainProducer { items }
    }
}

impl<'a, T: Send> Producer for DrainProducer<'a, T> {
    type Item = T;
    type IntoIter = DrainIter<'a, T>;
    fn len(&self) -> usize {
        self.items.len()
    }
    fn split_at(mut self, index: usize) -> (Self, Self) {
        // Before the slice is taken: a bad index must panic with the items still owned here,
        // so that this producer's drop drops them.
        assert!(
            index <= self.items.len(),
            "ember: split_at({index}) of a producer of {} positions",
            self.items.len()
        );
        let (left, right) = mem::take(&mut self.items).split_at_mut(index);
        (
            DrainProducer { items: left },
            DrainProducer { items: right },
        )
    }
    fn into_iter(mut self) -> DrainIter<'a, T> {
        DrainIter {
            items: mem::take(&mut self.items).iter_mut(),
        }
    }
}

impl<T> Drop for DrainProducer<'_, T> {
    fn drop(&mut self) {
        let items: &mut [T] = mem::take(&mut self.items);
        // SAFETY: the items are initialised and owned by this producer (see `DrainProducer`);
        // taking the slice left an empty one, so nothing is dropped twice.
        unsafe { ptr::drop_in_place(items) };
    }
}

/// The items of one leaf of a [`DrainProducer`], moved out one by one.
pub(super) struct DrainIter<'a, T> {
    items: std::slice::IterMut<'a, T>,
}

impl<T> Iterator for DrainIter<'_, T> {
    type Item = T;
    #[inline]
    fn next(&mut self) -> Option<T> {
        let slot = self.items.next()?;
        // SAFETY: the iterator owns the item in `slot` (see `DrainProducer`) and has just stepped
        // past it, so it is read exactly once and never dropped here.
        Some(unsafe { ptr::read(slot) })
    }
    fn size_hint(&self) -> (usize, Option<usize>) {
        self.items.size_hint()
    }
}

impl<T> Drop for DrainIter<'_, T> {
    fn drop(&mut self) {
        let rest: *mut [T] = mem::take(&mut self.items).into_slice();
        // SAFETY: the items not yet yielded are initialised and owned by this iterator.
        unsafe { ptr::drop_in_place(rest) };
    }
}

/// `array.into_par_iter()`: the items of an array, by value, lent in place as a `Vec`'s are.
///
/// ```
/// use ember::prelude::*;
/// let names = [String::from("ab"), String::from("c")];
/// let lens: Vec<usize> = names.into_par_iter().map(|s| s.len()).collect();
/// assert_eq!(lens, [2, 1]);
/// ```
#[derive(Clone, Debug)]
#[must_use = "parallel iterators do nothing until consumed"]
pub struct ArrayIntoIter<T, const N: usize> {
    array: [T; N],
}

impl<T: Send, const N: usize> IntoParallelIterator for [T; N] {
    type Iter = ArrayIntoIter<T, N>;
    type Item = T;
    fn into_par_iter(self) -> ArrayIntoIter<T, N> {
        ArrayIntoIter { array: self }
    }
}

impl<T: Send, const N: usize> ParallelIterator for ArrayIntoIter<T, N> {
    type Item = T;

    fn with_producer<CB: ProducerCallback<T>>(self, callback: CB) -> CB::Output {
        // The items belong to the producer from here: the array itself is never dropped.
        let mut array = mem::ManuallyDrop::new(self.array);
        // SAFETY: the items are initialised, and the `ManuallyDrop` will not drop them: the
        // producer alone moves them out or drops them. The array outlives the callback.
        callback.callback(unsafe { DrainProducer::new(&mut array[..]) })
    }

    fn opt_len(&self) -> Option<usize> {
        Some(N)
    }
}

impl<T: Send, const N: usize> IndexedParallelIterator for ArrayIntoIter<T, N> {
    fn len(&self) -> usize {
        N
    }
}
