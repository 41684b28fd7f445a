//! [`ParallelString`]: `par_chars`, `par_char_indices`, `par_bytes`, `par_split`,
//! `par_split_inclusive`, `par_split_terminator`, `par_lines`, `par_split_whitespace`,
//! `par_split_ascii_whitespace` on `str` (and so on `String`).
//!
//! A string splits at a char boundary near the middle (chars) or at a separator near the
//! middle (the splits): each half is then split sequentially by the standard library's
//! rules, and the halves' pieces, concatenated, are the whole string's. Only the piece at
//! the end of the string drops a trailing empty piece (`par_split_terminator`). These
//! sources are not indexed: a piece's count of items is not known before it is scanned.

use std::marker::PhantomData;

pub use super::pattern::Pattern;
use super::plumbing::{Producer, ProducerCallback};
use super::traits::{IndexedParallelIterator, ParallelIterator};

/// Parallel iterators over a string's chars, bytes and pieces. In the prelude.
///
/// ```
/// use ember::prelude::*;
/// let text = String::from("one two\nthree four\n");
/// assert_eq!(text.par_lines().count(), 2);
/// assert_eq!(text.par_split_whitespace().map(str::len).sum::<usize>(), 15);
/// ```
pub trait ParallelString {
    /// The string itself.
    ///
    /// ```
    /// use ember::prelude::*;
    /// assert_eq!("abc".as_parallel_string(), "abc");
    /// ```
    fn as_parallel_string(&self) -> &str;

    /// The chars, as [`str::chars`].
    ///
    /// ```
    /// use ember::prelude::*;
    /// assert_eq!("héllo".par_chars().filter(|c| c.is_ascii()).count(), 4);
    /// ```
    fn par_chars(&self) -> StrChars<'_> {
        StrChars {
            s: self.as_parallel_string(),
        }
    }

    /// The chars and their byte offsets, as [`str::char_indices`].
    ///
    /// ```
    /// use ember::prelude::*;
    /// let v: Vec<(usize, char)> = "aé!".par_char_indices().collect();
    /// assert_eq!(v, [(0, 'a'), (1, 'é'), (3, '!')]);
    /// ```
    fn par_char_indices(&self) -> StrCharIndices<'_> {
        StrCharIndices {
            s: self.as_parallel_string(),
        }
    }

    /// The bytes, as [`str::bytes`] (indexed).
    ///
    /// ```
    /// use ember::prelude::*;
    /// assert_eq!("abc".par_bytes().map(u32::from).sum::<u32>(), 294);
    /// ```
    fn par_bytes(&self) -> StrBytes<'_> {
        StrBytes {
            bytes: self.as_parallel_string().as_bytes(),
        }
    }

    /// The pieces between separators, as [`str::split`].
    ///
    /// ```
    /// use ember::prelude::*;
    /// let v: Vec<&str> = "a,b,,c".par_split(',').collect();
    /// assert_eq!(v, ["a", "b", "", "c"]);
    /// ```
    fn par_split<P: Pattern>(&self, separator: P) -> StrSplit<'_, P> {
        StrSplit::new(self.as_parallel_string(), separator, Kind::Split)
    }

    /// The pieces, each ending with its separator, as [`str::split_inclusive`].
    ///
    /// ```
    /// use ember::prelude::*;
    /// let v: Vec<&str> = "a,b,c".par_split_inclusive(',').collect();
    /// assert_eq!(v, ["a,", "b,", "c"]);
    /// ```
    fn par_split_inclusive<P: Pattern>(&self, separator: P) -> StrSplit<'_, P> {
        StrSplit::new(self.as_parallel_string(), separator, Kind::Inclusive)
    }

    /// The pieces between terminators, as [`str::split_terminator`]: no empty last piece.
    ///
    /// ```
    /// use ember::prelude::*;
    /// let v: Vec<&str> = "a;b;".par_split_terminator(';').collect();
    /// assert_eq!(v, ["a", "b"]);
    /// ```
    fn par_split_terminator<P: Pattern>(&self, terminator: P) -> StrSplit<'_, P> {
        StrSplit::new(self.as_parallel_string(), terminator, Kind::Terminator)
    }

    /// The lines, without their `\n` or `\r\n`, as [`str::lines`].
    ///
    /// ```
    /// use ember::prelude::*;
    /// let v: Vec<&str> = "one\r\ntwo\n\nthree".par_lines().collect();
    /// assert_eq!(v, ["one", "two", "", "three"]);
    /// ```
    fn par_lines(&self) -> StrLines<'_> {
        StrSplit::new(self.as_parallel_string(), '\n', Kind::Lines)
    }

    /// The non-empty pieces between whitespace, as [`str::split_whitespace`].
    ///
    /// ```
    /// use ember::prelude::*;
    /// let v: Vec<&str> = "  a  b\tc ".par_split_whitespace().collect();
    /// assert_eq!(v, ["a", "b", "c"]);
    /// ```
    fn par_split_whitespace(&self) -> StrSplitWhitespace<'_> {
        let whitespace: fn(char) -> bool = char::is_whitespace;
        StrSplit::new(self.as_parallel_string(), whitespace, Kind::Whitespace)
    }

    /// The non-empty pieces between ASCII whitespace, as [`str::split_ascii_whitespace`].
    ///
    /// ```
    /// use ember::prelude::*;
    /// let v: Vec<&str> = " a\u{3000}b  c".par_split_ascii_whitespace().collect();
    /// assert_eq!(v, ["a\u{3000}b", "c"]);
    /// ```
    fn par_split_ascii_whitespace(&self) -> StrSplitWhitespace<'_> {
        let whitespace: fn(char) -> bool = |c| c.is_ascii_whitespace();
        StrSplit::new(self.as_parallel_string(), whitespace, Kind::Whitespace)
    }
}

