//! Jacobi iterations on an `n`×`n` grid whose every step also transposes it: step `s`
//! writes rows of buffer `(s + 1) % 2` from columns (with a one-cell halo) of buffer
//! `s % 2`, the 4-point average of the source around the transposed cell. Rows of one step
//! need every row band of the step before: on several ranks, an all-to-all exchange each
//! step. The source access is a user closure mapper.
//!
//! Runs unchanged as one process (`cargo run --release -p ember-mpi --example jacobi`) and
//! on N ranks (`cargo build --release -p ember-mpi --features mpi --example jacobi`, then
//! `mpirun -n N target/release/examples/jacobi`). Rank 0 checks the result against a
//! sequential run, bit for bit, and the example exits non-zero if it differs.
//!
//! Flags: `--local` (a one-process flow even under MPI, for comparisons), `--n N` (default
//! 256), `--steps S` (default 50). Every rank prints one line:
//! `jacobi rank=R ranks=P n=N steps=S time_s=T bytes_sent=B messages_sent=M
//! result=HASH`; rank 0 adds `matches_sequential=true`. `time_s` runs from the first
//! submission until the result is back on every rank; `bytes_sent` counts the steps only
//! (not the final read-back).

use std::ops::Range;
use std::process::ExitCode;
use std::time::Instant;

use ember::flow::{map, Buffer, Flow, FlowOptions, Region};

fn init(n: usize, [i, j]: [usize; 2]) -> f64 {
    if i == 0 {
        1.0
    } else {
        ((i * 31 + j * 17) % 97) as f64 / 97.0 * if j == n - 1 { 2.0 } else { 1.0 }
    }
}

fn interior(n: usize, i: usize, j: usize) -> bool {
    i > 0 && j > 0 && i + 1 < n && j + 1 < n
}

/// `dst[i][j]` from `src[j][i]` and its neighbours: the same expression in the flow and in
/// the sequential run.
fn average(up: f64, down: f64, left: f64, right: f64) -> f64 {
    0.25 * (up + down + left + right)
}

fn sequential(n: usize, steps: usize) -> Vec<f64> {
    let mut src: Vec<f64> = (0..n * n).map(|k| init(n, [k / n, k % n])).collect();
    for _ in 0..steps {
        src = (0..n * n)
            .map(|k| {
                let (i, j) = (k / n, k % n);
                let at = |r: usize, c: usize| src[r * n + c];
                if interior(n, j, i) {
                    average(at(j - 1, i), at(j + 1, i), at(j, i - 1), at(j, i + 1))
                } else {
                    at(j, i)
                }
            })
            .collect();
    }
    src
}

/// Submits every step; returns the buffer that holds the final grid.
fn simulate(flow: &Flow, n: usize, steps: usize) -> Buffer<f64, 2> {
    let bufs = [
        Buffer::new(flow, [n, n], |p| init(n, p)),
        Buffer::new(flow, [n, n], |_| 0.0),
    ];
    for s in 0..steps {
        let (src, dst) = (&bufs[s % 2], &bufs[(s + 1) % 2]);
        flow.submit(|cg| {
            // Rows `rows` of dst come from columns `rows` (and one on each side) of src.
            let columns = map::from_fn(move |[rows, _]: [Range<usize>; 2]| {
                Region::neighbourhood([0..n, rows], [1, 1])
            });
            let src = src.read(cg, columns);
            let dst = dst.write(cg, map::one_to_one());
            cg.label("jacobi step").parallel_for([n, n], move |chunk| {
                let (src, mut dst) = (chunk.read(&src), chunk.write(&dst));
                for [i, j] in chunk.items() {
                    dst[[i, j]] = if interior(n, j, i) {
                        average(
                            src[[j - 1, i]],
                            src[[j + 1, i]],
                            src[[j, i - 1]],
                            src[[j, i + 1]],
                        )
                    } else {
                        src[[j, i]]
                    };
                }
            });
        })
        .expect("submitting a step");
    }
    bufs[steps % 2].clone()
}

fn flag(name: &str, default: usize) -> usize {
    let args: Vec<String> = std::env::args().collect();
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1))
        .map(|v| {
            v.parse()
                .unwrap_or_else(|_| panic!("{name} takes a number"))
        })
        .unwrap_or(default)
}

/// FNV-1a over the bits of every value: one number to compare runs by.
fn hash(values: &[f64]) -> u64 {
    values.iter().fold(0xcbf2_9ce4_8422_2325, |h, v| {
        v.to_bits()
            .to_le_bytes()
            .iter()
            .fold(h, |h, b| (h ^ *b as u64).wrapping_mul(0x100_0000_01b3))
    })
}

fn main() -> ExitCode {
    let (n, steps) = (flag("--n", 256), flag("--steps", 50));
    let world = ember_mpi::World::init().expect("starting MPI");
    // `--local`: a plain one-process flow, whatever the build (what the lab compares with).
    let local = std::env::args().any(|a| a == "--local");
    let pool = ember_mpi::rank_pool(if local { 1 } else { world.ranks() });
    let flow = if local {
        Flow::new(&pool, FlowOptions::default())
    } else {
        world.flow(&pool, FlowOptions::default())
    };
    let start = Instant::now();
    let last = simulate(&flow, n, steps);
    if let Err(e) = flow.wait() {
        eprintln!("rank {}: {e}", world.rank());
        return ExitCode::FAILURE;
    }
    let stats = flow.transfer_stats();
    let result = match flow.read_back(&last) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("rank {}: {e}", world.rank());
            return ExitCode::FAILURE;
        }
    };
    let time = start.elapsed().as_secs_f64();
    let mut line = format!(
        "jacobi rank={} ranks={} n={n} steps={steps} time_s={time:.6} bytes_sent={} \
         messages_sent={} result={:016x}",
        world.rank(),
        world.ranks(),
        stats.bytes_sent,
        stats.messages_sent,
        hash(&result)
    );
    let mut ok = true;
    if world.rank() == 0 {
        ok = result
            .iter()
            .map(|v| v.to_bits())
            .eq(sequential(n, steps).iter().map(|v| v.to_bits()));
        line += &format!(" matches_sequential={ok}");
    }
    println!("{line}");
    drop(flow);
    if ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
