//! The adapters that act on one item at a time, each a [`Wrap`] of its base's producer:
//! [`Inspect`], [`Copied`], [`Cloned`], [`Update`], [`FilterMap`], [`MapWith`], [`MapInit`],
//! [`PanicFuse`]. A leaf runs the matching sequential iterator over the base's leaf.

use std::sync::atomic::{AtomicBool, Ordering};

use super::adapters::{Wrap, WrapCallback};
use super::plumbing::ProducerCallback;
use super::traits::{IndexedParallelIterator, ParallelIterator};

/// Defines an adapter struct over `base` plus `fields`, whose `with_producer` wraps the base's
/// producer with the state `$extra` builds from the fields, indexed when the base is
/// (unless `unindexed`).
macro_rules! adapter {
    ($(#[$doc:meta])* $name:ident<I $(, $g:ident)*> { $($field:ident: $ty:ty),* }
        item $item:ty; $(for [$($ig:ident),*];)? where [$($bounds:tt)*];
        extra |$($bind:ident),*| $extra:expr; $($indexed:ident)?) => {
        $(#[$doc])*
        #[derive(Clone, Debug)]
        #[must_use = "parallel iterators do nothing until consumed"]
        pub struct $name<I $(, $g)*> {
            base: I,
            $($field: $ty,)*
        }

        impl<I $(, $g)*> $name<I $(, $g)*> {
            pub(super) fn new(base: I $(, $field: $ty)*) -> Self {
                $name { base $(, $field)* }
            }
        }

        impl<I $(, $g)* $($(, $ig)*)?> $crate::iter::ParallelIterator
            for $name<I $(, $g)*>
        where
            I: $crate::iter::ParallelIterator,
            $($bounds)*
        {
            type Item = $item;

            fn with_producer<CB>(self, callback: CB) -> CB::Output
            where
                CB: $crate::iter::plumbing::ProducerCallback<$item>,
            {
                let $name { base, $($bind),* } = self;
                base.with_producer($crate::iter::adapters::WrapCallback { callback, extra: $extra })
            }

            fn opt_len(&self) -> Option<usize> {
                adapter!(@opt_len self $($indexed)?)
            }
        }

        adapter!(@indexed $name<I $(, $g)*> [$($($ig),*)?] [$($bounds)*] $($indexed)?);
    };
    (@opt_len $self:ident indexed) => { $self.base.opt_len() };
    (@opt_len $self:ident) => { None };
    (@indexed $name:ident<I $(, $g:ident)*> [$($ig:ident),*] [$($bounds:tt)*] indexed) => {
        impl<I: $crate::iter::IndexedParallelIterator $(, $g)* $(, $ig)*>
            $crate::iter::IndexedParallelIterator
            for $name<I $(, $g)*>
        where
            $($bounds)*
        {
            fn len(&self) -> usize {
                self.base.len()
            }
        }
    };
    (@indexed $name:ident<I $(, $g:ident)*> [$($ig:ident),*] [$($bounds:tt)*]) => {};
}
pub(super) use adapter;

/// A state shared by reference by every piece (a closure).
struct Shared<'f, F>(&'f F);

impl<F> Clone for Shared<'_, F> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<F> Copy for Shared<'_, F> {}

/// `inspect`'s state.
struct InspectFn<'f, F>(Shared<'f, F>);

impl<'f, T, F: Fn(&T) + Sync> Wrap<T> for InspectFn<'f, F> {
    type Item = T;
    type IntoIter<It: Iterator<Item = T>> = std::iter::Inspect<It, &'f F>;
    fn split(self, _index: usize) -> (Self, Self) {
        (InspectFn(self.0), InspectFn(self.0))
    }
    fn wrap<It: Iterator<Item = T>>(self, items: It) -> Self::IntoIter<It> {
        items.inspect(self.0 .0)
    }
}

adapter! {
    /// [`ParallelIterator::inspect`]: calls a function on a reference to every item.
    ///
    /// ```
    /// use ember::prelude::*;
    /// use std::sync::atomic::{AtomicUsize, Ordering};
    /// let seen = AtomicUsize::new(0);
    /// let sum: u32 = (0..10u32).into_par_iter().inspect(|_| { seen.fetch_add(1, Ordering::Relaxed); }).sum();
    /// assert_eq!((sum, seen.into_inner()), (45, 10));
    /// ```
    Inspect<I, F> { f: F } item I::Item; where [F: Fn(&I::Item) + Sync + Send];
    extra |f| InspectFn(Shared(&f)); indexed
}

