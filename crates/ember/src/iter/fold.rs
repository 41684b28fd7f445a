//! The consumers that fold items into one value (`for_each`, `sum`, `product`, `count`,
//! `min`/`max` and their `_by`/`_by_key` forms, `reduce`, `reduce_with`, `any`/`all`): each is a [`Fold`], a sequential fold
//! of one leaf plus the combination of two adjacent leaves' results, driven by [`run`].

use std::cmp::Ordering as CmpOrdering;
use std::iter::{Product, Sum};
use std::marker::PhantomData;
use std::sync::atomic::{AtomicBool, Ordering};

use super::plumbing::{drive, Consumer, Reducer, Search};
use super::traits::ParallelIterator;

/// A terminal operation: how one leaf folds, how two results combine.
pub(super) trait Fold<T>: Sync {
    /// The result of a leaf, and of two combined.
    type Acc: Send;
    /// Folds one leaf's items, in order.
    fn leaf<I: Iterator<Item = T>>(&self, items: I) -> Self::Acc;
    /// The result of `left`'s items followed by `right`'s.
    fn combine(&self, left: Self::Acc, right: Self::Acc) -> Self::Acc;
    /// Whether the result is known already, so that nothing more need run.
    fn full(&self) -> bool {
        false
    }
    /// Which items matter most: [`Search::Front`] for a fold that stops early.
    fn search(&self) -> Search {
        Search::Every
    }
}

/// Runs `iter` into `op`.
pub(super) fn run<I: ParallelIterator, F: Fold<I::Item>>(iter: I, op: &F) -> F::Acc {
    drive(iter, FoldConsumer(op))
}

/// A [`Fold`] as a consumer: every piece shares the one operation.
struct FoldConsumer<'f, F>(&'f F);

impl<F> Clone for FoldConsumer<'_, F> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<F> Copy for FoldConsumer<'_, F> {}

impl<'f, T, F: Fold<T>> Consumer<T> for FoldConsumer<'f, F> {
    type Result = F::Acc;
    type Reducer = FoldReducer<'f, F, T>;
    fn split_at(self, _index: usize) -> (Self, Self, Self::Reducer) {
        (self, self, FoldReducer(self.0, PhantomData))
    }
    fn fold<I: Iterator<Item = T>>(self, items: I) -> F::Acc {
        self.0.leaf(items)
    }
    fn full(&self) -> bool {
        self.0.full()
    }
    fn search(&self) -> Search {
        self.0.search()
    }
}

/// Combines two results of a [`Fold`] over items `T`.
struct FoldReducer<'f, F, T>(&'f F, PhantomData<fn(T)>);

impl<T, F: Fold<T>> Reducer<F::Acc> for FoldReducer<'_, F, T> {
    fn reduce(self, left: F::Acc, right: F::Acc) -> F::Acc {
        self.0.combine(left, right)
    }
}

/// `for_each`.
pub(super) struct ForEach<F>(pub(super) F);

impl<T, F: Fn(T) + Sync> Fold<T> for ForEach<F> {
    type Acc = ();
    fn leaf<I: Iterator<Item = T>>(&self, items: I) {
        items.for_each(&self.0);
    }
    fn combine(&self, (): (), (): ()) {}
}

/// `sum`.
pub(super) struct Summed<S>(PhantomData<fn() -> S>);

impl<S> Summed<S> {
    pub(super) fn new() -> Self {
        Summed(PhantomData)
    }
}

impl<T, S: Send + Sum<T> + Sum<S>> Fold<T> for Summed<S> {
    type Acc = S;
    fn leaf<I: Iterator<Item = T>>(&self, items: I) -> S {
        items.sum()
    }
    fn combine(&self, left: S, right: S) -> S {
        [left, right].into_iter().sum()
    }
}

/// `count`.
pub(super) struct Count;

impl<T> Fold<T> for Count {
    type Acc = usize;
    fn leaf<I: Iterator<Item = T>>(&self, items: I) -> usize {
        items.count()
    }
    fn combine(&self, left: usize, right: usize) -> usize {
        left + right
    }
}

/// `min`, `max` (and `min_by_key`, `max_by_key` over `(key, item)` pairs): by `cmp`, the
/// first least or the last greatest item, as `Iterator` does.
struct Best<C> {
    cmp: C,
    max: bool,
}

