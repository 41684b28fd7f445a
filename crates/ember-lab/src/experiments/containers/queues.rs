//! The containers of the `containers` experiment, each behind [`WorkQueue`].
//!
//! The crate's own containers ([`TreiberStack`], [`SpmcBatch`]) implement the trait already;
//! this module adapts the library ones to it. Every container is built for `slots` callers
//! (the worker threads plus the helping main thread) and an upper bound on the items it holds
//! at once (`capacity`), which only the bounded ones use.
//!
//! For the per-worker containers (`spsc`, `chase-lev`) `push(worker, item)` puts `item` into
//! the ring or deque of slot `worker % slots` (the driver distributes round-robin by passing
//! `item index % slots`), and `pop(worker)` takes from slot `worker % slots`. Their ends are
//! single-threaded types (`rtrb::Producer`/`Consumer`, `crossbeam_deque::Worker`) while the
//! trait is shared by reference, so each end sits behind an uncontended `Mutex` in the usual
//! case; the measured pop cost of these two includes that lock (an uncontended lock/unlock
//! pair, two atomic read-modify-writes).

use std::collections::VecDeque;
use std::sync::Mutex;

use crate::systems::{self, System};
use crossbeam_deque::{Steal, Stealer, Worker};
use crossbeam_queue::{ArrayQueue, SegQueue};
use ember_containers::{SpmcBatch, TreiberStack, WorkQueue};

/// The containers compared, in the order of the published table.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// `Mutex<VecDeque>`: one lock around a ring buffer.
    MutexVecDeque,
    /// One `rtrb` single-producer single-consumer ring per slot, fed round-robin.
    Spsc,
    /// crossbeam's unbounded lock-free MPMC queue (`SegQueue`).
    MpmcQueue,
    /// The crate's Treiber stack (lock-free MPMC LIFO, epoch reclamation).
    TreiberStack,
    /// crossbeam's bounded MPMC queue after Vyukov (`ArrayQueue`); a full push spins.
    BoundedMpmc,
    /// One crossbeam-deque Chase-Lev deque per slot; an empty owner steals from the others.
    ChaseLev,
    /// The crate's SPMC batch queue (consumers claim by `fetch_add`).
    Spmc,
}

impl Kind {
    /// Every container.
    pub const ALL: [Kind; 7] = [
        Kind::MutexVecDeque,
        Kind::Spsc,
        Kind::MpmcQueue,
        Kind::TreiberStack,
        Kind::BoundedMpmc,
        Kind::ChaseLev,
        Kind::Spmc,
    ];

    /// The row's registry entry.
    pub fn system(self) -> &'static System {
        match self {
            Kind::MutexVecDeque => systems::MUTEX_VECDEQUE,
            Kind::Spsc => systems::SPSC,
            Kind::MpmcQueue => systems::MPMC_QUEUE,
            Kind::TreiberStack => systems::TREIBER_STACK,
            Kind::BoundedMpmc => systems::BOUNDED_MPMC,
            Kind::ChaseLev => systems::CHASE_LEV,
            Kind::Spmc => systems::SPMC,
        }
    }

    /// A new, empty container for `slots` callers holding at most `capacity` items at once.
    pub fn build<T: Send + 'static>(self, slots: usize, capacity: usize) -> Box<dyn WorkQueue<T>> {
        let slots = slots.max(1);
        let capacity = capacity.max(1);
        match self {
            Kind::MutexVecDeque => {
                Box::new(MutexQueue(Mutex::new(VecDeque::with_capacity(capacity))))
            }
            Kind::Spsc => Box::new(SpscRings::new(slots, capacity.div_ceil(slots))),
            Kind::MpmcQueue => Box::new(Seg(SegQueue::new())),
            Kind::TreiberStack => Box::new(TreiberStack::new()),
            Kind::BoundedMpmc => Box::new(Bounded(ArrayQueue::new(capacity))),
            Kind::ChaseLev => Box::new(ChaseLev::new(slots)),
            Kind::Spmc => Box::new(SpmcBatch::with_capacity(capacity)),
        }
    }
}

/// `Mutex<VecDeque>`, FIFO; the worker index is ignored.
struct MutexQueue<T>(Mutex<VecDeque<T>>);

impl<T: Send> WorkQueue<T> for MutexQueue<T> {
    fn push(&self, _worker: usize, item: T) {
        self.0
            .lock()
            .expect("mutex-vecdeque poisoned")
            .push_back(item);
    }

