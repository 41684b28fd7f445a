//! The biased consumer: a fixed set of threads draining one blocking queue while waking as few
//! of them as the load allows.
//!
//! A pool whose idle threads all wait on one shared queue wakes a thread for almost every
//! pushed item, and that thread often handles one item and sleeps again. The biased consumer
//! numbers its threads `0..n` and lets them wake in order: low-numbered consumers stay hot,
//! high-numbered ones wake only under sustained load. Use it when you keep your own channel
//! and want it drained by a few warm threads instead of many cold ones:
//!
//! ```
//! let (tx, rx) = crossbeam_channel::unbounded();
//! let consumers = ember::biased::spawn_consumers(rx, 4, 20, |n: u64| {
//!     std::hint::black_box(n * n);
//! })?;
//! for n in 0..1_000 {
//!     tx.send(n)?;
//! }
//! drop(tx); // closing the channel lets the consumers finish
//! let handled: Vec<u64> = consumers.join();
//! assert_eq!(handled.iter().sum::<u64>(), 1_000);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! Any queue can be drained this way: implement [`BlockingQueue`] for it. It is implemented
//! for [`crossbeam_channel::Receiver`] and for `Arc<Q>` of any queue `Q`.
//!
//! The price of the bias is latency: an item may wait behind about `batch` others that one
//! consumer pulled before it. Under sustained load every consumer is awake, so the bias costs
//! no capacity.
//!
//! # The protocol
//!
//! Each consumer repeats one step: *pull* items with [`BlockingQueue::try_recv`], which never
//! blocks, until it holds `batch` of them or the queue reports `Empty` or `Closed`; then
//! *handle* the items it holds, one by one; then decide what to do next:
//!
//! * **Full batch** — the consumer is *overloaded*: it found `batch` items waiting without
//!   ever finding the queue empty. Before handling the batch it unparks consumer `i + 1`,
//!   which then pulls in parallel; after handling it, it pulls again.
//! * **Empty** — the queue ran dry. Consumer 0 waits on the queue itself with
//!   [`BlockingQueue::recv`] and starts its next batch with the item it returns. Consumer
//!   `i > 0` parks on its own private parker, until consumer `i - 1` is overloaded again (or
//!   the queue closes).
//! * **Closed** — the queue is closed and drained: the consumer exits, and on its way out
//!   unparks consumer `i + 1`.
//!
//! Consumers `i > 0` start parked: each one joins in only once its predecessor proved
//! overloaded. Only consumer 0 ever blocks on the queue, so a burst of pushes wakes at most one
//! thread at the queue, and every further wake-up is decided by a consumer that has just seen
//! a full batch.
//!
//! A parker keeps a *token*, like [`std::thread::park`]: an unpark that comes while its owner
//! is awake is remembered, and the owner's next park returns at once. Tokens do not add up;
//! one pending unpark is as good as many.
//!
//! # Invariants
//!
//! 1. Only consumers take items out of the queue, and a consumer handles every item it took
//!    before it pulls again or exits. Handler panics are caught per item, so a panicking item
//!    cannot take the rest of its batch down with it.
//! 2. Consumer 0 never parks. Whenever it is not handling a batch it is in `try_recv` or
//!    `recv`, so it takes an item whenever one is there, whatever the other consumers do.
//! 3. `Closed` is final: once any consumer saw the queue closed and drained, every later call
//!    on any thread reports `Closed` (or `None` from `recv`). [`BlockingQueue`] implementors
//!    must guarantee this.
//! 4. Consumer `i` unparks consumer `i + 1` after pulling a full batch, and once more, last of
//!    all, when it exits. Nothing else unparks a consumer (except the start-up failure path,
//!    which wakes everyone so that they quit without touching the queue).
//!
//! # Why no item is lost
//!
//! Consumer 0 exits only on `Closed`, meaning the queue is closed *and empty*, and until then
//! it keeps pulling (2). So every item ever pushed is taken by some consumer, which handles it
//! before it does anything else (1). [`Consumers::join`] joins every thread, so when it
//! returns every item has been handled.
//!
//! # Why no wake-up is lost
//!
//! The race to worry about: consumer `i + 1` has just found the queue empty and is about to
//! park, when consumer `i` pulls a full batch and unparks it. Had `i + 1` been blocked
//! already, the unpark wakes it. Had it not, the unpark leaves a token, and the park that
//! follows returns at once; either way `i + 1` pulls again *after* the unpark, and so sees the
//! items that were still queued when `i` decided it was overloaded. The parker decides to
//! block under its own lock, and an unpark that finds it blocking takes that lock before it
//! notifies, so the unpark cannot slip in between the check for a token and the block.
//!
//! Missing a hand-off would only cost throughput (consumer 0 drains the queue on its own
//! anyway, by 2). Missing a *shutdown* would hang [`Consumers::join`], which is why the close
//! travels the same way:
//!
//! # Why every consumer exits on close
//!
//! By induction along the chain. Consumer 0 waits only in `recv`, which returns `None` once
//! the queue is closed and drained, so consumer 0 exits. Suppose consumer `i` exits; its last
//! act is to unpark `i + 1` (4). Whatever consumer `i + 1` is doing at that moment (blocked,
//! about to park, pulling or handling), the unpark either wakes it or leaves a token that
//! makes its next park return at once, so once its current batch is handled it pulls again.
//! And `i` exited because it saw `Closed` (consumer 0: because `recv` returned `None`); the
//! unpark orders that observation before `i + 1`'s pull, so by 3 that pull reports `Closed` and
//! `i + 1` exits in turn, unparking `i + 2`. The exit unpark runs from a drop guard, so it
//! happens even if the queue itself panics; a consumer woken after such a failure finds a
//! shared stop flag set and exits without pulling.
//!
//! The model tests in `src/loom/biased.rs` check both arguments with loom (two and three
//! consumers, a producer that pushes and closes concurrently, every interleaving up to three
//! preemptions): run them with `RUSTFLAGS="--cfg loom" cargo test -p ember --release --lib
//! biased`.
//!
//! | file | holds |
//! | --- | --- |
//! | `queue.rs` | [`BlockingQueue`], the queue the consumers pull from, and [`TryRecv`] |
//! | `consumer.rs` | one consumer's loop: pull a batch, hand off on overload, park, exit in turn |