/// `copied`'s and `cloned`'s state: clones items out of references (a copy, for `Copy` ones).
struct Deref;

impl<'a, T: Clone + 'a> Wrap<&'a T> for Deref {
    type Item = T;
    type IntoIter<It: Iterator<Item = &'a T>> = std::iter::Cloned<It>;
    fn split(self, _index: usize) -> (Self, Self) {
        (Deref, Deref)
    }
    fn wrap<It: Iterator<Item = &'a T>>(self, items: It) -> Self::IntoIter<It> {
        items.cloned()
    }
}

/// [`ParallelIterator::copied`]: copies the items out of references.
///
/// ```
/// use ember::prelude::*;
/// let v = vec![1, 2, 3];
/// let w: Vec<i32> = v.par_iter().copied().collect();
/// assert_eq!(w, v);
/// ```
#[derive(Clone, Debug)]
#[must_use = "parallel iterators do nothing until consumed"]
pub struct Copied<I> {
    base: I,
}

/// [`ParallelIterator::cloned`]: clones the items out of references.
///
/// ```
/// use ember::prelude::*;
/// let v = vec![String::from("a")];
/// let w: Vec<String> = v.par_iter().cloned().collect();
/// assert_eq!(w, v);
/// ```
#[derive(Clone, Debug)]
#[must_use = "parallel iterators do nothing until consumed"]
pub struct Cloned<I> {
    base: I,
}

macro_rules! deref_adapter {
    ($name:ident, $bound:ident) => {
        impl<I> $name<I> {
            pub(super) fn new(base: I) -> Self {
                $name { base }
            }
        }

        impl<'a, T, I> ParallelIterator for $name<I>
        where
            I: ParallelIterator<Item = &'a T>,
            T: $bound + Send + Sync + 'a,
        {
            type Item = T;
            fn with_producer<CB: ProducerCallback<T>>(self, callback: CB) -> CB::Output {
                self.base.with_producer(WrapCallback {
                    callback,
                    extra: Deref,
                })
            }
            fn opt_len(&self) -> Option<usize> {
                self.base.opt_len()
            }
        }

        impl<'a, T, I> IndexedParallelIterator for $name<I>
        where
            I: IndexedParallelIterator<Item = &'a T>,
            T: $bound + Send + Sync + 'a,
        {
            fn len(&self) -> usize {
                self.base.len()
            }
        }
    };
}

deref_adapter!(Copied, Copy);
deref_adapter!(Cloned, Clone);

/// A leaf of `map_with`, `map_init` and `update`: calls `f` with a state of the leaf's own.
pub(super) struct WithState<It, S, F> {
    items: It,
    state: S,
    f: F,
}

impl<It: Iterator, S, R, F: Fn(&mut S, It::Item) -> R> Iterator for WithState<It, S, F> {
    type Item = R;
    fn next(&mut self) -> Option<R> {
        let item = self.items.next()?;
        Some((self.f)(&mut self.state, item))
    }
    fn size_hint(&self) -> (usize, Option<usize>) {
        self.items.size_hint()
    }
    fn fold<B, G: FnMut(B, R) -> B>(self, init: B, mut g: G) -> B {
        let WithState {
            items,
            mut state,
            f,
        } = self;
        items.fold(init, move |acc, item| g(acc, f(&mut state, item)))
    }
}

/// `map_with`'s state: the value each piece clones, and the function.
struct CloneEach<'f, S, F>(S, &'f F);

impl<'f, T, S, R, F> Wrap<T> for CloneEach<'f, S, F>
where
    S: Clone + Send,
    F: Fn(&mut S, T) -> R + Sync,
{
    type Item = R;
    type IntoIter<It: Iterator<Item = T>> = WithState<It, S, &'f F>;
    fn split(self, _index: usize) -> (Self, Self) {
        (CloneEach(self.0.clone(), self.1), self)
    }
    fn wrap<It: Iterator<Item = T>>(self, items: It) -> Self::IntoIter<It> {
        WithState {
            items,
            state: self.0,
            f: self.1,
        }
    }
}

