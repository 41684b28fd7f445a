//! Regions: what part of a buffer's index space a task reads or writes.
//!
//! A [`Region`] is a union of boxes in a 1-, 2- or 3-D index space. Every box is stored as
//! three half-open ranges; the dimensions a buffer does not have are `0..1`, so a 1-D box
//! `[2..5]` is `[2..5, 0..1, 0..1]`. A region is written against a buffer's number of
//! dimensions and is checked against the buffer's extent when a task declares it
//! ([`CommandGroup::read`](super::CommandGroup::read) and friends): explicit boxes must lie
//! inside the buffer, while [`Region::all`] and [`Region::neighbourhood`] adapt to it.

use std::ops::Range;

/// A half-open box in a 3-D index space: `lo[d] <= i[d] < hi[d]` in every dimension `d`.
/// Lower-dimensional boxes use `0..1` for the dimensions they lack.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Box3 {
    /// Inclusive lower corner.
    pub lo: [usize; 3],
    /// Exclusive upper corner.
    pub hi: [usize; 3],
}

impl Box3 {
    /// The box `[0..extent[0], 0..extent[1], 0..extent[2]]`.
    pub fn from_extent(extent: [usize; 3]) -> Self {
        Box3 {
            lo: [0; 3],
            hi: extent,
        }
    }

    /// Whether the box holds no index.
    pub fn is_empty(&self) -> bool {
        (0..3).any(|d| self.lo[d] >= self.hi[d])
    }

    /// Whether the two boxes share at least one index.
    ///
    /// ```
    /// use ember::flow::Box3;
    /// let a = Box3 { lo: [0, 0, 0], hi: [4, 4, 1] };
    /// let b = Box3 { lo: [3, 3, 0], hi: [5, 5, 1] };
    /// let c = Box3 { lo: [4, 0, 0], hi: [5, 4, 1] };
    /// assert!(a.intersects(&b));
    /// assert!(!a.intersects(&c)); // touching is not overlapping
    /// ```
    pub fn intersects(&self, other: &Box3) -> bool {
        (0..3).all(|d| self.lo[d].max(other.lo[d]) < self.hi[d].min(other.hi[d]))
    }

    /// The common part of the two boxes (possibly empty).
    pub fn intersection(&self, other: &Box3) -> Box3 {
        let mut out = *self;
        for d in 0..3 {
            out.lo[d] = self.lo[d].max(other.lo[d]);
            out.hi[d] = self.hi[d].min(other.hi[d]);
        }
        out
    }

    /// Whether `other` lies entirely inside `self`.
    pub fn contains(&self, other: &Box3) -> bool {
        other.is_empty() || (0..3).all(|d| self.lo[d] <= other.lo[d] && other.hi[d] <= self.hi[d])
    }

    /// `self` minus `other`, as at most six disjoint boxes.
    pub(crate) fn subtract(&self, other: &Box3) -> Vec<Box3> {
        if !self.intersects(other) {
            return vec![*self];
        }
        let mut pieces = Vec::new();
        let mut rest = *self;
        for d in 0..3 {
            if rest.lo[d] < other.lo[d] {
                let mut below = rest;
                below.hi[d] = other.lo[d];
                pieces.push(below);
                rest.lo[d] = other.lo[d];
            }
            if other.hi[d] < rest.hi[d] {
                let mut above = rest;
                above.lo[d] = other.hi[d];
                pieces.push(above);
                rest.hi[d] = other.hi[d];
            }
        }
        pieces
    }

    /// Whether the point `p` (unused dimensions `0`) lies in the box.
    #[inline]
    pub fn contains_point(&self, p: [usize; 3]) -> bool {
        (0..3).all(|d| self.lo[d] <= p[d] && p[d] < self.hi[d])
    }

    /// The number of indices in the box.
    pub fn volume(&self) -> usize {
        if self.is_empty() {
            0
        } else {
            (0..3).map(|d| self.hi[d] - self.lo[d]).product()
        }
    }
}

