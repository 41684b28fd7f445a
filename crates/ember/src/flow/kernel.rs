//! Range kernels: the chunk a kernel runs on, and the views its accessors give it.
//!
//! A [`parallel_for`](super::CommandGroup::parallel_for) kernel is called once per chunk of
//! its range with a [`Chunk`]. The accessors the command group declared
//! ([`Buffer::read`](super::Buffer::read) and friends) are captured by the kernel; inside
//! it, [`Chunk::read`] and [`Chunk::write`] turn them into views of exactly the region the
//! accessor's range mapper gave this chunk. A view checks every index against that region
//! and panics outside it (the kernel's task then ends as panicked, like any panicking
//! kernel), so a kernel can never touch data the flow did not order for it.
//!
//! Each `view[[i, j]]` checks its index against the region: a few comparisons per access,
//! which in a tight loop over rows costs several times the arithmetic of a stencil. Where a
//! kernel walks rows, [`ReadView::slice`] and [`WriteView::slice_mut`] check a whole row
//! once and hand out an ordinary slice.
//!
//! Why the views are sound: the flow runs two chunks at once only if, on every buffer, their
//! declared regions do not overlap or neither writes; a command group may declare at most
//! one accessor per buffer (so one chunk never holds a read view and a write view of the
//! same elements); and a chunk hands out one write view per accessor.

use std::cell::Cell;
use std::marker::PhantomData;
use std::ops::{Index, IndexMut, Range};
use std::sync::Arc;

use super::buffer::{linear, Storage};
use super::Box3;

/// A captured read accessor; turn it into a view with [`Chunk::read`].
pub struct ReadAccessor<T, const D: usize> {
    group: u64,
    slot: usize,
    storage: Arc<Storage<T>>,
}

/// A captured write (or read-write) accessor; turn it into a view with [`Chunk::write`].
pub struct WriteAccessor<T, const D: usize> {
    group: u64,
    slot: usize,
    storage: Arc<Storage<T>>,
}

impl<T, const D: usize> ReadAccessor<T, D> {
    pub(crate) fn new(group: u64, slot: usize, storage: Arc<Storage<T>>) -> Self {
        ReadAccessor {
            group,
            slot,
            storage,
        }
    }
}

impl<T, const D: usize> WriteAccessor<T, D> {
    pub(crate) fn new(group: u64, slot: usize, storage: Arc<Storage<T>>) -> Self {
        WriteAccessor {
            group,
            slot,
            storage,
        }
    }
}

impl<T, const D: usize> Clone for ReadAccessor<T, D> {
    fn clone(&self) -> Self {
        ReadAccessor::new(self.group, self.slot, self.storage.clone())
    }
}

/// What a chunk's task carries: its part of the range and the region of every accessor.
pub(crate) struct ChunkCtx {
    pub group: u64,
    pub range: Box3,
    /// Per accessor slot, the boxes its mapper gave this chunk (resolved, clamped).
    pub regions: Vec<Vec<Box3>>,
}

/// One chunk of a [`parallel_for`](super::CommandGroup::parallel_for) range: what a kernel
/// call works on: its part of the range ([`range`](Self::range), [`items`](Self::items))
/// and the views of its accessors ([`read`](Self::read), [`write`](Self::write)), each of
/// exactly the region the accessor's range mapper gave this chunk; an index outside it
/// panics, and ends the task as a panicking kernel does.
pub struct Chunk<const D: usize> {
    ctx: ChunkCtx,
    writing: Vec<Cell<bool>>,
}

impl<const D: usize> Chunk<D> {
    pub(crate) fn new(ctx: ChunkCtx) -> Self {
        let writing = ctx.regions.iter().map(|_| Cell::new(false)).collect();
        Chunk { ctx, writing }
    }

    /// The chunk's part of the range, one half-open range per dimension.
    pub fn range(&self) -> [Range<usize>; D] {
        std::array::from_fn(|d| self.ctx.range.lo[d]..self.ctx.range.hi[d])
    }

