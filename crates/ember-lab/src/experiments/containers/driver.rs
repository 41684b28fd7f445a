//! The two loops the `containers` experiment runs every container through.
//!
//! - [`run_frames`]: `workers` std threads, spawned for the run and joined at its end, pop task
//!   indices from the container and run them; the main thread pushes every task of a frame,
//!   round-robin over the slots, then helps (pops and runs tasks too) until every task of the
//!   frame has been counted done. Frame after frame on the same threads and container.
//! - [`run_pops`]: `threads` std threads drain a container filled beforehand, each timing its
//!   own pops.
//!
//! Both count every task in and out, so a lost or duplicated item shows as a wrong total
//! (`run_frames` panics on it).

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Barrier;
use std::thread;
use std::time::{Duration, Instant};

use ember_containers::WorkQueue;

/// Stack size of the driver's threads.
const STACK: usize = 256 * 1024;

/// What [`run_frames`] measured: per frame, its wall time and the sum of its tasks' results.
pub struct Frames {
    pub times: Vec<Duration>,
    pub results: Vec<u64>,
}

/// Runs `frames` frames of `tasks` tasks each (task indices `0..tasks`) through `queue`, which
/// must have been built for `workers + 1` slots: slot `i < workers` is worker thread `i`, slot
/// `workers` the main thread. `task(i)` runs task `i` and returns a count, summed per frame.
///
/// # Panics
/// If a frame does not see exactly `tasks` tasks done (an item lost or duplicated: a frame
/// that gets fewer never ends, so a frame stuck for 60 s panics too), or if a task panics.
pub fn run_frames(
    queue: &dyn WorkQueue<usize>,
    workers: usize,
    frames: usize,
    tasks: usize,
    task: &(dyn Fn(usize) -> u64 + Sync),
) -> Frames {
    let done = AtomicUsize::new(0);
    let sum = AtomicU64::new(0);
    let stop = AtomicBool::new(false);
    let run_one = |slot: usize| -> bool {
        match queue.pop(slot) {
            Some(i) => {
                sum.fetch_add(task(i), Ordering::Relaxed);
                done.fetch_add(1, Ordering::AcqRel);
                true
            }
            None => false,
        }
    };
    let mut out = Frames {
        times: Vec::with_capacity(frames),
        results: Vec::with_capacity(frames),
    };
    thread::scope(|s| {
        let handles: Vec<_> = (0..workers)
            .map(|slot| {
                let run_one = &run_one;
                let stop = &stop;
                thread::Builder::new()
                    .name(format!("containers-{slot}"))
                    .stack_size(STACK)
                    .spawn_scoped(s, move || {
                        let mut idle = 0u32;
                        while !stop.load(Ordering::Acquire) {
                            if run_one(slot) {
                                idle = 0;
                            } else {
                                idle_wait(&mut idle);
                            }
                        }
                    })
                    .expect("containers: spawning a worker thread")
            })
            .collect();
        let main = workers;
        let slots = workers + 1;
        for frame in 1..=frames {
            let target = frame * tasks;
            sum.store(0, Ordering::Relaxed);
            let start = Instant::now();
            for i in 0..tasks {
                queue.push(i % slots, i);
            }
            let deadline = start + Duration::from_secs(60);
            let mut idle = 0u32;
            loop {
                let seen = done.load(Ordering::Acquire);
                assert!(seen <= target, "containers: more tasks done than pushed");
                if seen == target {
                    break;
                }
                if run_one(main) {
                    idle = 0;
                } else {
                    idle_wait(&mut idle);
                    assert!(
                        Instant::now() < deadline,
                        "containers: frame {frame} stuck at {} of {tasks} tasks (an item was lost)",
                        seen - (target - tasks)
                    );
                }
            }
            out.times.push(start.elapsed());
            out.results.push(sum.load(Ordering::Relaxed));
        }
        stop.store(true, Ordering::Release);
        for h in handles {
            h.join().expect("containers: a worker thread panicked");
        }
    });
    assert_eq!(
        done.load(Ordering::Acquire),
        frames * tasks,
        "containers: tasks done after the last frame"
    );
    assert!(
        queue.pop(0).is_none(),
        "containers: an item was left in the container"
    );
    out
}

/// What [`run_pops`] measured.
pub struct Pops {
    /// Items popped, all threads together.
    pub pops: u64,
    /// Sum over the threads of the time each spent popping (first pop to the empty one).
    pub busy: Duration,
}

/// Fills `queue` (built for `threads` slots) with `items` items, round-robin over the slots,
/// then lets `threads` threads pop until each finds it empty, each timing its own loop.
pub fn run_pops(queue: &dyn WorkQueue<usize>, threads: usize, items: usize) -> Pops {
    for i in 0..items {
        queue.push(i % threads, i);
    }
    let start = Barrier::new(threads);
    let per_thread: Vec<(u64, Duration)> = thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|slot| {
                let start = &start;
                thread::Builder::new()
                    .name(format!("containers-pop-{slot}"))
                    .stack_size(STACK)
                    .spawn_scoped(s, move || {
                        start.wait();
                        let t = Instant::now();
                        let mut n = 0u64;
                        while let Some(item) = queue.pop(slot) {
                            std::hint::black_box(item);
                            n += 1;
                        }
                        (n, t.elapsed())
                    })
                    .expect("containers: spawning a pop thread")
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("containers: a pop thread panicked"))
            .collect()
    });
    let pops: u64 = per_thread.iter().map(|p| p.0).sum();
    assert_eq!(pops, items as u64, "containers: items lost or duplicated");
    Pops {
        pops,
        busy: per_thread.iter().map(|p| p.1).sum(),
    }
}

/// The wait of a thread that found nothing to pop: spin briefly, then yield the CPU (so that
/// oversubscribed runs still progress).
fn idle_wait(idle: &mut u32) {
    *idle = idle.saturating_add(1);
    if *idle < 64 {
        std::hint::spin_loop();
    } else {
        thread::yield_now();
    }
}
