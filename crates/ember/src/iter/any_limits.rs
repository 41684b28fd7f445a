//! The adapters that keep or drop items by a count or a condition shared by every piece,
//! in no particular order: [`TakeAny`], [`SkipAny`], [`TakeAnyWhile`], [`SkipAnyWhile`],
//! [`WhileSome`]. Each piece's leaf checks one atomic of the pipeline's; once nothing more
//! can be taken, every leaf stops at its next item.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use super::adapters::{Wrap, WrapCallback};
use super::traits::ParallelIterator;

/// Defines the adapter struct, its `ParallelIterator` impl, and its state's `Wrap` impl
/// (whose leaf is a `Leaf<It, State>` running `$next`).
macro_rules! shared_limit {
    ($(#[$doc:meta])* $name:ident<I $(, $g:ident)*> { $($field:ident: $ty:ty),* }
        item $item:ty; for [$($ig:ident),*]; where [$($bounds:tt)*];
        shared $shared:ty = $init:expr;
        state $state:ident { $($sfield:ident: $sty:ty = $sval:expr),* };) => {
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

        /// The adapter's state in every piece: the shared atomic, and what it was given.
        pub(super) struct $state<'s $(, $g)*> {
            shared: &'s $shared,
            $($sfield: $sty,)*
        }

        impl<'s $(, $g)*> Clone for $state<'s $(, $g)*> {
            fn clone(&self) -> Self {
                *self
            }
        }
        impl<'s $(, $g)*> Copy for $state<'s $(, $g)*> {}

        impl<I $(, $g)* $(, $ig)*> ParallelIterator for $name<I $(, $g)*>
        where
            I: ParallelIterator,
            $($bounds)*
        {
            type Item = $item;
            fn with_producer<CB>(self, callback: CB) -> CB::Output
            where
                CB: super::plumbing::ProducerCallback<$item>,
            {
                #[allow(unused_variables)]
                let $name { base, $($field),* } = self;
                let shared: $shared = $init;
                let extra = $state { shared: &shared, $($sfield: $sval),* };
                base.with_producer(WrapCallback { callback, extra })
            }
        }
    };
}

/// A leaf of one of these adapters: the base's items, and the piece's state.
pub(super) struct Leaf<It, S> {
    items: It,
    state: S,
}

shared_limit! {
    /// [`ParallelIterator::take_any`]: some `n` of the items (which ones, and in what order,
    /// is not fixed).
    ///
    /// ```
    /// use ember::prelude::*;
    /// assert_eq!((0..100u32).into_par_iter().take_any(10).count(), 10);
    /// ```
    TakeAny<I> { n: usize } item I::Item; for []; where [];
    shared AtomicUsize = AtomicUsize::new(0);
    state TakeState { n: usize = n };
}

impl<T, It: Iterator<Item = T>> Iterator for Leaf<It, TakeState<'_>> {
    type Item = T;
    #[inline]
    fn next(&mut self) -> Option<T> {
        let leaf = self;
        let n = leaf.state.n;
        if leaf.state.shared.load(Ordering::Relaxed) >= n {
            return None;
        }
        let item = leaf.items.next()?;
        (leaf.state.shared.fetch_add(1, Ordering::Relaxed) < n).then_some(item)
    }
}

shared_limit! {
    /// [`ParallelIterator::skip_any`]: all but some `n` of the items.
    ///
    /// ```
    /// use ember::prelude::*;
    /// assert_eq!((0..100u32).into_par_iter().skip_any(10).count(), 90);
    /// ```
    SkipAny<I> { n: usize } item I::Item; for []; where [];
    shared AtomicUsize = AtomicUsize::new(0);
    state SkipState { n: usize = n };
}

impl<T, It: Iterator<Item = T>> Iterator for Leaf<It, SkipState<'_>> {
    type Item = T;
    #[inline]
    fn next(&mut self) -> Option<T> {
        let leaf = self;
        let n = leaf.state.n;
        loop {
            let item = leaf.items.next()?;
            if leaf.state.shared.load(Ordering::Relaxed) >= n
                || leaf.state.shared.fetch_add(1, Ordering::Relaxed) >= n
            {
                return Some(item);
            }
        }
    }
}

