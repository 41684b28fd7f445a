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
/// call works on. See the [module doc](self).
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
        Items {
            next: if b.is_empty() { None } else { Some(b.lo) },
            range: b,
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
            extent: accessor.storage.extent(),
            boxes,
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
            extent: accessor.storage.extent(),
            boxes,
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
    range: Box3,
    next: Option<[usize; 3]>,
}

impl<const D: usize> Iterator for Items<D> {
    type Item = [usize; D];

    #[inline]
    fn next(&mut self) -> Option<[usize; D]> {
        let p = self.next?;
        let mut n = p;
        let mut d = 2;
        loop {
            n[d] += 1;
            if n[d] < self.range.hi[d] {
                self.next = Some(n);
                break;
            }
            n[d] = self.range.lo[d];
            if d == 0 {
                self.next = None;
                break;
            }
            d -= 1;
        }
        Some(std::array::from_fn(|d| p[d]))
    }
}

#[inline]
fn point<const D: usize>(idx: [usize; D]) -> [usize; 3] {
    let mut p = [0; 3];
    p[..D].copy_from_slice(&idx);
    p
}

#[inline]
fn offset<const D: usize>(boxes: &[Box3], extent: &[usize; 3], idx: [usize; D]) -> usize {
    let p = point(idx);
    if !boxes.iter().any(|b| b.contains_point(p)) {
        outside(&idx);
    }
    linear(extent, p)
}

#[cold]
#[inline(never)]
fn outside(idx: &[usize]) -> ! {
    panic!("index {idx:?} lies outside the region this chunk declared for the buffer")
}

/// A chunk's view of the region a [`ReadAccessor`] declared: index it with `view[[i, j]]`.
pub struct ReadView<'a, T, const D: usize> {
    base: *const T,
    extent: [usize; 3],
    boxes: &'a [Box3],
    _data: PhantomData<&'a T>,
}

impl<T, const D: usize> ReadView<'_, T, D> {
    /// The declared region, as boxes (unused dimensions `0..1`).
    pub fn region(&self) -> &[Box3] {
        self.boxes
    }

    /// The element at `idx`, or `None` outside the declared region.
    pub fn get(&self, idx: [usize; D]) -> Option<&T> {
        let p = point(idx);
        self.boxes.iter().any(|b| b.contains_point(p)).then(|| {
            // SAFETY: `p` lies in the declared region, inside the buffer; no task writes
            // it while this chunk runs (module doc).
            unsafe { &*self.base.add(linear(&self.extent, p)) }
        })
    }
}

impl<T, const D: usize> Index<[usize; D]> for ReadView<'_, T, D> {
    type Output = T;

    /// # Panics
    /// Outside the declared region.
    #[inline]
    fn index(&self, idx: [usize; D]) -> &T {
        let at = offset(self.boxes, &self.extent, idx);
        // SAFETY: `at` is inside the declared region, so inside the buffer; no task writes
        // the region while this chunk runs (module doc).
        unsafe { &*self.base.add(at) }
    }
}

/// A chunk's view, read and write, of the region a [`WriteAccessor`] declared: index it with
/// `view[[i, j]]`, assign with `view[[i, j]] = x`.
pub struct WriteView<'a, T, const D: usize> {
    base: *mut T,
    extent: [usize; 3],
    boxes: &'a [Box3],
    _data: PhantomData<&'a mut T>,
}

impl<T, const D: usize> WriteView<'_, T, D> {
    /// The declared region, as boxes (unused dimensions `0..1`).
    pub fn region(&self) -> &[Box3] {
        self.boxes
    }
}

impl<T, const D: usize> Index<[usize; D]> for WriteView<'_, T, D> {
    type Output = T;

    /// # Panics
    /// Outside the declared region.
    #[inline]
    fn index(&self, idx: [usize; D]) -> &T {
        let at = offset(self.boxes, &self.extent, idx);
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
        let at = offset(self.boxes, &self.extent, idx);
        // SAFETY: inside the declared region, which no other task touches while this chunk
        // runs and no other view of this chunk reaches (module doc); `&mut self` keeps the
        // reference unique.
        unsafe { &mut *self.base.add(at) }
    }
}