    /// How many items the chunk has.
    pub fn len(&self) -> usize {
        self.ctx.range.volume()
    }

    /// Whether the chunk has no item (never, for a chunk a kernel is called with).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The chunk's items, in row-major order.
    ///
    /// ```
    /// # let pool = ember::Pool::builder().threads(1).build().unwrap();
    /// # let flow = ember::flow::Flow::new(&pool, Default::default());
    /// let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    /// let s = seen.clone();
    /// flow.submit(|cg| {
    ///     cg.chunks(1).parallel_for([2, 2], move |chunk| s.lock().unwrap().extend(chunk.items()));
    /// })?;
    /// flow.wait()?;
    /// assert_eq!(*seen.lock().unwrap(), [[0, 0], [0, 1], [1, 0], [1, 1]]);
    /// # Ok::<(), ember::flow::FlowError>(())
    /// ```
    pub fn items(&self) -> Items<D> {
        let b = self.ctx.range;
        let lo = std::array::from_fn(|d| b.lo[d]);
        Items {
            lo,
            hi: std::array::from_fn(|d| b.hi[d]),
            cur: lo,
            done: b.is_empty(),
        }
    }

    /// A view of the region `accessor` declared for this chunk.
    ///
    /// # Panics
    /// If `accessor` was declared by another command group.
    pub fn read<'a, T, const E: usize>(
        &'a self,
        accessor: &'a ReadAccessor<T, E>,
    ) -> ReadView<'a, T, E> {
        let boxes = self.slot(accessor.group, accessor.slot);
        ReadView {
            base: accessor.storage.base(),
            window: Window::new(boxes, accessor.storage.extent()),
            _data: PhantomData,
        }
    }

    /// A view, read and write, of the region `accessor` declared for this chunk.
    ///
    /// # Panics
    /// If `accessor` was declared by another command group, or this chunk already gave a
    /// view of it (two would alias).
    pub fn write<'a, T, const E: usize>(
        &'a self,
        accessor: &'a WriteAccessor<T, E>,
    ) -> WriteView<'a, T, E> {
        let boxes = self.slot(accessor.group, accessor.slot);
        assert!(
            !self.writing[accessor.slot].replace(true),
            "Chunk::write: this chunk already gave a view of that accessor"
        );
        WriteView {
            base: accessor.storage.base(),
            window: Window::new(boxes, accessor.storage.extent()),
            _data: PhantomData,
        }
    }

    fn slot(&self, group: u64, slot: usize) -> &[Box3] {
        assert!(
            group == self.ctx.group,
            "an accessor used in the kernel of another command group than the one that \
             declared it"
        );
        &self.ctx.regions[slot]
    }
}

/// The items of a [`Chunk`], row-major.
pub struct Items<const D: usize> {
    lo: [usize; D],
    hi: [usize; D],
    cur: [usize; D],
    done: bool,
}

impl<const D: usize> Iterator for Items<D> {
    type Item = [usize; D];

    #[inline]
    fn next(&mut self) -> Option<[usize; D]> {
        if self.done {
            return None;
        }
        let p = self.cur;
        // The last dimension moves fastest: most calls end here.
        self.cur[D - 1] += 1;
        if self.cur[D - 1] >= self.hi[D - 1] {
            self.carry();
        }
        Some(p)
    }
}

impl<const D: usize> Items<D> {
    /// Inlined: a call would keep the iterator in memory rather than in registers.
    #[inline(always)]
    fn carry(&mut self) {
        for d in (0..D - 1).rev() {
            self.cur[d + 1] = self.lo[d + 1];
            self.cur[d] += 1;
            if self.cur[d] < self.hi[d] {
                return;
            }
        }
        self.done = true;
    }
}

#[inline]
fn point<const D: usize>(idx: [usize; D]) -> [usize; 3] {
    let mut p = [0; 3];
    p[..D].copy_from_slice(&idx);
    p
}

