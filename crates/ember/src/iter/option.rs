//! `Option` and `Result` as sources: at most one item (the `Some`, or the `Ok`), by value,
//! by reference or by mutable reference. Indexed, as rayon's are.

use super::plumbing::{Producer, ProducerCallback};
use super::traits::{IndexedParallelIterator, IntoParallelIterator, ParallelIterator};

/// The one position of an `Option`, or none.
pub(super) struct OptionProducer<T>(pub(super) Option<T>);

impl<T: Send> Producer for OptionProducer<T> {
    type Item = T;
    type IntoIter = std::option::IntoIter<T>;
    fn len(&self) -> usize {
        usize::from(self.0.is_some())
    }
    fn split_at(self, index: usize) -> (Self, Self) {
        if index == 0 {
            (OptionProducer(None), self)
        } else {
            (self, OptionProducer(None))
        }
    }
    fn into_iter(self) -> Self::IntoIter {
        self.0.into_iter()
    }
}

/// Defines a source over an `Option` of its items, and its conversions.
macro_rules! option_source {
    ($(#[$doc:meta])* $name:ident <$($lt:lifetime,)? $t:ident>
        => $item:ty, where [$($bounds:tt)*]) => {
        $(#[$doc])*
        #[derive(Debug)]
        #[must_use = "parallel iterators do nothing until consumed"]
        pub struct $name<$($lt,)? $t> {
            item: Option<$item>,
        }

        impl<$($lt,)? $t> ParallelIterator for $name<$($lt,)? $t>
        where
            $($bounds)*
        {
            type Item = $item;
            fn with_producer<CB: ProducerCallback<$item>>(self, callback: CB) -> CB::Output {
                callback.callback(OptionProducer(self.item))
            }
            fn opt_len(&self) -> Option<usize> {
                Some(self.len())
            }
        }

        impl<$($lt,)? $t> $name<$($lt,)? $t> {
            fn from_option(item: Option<$item>) -> Self {
                $name { item }
            }
        }

        impl<$($lt,)? $t> IndexedParallelIterator for $name<$($lt,)? $t>
        where
            $($bounds)*
        {
            fn len(&self) -> usize {
                usize::from(self.item.is_some())
            }
        }

    };
}

option_source! {
    /// `into_par_iter()` of an `Option` (its `Some`) or a `Result` (its `Ok`), by value.
    ///
    /// ```
    /// use ember::prelude::*;
    /// assert_eq!(Some(3).into_par_iter().map(|x| x * 2).collect::<Vec<_>>(), [6]);
    /// assert_eq!(Err::<u8, ()>(()).into_par_iter().count(), 0);
    /// ```
    #[derive(Clone)]
    OptionIntoIter<T> => T, where [T: Send]
}

option_source! {
    /// `par_iter()` of an `Option` or a `Result`: its `Some` or `Ok` by reference.
    ///
    /// ```
    /// use ember::prelude::*;
    /// let name = Some(String::from("ember"));
    /// assert_eq!(name.par_iter().map(|s| s.len()).sum::<usize>(), 5);
    /// ```
    #[derive(Clone)]
    OptionIter<'a, T> => &'a T, where [T: Sync + 'a]
}

option_source! {
    /// `par_iter_mut()` of an `Option` or a `Result`: its `Some` or `Ok` by mutable
    /// reference.
    ///
    /// ```
    /// use ember::prelude::*;
    /// let mut total: Result<u32, String> = Ok(1);
    /// total.par_iter_mut().for_each(|t| *t += 1);
    /// assert_eq!(total, Ok(2));
    /// ```
    OptionIterMut<'a, T> => &'a mut T, where [T: Send + 'a]
}

/// Implements `IntoParallelIterator` for `$from`, whose item is `$convert` of it.
macro_rules! into_option_source {
    ($(impl[$($g:tt)*] $from:ty => $iter:ty, $item:ty, |$source:ident| $convert:expr;)*) => {$(
        impl<$($g)*> IntoParallelIterator for $from {
            type Iter = $iter;
            type Item = $item;
            fn into_par_iter(self) -> $iter {
                let $source = self;
                <$iter>::from_option($convert)
            }
        }
    )*};
}

into_option_source! {
    impl[T: Send] Option<T> => OptionIntoIter<T>, T, |option| option;
    impl[T: Send, E] Result<T, E> => OptionIntoIter<T>, T, |result| result.ok();
    impl['a, T: Sync] &'a Option<T> => OptionIter<'a, T>, &'a T, |option| option.as_ref();
    impl['a, T: Sync, E] &'a Result<T, E> => OptionIter<'a, T>, &'a T, |result| result.as_ref().ok();
    impl['a, T: Send] &'a mut Option<T> => OptionIterMut<'a, T>, &'a mut T, |option| option.as_mut();
    impl['a, T: Send, E] &'a mut Result<T, E> => OptionIterMut<'a, T>, &'a mut T,
        |result| result.as_mut().ok();
}