adapter! {
    /// [`ParallelIterator::map_with`]: maps with a mutable state, cloned for every piece.
    ///
    /// ```
    /// use ember::prelude::*;
    /// let v: Vec<u32> = (0..4u32).into_par_iter().map_with(10, |ten, x| x + *ten).collect();
    /// assert_eq!(v, [10, 11, 12, 13]);
    /// ```
    MapWith<I, S, F> { init: S, f: F } item R; for [R]; where [
        S: Clone + Send,
        F: Fn(&mut S, I::Item) -> R + Sync + Send,
        R: Send,
    ];
    extra |init, f| CloneEach(init, &f); indexed
}

/// `map_init`'s state: the function that makes each piece's state, and the map.
struct InitEach<'f, INIT, F>(&'f INIT, &'f F);

impl<'f, T, S, R, INIT, F> Wrap<T> for InitEach<'f, INIT, F>
where
    INIT: Fn() -> S + Sync,
    F: Fn(&mut S, T) -> R + Sync,
{
    type Item = R;
    type IntoIter<It: Iterator<Item = T>> = WithState<It, S, &'f F>;
    fn split(self, _index: usize) -> (Self, Self) {
        (InitEach(self.0, self.1), self)
    }
    fn wrap<It: Iterator<Item = T>>(self, items: It) -> Self::IntoIter<It> {
        WithState {
            items,
            state: (self.0)(),
            f: self.1,
        }
    }
}

adapter! {
    /// [`ParallelIterator::map_init`]: maps with a mutable state that `init` makes once
    /// per piece (a buffer, a random generator).
    ///
    /// ```
    /// use ember::prelude::*;
    /// let v: Vec<usize> = (0..3usize)
    ///     .into_par_iter()
    ///     .map_init(Vec::new, |buf: &mut Vec<usize>, x| { buf.push(x); x * 2 })
    ///     .collect();
    /// assert_eq!(v, [0, 2, 4]);
    /// ```
    MapInit<I, INIT, F> { init: INIT, f: F } item R; for [S, R]; where [
        INIT: Fn() -> S + Sync + Send,
        F: Fn(&mut S, I::Item) -> R + Sync + Send,
        R: Send,
    ];
    extra |init, f| InitEach(&init, &f); indexed
}

/// `update`'s state: the function, called on each item in place.
struct UpdateFn<'f, F>(&'f F);

impl<'f, T, F: Fn(&mut T) + Sync> Wrap<T> for UpdateFn<'f, F> {
    type Item = T;
    type IntoIter<It: Iterator<Item = T>> = UpdateLeaf<'f, It, F>;
    fn split(self, _index: usize) -> (Self, Self) {
        (UpdateFn(self.0), UpdateFn(self.0))
    }
    fn wrap<It: Iterator<Item = T>>(self, items: It) -> Self::IntoIter<It> {
        UpdateLeaf { items, f: self.0 }
    }
}

/// A leaf of `update`.
pub(super) struct UpdateLeaf<'f, It, F> {
    items: It,
    f: &'f F,
}

impl<It: Iterator, F: Fn(&mut It::Item)> Iterator for UpdateLeaf<'_, It, F> {
    type Item = It::Item;
    fn next(&mut self) -> Option<It::Item> {
        let mut item = self.items.next()?;
        (self.f)(&mut item);
        Some(item)
    }
    fn size_hint(&self) -> (usize, Option<usize>) {
        self.items.size_hint()
    }
    fn fold<B, G: FnMut(B, It::Item) -> B>(self, init: B, mut g: G) -> B {
        let f = self.f;
        self.items.fold(init, move |acc, mut item| {
            f(&mut item);
            g(acc, item)
        })
    }
}

adapter! {
    /// [`ParallelIterator::update`]: changes every item in place with a function.
    ///
    /// ```
    /// use ember::prelude::*;
    /// let v: Vec<Vec<u8>> = vec![vec![1], vec![2]].into_par_iter().update(|v| v.push(0)).collect();
    /// assert_eq!(v, [[1, 0], [2, 0]]);
    /// ```
    Update<I, F> { f: F } item I::Item; where [F: Fn(&mut I::Item) + Sync + Send];
    extra |f| UpdateFn(&f); indexed
}

