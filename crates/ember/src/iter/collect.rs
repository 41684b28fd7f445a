//! `collect` into a `Vec`, and `par_extend` of one, in order.
//!
//! - **Indexed pipelines** (the length is known: no `filter`) write every item straight into
//!   its final slot of the vector's spare capacity: each leaf owns the slots of its positions
//!   and returns a [`Written`] guard for the ones it filled, and adjacent full guards merge.
//!   Only when one guard covers every slot does the vector take the items (`set_len`); until
//!   then a guard that is dropped — a panic in some leaf, whose sibling's guard `join` drops —
//!   drops exactly the items it wrote. A leaf yielding more items than it has positions is a
//!   bug of ember's and panics before writing out of bounds.
//! - **Filtered pipelines** collect each leaf into a `Vec` of its own and concatenate the
//!   leaves' vectors in order at the end (safe code; one extra copy of the items).

use std::mem;
use std::ptr;

use super::fold::{self, Fold};
use super::plumbing::{drive, Consumer, Reducer};
use super::traits::{FromParallelIterator, IntoParallelIterator, ParallelIterator};

impl<T: Send> FromParallelIterator<T> for Vec<T> {
    fn from_par_iter<I>(iter: I) -> Vec<T>
    where
        I: IntoParallelIterator<Item = T>,
    {
        let mut vec = Vec::new();
        append(&mut vec, iter.into_par_iter());
        vec
    }
}

/// Appends the items of `iter` to `vec`, in order (`collect`, `par_extend`).
pub(super) fn append<I: ParallelIterator>(vec: &mut Vec<I::Item>, iter: I) {
    match iter.opt_len() {
        Some(len) => append_indexed(vec, iter, len),
        None => append_leaves(vec, iter),
    }
}

/// Appends a pipeline of exactly `len` items straight into place.
fn append_indexed<I: ParallelIterator>(vec: &mut Vec<I::Item>, iter: I, len: usize) {
    vec.reserve(len);
    let old = vec.len();
    // `wrapping_add` stays in bounds (the spare capacity holds `len` more) and keeps the
    // buffer's provenance.
    let start = vec.as_mut_ptr().wrapping_add(old);
    let written = drive(iter, Slots { start, len });
    assert!(
        written.start == start && written.len == len,
        "ember: a parallel iterator yielded {} items where it announced {len}",
        written.len
    );
    mem::forget(written);
    // SAFETY: the one guard left covers the `len` slots after the first `old`, all written
    // (its `len` counts written slots from `start`, and guards merge only when the left one
    // is full; for a zero-sized `T` every pair merges, and `len` still counts exactly the
    // items written), and it was forgotten, so the items now belong to the vector alone.
    unsafe { vec.set_len(old + len) };
}

/// A raw pointer that crosses threads with the slots it points to (each piece of the
/// pipeline writes disjoint slots).
struct Slots<T> {
    start: *mut T,
    len: usize,
}

// SAFETY: a `Slots` is the exclusive right to write `len` slots from `start`; sending it
// sends that right, and the items it writes, hence `T: Send`.
unsafe impl<T: Send> Send for Slots<T> {}

/// The first `len` slots from `start`, written, owned by this guard until it is merged into
/// its left neighbour or forgotten by `append_indexed`: dropping it drops those items.
struct Written<T> {
    start: *mut T,
    /// Slots written, from `start`.
    len: usize,
}

// SAFETY: as for `Slots`: a `Written` owns its items, which are `Send`.
unsafe impl<T: Send> Send for Written<T> {}

impl<T> Drop for Written<T> {
    fn drop(&mut self) {
        // SAFETY: the first `len` slots from `start` hold initialised items that only this
        // guard owns (it was not merged or forgotten).
        unsafe { ptr::drop_in_place(ptr::slice_from_raw_parts_mut(self.start, self.len)) };
    }
}

impl<T: Send> Consumer<T> for Slots<T> {
    type Result = Written<T>;
    type Reducer = Merge;

    fn split_at(self, index: usize) -> (Self, Self, Merge) {
        assert!(
            index <= self.len,
            "ember: a pipeline split out of its bounds"
        );
        // `wrapping_add` stays in bounds (index <= len) and keeps the buffer's provenance.
        let right = Slots {
            start: self.start.wrapping_add(index),
            len: self.len - index,
        };
        let left = Slots { len: index, ..self };
        (left, right, Merge)
    }

    fn fold<It: Iterator<Item = T>>(self, items: It) -> Written<T> {
        let mut written = Written {
            start: self.start,
            len: 0,
        };
        for item in items {
            assert!(
                written.len < self.len,
                "ember: a parallel iterator yielded more items than it announced"
            );
            // SAFETY: slot `len` is inside this piece's `self.len` slots, which no other piece
            // writes, and not yet written (slots are written in order, `len` counts them).
            unsafe { written.start.add(written.len).write(item) };
            written.len += 1;
        }
        written
    }
}

/// Merges the guards of two adjacent pieces.
struct Merge;

impl<T> Reducer<Written<T>> for Merge {
    fn reduce(self, mut left: Written<T>, right: Written<T>) -> Written<T> {
        if left.start.wrapping_add(left.len) == right.start {
            // The right piece starts where the left one's written slots end (the left one is
            // full; for a zero-sized `T`, whose pointers never move, always — only the count
            // of items matters then, and it stays exact): one guard now owns both pieces'
            // items.
            left.len += right.len;
            mem::forget(right);
        }
        // Otherwise `right` drops its items here, and the final count shows the shortfall.
        left
    }
}

/// Collects each leaf into its own `Vec`, then appends them in order.
fn append_leaves<I: ParallelIterator>(vec: &mut Vec<I::Item>, iter: I) {
    let mut leaves = fold::run(iter, &Leaves).into_iter();
    if vec.capacity() == 0 {
        // The first leaf's vector becomes the result: one copy fewer.
        *vec = leaves.next().unwrap_or_default();
    }
    vec.reserve_exact(leaves.as_slice().iter().map(Vec::len).sum());
    for mut leaf in leaves {
        vec.append(&mut leaf);
    }
}

/// The leaves' vectors, in order.
struct Leaves;

impl<T: Send> Fold<T> for Leaves {
    type Acc = Vec<Vec<T>>;
    fn leaf<I: Iterator<Item = T>>(&self, items: I) -> Vec<Vec<T>> {
        vec![items.collect()]
    }
    fn combine(&self, mut left: Vec<Vec<T>>, mut right: Vec<Vec<T>>) -> Vec<Vec<T>> {
        left.append(&mut right);
        left
    }
}
