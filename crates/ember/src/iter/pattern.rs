//! The separators of [`ParallelString`](super::ParallelString)'s splits.

/// What `par_split` and its kin accept as a separator: a `char`, a slice or array of
/// `char`s (any of them), or a closure `Fn(char) -> bool` (sealed).
///
/// ```
/// use ember::prelude::*;
/// let s = "a,b;c";
/// assert_eq!(s.par_split(',').count(), 2);
/// assert_eq!(s.par_split(&[',', ';'][..]).count(), 3);
/// assert_eq!(s.par_split([',', ';']).count(), 3);
/// assert_eq!(s.par_split(|c: char| !c.is_alphabetic()).count(), 3);
/// ```
pub trait Pattern: private::Sealed + Sync + Send {}

mod private {
    /// Where a pattern matches: every pattern here matches one `char`.
    pub trait Sealed {
        /// The first match in `s`, as the byte range of the matching char.
        fn find_in(&self, s: &str) -> Option<(usize, usize)>;
        /// The last match in `s`.
        fn rfind_in(&self, s: &str) -> Option<(usize, usize)>;
    }
}

/// The byte range of the char at `at` of `s`.
fn char_at(s: &str, at: usize) -> (usize, usize) {
    let len = s[at..].chars().next().map_or(0, char::len_utf8);
    (at, at + len)
}

impl private::Sealed for char {
    fn find_in(&self, s: &str) -> Option<(usize, usize)> {
        s.find(*self).map(|at| (at, at + self.len_utf8()))
    }
    fn rfind_in(&self, s: &str) -> Option<(usize, usize)> {
        s.rfind(*self).map(|at| (at, at + self.len_utf8()))
    }
}
impl Pattern for char {}

/// Implements the pattern of "any of these chars" for a type that derefs to `[char]`.
macro_rules! char_set_pattern {
    ($(impl[$($g:tt)*] $t:ty;)*) => {$(
        impl<$($g)*> private::Sealed for $t {
            fn find_in(&self, s: &str) -> Option<(usize, usize)> {
                s.find(|c| self.contains(&c)).map(|at| char_at(s, at))
            }
            fn rfind_in(&self, s: &str) -> Option<(usize, usize)> {
                s.rfind(|c| self.contains(&c)).map(|at| char_at(s, at))
            }
        }
        impl<$($g)*> Pattern for $t {}
    )*};
}

char_set_pattern! {
    impl['a] &'a [char];
    impl[const N: usize] [char; N];
    impl['a, const N: usize] &'a [char; N];
}

impl<F: Fn(char) -> bool + Sync + Send> private::Sealed for F {
    fn find_in(&self, s: &str) -> Option<(usize, usize)> {
        s.find(self).map(|at| char_at(s, at))
    }
    fn rfind_in(&self, s: &str) -> Option<(usize, usize)> {
        s.rfind(self).map(|at| char_at(s, at))
    }
}
impl<F: Fn(char) -> bool + Sync + Send> Pattern for F {}
