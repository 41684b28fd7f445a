//! What a distributed job does when it goes wrong, or nearly; the MPI tests run it.
//!
//! - `--case panic`: the last rank's kernel panics in the second step; the job ends with
//!   the panic's message and a non-zero exit (`MPI_Abort`), and no rank hangs.
//! - `--case diverge`: the last rank declares a wider halo in its second step; every rank's
//!   `wait` reports the first divergent command group and the example exits non-zero.
//! - `--case read-back-on-one-rank`: rank 0 calls `read_back` after the steps, the others
//!   `wait`: every rank reports that the calls differ and exits non-zero, and none hangs.
//! - `--case caught-panic`: the thread that owns the world panics and catches its panic
//!   before the steps; the job goes on and ends as `fine` does.
//! - `--case main-panic`: the last rank's thread that owns the world panics, uncaught,
//!   after submitting the steps; the job ends with the panic's message and a non-zero exit.
//! - `--case tag-wrap`: 16,385 messages from rank 1 to rank 0, so flow tags 0 to 32,768;
//!   the first is sent after the last, whose tag is equal to its modulo 32,768 (the MPI
//!   tags every MPI library has). Every rank checks the data that arrived and prints `ok`
//!   (on one rank nothing moves and it checks the same).
//! - `--case drop-in-flight`: on rank 0 the writer of a buffer the other ranks read a halo
//!   of sleeps; the program reads back an unrelated buffer and drops its flow, its pool and
//!   its world while that halo is still to be sent. Dropping the flow waits for its messages,
//!   so every rank prints `ok` and the job exits zero.
//! - `--case drop-on-worker`: as `drop-in-flight`, but the flow is dropped inside
//!   `pool.install`, on a worker: its drop goes on on a thread of its own, still waiting for
//!   the halo, while the program drops its pool and its world. The world waits for that
//!   drop before it finalises MPI, so every rank prints `ok` and the job exits zero.
//! - `--case uneven-drop-on-worker`: rank 0's part of the only group sleeps three seconds
//!   (longer than the give-up time the tests set), the other ranks' parts do not, and
//!   nothing moves between the ranks; every rank drops its flow inside `pool.install`, then
//!   its pool and its world. The other ranks' drops wait in their check or last round for
//!   rank 0, which is slow, not gone: every world waits for them, every rank prints `ok`
//!   and the job exits zero.
//! - `--case world-on-worker`: a flow whose task is still queued behind a slow one on a pool
//!   of one worker is dropped, and then the world, inside `pool.install`, on that worker: the
//!   world's wait for the flow's drop runs the pool's jobs, that task among them, so every
//!   rank prints `ok` and the job exits zero.
//! - `--case unreceived-send`: the ranks diverge so that rank 0 sends a large message that
//!   no rank receives; rank 0 hands it to the transport only after the checks are over, and
//!   the other ranks end first. The job ends with a non-zero exit, saying why, and does not
//!   hang.
//! - `--case world-before-flow`: the program drops its world, finalising MPI, before a flow
//!   made from it; the flow's drop then has no transport to talk to. The process ends,
//!   saying so, without calling MPI after `MPI_Finalize`.
//! - `--case fine`: the steps without a fault (exits zero).
//!
//! Run as one process (`cargo run -p ember-mpi --example mpi_faults -- --case panic`) or
//! under `mpirun -n N` with the `mpi` feature.

use std::error::Error;
use std::ops::Range;
use std::process::ExitCode;
use std::sync::{Arc, Condvar, Mutex};

use ember::flow::{map, Buffer, Flow, FlowOptions, Region};
use ember_mpi::World;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().collect();
    let case = args
        .iter()
        .position(|a| a == "--case")
        .and_then(|i| args.get(i + 1))
        .cloned()
        .unwrap_or_else(|| "fine".into());
    let world = World::init().expect("starting MPI");
    if case == "world-before-flow" {
        world_before_flow(world);
    }
    if case == "world-on-worker" {
        world_on_worker(world);
    }
    if case == "caught-panic" {
        let rank = world.rank();
        let caught = std::panic::catch_unwind(|| panic!("rank {rank}: a deliberate panic, caught"));
        assert!(caught.is_err());
    }
    let result = match case.as_str() {
        "tag-wrap" => tag_wrap(&world),
        "drop-in-flight" => drop_in_flight(&world, false),
        "drop-on-worker" => drop_in_flight(&world, true),
        "uneven-drop-on-worker" => uneven_drop_on_worker(&world),
        "unreceived-send" => unreceived_send(&world),
        _ => steps(&world, &case),
    };
    match result {
        Ok(line) => {
            println!("rank {}: ok, {line}", world.rank());
            ExitCode::SUCCESS
        }
        Err(e) => {
            // One write for the whole line: mpirun merges every rank's stderr, and the
            // pieces of a line written apart can come out between another rank's.
            let line = format!("rank {}: {e}\n", world.rank());
            let _ = std::io::Write::write_all(&mut std::io::stderr(), line.as_bytes());
            ExitCode::FAILURE
        }
    }
}

