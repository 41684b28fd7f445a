//! [`MultiZip`]: `(a, b, c, …).into_par_iter()` (and `par_iter()`, `par_iter_mut()` on
//! tuples of references) for tuples of up to 12 indexed pipelines: their items in tuples,
//! as long as the shortest. It is nested `zip`s, flattened.

use super::conversions::IntoParallelIterator;
use super::plumbing::ProducerCallback;
use super::traits::{IndexedParallelIterator, ParallelIterator};

/// A tuple of indexed pipelines, zipped: items are tuples of one item of each.
///
/// ```
/// use ember::prelude::*;
/// let (a, b, c) = (vec![1, 2], vec!['x', 'y'], vec![true, false]);
/// let v: Vec<(&i32, &char, &bool)> = (&a, &b, &c).into_par_iter().collect();
/// assert_eq!(v, [(&1, &'x', &true), (&2, &'y', &false)]);
/// ```
#[derive(Clone, Debug)]
#[must_use = "parallel iterators do nothing until consumed"]
pub struct MultiZip<T> {
    tuple: T,
}

macro_rules! multizip {
    ($(($($t:ident $v:ident),+))+) => {$(
        impl<$($t),+> IntoParallelIterator for ($($t,)+)
        where
            $($t: IntoParallelIterator, $t::Iter: IndexedParallelIterator,)+
        {
            type Iter = MultiZip<($($t::Iter,)+)>;
            type Item = ($($t::Item,)+);
            fn into_par_iter(self) -> Self::Iter {
                let ($($v,)+) = self;
                MultiZip { tuple: ($($v.into_par_iter(),)+) }
            }
        }

        impl<$($t: IndexedParallelIterator),+> ParallelIterator for MultiZip<($($t,)+)> {
            type Item = ($($t::Item,)+);
            fn with_producer<CB: ProducerCallback<Self::Item>>(self, callback: CB) -> CB::Output {
                multizip!(@zip callback, self.tuple, $($t $v),+)
            }
            fn opt_len(&self) -> Option<usize> {
                Some(self.len())
            }
        }

        impl<$($t: IndexedParallelIterator),+> IndexedParallelIterator for MultiZip<($($t,)+)> {
            fn len(&self) -> usize {
                let ($($v,)+) = &self.tuple;
                let mut len = usize::MAX;
                $(len = len.min($v.len());)+
                len
            }
        }
    )+};
    (@zip $callback:ident, $tuple:expr, $($t:ident $v:ident),+) => {{
        let ($($v,)+) = $tuple;
        // Nested pairs, `(a, (b, c))`, flattened.
        multizip!(@zipped $($v)+)
            .map(|multizip!(@pattern $($v)+)| ($($v,)+))
            .with_producer($callback)
    }};
    (@zipped $v0:ident) => { $v0 };
    (@zipped $v0:ident $($v:ident)+) => { $v0.zip(multizip!(@zipped $($v)+)) };
    (@pattern $v0:ident) => { $v0 };
    (@pattern $v0:ident $($v:ident)+) => { ($v0, multizip!(@pattern $($v)+)) };
}

multizip! {
    (A a)
    (A a, B b)
    (A a, B b, C c)
    (A a, B b, C c, D d)
    (A a, B b, C c, D d, E e)
    (A a, B b, C c, D d, E e, F f)
    (A a, B b, C c, D d, E e, F f, G g)
    (A a, B b, C c, D d, E e, F f, G g, H h)
    (A a, B b, C c, D d, E e, F f, G g, H h, I i)
    (A a, B b, C c, D d, E e, F f, G g, H h, I i, J j)
    (A a, B b, C c, D d, E e, F f, G g, H h, I i, J j, K k)
    (A a, B b, C c, D d, E e, F f, G g, H h, I i, J j, K k, L l)
}
