//! Parallel iterators: rayon's most used subset, built on [`crate::join`] so they run on the
//! current pool (the worker's, or the global pool outside every pool, as rayon's do).
//!
//! ```
//! use ember::prelude::*;
//!
//! let pool = ember::Pool::builder().threads(4).build()?;
//! let total: u64 = pool.install(|| (0..1_000_000u64).into_par_iter().map(|x| x * x).sum());
//! assert_eq!(total, 333_332_833_333_500_000);
//!
//! let words = vec!["apple", "fig", "banana", "kiwi"];
//! let long: Vec<String> = words
//!     .par_iter()
//!     .filter(|w| w.len() > 3)
//!     .map(|w| w.to_uppercase())
//!     .collect();
//! assert_eq!(long, ["APPLE", "BANANA", "KIWI"]);
//!
//! let mut v: Vec<u32> = (0..100_000).rev().collect();
//! v.par_sort_unstable();
//! assert_eq!(v[0], 0);
//! # Ok::<(), ember::BuildError>(())
//! ```
//!
//! # How work is split
//!
//! Like rayon's adaptive splitter, a pipeline starts with a budget of about
//! [`current_num_threads`](crate::current_num_threads) splits, halved at each level, and a
//! half that another worker steals gets a fresh budget and splits again. A half its own
//! worker pops back does not: when no worker is idle, pieces stay large, and an idle pool
//! does not pay wake-ups and context switches for work one thread can do.
//! [`with_min_len`](ParallelIterator::with_min_len) bounds how small a piece may get.
//!
//! What "stolen" means follows the pool's [`WakePolicy`](crate::WakePolicy). Under
//! `Searching` (the default) and `Eager`, a fork wakes an idle worker (under `Searching`,
//! unless one is already looking for work), which steals the half and splits it further.
//! Under `Biased`, which by design runs coarse fork-join halves on one worker until that
//! worker is overloaded, the halves are popped back by the worker that forked them: a
//! parallel iterator on an otherwise idle `Biased` pool runs on one thread, in a few coarse
//! pieces. Use `Searching` for pools that run parallel iterators.
//!
//! Consumers return once every item is consumed. A panic in a closure is re-raised to the
//! caller once the other halves running at the time have finished (as [`crate::join`]
//! does); items not yet consumed are dropped, none twice. Outside every pool, a pipeline
//! too short to split runs on the calling thread (as rayon's do).
//!
//! One limit, shared with rayon: the closures of a pipeline (and the values they capture)
//! are the caller's, dropped while that re-raised panic unwinds. A capture whose `Drop`
//! panics there aborts the process, as any drop during an unwind does. The pool's own
//! primitives ([`crate::join`], [`crate::scope`], `broadcast`, `parallel_for`) drop results
//! and closures before re-raising, so they contain such a panic and report it.
//!
//! # What is there, and what is not
//!
//! | | there | not there (rayon has it) |
//! | --- | --- | --- |
//! | sources | `par_iter()`, `par_iter_mut()` on slices, `Vec`s, arrays; `into_par_iter()` on `Vec<T>`, arrays, `Range` and `RangeInclusive` of every integer type (`u128`/`i128` too: indexed while the length fits a `usize`, unindexed beyond) and of `char`; `into_par_iter()`, `par_iter()` (and `par_iter_mut()` where std has `iter_mut`) on `VecDeque`, `HashMap`, `HashSet`, `BTreeMap`, `BTreeSet`, `LinkedList`, `BinaryHeap`, `Option`, `Result`; [`par_drain`](ParallelDrainRange::par_drain) on `Vec`, `VecDeque` and `String`, [`par_drain()`](ParallelDrainFull::par_drain) on `HashMap`, `HashSet`, `BinaryHeap`; [`ParallelString`] (`par_chars`, `par_char_indices`, `par_bytes`, `par_split`, `par_split_inclusive`, `par_split_terminator`, `par_lines`, `par_split_whitespace`, `par_split_ascii_whitespace`); [`par_bridge`](ParallelBridge::par_bridge); [`split`], [`repeat`], [`repeatn`], [`once`], [`empty`]; [`par_chunks`](ParallelSlice::par_chunks), [`par_chunks_mut`](ParallelSliceMut::par_chunks_mut) | `par_encode_utf16`, `par_matches`, `par_match_indices`, `par_windows`, `par_chunks_exact`, `par_rchunks` |
//! | adapters | [`map`](ParallelIterator::map), [`filter`](ParallelIterator::filter), [`with_min_len`](ParallelIterator::with_min_len); indexed: [`enumerate`](IndexedParallelIterator::enumerate), [`zip`](IndexedParallelIterator::zip) | `filter_map`, `flat_map`, `flatten`, `chain`, `cloned`/`copied`, `inspect`, `map_with`/`map_init`, `fold`, `take`/`skip`, `step_by`, `rev`, `chunks`, `with_max_len`, `panic_fuse`, `update`, `interleave` |
//! | consumers | [`for_each`](ParallelIterator::for_each), [`sum`](ParallelIterator::sum), [`count`](ParallelIterator::count), [`min`](ParallelIterator::min), [`max`](ParallelIterator::max), [`min_by_key`](ParallelIterator::min_by_key), [`max_by_key`](ParallelIterator::max_by_key), [`reduce`](ParallelIterator::reduce), [`any`](ParallelIterator::any), [`all`](ParallelIterator::all), [`collect`](ParallelIterator::collect) into `Vec` (order kept, also after `filter`), `VecDeque`, `LinkedList`, `HashMap`, `HashSet`, `BTreeMap`, `BTreeSet`, `BinaryHeap`, `Box<[T]>`, `Rc<[T]>`, `Arc<[T]>`, `String` (from `char`s and strings), `Cow`, `()`, and `Result<C, E>` / `Option<C>` (stopping at an `Err` / `None`) | `min_by`/`max_by`, `reduce_with`, `product`, `find_any`/`find_first`/`position_*`, `try_for_each`, `for_each_with`/`for_each_init`, `unzip`, `partition`, `collect_into_vec`, `par_extend` |
//! | slices | [`par_sort`](ParallelSliceMut::par_sort), [`par_sort_by`](ParallelSliceMut::par_sort_by), [`par_sort_by_key`](ParallelSliceMut::par_sort_by_key), [`par_sort_unstable`](ParallelSliceMut::par_sort_unstable), [`par_sort_unstable_by`](ParallelSliceMut::par_sort_unstable_by), [`par_sort_unstable_by_key`](ParallelSliceMut::par_sort_unstable_by_key) | `par_sort_by_cached_key`, `par_split`, binary search |
//! | plumbing | — | implementing your own producers and consumers: the traits are sealed |
//!
//! # Files
//!
//! | file | holds |
//! | --- | --- |
//! | `traits.rs` | [`ParallelIterator`], [`IndexedParallelIterator`], the `Into*` conversions, [`FromParallelIterator`] |
//! | `plumbing.rs` | producers, consumers, the splitter, and the bridge that splits one against the other |
//! | `adapters.rs` | [`Map`], [`Filter`], [`Enumerate`], [`Zip`], [`MinLen`] |
//! | `fold.rs` | the consumers that fold into one value |
//! | `collect.rs` | `collect` into a `Vec` |
//! | `collect_std.rs` | `collect` into the other collections, `Result` and `Option` |
//! | `slice.rs`, `vec.rs`, `range.rs` | the sources, [`ParallelSlice`], [`ParallelSliceMut`] |
//! | `collections.rs`, `option.rs` | the standard collections, `Option` and `Result` as sources |
//! | `drain.rs` | [`ParallelDrainRange`], [`ParallelDrainFull`] |
//! | `str.rs`, `pattern.rs` | [`ParallelString`], [`Pattern`] |
//! | `bridge.rs`, `split.rs`, `repeat.rs` | [`ParallelBridge`], [`split`], [`repeat`], [`repeatn`], [`once`], [`empty`] |
//! | `sort.rs` | the parallel sorts |

