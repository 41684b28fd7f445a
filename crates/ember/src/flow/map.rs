//! Range mappers: from a chunk of a kernel's range to the region of a buffer it touches.
//!
//! A [`parallel_for`](super::CommandGroup::parallel_for) kernel runs over a range; the flow
//! cuts that range into chunks (one per worker, and on several ranks one per rank first) and
//! runs each chunk as its own task. What a chunk reads or writes of a buffer is declared once
//! per accessor, as a function of the chunk: a *range mapper*. The flow calls it for every
//! chunk, orders the chunks by the regions it returns, and gives the chunk's kernel exactly
//! those regions through the accessor's views.
//!
//! | mapper | the chunk `[r0, r1]` touches |
//! | --- | --- |
//! | [`one_to_one()`] | `[r0, r1]` |
//! | [`neighbourhood([h0, h1])`](neighbourhood) | `[r0 ± h0, r1 ± h1]`, clamped to the buffer |
//! | [`all()`] | the whole buffer |
//! | [`transposed()`] | `[r1, r0]` (2-D) |
//! | [`fixed(region)`](fixed) | `region`, whatever the chunk |
//! | [`from_fn(f)`](from_fn) | `f([r0, r1])`: any closure |
//!
//! A mapper should be *monotone*: the region of a part of a chunk lies inside the region of
//! the chunk. Every built-in one is. On several ranks the flow moves data by the regions of
//! each rank's chunk and checks that the regions of the smaller chunks it runs lie inside
//! them ([`FlowError::Declaration`](super::FlowError::Declaration) otherwise).
//!
//! ```
//! use ember::flow::{map, Box3, RangeMapper};
//! let chunk = Box3 { lo: [2, 0, 0], hi: [4, 8, 1] }; // rows 2..4, columns 0..8 of a 2-D range
//! let halo = map::neighbourhood([1, 1]).map(&chunk, 2);
//! assert!(halo.intersects(&[1..2, 0..1].into()));
//! let custom = map::from_fn(|[rows, _cols]: [std::ops::Range<usize>; 2]| (rows.start * 2..rows.end * 2).into());
//! assert!(custom.map(&chunk, 2).intersects(&(7..8).into()));
//! ```

use std::ops::Range;

use super::{Box3, Region};

/// A function from a chunk of a kernel's range to a region of a buffer; see the
/// [module doc](self). Implement it for your own mappers, or wrap a closure with
/// [`from_fn`].
pub trait RangeMapper: Send + Sync + 'static {
    /// The region that the chunk `chunk` (a box of the kernel's range, with `dims`
    /// dimensions; the others `0..1`) touches.
    fn map(&self, chunk: &Box3, dims: usize) -> Region;
}

/// Exactly the chunk: the buffer has the range's dimensions and the chunk writes (or reads)
/// its own indices.
pub fn one_to_one() -> OneToOne {
    OneToOne
}

/// The chunk grown by `halo[d]` on both sides of dimension `d` and clamped to the buffer: a
/// stencil's input. The kernel's range must have `D` dimensions.
pub fn neighbourhood<const D: usize>(halo: [usize; D]) -> Neighbourhood<D> {
    Neighbourhood { halo }
}

/// The whole buffer, whatever the chunk.
pub fn all() -> All {
    All
}

/// The 2-D chunk with its dimensions swapped: rows `r`, columns `c` touch rows `c`,
/// columns `r`.
pub fn transposed() -> Transposed {
    Transposed
}

/// The same region for every chunk.
pub fn fixed(region: impl Into<Region>) -> Fixed {
    Fixed {
        region: region.into(),
    }
}

/// A closure from the chunk's ranges (one per dimension of a `D`-dimensional kernel range) to
/// a region.
pub fn from_fn<const D: usize, F>(f: F) -> FromFn<D, F>
where
    F: Fn([Range<usize>; D]) -> Region + Send + Sync + 'static,
{
    FromFn { f }
}

