//! [`ParallelBridge`]: `par_bridge()` turns any sequential `Iterator + Send` into a parallel
//! iterator. The iterator sits behind a lock; the pipeline splits into about one piece per
//! worker, and each piece pulls items one at a time until the iterator is exhausted, so
//! the items come in no particular order (`collect` gives some permutation of them).
//!
//! If the iterator's `next` panics, the lock is poisoned and every other piece stops at
//! its next pull; the panic is re-raised to the caller. The items never pulled are dropped
//! with the iterator, when the pipeline is over.

use std::sync::Mutex;

use super::plumbing::{Producer, ProducerCallback};
use super::traits::ParallelIterator;
use crate::current_num_threads;

/// `par_bridge()` for every sequential iterator whose items can cross threads. In the
/// prelude.
///
/// ```
/// use ember::prelude::*;
/// use std::sync::mpsc::channel;
/// let (tx, rx) = channel();
/// for i in 0..100u32 {
///     tx.send(i).unwrap();
/// }
/// drop(tx);
/// let mut doubled: Vec<u32> = rx.into_iter().par_bridge().map(|x| x * 2).collect();
/// doubled.sort();
/// assert_eq!(doubled, (0..100).map(|x| x * 2).collect::<Vec<_>>());
/// ```
pub trait ParallelBridge: Sized {
    /// The items of `self`, pulled in parallel, in no particular order.
    ///
    /// ```
    /// use ember::prelude::*;
    /// let total: u64 = (1..=100u64).par_bridge().sum();
    /// assert_eq!(total, 5050);
    /// ```
    fn par_bridge(self) -> IterBridge<Self>;
}

impl<I> ParallelBridge for I
where
    I: Iterator + Send,
    I::Item: Send,
{
    fn par_bridge(self) -> IterBridge<Self> {
        IterBridge { iter: self }
    }
}

/// [`ParallelBridge::par_bridge`]: a sequential iterator pulled by the workers.
///
/// ```
/// use ember::prelude::*;
/// let words = "a bb ccc".split(' ');
/// assert_eq!(words.par_bridge().map(str::len).max(), Some(3));
/// ```
#[derive(Clone, Debug)]
#[must_use = "parallel iterators do nothing until consumed"]
pub struct IterBridge<I> {
    iter: I,
}

impl<I> ParallelIterator for IterBridge<I>
where
    I: Iterator + Send,
    I::Item: Send,
{
    type Item = I::Item;

    fn with_producer<CB: ProducerCallback<I::Item>>(self, callback: CB) -> CB::Output {
        let shared = Mutex::new(Some(self.iter));
        callback.callback(Bridge {
            shared: &shared,
            positions: current_num_threads(),
        })
    }
}

/// Pieces of the pipeline, all pulling from the one shared iterator (`None` once it is
/// exhausted). Its positions only say how many pieces it may split into.
struct Bridge<'s, I> {
    shared: &'s Mutex<Option<I>>,
    positions: usize,
}

impl<'s, I> Producer for Bridge<'s, I>
where
    I: Iterator + Send,
    I::Item: Send,
{
    type Item = I::Item;
    type IntoIter = Pull<'s, I>;
    fn len(&self) -> usize {
        self.positions
    }
    fn split_at(self, index: usize) -> (Self, Self) {
        let shared = self.shared;
        (
            Bridge {
                shared,
                positions: index,
            },
            Bridge {
                shared,
                positions: self.positions - index,
            },
        )
    }
    fn into_iter(self) -> Pull<'s, I> {
        // A piece of no position pulls nothing: the pieces hold the positions they were given.
        Pull {
            shared: (self.positions > 0).then_some(self.shared),
        }
    }
}

/// One piece's pulls from the shared iterator.
struct Pull<'s, I> {
    shared: Option<&'s Mutex<Option<I>>>,
}

impl<I: Iterator> Iterator for Pull<'_, I> {
    type Item = I::Item;
    fn next(&mut self) -> Option<I::Item> {
        // A poisoned lock: `next` panicked in another piece, whose panic is on its way to
        // the caller. Stop here.
        let mut guard = self.shared?.lock().map_err(|_| ()).ok()?;
        let item = guard.as_mut()?.next();
        if item.is_none() {
            // Exhausted: drop it now, and let the other pieces see so without calling
            // `next` again (a fused end, whatever the iterator).
            *guard = None;
            self.shared = None;
        }
        item
    }
}