/// Where a view may look: its region's first box as per-dimension bounds (tested first: a
/// region is almost always one box), the region's boxes, and the buffer's strides.
struct Window<'a, const D: usize> {
    lo: [usize; D],
    len: [usize; D],
    stride: [usize; D],
    boxes: &'a [Box3],
    extent: [usize; 3],
}

impl<'a, const D: usize> Window<'a, D> {
    fn new(boxes: &'a [Box3], extent: [usize; 3]) -> Self {
        let first = boxes.first().copied().unwrap_or(Box3 {
            lo: [0; 3],
            hi: [0; 3],
        });
        // Row-major: the dimensions past `D` have extent 1.
        let mut stride = [1; D];
        for d in (0..D.saturating_sub(1)).rev() {
            stride[d] = stride[d + 1] * extent[d + 1];
        }
        Window {
            lo: std::array::from_fn(|d| first.lo[d]),
            len: std::array::from_fn(|d| first.hi[d].saturating_sub(first.lo[d])),
            stride,
            boxes,
            extent,
        }
    }

    /// The linear index of `idx` if it lies in the region; panics otherwise.
    // Three arrays of length `D` indexed together; the loops unroll.
    #[allow(clippy::needless_range_loop)]
    #[inline(always)]
    fn offset(&self, idx: [usize; D]) -> usize {
        let mut ok = true;
        for d in 0..D {
            ok &= idx[d].wrapping_sub(self.lo[d]) < self.len[d];
        }
        // The last dimension's stride is 1: one register less per view in a kernel's loop.
        let mut at = idx[D - 1];
        for d in 0..D - 1 {
            at += idx[d] * self.stride[d];
        }
        if !ok {
            // Scalars, not the array: an array handed to a function that is not inlined is
            // passed in memory, and would be stored on the hot path too.
            let p = point(idx);
            self.in_other_box(p[0], p[1], p[2]);
        }
        at
    }

    /// Returns if `[p0, p1, p2]` lies in a box of the region after the first; panics
    /// otherwise.
    #[cold]
    #[inline(never)]
    fn in_other_box(&self, p0: usize, p1: usize, p2: usize) {
        let p = [p0, p1, p2];
        if !self.boxes.iter().skip(1).any(|b| b.contains_point(p)) {
            panic!(
                "index {:?} lies outside the region this chunk declared for the buffer",
                &p[..D]
            )
        }
    }

    /// The linear index of `start` if the `len` elements from it along the last dimension
    /// lie in one box of the region; panics otherwise.
    #[allow(clippy::needless_range_loop)] // as in `offset`
    #[inline]
    fn run(&self, start: [usize; D], len: usize) -> usize {
        // The first box, as `offset` tests it: every dimension but the last holds `start`,
        // and the last holds the whole run.
        let mut ok = len > 0;
        for d in 0..D - 1 {
            ok &= start[d].wrapping_sub(self.lo[d]) < self.len[d];
        }
        let last = start[D - 1].wrapping_sub(self.lo[D - 1]);
        ok &= last < self.len[D - 1] && self.len[D - 1] - last >= len;
        if ok {
            let mut at = start[D - 1];
            for d in 0..D - 1 {
                at += start[d] * self.stride[d];
            }
            return at;
        }
        // Scalars, as in `offset`: the array would be stored on the hot path.
        let p = point(start);
        self.run_elsewhere(p[0], p[1], p[2], len)
    }

    #[cold]
    #[inline(never)]
    fn run_elsewhere(&self, p0: usize, p1: usize, p2: usize, len: usize) -> usize {
        let p = [p0, p1, p2];
        let start = &p[..D];
        // Checked: a run past `usize::MAX` lies in no box (a wrapped end would pass).
        let end = p[D - 1].checked_add(len);
        let fits = |b: &Box3| {
            len == 0 || (b.contains_point(p) && end.is_some_and(|end| end <= b.hi[D - 1]))
        };
        if !self.boxes.iter().any(fits) {
            panic!(
                "elements {start:?} and the {} after it along the last dimension do not lie \
                 in one box of the region this chunk declared for the buffer",
                len.saturating_sub(1)
            );
        }
        if len == 0 {
            return 0;
        }
        linear(&self.extent, p)
    }

