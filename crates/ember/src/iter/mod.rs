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
//! [`with_min_len`](ParallelIterator::with_min_len) bounds how small a piece may get,
//! [`with_max_len`](ParallelIterator::with_max_len) how large.
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
//! | sources | `par_iter()`, `par_iter_mut()` on slices, `Vec`s, arrays; `into_par_iter()` on `Vec<T>`, arrays, `Range` and `RangeInclusive` of every integer type (`u128`/`i128` too: indexed while the length fits a `usize`, unindexed beyond) and of `char`; `into_par_iter()`, `par_iter()` (and `par_iter_mut()` where std has `iter_mut`) on `VecDeque`, `HashMap`, `HashSet`, `BTreeMap`, `BTreeSet`, `LinkedList`, `BinaryHeap`, `Option`, `Result`; [`par_drain`](ParallelDrainRange::par_drain) on `Vec`, `VecDeque` and `String`, [`par_drain()`](ParallelDrainFull::par_drain) on `HashMap`, `HashSet`, `BinaryHeap`; [`ParallelString`] (`par_chars`, `par_char_indices`, `par_bytes`, `par_split`, `par_split_inclusive`, `par_split_terminator`, `par_lines`, `par_split_whitespace`, `par_split_ascii_whitespace`); [`par_bridge`](ParallelBridge::par_bridge); [`split`], [`repeat`], [`repeatn`], [`once`], [`empty`]; [`repeat_n`], `(a, b, …)` tuples of up to 12 indexed pipelines ([`MultiZip`]); [`par_chunks`](ParallelSlice::par_chunks), [`par_chunks_exact`](ParallelSlice::par_chunks_exact), [`par_rchunks`](ParallelSlice::par_rchunks), [`par_rchunks_exact`](ParallelSlice::par_rchunks_exact), [`par_windows`](ParallelSlice::par_windows), [`par_array_windows`](ParallelSlice::par_array_windows), [`par_split`](ParallelSlice::par_split), [`par_split_inclusive`](ParallelSlice::par_split_inclusive), [`par_chunk_by`](ParallelSlice::par_chunk_by), [`par_chunks_mut`](ParallelSliceMut::par_chunks_mut) | `par_encode_utf16`, `par_matches`, `par_match_indices`, `walk_tree` |
//! | adapters | [`map`](ParallelIterator::map), [`filter`](ParallelIterator::filter), [`filter_map`](ParallelIterator::filter_map), [`flat_map`](ParallelIterator::flat_map) (each inner parallel iterator split over the pool too, as rayon's), [`flat_map_iter`](ParallelIterator::flat_map_iter), [`flatten`](ParallelIterator::flatten), [`flatten_iter`](ParallelIterator::flatten_iter), [`chain`](ParallelIterator::chain), [`copied`](ParallelIterator::copied), [`cloned`](ParallelIterator::cloned), [`inspect`](ParallelIterator::inspect), [`update`](ParallelIterator::update), [`map_with`](ParallelIterator::map_with), [`map_init`](ParallelIterator::map_init), [`fold`](ParallelIterator::fold), [`fold_with`](ParallelIterator::fold_with), [`try_fold`](ParallelIterator::try_fold), [`try_fold_with`](ParallelIterator::try_fold_with), [`with_min_len`](ParallelIterator::with_min_len), [`with_max_len`](ParallelIterator::with_max_len), [`panic_fuse`](ParallelIterator::panic_fuse); indexed: [`enumerate`](IndexedParallelIterator::enumerate), [`zip`](IndexedParallelIterator::zip), [`take`](IndexedParallelIterator::take), [`skip`](IndexedParallelIterator::skip), [`step_by`](IndexedParallelIterator::step_by), [`rev`](IndexedParallelIterator::rev), [`chunks`](IndexedParallelIterator::chunks), [`fold_chunks`](IndexedParallelIterator::fold_chunks), [`fold_chunks_with`](IndexedParallelIterator::fold_chunks_with), [`interleave`](IndexedParallelIterator::interleave), [`interleave_shortest`](IndexedParallelIterator::interleave_shortest), [`intersperse`](IndexedParallelIterator::intersperse) (indexed only: rayon's takes any), [`zip_eq`](IndexedParallelIterator::zip_eq), [`positions`](IndexedParallelIterator::positions), [`by_exponential_blocks`](IndexedParallelIterator::by_exponential_blocks), [`by_uniform_blocks`](IndexedParallelIterator::by_uniform_blocks); any order: [`take_any`](ParallelIterator::take_any), [`skip_any`](ParallelIterator::skip_any), [`take_any_while`](ParallelIterator::take_any_while), [`skip_any_while`](ParallelIterator::skip_any_while), [`while_some`](ParallelIterator::while_some) | `intersperse` of an unindexed pipeline |
//! | consumers | [`for_each`](ParallelIterator::for_each), [`for_each_with`](ParallelIterator::for_each_with), [`for_each_init`](ParallelIterator::for_each_init), [`try_for_each`](ParallelIterator::try_for_each), [`try_for_each_with`](ParallelIterator::try_for_each_with), [`try_for_each_init`](ParallelIterator::try_for_each_init), [`sum`](ParallelIterator::sum), [`product`](ParallelIterator::product), [`count`](ParallelIterator::count), [`min`](ParallelIterator::min), [`max`](ParallelIterator::max), [`min_by`](ParallelIterator::min_by), [`max_by`](ParallelIterator::max_by), [`min_by_key`](ParallelIterator::min_by_key), [`max_by_key`](ParallelIterator::max_by_key), [`reduce`](ParallelIterator::reduce), [`reduce_with`](ParallelIterator::reduce_with), [`try_reduce`](ParallelIterator::try_reduce), [`try_reduce_with`](ParallelIterator::try_reduce_with), [`any`](ParallelIterator::any), [`all`](ParallelIterator::all), [`find_any`](ParallelIterator::find_any), [`find_first`](ParallelIterator::find_first), [`find_last`](ParallelIterator::find_last), `find_map_*`, `position_*` (indexed), [`unzip`](ParallelIterator::unzip), [`partition`](ParallelIterator::partition), [`collect`](ParallelIterator::collect) into `Vec` (order kept, also after `filter`), `VecDeque`, `LinkedList`, `HashMap`, `HashSet`, `BTreeMap`, `BTreeSet`, `BinaryHeap`, `Box<[T]>`, `Rc<[T]>`, `Arc<[T]>`, `String` (from `char`s and strings), `Cow`, `()`, and `Result<C, E>` / `Option<C>` (stopping at an `Err` / `None`), [`collect_into_vec`](IndexedParallelIterator::collect_into_vec), [`par_extend`](ParallelExtend::par_extend) of a `Vec` | `partition_map`, `par_extend` of other collections, `unzip_into_vecs`, `cmp`/`eq` |
//! | slices | [`par_sort`](ParallelSliceMut::par_sort), [`par_sort_by`](ParallelSliceMut::par_sort_by), [`par_sort_by_key`](ParallelSliceMut::par_sort_by_key), [`par_sort_unstable`](ParallelSliceMut::par_sort_unstable), [`par_sort_unstable_by`](ParallelSliceMut::par_sort_unstable_by), [`par_sort_unstable_by_key`](ParallelSliceMut::par_sort_unstable_by_key) | `par_sort_by_cached_key`, `par_split`, binary search |
//! | plumbing | [`plumbing`]: [`Producer`](plumbing::Producer), [`ProducerCallback`](plumbing::ProducerCallback), [`Consumer`](plumbing::Consumer), [`Reducer`](plumbing::Reducer), [`drive`](plumbing::drive), for sources, adapters and consumers of your own (ember's traits, smaller than rayon's) | rayon's `UnindexedProducer`, `UnindexedConsumer`, `Folder`, `bridge*`, `max_len` |
//!
//! # Files
//!
//! | file | holds |
//! | --- | --- |
//! | `traits.rs` | [`ParallelIterator`] |
//! | `indexed.rs` | [`IndexedParallelIterator`] |
//! | `conversions.rs` | the `Into*` conversions, [`FromParallelIterator`] |
//! | `plumbing.rs` | [`plumbing`]: producers, consumers, the splitter, and the bridge that splits one against the other |
//! | `adapters.rs` | [`Map`], [`Filter`], [`Enumerate`], [`Zip`], [`MinLen`], [`MaxLen`] |
//! | `item_chunks.rs`, `interleave.rs`, `intersperse.rs`, `positions.rs`, `blocks.rs` | [`ItemChunks`] (`chunks`), [`FoldChunks`], [`FoldChunksWith`]; [`Interleave`], [`InterleaveShortest`]; [`Intersperse`]; [`Positions`], [`ZipEq`]; [`ExponentialBlocks`], [`UniformBlocks`] |
//! | `any_limits.rs` | [`TakeAny`], [`SkipAny`], [`TakeAnyWhile`], [`SkipAnyWhile`], [`WhileSome`] |
//! | `multizip.rs` | [`MultiZip`]: tuples of indexed pipelines |
//! | `map_like.rs` | the adapters that act on one item at a time ([`MapWith`], [`FilterMap`], …) |
//! | `flat_map.rs`, `chain.rs`, `take_skip.rs` | [`FlatMap`] and its kin, [`Chain`], [`Take`], [`Skip`], [`StepBy`], [`Rev`] |
//! | `fold_adapters.rs` | [`Fold`], [`FoldWith`], [`TryFold`], [`TryFoldWith`] |
//! | `fold.rs` | the consumers that fold into one value |
//! | `try_consumers.rs`, `find.rs` | `try_for_each`/`try_reduce`; the `find_*` searches, which stop early |
//! | `collect.rs`, `extend.rs` | `collect` into a `Vec`; [`ParallelExtend`], `unzip`, `partition` |
//! | `collect_std.rs` | `collect` into the other collections, `Result` and `Option` |
//! | `slice.rs`, `vec.rs`, `range.rs` | the sources, [`ParallelSlice`], [`ParallelSliceMut`] |
//! | `slice_views.rs`, `slice_split.rs` | [`ChunksExact`], [`RChunks`], [`RChunksExact`], [`Windows`], [`ArrayWindows`]; [`SliceSplit`], [`SliceSplitInclusive`], [`ChunkBy`] |
//! | `collections.rs`, `option.rs` | the standard collections, `Option` and `Result` as sources |
//! | `drain.rs` | [`ParallelDrainRange`], [`ParallelDrainFull`] |
//! | `str.rs`, `pattern.rs` | [`ParallelString`], [`Pattern`] |
//! | `bridge.rs`, `split.rs`, `repeat.rs` | [`ParallelBridge`], [`split`], [`repeat`], [`repeatn`], [`repeat_n`], [`once`], [`empty`] |
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
mod any_limits;
mod blocks;
mod bridge;
mod chain;
mod collect;
mod collect_std;
mod collections;
mod conversions;
mod drain;
mod extend;
mod find;
mod flat_map;
mod fold;
mod fold_adapters;
mod indexed;
mod interleave;
mod intersperse;
mod item_chunks;
mod map_like;
mod multizip;
mod option;
mod pattern;
pub mod plumbing;
mod positions;
mod range;
mod repeat;
mod slice;
mod slice_split;
mod slice_views;
mod sort;
mod split;
mod str;
mod take_skip;
mod traits;
mod try_consumers;
mod vec;