mod consumer;
mod queue;

pub use queue::{BlockingQueue, TryRecv};

use std::fmt;
use std::panic;
use std::sync::Arc;

use crate::park::Parker;
use crate::sync::atomic::{AtomicBool, Ordering};
use crate::sync::thread;
use consumer::{Shared, Tally};

/// Why [`spawn_consumers`] refused to start.
///
/// On any error no consumer has touched the queue, and the queue has been dropped (for a
/// channel receiver: the channel is disconnected, so senders see the failure too).
///
/// ```
/// use ember::biased::{spawn_consumers, SpawnError};
///
/// let (_tx, rx) = crossbeam_channel::unbounded::<u32>();
/// let err = spawn_consumers(rx, 0, 20, |_| {}).unwrap_err();
/// assert!(matches!(err, SpawnError::ZeroThreads));
/// println!("{err}"); // says what to change
/// ```
#[derive(Debug)]
#[non_exhaustive]
pub enum SpawnError {
    /// `threads` was 0.
    ZeroThreads,
    /// `batch` was 0.
    ZeroBatch,
    /// The operating system refused to start a consumer thread.
    Spawn(std::io::Error),
}

impl fmt::Display for SpawnError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SpawnError::ZeroThreads => {
                f.write_str("biased consumers need at least one thread: pass `threads` >= 1")
            }
            SpawnError::ZeroBatch => f.write_str(
                "biased consumers need a batch of at least one item: pass `batch` >= 1 \
                 (20 is a good start)",
            ),
            SpawnError::Spawn(_) => f.write_str(
                "could not spawn a biased consumer thread: lower `threads` or raise the \
                 process's thread limit",
            ),
        }
    }
}

impl std::error::Error for SpawnError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            SpawnError::Spawn(err) => Some(err),
            SpawnError::ZeroThreads | SpawnError::ZeroBatch => None,
        }
    }
}