    /// The linear index of `start` if the `count` rows of `len` elements from it (rows
    /// following each other along the second-to-last dimension) lie in one box of the region;
    /// panics otherwise. With no element, 0 and no check.
    #[allow(clippy::needless_range_loop)] // as in `offset`
    #[inline]
    fn block(&self, start: [usize; D], count: usize, len: usize) -> usize {
        assert!(
            D >= 2,
            "ReadView::rows needs a view of two dimensions or more"
        );
        if count == 0 || len == 0 {
            return 0;
        }
        // The first box: every dimension but the last two holds `start`, and the last two
        // hold the whole block.
        let mut ok = true;
        for d in 0..D - 2 {
            ok &= start[d].wrapping_sub(self.lo[d]) < self.len[d];
        }
        for (d, n) in [(D - 2, count), (D - 1, len)] {
            let off = start[d].wrapping_sub(self.lo[d]);
            ok &= off < self.len[d] && self.len[d] - off >= n;
        }
        if ok {
            let mut at = start[D - 1];
            for d in 0..D - 1 {
                at += start[d] * self.stride[d];
            }
            return at;
        }
        let p = point(start);
        self.block_elsewhere(p[0], p[1], p[2], count, len)
    }

    #[cold]
    #[inline(never)]
    fn block_elsewhere(&self, p0: usize, p1: usize, p2: usize, count: usize, len: usize) -> usize {
        let p = [p0, p1, p2];
        // Checked: a block past `usize::MAX` lies in no box (a wrapped corner would pass).
        let mut last = Some(p);
        for (d, n) in [(D - 2, count), (D - 1, len)] {
            last = last.and_then(|mut q| {
                q[d] = q[d].checked_add(n - 1)?;
                Some(q)
            });
        }
        let inside = |b: &Box3| last.is_some_and(|q| b.contains_point(p) && b.contains_point(q));
        if !self.boxes.iter().any(inside) {
            panic!(
                "the {count} rows of {len} elements from {:?} do not lie in one box of the \
                 region this chunk declared for the buffer",
                &p[..D]
            );
        }
        linear(&self.extent, p)
    }

    fn get(&self, idx: [usize; D]) -> Option<usize> {
        let p = point(idx);
        self.boxes
            .iter()
            .any(|b| b.contains_point(p))
            .then(|| linear(&self.extent, p))
    }
}

/// A chunk's view of the region a [`ReadAccessor`] declared: index it with `view[[i, j]]`.
pub struct ReadView<'a, T, const D: usize> {
    base: *const T,
    window: Window<'a, D>,
    _data: PhantomData<&'a T>,
}

