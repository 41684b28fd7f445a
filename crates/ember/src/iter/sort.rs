//! The parallel sorts behind [`ParallelSliceMut`](super::ParallelSliceMut), in safe code.
//!
//! **Unstable** (`par_sort_unstable*`): quicksort whose parallel levels partition around the
//! median of a sample, then sort both sides with `join`; a side that is not split further is
//! sorted by `slice::sort_unstable*`. The partition is a branch-free Lomuto pass (every
//! position swaps, the boundary moves by the comparison's result), so random keys cost no
//! mispredicted branches. When few items fall below the pivot (many equal keys), a second
//! pass gathers the items equal to the pivot, which need no more sorting; a partition that is
//! still lopsided stops splitting.
//!
//! **Stable** (`par_sort*`): merge sort whose parallel levels halve the slice, sort both
//! halves with `join`, then call the standard stable sort on the whole, which finds the two
//! sorted runs and merges them in one pass. Merges run on one thread each: the last one is a
//! sequential pass over the whole slice.
//!
//! Only the splitting decides where `join` is called, with the same budget as the iterators
//! (`plumbing::Splitter`): pieces split while stolen, never below [`MIN_LEN`] items.

use std::cmp::Ordering;

use super::plumbing::{join_stolen, Splitter};

/// The fewest items of a piece that a parallel sort still splits in two.
const MIN_LEN: usize = 1 << 12;

/// Items sampled to choose a pivot (odd: the median is one of them).
const SAMPLE: usize = 31;

/// An order on `T`, and the standard sorts that follow it.
pub(super) trait Order<T>: Sync {
    fn less(&self, a: &T, b: &T) -> bool;
    fn sort_unstable(&self, v: &mut [T]);
    fn sort_stable(&self, v: &mut [T]);
}

/// `Ord`.
pub(super) struct Natural;

impl<T: Ord> Order<T> for Natural {
    #[inline]
    fn less(&self, a: &T, b: &T) -> bool {
        a < b
    }
    fn sort_unstable(&self, v: &mut [T]) {
        v.sort_unstable();
    }
    fn sort_stable(&self, v: &mut [T]) {
        v.sort();
    }
}

/// A comparator.
pub(super) struct ByCmp<F>(pub(super) F);

impl<T, F: Fn(&T, &T) -> Ordering + Sync> Order<T> for ByCmp<F> {
    #[inline]
    fn less(&self, a: &T, b: &T) -> bool {
        (self.0)(a, b) == Ordering::Less
    }
    fn sort_unstable(&self, v: &mut [T]) {
        v.sort_unstable_by(&self.0);
    }
    fn sort_stable(&self, v: &mut [T]) {
        v.sort_by(&self.0);
    }
}

/// A key function.
pub(super) struct ByKey<F>(pub(super) F);

impl<T, K: Ord, F: Fn(&T) -> K + Sync> Order<T> for ByKey<F> {
    #[inline]
    fn less(&self, a: &T, b: &T) -> bool {
        (self.0)(a) < (self.0)(b)
    }
    fn sort_unstable(&self, v: &mut [T]) {
        v.sort_unstable_by_key(&self.0);
    }
    fn sort_stable(&self, v: &mut [T]) {
        v.sort_by_key(&self.0);
    }
}

/// Sorts `v` by `order`, not keeping the order of equal items.
pub(super) fn unstable<T: Send, O: Order<T>>(v: &mut [T], order: &O) {
    quicksort(v, order, Splitter::new(MIN_LEN), false);
}

/// Sorts `v` by `order`, keeping the order of equal items.
pub(super) fn stable<T: Send, O: Order<T>>(v: &mut [T], order: &O) {
    mergesort(v, order, Splitter::new(MIN_LEN), false);
}

fn quicksort<T: Send, O: Order<T>>(v: &mut [T], order: &O, mut splitter: Splitter, stolen: bool) {
    if !splitter.split(v.len(), stolen) {
        order.sort_unstable(v);
        return;
    }
    let Some((less, greater)) = partition(v, order) else {
        order.sort_unstable(v);
        return;
    };
    join_stolen(
        || quicksort(less, order, splitter, false),
        |stolen| quicksort(greater, order, splitter, stolen),
    );
}

