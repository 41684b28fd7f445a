//! `find_any`, `find_first`, `find_last` (and the `position_*` and `find_map_*` built on
//! them). Each piece holds a range of `usize`s standing for its place in the pipeline (the
//! whole range at the top, halved at every split, left before right, so that a `flat_map`'s
//! inner pieces get places too); a match publishes its piece's range, and every piece that
//! can no longer hold the answer stops at its next item (or is not started): for
//! `find_first`, the pieces to the right of a match. The bridge visits the searched end of
//! every piece first ([`Search`]).

use std::sync::atomic::{AtomicUsize, Ordering};

use super::plumbing::{drive, Consumer, Reducer, Search};
use super::traits::ParallelIterator;

/// Which match is wanted.
#[derive(Clone, Copy, PartialEq)]
enum Wanted {
    Any,
    First,
    Last,
}

/// The consumer of one piece: positions `start..end` (`end` is `usize::MAX` for the last).
struct Find<'p, P> {
    predicate: &'p P,
    /// `Any`: 1 once found. `First`: the least start of a piece that found one (`MAX`: none
    /// yet). `Last`: the greatest end of a piece that found one (0: none yet).
    found: &'p AtomicUsize,
    wanted: Wanted,
    start: usize,
    end: usize,
}

impl<P> Find<'_, P> {
    /// Whether the answer is known to lie outside this piece (pieces never overlap, so a
    /// match's piece is either inside this one or wholly beside it).
    #[inline]
    fn beaten(&self) -> bool {
        let found = self.found.load(Ordering::Relaxed);
        match self.wanted {
            Wanted::Any => found != 0,
            Wanted::First => found < self.start,
            Wanted::Last => found > self.end,
        }
    }

    /// Publishes a match in this piece.
    fn publish(&self) {
        match self.wanted {
            Wanted::Any => self.found.store(1, Ordering::Relaxed),
            Wanted::First => {
                self.found.fetch_min(self.start, Ordering::Relaxed);
            }
            Wanted::Last => {
                self.found.fetch_max(self.end, Ordering::Relaxed);
            }
        }
    }
}

impl<T: Send, P: Fn(&T) -> bool + Sync> Consumer<T> for Find<'_, P> {
    type Result = Option<T>;
    type Reducer = Keep;

    fn split_at(self, _index: usize) -> (Self, Self, Keep) {
        // Halves the piece's range, whatever the split's index: the pieces of a `flat_map`
        // split again inside one outer position, so positions cannot name them, but every
        // split halves its piece, left before right, so halves keep the order. After 64
        // nested halvings the ranges run out and pieces stop pruning each other (they still
        // combine in order).
        let mid = self.start + (self.end - self.start) / 2;
        let left = Find { end: mid, ..self };
        let right = Find { start: mid, ..self };
        let keep = if self.wanted == Wanted::Last {
            Keep::Right
        } else {
            Keep::Left
        };
        (left, right, keep)
    }

    fn fold<I: Iterator<Item = T>>(self, items: I) -> Option<T> {
        let mut last = None;
        for item in items {
            if self.beaten() {
                return None;
            }
            if (self.predicate)(&item) {
                if self.wanted != Wanted::Last {
                    self.publish();
                    return Some(item);
                }
                if last.is_none() {
                    self.publish();
                }
                last = Some(item);
            }
        }
        last
    }

    fn full(&self) -> bool {
        self.beaten()
    }

    fn search(&self) -> Search {
        match self.wanted {
            Wanted::Last => Search::Back,
            Wanted::Any | Wanted::First => Search::Front,
        }
    }
}

impl<P> Clone for Find<'_, P> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<P> Copy for Find<'_, P> {}

/// Which of two adjacent pieces' matches wins.
enum Keep {
    Left,
    Right,
}

impl<T> Reducer<Option<T>> for Keep {
    fn reduce(self, left: Option<T>, right: Option<T>) -> Option<T> {
        match self {
            Keep::Left => left.or(right),
            Keep::Right => right.or(left),
        }
    }
}

/// Runs the search of `iter` for an item `predicate` accepts.
fn find<I, P>(iter: I, predicate: P, wanted: Wanted) -> Option<I::Item>
where
    I: ParallelIterator,
    P: Fn(&I::Item) -> bool + Sync,
{
    let found = AtomicUsize::new(match wanted {
        Wanted::First => usize::MAX,
        Wanted::Any | Wanted::Last => 0,
    });
    let consumer = Find {
        predicate: &predicate,
        found: &found,
        wanted,
        start: 0,
        end: usize::MAX,
    };
    drive(iter, consumer)
}

/// `find_any`: some item `predicate` accepts.
pub(super) fn find_any<I, P>(iter: I, predicate: P) -> Option<I::Item>
where
    I: ParallelIterator,
    P: Fn(&I::Item) -> bool + Sync,
{
    find(iter, predicate, Wanted::Any)
}

/// `find_first`: the first item `predicate` accepts.
pub(super) fn find_first<I, P>(iter: I, predicate: P) -> Option<I::Item>
where
    I: ParallelIterator,
    P: Fn(&I::Item) -> bool + Sync,
{
    find(iter, predicate, Wanted::First)
}

/// `find_last`: the last item `predicate` accepts.
pub(super) fn find_last<I, P>(iter: I, predicate: P) -> Option<I::Item>
where
    I: ParallelIterator,
    P: Fn(&I::Item) -> bool + Sync,
{
    find(iter, predicate, Wanted::Last)
}
