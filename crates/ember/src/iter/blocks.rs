//! [`ExponentialBlocks`] and [`UniformBlocks`]: an indexed pipeline run as a sequence of
//! blocks, one after another, each split over the pool. A search (`find_first`, `any`)
//! stops before the next block once it has its answer, so it never looks far past it.

use super::plumbing::{bridge, Consumer, Producer, ProducerCallback, Reducer};
use super::traits::{IndexedParallelIterator, ParallelIterator};
use crate::current_num_threads;

/// The block sizes: `Some(n)` blocks of `n` items, `None` blocks that double.
#[derive(Clone, Copy)]
struct Sizes(Option<usize>);

/// The base's producer as one position: its leaf runs the blocks in order.
struct InBlocks<P> {
    base: P,
    sizes: Sizes,
}

impl<P: Producer> Producer for InBlocks<P> {
    type Item = P::Item;
    type IntoIter = P::IntoIter;
    fn len(&self) -> usize {
        1
    }
    fn split_at(self, index: usize) -> (Self, Self) {
        // Only a `chain` splits one position, at an end: one side gets nothing.
        let at = if index == 0 { 0 } else { self.base.len() };
        let (left, right) = self.base.split_at(at);
        let sizes = self.sizes;
        (
            InBlocks { base: left, sizes },
            InBlocks { base: right, sizes },
        )
    }
    fn into_iter(self) -> P::IntoIter {
        self.base.into_iter()
    }
    fn fold_with<C: Consumer<P::Item>>(self, consumer: C) -> C::Result {
        let mut rest = self.base;
        let mut consumer = consumer;
        let mut acc: Option<(C::Result, C::Reducer)> = None;
        let mut block = self
            .sizes
            .0
            .unwrap_or_else(|| current_num_threads().max(1) * 64);
        loop {
            if rest.len() == 0 || consumer.full() {
                let tail = consumer.fold(std::iter::empty());
                return match acc {
                    None => tail,
                    Some((acc, reducer)) => reducer.reduce(acc, tail),
                };
            }
            let size = block.min(rest.len());
            let (here, next) = rest.split_at(size);
            let (this, others, reducer) = consumer.split_at(size);
            let result = bridge(here, this);
            acc = Some(match acc {
                None => (result, reducer),
                Some((acc, previous)) => (previous.reduce(acc, result), reducer),
            });
            rest = next;
            consumer = others;
            if self.sizes.0.is_none() {
                block = block.saturating_mul(2);
            }
        }
    }
}

/// Hands the base's producer on, as one position of blocks.
struct BlocksCallback<CB> {
    callback: CB,
    sizes: Sizes,
}

impl<T, CB: ProducerCallback<T>> ProducerCallback<T> for BlocksCallback<CB> {
    type Output = CB::Output;
    fn callback<P: Producer<Item = T>>(self, base: P) -> CB::Output {
        self.callback.callback(InBlocks {
            base,
            sizes: self.sizes,
        })
    }
}

macro_rules! blocks {
    ($(#[$doc:meta])* $name:ident { $($field:ident)? } => $sizes:expr) => {
        $(#[$doc])*
        #[derive(Clone, Debug)]
        #[must_use = "parallel iterators do nothing until consumed"]
        pub struct $name<I> {
            base: I,
            $($field: usize,)?
        }

        impl<I> $name<I> {
            pub(super) fn new(base: I $(, $field: usize)?) -> Self {
                $name { base $(, $field)? }
            }
        }

        impl<I: IndexedParallelIterator> ParallelIterator for $name<I> {
            type Item = I::Item;
            fn with_producer<CB: ProducerCallback<I::Item>>(self, callback: CB) -> CB::Output {
                #[allow(clippy::redundant_closure_call)]
                let sizes = Sizes(($sizes)(&self));
                self.base.with_producer(BlocksCallback { callback, sizes })
            }
        }
    };
}

blocks! {
    /// [`IndexedParallelIterator::by_exponential_blocks`]: the items in blocks that double
    /// in size, each run in parallel once the one before is done.
    ///
    /// ```
    /// use ember::prelude::*;
    /// let v: Vec<u32> = (0..10_000u32).into_par_iter().by_exponential_blocks().collect();
    /// assert_eq!(v.len(), 10_000);
    /// assert_eq!((0..u32::MAX).into_par_iter().by_exponential_blocks().find_first(|x| *x > 5), Some(6));
    /// ```
    ExponentialBlocks {} => |_: &Self| None
}

blocks! {
    /// [`IndexedParallelIterator::by_uniform_blocks`]: the items in blocks of `block_size`,
    /// each run in parallel once the one before is done.
    ///
    /// ```
    /// use ember::prelude::*;
    /// let v: Vec<u32> = (0..1_000u32).into_par_iter().by_uniform_blocks(100).collect();
    /// assert_eq!(v, (0..1_000).collect::<Vec<_>>());
    /// ```
    UniformBlocks { block_size } => |s: &Self| Some(s.block_size)
}
