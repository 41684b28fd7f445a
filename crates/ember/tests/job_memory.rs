//! The memory of spawned jobs: every job's closure is run and dropped exactly once, whatever
//! its size and however it or its captured values' drops panic, and every block a worker
//! keeps for reuse goes back to the allocator when the pool is gone; a chain of spawns reuses
//! the block its predecessor left instead of allocating one per link.
//!
//! A counting global allocator watches allocations of the job block's layout (64 bytes,
//! 16-aligned). Every test holds `COUNTING`, so that none allocates such blocks while another
//! reads the counts.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{mpsc, Arc, Mutex};

mod common;

struct Counting;

/// Blocks of the job layout allocated and freed, by everybody in this process.
static BLOCKS_ALLOCATED: AtomicUsize = AtomicUsize::new(0);
static BLOCKS_FREED: AtomicUsize = AtomicUsize::new(0);

fn is_block(layout: Layout) -> bool {
    layout.size() == 64 && layout.align() == 16
}

// SAFETY: forwards every call to the system allocator unchanged; it only counts.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if is_block(layout) {
            BLOCKS_ALLOCATED.fetch_add(1, Ordering::Relaxed);
        }
        // SAFETY: the caller's contract, passed on.
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        if is_block(layout) {
            BLOCKS_FREED.fetch_add(1, Ordering::Relaxed);
        }
        // SAFETY: the caller's contract, passed on.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// Held by every test of this file.
static COUNTING: Mutex<()> = Mutex::new(());

fn blocks_live() -> isize {
    BLOCKS_ALLOCATED.load(Ordering::SeqCst) as isize - BLOCKS_FREED.load(Ordering::SeqCst) as isize
}

/// Counts its drops.
struct Tracked(Arc<AtomicUsize>);

impl Drop for Tracked {
    fn drop(&mut self) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

/// Whether job `i` captures a `PanicsOnDrop`: every seventh that does not panic itself.
fn has_bomb(i: usize) -> bool {
    i % 7 == 0 && i % 5 != 0
}

/// Counts its drops, then panics.
struct PanicsOnDrop(Arc<AtomicUsize>);

impl Drop for PanicsOnDrop {
    fn drop(&mut self) {
        self.0.fetch_add(1, Ordering::SeqCst);
        panic!("a captured value's drop panics");
    }
}

/// Spawns `n` jobs whose closures carry `payload` and a `Tracked`: from outside, from inside
/// jobs, and as scope jobs; every fifth panics, every seventh of the others captures a value
/// whose drop panics (one dropped while its job unwinds would abort the process, in any
/// runtime). Checks that each ran once and that each closure, and each captured value, was
/// dropped once.
fn every_closure_runs_and_drops_once<P: Clone + Send + Sync + 'static>(
    pool: &ember::Pool,
    payload: P,
) {
    let n = 2_100;
    let ran = Arc::new(AtomicUsize::new(0));
    let dropped = Arc::new(AtomicUsize::new(0));
    let job = |i: usize| {
        let (ran, tracked, payload) = (ran.clone(), Tracked(dropped.clone()), payload.clone());
        let bomb = has_bomb(i).then(|| PanicsOnDrop(dropped.clone()));
        move || {
            let _keep = (&tracked, &payload, bomb);
            ran.fetch_add(1, Ordering::SeqCst);
            if i % 5 == 0 {
                std::panic::panic_any(i);
            }
        }
    };
    // The scope re-raises the first panic of its jobs, once all of them have ended.
    let scoped = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        pool.scope(|scope| {
            for i in 0..n {
                match i % 3 {
                    0 => pool.spawn(job(i)),
                    // From inside a job: onto a worker's deque, with that worker's cache.
                    1 => {
                        let job = job(i);
                        pool.spawn(move || ember::spawn(job));
                    }
                    _ => {
                        let job = job(i);
                        scope.spawn(move |_| job());
                    }
                }
            }
        })
    }));
    assert!(scoped.is_err(), "scope jobs panicked");
    pool.wait_idle();
    assert_eq!(ran.load(Ordering::SeqCst), n);
    let bombs = (0..n).filter(|&i| has_bomb(i)).count();
    assert_eq!(dropped.load(Ordering::SeqCst), n + bombs);
}

#[test]
fn closures_of_every_size_run_once_and_are_dropped_once_even_when_they_panic() {
    let _counting = COUNTING.lock().unwrap_or_else(|e| e.into_inner());
    let before = blocks_live();
    for (name, policy) in common::policies() {
        let pool = ember::Pool::builder()
            .threads(2)
            .wake(policy)
            .panic_handler(|_| {})
            .build()
            .expect("a pool");
        // Nothing but the counters (fits a block), a block's worth, more than a block, and
        // more aligned than a block: the last two are boxed as before.
        every_closure_runs_and_drops_once(&pool, ());
        every_closure_runs_and_drops_once(&pool, [7u8; 24]);
        every_closure_runs_and_drops_once(&pool, [7u8; 200]);
        #[derive(Clone)]
        #[repr(align(64))]
        struct Wide(#[allow(dead_code)] u8);
        every_closure_runs_and_drops_once(&pool, Wide(1));
        drop(pool);
        assert_eq!(
            blocks_live(),
            before,
            "{name}: blocks kept after the pool was dropped"
        );
    }
}

#[test]
fn a_chain_of_spawns_reuses_its_block_and_the_pool_gives_every_block_back() {
    let _counting = COUNTING.lock().unwrap_or_else(|e| e.into_inner());
    let before = blocks_live();
    let allocated_before = BLOCKS_ALLOCATED.load(Ordering::SeqCst);
    {
        let pool = ember::Pool::builder().threads(2).build().expect("a pool");
        let (done, finished) = mpsc::channel();
        fn link(left: u32, done: mpsc::Sender<()>) {
            if left == 0 {
                done.send(()).expect("the test waits");
                return;
            }
            ember::spawn(move || link(left - 1, done));
        }
        let links = 10_000;
        pool.spawn(move || link(links, done));
        finished.recv().expect("the chain ends");
        pool.wait_idle();
        let allocated = BLOCKS_ALLOCATED.load(Ordering::SeqCst) - allocated_before;
        // The first link, spawned from this thread (no worker), takes a fresh block. Every
        // later one takes the block its predecessor gave back, to the cache of the worker
        // running it, before it ran: a thief too frees the block it stole into its own cache
        // first. Freed only after the closure ran, two blocks would take turns; without reuse
        // every link allocates one.
        assert_eq!(
            allocated, 1,
            "blocks allocated for a chain of {links} spawns"
        );
    }
    // The workers' caches went back to the allocator with the pool.
    assert_eq!(
        blocks_live(),
        before,
        "blocks kept after the pool was dropped"
    );
}
