//! The queue the consumers pull from: anything that can be polled and waited on.

use std::sync::Arc;

/// The answer of [`BlockingQueue::try_recv`].
///
/// ```
/// use ember::biased::{BlockingQueue, TryRecv};
///
/// let (tx, rx) = crossbeam_channel::unbounded();
/// assert_eq!(BlockingQueue::try_recv(&rx), TryRecv::Empty);
/// tx.send(7)?;
/// assert_eq!(BlockingQueue::try_recv(&rx), TryRecv::Item(7));
/// drop(tx);
/// assert_eq!(BlockingQueue::try_recv(&rx), TryRecv::Closed);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TryRecv<T> {
    /// An item was taken out of the queue.
    Item(T),
    /// The queue is empty for now; more items may come.
    Empty,
    /// The queue is closed and empty: no item will ever come again.
    Closed,
}

/// A multi-consumer queue the biased consumers can drain.
///
/// Implement it to drain your own queue. The consumers call [`try_recv`](Self::try_recv) from
/// every consumer thread and [`recv`](Self::recv) from consumer 0 only. An implementation must
/// make *closed* final: once either method reported the queue closed and empty, every call
/// that happens after it (on any thread) must report the same. The shutdown of the consumers
/// relies on it.
///
/// A queue over a mutex and a condition variable:
///
/// ```
/// use std::collections::VecDeque;
/// use std::sync::{Arc, Condvar, Mutex};
///
/// use ember::biased::{spawn_consumers, BlockingQueue, TryRecv};
///
/// #[derive(Default)]
/// struct Queue {
///     state: Mutex<(VecDeque<u32>, bool)>, // items, closed
///     ready: Condvar,
/// }
///
/// impl Queue {
///     fn push(&self, item: u32) {
///         self.state.lock().unwrap().0.push_back(item);
///         self.ready.notify_one();
///     }
///     fn close(&self) {
///         self.state.lock().unwrap().1 = true;
///         self.ready.notify_all();
///     }
/// }
///
/// impl BlockingQueue for Queue {
///     type Item = u32;
///
///     fn recv(&self) -> Option<u32> {
///         let mut state = self.state.lock().unwrap();
///         loop {
///             if let Some(item) = state.0.pop_front() {
///                 return Some(item);
///             }
///             if state.1 {
///                 return None;
///             }
///             state = self.ready.wait(state).unwrap();
///         }
///     }
///
///     fn try_recv(&self) -> TryRecv<u32> {
///         let mut state = self.state.lock().unwrap();
///         match state.0.pop_front() {
///             Some(item) => TryRecv::Item(item),
///             None if state.1 => TryRecv::Closed,
///             None => TryRecv::Empty,
///         }
///     }
/// }
///
/// let queue = Arc::new(Queue::default());
/// let consumers = spawn_consumers(Arc::clone(&queue), 2, 8, |_item: u32| {})?;
/// for item in 0..100 {
///     queue.push(item);
/// }
/// queue.close();
/// assert_eq!(consumers.join().iter().sum::<u64>(), 100);
/// # Ok::<(), ember::biased::SpawnError>(())
/// ```
pub trait BlockingQueue: Send + Sync + 'static {
    /// What the queue carries.
    type Item: Send;

    /// Takes an item, blocking while the queue is empty and open; `None` once it is closed
    /// and empty.
    ///
    /// ```
    /// use ember::biased::BlockingQueue;
    ///
    /// let (tx, rx) = crossbeam_channel::unbounded();
    /// tx.send("hello")?;
    /// drop(tx);
    /// assert_eq!(BlockingQueue::recv(&rx), Some("hello"));
    /// assert_eq!(BlockingQueue::recv(&rx), None);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    fn recv(&self) -> Option<Self::Item>;

    /// Takes an item if one is there, without blocking.
    ///
    /// ```
    /// use ember::biased::{BlockingQueue, TryRecv};
    ///
    /// let (tx, rx) = crossbeam_channel::unbounded::<u8>();
    /// assert_eq!(BlockingQueue::try_recv(&rx), TryRecv::Empty);
    /// drop(tx);
    /// assert_eq!(BlockingQueue::try_recv(&rx), TryRecv::Closed);
    /// ```
    fn try_recv(&self) -> TryRecv<Self::Item>;
}

impl<T: Send + 'static> BlockingQueue for crossbeam_channel::Receiver<T> {
    type Item = T;

    fn recv(&self) -> Option<T> {
        crossbeam_channel::Receiver::recv(self).ok()
    }

    fn try_recv(&self) -> TryRecv<T> {
        match crossbeam_channel::Receiver::try_recv(self) {
            Ok(item) => TryRecv::Item(item),
            Err(crossbeam_channel::TryRecvError::Empty) => TryRecv::Empty,
            Err(crossbeam_channel::TryRecvError::Disconnected) => TryRecv::Closed,
        }
    }
}

impl<Q: BlockingQueue> BlockingQueue for Arc<Q> {
    type Item = Q::Item;

    fn recv(&self) -> Option<Q::Item> {
        (**self).recv()
    }

    fn try_recv(&self) -> TryRecv<Q::Item> {
        (**self).try_recv()
    }
}