impl<T, const D: usize> ReadView<'_, T, D> {
    /// The declared region, as boxes (unused dimensions `0..1`).
    pub fn region(&self) -> &[Box3] {
        self.window.boxes
    }

    /// The element at `idx`, or `None` outside the declared region.
    pub fn get(&self, idx: [usize; D]) -> Option<&T> {
        self.window.get(idx).map(|at| {
            // SAFETY: `at` is inside the declared region, inside the buffer; no task writes
            // it while this chunk runs (module doc).
            unsafe { &*self.base.add(at) }
        })
    }

    /// The `len` elements from `start` along the last dimension (a row of a 2-D buffer), as a
    /// slice: one check for the whole row instead of one per element, which is what a tight
    /// loop wants.
    ///
    /// # Panics
    /// If they do not all lie in one box of the declared region.
    ///
    /// ```
    /// use ember::flow::{map, Buffer, Flow};
    /// # let pool = ember::Pool::builder().threads(2).build().unwrap();
    /// let flow = Flow::new(&pool, Default::default());
    /// let (n, m) = (4, 5);
    /// let a = Buffer::new(&flow, [n, m], |[i, j]| (i * m + j) as u32);
    /// let sums = Buffer::new(&flow, [n], |_| 0u32);
    /// flow.submit(|cg| {
    ///     let a = a.read(cg, map::from_fn(move |[rows]: [std::ops::Range<usize>; 1]| {
    ///         [rows, 0..m].into()
    ///     }));
    ///     let sums = sums.write(cg, map::one_to_one());
    ///     cg.parallel_for([n], move |chunk| {
    ///         let (a, mut sums) = (chunk.read(&a), chunk.write(&sums));
    ///         for [i] in chunk.items() {
    ///             sums[[i]] = a.slice([i, 0], m).iter().sum();
    ///         }
    ///     });
    /// })?;
    /// assert_eq!(flow.read_back(&sums)?, [10, 35, 60, 85]);
    /// # Ok::<(), ember::flow::FlowError>(())
    /// ```
    pub fn slice(&self, start: [usize; D], len: usize) -> &[T] {
        let at = self.window.run(start, len);
        // SAFETY: the `len` elements from `at` lie in the declared region (checked), inside
        // the buffer, and no task writes them while this chunk runs (module doc).
        unsafe { std::slice::from_raw_parts(self.base.add(at), len) }
    }

    /// The `count` rows of `len` elements from `start`, one after another along the
    /// second-to-last dimension (rows `start[0]..start[0] + count`, columns
    /// `start[1]..start[1] + len` of a 2-D buffer), as slices: the whole block is checked
    /// once, so walking it costs no check per row. A kernel that slides a window down a
    /// band of columns takes its rows from here rather than a [`slice`](Self::slice) per
    /// row.
    ///
    /// # Panics
    /// If the block does not lie in one box of the declared region, or the view has one
    /// dimension.
    ///
    /// ```
    /// use ember::flow::{map, Buffer, Flow};
    /// # let pool = ember::Pool::builder().threads(2).build().unwrap();
    /// let flow = Flow::new(&pool, Default::default());
    /// let (n, m) = (4, 5);
    /// let a = Buffer::new(&flow, [n, m], |[i, j]| (i * m + j) as u32);
    /// let sums = Buffer::new(&flow, [m - 1], |_| 0u32);
    /// flow.submit(|cg| {
    ///     // Column pair j, j + 1 of every row.
    ///     let a = a.read(cg, map::from_fn(move |[cols]: [std::ops::Range<usize>; 1]| {
    ///         [0..n, cols.start..cols.end + 1].into()
    ///     }));
    ///     let sums = sums.write(cg, map::one_to_one());
    ///     cg.parallel_for([m - 1], move |chunk| {
    ///         let (a, mut sums) = (chunk.read(&a), chunk.write(&sums));
    ///         for [j] in chunk.items() {
    ///             sums[[j]] = a.rows([0, j], n, 2).map(|r| r[0] + r[1]).sum();
    ///         }
    ///     });
    /// })?;
    /// assert_eq!(flow.read_back(&sums)?, [64, 72, 80, 88]);
    /// # Ok::<(), ember::flow::FlowError>(())
    /// ```
    #[inline]
    pub fn rows(&self, start: [usize; D], count: usize, len: usize) -> Rows<'_, T> {
        let at = self.window.block(start, count, len);
        Rows {
            // Not dereferenced unless the block has an element: then `at` is in it.
            next: self.base.wrapping_add(at),
            stride: if D >= 2 { self.window.stride[D - 2] } else { 0 },
            len,
            left: if len == 0 { 0 } else { count },
            _data: PhantomData,
        }
    }

    /// The whole buffer, copied, if the view's region is the whole buffer.
    pub(crate) fn copy_all(&self) -> Option<Vec<T>>
    where
        T: Copy,
    {
        let whole = Box3::from_extent(self.window.extent);
        (self.window.boxes.iter().any(|b| b.contains(&whole))).then(|| {
            // SAFETY: the region covers the whole buffer, `volume` elements from `base`,
            // and no task writes any of it while this chunk runs (module doc).
            unsafe { std::slice::from_raw_parts(self.base, whole.volume()) }.to_vec()
        })
    }
}

