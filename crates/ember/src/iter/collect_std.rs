//! `collect` into the other standard collections, `String`, `Cow`, `()`, and into
//! `Result<C, E>` and `Option<C>`.
//!
//! Each collection is built from a `Vec` collected in order (`collect.rs`), on the calling
//! thread: the order of the items is the pipeline's, so a map or set keeps the last of
//! equal keys and a `LinkedList` or `VecDeque` the pipeline's order, as `Iterator::collect`
//! does. `Result` and `Option` stop every piece at its next item once an `Err` or a `None`
//! is seen, and return one of those seen (not necessarily the first in order).

use std::borrow::Cow;
use std::collections::{BTreeMap, BTreeSet, BinaryHeap, HashMap, HashSet, LinkedList, VecDeque};
use std::hash::{BuildHasher, Hash};
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use super::plumbing::{Producer, ProducerCallback};
use super::traits::{FromParallelIterator, IntoParallelIterator, ParallelIterator};

/// Collects into a `Vec`, in order, then converts with `$convert`.
macro_rules! via_vec {
    ($(impl[$($g:tt)*] $t:ty => $c:ty, |$vec:ident| $convert:expr;)*) => {$(
        impl<$($g)*> FromParallelIterator<$t> for $c {
            fn from_par_iter<I>(iter: I) -> Self
            where
                I: IntoParallelIterator<Item = $t>,
            {
                let $vec: Vec<$t> = Vec::from_par_iter(iter);
                $convert
            }
        }
    )*};
}

via_vec! {
    impl[T: Send] T => VecDeque<T>, |v| v.into();
    impl[T: Send] T => LinkedList<T>, |v| v.into_iter().collect();
    impl[T: Send + Ord] T => BinaryHeap<T>, |v| v.into();
    impl[T: Send + Ord] T => BTreeSet<T>, |v| v.into_iter().collect();
    impl[K: Send + Ord, V: Send] (K, V) => BTreeMap<K, V>, |v| v.into_iter().collect();
    impl[T: Send + Eq + Hash, S: BuildHasher + Default] T => HashSet<T, S>,
        |v| v.into_iter().collect();
    impl[K: Send + Eq + Hash, V: Send, S: BuildHasher + Default] (K, V) => HashMap<K, V, S>,
        |v| v.into_iter().collect();
    impl[T: Send] T => Box<[T]>, |v| v.into_boxed_slice();
    impl[T: Send] T => Rc<[T]>, |v| v.into();
    impl[T: Send] T => Arc<[T]>, |v| v.into();
    impl[] char => String, |v| v.into_iter().collect();
    impl['a] &'a char => String, |v| v.into_iter().collect();
    impl['a] &'a str => String, |v| v.concat();
    impl[] String => String, |v| v.concat();
    impl[] Box<str> => String, |v| v.into_iter().collect();
    impl['a] Cow<'a, str> => String, |v| v.into_iter().collect();
}

/// `collect` into a `Cow`: the owned form, collected.
///
/// ```
/// use ember::prelude::*;
/// use std::borrow::Cow;
/// let s: Cow<'_, str> = ['h', 'i'].par_iter().collect();
/// assert_eq!(s, "hi");
/// ```
impl<'a, C, T> FromParallelIterator<T> for Cow<'a, C>
where
    C: ToOwned + ?Sized,
    C::Owned: FromParallelIterator<T>,
    T: Send,
{
    fn from_par_iter<I>(iter: I) -> Self
    where
        I: IntoParallelIterator<Item = T>,
    {
        Cow::Owned(C::Owned::from_par_iter(iter))
    }
}

/// `collect` into `()`: runs the pipeline for its effects.
///
/// ```
/// use ember::prelude::*;
/// use std::sync::atomic::{AtomicU32, Ordering};
/// let seen = AtomicU32::new(0);
/// let () = (0..10u32).into_par_iter().map(|_| { seen.fetch_add(1, Ordering::Relaxed); }).collect();
/// assert_eq!(seen.into_inner(), 10);
/// ```
impl FromParallelIterator<()> for () {
    fn from_par_iter<I>(iter: I)
    where
        I: IntoParallelIterator<Item = ()>,
    {
        iter.into_par_iter().for_each(drop);
    }
}

/// `collect` into `Result<C, E>`: `Ok` of the collection of the `Ok` values, or an `Err`
/// seen (once one is, every piece stops at its next item).
///
/// ```
/// use ember::prelude::*;
/// let ok: Result<Vec<u32>, String> = (0..5u32).into_par_iter().map(Ok).collect();
/// assert_eq!(ok, Ok(vec![0, 1, 2, 3, 4]));
/// let err: Result<Vec<u32>, u32> =
///     (0..1000u32).into_par_iter().map(|x| if x == 500 { Err(x) } else { Ok(x) }).collect();
/// assert_eq!(err, Err(500));
/// ```
impl<C, T, E> FromParallelIterator<Result<T, E>> for Result<C, E>
where
    C: FromParallelIterator<T>,
    T: Send,
    E: Send,
{
    fn from_par_iter<I>(iter: I) -> Self
    where
        I: IntoParallelIterator<Item = Result<T, E>>,
    {
        let error = Mutex::new(None);
        let stop = AtomicBool::new(false);
        let oks = iter.into_par_iter().map(|item| match item {
            Ok(value) => Some(value),
            Err(e) => {
                error
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .get_or_insert(e);
                None
            }
        });
        let collection = C::from_par_iter(UntilNone {
            base: oks,
            stop: &stop,
        });
        match error.into_inner().unwrap_or_else(PoisonError::into_inner) {
            Some(e) => Err(e),
            None => Ok(collection),
        }
    }
}

/// `collect` into `Option<C>`: `Some` of the collection of the `Some` values, or `None` if
/// there was one (once one is seen, every piece stops at its next item).
///
/// ```
/// use ember::prelude::*;
/// let all: Option<Vec<u8>> = vec![Some(1), Some(2)].into_par_iter().collect();
/// assert_eq!(all, Some(vec![1, 2]));
/// let gap: Option<Vec<u8>> = vec![Some(1), None].into_par_iter().collect();
/// assert_eq!(gap, None);
/// ```
impl<C, T> FromParallelIterator<Option<T>> for Option<C>
where
    C: FromParallelIterator<T>,
    T: Send,
{
    fn from_par_iter<I>(iter: I) -> Self
    where
        I: IntoParallelIterator<Item = Option<T>>,
    {
        let stop = AtomicBool::new(false);
        let collection = C::from_par_iter(UntilNone {
            base: iter.into_par_iter(),
            stop: &stop,
        });
        (!stop.into_inner()).then_some(collection)
    }
}

/// The values of a pipeline of `Option`s up to a `None`: a `None` anywhere sets `stop`,
/// and every piece ends at its next item. Not indexed (how many items come is unknown).
struct UntilNone<'s, I> {
    base: I,
    stop: &'s AtomicBool,
}

impl<T, I> ParallelIterator for UntilNone<'_, I>
where
    I: ParallelIterator<Item = Option<T>>,
    T: Send,
{
    type Item = T;

    fn with_producer<CB: ProducerCallback<T>>(self, callback: CB) -> CB::Output {
        /// Wraps the base producer.
        struct Callback<'s, CB> {
            callback: CB,
            stop: &'s AtomicBool,
        }
        impl<T, CB: ProducerCallback<T>> ProducerCallback<Option<T>> for Callback<'_, CB> {
            type Output = CB::Output;
            fn callback<P: Producer<Item = Option<T>>>(self, base: P) -> CB::Output {
                self.callback.callback(UntilNoneProducer {
                    base,
                    stop: self.stop,
                })
            }
        }
        self.base.with_producer(Callback {
            callback,
            stop: self.stop,
        })
    }
}