/// A union of boxes in a buffer's index space, as declared by a task.
///
/// Build one from an array of ranges (one per dimension) or with the helpers for common
/// access patterns:
///
/// ```
/// use ember::flow::Region;
/// let chunk = [0..64, 32..48];
/// let _whole = Region::all();                          // the whole buffer
/// let _mine = Region::one_to_one(chunk.clone());       // exactly the chunk
/// let _halo = Region::neighbourhood([10..20], [1]);    // 9..21, clamped to the buffer
/// let _cols = Region::transposed(chunk.clone());       // [32..48, 0..64]
/// let two = Region::from(0..2).union(8..10);           // a union of boxes (1-D)
/// assert!(two.intersects(&Region::from(9..12)));
/// assert!(!two.intersects(&Region::from(2..8)));
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Region {
    shape: Shape,
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum Shape {
    /// The whole buffer, whatever its extent and dimensions.
    All,
    /// Explicit boxes; `clamp` means "cut to the buffer" rather than "must lie inside".
    Boxes {
        dims: usize,
        boxes: Vec<Box3>,
        clamp: bool,
    },
}

/// Why a region does not fit a buffer (turned into a [`FlowError`](super::FlowError) by the
/// caller, which knows the buffer).
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Misfit {
    Dimensions { region: usize },
    OutOfBounds { region: Box3 },
}

fn to_box<const D: usize>(ranges: [Range<usize>; D]) -> Box3 {
    const { assert!(D >= 1 && D <= 3, "a region has 1, 2 or 3 dimensions") };
    let mut b = Box3 {
        lo: [0; 3],
        hi: [1; 3],
    };
    for (d, r) in ranges.into_iter().enumerate() {
        b.lo[d] = r.start;
        b.hi[d] = r.end;
    }
    b
}

impl<const D: usize> From<[Range<usize>; D]> for Region {
    fn from(ranges: [Range<usize>; D]) -> Self {
        Region::one_to_one(ranges)
    }
}

/// A 1-D region: `Region::from(2..5)` is `Region::one_to_one([2..5])`.
impl From<Range<usize>> for Region {
    fn from(range: Range<usize>) -> Self {
        Region::one_to_one([range])
    }
}

impl Region {
    /// A region of `dims` dimensions holding the box `b`; `clamp` cuts it to the buffer
    /// instead of requiring it inside.
    pub(crate) fn from_box(dims: usize, b: Box3, clamp: bool) -> Self {
        Region {
            shape: Shape::Boxes {
                dims,
                boxes: vec![b],
                clamp,
            },
        }
    }

    /// The whole buffer (any number of dimensions).
    pub fn all() -> Self {
        Region { shape: Shape::All }
    }

    /// Exactly `chunk`: what a task that owns one chunk of a parallel loop reads or writes.
    /// It must lie inside the buffer.
    pub fn one_to_one<const D: usize>(chunk: [Range<usize>; D]) -> Self {
        Region {
            shape: Shape::Boxes {
                dims: D,
                boxes: vec![to_box(chunk)],
                clamp: false,
            },
        }
    }

    /// `chunk` grown by `halo[d]` on both sides of every dimension `d` and clamped to the
    /// buffer: a stencil's input.
    ///
    /// ```
    /// use ember::flow::Region;
    /// // rows 0..5 (the lower edge stops at 0), columns 2..10
    /// let halo = Region::neighbourhood([0..4, 4..8], [1, 2]);
    /// assert!(halo.intersects(&Region::from([4..5, 2..3])));
    /// assert!(!halo.intersects(&Region::from([5..6, 0..10])));
    /// ```
    pub fn neighbourhood<const D: usize>(chunk: [Range<usize>; D], halo: [usize; D]) -> Self {
        let mut b = to_box(chunk);
        for (d, h) in halo.into_iter().enumerate() {
            b.lo[d] = b.lo[d].saturating_sub(h);
            b.hi[d] = b.hi[d].saturating_add(h);
        }
        Region {
            shape: Shape::Boxes {
                dims: D,
                boxes: vec![b],
                clamp: true,
            },
        }
    }

    /// The 2-D `chunk` with its two dimensions swapped: a task that writes rows `r` and
    /// columns `c` of one buffer and reads columns `r`, rows `c` of another.
    pub fn transposed(chunk: [Range<usize>; 2]) -> Self {
        let [rows, cols] = chunk;
        Region::one_to_one([cols, rows])
    }

    /// The union of `self` and `other`. Both must have the same number of dimensions (checked
    /// when the region is declared); the union with [`Region::all`] is the whole buffer.
    pub fn union(self, other: impl Into<Region>) -> Self {
        match (self.shape, other.into().shape) {
            (Shape::All, _) | (_, Shape::All) => Region::all(),
            (
                Shape::Boxes {
                    dims,
                    mut boxes,
                    clamp,
                },
                Shape::Boxes {
                    dims: other_dims,
                    boxes: other_boxes,
                    clamp: other_clamp,
                },
            ) => {
                if dims != other_dims {
                    // Keep the mismatch visible: resolution reports it.
                    return Region {
                        shape: Shape::Boxes {
                            dims: usize::MAX,
                            boxes,
                            clamp,
                        },
                    };
                }
                // Clamping is per region; a union clamps only if both parts do, so an
                // explicit box outside the buffer is still reported.
                boxes.extend(other_boxes);
                Region {
                    shape: Shape::Boxes {
                        dims,
                        boxes,
                        clamp: clamp && other_clamp,
                    },
                }
            }
        }
    }

    /// Whether the two regions share an index, taking [`Region::all`] as everything.
    pub fn intersects(&self, other: &Region) -> bool {
        match (&self.shape, &other.shape) {
            (Shape::All, _) | (_, Shape::All) => true,
            (Shape::Boxes { boxes: a, .. }, Shape::Boxes { boxes: b, .. }) => {
                a.iter().any(|x| b.iter().any(|y| x.intersects(y)))
            }
        }
    }

    /// The boxes of this region inside a buffer with `dims` dimensions and `extent`
    /// (unused dimensions `1`); empty boxes are dropped.
    pub(crate) fn resolve(&self, dims: usize, extent: [usize; 3]) -> Result<Vec<Box3>, Misfit> {
        let whole = Box3::from_extent(extent);
        match &self.shape {
            Shape::All => Ok(if whole.is_empty() {
                vec![]
            } else {
                vec![whole]
            }),
            Shape::Boxes {
                dims: region_dims,
                boxes,
                clamp,
            } => {
                if *region_dims != dims {
                    return Err(Misfit::Dimensions {
                        region: *region_dims,
                    });
                }
                let mut out = Vec::with_capacity(boxes.len());
                for b in boxes {
                    let b = if *clamp {
                        b.intersection(&whole)
                    } else if whole.contains(b) {
                        *b
                    } else {
                        return Err(Misfit::OutOfBounds { region: *b });
                    };
                    if !b.is_empty() {
                        out.push(b);
                    }
                }
                Ok(out)
            }
        }
    }
}

#[cfg(test)]
#[allow(clippy::single_range_in_vec_init)]
mod tests {
    use super::*;

    #[test]
    fn subtract_partitions_the_box() {
        let a = Box3 {
            lo: [0, 0, 0],
            hi: [6, 5, 4],
        };
        let b = Box3 {
            lo: [2, 1, 1],
            hi: [4, 9, 3],
        };
        let pieces = a.subtract(&b);
        let inter = a.intersection(&b);
        let total: usize = pieces.iter().map(Box3::volume).sum::<usize>() + inter.volume();
        assert_eq!(total, a.volume());
        for (i, p) in pieces.iter().enumerate() {
            assert!(!p.intersects(&b));
            assert!(a.contains(p));
            for q in &pieces[i + 1..] {
                assert!(!p.intersects(q));
            }
        }
    }

    #[test]
    fn resolve_checks_and_clamps() {
        let ext = [10, 1, 1];
        assert_eq!(
            Region::from([8..11]).resolve(1, ext),
            Err(Misfit::OutOfBounds {
                region: Box3 {
                    lo: [8, 0, 0],
                    hi: [11, 1, 1]
                }
            })
        );
        assert_eq!(
            Region::neighbourhood([8..10], [3]).resolve(1, ext).unwrap(),
            vec![Box3 {
                lo: [5, 0, 0],
                hi: [10, 1, 1]
            }]
        );
        assert_eq!(
            Region::from([0..1, 0..1]).resolve(1, ext),
            Err(Misfit::Dimensions { region: 2 })
        );
        assert_eq!(
            Region::transposed([0..2, 4..8]),
            Region::one_to_one([4..8, 0..2])
        );
        assert_eq!(Region::all().resolve(2, [3, 4, 1]).unwrap().len(), 1);
    }
}
