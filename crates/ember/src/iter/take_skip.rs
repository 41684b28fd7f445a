//! The adapters that reshape an indexed pipeline's positions: [`Take`], [`Skip`],
//! [`StepBy`], [`Rev`]. Each cuts or re-indexes its base's producer, so that the pieces
//! still split anywhere.

use super::fold::{self, ForEach};
use super::plumbing::{Producer, ProducerCallback};
use super::traits::{IndexedParallelIterator, ParallelIterator};

/// Defines an indexed adapter over `base` and one `usize` field, whose producer is `$cut`
/// applied to the base's producer, and whose length is `$len` of the base's.
macro_rules! reshape {
    ($(#[$doc:meta])* $name:ident { $n:ident } len |$l:ident| $len:expr;
        callback |$p:ident, $cb:ident| $cut:expr) => {
        $(#[$doc])*
        #[derive(Clone, Debug)]
        #[must_use = "parallel iterators do nothing until consumed"]
        pub struct $name<I> {
            base: I,
            $n: usize,
        }

        impl<I> $name<I> {
            pub(super) fn new(base: I, $n: usize) -> Self {
                $name { base, $n }
            }
        }

        impl<I: IndexedParallelIterator> ParallelIterator for $name<I> {
            type Item = I::Item;

            fn with_producer<CB: ProducerCallback<I::Item>>(self, callback: CB) -> CB::Output {
                struct Cut<CB> {
                    callback: CB,
                    $n: usize,
                }
                impl<T: Send, CB: ProducerCallback<T>> ProducerCallback<T> for Cut<CB> {
                    type Output = CB::Output;
                    fn callback<P: Producer<Item = T>>(self, $p: P) -> CB::Output {
                        let $n = self.$n;
                        let $cb = self.callback;
                        $cut
                    }
                }
                self.base.with_producer(Cut {
                    callback,
                    $n: self.$n,
                })
            }

            fn opt_len(&self) -> Option<usize> {
                Some(self.len())
            }
        }

        impl<I: IndexedParallelIterator> IndexedParallelIterator for $name<I> {
            fn len(&self) -> usize {
                let $l = self.base.len();
                let $n = self.$n;
                $len
            }
        }
    };
}

reshape! {
    /// [`IndexedParallelIterator::take`]: the first `n` items (the rest are dropped unused).
    ///
    /// ```
    /// use ember::prelude::*;
    /// let v: Vec<u32> = (0..100u32).into_par_iter().take(3).collect();
    /// assert_eq!(v, [0, 1, 2]);
    /// ```
    Take { n } len |len| len.min(n);
    callback |producer, callback| {
        let len = producer.len().min(n);
        callback.callback(producer.split_at(len).0)
    }
}

reshape! {
    /// [`IndexedParallelIterator::skip`]: all but the first `n` items. The skipped items
    /// still go through the pipeline's closures (as with `Iterator::skip`), and are dropped.
    ///
    /// ```
    /// use ember::prelude::*;
    /// let v: Vec<u32> = (0..5u32).into_par_iter().skip(3).collect();
    /// assert_eq!(v, [3, 4]);
    /// ```
    Skip { n } len |len| len - len.min(n);
    callback |producer, callback| {
        let len = producer.len().min(n);
        let (skipped, rest) = producer.split_at(len);
        fold::run(Lone(skipped), &ForEach(drop::<T>));
        callback.callback(rest)
    }
}

reshape! {
    /// [`IndexedParallelIterator::step_by`]: every `step`-th item, from the first (`step`
    /// must not be 0).
    ///
    /// ```
    /// use ember::prelude::*;
    /// let v: Vec<u32> = (0..10u32).into_par_iter().step_by(4).collect();
    /// assert_eq!(v, [0, 4, 8]);
    /// ```
    StepBy { step } len |len| len.div_ceil(step);
    callback |producer, callback| callback.callback(Strided { base: producer, step })
}

/// One producer as a parallel iterator, to drive a part cut off a pipeline.
struct Lone<P>(P);

impl<P: Producer> ParallelIterator for Lone<P>
where
    P::Item: Send,
{
    type Item = P::Item;
    fn with_producer<CB: ProducerCallback<P::Item>>(self, callback: CB) -> CB::Output {
        callback.callback(self.0)
    }
}

/// `step_by`'s producer: position `i` is the base's position `i * step`.
struct Strided<P> {
    base: P,
    step: usize,
}

impl<P: Producer> Producer for Strided<P> {
    type Item = P::Item;
    type IntoIter = std::iter::StepBy<P::IntoIter>;
    fn len(&self) -> usize {
        self.base.len().div_ceil(self.step)
    }
    fn split_at(self, index: usize) -> (Self, Self) {
        let at = index.saturating_mul(self.step).min(self.base.len());
        let (left, right) = self.base.split_at(at);
        let step = self.step;
        (Strided { base: left, step }, Strided { base: right, step })
    }
    fn into_iter(self) -> Self::IntoIter {
        self.base.into_iter().step_by(self.step)
    }
    fn min_len(&self) -> usize {
        self.base.min_len().div_ceil(self.step)
    }
    fn max_len(&self) -> usize {
        (self.base.max_len() / self.step).max(1)
    }
}

/// [`IndexedParallelIterator::rev`]: the items in reverse order.
///
/// ```
/// use ember::prelude::*;
/// let v: Vec<u32> = (0..4u32).into_par_iter().rev().collect();
/// assert_eq!(v, [3, 2, 1, 0]);
/// ```
#[derive(Clone, Debug)]
#[must_use = "parallel iterators do nothing until consumed"]
pub struct Rev<I> {
    base: I,
}

impl<I> Rev<I> {
    pub(super) fn new(base: I) -> Self {
        Rev { base }
    }
}

impl<I: IndexedParallelIterator> ParallelIterator for Rev<I> {
    type Item = I::Item;

    fn with_producer<CB: ProducerCallback<I::Item>>(self, callback: CB) -> CB::Output {
        struct Reverse<CB>(CB);
        impl<T, CB: ProducerCallback<T>> ProducerCallback<T> for Reverse<CB> {
            type Output = CB::Output;
            fn callback<P: Producer<Item = T>>(self, base: P) -> CB::Output {
                self.0.callback(Reversed(base))
            }
        }
        self.base.with_producer(Reverse(callback))
    }

    fn opt_len(&self) -> Option<usize> {
        Some(self.base.len())
    }
}

impl<I: IndexedParallelIterator> IndexedParallelIterator for Rev<I> {
    fn len(&self) -> usize {
        self.base.len()
    }
}

/// `rev`'s producer: position `i` is the base's position `len - 1 - i`.
struct Reversed<P>(P);

impl<P: Producer> Producer for Reversed<P> {
    type Item = P::Item;
    type IntoIter = Backwards<P>;
    fn len(&self) -> usize {
        self.0.len()
    }
    fn split_at(self, index: usize) -> (Self, Self) {
        let len = self.0.len();
        let (left, right) = self.0.split_at(len - index);
        (Reversed(right), Reversed(left))
    }
    fn into_iter(self) -> Backwards<P> {
        Backwards(Some(self.0))
    }
    fn min_len(&self) -> usize {
        self.0.min_len()
    }
    fn max_len(&self) -> usize {
        self.0.max_len()
    }
}

/// A leaf of `rev`: splits off its base's last position for every item (a base leaf runs
/// only forwards; an indexed position yields exactly one item).
pub(super) struct Backwards<P>(Option<P>);

impl<P: Producer> Iterator for Backwards<P> {
    type Item = P::Item;
    fn next(&mut self) -> Option<P::Item> {
        let rest = self.0.take()?;
        let len = rest.len();
        if len == 0 {
            return None;
        }
        let (rest, last) = rest.split_at(len - 1);
        self.0 = Some(rest);
        last.into_iter().next()
    }
    fn size_hint(&self) -> (usize, Option<usize>) {
        let len = self.0.as_ref().map_or(0, Producer::len);
        (len, Some(len))
    }
}
