//! Pieces the peer rows need to be measured fairly.
//!
//! * [`Latch`]: a producer waits for its items to finish with one blocking wait and at most
//!   one wake-up, so waiting adds the same small cost to every row.
//! * [`rayon_pool`]: a rayon pool whose threads the caller can join. Dropping a
//!   `rayon::ThreadPool` only *asks* its threads to exit; a run must not return while they
//!   still live, or their CPU time and context switches would be missed by the counters
//!   (which fold a thread in when it exits) and leak into the next run.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

/// Counts down to zero; [`Latch::wait`] returns once it has.
pub struct Latch {
    remaining: AtomicUsize,
    done: Mutex<bool>,
    cv: Condvar,
}

impl Latch {
    pub fn new(count: usize) -> Latch {
        Latch {
            remaining: AtomicUsize::new(count),
            done: Mutex::new(count == 0),
            cv: Condvar::new(),
        }
    }

    /// Counts `n` down; the one call that reaches zero wakes the waiter.
    pub fn count_down(&self, n: usize) {
        if self.remaining.fetch_sub(n, Ordering::AcqRel) == n {
            *self.done.lock().unwrap() = true;
            self.cv.notify_all();
        }
    }

    pub fn wait(&self) {
        let mut done = self.done.lock().unwrap();
        while !*done {
            done = self.cv.wait(done).unwrap();
        }
    }

    /// [`wait`](Self::wait), giving up after `limit`; returns whether the count reached zero.
    pub fn wait_at_most(&self, limit: Duration) -> bool {
        let done = self.done.lock().unwrap();
        let (done, _) = self
            .cv
            .wait_timeout_while(done, limit, |done| !*done)
            .unwrap();
        *done
    }

    /// The counts left; counting down past zero wraps around, so that shows too.
    pub fn remaining(&self) -> usize {
        self.remaining.load(Ordering::Acquire)
    }
}

/// A rayon pool of `threads` threads named `name-i`, and the handles to join them by.
pub fn rayon_pool(threads: usize, name: &str) -> (rayon::ThreadPool, Vec<JoinHandle<()>>) {
    let handles = Mutex::new(Vec::with_capacity(threads));
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .spawn_handler(|t| {
            let h = std::thread::Builder::new()
                .name(format!("{name}-{}", t.index()))
                .spawn(move || t.run())?;
            handles.lock().unwrap().push(h);
            Ok(())
        })
        .build()
        .expect("rayon pool");
    (pool, handles.into_inner().unwrap())
}

/// A tokio multi-thread runtime of `threads` workers named `name`: the one place the lab
/// builds one. Dropping it waits for its worker threads to stop.
pub fn tokio_runtime(threads: usize, name: &str) -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(threads)
        .thread_name(name)
        .build()
        .expect("building a tokio runtime")
}

/// Drops a rayon pool and waits until its threads have exited.
pub fn rayon_shutdown(pool: rayon::ThreadPool, handles: Vec<JoinHandle<()>>) {
    drop(pool);
    for h in handles {
        h.join().expect("rayon worker panicked");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn latch_waits_for_all() {
        let latch = Arc::new(Latch::new(10));
        let (pool, handles) = rayon_pool(2, "t");
        for _ in 0..5 {
            let l = latch.clone();
            pool.spawn(move || l.count_down(2));
        }
        latch.wait();
        assert_eq!(latch.remaining(), 0);
        rayon_shutdown(pool, handles);
        Latch::new(0).wait();
        assert!(Latch::new(0).wait_at_most(Duration::ZERO));
        assert!(!Latch::new(1).wait_at_most(Duration::from_millis(1)));
    }
}