    fn pop(&self, _worker: usize) -> Option<T> {
        self.0.lock().expect("mutex-vecdeque poisoned").pop_front()
    }
}

/// `SegQueue`, FIFO; the worker index is ignored.
struct Seg<T>(SegQueue<T>);

impl<T: Send> WorkQueue<T> for Seg<T> {
    fn push(&self, _worker: usize, item: T) {
        self.0.push(item);
    }

    fn pop(&self, _worker: usize) -> Option<T> {
        self.0.pop()
    }
}

/// `ArrayQueue`, FIFO; the worker index is ignored. A push into a full queue spins (yielding)
/// until a consumer makes room, so it must not be called with no consumer running.
struct Bounded<T>(ArrayQueue<T>);

impl<T: Send> WorkQueue<T> for Bounded<T> {
    fn push(&self, _worker: usize, mut item: T) {
        let mut spins = 0u32;
        while let Err(back) = self.0.push(item) {
            item = back;
            backoff(&mut spins);
        }
    }

    fn pop(&self, _worker: usize) -> Option<T> {
        self.0.pop()
    }
}

/// One SPSC ring per slot. A push into a full ring spins (yielding) until its consumer makes
/// room; `pop` only looks at the caller's own ring (an SPSC ring has no way to steal).
struct SpscRings<T> {
    /// The producer end of each slot's ring.
    producers: Vec<Mutex<rtrb::Producer<T>>>,
    /// The consumer end of each slot's ring.
    consumers: Vec<Mutex<rtrb::Consumer<T>>>,
}

impl<T> SpscRings<T> {
    fn new(slots: usize, capacity: usize) -> Self {
        let (producers, consumers) = (0..slots)
            .map(|_| {
                let (tx, rx) = rtrb::RingBuffer::new(capacity.max(1));
                (Mutex::new(tx), Mutex::new(rx))
            })
            .unzip();
        SpscRings {
            producers,
            consumers,
        }
    }
}

impl<T: Send> WorkQueue<T> for SpscRings<T> {
    fn push(&self, worker: usize, mut item: T) {
        let mut tx = self.producers[worker % self.producers.len()]
            .lock()
            .expect("spsc producer poisoned");
        let mut spins = 0u32;
        while let Err(rtrb::PushError::Full(back)) = tx.push(item) {
            item = back;
            backoff(&mut spins);
        }
    }

    fn pop(&self, worker: usize) -> Option<T> {
        self.consumers[worker % self.consumers.len()]
            .lock()
            .expect("spsc consumer poisoned")
            .pop()
            .ok()
    }
}

/// One Chase-Lev deque per slot: the owner pushes and pops its own end (LIFO); when its deque
/// is empty it steals from the others' top ends, starting after its own index.
struct ChaseLev<T> {
    owners: Vec<Mutex<Worker<T>>>,
    stealers: Vec<Stealer<T>>,
}

impl<T> ChaseLev<T> {
    fn new(slots: usize) -> Self {
        let workers: Vec<Worker<T>> = (0..slots).map(|_| Worker::new_lifo()).collect();
        let stealers = workers.iter().map(Worker::stealer).collect();
        ChaseLev {
            owners: workers.into_iter().map(Mutex::new).collect(),
            stealers,
        }
    }
}

impl<T: Send> WorkQueue<T> for ChaseLev<T> {
    fn push(&self, worker: usize, item: T) {
        self.owners[worker % self.owners.len()]
            .lock()
            .expect("chase-lev owner poisoned")
            .push(item);
    }

    fn pop(&self, worker: usize) -> Option<T> {
        let n = self.owners.len();
        let own = worker % n;
        if let Some(item) = self.owners[own]
            .lock()
            .expect("chase-lev owner poisoned")
            .pop()
        {
            return Some(item);
        }
        for k in 1..n {
            let victim = (own + k) % n;
            loop {
                match self.stealers[victim].steal() {
                    Steal::Success(item) => return Some(item),
                    Steal::Empty => break,
                    Steal::Retry => std::hint::spin_loop(),
                }
            }
        }
        None
    }
}

/// Spins a little, then yields: the wait of a producer facing a full bounded container.
fn backoff(spins: &mut u32) {
    *spins += 1;
    if *spins < 64 {
        std::hint::spin_loop();
    } else {
        std::thread::yield_now();
    }
}
