//! Buffers: the handles tasks declare their accesses against.
//!
//! A [`BufferId`] holds no data. The user owns the data (in an `Arc<Mutex<..>>`, atomics, or
//! anything the kernels can reach); the flow only tracks which task touches which part of the
//! buffer's index space, so it can order them.
//!
//! A [`Buffer`] owns its data: a `BufferId` and the elements, which kernels reach only
//! through the views of the accessors they declared.

/// A logical buffer of one [`Flow`](super::Flow), with a 1-, 2- or 3-D index space.
///
/// Created by [`Flow::buffer`](super::Flow::buffer); cheap to copy. Using it with another flow
/// is an error ([`FlowError::ForeignBuffer`](super::FlowError::ForeignBuffer)).
///
/// ```
/// let pool = ember::Pool::builder().threads(1).build().unwrap();
/// let flow = ember::flow::Flow::new(&pool, Default::default());
/// let grid = flow.buffer([512, 256]);
/// assert_eq!(grid.dims(), 2);
/// assert_eq!(grid.extent(), [512, 256, 1]);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct BufferId {
    pub(crate) flow: u64,
    pub(crate) index: u32,
    pub(crate) dims: u8,
    pub(crate) extent: [usize; 3],
}

impl BufferId {
    /// The number of dimensions (1, 2 or 3).
    pub fn dims(&self) -> usize {
        self.dims as usize
    }

    /// The extent in every dimension; the dimensions the buffer lacks are `1`.
    pub fn extent(&self) -> [usize; 3] {
        self.extent
    }

    pub(crate) fn new<const D: usize>(flow: u64, index: u32, extent: [usize; D]) -> Self {
        const { assert!(D >= 1 && D <= 3, "a buffer has 1, 2 or 3 dimensions") };
        let mut full = [1; 3];
        full[..D].copy_from_slice(&extent);
        BufferId {
            flow,
            index,
            dims: D as u8,
            extent: full,
        }
    }
}

use std::cell::UnsafeCell;
use std::marker::PhantomData;
use std::sync::Arc;

use super::command_group::Typed;
use super::graph::Mode as AccessMode;
use super::kernel::{ReadAccessor, WriteAccessor};
use super::map::RangeMapper;
use super::{Box3, CommandGroup, Flow};

/// Plain data that a [`Buffer`] can hold and a distributed flow can move as bytes:
/// `bytemuck`'s `Pod` (numbers, arrays of them, `#[repr(C)]` structs that derive it).
pub use bytemuck::Pod;

/// The elements of a buffer, shared by the buffer and the accessors of its tasks.
///
/// Every access to the elements goes through the views of a running task (or the
/// flow's own copy and transfer tasks), and the flow runs two tasks at once only if their
/// declared regions of the buffer do not overlap or both only read. That, and the views'
/// check that every index lies in the declared region, is what makes sharing the cells
/// sound.
pub(crate) struct Storage<T> {
    cells: Box<[UnsafeCell<T>]>,
    extent: [usize; 3],
}

// SAFETY: the cells are only reached through views and transfer tasks, which the flow's
// dependency graph keeps from overlapping a concurrent writer (type doc); `T: Send + Sync`
// makes the elements themselves safe to share and to move between threads.
unsafe impl<T: Send + Sync> Sync for Storage<T> {}

impl<T> Storage<T> {
    /// The first element; valid for the whole buffer (`UnsafeCell<T>` has `T`'s layout).
    pub(crate) fn base(&self) -> *mut T {
        UnsafeCell::raw_get(self.cells.as_ptr())
    }

    pub(crate) fn extent(&self) -> [usize; 3] {
        self.extent
    }
}

/// Row-major linear index of `p` in a buffer of `extent`.
#[inline]
pub(crate) fn linear(extent: &[usize; 3], p: [usize; 3]) -> usize {
    (p[0] * extent[1] + p[1]) * extent[2] + p[2]
}

/// Copies a box of a buffer out to bytes and back: what transfers between ranks and
/// `read_back` need, without knowing the element type.
pub(crate) trait ErasedStorage: Send + Sync {
    /// The box's elements, row-major, as bytes.
    ///
    /// # Safety
    /// No task may write any part of `b` meanwhile (the caller holds a read access to it).
    unsafe fn pack(&self, b: &Box3) -> Vec<u8>;
    /// Overwrites the box with `bytes` (as made by `pack` of the same box).
    ///
    /// # Safety
    /// No other task may read or write any part of `b` meanwhile (the caller holds a
    /// write access to it).
    unsafe fn unpack(&self, b: &Box3, bytes: &[u8]);
    /// The size of one element in bytes.
    fn element_size(&self) -> usize;
}

