//! How each row of `producer-consumer` gets items from its producer to its consumers: one pool
//! per call of [`one_pool`], fed, drained and torn down.

use super::{Setup, Tally};
use crate::experiments::biased_work_queue;
use crate::experiments::ember_rows::EmberPolicy;
use crate::experiments::peers::{rayon_pool, rayon_shutdown, Latch};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::thread;

/// A row's way of feeding its consumers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Feed {
    /// Consumer threads on one crossbeam channel; the producer sends `batch` items at once.
    Crossbeam { batch: usize },
    /// rayon `spawn`, one job per `batch` items.
    Rayon { batch: usize },
    /// The publication's biased work queue ([`biased_work_queue`]).
    BiasedWorkQueue,
    /// `ember::biased::spawn_consumers` on a crossbeam channel.
    BiasedConsumers,
    /// `ember::Pool::spawn`, one task per item.
    Ember(EmberPolicy),
    /// One consumer thread doing all the consumer work, no queue.
    Floor,
}

impl Feed {
    /// A word for the `--pc-child` spec.
    pub fn code(self) -> String {
        match self {
            Feed::Crossbeam { batch } => format!("crossbeam:{batch}"),
            Feed::Rayon { batch } => format!("rayon:{batch}"),
            Feed::BiasedWorkQueue => "bwq".into(),
            Feed::BiasedConsumers => "biased-consumers".into(),
            Feed::Ember(p) => format!("ember:{p:?}"),
            Feed::Floor => "floor".into(),
        }
    }

    pub fn from_code(code: &str) -> Option<Feed> {
        let (kind, arg) = code.split_once(':').unwrap_or((code, ""));
        Some(match kind {
            "crossbeam" => Feed::Crossbeam {
                batch: arg.parse().ok()?,
            },
            "rayon" => Feed::Rayon {
                batch: arg.parse().ok()?,
            },
            "bwq" => Feed::BiasedWorkQueue,
            "biased-consumers" => Feed::BiasedConsumers,
            "ember" => Feed::Ember(
                *EmberPolicy::ALL
                    .iter()
                    .chain(&[EmberPolicy::Budget])
                    .find(|p| format!("{p:?}") == arg)?,
            ),
            "floor" => Feed::Floor,
            _ => return None,
        })
    }
}

/// Spawns `n` named consumer threads running `body`.
fn consumers(
    n: usize,
    name: &str,
    body: impl Fn() + Send + Clone + 'static,
) -> Vec<thread::JoinHandle<()>> {
    (0..n)
        .map(|i| {
            thread::Builder::new()
                .name(format!("{name}-{i}"))
                .spawn(body.clone())
                .expect("spawn consumer")
        })
        .collect()
}

fn join_all(handles: Vec<thread::JoinHandle<()>>) {
    for h in handles {
        h.join().expect("consumer panicked");
    }
}

/// The producer of pool `p`: creates the pool, feeds it, waits, tears it down. Returns how
/// long that took: the pool's completion time, which the unfairness compares.
pub fn one_pool(feed: Feed, s: Setup, p: usize, tally: Arc<Tally>) -> std::time::Duration {
    let start = std::time::Instant::now();
    feed_pool(feed, s, p, tally);
    start.elapsed()
}

fn feed_pool(feed: Feed, s: Setup, p: usize, tally: Arc<Tally>) {
    let name = format!("pc{p}");
    match feed {
        Feed::Crossbeam { batch } => {
            // A batch is a count of items: the consumer does that many items' work.
            let (tx, rx) = crossbeam_channel::unbounded::<usize>();
            let t = tally.clone();
            let hs = consumers(s.threads, &name, move || {
                for n in rx.iter() {
                    for _ in 0..n {
                        t.consume(&s);
                    }
                }
            });
            produce_in_batches(&s, &tally, batch, |n| tx.send(n).expect("consumers alive"));
            drop(tx);
            join_all(hs);
        }
        Feed::Rayon { batch } => {
            let (pool, hs) = rayon_pool(s.threads, &name);
            let latch = Arc::new(Latch::new(s.items));
            produce_in_batches(&s, &tally, batch, |n| {
                let (t, l) = (tally.clone(), latch.clone());
                pool.spawn(move || {
                    for _ in 0..n {
                        t.consume(&s);
                    }
                    l.count_down(n);
                });
            });
            latch.wait();
            rayon_shutdown(pool, hs);
        }
        Feed::BiasedWorkQueue => {
            let (tx, rx) = crossbeam_channel::unbounded::<()>();
            let t = tally.clone();
            let hs = biased_work_queue::spawn(rx, s.threads, &name, move |()| t.consume(&s));
            for _ in 0..s.items {
                tally.produce(&s);
                tx.send(()).expect("consumers alive");
            }
            drop(tx);
            join_all(hs);
        }
        Feed::BiasedConsumers => {
            let (tx, rx) = crossbeam_channel::unbounded::<usize>();
            let t = tally.clone();
            let c = ember::biased::spawn_consumers(rx, s.threads, s.batch, move |_item: usize| {
                t.consume(&s)
            })
            .expect("spawn biased consumers");
            for i in 0..s.items {
                tally.produce(&s);
                tx.send(i).expect("consumers alive");
            }
            drop(tx);
            let handled: u64 = c.join().iter().sum();
            assert_eq!(handled, s.items as u64, "biased consumers lost items");
        }
        Feed::Floor => {
            // `threads` consumers, consumer i taking items i, i + threads, …: each its share,
            // with no queue between them and the producer.
            let next = Arc::new(std::sync::atomic::AtomicUsize::new(0));
            let t = tally.clone();
            let hs = consumers(s.threads, &name, move || {
                let i = next.fetch_add(1, Ordering::Relaxed);
                for _ in (i..s.items).step_by(s.threads) {
                    t.consume(&s);
                }
            });
            for _ in 0..s.items {
                tally.produce(&s);
            }
            join_all(hs);
        }
        Feed::Ember(policy) => {
            let mut builder = policy.builder(s.threads, &name);
            if policy == EmberPolicy::Biased {
                builder = builder.wake(ember::WakePolicy::Biased { batch: s.batch });
            }
            let pool = builder.build().expect("ember pool");
            for _ in 0..s.items {
                tally.produce(&s);
                let t = tally.clone();
                pool.spawn(move || t.consume(&s));
            }
            pool.wait_idle();
            tally
                .wakeups
                .fetch_add(pool.stats().wakeups_issued, Ordering::Relaxed);
            drop(pool);
        }
    }
}

/// Produces every item, handing them on `batch` at a time (the last batch may be short).
fn produce_in_batches(s: &Setup, tally: &Tally, batch: usize, mut hand_on: impl FnMut(usize)) {
    let mut pending = 0;
    for _ in 0..s.items {
        tally.produce(s);
        pending += 1;
        if pending == batch.max(1) {
            hand_on(pending);
            pending = 0;
        }
    }
    if pending > 0 {
        hand_on(pending);
    }
}
