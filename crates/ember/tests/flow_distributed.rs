//! The distributed flow with ranks played by threads of one process, over an in-memory
//! transport: results equal to one rank's for every rank count (uneven parts, ranks without
//! one), exactly the messages the declared accesses imply, divergent graphs reported, a
//! panicking kernel ending the job.
#![allow(clippy::single_range_in_vec_init)]

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};

use ember::flow::dist::{BackgroundDrops, Transport};
use ember::flow::{map, Buffer, Flow, FlowError, FlowOptions, Mode};

mod common;

type Done = Box<dyn FnOnce(Vec<u8>) + Send>;

enum Slot {
    Arrived(Vec<u8>),
    Waiting(usize, Done),
}

/// Mailboxes shared by the ranks of one job, keyed by (from, to, tag).
#[derive(Default)]
struct Hub {
    slots: Mutex<HashMap<(usize, usize, u64), Slot>>,
    aborts: Mutex<Vec<(usize, String)>>,
    /// The ranks' flow drops that go on on threads of their own.
    drops: BackgroundDrops,
}

struct Local {
    rank: usize,
    ranks: usize,
    hub: Arc<Hub>,
    flows: AtomicU64,
}

impl Local {
    fn new(rank: usize, ranks: usize, hub: Arc<Hub>) -> Local {
        Local {
            rank,
            ranks,
            hub,
            flows: AtomicU64::new(0),
        }
    }
}

impl Transport for Local {
    fn rank(&self) -> usize {
        self.rank
    }
    fn ranks(&self) -> usize {
        self.ranks
    }
    fn open_flow(&self) -> u64 {
        self.flows.fetch_add(1, Ordering::Relaxed)
    }
    fn send(&self, to: usize, tag: u64, bytes: Vec<u8>) {
        let key = (self.rank, to, tag);
        let mut slots = self.hub.slots.lock().unwrap();
        match slots.remove(&key) {
            Some(Slot::Waiting(_len, done)) => {
                // Delivered at the size it has, as over MPI: a divergent plan can expect
                // another size, and the flow's check reports it.
                drop(slots);
                done(bytes);
            }
            Some(Slot::Arrived(_)) => panic!("tag reused: {key:?}"),
            None => {
                slots.insert(key, Slot::Arrived(bytes));
            }
        }
    }
    fn receive(&self, from: usize, tag: u64, len: usize, done: Done) {
        let key = (from, self.rank, tag);
        let mut slots = self.hub.slots.lock().unwrap();
        match slots.remove(&key) {
            Some(Slot::Arrived(bytes)) => {
                drop(slots);
                done(bytes);
            }
            Some(Slot::Waiting(..)) => panic!("receive posted twice: {key:?}"),
            None => {
                slots.insert(key, Slot::Waiting(len, done));
            }
        }
    }
    fn abort(&self, message: &str) {
        self.hub
            .aborts
            .lock()
            .unwrap()
            .push((self.rank, message.to_string()));
    }
    fn background_drops(&self) -> Option<&BackgroundDrops> {
        Some(&self.hub.drops)
    }
}

/// Runs `program(flow)` on `ranks` threads, each a rank with its own pool and flow; returns
/// what each returned, in rank order, and the hub (for the aborts).
fn job<R: Send>(
    ranks: usize,
    mode: Mode,
    program: impl Fn(&Flow) -> R + Sync,
) -> (Vec<R>, Arc<Hub>) {
    job_on_pools(ranks, mode, |_, flow| program(flow))
}

