//! A worker's cache of freed job blocks: the memory of spawned jobs, reused without the
//! allocator.
//!
//! Every spawn boxes its closure (`HeapJob`), and every job run frees that box: with the
//! system allocator, a malloc and a free, about a third of the instructions of a chain of
//! spawns. A job whose closure fits [`BLOCK`] (64 bytes, 16-aligned, which most do) lives
//! instead in a block of that one layout. Its run moves the closure out and gives the block
//! back before calling it, to the cache of the worker running it; its spawn takes one from
//! the cache of the worker spawning, or from the allocator when that cache is empty or the
//! spawner is not a worker. A job that spawns its successor therefore hands it the block it
//! just left, still in cache. Every block has the same layout, so any worker (of any pool)
//! may keep any block, and a block given back where the cache is full, or off the workers,
//! goes to the allocator.
//!
//! The cache is a plain array of `Cell`s: only its worker's thread touches it (the worker is
//! not `Sync`), so it needs no atomics, and it holds at most [`CAPACITY`] blocks (2 KiB), given
//! back to the allocator when the worker's thread exits: by the time a pool's drop returns,
//! unless its last handle was dropped on a worker, whose drop does not wait for the threads.
//! A block crosses threads only inside a job, through the queues that hand the job over (and
//! whose protocols have their models): the cache adds no shared state, and so no protocol of
//! its own to model. Hand-written because what it does is one line each way: a general
//! object pool or allocator crate would put synchronisation, or a global allocator, where a
//! worker-local array does.

use std::alloc::{alloc, dealloc, handle_alloc_error, Layout};
use std::cell::Cell;
use std::ptr::NonNull;

use crate::pool::workers::worker::WorkerThread;

/// The one layout of a cached block.
pub(crate) const BLOCK: Layout = match Layout::from_size_align(64, 16) {
    Ok(layout) => layout,
    Err(_) => panic!("64 bytes at 16-byte alignment is a valid layout"),
};

/// Blocks a worker keeps at most.
const CAPACITY: usize = 32;

/// Whether a `T` lives in a block: it fits one, and it is not zero-sized (a `Box` of a
/// zero-sized value allocates nothing, which no block can beat).
pub(crate) const fn fits<T>() -> bool {
    let layout = Layout::new::<T>();
    layout.size() > 0 && layout.size() <= BLOCK.size() && layout.align() <= BLOCK.align()
}

/// One worker's freed blocks, the last freed on top.
pub(crate) struct JobCache {
    blocks: [Cell<*mut u8>; CAPACITY],
    len: Cell<usize>,
}

impl JobCache {
    pub(crate) fn new() -> Self {
        JobCache {
            blocks: std::array::from_fn(|_| Cell::new(std::ptr::null_mut())),
            len: Cell::new(0),
        }
    }

    /// The block freed last, if any.
    #[inline]
    fn take(&self) -> Option<NonNull<u8>> {
        let len = self.len.get().checked_sub(1)?;
        self.len.set(len);
        NonNull::new(self.blocks[len].get())
    }

    /// Keeps `block` unless the cache is full (then `false`).
    #[inline]
    fn keep(&self, block: NonNull<u8>) -> bool {
        let len = self.len.get();
        if len == CAPACITY {
            return false;
        }
        self.blocks[len].set(block.as_ptr());
        self.len.set(len + 1);
        true
    }
}

impl Drop for JobCache {
    fn drop(&mut self) {
        for block in &self.blocks[..self.len.get()] {
            // SAFETY: every block kept came from `alloc(BLOCK)` (`alloc_block`) and is owned
            // by this cache alone: `take` hands it out only once, by lowering `len`.
            unsafe { dealloc(block.get(), BLOCK) };
        }
    }
}

/// An uninitialised block of layout [`BLOCK`]: the last one freed into the cache of
/// `worker` (this thread's, of any pool, if it is one), or a fresh one. Safe because a
/// `&WorkerThread` never leaves its thread: the worker is not `Sync` (its `Cell`s, this
/// cache's among them), so no other thread's cache can be passed here.
#[inline]
pub(crate) fn alloc_block(worker: Option<&WorkerThread>) -> NonNull<u8> {
    if let Some(block) = worker.and_then(|worker| worker.job_cache().take()) {
        return block;
    }
    // SAFETY: `BLOCK` has a non-zero size.
    let block = unsafe { alloc(BLOCK) };
    NonNull::new(block).unwrap_or_else(|| handle_alloc_error(BLOCK))
}

/// Gives `block` back: to the cache of this thread's worker, or to the allocator.
///
/// # Safety
/// `block` came from [`alloc_block`], holds nothing left to drop, and is not used again.
#[inline]
pub(crate) unsafe fn free_block(block: NonNull<u8>) {
    let kept =
        WorkerThread::with_any_current(|worker| worker.is_some_and(|w| w.job_cache().keep(block)));
    if !kept {
        // SAFETY: `block` came from `alloc(BLOCK)` (the caller's promise; cached blocks did
        // too) and nobody uses it again.
        unsafe { dealloc(block.as_ptr(), BLOCK) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_come_back_last_freed_first_and_a_full_cache_refuses() {
        let cache = JobCache::new();
        assert!(cache.take().is_none());
        let blocks: Vec<NonNull<u8>> = (0..=CAPACITY)
            // SAFETY: `BLOCK` has a non-zero size.
            .map(|_| NonNull::new(unsafe { alloc(BLOCK) }).expect("memory"))
            .collect();
        for &block in &blocks[..CAPACITY] {
            assert!(cache.keep(block));
        }
        assert!(!cache.keep(blocks[CAPACITY]), "a full cache keeps no more");
        assert_eq!(cache.take(), Some(blocks[CAPACITY - 1]));
        assert!(cache.keep(blocks[CAPACITY]));
        assert_eq!(cache.take(), Some(blocks[CAPACITY]));
        // The cache's drop gives back the `CAPACITY - 1` blocks still in it; the two taken
        // out go back here.
        // SAFETY: both came from `alloc(BLOCK)` and are no longer in the cache.
        unsafe {
            dealloc(blocks[CAPACITY - 1].as_ptr(), BLOCK);
            dealloc(blocks[CAPACITY].as_ptr(), BLOCK);
        }
    }

    #[test]
    fn only_sized_values_that_fit_a_block_use_one() {
        assert!(fits::<u64>());
        assert!(fits::<[u8; 64]>());
        assert!(!fits::<[u8; 65]>());
        assert!(!fits::<()>());
        #[repr(align(32))]
        struct Wide(#[allow(dead_code)] u8);
        assert!(!fits::<Wide>());
    }
}