impl<T: Pod + Send + Sync> ErasedStorage for Storage<T> {
    unsafe fn pack(&self, b: &Box3) -> Vec<u8> {
        let mut out: Vec<T> = Vec::with_capacity(b.volume());
        let base = self.base();
        for_rows(b, |start, len| {
            let at = linear(&self.extent, start);
            // SAFETY: `at..at + len` is a row of `b`, inside the buffer; no task writes it
            // meanwhile (the caller's contract), so reading it as a slice is not a race.
            out.extend_from_slice(unsafe { std::slice::from_raw_parts(base.add(at), len) });
        });
        bytemuck::cast_slice(&out).to_vec()
    }

    unsafe fn unpack(&self, b: &Box3, bytes: &[u8]) {
        assert_eq!(
            bytes.len(),
            b.volume() * std::mem::size_of::<T>(),
            "a transfer of the wrong size"
        );
        let mut values = vec![T::zeroed(); b.volume()];
        bytemuck::cast_slice_mut::<T, u8>(&mut values).copy_from_slice(bytes);
        let base = self.base();
        let mut next = 0;
        for_rows(b, |start, len| {
            let at = linear(&self.extent, start);
            // SAFETY: `at..at + len` is a row of `b`, inside the buffer, and nobody else
            // touches `b` meanwhile (the caller's contract).
            unsafe { std::ptr::copy_nonoverlapping(values[next..].as_ptr(), base.add(at), len) };
            next += len;
        });
    }

    fn element_size(&self) -> usize {
        std::mem::size_of::<T>()
    }
}

/// Calls `row(start, len)` for every contiguous row (along the last dimension) of `b`, in
/// row-major order.
fn for_rows(b: &Box3, mut row: impl FnMut([usize; 3], usize)) {
    if b.is_empty() {
        return;
    }
    let len = b.hi[2] - b.lo[2];
    for i in b.lo[0]..b.hi[0] {
        for j in b.lo[1]..b.hi[1] {
            row([i, j, b.lo[2]], len);
        }
    }
}

/// A buffer that owns its data: `D`-dimensional (1, 2 or 3), elements of type `T`.
///
/// Tasks reach its elements only through accessors declared in a command group
/// ([`read`](Self::read), [`write`](Self::write), [`read_write`](Self::read_write)), each
/// with a [range mapper](super::map) saying which region a chunk of the kernel's range
/// touches; the flow orders the tasks by those regions, as it does for [`BufferId`]s. The
/// host reads it with [`Flow::read_back`], which waits for the buffer's last writer.
///
/// ```
/// use ember::flow::{map, Buffer, Flow};
/// let pool = ember::Pool::builder().threads(2).build().unwrap();
/// let flow = Flow::new(&pool, Default::default());
/// let squares = Buffer::new(&flow, [8], |[i]| (i * i) as u64);
/// let doubled = Buffer::new(&flow, [8], |_| 0u64);
/// flow.submit(|cg| {
///     let src = squares.read(cg, map::one_to_one());
///     let dst = doubled.write(cg, map::one_to_one());
///     cg.parallel_for([8], move |chunk| {
///         let (src, mut dst) = (chunk.read(&src), chunk.write(&dst));
///         for [i] in chunk.items() {
///             dst[[i]] = 2 * src[[i]];
///         }
///     });
/// })?;
/// assert_eq!(flow.read_back(&doubled)?, [0, 2, 8, 18, 32, 50, 72, 98]);
/// # Ok::<(), ember::flow::FlowError>(())
/// ```
pub struct Buffer<T, const D: usize> {
    id: BufferId,
    pub(crate) storage: Arc<Storage<T>>,
    _dims: PhantomData<[(); D]>,
}

impl<T, const D: usize> Clone for Buffer<T, D> {
    fn clone(&self) -> Self {
        Buffer {
            id: self.id,
            storage: self.storage.clone(),
            _dims: PhantomData,
        }
    }
}

impl<T, const D: usize> std::fmt::Debug for Buffer<T, D> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Buffer").field("id", &self.id).finish()
    }
}