/// The rows of a block of a [`ReadView`], in order: see [`ReadView::rows`].
pub struct Rows<'a, T> {
    next: *const T,
    stride: usize,
    len: usize,
    left: usize,
    _data: PhantomData<&'a T>,
}

impl<'a, T> Iterator for Rows<'a, T> {
    type Item = &'a [T];

    #[inline]
    fn next(&mut self) -> Option<&'a [T]> {
        if self.left == 0 {
            return None;
        }
        self.left -= 1;
        let row = self.next;
        // Past the block's last row this points nowhere, and is never read.
        self.next = self.next.wrapping_add(self.stride);
        // SAFETY: `row` is one of the block's rows, which `ReadView::rows` checked lie in
        // the declared region, inside the buffer; no task writes them while the chunk runs
        // (module doc).
        Some(unsafe { std::slice::from_raw_parts(row, self.len) })
    }

    #[inline]
    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.left, Some(self.left))
    }
}

impl<T> ExactSizeIterator for Rows<'_, T> {}

impl<T> std::iter::FusedIterator for Rows<'_, T> {}

impl<T, const D: usize> Index<[usize; D]> for ReadView<'_, T, D> {
    type Output = T;

    /// # Panics
    /// Outside the declared region.
    #[inline]
    fn index(&self, idx: [usize; D]) -> &T {
        let at = self.window.offset(idx);
        // SAFETY: `at` is inside the declared region, so inside the buffer; no task writes
        // the region while this chunk runs (module doc).
        unsafe { &*self.base.add(at) }
    }
}

/// A chunk's view, read and write, of the region a [`WriteAccessor`] declared: index it with
/// `view[[i, j]]`, assign with `view[[i, j]] = x`.
pub struct WriteView<'a, T, const D: usize> {
    base: *mut T,
    window: Window<'a, D>,
    _data: PhantomData<&'a mut T>,
}

impl<T, const D: usize> WriteView<'_, T, D> {
    /// The declared region, as boxes (unused dimensions `0..1`).
    pub fn region(&self) -> &[Box3] {
        self.window.boxes
    }

    /// As [`ReadView::slice`].
    pub fn slice(&self, start: [usize; D], len: usize) -> &[T] {
        let at = self.window.run(start, len);
        // SAFETY: inside the declared region (checked); only this view, borrowed shared
        // here, reaches it while the chunk runs (module doc).
        unsafe { std::slice::from_raw_parts(self.base.add(at), len) }
    }

    /// As [`ReadView::slice`], to write.
    ///
    /// # Panics
    /// If the elements do not all lie in one box of the declared region.
    pub fn slice_mut(&mut self, start: [usize; D], len: usize) -> &mut [T] {
        let at = self.window.run(start, len);
        // SAFETY: inside the declared region (checked), which no other task touches while
        // this chunk runs and no other view of this chunk reaches (module doc); `&mut self`
        // keeps the slice unique.
        unsafe { std::slice::from_raw_parts_mut(self.base.add(at), len) }
    }
}

impl<T, const D: usize> Index<[usize; D]> for WriteView<'_, T, D> {
    type Output = T;

    /// # Panics
    /// Outside the declared region.
    #[inline]
    fn index(&self, idx: [usize; D]) -> &T {
        let at = self.window.offset(idx);
        // SAFETY: inside the declared region; only this view (borrowed shared here)
        // reaches it while the chunk runs (module doc).
        unsafe { &*self.base.add(at) }
    }
}

