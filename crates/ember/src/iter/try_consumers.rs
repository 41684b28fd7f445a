//! What `try_fold`, `try_for_each` and `try_reduce` accept as a fallible result: `Option`,
//! `Result` and `ControlFlow` (the [`Try`] trait, sealed), and the consumers that stop every
//! piece at the first failure.

use std::convert::Infallible;
use std::ops::ControlFlow;
use std::sync::atomic::{AtomicBool, Ordering};

use super::fold::Fold;

/// A result that is a value or a failure: `Option<T>`, `Result<T, E>`, `ControlFlow<B, C>`
/// (what `?` works on). Sealed: it only names those three in the bounds of
/// [`try_for_each`](super::ParallelIterator::try_for_each) and its kin.
pub trait Try: private::Sealed + Sized {
    /// The value of a success.
    type Output;
    /// A failure, without its value type.
    type Residual;
    /// A success of `output`.
    fn from_output(output: Self::Output) -> Self;
    /// The failure `residual`.
    fn from_residual(residual: Self::Residual) -> Self;
    /// `Continue` with a success's value, `Break` with a failure.
    fn branch(self) -> ControlFlow<Self::Residual, Self::Output>;
}

mod private {
    pub trait Sealed {}
    impl<T> Sealed for Option<T> {}
    impl<T, E> Sealed for Result<T, E> {}
    impl<B, C> Sealed for std::ops::ControlFlow<B, C> {}
}

impl<T> Try for Option<T> {
    type Output = T;
    type Residual = Option<Infallible>;
    fn from_output(output: T) -> Self {
        Some(output)
    }
    fn from_residual(_: Option<Infallible>) -> Self {
        None
    }
    fn branch(self) -> ControlFlow<Option<Infallible>, T> {
        match self {
            Some(v) => ControlFlow::Continue(v),
            None => ControlFlow::Break(None),
        }
    }
}

impl<T, E> Try for Result<T, E> {
    type Output = T;
    type Residual = Result<Infallible, E>;
    fn from_output(output: T) -> Self {
        Ok(output)
    }
    fn from_residual(residual: Result<Infallible, E>) -> Self {
        match residual {
            Err(e) => Err(e),
            Ok(never) => match never {},
        }
    }
    fn branch(self) -> ControlFlow<Result<Infallible, E>, T> {
        match self {
            Ok(v) => ControlFlow::Continue(v),
            Err(e) => ControlFlow::Break(Err(e)),
        }
    }
}

impl<B, C> Try for ControlFlow<B, C> {
    type Output = C;
    type Residual = ControlFlow<B, Infallible>;
    fn from_output(output: C) -> Self {
        ControlFlow::Continue(output)
    }
    fn from_residual(residual: ControlFlow<B, Infallible>) -> Self {
        match residual {
            ControlFlow::Break(b) => ControlFlow::Break(b),
            ControlFlow::Continue(never) => match never {},
        }
    }
    fn branch(self) -> ControlFlow<ControlFlow<B, Infallible>, C> {
        match self {
            ControlFlow::Continue(c) => ControlFlow::Continue(c),
            ControlFlow::Break(b) => ControlFlow::Break(ControlFlow::Break(b)),
        }
    }
}

/// Folds `items` from `init` with the fallible `op`, stopping at the first failure.
pub(super) fn try_fold_items<T, U, R, I, F>(mut items: I, init: U, op: F) -> R
where
    R: Try<Output = U>,
    I: Iterator<Item = T>,
    F: FnMut(U, T) -> R,
{
    let mut op = op;
    match items.try_fold(init, |acc, item| op(acc, item).branch()) {
        ControlFlow::Continue(acc) => R::from_output(acc),
        ControlFlow::Break(failure) => R::from_residual(failure),
    }
}

/// The result of a piece of `try_for_each` or `try_reduce`: a success, a failure, or
/// stopped because another piece failed (so that the whole result is that failure).
pub(super) enum Piece<U, E> {
    Done(U),
    Failed(E),
    Stopped,
}

impl<U, E> Piece<U, E> {
    /// The final result: a piece stops only once another failed, and a failure wins every
    /// combination, so the whole never ends `Stopped`.
    fn finish<R: Try<Output = U, Residual = E>>(self) -> R {
        match self {
            Piece::Done(value) => R::from_output(value),
            Piece::Failed(failure) => R::from_residual(failure),
            Piece::Stopped => unreachable!("ember: a stopped fold without a failure"),
        }
    }
}