impl ParallelString for str {
    fn as_parallel_string(&self) -> &str {
        self
    }
}

/// The cut of a piece of `len` bytes over `positions` positions at `index`, in proportion.
fn proportional(len: usize, index: usize, positions: usize) -> usize {
    (len as u128 * index as u128 / positions.max(1) as u128) as usize
}

/// The char boundary of `s` at or after `at`, else the one before it.
fn boundary_near(s: &str, at: usize) -> usize {
    (at..s.len())
        .find(|&i| s.is_char_boundary(i))
        .or_else(|| (0..at.min(s.len())).rev().find(|&i| s.is_char_boundary(i)))
        .unwrap_or(0)
}

/// How a leaf of chars iterates its piece (at byte `offset` of the string).
trait CharLeaf {
    type Item;
    type Iter<'a>: Iterator<Item = Self::Item>;
    fn iter(s: &str, offset: usize) -> Self::Iter<'_>;
}

/// The leaves of `par_chars`.
struct PlainChars;

impl CharLeaf for PlainChars {
    type Item = char;
    type Iter<'a> = std::str::Chars<'a>;
    fn iter(s: &str, _offset: usize) -> Self::Iter<'_> {
        s.chars()
    }
}

/// The leaves of `par_char_indices`.
struct Indexed;

impl CharLeaf for Indexed {
    type Item = (usize, char);
    type Iter<'a> = OffsetIndices<'a>;
    fn iter(s: &str, offset: usize) -> Self::Iter<'_> {
        OffsetIndices {
            chars: s.char_indices(),
            offset,
        }
    }
}

/// `char_indices` of a piece that starts at byte `offset` of the string.
struct OffsetIndices<'a> {
    chars: std::str::CharIndices<'a>,
    offset: usize,
}

impl Iterator for OffsetIndices<'_> {
    type Item = (usize, char);
    fn next(&mut self) -> Option<(usize, char)> {
        let (at, c) = self.chars.next()?;
        Some((self.offset + at, c))
    }
}

/// A piece of a string, at byte `offset`, split at char boundaries. At most as many
/// positions as bytes (an empty piece has none), and never more than it was given.
struct CharsProducer<'a, K> {
    s: &'a str,
    offset: usize,
    positions: usize,
    leaf: PhantomData<fn() -> K>,
}

impl<'a, K> CharsProducer<'a, K> {
    fn new(s: &'a str) -> Self {
        CharsProducer {
            s,
            offset: 0,
            positions: s.len(),
            leaf: PhantomData,
        }
    }
}

impl<'a, K: CharLeaf> Producer for CharsProducer<'a, K>
where
    K::Item: Send,
{
    type Item = K::Item;
    type IntoIter = K::Iter<'a>;
    fn len(&self) -> usize {
        self.positions
    }
    fn split_at(self, index: usize) -> (Self, Self) {
        let cut = boundary_near(self.s, proportional(self.s.len(), index, self.positions));
        let (left, right) = self.s.split_at(cut);
        (
            CharsProducer {
                s: left,
                offset: self.offset,
                positions: index.min(left.len()),
                leaf: PhantomData,
            },
            CharsProducer {
                s: right,
                offset: self.offset + cut,
                positions: (self.positions - index).min(right.len()),
                leaf: PhantomData,
            },
        )
    }
    fn into_iter(self) -> Self::IntoIter {
        K::iter(self.s, self.offset)
    }
}