/// See [`one_to_one`].
#[derive(Clone, Copy, Debug)]
pub struct OneToOne;

impl RangeMapper for OneToOne {
    fn map(&self, chunk: &Box3, dims: usize) -> Region {
        Region::from_box(dims, *chunk, false)
    }
}

/// See [`neighbourhood`].
#[derive(Clone, Copy, Debug)]
pub struct Neighbourhood<const D: usize> {
    halo: [usize; D],
}

impl<const D: usize> RangeMapper for Neighbourhood<D> {
    fn map(&self, chunk: &Box3, dims: usize) -> Region {
        if dims != D {
            return Region::from_box(usize::MAX, *chunk, true);
        }
        let mut b = *chunk;
        for (d, h) in self.halo.iter().enumerate() {
            b.lo[d] = b.lo[d].saturating_sub(*h);
            b.hi[d] = b.hi[d].saturating_add(*h);
        }
        Region::from_box(D, b, true)
    }
}

/// See [`all`].
#[derive(Clone, Copy, Debug)]
pub struct All;

impl RangeMapper for All {
    fn map(&self, _chunk: &Box3, _dims: usize) -> Region {
        Region::all()
    }
}

/// See [`transposed`].
#[derive(Clone, Copy, Debug)]
pub struct Transposed;

impl RangeMapper for Transposed {
    fn map(&self, chunk: &Box3, dims: usize) -> Region {
        let mut b = *chunk;
        b.lo.swap(0, 1);
        b.hi.swap(0, 1);
        Region::from_box(if dims == 2 { 2 } else { usize::MAX }, b, false)
    }
}

/// See [`fixed`].
#[derive(Clone, Debug)]
pub struct Fixed {
    region: Region,
}

impl RangeMapper for Fixed {
    fn map(&self, _chunk: &Box3, _dims: usize) -> Region {
        self.region.clone()
    }
}

/// See [`from_fn`].
#[derive(Clone, Copy, Debug)]
pub struct FromFn<const D: usize, F> {
    f: F,
}

impl<const D: usize, F> RangeMapper for FromFn<D, F>
where
    F: Fn([Range<usize>; D]) -> Region + Send + Sync + 'static,
{
    fn map(&self, chunk: &Box3, dims: usize) -> Region {
        if dims != D {
            return Region::from_box(usize::MAX, *chunk, true);
        }
        (self.f)(std::array::from_fn(|d| chunk.lo[d]..chunk.hi[d]))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn resolve(r: Region, extent: [usize; 3], dims: usize) -> Vec<Box3> {
        r.resolve(dims, extent).unwrap()
    }

    #[test]
    fn built_in_mappers_map_a_chunk() {
        let chunk = Box3 {
            lo: [2, 1, 0],
            hi: [4, 3, 1],
        };
        let ext = [6, 5, 1];
        assert_eq!(resolve(one_to_one().map(&chunk, 2), ext, 2), vec![chunk]);
        assert_eq!(
            resolve(neighbourhood([1, 2]).map(&chunk, 2), ext, 2),
            vec![Box3 {
                lo: [1, 0, 0],
                hi: [5, 5, 1]
            }]
        );
        assert_eq!(
            resolve(all().map(&chunk, 2), ext, 2),
            vec![Box3::from_extent(ext)]
        );
        assert_eq!(
            resolve(transposed().map(&chunk, 2), ext, 2),
            vec![Box3 {
                lo: [1, 2, 0],
                hi: [3, 4, 1]
            }]
        );
        // A mapper written for 1-D ranges on a 2-D range: reported when resolved.
        assert!(neighbourhood([1]).map(&chunk, 2).resolve(2, ext).is_err());
        let f = from_fn(|[r]: [Range<usize>; 1]| Region::from(r.start..r.end + 1));
        assert!(f.map(&chunk, 2).resolve(2, ext).is_err());
    }
}