/// Four halo steps over 16 elements, with the fault `case` names; the sum of the result.
fn steps(world: &World, case: &str) -> Result<String, Box<dyn Error>> {
    let pool = ember_mpi::rank_pool(world.ranks());
    let flow = world.flow(&pool, FlowOptions::default());
    let last = world.rank() + 1 == world.ranks();
    let n = 16;
    let bufs = [
        Buffer::new(&flow, [n], |[i]| i as u64),
        Buffer::new(&flow, [n], |_| 0u64),
    ];
    for step in 0..4 {
        let (src, dst) = (&bufs[step % 2], &bufs[(step + 1) % 2]);
        let halo = if case == "diverge" && last && step == 1 {
            2
        } else {
            1
        };
        let fail = case == "panic" && last && step == 1;
        let rank = world.rank();
        flow.submit(|cg| {
            let src = src.read(cg, map::neighbourhood([halo]));
            let dst = dst.write(cg, map::one_to_one());
            cg.label(format!("step {step}"))
                .parallel_for([n], move |chunk| {
                    assert!(!fail, "rank {rank}: deliberate failure in step {step}");
                    let (src, mut dst) = (chunk.read(&src), chunk.write(&dst));
                    for [i] in chunk.items() {
                        dst[[i]] = src[[i.saturating_sub(1)]] + src[[(i + 1).min(n - 1)]];
                    }
                });
        })
        .expect("submitting a step");
    }
    if case == "main-panic" && last {
        panic!(
            "rank {}: a deliberate panic on the main thread",
            world.rank()
        );
    }
    if case == "read-back-on-one-rank" && world.rank() == 0 {
        flow.read_back(&bufs[1])?;
    }
    flow.wait()?;
    let values = flow.read_back(&bufs[0])?;
    Ok(format!("sum {}", values.iter().sum::<u64>()))
}

/// Messages of rank 1 to rank 0 between the first and the last of the case `tag-wrap`: the
/// first and the last are 16,384 apart, so their flow tags (twice their number on the pair:
/// 0 and 32,768) are equal modulo 32,768, the tags MPI guarantees.
const BETWEEN: usize = 16_383;

/// Buffers the filling messages cycle through, one message each per round.
const FILL: usize = 128;

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

/// Rank 0's part reads every row; every other rank's part, its own row only. So rank 0
/// receives a message from every other rank, and no other rank waits for rank 0.
fn rank_0_reads_all(ranks: usize) -> impl ember::flow::RangeMapper {
    map::from_fn(move |[rows]: [Range<usize>; 1]| {
        if rows.start == 0 {
            Region::from(0..ranks)
        } else {
            Region::from(rows)
        }
    })
}

/// A group over one row per rank that writes, in row `i` of `dst`, the sum of the rows of
/// `src` that row `i`'s part reads ([`rank_0_reads_all`]); `after` runs on rank 0's part.
fn sum_rows(
    flow: &Flow,
    src: &Buffer<u64, 1>,
    dst: &Buffer<u64, 1>,
    label: &str,
    after: impl Fn() + Send + Sync + 'static,
) {
    let ranks = flow.rank().1;
    flow.submit(|cg| {
        let src = src.read(cg, rank_0_reads_all(ranks));
        let dst = dst.write(cg, map::one_to_one());
        cg.label(label)
            .chunks(1)
            .parallel_for([ranks], move |chunk| {
                let (src, mut dst) = (chunk.read(&src), chunk.write(&dst));
                for [i] in chunk.items() {
                    dst[[i]] = if i == 0 {
                        (0..ranks).map(|r| src[[r]]).sum()
                    } else {
                        src[[i]]
                    };
                }
                if chunk.range()[0].start == 0 {
                    after();
                }
            });
    })
    .expect("submitting a sum");
}

