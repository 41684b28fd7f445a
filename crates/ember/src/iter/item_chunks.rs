//! [`ItemChunks`] (`chunks`), [`FoldChunks`] and [`FoldChunksWith`]: runs of `size`
//! consecutive items of an indexed pipeline, collected into a `Vec` or folded. One position
//! is one run, so a run never straddles two pieces.

use super::plumbing::{Producer, ProducerCallback};
use super::traits::{IndexedParallelIterator, ParallelIterator};

/// What becomes of one run of items.
trait Run<T>: Copy + Send {
    type Out;
    fn run<I: Iterator<Item = T>>(self, items: I) -> Self::Out;
}

/// `chunks`: the run as a `Vec`.
#[derive(Clone, Copy)]
struct Gather;

impl<T> Run<T> for Gather {
    type Out = Vec<T>;
    fn run<I: Iterator<Item = T>>(self, items: I) -> Vec<T> {
        items.collect()
    }
}

/// `fold_chunks`: the run folded from `identity()`.
struct FoldFrom<'f, ID, F> {
    identity: &'f ID,
    fold_op: &'f F,
}

impl<ID, F> Clone for FoldFrom<'_, ID, F> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<ID, F> Copy for FoldFrom<'_, ID, F> {}

impl<T, U, ID, F> Run<T> for FoldFrom<'_, ID, F>
where
    ID: Fn() -> U + Sync,
    F: Fn(U, T) -> U + Sync,
{
    type Out = U;
    fn run<I: Iterator<Item = T>>(self, items: I) -> U {
        items.fold((self.identity)(), self.fold_op)
    }
}

/// `fold_chunks_with`: the run folded from a clone of `init`.
struct FoldClone<'f, U, F> {
    init: &'f U,
    fold_op: &'f F,
}

impl<U, F> Clone for FoldClone<'_, U, F> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<U, F> Copy for FoldClone<'_, U, F> {}

impl<T, U, F> Run<T> for FoldClone<'_, U, F>
where
    U: Clone + Sync,
    F: Fn(U, T) -> U + Sync,
{
    type Out = U;
    fn run<I: Iterator<Item = T>>(self, items: I) -> U {
        items.fold(self.init.clone(), self.fold_op)
    }
}

/// The base's positions in runs of `size`: one position a run (the last one shorter).
struct Runs<P, R> {
    base: P,
    size: usize,
    run: R,
}

impl<P: Producer, R: Run<P::Item>> Producer for Runs<P, R> {
    type Item = R::Out;
    type IntoIter = RunsIter<P::IntoIter, R>;
    fn len(&self) -> usize {
        self.base.len().div_ceil(self.size)
    }
    fn split_at(self, index: usize) -> (Self, Self) {
        let at = index.saturating_mul(self.size).min(self.base.len());
        let (left, right) = self.base.split_at(at);
        let (size, run) = (self.size, self.run);
        (
            Runs {
                base: left,
                size,
                run,
            },
            Runs {
                base: right,
                size,
                run,
            },
        )
    }
    fn into_iter(self) -> Self::IntoIter {
        RunsIter {
            left: self.base.len(),
            items: self.base.into_iter(),
            size: self.size,
            run: self.run,
        }
    }
}

/// A leaf of [`Runs`].
struct RunsIter<I, R> {
    items: I,
    /// The base items not yet taken.
    left: usize,
    size: usize,
    run: R,
}

impl<I: Iterator, R: Run<I::Item>> Iterator for RunsIter<I, R> {
    type Item = R::Out;
    fn next(&mut self) -> Option<R::Out> {
        if self.left == 0 {
            return None;
        }
        let n = self.size.min(self.left);
        self.left -= n;
        Some(self.run.run(self.items.by_ref().take(n)))
    }
}

/// Wraps the base producer in runs.
struct RunsCallback<CB, R> {
    callback: CB,
    size: usize,
    run: R,
}