/// What the consumers did, from [`Consumers::join_report`].
///
/// ```
/// let (tx, rx) = crossbeam_channel::unbounded();
/// let consumers = ember::biased::spawn_consumers(rx, 2, 4, |n: u32| {
///     assert!(n != 3, "three is unlucky");
/// })?;
/// for n in 0..10 {
///     tx.send(n)?;
/// }
/// drop(tx);
/// let report = consumers.join_report();
/// assert_eq!(report.handled.iter().sum::<u64>(), 10); // the panicking item counts too
/// assert_eq!(report.panics, 1);
/// assert_eq!(report.wakeups.len(), 2);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ConsumerReport {
    /// Items passed to the handler, per consumer (index = consumer number), including items
    /// whose handler panicked. Their sum is the number of items the queue delivered.
    pub handled: Vec<u64>,
    /// Handler calls that panicked, over all consumers.
    pub panics: u64,
    /// Times each consumer went to sleep and woke again. For consumer `i > 0`: parks that
    /// really blocked. For consumer 0, whose waiting happens inside the queue: calls to
    /// [`BlockingQueue::recv`] after the queue was found empty (an upper bound, since such a
    /// call returns at once if an item arrived meanwhile).
    pub wakeups: Vec<u64>,
}

/// The running consumer threads; from [`spawn_consumers`].
///
/// [`join`](Self::join) or [`join_report`](Self::join_report) waits for them. Dropping
/// `Consumers` without joining detaches the threads: they keep draining the queue and exit
/// when it closes.
///
/// ```
/// let (tx, rx) = crossbeam_channel::unbounded();
/// let consumers = ember::biased::spawn_consumers(rx, 3, 20, |_: ()| {})?;
/// assert_eq!(consumers.threads(), 3);
/// drop(tx);
/// assert_eq!(consumers.join(), vec![0, 0, 0]);
/// # Ok::<(), ember::biased::SpawnError>(())
/// ```
pub struct Consumers {
    handles: Vec<thread::JoinHandle<Tally>>,
}

impl fmt::Debug for Consumers {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Consumers")
            .field("threads", &self.handles.len())
            .finish_non_exhaustive()
    }
}

impl Consumers {
    /// How many consumer threads there are.
    ///
    /// ```
    /// let (_tx, rx) = crossbeam_channel::unbounded::<u8>();
    /// let consumers = ember::biased::spawn_consumers(rx, 2, 1, |_| {})?;
    /// assert_eq!(consumers.threads(), 2);
    /// # drop(_tx); consumers.join();
    /// # Ok::<(), ember::biased::SpawnError>(())
    /// ```
    pub fn threads(&self) -> usize {
        self.handles.len()
    }

    /// Waits until the queue is closed and every item in it has been handled, then returns
    /// how many items each consumer handled (index = consumer number).
    ///
    /// It blocks for as long as the queue stays open. Handler panics do not reach it (see
    /// [`join_report`](Self::join_report) to count them); a panic in the queue itself is
    /// re-raised here after every consumer has stopped.
    ///
    /// ```
    /// let (tx, rx) = crossbeam_channel::unbounded();
    /// let consumers = ember::biased::spawn_consumers(rx, 2, 20, |_: u32| {})?;
    /// tx.send(1)?;
    /// drop(tx);
    /// let handled = consumers.join();
    /// assert_eq!(handled.len(), 2);
    /// assert_eq!(handled.iter().sum::<u64>(), 1);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn join(self) -> Vec<u64> {
        self.join_report().handled
    }

    /// Like [`join`](Self::join), with everything the consumers counted: items handled,
    /// handler panics, wake-ups.
    ///
    /// ```
    /// let (tx, rx) = crossbeam_channel::unbounded();
    /// let consumers = ember::biased::spawn_consumers(rx, 2, 20, |item: u32| {
    ///     if item == 0 {
    ///         panic!("bad item");
    ///     }
    /// })?;
    /// tx.send(0)?;
    /// tx.send(1)?;
    /// drop(tx);
    /// let report = consumers.join_report();
    /// assert_eq!(report.panics, 1);
    /// assert_eq!(report.handled.iter().sum::<u64>(), 2);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn join_report(self) -> ConsumerReport {
        let mut report = ConsumerReport::default();
        let mut failure = None;
        for handle in self.handles {
            // Join every thread before re-raising, so none is left running behind a panic.
            let tally = match handle.join() {
                Ok(tally) => tally,
                Err(payload) => {
                    failure.get_or_insert(payload);
                    Tally::default()
                }
            };
            report.handled.push(tally.handled);
            report.wakeups.push(tally.wakeups);
            report.panics += tally.panics;
        }
        if let Some(payload) = failure {
            panic::resume_unwind(payload);
        }
        report
    }
}