/// The sums [`sum_rows`] gives of rows `base + row`.
fn sums(base: u64, ranks: usize) -> Vec<u64> {
    let all = (0..ranks as u64).map(|r| base + r).sum();
    (0..ranks as u64)
        .map(|r| if r == 0 { all } else { base + r })
        .collect()
}

/// A group that writes `base + row` into every row of `dst`; `before` runs first on rank
/// 1's part.
fn write_rows(
    flow: &Flow,
    dst: &Buffer<u64, 1>,
    base: u64,
    label: &str,
    before: impl Fn() + Send + Sync + 'static,
) {
    let ranks = flow.rank().1;
    flow.submit(|cg| {
        let dst = dst.write(cg, map::one_to_one());
        cg.label(label)
            .chunks(1)
            .parallel_for([ranks], move |chunk| {
                if chunk.range()[0].start == 1 {
                    before();
                }
                let mut dst = chunk.write(&dst);
                for [i] in chunk.items() {
                    dst[[i]] = base + i as u64;
                }
            });
    })
    .expect("submitting a write");
}

/// The case `tag-wrap`. On rank 1 the writer of the first message waits, holding its send
/// back, until the last message has been handed to the transport; rank 0 submits the
/// receive of the last message only once the first has been delivered. So the last message
/// arrives while the first one's receive is the only one posted that shares its tag modulo
/// MPI's range, and the sums are wrong if the transport matched it there.
fn tag_wrap(world: &World) -> Result<String, Box<dyn Error>> {
    // Two workers: one waits in the held-back writer while the other runs the rest.
    let pool = ember::Pool::builder().threads(2).build()?;
    let options = FlowOptions {
        // A horizon would make later groups wait for the held-back writer.
        horizon_every: 0,
        ..FlowOptions::default()
    };
    let flow = world.flow(&pool, options);
    let ranks = world.ranks();
    let buffer = || Buffer::new(&flow, [ranks], |_| 0u64);
    let (first, first_sum, last, last_sum) = (buffer(), buffer(), buffer(), buffer());
    let (sent_last, got_first) = (Arc::new(Flag::default()), Arc::new(Flag::default()));

    let wait = sent_last.clone();
    write_rows(&flow, &first, 1000, "first write", move || wait.wait());
    // Message 0 of rank 1 to rank 0.
    let raise = got_first.clone();
    sum_rows(&flow, &first, &first_sum, "first read", move || {
        raise.raise()
    });

    // Messages 1..=BETWEEN, in rounds of up to FILL.
    let fill: Vec<Buffer<u64, 1>> = (0..FILL).map(|_| buffer()).collect();
    let sink = buffer();
    let mut left = BETWEEN;
    while left > 0 {
        let round = &fill[..left.min(FILL)];
        left -= round.len();
        flow.submit(|cg| {
            let dst: Vec<_> = round
                .iter()
                .map(|b| b.write(cg, map::one_to_one()))
                .collect();
            cg.label("fill write")
                .chunks(1)
                .parallel_for([ranks], move |chunk| {
                    for d in &dst {
                        let mut d = chunk.write(d);
                        for [i] in chunk.items() {
                            d[[i]] = i as u64;
                        }
                    }
                });
        })?;
        flow.submit(|cg| {
            let src: Vec<_> = round
                .iter()
                .map(|b| b.read(cg, rank_0_reads_all(ranks)))
                .collect();
            let sink = sink.write(cg, map::one_to_one());
            cg.label("fill read")
                .chunks(1)
                .parallel_for([ranks], move |chunk| {
                    let [rows] = chunk.range();
                    let total: u64 = src.iter().map(|s| chunk.read(s)[[rows.start]]).sum();
                    let mut sink = chunk.write(&sink);
                    for [i] in chunk.items() {
                        sink[[i]] = total;
                    }
                });
        })?;
    }

    write_rows(&flow, &last, 2000, "last write", || {});
    if world.rank() == 0 {
        // Rank 0 alone waits here, submitting nothing: it posts the last message's receive
        // once the first message has been delivered (on one rank, once its group ran).
        got_first.wait();
    }
    // Message BETWEEN + 1 of rank 1 to rank 0: on rank 1 its send does not wait for the
    // first message's.
    sum_rows(&flow, &last, &last_sum, "last read", || {});
    // Runs on rank 1 after the send of the last message (it overwrites what that send read)
    // and lets the first message's writer go on.
    write_rows(&flow, &last, 3000, "release", move || sent_last.raise());

    flow.wait()?;
    let got = (flow.read_back(&first_sum)?, flow.read_back(&last_sum)?);
    let want = (sums(1000, ranks), sums(2000, ranks));
    if got != want {
        return Err(format!("wrong data: the sums are {got:?}, not {want:?}").into());
    }
    let sent = flow.transfer_stats().messages_sent;
    Ok(format!("{sent} messages sent"))
}