shared_limit! {
    /// [`ParallelIterator::take_any_while`]: the items up to any one `predicate` rejects:
    /// once it rejects one, every piece stops. Which items are taken depends on the run.
    ///
    /// ```
    /// use ember::prelude::*;
    /// let v: Vec<u32> = (0..100u32).into_par_iter().take_any_while(|x| *x < 200).collect();
    /// assert_eq!(v.len(), 100);
    /// ```
    TakeAnyWhile<I, P> { predicate: P } item I::Item; for []; where [P: Fn(&I::Item) -> bool + Sync + Send];
    shared AtomicBool = AtomicBool::new(false);
    state TakeWhileState { predicate: &'s P = &predicate };
}

impl<T, It: Iterator<Item = T>, P: Fn(&T) -> bool> Iterator for Leaf<It, TakeWhileState<'_, P>> {
    type Item = T;
    #[inline]
    fn next(&mut self) -> Option<T> {
        let leaf = self;
        if leaf.state.shared.load(Ordering::Relaxed) {
            return None;
        }
        let item = leaf.items.next()?;
        if (leaf.state.predicate)(&item) {
            Some(item)
        } else {
            leaf.state.shared.store(true, Ordering::Relaxed);
            None
        }
    }
}

shared_limit! {
    /// [`ParallelIterator::skip_any_while`]: the items from any one `predicate` rejects on:
    /// until it rejects one, each piece drops the items it accepts.
    ///
    /// ```
    /// use ember::prelude::*;
    /// let v: Vec<u32> = (0..100u32).into_par_iter().skip_any_while(|_| false).collect();
    /// assert_eq!(v.len(), 100);
    /// ```
    SkipAnyWhile<I, P> { predicate: P } item I::Item; for []; where [P: Fn(&I::Item) -> bool + Sync + Send];
    shared AtomicBool = AtomicBool::new(false);
    state SkipWhileState { predicate: &'s P = &predicate };
}

impl<T, It: Iterator<Item = T>, P: Fn(&T) -> bool> Iterator for Leaf<It, SkipWhileState<'_, P>> {
    type Item = T;
    #[inline]
    fn next(&mut self) -> Option<T> {
        let leaf = self;
        loop {
            let item = leaf.items.next()?;
            if leaf.state.shared.load(Ordering::Relaxed) || !(leaf.state.predicate)(&item) {
                leaf.state.shared.store(true, Ordering::Relaxed);
                return Some(item);
            }
        }
    }
}

shared_limit! {
    /// [`ParallelIterator::while_some`]: the values of the `Some` items, until any piece
    /// meets a `None`: then every piece stops.
    ///
    /// ```
    /// use ember::prelude::*;
    /// let v: Vec<u32> = (0..10u32).into_par_iter().map(Some).while_some().collect();
    /// assert_eq!(v.len(), 10);
    /// ```
    WhileSome<I> {} item U; for [U]; where [I: ParallelIterator<Item = Option<U>>, U: Send];
    shared AtomicBool = AtomicBool::new(false);
    state WhileSomeState {};
}

impl<T, It: Iterator<Item = Option<T>>> Iterator for Leaf<It, WhileSomeState<'_>> {
    type Item = T;
    #[inline]
    fn next(&mut self) -> Option<T> {
        let leaf = self;
        if leaf.state.shared.load(Ordering::Relaxed) {
            return None;
        }
        match leaf.items.next()? {
            Some(item) => Some(item),
            None => {
                leaf.state.shared.store(true, Ordering::Relaxed);
                None
            }
        }
    }
}

/// Implements `Wrap` for a state whose leaf is a [`Leaf`].
macro_rules! leaf_wrap {
    ($(impl[$($g:tt)*] $state:ty: $input:ty => $item:ty;)*) => {$(
        impl<'s, $($g)*> Wrap<$input> for $state {
            type Item = $item;
            type IntoIter<It: Iterator<Item = $input>> = Leaf<It, Self>;
            fn split(self, _index: usize) -> (Self, Self) {
                (self, self)
            }
            fn wrap<It: Iterator<Item = $input>>(self, items: It) -> Leaf<It, Self> {
                Leaf { items, state: self }
            }
        }
    )*};
}

leaf_wrap! {
    impl[T] TakeState<'s>: T => T;
    impl[T] SkipState<'s>: T => T;
    impl[T, P: Fn(&T) -> bool + Sync] TakeWhileState<'s, P>: T => T;
    impl[T, P: Fn(&T) -> bool + Sync] SkipWhileState<'s, P>: T => T;
    impl[T] WhileSomeState<'s>: Option<T> => T;
}