/// [`job`], the program also given its rank's pool.
fn job_on_pools<R: Send>(
    ranks: usize,
    mode: Mode,
    program: impl Fn(&ember::Pool, &Flow) -> R + Sync,
) -> (Vec<R>, Arc<Hub>) {
    let hub = Arc::new(Hub::default());
    let out = std::thread::scope(|s| {
        let handles: Vec<_> = (0..ranks)
            .map(|rank| {
                let (hub, program) = (hub.clone(), &program);
                s.spawn(move || {
                    let pool = ember::Pool::builder().threads(2).build().unwrap();
                    let transport = Arc::new(Local::new(rank, ranks, hub));
                    let options = FlowOptions {
                        mode,
                        horizon_every: 8,
                    };
                    let flow = Flow::distributed(&pool, options, transport);
                    program(&pool, &flow)
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    (out, hub)
}

/// A 2-D Jacobi sweep on alternating buffers (halo reads), then a transpose (every rank
/// reads from every other): the final grid and this rank's bytes sent.
fn program(flow: &Flow, n: usize, steps: usize) -> (Vec<f64>, u64) {
    let bufs = [
        Buffer::new(flow, [n, n], |[i, j]| {
            ((i * 31 + j * 17) % 97) as f64 / 97.0
        }),
        Buffer::new(flow, [n, n], |_| 0.0),
    ];
    for s in 0..steps {
        let (src, dst) = (&bufs[s % 2], &bufs[(s + 1) % 2]);
        common::jacobi::submit_step(flow, src, dst, n, format!("jacobi {s}"), None);
    }
    let (src, dst) = (&bufs[steps % 2], &bufs[(steps + 1) % 2]);
    flow.submit(|cg| {
        let src = src.read(cg, map::transposed());
        let dst = dst.write(cg, map::one_to_one());
        cg.label("transpose").parallel_for([n, n], move |chunk| {
            let (src, mut dst) = (chunk.read(&src), chunk.write(&dst));
            for [i, j] in chunk.items() {
                dst[[i, j]] = src[[j, i]] * 2.0 + 1.0;
            }
        });
    })
    .unwrap();
    flow.wait().unwrap();
    let sent = flow.transfer_stats().bytes_sent;
    (flow.read_back(dst).unwrap(), sent)
}

fn one_process(n: usize, steps: usize) -> Vec<f64> {
    let pool = ember::Pool::builder().threads(2).build().unwrap();
    let flow = Flow::new(&pool, FlowOptions::default());
    program(&flow, n, steps).0
}

#[test]
fn every_rank_count_computes_what_one_process_does() {
    // n = 7 rows over 2, 3, 4 ranks: uneven parts; n = 3 over 4 ranks: a rank without one.
    for (n, steps) in [(7, 4), (3, 2), (12, 5)] {
        let expected = one_process(n, steps);
        for ranks in 1..=4 {
            for mode in [Mode::Inline, Mode::DoubleBuffered] {
                let (results, hub) = job(ranks, mode, |flow| program(flow, n, steps));
                for (rank, (grid, _)) in results.iter().enumerate() {
                    assert!(
                        grid == &expected,
                        "n={n} ranks={ranks} rank {rank} {mode:?}"
                    );
                }
                assert!(hub.aborts.lock().unwrap().is_empty());
                assert!(
                    hub.slots.lock().unwrap().is_empty(),
                    "a message nobody took"
                );
            }
        }
    }
}

#[test]
fn halo_steps_move_exactly_the_rows_the_neighbours_read() {
    // Each step, rank r reads one row above and below its part from its neighbours: two
    // rows per boundary between ranks with parts, each `n` doubles; the first step reads
    // the initial data, which every rank has.
    let (n, steps) = (16, 6);
    for ranks in 1..=4 {
        let (results, hub) = job(ranks, Mode::DoubleBuffered, |flow| {
            let bufs = [
                Buffer::new(flow, [n, n], |[i, j]| (i + j) as f64),
                Buffer::new(flow, [n, n], |_| 0.0),
            ];
            for s in 0..steps {
                let (src, dst) = (&bufs[s % 2], &bufs[(s + 1) % 2]);
                flow.submit(|cg| {
                    let src = src.read(cg, map::neighbourhood([1, 0]));
                    let dst = dst.write(cg, map::one_to_one());
                    cg.parallel_for([n, n], move |chunk| {
                        let (src, mut dst) = (chunk.read(&src), chunk.write(&dst));
                        for [i, j] in chunk.items() {
                            dst[[i, j]] =
                                src[[i.saturating_sub(1), j]] + src[[(i + 1).min(n - 1), j]];
                        }
                    });
                })
                .unwrap();
            }
            flow.wait().unwrap();
            flow.transfer_stats()
        });
        let total: u64 = results.iter().map(|s| s.bytes_sent).sum();
        let received: u64 = results.iter().map(|s| s.bytes_received).sum();
        let boundaries = (ranks - 1) as u64;
        let expected = (steps as u64 - 1) * boundaries * 2 * (n as u64) * 8;
        assert_eq!(total, expected, "ranks={ranks}");
        assert_eq!(received, expected, "ranks={ranks}");
        assert!(
            hub.slots.lock().unwrap().is_empty(),
            "a message nobody took"
        );
    }
}

#[test]
fn ranks_that_submit_different_graphs_get_an_error_naming_the_first_difference() {
    for ranks in [2, 3] {
        let (results, _) = job(ranks, Mode::DoubleBuffered, |flow| {
            let n = 8;
            let bufs = [
                Buffer::new(flow, [n], |[i]| i as u32),
                Buffer::new(flow, [n], |_| 0u32),
            ];
            let steps = std::cell::Cell::new(0);
            let step = |label: &str, halo: usize| {
                let s = steps.replace(steps.get() + 1);
                let (a, b) = (&bufs[s % 2], &bufs[(s + 1) % 2]);
                flow.submit(|cg| {
                    let a = a.read(cg, map::neighbourhood([halo]));
                    let b = b.write(cg, map::one_to_one());
                    cg.label(label).parallel_for([n], move |chunk| {
                        let (a, mut b) = (chunk.read(&a), chunk.write(&b));
                        for [i] in chunk.items() {
                            b[[i]] = a[[i]] + 1;
                        }
                    });
                })
                .unwrap();
            };
            step("first", 1);
            // The last rank reads a wider halo in its second group, of data the others
            // wrote: messages of other sizes than the others send, and some never sent.
            let last = flow.rank().0 + 1 == flow.rank().1;
            step("second", if last { 2 } else { 1 });
            step("third", 1);
            let first = flow.wait();
            let again = flow.read_back(&bufs[0]).map(|_| ());
            (first, again)
        });
        for (rank, (first, again)) in results.into_iter().enumerate() {
            for result in [first, again] {
                match result {
                    Err(FlowError::Diverged { task, detail }) => {
                        assert_eq!(task, 1, "rank {rank}: {detail}");
                        assert!(detail.contains("`second`"), "{detail}");
                    }
                    other => panic!("rank {rank}: {other:?}"),
                }
            }
        }
    }
}

#[test]
fn a_rank_with_an_extra_group_is_reported_too() {
    let (results, _) = job(2, Mode::Inline, |flow| {
        let a = Buffer::new(flow, [4], |_| 0u8);
        let write = |label: &str| {
            flow.submit(|cg| {
                let a = a.read_write(cg, map::one_to_one());
                cg.label(label).parallel_for([4], move |chunk| {
                    let mut a = chunk.write(&a);
                    for [i] in chunk.items() {
                        a[[i]] += 1;
                    }
                });
            })
            .unwrap();
        };
        write("shared");
        if flow.rank().0 == 1 {
            write("only on rank 1");
        }
        flow.wait()
    });
    for r in results {
        match r {
            Err(FlowError::Diverged { task, detail }) => {
                assert_eq!(task, 1);
                assert!(detail.contains("rank 0: none"), "{detail}");
                assert!(detail.contains("`only on rank 1`"), "{detail}");
            }
            other => panic!("{other:?}"),
        }
    }
}

#[test]
fn a_panicking_kernel_ends_the_job_through_the_transport() {
    let (results, hub) = job(2, Mode::DoubleBuffered, |flow| {
        let a = Buffer::new(flow, [6], |_| 0i32);
        flow.submit(|cg| {
            let a = a.write(cg, map::one_to_one());
            cg.parallel_for([6], move |chunk| {
                let _a = chunk.write(&a);
                let [r] = chunk.range();
                assert!(r.start < 3, "rank 1 broke at item {}", r.start);
            });
        })
        .unwrap();
        flow.wait()
    });
    assert!(results[0].is_ok());
    assert!(matches!(
        results[1],
        Err(FlowError::Failed { panicked: 1.., .. })
    ));
    let aborts = hub.aborts.lock().unwrap();
    // One abort per panicking chunk of rank 1, each with the panic's message.
    assert!(!aborts.is_empty());
    for (rank, message) in aborts.iter() {
        assert_eq!(*rank, 1);
        assert!(message.contains("rank 1 broke at item"), "{message}");
    }
}

#[test]
fn parts_that_write_the_same_elements_on_two_ranks_are_refused() {
    let (results, _) = job(2, Mode::Inline, |flow| {
        let a = Buffer::new(flow, [4], |_| 0u8);
        flow.submit(|cg| {
            let a = a.read_write(cg, map::all());
            cg.parallel_for([4], move |chunk| {
                let _a = chunk.write(&a);
            });
        })
    });
    for r in results {
        assert!(matches!(r, Err(FlowError::Declaration(m)) if m.contains("both write")));
    }
}

/// [`job`] on two ranks, failing instead of hanging if the ranks do not all return: the
/// non-collective calls below would wait for data no rank sends.
fn job_that_ends<R: Send + 'static>(
    program: impl Fn(&Flow, &[Buffer<u32, 1>; 2]) -> R + Send + Sync + 'static,
) -> Vec<R> {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let (results, _) = job(2, Mode::DoubleBuffered, |flow| {
            let n = 6;
            let bufs = [
                Buffer::new(flow, [n], |[i]| i as u32),
                Buffer::new(flow, [n], |_| 0u32),
            ];
            flow.submit(|cg| {
                let a = bufs[0].read(cg, map::neighbourhood([1]));
                let b = bufs[1].write(cg, map::one_to_one());
                cg.label("step").parallel_for([n], move |chunk| {
                    let (a, mut b) = (chunk.read(&a), chunk.write(&b));
                    for [i] in chunk.items() {
                        b[[i]] = a[[i]] + 1;
                    }
                });
            })
            .unwrap();
            program(flow, &bufs)
        });
        let _ = tx.send(results);
    });
    rx.recv_timeout(std::time::Duration::from_secs(60))
        .expect("the ranks still wait: a call that was not collective hung the job")
}

fn not_collective(result: Result<(), FlowError>) -> (String, String) {
    match result {
        Err(FlowError::NotCollective { call, detail }) => (call, detail),
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_read_back_on_one_rank_is_an_error_on_every_rank_not_a_hang() {
    let results = job_that_ends(|flow, bufs| {
        let first = if flow.rank().0 == 0 {
            flow.read_back(&bufs[1]).map(drop)
        } else {
            flow.wait()
        };
        // The checks no longer pair up: every later call reports the same.
        (not_collective(first), not_collective(flow.wait()))
    });
    let both = "rank 0: Flow::read_back of buffer #1; rank 1: Flow::wait";
    for (rank, (first, again)) in results.into_iter().enumerate() {
        let call = ["Flow::read_back of buffer #1", "Flow::wait"][rank];
        assert_eq!(first.0, call);
        assert!(first.1.contains(both), "{}", first.1);
        assert_eq!(again, first);
    }
}

#[test]
fn a_read_back_while_the_other_rank_drops_its_flow_is_an_error() {
    let results = job_that_ends(|flow, bufs| {
        if flow.rank().0 == 0 {
            Some(not_collective(flow.read_back(&bufs[0]).map(drop)))
        } else {
            None
        }
    });
    let (call, detail) = results[0].clone().unwrap();
    assert_eq!(call, "Flow::read_back of buffer #0");
    assert!(detail.contains("rank 1: dropping the flow"), "{detail}");
}

#[test]
fn read_backs_of_different_buffers_are_an_error() {
    let results = job_that_ends(|flow, bufs| {
        let rank = flow.rank().0;
        not_collective(flow.read_back(&bufs[rank]).map(drop))
    });
    for (call, detail) in results {
        assert!(call.starts_with("Flow::read_back of buffer #"), "{call}");
        assert!(
            detail.contains(
                "rank 0: Flow::read_back of buffer #0; rank 1: Flow::read_back of buffer #1"
            ),
            "{detail}"
        );
    }
}

#[test]
fn an_extra_wait_on_one_rank_names_the_call_where_the_others_went_on() {
    let results = job_that_ends(|flow, bufs| {
        flow.wait().unwrap();
        if flow.rank().0 == 0 {
            flow.wait().unwrap_err()
        } else {
            flow.read_back(&bufs[1]).unwrap_err()
        }
    });
    for r in results {
        let (_, detail) = not_collective(Err(r));
        assert!(
            detail.contains("rank 0: Flow::wait; rank 1: Flow::read_back of buffer #1"),
            "{detail}"
        );
    }
}

/// A flag that one thread raises and another waits for.
#[derive(Default)]
struct Flag(Mutex<bool>, Condvar);

impl Flag {
    fn raise(&self) {
        *self.0.lock().unwrap() = true;
        self.1.notify_all();
    }

    fn wait(&self) {
        let mut up = self.0.lock().unwrap();
        while !*up {
            up = self.1.wait(up).unwrap();
        }
    }
}

/// On `flow`: a buffer of `n` rows written `base + row` (on rank 0's first row after
/// `before`), then a halo read of it into a second buffer, which is returned.
fn halo_of(
    flow: &Flow,
    n: usize,
    base: u64,
    before: impl Fn() + Send + Sync + 'static,
) -> Buffer<u64, 1> {
    let src = Buffer::new(flow, [n], |_| 0u64);
    let dst = Buffer::new(flow, [n], |_| 0u64);
    flow.submit(|cg| {
        let src = src.write(cg, map::one_to_one());
        cg.chunks(1).parallel_for([n], move |chunk| {
            if chunk.range()[0].start == 0 {
                before();
            }
            let mut src = chunk.write(&src);
            for [i] in chunk.items() {
                src[[i]] = base + i as u64;
            }
        });
    })
    .unwrap();
    flow.submit(|cg| {
        let src = src.read(cg, map::neighbourhood([1]));
        let dst = dst.write(cg, map::one_to_one());
        cg.parallel_for([n], move |chunk| {
            let (src, mut dst) = (chunk.read(&src), chunk.write(&dst));
            for [i] in chunk.items() {
                dst[[i]] = src[[i.saturating_sub(1)]] + src[[(i + 1).min(n - 1)]];
            }
        });
    })
    .unwrap();
    dst
}

/// What [`halo_of`] computes.
fn expected_halo(n: usize, base: u64) -> Vec<u64> {
    let at = |i: usize| base + i as u64;
    (0..n)
        .map(|i| at(i.saturating_sub(1)) + at((i + 1).min(n - 1)))
        .collect()
}

#[test]
fn two_flows_of_one_transport_never_get_each_others_messages() {
    // The first flow's halo is held back until the second flow has planned its own, so both
    // flows' first messages between two ranks are in flight at once.
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let (ranks, n) = (2, 8);
        let hub = Arc::new(Hub::default());
        let results: Vec<_> = std::thread::scope(|s| {
            let handles: Vec<_> = (0..ranks)
                .map(|rank| {
                    let hub = hub.clone();
                    s.spawn(move || {
                        let pool = ember::Pool::builder().threads(2).build().unwrap();
                        let transport = Arc::new(Local::new(rank, ranks, hub));
                        let first =
                            Flow::distributed(&pool, FlowOptions::default(), transport.clone());
                        let second = Flow::distributed(&pool, FlowOptions::default(), transport);
                        let release = Arc::new(Flag::default());
                        let wait = release.clone();
                        let a = halo_of(&first, n, 100, move || wait.wait());
                        let b = halo_of(&second, n, 200, || {});
                        release.raise();
                        (first.read_back(&a).unwrap(), second.read_back(&b).unwrap())
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        let _ = tx.send(results);
    });
    let results = rx
        .recv_timeout(std::time::Duration::from_secs(60))
        .expect("a rank failed or hung");
    for (a, b) in results {
        assert_eq!(a, expected_halo(8, 100));
        assert_eq!(b, expected_halo(8, 200));
    }
}

/// Submits, on `flow` (two ranks), a writer of `src` whose part on rank `panics_on` panics
/// (if any), then a halo read of `src` into `dst`, so that each rank receives a row from the
/// other; the halo reader's items add up in `read`.
fn writer_then_halo(
    flow: &Flow,
    src: &Buffer<u64, 1>,
    dst: &Buffer<u64, 1>,
    panics_on: Option<usize>,
    read: Arc<AtomicU64>,
) {
    let n = 8;
    let rank = flow.rank().0;
    flow.submit(|cg| {
        let src = src.write(cg, map::one_to_one());
        cg.parallel_for([n], move |chunk| {
            let mut s = chunk.write(&src);
            // Long enough for a drop that does not wait to return first, or for a drop's
            // check to come before the panic.
            std::thread::sleep(std::time::Duration::from_millis(50));
            assert!(Some(rank) != panics_on, "rank {rank}'s writer panics");
            for [i] in chunk.items() {
                s[[i]] = i as u64;
            }
        });
    })
    .unwrap();
    flow.submit(|cg| {
        let src = src.read(cg, map::neighbourhood([1]));
        let dst = dst.write(cg, map::one_to_one());
        cg.parallel_for([n], move |chunk| {
            let (s, mut d) = (chunk.read(&src), chunk.write(&dst));
            for [i] in chunk.items() {
                d[[i]] = s[[i]];
                read.fetch_add(1, Ordering::SeqCst);
            }
        });
    })
    .unwrap();
}

/// Runs `body` on a thread and fails, instead of hanging, if it does not end.
fn ends<R: Send + 'static>(what: &str, body: impl FnOnce() -> R + Send + 'static) -> R {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(body());
    });
    rx.recv_timeout(std::time::Duration::from_secs(60))
        .unwrap_or_else(|_| panic!("{what}"))
}

#[test]
fn a_flow_dropped_after_a_panic_whose_abort_returned_does_not_wait_for_lost_messages() {
    // Rank 0's writer panics, so its send of the halo row is cancelled and rank 1's receive
    // never completes. The transport's abort returns, so both ranks go on, make a collective
    // call that does not need the halo, and drop their flows: the drop's check tells rank 1
    // that rank 0 lost a task, and neither waits for the message that will not come.
    let (results, aborts) = ends(
        "a rank's drop waits for a message whose send was cancelled",
        || {
            let (results, hub) = job_on_pools(2, Mode::Inline, |pool, flow| {
                let src = Buffer::new(flow, [8], |_| 0u64);
                let dst = Buffer::new(flow, [8], |_| 0u64);
                let other = Buffer::new(flow, [8], |[i]| i as u64);
                writer_then_halo(flow, &src, &dst, Some(0), Arc::new(AtomicU64::new(0)));
                if flow.rank().0 == 0 {
                    // The panic has happened (and is counted) before this rank's drop.
                    pool.wait_idle();
                }
                flow.read_back(&other)
            });
            let aborts = hub.aborts.lock().unwrap().clone();
            (results, aborts)
        },
    );
    for r in results {
        assert_eq!(r.unwrap(), (0..8).collect::<Vec<u64>>());
    }
    assert!(!aborts.is_empty());
    assert!(aborts
        .iter()
        .all(|(rank, m)| *rank == 0 && m.contains("writer panics")));
}

#[test]
fn a_flow_dropped_on_a_worker_of_its_pool_ends_on_every_rank() {
    // Rank 0 drops its flow inside `install`, on its pool's only worker; rank 1 on its own
    // thread. The worker hands the drop's collective part to a thread of its own
    // (`flow/README.md`, "A drop on a worker") and runs the flow's tasks once the drop has
    // returned, so rank 1's drop, which waits for the halo rank 0 sends, ends too.
    ends("a rank's drop hung", || {
        let (hub, ranks) = (Arc::new(Hub::default()), 2);
        std::thread::scope(|s| {
            for rank in 0..ranks {
                let hub = hub.clone();
                s.spawn(move || {
                    let pool = ember::Pool::builder().threads(1).build().unwrap();
                    let flow = Flow::distributed(
                        &pool,
                        FlowOptions::default(),
                        Arc::new(Local::new(rank, ranks, hub)),
                    );
                    let src = Buffer::new(&flow, [8], |_| 0u64);
                    let dst = Buffer::new(&flow, [8], |_| 0u64);
                    writer_then_halo(&flow, &src, &dst, None, Arc::new(AtomicU64::new(0)));
                    if rank == 0 {
                        pool.install(move || drop(flow));
                        pool.wait_idle();
                    } else {
                        drop(flow);
                    }
                });
            }
        });
    });
}

#[test]
fn a_flow_dropped_inside_its_own_task_still_waits_for_its_messages() {
    // Each rank drops its flow inside one of the flow's own tasks, while the halo it sends
    // and receives is still to come (its writer takes a while). The drop cannot wait there
    // for the tasks, its own among them; its collective part goes on on a thread of its
    // own, which does: once every rank's such drop has ended, every halo row has arrived
    // and been read, and every message of the flow has met its receive.
    for mode in [Mode::Inline, Mode::DoubleBuffered] {
        let (reads, hub) = ends("a rank's drop hung", move || {
            let (hub, ranks) = (Arc::new(Hub::default()), 2);
            let reads: Vec<u64> = std::thread::scope(|s| {
                let handles: Vec<_> = (0..ranks)
                    .map(|rank| {
                        let hub = hub.clone();
                        s.spawn(move || {
                            let pool = ember::Pool::builder().threads(2).build().unwrap();
                            let options = FlowOptions {
                                mode,
                                horizon_every: 8,
                            };
                            let transport = Arc::new(Local::new(rank, ranks, hub.clone()));
                            let flow = Flow::distributed(&pool, options, transport);
                            let src = Buffer::new(&flow, [8], |_| 0u64);
                            let dst = Buffer::new(&flow, [8], |_| 0u64);
                            let read = Arc::new(AtomicU64::new(0));
                            writer_then_halo(&flow, &src, &dst, None, read.clone());
                            let slot = Arc::new(Mutex::new(None::<Flow>));
                            let (placed, dropped) =
                                (Arc::new(Flag::default()), Arc::new(Flag::default()));
                            let (inside, on_placed, on_dropped) =
                                (slot.clone(), placed.clone(), dropped.clone());
                            flow.submit(|cg| {
                                cg.label("drops its flow").run(move || {
                                    on_placed.wait();
                                    drop(inside.lock().unwrap().take());
                                    on_dropped.raise();
                                });
                            })
                            .unwrap();
                            *slot.lock().unwrap() = Some(flow);
                            placed.raise();
                            dropped.wait();
                            hub.drops.wait(None);
                            read.load(Ordering::SeqCst)
                        })
                    })
                    .collect();
                handles.into_iter().map(|h| h.join().unwrap()).collect()
            });
            (reads, hub)
        });
        // Each rank reads its part: four of the eight items.
        assert_eq!(
            reads,
            [4, 4],
            "{mode:?}: every item read once the drops ended"
        );
        assert!(hub.aborts.lock().unwrap().is_empty());
        assert!(
            hub.slots.lock().unwrap().is_empty(),
            "{mode:?}: a message nobody took"
        );
    }
}

#[test]
fn flows_dropped_nested_on_a_worker_of_their_pool_do_not_wait_for_each_other() {
    // Rank 0 drops flow A on its pool's only worker, whose job meanwhile drops flow B; rank 1
    // drops A, then B, on its own thread. Were B's drop made inside A's (its check's wait
    // runs the worker's jobs), rank 0 would wait in B's check for rank 1, which makes it only
    // once A has settled there: each rank would wait for the other. Each drop on the worker
    // hands its collective part to a thread of its own instead, which waits for nothing but
    // its own flow; both end, and no rank aborts.
    let hub = ends("a rank's drops deadlocked", || {
        let (hub, ranks) = (Arc::new(Hub::default()), 2);
        std::thread::scope(|s| {
            for rank in 0..ranks {
                let hub = hub.clone();
                s.spawn(move || {
                    let pool = ember::Pool::builder().threads(1).build().unwrap();
                    let transport = Arc::new(Local::new(rank, ranks, hub.clone()));
                    let flow =
                        |_| Flow::distributed(&pool, FlowOptions::default(), transport.clone());
                    let (a, b) = (flow(0), flow(1));
                    for flow in [&a, &b] {
                        let src = Buffer::new(flow, [8], |_| 0u64);
                        let dst = Buffer::new(flow, [8], |_| 0u64);
                        writer_then_halo(flow, &src, &dst, None, Arc::new(AtomicU64::new(0)));
                    }
                    if rank == 0 {
                        let handle = pool.clone();
                        pool.install(move || {
                            handle.spawn(move || drop(b));
                            drop(a);
                        });
                        pool.wait_idle();
                        // Both drops went on on threads of their own.
                        assert_eq!(hub.drops.wait(None), 0);
                    } else {
                        drop(a);
                        drop(b);
                    }
                });
            }
        });
        hub
    });
    let aborts = hub.aborts.lock().unwrap();
    assert!(aborts.is_empty(), "{aborts:?}");
}

#[test]
fn a_panic_after_the_drops_check_stops_every_ranks_wait() {
    // Rank 0's writer panics only after both ranks made their drop's check (which then
    // reported no lost task): rank 0 says so in the drop's last round, and rank 1 stops
    // waiting for the halo row rank 0 will never send.
    let aborts = ends(
        "a rank's drop waits for a message whose send was cancelled",
        || {
            let (_, hub) = job(2, Mode::Inline, |flow| {
                let src = Buffer::new(flow, [8], |_| 0u64);
                let dst = Buffer::new(flow, [8], |_| 0u64);
                writer_then_halo(flow, &src, &dst, Some(0), Arc::new(AtomicU64::new(0)));
            });
            let aborts = hub.aborts.lock().unwrap().clone();
            aborts
        },
    );
    assert!(!aborts.is_empty());
    assert!(aborts
        .iter()
        .all(|(rank, m)| *rank == 0 && m.contains("writer panics")));
}

#[test]
fn a_job_run_while_a_check_waits_on_a_worker_may_submit_to_the_same_flow() {
    // Rank 0 calls `wait` in a scope of another pool of one worker, whose check then waits
    // for rank 1's header running that pool's jobs; one of them submits a group to the
    // same flow. Rank 1 makes its `wait` only once that job has submitted, so the job surely runs
    // inside rank 0's check. The check does not hold the flow's state while it waits, so the
    // submission goes through; the group is not part of that check (taken before it), and
    // both ranks' next `wait` covers it.
    let submitted = Arc::new(Flag::default());
    let results = ends("a job that submitted inside a check hung", move || {
        let (results, _) = job_on_pools(2, Mode::DoubleBuffered, |_, flow| {
            let ran = Arc::new(AtomicU64::new(0));
            let group = |flow: &Flow| {
                let ran = ran.clone();
                flow.submit(|cg| {
                    cg.label("submitted inside a check").run(move || {
                        ran.fetch_add(1, Ordering::SeqCst);
                    });
                })
            };
            let first = if flow.rank().0 == 0 {
                let other = ember::Pool::builder().threads(1).build().unwrap();
                let mut inner = None;
                let first = other.scope(|s| {
                    // Queued on the only worker, which runs it inside the check's wait.
                    s.spawn(|_| {
                        inner = Some(group(flow));
                        submitted.raise();
                    });
                    flow.wait()
                });
                inner.expect("the job ran").unwrap();
                first
            } else {
                submitted.wait();
                let first = flow.wait();
                group(flow).unwrap();
                first
            };
            (first, flow.wait(), ran.load(Ordering::SeqCst))
        });
        results
    });
    for (rank, (first, second, ran)) in results.into_iter().enumerate() {
        assert!(first.is_ok(), "rank {rank}: {first:?}");
        assert!(second.is_ok(), "rank {rank}: {second:?}");
        assert_eq!(ran, 1, "rank {rank}");
    }
}

/// Rank 0 of two whose transport sends nowhere and answers each receive as `reply` says:
/// `None` drops the receive's callback uncalled, as a transport whose progress has ended does;
/// `Some(bytes)` answers with those bytes, as a foreign binary's control message or a stray
/// message under the same tag would.
struct OneSided {
    reply: Option<Vec<u8>>,
}

impl Transport for OneSided {
    fn rank(&self) -> usize {
        0
    }
    fn ranks(&self) -> usize {
        2
    }
    fn open_flow(&self) -> u64 {
        0
    }
    fn send(&self, _to: usize, _tag: u64, _bytes: Vec<u8>) {}
    fn receive(&self, _from: usize, _tag: u64, _len: usize, done: Box<dyn FnOnce(Vec<u8>) + Send>) {
        if let Some(bytes) = &self.reply {
            done(bytes.clone());
        }
    }
    fn abort(&self, _message: &str) {}
}

/// Two waits of a flow over `OneSided` with `reply`, then its drop, whose check reads such a
/// receive too and must end without a panic: both waits fail as lost.
fn two_waits_fail_as_lost(what: &str, reply: Option<Vec<u8>>) {
    let (first, second) = ends(what, move || {
        let pool = ember::Pool::builder().threads(1).build().unwrap();
        let flow = Flow::distributed(&pool, FlowOptions::default(), Arc::new(OneSided { reply }));
        let first = flow.wait();
        let second = flow.wait();
        drop(flow);
        (first, second)
    });
    for outcome in [first, second] {
        assert!(
            matches!(&outcome, Err(FlowError::TransportLost { call }) if call == "Flow::wait"),
            "{outcome:?}"
        );
    }
}

#[test]
fn a_check_whose_message_the_transport_dropped_is_an_error_not_a_hang() {
    two_waits_fail_as_lost(
        "a check waited for a message the transport had dropped",
        None,
    );
}

#[test]
fn a_check_whose_header_has_the_wrong_length_fails_as_lost_not_panics() {
    two_waits_fail_as_lost(
        "a check waited after a header of the wrong length",
        Some(vec![1, 2, 3]),
    );
}

/// Rank 0 of two whose peer makes every call it makes: each message it sends comes back as
/// rank 1's under the same tag. From its `forget_from`-th receive on it drops each receive's
/// callback uncalled, as a transport whose progress has ended does.
struct Mirror {
    waiting: Mutex<HashMap<u64, Done>>,
    early: Mutex<HashMap<u64, Vec<u8>>>,
    posted: AtomicU64,
    forget_from: u64,
}

impl Transport for Mirror {
    fn rank(&self) -> usize {
        0
    }
    fn ranks(&self) -> usize {
        2
    }
    fn open_flow(&self) -> u64 {
        0
    }
    fn send(&self, _to: usize, tag: u64, bytes: Vec<u8>) {
        let waiting = self.waiting.lock().unwrap().remove(&tag);
        match waiting {
            Some(done) => done(bytes),
            None => {
                self.early.lock().unwrap().insert(tag, bytes);
            }
        }
    }
    fn receive(&self, _from: usize, tag: u64, _len: usize, done: Done) {
        if self.posted.fetch_add(1, Ordering::SeqCst) >= self.forget_from {
            drop(done);
            return;
        }
        let early = self.early.lock().unwrap().remove(&tag);
        match early {
            Some(bytes) => done(bytes),
            None => {
                self.waiting.lock().unwrap().insert(tag, done);
            }
        }
    }
    fn abort(&self, _message: &str) {}
}

#[test]
fn a_drop_whose_last_round_the_transport_dropped_ends_not_hangs() {
    // The drop's check (the first receive) is answered; the outcome of its last round (the
    // second) is dropped uncalled: the other rank will never be heard, and the drop ends.
    let posted = ends(
        "a drop waited for an outcome the transport had dropped",
        || {
            let pool = ember::Pool::builder().threads(1).build().unwrap();
            let transport = Arc::new(Mirror {
                waiting: Mutex::default(),
                early: Mutex::default(),
                posted: AtomicU64::new(0),
                forget_from: 1,
            });
            let flow = Flow::distributed(&pool, FlowOptions::default(), transport.clone());
            flow.submit(|cg| {
                cg.run(|| {});
            })
            .unwrap();
            drop(flow);
            transport.posted.load(Ordering::SeqCst)
        },
    );
    assert_eq!(posted, 2, "the drop's check and its last round");
}

/// Rank 0 of two whose every send panics, as a transport's bug would. It records aborts and
/// counts background drops; with `abort_panics` its abort panics too, and with
/// `drops_panic` its `background_drops` as well: more of a transport's bugs.
#[derive(Default)]
struct Breaking {
    aborts: Mutex<Vec<String>>,
    drops: BackgroundDrops,
    abort_panics: bool,
    drops_panic: bool,
}

impl Transport for Breaking {
    fn rank(&self) -> usize {
        0
    }
    fn ranks(&self) -> usize {
        2
    }
    fn open_flow(&self) -> u64 {
        0
    }
    fn send(&self, to: usize, _tag: u64, _bytes: Vec<u8>) {
        panic!("the transport broke sending to rank {to}");
    }
    fn receive(&self, _from: usize, _tag: u64, _len: usize, _done: Done) {}
    fn abort(&self, message: &str) {
        assert!(
            !self.abort_panics,
            "the transport broke ending the job: {message}"
        );
        self.aborts.lock().unwrap().push(message.to_string());
    }
    fn background_drops(&self) -> Option<&BackgroundDrops> {
        assert!(!self.drops_panic, "the transport broke counting drops");
        Some(&self.drops)
    }
}

#[test]
fn a_panic_in_a_background_drop_ends_the_job_through_the_transport() {
    // The flow is dropped on a worker, so its check runs on a thread of its own, where the
    // transport's send panics: the other ranks would wait for this rank's header, so the
    // drop ends the job through the transport instead of letting its thread die quietly.
    let transport = Arc::new(Breaking::default());
    let pool = ember::Pool::builder().threads(1).build().unwrap();
    let flow = Flow::distributed(&pool, FlowOptions::default(), transport.clone());
    pool.install(move || drop(flow));
    let counted = transport.clone();
    let left = ends("the background drop never ended", move || {
        counted.drops.wait(None)
    });
    assert_eq!(left, 0);
    let aborts = transport.aborts.lock().unwrap();
    assert_eq!(aborts.len(), 1, "{aborts:?}");
    assert!(
        aborts[0].contains("dropping a flow panicked: the transport broke sending to rank 1"),
        "{}",
        aborts[0]
    );
}

#[test]
fn a_wait_for_background_drops_on_a_worker_runs_the_tasks_they_wait_for() {
    // On a pool of one worker, a job submits a task (queued behind the job, on the only
    // worker), drops its flow, and then waits for the transport's background drops, as an
    // MPI World dropped there does. The drop's thread waits for that task, which only this
    // worker can run: the wait runs the pool's jobs meanwhile instead of blocking the worker.
    for ranks in [1, 2] {
        let ran = ends(
            "a wait for background drops blocked the only worker",
            move || {
                let hub = Arc::new(Hub::default());
                std::thread::scope(|s| {
                    let handles: Vec<_> = (0..ranks)
                        .map(|rank| {
                            let hub = hub.clone();
                            s.spawn(move || {
                                let pool = ember::Pool::builder().threads(1).build().unwrap();
                                let transport = Arc::new(Local::new(rank, ranks, hub.clone()));
                                let flow =
                                    Flow::distributed(&pool, FlowOptions::default(), transport);
                                let ran = Arc::new(AtomicU64::new(0));
                                let counter = ran.clone();
                                let left = pool.install(move || {
                                    flow.submit(|cg| {
                                        cg.label("queued").run(move || {
                                            counter.fetch_add(1, Ordering::SeqCst);
                                        });
                                    })
                                    .unwrap();
                                    drop(flow);
                                    hub.drops.wait(None)
                                });
                                (left, ran.load(Ordering::SeqCst))
                            })
                        })
                        .collect();
                    handles
                        .into_iter()
                        .map(|h| h.join().unwrap())
                        .collect::<Vec<_>>()
                })
            },
        );
        assert_eq!(ran, vec![(0, 1); ranks], "{ranks} rank(s)");
    }
}

/// How many messages rank `from` has sent rank `to` that rank `to` has not received yet.
fn unreceived(hub: &Hub, from: usize, to: usize) -> usize {
    let slots = hub.slots.lock().unwrap();
    slots
        .iter()
        .filter(|((f, t, _), slot)| (*f, *t) == (from, to) && matches!(slot, Slot::Arrived(_)))
        .count()
}

/// Polls `done` until it holds or `patience` has passed: an aid to an interleaving, never a
/// condition of a test.
fn poll(done: impl Fn() -> bool, patience: std::time::Duration) {
    let start = std::time::Instant::now();
    while !done() && start.elapsed() < patience {
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
}

#[test]
fn a_check_made_while_another_of_the_same_flow_fails_fails_too() {
    // Rank 0 makes two `wait`s on one flow from two threads, the second while the first
    // waits for rank 1; rank 1 makes a `read_back`, then a `wait`. The first check fails
    // (NotCollective) on both ranks, and rank 1's `wait` returns that error without
    // exchanging anything. Rank 0's second check, already waiting for rank 1's header, is
    // woken by the first one's failure and returns the same error, instead of waiting for
    // a header that rank 1 never sends.
    let results = ends("a check made meanwhile waited for ever", || {
        let hub = Arc::new(Hub::default());
        let second_began = Arc::new(Flag::default());
        std::thread::scope(|s| {
            let handles: Vec<_> = (0..2)
                .map(|rank| {
                    let (hub, second_began) = (hub.clone(), second_began.clone());
                    s.spawn(move || {
                        let pool = ember::Pool::builder().threads(1).build().unwrap();
                        let transport = Arc::new(Local::new(rank, 2, hub.clone()));
                        let flow = Flow::distributed(&pool, FlowOptions::default(), transport);
                        let buf = Buffer::new(&flow, [8], |_| 0u64);
                        if rank == 0 {
                            std::thread::scope(|t| {
                                let first = t.spawn(|| flow.wait());
                                // The first check's header is on its way.
                                poll(|| unreceived(&hub, 0, 1) == 1, FOREVER);
                                let second = t.spawn(|| {
                                    second_began.raise();
                                    flow.wait()
                                });
                                vec![first.join().unwrap(), second.join().unwrap()]
                            })
                        } else {
                            second_began.wait();
                            // Lets the second check send its header (the interleaving in
                            // which it waits when the first fails).
                            poll(
                                || unreceived(&hub, 0, 1) == 2,
                                std::time::Duration::from_millis(200),
                            );
                            vec![flow.read_back(&buf).map(|_| ()), flow.wait()]
                        }
                    })
                })
                .collect();
            handles
                .into_iter()
                .map(|h| h.join().unwrap())
                .collect::<Vec<_>>()
        })
    });
    for (rank, calls) in results.into_iter().enumerate() {
        for result in calls {
            let (_, detail) = not_collective(result);
            assert!(
                detail.contains("rank 0: Flow::wait; rank 1: Flow::read_back of buffer #0"),
                "rank {rank}: {detail}"
            );
        }
    }
}

/// A bound on a poll that only guards against a hang (the test's `ends` fails first).
const FOREVER: std::time::Duration = std::time::Duration::from_secs(3600);

/// Rank 0 calls `wait` in a scope of a pool of one worker, whose check then waits for rank
/// 1's header running that pool's jobs; one of them makes a second check of the same flow:
/// on the same thread, nested in the first, or (`through_another_pool`) through another
/// pool's only worker, which the first check's thread then waits for. Rank 1 makes its first
/// call only once that job has begun, so the second check begins while the first waits.
/// Each takes its number as it begins and pairs with rank 1's calls: neither waits for the
/// other (a turn that let one check at a time run hung the second case).
fn checks_made_inside_another_check_pair_like_any_other(through_another_pool: bool) {
    let began = Arc::new(Flag::default());
    let results = ends("a check made inside another hung", move || {
        let (results, _) = job_on_pools(2, Mode::DoubleBuffered, |_, flow| {
            if flow.rank().0 == 0 {
                let one = ember::Pool::builder().threads(1).build().unwrap();
                let another = ember::Pool::builder().threads(1).build().unwrap();
                let second_check = || {
                    began.raise();
                    flow.wait()
                };
                let mut nested = None;
                let first = one.scope(|s| {
                    // Queued on the only worker, which runs it inside the check's wait.
                    s.spawn(|_| {
                        nested = Some(if through_another_pool {
                            another.install(second_check)
                        } else {
                            second_check()
                        });
                    });
                    flow.wait()
                });
                (first, nested.expect("the job ran"), flow.wait())
            } else {
                began.wait();
                (flow.wait(), flow.wait(), flow.wait())
            }
        });
        results
    });
    for (rank, (first, nested, last)) in results.into_iter().enumerate() {
        assert!(first.is_ok(), "rank {rank}: {first:?}");
        assert!(nested.is_ok(), "rank {rank}: {nested:?}");
        assert!(last.is_ok(), "rank {rank}: {last:?}");
    }
}

#[test]
fn a_check_nested_in_a_check_of_the_same_flow_on_its_thread_pairs_like_any_other() {
    checks_made_inside_another_check_pair_like_any_other(false);
}

#[test]
fn a_check_waited_for_by_a_job_run_inside_another_check_of_the_flow_ends() {
    checks_made_inside_another_check_pair_like_any_other(true);
}

#[test]
fn a_flow_whose_transport_panics_in_its_drop_still_ends_its_scheduler_thread() {
    // The drop's check panics in the transport's send, and so does the abort that would end
    // the job (and, on a worker, the count of background drops). The drop contains those
    // panics: it returns, and its scheduler thread ends, letting go of the pool, whose
    // workers then exit once the pool is dropped.
    for (on_worker, drops_panic) in [(false, false), (true, false), (true, true)] {
        let exited = Arc::new(Flag::default());
        let on_exit = exited.clone();
        let pool = ember::Pool::builder()
            .threads(1)
            .exit_handler(move |_| on_exit.raise())
            .build()
            .unwrap();
        let transport = Arc::new(Breaking {
            abort_panics: true,
            drops_panic,
            ..Breaking::default()
        });
        let flow = Flow::distributed(&pool, FlowOptions::default(), transport);
        let dropped = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            if on_worker {
                pool.install(move || drop(flow));
            } else {
                drop(flow);
            }
        }));
        assert!(dropped.is_ok(), "on_worker {on_worker}: the drop panicked");
        drop(pool);
        ends("the scheduler thread kept the pool alive", move || {
            exited.wait()
        });
    }
}