/// Defines a public source of chars over `CharsProducer<$leaf>`.
macro_rules! chars_source {
    ($(#[$doc:meta])* $name:ident, $leaf:ty => $item:ty) => {
        $(#[$doc])*
        #[derive(Clone, Debug)]
        #[must_use = "parallel iterators do nothing until consumed"]
        pub struct $name<'a> {
            s: &'a str,
        }

        impl ParallelIterator for $name<'_> {
            type Item = $item;
            fn with_producer<CB: ProducerCallback<$item>>(self, callback: CB) -> CB::Output {
                callback.callback(CharsProducer::<$leaf>::new(self.s))
            }
        }
    };
}

chars_source! {
    /// [`ParallelString::par_chars`]: the chars of a string.
    ///
    /// ```
    /// use ember::prelude::*;
    /// let upper: String = "abc".par_chars().map(|c| c.to_ascii_uppercase()).collect();
    /// assert_eq!(upper, "ABC");
    /// ```
    StrChars, PlainChars => char
}

chars_source! {
    /// [`ParallelString::par_char_indices`]: the chars of a string and their byte offsets.
    ///
    /// ```
    /// use ember::prelude::*;
    /// let last = "añb".par_char_indices().max_by_key(|(i, _)| *i);
    /// assert_eq!(last, Some((3, 'b')));
    /// ```
    StrCharIndices, Indexed => (usize, char)
}

/// The bytes of a string, split anywhere.
struct BytesProducer<'a>(&'a [u8]);

impl<'a> Producer for BytesProducer<'a> {
    type Item = u8;
    type IntoIter = std::iter::Copied<std::slice::Iter<'a, u8>>;
    fn len(&self) -> usize {
        self.0.len()
    }
    fn split_at(self, index: usize) -> (Self, Self) {
        let (left, right) = self.0.split_at(index);
        (BytesProducer(left), BytesProducer(right))
    }
    fn into_iter(self) -> Self::IntoIter {
        self.0.iter().copied()
    }
}

/// [`ParallelString::par_bytes`]: the bytes of a string (indexed).
///
/// ```
/// use ember::prelude::*;
/// assert_eq!("hello".par_bytes().filter(|b| *b == b'l').count(), 2);
/// ```
#[derive(Clone, Debug)]
#[must_use = "parallel iterators do nothing until consumed"]
pub struct StrBytes<'a> {
    bytes: &'a [u8],
}

impl ParallelIterator for StrBytes<'_> {
    type Item = u8;
    fn with_producer<CB: ProducerCallback<u8>>(self, callback: CB) -> CB::Output {
        callback.callback(BytesProducer(self.bytes))
    }
    fn opt_len(&self) -> Option<usize> {
        Some(self.bytes.len())
    }
}

impl IndexedParallelIterator for StrBytes<'_> {
    fn len(&self) -> usize {
        self.bytes.len()
    }
}

/// Which sequential split a [`StrSplit`] makes of each piece.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Kind {
    /// `split`.
    Split,
    /// `split_inclusive`.
    Inclusive,
    /// `split_terminator`: `split`, but the string's last piece drops an empty last item.
    Terminator,
    /// `lines`: `split_inclusive('\n')`, each line without its `\n` or `\r\n`.
    Lines,
    /// `split_whitespace`: `split`, without the empty items.
    Whitespace,
}

/// The pieces of a string between matches of a pattern: `par_split`,
/// `par_split_inclusive` and `par_split_terminator` (and, with their own patterns,
/// `par_lines` and `par_split_whitespace`).
///
/// ```
/// use ember::prelude::*;
/// let csv = "1,2,3,4";
/// assert_eq!(csv.par_split(',').map(|n| n.parse::<u32>().unwrap()).sum::<u32>(), 10);
/// ```
#[derive(Clone, Debug)]
#[must_use = "parallel iterators do nothing until consumed"]
pub struct StrSplit<'a, P> {
    s: &'a str,
    pattern: P,
    kind: Kind,
}

/// [`ParallelString::par_lines`]: the lines of a string.
///
/// ```
/// use ember::prelude::*;
/// let lines: ember::iter::StrLines<'_> = "a\nb".par_lines();
/// assert_eq!(lines.count(), 2);
/// ```
pub type StrLines<'a> = StrSplit<'a, char>;

/// [`ParallelString::par_split_whitespace`]: the words of a string.
///
/// ```
/// use ember::prelude::*;
/// let words: ember::iter::StrSplitWhitespace<'_> = " a b ".par_split_whitespace();
/// assert_eq!(words.count(), 2);
/// ```
pub type StrSplitWhitespace<'a> = StrSplit<'a, fn(char) -> bool>;