pub use adapters::{Enumerate, Filter, Map, MaxLen, MinLen, Zip};
pub use any_limits::{SkipAny, SkipAnyWhile, TakeAny, TakeAnyWhile, WhileSome};
pub use blocks::{ExponentialBlocks, UniformBlocks};
pub use bridge::{IterBridge, ParallelBridge};
pub use chain::Chain;
pub use collections::{
    BTreeMapIntoIter, BTreeMapIter, BTreeMapIterMut, BTreeSetIntoIter, BTreeSetIter,
    BinaryHeapIntoIter, BinaryHeapIter, HashMapIntoIter, HashMapIter, HashMapIterMut,
    HashSetIntoIter, HashSetIter, LinkedListIntoIter, LinkedListIter, LinkedListIterMut,
    VecDequeIntoIter, VecDequeIter, VecDequeIterMut,
};
pub use drain::{Drained, ParallelDrainFull, ParallelDrainRange, VecDrain};
pub use extend::ParallelExtend;
pub use flat_map::{FlatMap, FlatMapIter, Flatten, FlattenIter};
pub use fold_adapters::{Fold, FoldWith, TryFold, TryFoldWith};
pub use interleave::{Interleave, InterleaveShortest};
pub use intersperse::Intersperse;
pub use item_chunks::{FoldChunks, FoldChunksWith, ItemChunks};
pub use map_like::{Cloned, Copied, FilterMap, Inspect, MapInit, MapWith, PanicFuse, Update};
pub use multizip::MultiZip;
pub use option::{OptionIntoIter, OptionIter, OptionIterMut};
pub use positions::{Positions, ZipEq};
pub use range::{RangeInclusiveIter, RangeInteger, RangeIter};
pub use repeat::{empty, once, repeat, repeat_n, repeatn, Empty, Once, Repeat, RepeatN};
pub use slice::{Chunks, ChunksMut, ParallelSlice, ParallelSliceMut, SliceIter, SliceIterMut};
pub use slice_split::{ChunkBy, SliceSplit, SliceSplitInclusive};
pub use slice_views::{ArrayWindows, ChunksExact, RChunks, RChunksExact, Windows};
pub use split::{split, Split};
pub use str::{
    ParallelString, Pattern, StrBytes, StrCharIndices, StrChars, StrLines, StrSplit,
    StrSplitWhitespace,
};
pub use take_skip::{Rev, Skip, StepBy, Take};
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
        ParallelExtend, ParallelIterator, ParallelSlice, ParallelSliceMut, ParallelString,
    };
}