/// The case `drop-in-flight`: the flow and the pool are dropped, and then the world, while
/// rank 0's halo for the other ranks is still held back by its sleeping writer; with
/// `on_worker`, the case `drop-on-worker`: the flow is dropped on a worker of its pool.
fn drop_in_flight(world: &World, on_worker: bool) -> Result<String, Box<dyn Error>> {
    // Two workers: one sleeps in rank 0's writer while the other runs the read-back.
    let pool = ember::Pool::builder().threads(2).build()?;
    let flow = world.flow(&pool, FlowOptions::default());
    let n = 4 * world.ranks();
    let held = Buffer::new(&flow, [n], |_| 0u64);
    let unrelated = Buffer::new(&flow, [n], |[i]| i as u64);
    let out = Buffer::new(&flow, [n], |_| 0u64);
    flow.submit(|cg| {
        let held = held.write(cg, map::one_to_one());
        cg.label("slow write")
            .chunks(1)
            .parallel_for([n], move |chunk| {
                if chunk.range()[0].start == 0 {
                    std::thread::sleep(std::time::Duration::from_secs(3));
                }
                let mut held = chunk.write(&held);
                for [i] in chunk.items() {
                    held[[i]] = i as u64;
                }
            });
    })?;
    flow.submit(|cg| {
        let held = held.read(cg, map::neighbourhood([1]));
        let out = out.write(cg, map::one_to_one());
        cg.label("halo read").parallel_for([n], move |chunk| {
            let (held, mut out) = (chunk.read(&held), chunk.write(&out));
            for [i] in chunk.items() {
                out[[i]] = held[[i.saturating_sub(1)]] + held[[(i + 1).min(n - 1)]];
            }
        });
    })?;
    // Reads nothing the halo read writes: it returns while the halo is still held back.
    let sum: u64 = flow.read_back(&unrelated)?.iter().sum();
    if on_worker {
        pool.install(move || drop(flow));
    } else {
        drop(flow);
    }
    drop(pool);
    Ok(format!("sum {sum}"))
}

/// The case `uneven-drop-on-worker`: rank 0's part takes three seconds, the others' none;
/// every rank drops its flow on a worker of its pool, then its pool (and, on return, its
/// world).
fn uneven_drop_on_worker(world: &World) -> Result<String, Box<dyn Error>> {
    let pool = ember::Pool::builder().threads(2).build()?;
    let flow = world.flow(&pool, FlowOptions::default());
    let n = 4 * world.ranks();
    let b = Buffer::new(&flow, [n], |_| 0u64);
    flow.submit(|cg| {
        let b = b.write(cg, map::one_to_one());
        cg.label("uneven").parallel_for([n], move |chunk| {
            if chunk.range()[0].start == 0 {
                std::thread::sleep(std::time::Duration::from_secs(3));
            }
            let mut b = chunk.write(&b);
            for [i] in chunk.items() {
                b[[i]] = i as u64;
            }
        });
    })?;
    pool.install(move || drop(flow));
    drop(pool);
    Ok("dropped".into())
}

/// Elements of the message no rank receives in the case `unreceived-send`: large enough
/// (8 MiB) that MPI sends it only once a receive matches it.
const UNRECEIVED: usize = 1 << 20;

