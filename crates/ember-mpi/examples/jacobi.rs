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
//! Flags and the line every rank prints: `common/driver.rs` (defaults: `--n 256 --steps 50`).

use std::ops::Range;
use std::process::ExitCode;

use ember::flow::{map, Buffer, Flow, Region};

#[path = "common/driver.rs"]
mod driver;

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

fn main() -> ExitCode {
    driver::run(driver::Example {
        name: "jacobi",
        defaults: (256, 50),
        simulate,
        sequential,
    })
}
