//! The standard collections as sources: `into_par_iter()`, `par_iter()`, `par_iter_mut()`
//! and `par_drain()` on `VecDeque`, `HashMap`, `HashSet`, `BTreeMap`, `BTreeSet`,
//! `LinkedList` and `BinaryHeap`.
//!
//! A `VecDeque` lends its two slices (by reference), and a `BinaryHeap` its one. The
//! others cannot be split where they lie, so their items (or references to them) are first
//! gathered into a `Vec`, in the collection's own order, and that `Vec` is split: a pass
//! over the collection on the calling thread, as rayon's do.

use std::collections::{BTreeMap, BTreeSet, BinaryHeap, HashMap, HashSet, LinkedList, VecDeque};
use std::hash::{BuildHasher, Hash};
use std::iter::Chain;

use super::drain::{Drained, ParallelDrainFull};
use super::plumbing::{Producer, ProducerCallback};
use super::slice::SliceIter;
use super::traits::{IndexedParallelIterator, ParallelIterator};
use super::vec::VecIntoIter;

/// Defines a public source type that runs an inner parallel iterator (indexed or not).
macro_rules! delegating_source {
    ($(#[$doc:meta])* $name:ident <$($lt:lifetime,)? $($g:ident),*> ($inner:ty) => $item:ty,
        where [$($bounds:tt)*], indexed: $indexed:tt) => {
        $(#[$doc])*
        #[derive(Debug)]
        #[must_use = "parallel iterators do nothing until consumed"]
        pub struct $name<$($lt,)? $($g),*> {
            inner: $inner,
        }

        impl<$($lt,)? $($g),*> $crate::iter::ParallelIterator for $name<$($lt,)? $($g),*>
        where
            $($bounds)*
        {
            type Item = $item;
            fn with_producer<CB>(self, callback: CB) -> CB::Output
            where
                CB: $crate::iter::plumbing::ProducerCallback<$item>,
            {
                self.inner.with_producer(callback)
            }
            fn opt_len(&self) -> Option<usize> {
                self.inner.opt_len()
            }
        }

        delegating_source!(@indexed $indexed, $name <$($lt,)? $($g),*>, [$($bounds)*]);
    };
    (@indexed false, $name:ident <$($lt:lifetime,)? $($g:ident),*>, [$($bounds:tt)*]) => {};
    (@indexed true, $name:ident <$($lt:lifetime,)? $($g:ident),*>, [$($bounds:tt)*]) => {
        impl<$($lt,)? $($g),*> $crate::iter::IndexedParallelIterator for $name<$($lt,)? $($g),*>
        where
            $($bounds)*
        {
            fn len(&self) -> usize {
                self.inner.len()
            }
        }
    };
}

/// Implements `IntoParallelIterator` for a collection (or a reference to one), with the
/// collection bound to `$source` in `$convert`.
macro_rules! into_par_iter {
    (impl<$($g:tt),*> for $from:ty => $iter:ty, item $item:ty, where [$($bounds:tt)*],
        |$source:ident| $convert:expr) => {
        impl<$($g),*> $crate::iter::IntoParallelIterator for $from
        where
            $($bounds)*
        {
            type Iter = $iter;
            type Item = $item;
            fn into_par_iter(self) -> $iter {
                let $source = self;
                $convert
            }
        }
    };
}

/// The items of `items`, gathered into a `Vec` and lent as `Vec::into_par_iter` lends them.
fn gathered<T, I: IntoIterator<Item = T>>(items: I) -> VecIntoIter<T> {
    VecIntoIter {
        vec: items.into_iter().collect(),
    }
}

delegating_source! {
    /// `map.into_par_iter()` of a `HashMap`: its entries by value, in no particular order.
    ///
    /// ```
    /// use ember::prelude::*;
    /// use std::collections::HashMap;
    /// let m: HashMap<u32, String> = (0..4).map(|i| (i, i.to_string())).collect();
    /// let mut keys: Vec<u32> = m.into_par_iter().map(|(k, _)| k).collect();
    /// keys.sort();
    /// assert_eq!(keys, [0, 1, 2, 3]);
    /// ```
    #[derive(Clone)]
    HashMapIntoIter<K, V>(VecIntoIter<(K, V)>) => (K, V),
    where [K: Send, V: Send], indexed: false
}

delegating_source! {
    /// `map.par_iter()` of a `HashMap`: its entries by reference, in no particular order.
    ///
    /// ```
    /// use ember::prelude::*;
    /// use std::collections::HashMap;
    /// let m: HashMap<&str, u32> = [("a", 1), ("b", 2)].into_iter().collect();
    /// assert_eq!(m.par_iter().map(|(_, v)| *v).sum::<u32>(), 3);
    /// ```
    #[derive(Clone)]
    HashMapIter<'a, K, V>(VecIntoIter<(&'a K, &'a V)>) => (&'a K, &'a V),
    where [K: Sync + 'a, V: Sync + 'a], indexed: false
}

delegating_source! {
    /// `map.par_iter_mut()` of a `HashMap`: its keys by reference and values by mutable
    /// reference, in no particular order.
    ///
    /// ```
    /// use ember::prelude::*;
    /// use std::collections::HashMap;
    /// let mut m: HashMap<u32, u32> = (0..10).map(|i| (i, i)).collect();
    /// m.par_iter_mut().for_each(|(k, v)| *v += k);
    /// assert_eq!(m[&7], 14);
    /// ```
    HashMapIterMut<'a, K, V>(VecIntoIter<(&'a K, &'a mut V)>) => (&'a K, &'a mut V),
    where [K: Sync + 'a, V: Send + 'a], indexed: false
}

into_par_iter!(impl<K, V, S> for HashMap<K, V, S> => HashMapIntoIter<K, V>, item (K, V),
    where [K: Send + Eq + Hash, V: Send, S: BuildHasher], |map| HashMapIntoIter { inner: gathered(map) });
into_par_iter!(impl<'a, K, V, S> for &'a HashMap<K, V, S> => HashMapIter<'a, K, V>,
    item (&'a K, &'a V), where [K: Sync + Eq + Hash, V: Sync, S: BuildHasher],
    |map| HashMapIter { inner: gathered(map) });
into_par_iter!(impl<'a, K, V, S> for &'a mut HashMap<K, V, S> => HashMapIterMut<'a, K, V>,
    item (&'a K, &'a mut V), where [K: Sync + Eq + Hash, V: Send, S: BuildHasher],
    |map| HashMapIterMut { inner: gathered(map) });

delegating_source! {
    /// `set.into_par_iter()` of a `HashSet`: its items by value, in no particular order.
    ///
    /// ```
    /// use ember::prelude::*;
    /// use std::collections::HashSet;
    /// let s: HashSet<u64> = (1..=10).collect();
    /// assert_eq!(s.into_par_iter().sum::<u64>(), 55);
    /// ```
    #[derive(Clone)]
    HashSetIntoIter<T>(VecIntoIter<T>) => T,
    where [T: Send], indexed: false
}

delegating_source! {
    /// `set.par_iter()` of a `HashSet`: its items by reference, in no particular order.
    ///
    /// ```
    /// use ember::prelude::*;
    /// use std::collections::HashSet;
    /// let s: HashSet<u64> = (1..=10).collect();
    /// assert_eq!(s.par_iter().max(), Some(&10));
    /// ```
    #[derive(Clone)]
    HashSetIter<'a, T>(VecIntoIter<&'a T>) => &'a T,
    where [T: Sync + 'a], indexed: false
}

into_par_iter!(impl<T, S> for HashSet<T, S> => HashSetIntoIter<T>, item T,
    where [T: Send + Eq + Hash, S: BuildHasher], |set| HashSetIntoIter { inner: gathered(set) });
into_par_iter!(impl<'a, T, S> for &'a HashSet<T, S> => HashSetIter<'a, T>, item &'a T,
    where [T: Sync + Eq + Hash, S: BuildHasher], |set| HashSetIter { inner: gathered(set) });

delegating_source! {
    /// `map.into_par_iter()` of a `BTreeMap`: its entries by value (`collect` keeps the
    /// map's order).
    ///
    /// ```
    /// use ember::prelude::*;
    /// use std::collections::BTreeMap;
    /// let m: BTreeMap<u8, char> = [(2, 'b'), (1, 'a')].into_iter().collect();
    /// let v: Vec<(u8, char)> = m.into_par_iter().collect();
    /// assert_eq!(v, [(1, 'a'), (2, 'b')]);
    /// ```
    #[derive(Clone)]
    BTreeMapIntoIter<K, V>(VecIntoIter<(K, V)>) => (K, V),
    where [K: Send, V: Send], indexed: false
}

delegating_source! {
    /// `map.par_iter()` of a `BTreeMap`: its entries by reference.
    ///
    /// ```
    /// use ember::prelude::*;
    /// use std::collections::BTreeMap;
    /// let m: BTreeMap<u8, u32> = (0..5).map(|i| (i, 10)).collect();
    /// assert_eq!(m.par_iter().map(|(_, v)| v).sum::<u32>(), 50);
    /// ```
    #[derive(Clone)]
    BTreeMapIter<'a, K, V>(VecIntoIter<(&'a K, &'a V)>) => (&'a K, &'a V),
    where [K: Sync + 'a, V: Sync + 'a], indexed: false
}

delegating_source! {
    /// `map.par_iter_mut()` of a `BTreeMap`: its keys by reference, values by mutable
    /// reference.
    ///
    /// ```
    /// use ember::prelude::*;
    /// use std::collections::BTreeMap;
    /// let mut m: BTreeMap<u8, u32> = (0..5).map(|i| (i, 1)).collect();
    /// m.par_iter_mut().for_each(|(k, v)| *v = u32::from(*k) * 2);
    /// assert_eq!(m[&4], 8);
    /// ```
    BTreeMapIterMut<'a, K, V>(VecIntoIter<(&'a K, &'a mut V)>) => (&'a K, &'a mut V),
    where [K: Sync + 'a, V: Send + 'a], indexed: false
}

into_par_iter!(impl<K, V> for BTreeMap<K, V> => BTreeMapIntoIter<K, V>, item (K, V),
    where [K: Send + Ord, V: Send], |map| BTreeMapIntoIter { inner: gathered(map) });
into_par_iter!(impl<'a, K, V> for &'a BTreeMap<K, V> => BTreeMapIter<'a, K, V>,
    item (&'a K, &'a V), where [K: Sync + Ord, V: Sync],
    |map| BTreeMapIter { inner: gathered(map) });
into_par_iter!(impl<'a, K, V> for &'a mut BTreeMap<K, V> => BTreeMapIterMut<'a, K, V>,
    item (&'a K, &'a mut V), where [K: Sync + Ord, V: Send],
    |map| BTreeMapIterMut { inner: gathered(map) });

delegating_source! {
    /// `set.into_par_iter()` of a `BTreeSet`: its items by value (`collect` keeps the
    /// set's order).
    ///
    /// ```
    /// use ember::prelude::*;
    /// use std::collections::BTreeSet;
    /// let s: BTreeSet<i32> = [3, 1, 2].into_iter().collect();
    /// assert_eq!(s.into_par_iter().collect::<Vec<_>>(), [1, 2, 3]);
    /// ```
    #[derive(Clone)]
    BTreeSetIntoIter<T>(VecIntoIter<T>) => T,
    where [T: Send], indexed: false
}

delegating_source! {
    /// `set.par_iter()` of a `BTreeSet`: its items by reference.
    ///
    /// ```
    /// use ember::prelude::*;
    /// use std::collections::BTreeSet;
    /// let s: BTreeSet<i32> = [3, 1, 2].into_iter().collect();
    /// assert_eq!(s.par_iter().min(), Some(&1));
    /// ```
    #[derive(Clone)]
    BTreeSetIter<'a, T>(VecIntoIter<&'a T>) => &'a T,
    where [T: Sync + 'a], indexed: false
}

into_par_iter!(impl<T> for BTreeSet<T> => BTreeSetIntoIter<T>, item T,
    where [T: Send + Ord], |set| BTreeSetIntoIter { inner: gathered(set) });
into_par_iter!(impl<'a, T> for &'a BTreeSet<T> => BTreeSetIter<'a, T>, item &'a T,
    where [T: Sync + Ord], |set| BTreeSetIter { inner: gathered(set) });

delegating_source! {
    /// `list.into_par_iter()` of a `LinkedList`: its items by value (`collect` keeps the
    /// list's order).
    ///
    /// ```
    /// use ember::prelude::*;
    /// use std::collections::LinkedList;
    /// let l: LinkedList<u8> = (1..=3).collect();
    /// assert_eq!(l.into_par_iter().map(|x| x * 2).collect::<Vec<_>>(), [2, 4, 6]);
    /// ```
    #[derive(Clone)]
    LinkedListIntoIter<T>(VecIntoIter<T>) => T,
    where [T: Send], indexed: false
}

delegating_source! {
    /// `list.par_iter()` of a `LinkedList`: its items by reference.
    ///
    /// ```
    /// use ember::prelude::*;
    /// use std::collections::LinkedList;
    /// let l: LinkedList<u8> = (1..=3).collect();
    /// assert_eq!(l.par_iter().count(), 3);
    /// ```
    #[derive(Clone)]
    LinkedListIter<'a, T>(VecIntoIter<&'a T>) => &'a T,
    where [T: Sync + 'a], indexed: false
}

delegating_source! {
    /// `list.par_iter_mut()` of a `LinkedList`: its items by mutable reference.
    ///
    /// ```
    /// use ember::prelude::*;
    /// use std::collections::LinkedList;
    /// let mut l: LinkedList<u8> = (1..=3).collect();
    /// l.par_iter_mut().for_each(|x| *x += 1);
    /// assert_eq!(l.into_iter().collect::<Vec<_>>(), [2, 3, 4]);
    /// ```
    LinkedListIterMut<'a, T>(VecIntoIter<&'a mut T>) => &'a mut T,
    where [T: Send + 'a], indexed: false
}

into_par_iter!(impl<T> for LinkedList<T> => LinkedListIntoIter<T>, item T,
    where [T: Send], |list| LinkedListIntoIter { inner: gathered(list) });
into_par_iter!(impl<'a, T> for &'a LinkedList<T> => LinkedListIter<'a, T>, item &'a T,
    where [T: Sync], |list| LinkedListIter { inner: gathered(list) });
into_par_iter!(impl<'a, T> for &'a mut LinkedList<T> => LinkedListIterMut<'a, T>,
    item &'a mut T, where [T: Send], |list| LinkedListIterMut { inner: gathered(list) });

delegating_source! {
    /// `heap.into_par_iter()` of a `BinaryHeap`: its items by value, in no particular
    /// order.
    ///
    /// ```
    /// use ember::prelude::*;
    /// use std::collections::BinaryHeap;
    /// let h: BinaryHeap<u32> = (1..=4).collect();
    /// assert_eq!(h.into_par_iter().sum::<u32>(), 10);
    /// ```
    #[derive(Clone)]
    BinaryHeapIntoIter<T>(VecIntoIter<T>) => T,
    where [T: Send], indexed: true
}

delegating_source! {
    /// `heap.par_iter()` of a `BinaryHeap`: its items by reference, in no particular order.
    ///
    /// ```
    /// use ember::prelude::*;
    /// use std::collections::BinaryHeap;
    /// let h: BinaryHeap<u32> = (1..=4).collect();
    /// assert_eq!(h.par_iter().max(), Some(&4));
    /// ```
    #[derive(Clone)]
    BinaryHeapIter<'a, T>(SliceIter<'a, T>) => &'a T,
    where [T: Sync + 'a], indexed: true
}

into_par_iter!(impl<T> for BinaryHeap<T> => BinaryHeapIntoIter<T>, item T,
    where [T: Send + Ord], |heap| BinaryHeapIntoIter { inner: heap.into_vec().into_par_iter() });
into_par_iter!(impl<'a, T> for &'a BinaryHeap<T> => BinaryHeapIter<'a, T>, item &'a T,
    where [T: Sync + Ord], |heap| BinaryHeapIter { inner: heap.as_slice().into_par_iter() });

delegating_source! {
    /// `deque.into_par_iter()` of a `VecDeque`: its items by value, in order.
    ///
    /// ```
    /// use ember::prelude::*;
    /// use std::collections::VecDeque;
    /// let mut d: VecDeque<u8> = (2..4).collect();
    /// d.push_front(1);
    /// assert_eq!(d.into_par_iter().collect::<Vec<_>>(), [1, 2, 3]);
    /// ```
    #[derive(Clone)]
    VecDequeIntoIter<T>(VecIntoIter<T>) => T,
    where [T: Send], indexed: true
}

into_par_iter!(impl<T> for VecDeque<T> => VecDequeIntoIter<T>, item T,
    where [T: Send], |deque| VecDequeIntoIter { inner: Vec::from(deque).into_par_iter() });

/// The two slices of a `VecDeque`, one after the other.
struct Halves<P> {
    front: P,
    back: P,
}

impl<P: Producer> Producer for Halves<P> {
    type Item = P::Item;
    type IntoIter = Chain<P::IntoIter, P::IntoIter>;
    fn len(&self) -> usize {
        self.front.len() + self.back.len()
    }
    fn split_at(self, index: usize) -> (Self, Self) {
        let front_len = self.front.len();
        if index <= front_len {
            let (front, rest) = self.front.split_at(index);
            let (none, back) = self.back.split_at(0);
            (Halves { front, back: none }, Halves { front: rest, back })
        } else {
            let (back, rest) = self.back.split_at(index - front_len);
            let (front, none) = self.front.split_at(front_len);
            (
                Halves { front, back },
                Halves {
                    front: none,
                    back: rest,
                },
            )
        }
    }
    fn into_iter(self) -> Self::IntoIter {
        self.front.into_iter().chain(self.back.into_iter())
    }
}

/// `deque.par_iter()` of a `VecDeque`: its items by reference, in order.
///
/// ```
/// use ember::prelude::*;
/// use std::collections::VecDeque;
/// let mut d: VecDeque<u32> = (2..=4).collect();
/// d.push_front(1);
/// assert_eq!(d.par_iter().map(|x| x * 10).collect::<Vec<_>>(), [10, 20, 30, 40]);
/// ```
#[derive(Debug)]
#[must_use = "parallel iterators do nothing until consumed"]
pub struct VecDequeIter<'a, T> {
    front: &'a [T],
    back: &'a [T],
}

impl<T> Clone for VecDequeIter<'_, T> {
    fn clone(&self) -> Self {
        VecDequeIter { ..*self }
    }
}

impl<'a, T: Sync + 'a> ParallelIterator for VecDequeIter<'a, T> {
    type Item = &'a T;
    fn with_producer<CB: ProducerCallback<&'a T>>(self, callback: CB) -> CB::Output {
        callback.callback(Halves {
            front: self.front,
            back: self.back,
        })
    }
    fn opt_len(&self) -> Option<usize> {
        Some(self.len())
    }
}