/// `filter_map`'s state.
struct FilterMapFn<'f, F>(&'f F);

impl<'f, T, R, F: Fn(T) -> Option<R> + Sync> Wrap<T> for FilterMapFn<'f, F> {
    type Item = R;
    type IntoIter<It: Iterator<Item = T>> = std::iter::FilterMap<It, &'f F>;
    fn split(self, _index: usize) -> (Self, Self) {
        (FilterMapFn(self.0), FilterMapFn(self.0))
    }
    fn wrap<It: Iterator<Item = T>>(self, items: It) -> Self::IntoIter<It> {
        items.filter_map(self.0)
    }
}

adapter! {
    /// [`ParallelIterator::filter_map`]: maps every item to an `Option` and keeps the
    /// `Some`s. Not indexed, like `filter`; `collect` keeps the order.
    ///
    /// ```
    /// use ember::prelude::*;
    /// let v: Vec<u32> = ["1", "x", "3"].par_iter().filter_map(|s| s.parse().ok()).collect();
    /// assert_eq!(v, [1, 3]);
    /// ```
    FilterMap<I, F> { f: F } item R; for [R]; where [F: Fn(I::Item) -> Option<R> + Sync + Send, R: Send];
    extra |f| FilterMapFn(&f);
}

/// `panic_fuse`'s state: whether some piece panicked.
struct Fuse<'a>(&'a AtomicBool);

impl<'a, T> Wrap<T> for Fuse<'a> {
    type Item = T;
    type IntoIter<It: Iterator<Item = T>> = FuseLeaf<'a, It>;
    fn split(self, _index: usize) -> (Self, Self) {
        (Fuse(self.0), Fuse(self.0))
    }
    fn wrap<It: Iterator<Item = T>>(self, items: It) -> Self::IntoIter<It> {
        FuseLeaf {
            items,
            panicked: self.0,
        }
    }
}

/// A leaf of `panic_fuse`: ends once some piece panicked, and says so if dropped by a panic.
pub(super) struct FuseLeaf<'a, It> {
    items: It,
    panicked: &'a AtomicBool,
}

impl<It: Iterator> Iterator for FuseLeaf<'_, It> {
    type Item = It::Item;
    fn next(&mut self) -> Option<It::Item> {
        if self.panicked.load(Ordering::Relaxed) {
            return None;
        }
        self.items.next()
    }
}

impl<It> Drop for FuseLeaf<'_, It> {
    fn drop(&mut self) {
        // A leaf dropped while unwinding is one whose consumer (or closure) panicked.
        if std::thread::panicking() {
            self.panicked.store(true, Ordering::Relaxed);
        }
    }
}

/// [`ParallelIterator::panic_fuse`]: once a piece panics, the others stop at their next
/// item, so that the panic reaches the caller sooner.
///
/// ```
/// use ember::prelude::*;
/// let total: u64 = (0..1_000u64).into_par_iter().panic_fuse().sum();
/// assert_eq!(total, 499_500);
/// ```
#[derive(Clone, Debug)]
#[must_use = "parallel iterators do nothing until consumed"]
pub struct PanicFuse<I> {
    base: I,
}

impl<I> PanicFuse<I> {
    pub(super) fn new(base: I) -> Self {
        PanicFuse { base }
    }
}

impl<I: ParallelIterator> ParallelIterator for PanicFuse<I> {
    type Item = I::Item;
    fn with_producer<CB: ProducerCallback<I::Item>>(self, callback: CB) -> CB::Output {
        let panicked = AtomicBool::new(false);
        self.base.with_producer(WrapCallback {
            callback,
            extra: Fuse(&panicked),
        })
    }
    fn opt_len(&self) -> Option<usize> {
        self.base.opt_len()
    }
}

// A fused leaf ends early only while a panic is on its way to the caller, so the pipeline
// keeps its length otherwise.
impl<I: IndexedParallelIterator> IndexedParallelIterator for PanicFuse<I> {
    fn len(&self) -> usize {
        self.base.len()
    }
}