impl<T, const D: usize> IndexMut<[usize; D]> for WriteView<'_, T, D> {
    /// # Panics
    /// Outside the declared region.
    #[inline]
    fn index_mut(&mut self, idx: [usize; D]) -> &mut T {
        let at = self.window.offset(idx);
        // SAFETY: inside the declared region, which no other task touches while this chunk
        // runs and no other view of this chunk reaches (module doc); `&mut self` keeps the
        // reference unique.
        unsafe { &mut *self.base.add(at) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn items_walk_a_box_row_major() {
        for (lo, hi) in [
            ([1, 2, 0], [3, 5, 4]),
            ([0, 0, 0], [1, 1, 1]),
            ([2, 0, 0], [2, 3, 3]),
        ] {
            let ctx = ChunkCtx {
                group: 0,
                range: Box3 { lo, hi },
                regions: Vec::new(),
            };
            let got: Vec<[usize; 3]> = Chunk::<3>::new(ctx).items().collect();
            let mut expected = Vec::new();
            for i in lo[0]..hi[0] {
                for j in lo[1]..hi[1] {
                    for k in lo[2]..hi[2] {
                        expected.push([i, j, k]);
                    }
                }
            }
            assert_eq!(got, expected);
        }
    }

    /// A region of two boxes in a 6 × 3 buffer, with a gap between them.
    fn two_boxes() -> [Box3; 2] {
        [
            Box3 {
                lo: [0, 0, 0],
                hi: [2, 2, 1],
            },
            Box3 {
                lo: [4, 1, 0],
                hi: [5, 3, 1],
            },
        ]
    }

    #[test]
    fn a_window_finds_every_box_of_its_region() {
        let boxes = two_boxes();
        let w = Window::<2>::new(&boxes, [6, 3, 1]);
        for i in 0..6 {
            for j in 0..3 {
                let inside = boxes.iter().any(|b| b.contains_point([i, j, 0]));
                assert_eq!(w.get([i, j]), inside.then_some(i * 3 + j));
                if inside {
                    assert_eq!(w.offset([i, j]), i * 3 + j);
                }
            }
        }
        assert!(std::panic::catch_unwind(|| w.offset([3, 0])).is_err());
        // Runs along the last dimension must lie in one box.
        assert_eq!(w.run([1, 0], 2), 3);
        assert_eq!(w.run([4, 1], 2), 13);
        assert_eq!(w.run([5, 0], 0), 0);
        assert!(std::panic::catch_unwind(|| w.run([1, 1], 2)).is_err());
        assert!(std::panic::catch_unwind(|| w.run([4, 0], 1)).is_err());
        // Blocks of rows must lie in one box too.
        assert_eq!(w.block([0, 0], 2, 2), 0);
        assert_eq!(w.block([4, 1], 1, 2), 13);
        assert_eq!(w.block([3, 0], 0, 2), 0);
        assert!(std::panic::catch_unwind(|| w.block([0, 0], 3, 1)).is_err());
        assert!(std::panic::catch_unwind(|| w.block([1, 1], 1, 2)).is_err());
        assert!(std::panic::catch_unwind(|| w.block([1, 0], 4, 1)).is_err());
    }

    /// The message of the panic `f` raises.
    fn panic_message(f: impl FnOnce() + std::panic::UnwindSafe) -> String {
        let payload = std::panic::catch_unwind(f).expect_err("no panic");
        payload
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| payload.downcast_ref::<&str>().map(|s| s.to_string()))
            .unwrap_or_default()
    }

    #[test]
    fn runs_and_blocks_past_the_end_of_the_index_space_are_refused() {
        // Starting in the second box sends each check to its slow path, whose end must not
        // wrap round to pass: a release build has no overflow check to catch it.
        let boxes = two_boxes();
        let w = Window::<2>::new(&boxes, [6, 3, 1]);
        let run = panic_message(|| {
            w.run([4, 1], usize::MAX);
        });
        assert!(run.contains("do not lie"), "{run}");
        let block = panic_message(|| {
            w.block([4, 1], usize::MAX, 1);
        });
        assert!(block.contains("do not lie"), "{block}");
        let wide = panic_message(|| {
            w.block([4, 1], 1, usize::MAX);
        });
        assert!(wide.contains("do not lie"), "{wide}");
    }
}