impl<T: Pod + Send + Sync, const D: usize> Buffer<T, D> {
    /// A buffer of `flow` with the given extent, element `[i, j, …]` set to `init([i, j,
    /// …])` (called on this thread, in row-major order).
    ///
    /// ```
    /// # let pool = ember::Pool::builder().threads(1).build().unwrap();
    /// # let flow = ember::flow::Flow::new(&pool, Default::default());
    /// let grid = ember::flow::Buffer::new(&flow, [3, 4], |[i, j]| (10 * i + j) as f64);
    /// assert_eq!(flow.read_back(&grid)?[4], 10.0);
    /// # Ok::<(), ember::flow::FlowError>(())
    /// ```
    pub fn new(flow: &Flow, extent: [usize; D], mut init: impl FnMut([usize; D]) -> T) -> Self {
        let id = flow.buffer(extent);
        let full = id.extent();
        let mut cells = Vec::with_capacity(full.iter().product());
        for i in 0..full[0] {
            for j in 0..full[1] {
                for k in 0..full[2] {
                    let p = [i, j, k];
                    cells.push(UnsafeCell::new(init(std::array::from_fn(|d| p[d]))));
                }
            }
        }
        Buffer {
            id,
            storage: Arc::new(Storage {
                cells: cells.into_boxed_slice(),
                extent: full,
            }),
            _dims: PhantomData,
        }
    }

    /// A buffer of `flow` holding `data`, row-major.
    ///
    /// # Panics
    /// If `data.len()` is not the product of `extent`.
    ///
    /// ```
    /// # let pool = ember::Pool::builder().threads(1).build().unwrap();
    /// # let flow = ember::flow::Flow::new(&pool, Default::default());
    /// let b = ember::flow::Buffer::from_vec(&flow, [2, 2], vec![1u8, 2, 3, 4]);
    /// assert_eq!(flow.read_back(&b)?, [1, 2, 3, 4]);
    /// # Ok::<(), ember::flow::FlowError>(())
    /// ```
    pub fn from_vec(flow: &Flow, extent: [usize; D], data: Vec<T>) -> Self {
        let len: usize = extent.iter().product();
        assert_eq!(
            data.len(),
            len,
            "Buffer::from_vec: {} elements for an extent of {len}",
            data.len()
        );
        let mut data = data.into_iter();
        Buffer::new(flow, extent, |_| data.next().expect("counted above"))
    }

    /// The logical buffer: declare plain accesses on it with
    /// [`CommandGroup::read`] and friends, as on any [`BufferId`].
    pub fn id(&self) -> BufferId {
        self.id
    }

    /// The extent in every dimension.
    pub fn extent(&self) -> [usize; D] {
        std::array::from_fn(|d| self.id.extent()[d])
    }

    /// Declares that each chunk of the group's kernel reads the region `mapper` maps it to;
    /// the returned accessor gives the kernel that region ([`Chunk::read`](super::Chunk::read)).
    pub fn read(&self, cg: &mut CommandGroup, mapper: impl RangeMapper) -> ReadAccessor<T, D> {
        let slot = cg.typed(self.typed(AccessMode::Read, mapper));
        ReadAccessor::new(cg.group, slot, self.storage.clone())
    }

    /// Declares that each chunk writes the region `mapper` maps it to, without reading it
    /// first. Whatever it held is overwritten. Where the kernel does not write, one process
    /// keeps the old value; on a distributed flow the value there is undefined, since the
    /// writing rank's copy becomes the current one.
    pub fn write(&self, cg: &mut CommandGroup, mapper: impl RangeMapper) -> WriteAccessor<T, D> {
        let slot = cg.typed(self.typed(AccessMode::Write, mapper));
        WriteAccessor::new(cg.group, slot, self.storage.clone())
    }

    /// Declares that each chunk reads and then writes the region `mapper` maps it to.
    pub fn read_write(
        &self,
        cg: &mut CommandGroup,
        mapper: impl RangeMapper,
    ) -> WriteAccessor<T, D> {
        let slot = cg.typed(self.typed(AccessMode::ReadWrite, mapper));
        WriteAccessor::new(cg.group, slot, self.storage.clone())
    }

    fn typed(&self, mode: AccessMode, mapper: impl RangeMapper) -> Typed {
        Typed {
            buffer: self.id,
            mode,
            mapper: Arc::new(mapper),
            storage: self.storage.clone(),
        }
    }
}