fn mergesort<T: Send, O: Order<T>>(v: &mut [T], order: &O, mut splitter: Splitter, stolen: bool) {
    if splitter.split(v.len(), stolen) {
        let (left, right) = v.split_at_mut(v.len() / 2);
        join_stolen(
            || mergesort(left, order, splitter, false),
            |stolen| mergesort(right, order, splitter, stolen),
        );
    }
    // Two sorted runs after a split: the standard sort merges them in one pass.
    order.sort_stable(v);
}

/// Partitions `v` (at least [`SAMPLE`] items) around the median of a sample: the items
/// below the pivot, then (not returned) the pivot and the items equal to it when they were
/// gathered, then the rest. `None` if the larger part is almost everything.
fn partition<'v, T, O: Order<T>>(v: &'v mut [T], order: &O) -> Option<(&'v mut [T], &'v mut [T])> {
    let len = v.len();
    v.swap(0, sample_median(v, order));
    let (pivot, rest) = v.split_first_mut()?;
    // Branch-free Lomuto: `rest[..below]` holds the items below the pivot seen so far.
    let mut below = 0;
    for i in 0..rest.len() {
        let is_below = order.less(&rest[i], pivot);
        rest.swap(below, i);
        below += usize::from(is_below);
    }
    // The pivot goes between the two parts: `v[..below]` < pivot = `v[below]` <= `v[below + 1..]`.
    v.swap(0, below);
    let (less, rest) = v.split_at_mut(below);
    let (pivot, mut greater) = rest.split_first_mut()?;
    if below < len / 8 {
        // Few items below: many may equal the pivot. Gather them; they are in place.
        let mut equal = 0;
        for i in 0..greater.len() {
            let is_equal = !order.less(pivot, &greater[i]);
            greater.swap(equal, i);
            equal += usize::from(is_equal);
        }
        greater = &mut greater[equal..];
    }
    // Worth a split when the larger part leaves out at least a sixteenth of the items.
    let larger = less.len().max(greater.len());
    (larger <= len - len / 16).then_some((less, greater))
}

/// The index of the median of [`SAMPLE`] items spread evenly over `v`.
fn sample_median<T, O: Order<T>>(v: &[T], order: &O) -> usize {
    let step = v.len() / SAMPLE;
    let mut sample: [usize; SAMPLE] = std::array::from_fn(|i| i * step + step / 2);
    // Insertion sort of the sample's indices by their items.
    for i in 1..SAMPLE {
        let mut j = i;
        while j > 0 && order.less(&v[sample[j]], &v[sample[j - 1]]) {
            sample.swap(j, j - 1);
            j -= 1;
        }
    }
    sample[SAMPLE / 2]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check_partition(mut v: Vec<u32>) {
        let mut expected = v.clone();
        expected.sort_unstable();
        let n = v.len();
        if let Some((less, greater)) = partition(&mut v, &Natural) {
            let (l, g) = (less.len(), greater.len());
            let less_max = less.iter().max().copied();
            let greater_min = greater.iter().min().copied();
            let middle = &v[l..n - g];
            assert!(!middle.is_empty());
            assert!(
                middle.iter().all(|x| *x == middle[0]),
                "the middle is the pivot's value"
            );
            assert!(less_max.is_none_or(|m| m < middle[0]));
            assert!(greater_min.is_none_or(|m| m >= middle[0]));
        }
        v.sort_unstable();
        assert_eq!(v, expected, "a partition is a permutation");
    }

    #[test]
    fn partitions_random_sorted_and_equal_keys() {
        let mut x = 12345u32;
        let random: Vec<u32> = (0..5000)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 17;
                x ^= x << 5;
                x
            })
            .collect();
        check_partition(random.clone());
        check_partition((0..5000).collect());
        check_partition((0..5000).rev().collect());
        check_partition(vec![7; 5000]);
        check_partition(random.iter().map(|x| x % 3).collect());
    }
}