impl<'a, T: Sync + 'a> IndexedParallelIterator for VecDequeIter<'a, T> {
    fn len(&self) -> usize {
        self.front.len() + self.back.len()
    }
}

/// `deque.par_iter_mut()` of a `VecDeque`: its items by mutable reference, in order.
///
/// ```
/// use ember::prelude::*;
/// use std::collections::VecDeque;
/// let mut d: VecDeque<u32> = (2..=4).collect();
/// d.push_front(1);
/// d.par_iter_mut().for_each(|x| *x *= 2);
/// assert_eq!(d, [2, 4, 6, 8]);
/// ```
#[derive(Debug)]
#[must_use = "parallel iterators do nothing until consumed"]
pub struct VecDequeIterMut<'a, T> {
    front: &'a mut [T],
    back: &'a mut [T],
}

impl<'a, T: Send + 'a> ParallelIterator for VecDequeIterMut<'a, T> {
    type Item = &'a mut T;
    fn with_producer<CB: ProducerCallback<&'a mut T>>(self, callback: CB) -> CB::Output {
        callback.callback(Halves {
            front: self.front,
            back: self.back,
        })
    }
    fn opt_len(&self) -> Option<usize> {
        Some(self.len())
    }
}

impl<'a, T: Send + 'a> IndexedParallelIterator for VecDequeIterMut<'a, T> {
    fn len(&self) -> usize {
        self.front.len() + self.back.len()
    }
}