impl<T, CB, R> ProducerCallback<T> for RunsCallback<CB, R>
where
    R: Run<T>,
    CB: ProducerCallback<R::Out>,
{
    type Output = CB::Output;
    fn callback<P: Producer<Item = T>>(self, base: P) -> CB::Output {
        self.callback.callback(Runs {
            base,
            size: self.size,
            run: self.run,
        })
    }
}

/// Defines a runs adapter: its struct, and its `ParallelIterator` and
/// `IndexedParallelIterator` impls.
macro_rules! runs_adapter {
    ($(#[$doc:meta])* $name:ident<I $(, $g:ident)*> { $($field:ident: $ty:ty),* }
        item $item:ty; for [$($ig:ident),*]; where [$($bounds:tt)*];
        run |$($bind:ident),*| $run:expr) => {
        $(#[$doc])*
        #[derive(Clone, Debug)]
        #[must_use = "parallel iterators do nothing until consumed"]
        pub struct $name<I $(, $g)*> {
            base: I,
            size: usize,
            $($field: $ty,)*
        }

        impl<I $(, $g)*> $name<I $(, $g)*> {
            pub(super) fn new(base: I, size: usize $(, $field: $ty)*) -> Self {
                assert!(size != 0, "chunk size must not be zero");
                $name { base, size $(, $field)* }
            }
        }

        impl<I: IndexedParallelIterator $(, $g)* $(, $ig)*> ParallelIterator for $name<I $(, $g)*>
        where
            $($bounds)*
        {
            type Item = $item;
            fn with_producer<CB: ProducerCallback<$item>>(self, callback: CB) -> CB::Output {
                let $name { base, size, $($bind),* } = self;
                base.with_producer(RunsCallback { callback, size, run: $run })
            }
            fn opt_len(&self) -> Option<usize> {
                Some(self.len())
            }
        }

        impl<I: IndexedParallelIterator $(, $g)* $(, $ig)*> IndexedParallelIterator
            for $name<I $(, $g)*>
        where
            $($bounds)*
        {
            fn len(&self) -> usize {
                self.base.len().div_ceil(self.size)
            }
        }
    };
}

runs_adapter! {
    /// [`IndexedParallelIterator::chunks`]: runs of `size` consecutive items, as `Vec`s
    /// (the last one shorter).
    ///
    /// ```
    /// use ember::prelude::*;
    /// let v: Vec<Vec<u8>> = (0..5u8).into_par_iter().chunks(2).collect();
    /// assert_eq!(v, [vec![0, 1], vec![2, 3], vec![4]]);
    /// ```
    ItemChunks<I> {} item Vec<I::Item>; for []; where [];
    run | | Gather
}

runs_adapter! {
    /// [`IndexedParallelIterator::fold_chunks`]: runs of `size` consecutive items, each
    /// folded from `identity()`.
    ///
    /// ```
    /// use ember::prelude::*;
    /// let v: Vec<u32> = (0..5u32).into_par_iter().fold_chunks(2, || 0, |a, x| a + x).collect();
    /// assert_eq!(v, [1, 5, 4]);
    /// ```
    FoldChunks<I, ID, F> { identity: ID, fold_op: F } item U; for [U]; where [
        ID: Fn() -> U + Sync + Send,
        F: Fn(U, I::Item) -> U + Sync + Send,
        U: Send,
    ];
    run |identity, fold_op| FoldFrom { identity: &identity, fold_op: &fold_op }
}

runs_adapter! {
    /// [`IndexedParallelIterator::fold_chunks_with`]: runs of `size` consecutive items,
    /// each folded from a clone of `init`.
    ///
    /// ```
    /// use ember::prelude::*;
    /// let v: Vec<u32> = (0..5u32).into_par_iter().fold_chunks_with(2, 10, |a, x| a + x).collect();
    /// assert_eq!(v, [11, 15, 14]);
    /// ```
    FoldChunksWith<I, U, F> { init: U, fold_op: F } item U; for []; where [
        U: Clone + Send + Sync,
        F: Fn(U, I::Item) -> U + Sync + Send,
    ];
    run |init, fold_op| FoldClone { init: &init, fold_op: &fold_op }
}