/// [`UntilNone`]'s producer: the base's, its leaves cut at the first `None`.
struct UntilNoneProducer<'s, P> {
    base: P,
    stop: &'s AtomicBool,
}

impl<'s, T, P: Producer<Item = Option<T>>> Producer for UntilNoneProducer<'s, P> {
    type Item = T;
    type IntoIter = UntilNoneIter<'s, P::IntoIter>;
    fn len(&self) -> usize {
        self.base.len()
    }
    fn split_at(self, index: usize) -> (Self, Self) {
        let (left, right) = self.base.split_at(index);
        let stop = self.stop;
        (
            UntilNoneProducer { base: left, stop },
            UntilNoneProducer { base: right, stop },
        )
    }
    fn into_iter(self) -> Self::IntoIter {
        UntilNoneIter {
            base: self.base.into_iter(),
            stop: self.stop,
        }
    }
    fn min_len(&self) -> usize {
        self.base.min_len()
    }
    fn max_len(&self) -> usize {
        self.base.max_len()
    }
}

/// One leaf of an [`UntilNoneProducer`].
struct UntilNoneIter<'s, I> {
    base: I,
    stop: &'s AtomicBool,
}

impl<T, I: Iterator<Item = Option<T>>> Iterator for UntilNoneIter<'_, I> {
    type Item = T;
    fn next(&mut self) -> Option<T> {
        if self.stop.load(Ordering::Relaxed) {
            return None;
        }
        let item = self.base.next()?;
        if item.is_none() {
            self.stop.store(true, Ordering::Relaxed);
        }
        item
    }
}
