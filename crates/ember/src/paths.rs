//! rayon's module paths for the parallel iterator types (`ember::range::Iter`,
//! `ember::collections::hash_map::IntoIter`, …), so that code naming them ports by
//! changing the crate's name. The types themselves live in [`crate::iter`].

/// `(a..b).into_par_iter()`'s type.
///
/// ```
/// let it: ember::range::Iter<u32> = ember::prelude::IntoParallelIterator::into_par_iter(0..3u32);
/// # let _ = it;
/// ```
pub mod range {
    pub use crate::iter::RangeIter as Iter;
}

/// `(a..=b).into_par_iter()`'s type.
///
/// ```
/// use ember::prelude::*;
/// let it: ember::range_inclusive::Iter<u8> = (0..=3u8).into_par_iter();
/// assert_eq!(it.count(), 4);
/// ```
pub mod range_inclusive {
    pub use crate::iter::RangeInclusiveIter as Iter;
}

/// The types of `Vec`'s `into_par_iter()` and `par_drain()`.
///
/// ```
/// use ember::prelude::*;
/// let it: ember::vec::IntoIter<u8> = vec![1u8].into_par_iter();
/// assert_eq!(it.count(), 1);
/// ```
pub mod vec {
    pub use crate::iter::{VecDrain as Drain, VecIntoIter as IntoIter};
}

/// The types of slices' parallel iterators, and the slice traits.
///
/// ```
/// use ember::prelude::*;
/// let it: ember::slice::Iter<'_, u8> = [1u8, 2].par_iter();
/// assert_eq!(it.count(), 2);
/// ```
pub mod slice {
    pub use crate::iter::{
        Chunks, ChunksMut, ParallelSlice, ParallelSliceMut, SliceIter as Iter,
        SliceIterMut as IterMut,
    };
}

/// Arrays' `into_par_iter()` type.
///
/// ```
/// use ember::prelude::*;
/// let it: ember::array::IntoIter<u8, 2> = [1u8, 2].into_par_iter();
/// assert_eq!(it.count(), 2);
/// ```
pub mod array {
    pub use crate::iter::ArrayIntoIter as IntoIter;
}

/// `Option`'s parallel iterator types.
///
/// ```
/// use ember::prelude::*;
/// let it: ember::option::IntoIter<u8> = Some(1u8).into_par_iter();
/// assert_eq!(it.count(), 1);
/// ```
pub mod option {
    pub use crate::iter::{
        OptionIntoIter as IntoIter, OptionIter as Iter, OptionIterMut as IterMut,
    };
}

/// `Result`'s parallel iterator types (over its `Ok` value).
///
/// ```
/// use ember::prelude::*;
/// let it: ember::result::IntoIter<u8> = Ok::<u8, ()>(1).into_par_iter();
/// assert_eq!(it.count(), 1);
/// ```
pub mod result {
    pub use crate::iter::{
        OptionIntoIter as IntoIter, OptionIter as Iter, OptionIterMut as IterMut,
    };
}

/// The string types: [`ParallelString`](crate::iter::ParallelString) and its iterators.
///
/// ```
/// use ember::str::ParallelString;
/// let it: ember::str::Lines<'_> = "a\nb".par_lines();
/// # let _ = it;
/// ```
pub mod str {
    pub use crate::iter::{
        ParallelString, Pattern, StrBytes as Bytes, StrCharIndices as CharIndices,
        StrChars as Chars, StrLines as Lines, StrSplit as Split, StrSplit as SplitInclusive,
        StrSplit as SplitTerminator, StrSplitWhitespace as SplitWhitespace,
    };
}

/// `String::par_drain`'s type.
///
/// ```
/// use ember::prelude::*;
/// let mut s = String::from("abc");
/// let it: ember::string::Drain<'_> = s.par_drain(1..);
/// assert_eq!(it.count(), 2);
/// ```
pub mod string {
    /// `par_drain(range)`'s type: the chars drained.
    pub type Drain<'a> = crate::iter::Drained<'a, char>;
}

/// The standard collections' parallel iterator types, one module per collection.
///
/// ```
/// use ember::prelude::*;
/// use std::collections::HashMap;
/// let m: HashMap<u8, u8> = HashMap::new();
/// let it: ember::collections::hash_map::Iter<'_, u8, u8> = m.par_iter();
/// assert_eq!(it.count(), 0);
/// ```
pub mod collections {
    /// `HashMap`'s.
    pub mod hash_map {
        pub use crate::iter::{
            HashMapIntoIter as IntoIter, HashMapIter as Iter, HashMapIterMut as IterMut,
        };
        /// `par_drain()`'s type.
        pub type Drain<'a, K, V> = crate::iter::Drained<'a, (K, V)>;
    }
    /// `HashSet`'s.
    pub mod hash_set {
        pub use crate::iter::{Drained as Drain, HashSetIntoIter as IntoIter, HashSetIter as Iter};
    }
    /// `BTreeMap`'s.
    pub mod btree_map {
        pub use crate::iter::{
            BTreeMapIntoIter as IntoIter, BTreeMapIter as Iter, BTreeMapIterMut as IterMut,
        };
    }
    /// `BTreeSet`'s.
    pub mod btree_set {
        pub use crate::iter::{BTreeSetIntoIter as IntoIter, BTreeSetIter as Iter};
    }
    /// `LinkedList`'s.
    pub mod linked_list {
        pub use crate::iter::{
            LinkedListIntoIter as IntoIter, LinkedListIter as Iter, LinkedListIterMut as IterMut,
        };
    }
    /// `VecDeque`'s.
    pub mod vec_deque {
        pub use crate::iter::{
            Drained as Drain, VecDequeIntoIter as IntoIter, VecDequeIter as Iter,
            VecDequeIterMut as IterMut,
        };
    }
    /// `BinaryHeap`'s.
    pub mod binary_heap {
        pub use crate::iter::{
            BinaryHeapIntoIter as IntoIter, BinaryHeapIter as Iter, Drained as Drain,
        };
    }
}
