//! Logical buffers: the handles tasks declare their accesses against.
//!
//! A [`BufferId`] holds no data. The user owns the data (in an `Arc<Mutex<..>>`, atomics, or
//! anything the kernels can reach); the flow only tracks which task touches which part of the
//! buffer's index space, so it can order them.

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