/// The case `unreceived-send`. Rank 0 declares that the last rank's part reads the whole
/// buffer, the others that it reads its own rows only: so rank 0 plans to send its rows to
/// the last rank, which plans to receive nothing. The check of `wait` reports the
/// divergence on every rank; rank 0 releases its writer only after its check (and a pause
/// that lets the other ranks finish theirs), so the send is posted when no rank takes
/// messages any more, and waits for its own send's task before it returns.
fn unreceived_send(world: &World) -> Result<String, Box<dyn Error>> {
    let pool = ember::Pool::builder().threads(2).build()?;
    let options = FlowOptions {
        horizon_every: 0,
        ..FlowOptions::default()
    };
    let flow = world.flow(&pool, options);
    let (rank, ranks) = (world.rank(), world.ranks());
    let n = UNRECEIVED * ranks;
    let a = Buffer::new(&flow, [n], |_| 0u64);
    let sink = Buffer::new(&flow, [n], |_| 0u64);
    let (release, sent) = (Arc::new(Flag::default()), Arc::new(Flag::default()));
    let wait = release.clone();
    flow.submit(|cg| {
        let a = a.write(cg, map::one_to_one());
        cg.label("held write")
            .chunks(1)
            .parallel_for([n], move |chunk| {
                if chunk.range()[0].start == 0 {
                    wait.wait();
                }
                let mut a = chunk.write(&a);
                for [i] in chunk.items() {
                    a[[i]] = i as u64;
                }
            });
    })?;
    let everything = rank == 0;
    flow.submit(|cg| {
        let a = a.read(
            cg,
            map::from_fn(move |[rows]: [Range<usize>; 1]| {
                if everything && rows.end == n {
                    Region::from(0..n)
                } else {
                    Region::from(rows)
                }
            }),
        );
        let sink = sink.write(cg, map::one_to_one());
        cg.label("read").chunks(1).parallel_for([n], move |chunk| {
            let [rows] = chunk.range();
            let (a, mut sink) = (chunk.read(&a), chunk.write(&sink));
            for i in rows {
                sink[[i]] = a[[i]];
            }
        });
    })?;
    // Overwrites what the send read: on rank 0 it runs after the send was handed over.
    let raise = sent.clone();
    flow.submit(|cg| {
        let a = a.write(cg, map::one_to_one());
        cg.label("after the send")
            .chunks(1)
            .parallel_for([n], move |chunk| {
                let mut a = chunk.write(&a);
                for [i] in chunk.items() {
                    a[[i]] = 0;
                }
                if chunk.range()[0].start == 0 {
                    raise.raise();
                }
            });
    })?;
    let checked = flow.wait();
    if rank == 0 {
        std::thread::sleep(std::time::Duration::from_secs(1));
    }
    release.raise();
    if rank == 0 {
        sent.wait();
    }
    checked?;
    Ok("the ranks agreed".into())
}

/// The case `world-on-worker`: the flow and then the world are dropped on the only worker of
/// the flow's pool, while a task of the flow is still queued there.
fn world_on_worker(world: World) -> ! {
    let rank = world.rank();
    let pool = ember::Pool::builder().threads(1).build().expect("a pool");
    let flow = world.flow(&pool, FlowOptions::default());
    let n = 4 * world.ranks();
    let b = Buffer::new(&flow, [n], |_| 0u64);
    flow.submit(|cg| {
        let b = b.write(cg, map::one_to_one());
        cg.label("slow").parallel_for([n], move |chunk| {
            std::thread::sleep(std::time::Duration::from_millis(300));
            let mut b = chunk.write(&b);
            for [i] in chunk.items() {
                b[[i]] = i as u64;
            }
        });
    })
    .expect("a group");
    pool.install(move || {
        drop(flow);
        // Without the `mpi` feature a world has nothing to finalize, and no `Drop`.
        #[allow(clippy::drop_non_drop)]
        drop(world);
    });
    println!("rank {rank}: ok, the world was dropped on a worker");
    std::process::exit(0)
}

/// The case `world-before-flow`: a flow outlives its world (a mistake of the program).
fn world_before_flow(world: World) -> ! {
    let pool = ember::Pool::builder().threads(1).build().expect("a pool");
    let flow = world.flow(&pool, FlowOptions::default());
    let rank = world.rank();
    // Without the `mpi` feature a world has nothing to finalize, and no `Drop`.
    #[allow(clippy::drop_non_drop)]
    drop(world);
    // Its check sends to the other ranks, through a world that is gone.
    drop(flow);
    println!("rank {rank}: the flow was dropped after its world");
    std::process::exit(0)
}