impl<'a, P: Pattern> StrSplit<'a, P> {
    fn new(s: &'a str, pattern: P, kind: Kind) -> Self {
        StrSplit { s, pattern, kind }
    }
}

impl<'a, P: Pattern> ParallelIterator for StrSplit<'a, P> {
    type Item = &'a str;
    fn with_producer<CB: ProducerCallback<&'a str>>(self, callback: CB) -> CB::Output {
        callback.callback(SplitProducer {
            s: Some(self.s),
            pattern: &self.pattern,
            kind: self.kind,
            positions: self.s.len(),
            last: true,
            whole: false,
        })
    }
}

/// A piece of the string; its items are its split by `kind`.
struct SplitProducer<'a, 'p, P> {
    /// The piece (`None`: no piece at all, not even an empty one).
    s: Option<&'a str>,
    pattern: &'p P,
    kind: Kind,
    /// At most as many as bytes, and never more than the piece was given.
    positions: usize,
    /// The piece ends the string (a `Terminator` piece drops an empty last item).
    last: bool,
    /// The piece holds no match: it no longer splits.
    whole: bool,
}

impl<'a, P: Pattern> SplitProducer<'a, '_, P> {
    /// Where to cut: the byte range of a match near `target`, forward first.
    fn separator(&self, s: &str, target: usize) -> Option<(usize, usize)> {
        let target = boundary_near(s, target);
        let after = self.pattern.find_in(&s[target..]);
        after
            .map(|(a, b)| (target + a, target + b))
            .or_else(|| self.pattern.rfind_in(&s[..target]))
    }
}

impl<'a, 'p, P: Pattern> Producer for SplitProducer<'a, 'p, P> {
    type Item = &'a str;
    type IntoIter = Pieces<'a, 'p, P>;
    fn len(&self) -> usize {
        self.positions
    }
    fn split_at(self, index: usize) -> (Self, Self) {
        let none = SplitProducer {
            s: None,
            positions: 0,
            last: false,
            whole: true,
            ..self
        };
        let Some(s) = self.s.filter(|_| index > 0) else {
            return (none, self);
        };
        if index >= self.positions || self.whole {
            return (self, none);
        }
        let Some((start, end)) = self.separator(s, proportional(s.len(), index, self.positions))
        else {
            // No match to cut at: the piece stays whole, and splits no more.
            let whole = SplitProducer {
                positions: 1,
                whole: true,
                ..self
            };
            return (whole, none);
        };
        let left_end = if matches!(self.kind, Kind::Inclusive | Kind::Lines) {
            end
        } else {
            start
        };
        let (left, right) = (&s[..left_end], &s[end..]);
        // Both sides have a position at least (0 < index < positions).
        (
            SplitProducer {
                s: Some(left),
                positions: index.min(left.len()).max(1),
                last: false,
                ..self
            },
            SplitProducer {
                s: Some(right),
                positions: (self.positions - index).min(right.len()).max(1),
                ..self
            },
        )
    }
    fn into_iter(self) -> Self::IntoIter {
        Pieces {
            rest: self.s,
            pattern: self.pattern,
            kind: self.kind,
            last: self.last,
        }
    }
}

/// The sequential split of one piece.
pub(super) struct Pieces<'a, 'p, P> {
    rest: Option<&'a str>,
    pattern: &'p P,
    kind: Kind,
    last: bool,
}

impl<'a, P: Pattern> Iterator for Pieces<'a, '_, P> {
    type Item = &'a str;
    fn next(&mut self) -> Option<&'a str> {
        loop {
            let s = self.rest?;
            let piece = match self.pattern.find_in(s) {
                Some((start, end)) => {
                    self.rest = Some(&s[end..]);
                    match self.kind {
                        Kind::Inclusive | Kind::Lines => &s[..end],
                        _ => &s[..start],
                    }
                }
                None => {
                    self.rest = None;
                    let dropped = match self.kind {
                        Kind::Inclusive | Kind::Lines => true,
                        Kind::Terminator => self.last,
                        Kind::Split | Kind::Whitespace => false,
                    };
                    if s.is_empty() && dropped {
                        return None;
                    }
                    s
                }
            };
            match self.kind {
                Kind::Whitespace if piece.is_empty() => continue,
                Kind::Lines => {
                    let Some(line) = piece.strip_suffix('\n') else {
                        return Some(piece);
                    };
                    return Some(line.strip_suffix('\r').unwrap_or(line));
                }
                _ => return Some(piece),
            }
        }
    }
}