impl<T: Send, C: Fn(&T, &T) -> CmpOrdering + Sync> Fold<T> for Best<C> {
    type Acc = Option<T>;
    fn leaf<I: Iterator<Item = T>>(&self, items: I) -> Option<T> {
        if self.max {
            items.max_by(&self.cmp)
        } else {
            items.min_by(&self.cmp)
        }
    }
    fn combine(&self, left: Option<T>, right: Option<T>) -> Option<T> {
        match (left, right) {
            (Some(l), Some(r)) => {
                // Ties: the minimum keeps the left item, the maximum the right one.
                let order = (self.cmp)(&r, &l);
                let right_wins = if self.max {
                    order.is_ge()
                } else {
                    order.is_lt()
                };
                Some(if right_wins { r } else { l })
            }
            (l, r) => l.or(r),
        }
    }
}

/// `min` (`max` false) and `max` of `iter` by `cmp` ([`Best`]).
pub(super) fn best<I, C>(iter: I, cmp: C, max: bool) -> Option<I::Item>
where
    I: ParallelIterator,
    C: Fn(&I::Item, &I::Item) -> CmpOrdering + Sync,
{
    run(iter, &Best { cmp, max })
}

/// `min_by_key` (`max` false) and `max_by_key`: [`best`] over `(key, item)` pairs, so that
/// the key is computed once per item.
pub(super) fn best_by_key<I, K, F>(iter: I, key: F, max: bool) -> Option<I::Item>
where
    I: ParallelIterator,
    K: Ord + Send,
    F: Fn(&I::Item) -> K + Sync + Send,
{
    let keyed = iter.map(move |item| (key(&item), item));
    best(keyed, |a, b| a.0.cmp(&b.0), max).map(|(_, item)| item)
}

/// `reduce`.
pub(super) struct Reduce<ID, OP> {
    pub(super) identity: ID,
    pub(super) op: OP,
}

impl<T, ID, OP> Fold<T> for Reduce<ID, OP>
where
    T: Send,
    ID: Fn() -> T + Sync,
    OP: Fn(T, T) -> T + Sync,
{
    type Acc = T;
    fn leaf<I: Iterator<Item = T>>(&self, items: I) -> T {
        items.fold((self.identity)(), &self.op)
    }
    fn combine(&self, left: T, right: T) -> T {
        (self.op)(left, right)
    }
}

/// `any`, and `all` as "any item fails": whether some item gives `predicate(item) != negate`.
/// A hit anywhere sets `found`, which stops every other piece early.
pub(super) struct Any<P> {
    predicate: P,
    negate: bool,
    found: AtomicBool,
}

impl<P> Any<P> {
    pub(super) fn new(predicate: P, negate: bool) -> Self {
        Any {
            predicate,
            negate,
            found: AtomicBool::new(false),
        }
    }
}

impl<T, P: Fn(T) -> bool + Sync> Fold<T> for Any<P> {
    type Acc = bool;
    fn leaf<I: Iterator<Item = T>>(&self, mut items: I) -> bool {
        // Once another piece found one, the answer is known: stop at the next item (the
        // answer of this piece no longer matters, the combination is `true` anyway).
        let hit = items.any(|item| {
            self.found.load(Ordering::Relaxed) || (self.predicate)(item) != self.negate
        });
        if hit {
            self.found.store(true, Ordering::Relaxed);
        }
        hit
    }
    fn combine(&self, left: bool, right: bool) -> bool {
        left || right
    }
    fn full(&self) -> bool {
        self.found.load(Ordering::Relaxed)
    }
    fn search(&self) -> Search {
        Search::Front
    }
}

/// `reduce_with`: `reduce` without an identity; `None` for no item.
pub(super) struct ReduceWith<OP>(pub(super) OP);

impl<T: Send, OP: Fn(T, T) -> T + Sync> Fold<T> for ReduceWith<OP> {
    type Acc = Option<T>;
    fn leaf<I: Iterator<Item = T>>(&self, items: I) -> Option<T> {
        items.reduce(&self.0)
    }
    fn combine(&self, left: Option<T>, right: Option<T>) -> Option<T> {
        match (left, right) {
            (Some(l), Some(r)) => Some((self.0)(l, r)),
            (l, r) => l.or(r),
        }
    }
}

/// `product`.
pub(super) struct Multiplied<P>(PhantomData<fn() -> P>);

impl<P> Multiplied<P> {
    pub(super) fn new() -> Self {
        Multiplied(PhantomData)
    }
}

impl<T, P: Send + Product<T> + Product<P>> Fold<T> for Multiplied<P> {
    type Acc = P;
    fn leaf<I: Iterator<Item = T>>(&self, items: I) -> P {
        items.product()
    }
    fn combine(&self, left: P, right: P) -> P {
        [left, right].into_iter().product()
    }
}