/// `try_reduce` (and `try_for_each`, as `map(f).try_reduce(|| (), |(), ()| ...)`): folds the
/// fallible items with `op` from `identity()`; the first failure seen stops every piece.
pub(super) struct TryReduce<ID, OP> {
    identity: ID,
    op: OP,
    stop: AtomicBool,
}

impl<ID, OP> TryReduce<ID, OP> {
    pub(super) fn new(identity: ID, op: OP) -> Self {
        TryReduce {
            identity,
            op,
            stop: AtomicBool::new(false),
        }
    }

    /// `op` on two values, as a piece.
    fn apply<T, R>(&self, left: T, right: T) -> Piece<T, R::Residual>
    where
        R: Try<Output = T>,
        OP: Fn(T, T) -> R,
    {
        match (self.op)(left, right).branch() {
            ControlFlow::Continue(value) => Piece::Done(value),
            ControlFlow::Break(failure) => {
                self.stop.store(true, Ordering::Relaxed);
                Piece::Failed(failure)
            }
        }
    }
}

impl<T, R, ID, OP> Fold<R> for TryReduce<ID, OP>
where
    R: Try<Output = T>,
    T: Send,
    R::Residual: Send,
    ID: Fn() -> T + Sync,
    OP: Fn(T, T) -> R + Sync,
{
    type Acc = Piece<T, R::Residual>;
    fn leaf<I: Iterator<Item = R>>(&self, mut items: I) -> Self::Acc {
        let outcome = items.try_fold((self.identity)(), |acc, item| {
            if self.stop.load(Ordering::Relaxed) {
                return ControlFlow::Break(Piece::Stopped);
            }
            let value = match item.branch() {
                ControlFlow::Continue(value) => value,
                ControlFlow::Break(failure) => {
                    self.stop.store(true, Ordering::Relaxed);
                    return ControlFlow::Break(Piece::Failed(failure));
                }
            };
            match self.apply(acc, value) {
                Piece::Done(acc) => ControlFlow::Continue(acc),
                failed => ControlFlow::Break(failed),
            }
        });
        match outcome {
            ControlFlow::Continue(acc) => Piece::Done(acc),
            ControlFlow::Break(piece) => piece,
        }
    }
    fn combine(&self, left: Self::Acc, right: Self::Acc) -> Self::Acc {
        match (left, right) {
            (Piece::Done(l), Piece::Done(r)) => self.apply(l, r),
            (Piece::Failed(f), _) | (_, Piece::Failed(f)) => Piece::Failed(f),
            _ => Piece::Stopped,
        }
    }
    fn full(&self) -> bool {
        self.stop.load(Ordering::Relaxed)
    }
}

/// Runs `try_reduce` over `iter`.
pub(super) fn try_reduce<I, T, ID, OP>(iter: I, identity: ID, op: OP) -> I::Item
where
    I: super::ParallelIterator,
    I::Item: Try<Output = T>,
    <I::Item as Try>::Residual: Send,
    T: Send,
    ID: Fn() -> T + Sync,
    OP: Fn(T, T) -> I::Item + Sync,
{
    super::fold::run(iter, &TryReduce::new(identity, op)).finish()
}

/// Runs `try_reduce_with` over `iter`: `try_reduce` over optional values, `None` the
/// identity.
pub(super) fn try_reduce_with<I, T, OP>(iter: I, op: OP) -> Option<I::Item>
where
    I: super::ParallelIterator,
    I::Item: Try<Output = T>,
    <I::Item as Try>::Residual: Send,
    T: Send,
    OP: Fn(T, T) -> I::Item + Sync,
{
    type Flow<I, T> = ControlFlow<<I as Try>::Residual, Option<T>>;
    let items = iter.map(|item| match item.branch() {
        ControlFlow::Continue(value) => ControlFlow::Continue(Some(value)),
        ControlFlow::Break(failure) => ControlFlow::Break(failure),
    });
    let combined: Flow<I::Item, T> = try_reduce(
        items,
        || None,
        |left, right| match (left, right) {
            (Some(l), Some(r)) => op(l, r).branch().map_continue(Some),
            (l, r) => ControlFlow::Continue(l.or(r)),
        },
    );
    match combined {
        ControlFlow::Continue(value) => value.map(I::Item::from_output),
        ControlFlow::Break(failure) => Some(I::Item::from_residual(failure)),
    }
}