/// Starts `threads` biased consumers draining `queue`, each pulling up to `batch` items at a
/// time and passing every item to `handler`.
///
/// The threads are named `biased-0`, `biased-1`, …; see [`spawn_consumers_named`] to choose
/// the prefix. The handler is shared by all consumers. A panic in the handler is caught and
/// counted ([`ConsumerReport::panics`]); the consumer goes on with the next item. The default
/// panic hook still prints the panic.
///
/// `batch` trades latency for fewer wake-ups: a consumer wakes the next one only after pulling
/// `batch` items without waiting, and an item may wait behind the `batch - 1` others pulled
/// with it. 20 is a good start; 1 wakes consumers as eagerly as a plain shared queue does.
///
/// # Errors
///
/// [`SpawnError::ZeroThreads`] or [`SpawnError::ZeroBatch`] if either is 0;
/// [`SpawnError::Spawn`] if a thread could not be started. On error no consumer has touched
/// the queue.
///
/// ```
/// use std::sync::atomic::{AtomicU64, Ordering};
/// use std::sync::Arc;
///
/// let total = Arc::new(AtomicU64::new(0));
/// let sum = Arc::clone(&total);
/// let (tx, rx) = crossbeam_channel::unbounded();
/// let consumers = ember::biased::spawn_consumers(rx, 8, 20, move |n: u64| {
///     sum.fetch_add(n, Ordering::Relaxed);
/// })?;
/// for n in 1..=100 {
///     tx.send(n)?;
/// }
/// drop(tx);
/// consumers.join();
/// assert_eq!(total.load(Ordering::Relaxed), 5050);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn spawn_consumers<Q, F>(
    queue: Q,
    threads: usize,
    batch: usize,
    handler: F,
) -> Result<Consumers, SpawnError>
where
    Q: BlockingQueue,
    F: Fn(Q::Item) + Send + Sync + 'static,
{
    spawn_consumers_named(queue, threads, batch, "biased", handler)
}

/// [`spawn_consumers`] with threads named `{name}-0`, `{name}-1`, ….
///
/// ```
/// use std::sync::{Arc, Mutex};
///
/// let names = Arc::new(Mutex::new(Vec::new()));
/// let seen = Arc::clone(&names);
/// let (tx, rx) = crossbeam_channel::unbounded();
/// let consumers = ember::biased::spawn_consumers_named(rx, 2, 20, "db-build", move |_: u32| {
///     let name = std::thread::current().name().map(str::to_owned);
///     seen.lock().unwrap().push(name);
/// })?;
/// tx.send(1)?;
/// drop(tx);
/// consumers.join();
/// assert_eq!(*names.lock().unwrap(), [Some("db-build-0".to_owned())]);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// # Errors
///
/// As [`spawn_consumers`].
pub fn spawn_consumers_named<Q, F>(
    queue: Q,
    threads: usize,
    batch: usize,
    name: &str,
    handler: F,
) -> Result<Consumers, SpawnError>
where
    Q: BlockingQueue,
    F: Fn(Q::Item) + Send + Sync + 'static,
{
    if threads == 0 {
        return Err(SpawnError::ZeroThreads);
    }
    if batch == 0 {
        return Err(SpawnError::ZeroBatch);
    }
    let shared = Arc::new(Shared {
        queue,
        handler,
        batch,
        parkers: (1..threads).map(|_| Parker::new()).collect(),
        stop: AtomicBool::new(false),
    });

    // Highest number first: consumers `i > 0` start parked and touch nothing until their
    // predecessor unparks them, so if a spawn fails they can still be told to quit before
    // consumer 0, the only one that starts pulling on its own, exists.
    let mut handles = Vec::with_capacity(threads);
    for index in (0..threads).rev() {
        let consumer = Arc::clone(&shared);
        let spawned = thread::Builder::new()
            .name(format!("{name}-{index}"))
            .spawn(move || consumer.consume(index));
        match spawned {
            Ok(handle) => handles.push(handle),
            Err(err) => {
                shared.stop.store(true, Ordering::SeqCst);
                for parker in shared.parkers.iter() {
                    parker.unpark();
                }
                for handle in handles {
                    // They exit at once; none of them ran user code that could panic.
                    let _ = handle.join();
                }
                return Err(SpawnError::Spawn(err));
            }
        }
    }
    handles.reverse();
    Ok(Consumers { handles })
}
