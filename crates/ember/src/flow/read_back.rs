//! The host's read of a buffer: a group that copies the whole buffer out on every rank,
//! and the slot its one task fills.

use std::sync::{Arc, Mutex};

use super::{dist, lock, map, Buffer, Flow, FlowError, Pod};
use crate::pool::WaitList;

impl Flow {
    /// Copies out the whole of `buffer` once every task submitted before that writes it has
    /// run: the host's read. It waits only for those tasks (and the ones they wait for),
    /// not for the whole flow.
    ///
    /// Returns [`FlowError::Failed`] if the copy could not be made because a task it waits
    /// for failed (the counts are those [`wait`](Self::wait) would report, and are reset
    /// the same way). On a [distributed](Self::distributed) flow every rank must call it, for
    /// the same buffer, where the others do: it first checks that, and returns
    /// [`FlowError::NotCollective`] or [`FlowError::Diverged`], submitting nothing, if not
    /// (see [`dist`]).
    ///
    /// ```
    /// use ember::flow::{map, Buffer, Flow};
    /// # let pool = ember::Pool::builder().threads(2).build().unwrap();
    /// let flow = Flow::new(&pool, Default::default());
    /// let b = Buffer::new(&flow, [4], |[i]| i as i32);
    /// flow.submit(|cg| {
    ///     let b = b.read_write(cg, map::one_to_one());
    ///     cg.parallel_for([4], move |chunk| {
    ///         let mut b = chunk.write(&b);
    ///         for [i] in chunk.items() {
    ///             b[[i]] *= -1;
    ///         }
    ///     });
    /// })?;
    /// assert_eq!(flow.read_back(&b)?, [0, -1, -2, -3]);
    /// # Ok::<(), ember::flow::FlowError>(())
    /// ```
    ///
    /// # Panics
    /// When called from a job of the flow's pool, as [`wait`](Self::wait) does.
    pub fn read_back<T: Pod + Send + Sync, const D: usize>(
        &self,
        buffer: &Buffer<T, D>,
    ) -> Result<Vec<T>, FlowError> {
        self.pool.check_not_waiting_for_itself("Flow::read_back");
        let out = Arc::new(ReadBack::<T> {
            value: Mutex::new(None),
            waiters: WaitList::new(),
        });
        if let Some(dist) = &self.dist {
            // Before the group below: a rank whose others make another call must not
            // submit it, or it would wait for data that no rank sends.
            dist.check(dist::Call::ReadBack(buffer.id().index))?;
        }
        let guard = Mutex::new(Some(ReadBackGuard(out.clone())));
        // One item per rank: every rank reads the whole buffer.
        let ranks = self.rank().1;
        self.submit(|cg| {
            let all = buffer.read(cg, map::all());
            cg.label("read_back")
                .chunks(1)
                .parallel_for([ranks], move |chunk| {
                    let data = chunk.read(&all).copy_all().expect("the whole buffer");
                    if let Some(g) = lock(&guard).take() {
                        g.set(Some(data));
                    }
                });
        })?;
        out.waiters.wait(&|| lock(&out.value).is_some(), None);
        let value = lock(&out.value).take().expect("set before the wake-up");
        match value {
            Some(data) => Ok(data),
            None => Err(self.wait().err().unwrap_or(FlowError::Failed {
                panicked: 0,
                cancelled: 1,
                first_panic: None,
            })),
        }
    }
}

/// Where `read_back` finds its copy: `Some(None)` if the copying task never ran.
struct ReadBack<T> {
    value: Mutex<Option<Option<Vec<T>>>>,
    waiters: WaitList,
}

/// Sets the copy (or, dropped unused because the task was cancelled, its absence) and
/// wakes the reader.
struct ReadBackGuard<T>(Arc<ReadBack<T>>);

impl<T> ReadBackGuard<T> {
    fn set(self, data: Option<Vec<T>>) {
        *lock(&self.0.value) = Some(data);
        let out = self.0.clone();
        std::mem::forget(self);
        out.waiters.notify_changed(|| lock(&out.value).is_some());
    }
}

impl<T> Drop for ReadBackGuard<T> {
    fn drop(&mut self) {
        let out = self.0.clone();
        *lock(&out.value) = Some(None);
        out.waiters.notify_changed(|| lock(&out.value).is_some());
    }
}