/// Defines a public source type over a producer: an indexed parallel iterator whose producer
/// is its one field.
macro_rules! indexed_source {
    ($(#[$doc:meta])* $name:ident <$($lt:lifetime,)? $($g:ident),*>
        where [$($bounds:tt)*] { producer: $producer:ty } => $item:ty) => {
        $(#[$doc])*
        #[derive(Debug)]
        #[must_use = "parallel iterators do nothing until consumed"]
        pub struct $name<$($lt,)? $($g),*> {
            producer: $producer,
        }

        impl<$($lt,)? $($g),*> $crate::iter::ParallelIterator for $name<$($lt,)? $($g),*>
        where
            $($bounds)*
        {
            type Item = $item;

            fn with_producer<CB>(self, callback: CB) -> CB::Output
            where
                CB: $crate::iter::plumbing::ProducerCallback<$item>,
            {
                callback.callback(self.producer)
            }

            fn opt_len(&self) -> Option<usize> {
                Some($crate::iter::plumbing::Producer::len(&self.producer))
            }
        }

        impl<$($lt,)? $($g),*> $crate::iter::IndexedParallelIterator for $name<$($lt,)? $($g),*>
        where
            $($bounds)*
        {
            fn len(&self) -> usize {
                $crate::iter::plumbing::Producer::len(&self.producer)
            }
        }
    };
}

mod adapters;
mod bridge;
mod collect;
mod collect_std;
mod collections;
mod drain;
mod fold;
mod option;
mod pattern;
mod plumbing;
mod range;
mod repeat;
mod slice;
mod sort;
mod split;
mod str;
mod traits;
mod vec;

pub use adapters::{Enumerate, Filter, Map, MinLen, Zip};
pub use bridge::{IterBridge, ParallelBridge};
pub use collections::{
    BTreeMapIntoIter, BTreeMapIter, BTreeMapIterMut, BTreeSetIntoIter, BTreeSetIter,
    BinaryHeapIntoIter, BinaryHeapIter, HashMapIntoIter, HashMapIter, HashMapIterMut,
    HashSetIntoIter, HashSetIter, LinkedListIntoIter, LinkedListIter, LinkedListIterMut,
    VecDequeIntoIter, VecDequeIter, VecDequeIterMut,
};
pub use drain::{Drained, ParallelDrainFull, ParallelDrainRange, VecDrain};
pub use option::{OptionIntoIter, OptionIter, OptionIterMut};
pub use range::{RangeInclusiveIter, RangeInteger, RangeIter};
pub use repeat::{empty, once, repeat, repeatn, Empty, Once, Repeat, RepeatN};
pub use slice::{Chunks, ChunksMut, ParallelSlice, ParallelSliceMut, SliceIter, SliceIterMut};
pub use split::{split, Split};
pub use str::{
    ParallelString, Pattern, StrBytes, StrCharIndices, StrChars, StrLines, StrSplit,
    StrSplitWhitespace,
};
pub use traits::{
    FromParallelIterator, IndexedParallelIterator, IntoParallelIterator, IntoParallelRefIterator,
    IntoParallelRefMutIterator, ParallelIterator,
};
pub use vec::{ArrayIntoIter, VecIntoIter};

/// The traits a parallel-iterator user needs in scope: `use ember::prelude::*;`.
///
/// ```
/// use ember::prelude::*;
/// let v = vec![1, 2, 3];
/// assert_eq!(v.par_iter().map(|x| x * 2).sum::<i32>(), 12);
/// ```
pub mod prelude {
    pub use super::{
        IndexedParallelIterator, IntoParallelIterator, IntoParallelRefIterator,
        IntoParallelRefMutIterator, ParallelBridge, ParallelDrainFull, ParallelDrainRange,
        ParallelIterator, ParallelSlice, ParallelSliceMut, ParallelString,
    };
}