into_par_iter!(impl<'a, T> for &'a VecDeque<T> => VecDequeIter<'a, T>, item &'a T,
where [T: Sync], |deque| {
    let (front, back) = deque.as_slices();
    VecDequeIter { front, back }
});
into_par_iter!(impl<'a, T> for &'a mut VecDeque<T> => VecDequeIterMut<'a, T>, item &'a mut T,
where [T: Send], |deque| {
    let (front, back) = deque.as_mut_slices();
    VecDequeIterMut { front, back }
});

impl<'a, K: Send, V: Send, S> ParallelDrainFull for &'a mut HashMap<K, V, S> {
    type Iter = Drained<'a, (K, V)>;
    type Item = (K, V);
    fn par_drain(self) -> Self::Iter {
        Drained::new(self.drain().collect())
    }
}

impl<'a, T: Send, S> ParallelDrainFull for &'a mut HashSet<T, S> {
    type Iter = Drained<'a, T>;
    type Item = T;
    fn par_drain(self) -> Self::Iter {
        Drained::new(self.drain().collect())
    }
}

impl<'a, T: Send> ParallelDrainFull for &'a mut BinaryHeap<T> {
    type Iter = Drained<'a, T>;
    type Item = T;
    fn par_drain(self) -> Self::Iter {
        Drained::new(self.drain().collect())
    }
}
