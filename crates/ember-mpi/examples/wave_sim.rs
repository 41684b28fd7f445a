//! A 2-D wave equation on an `n`×`n` grid (Celerity's wave_sim): two buffers `u` and `up`,
//! an initial step, then `steps` steps, each reading a one-cell neighbourhood of the current
//! buffer and reading and writing the previous one, which becomes the next.
//!
//! Runs unchanged as one process (`cargo run --release -p ember-mpi --example wave_sim`) and
//! on N ranks (`cargo build --release -p ember-mpi --features mpi --example wave_sim`, then
//! `mpirun -n N target/release/examples/wave_sim`). Rank 0 checks the result against a
//! sequential run, bit for bit, and the example exits non-zero if it differs.
//!
//! Flags and the line every rank prints: `common/driver.rs` (defaults: `--n 256 --steps 100`).

use std::process::ExitCode;

use ember::flow::{map, Buffer, Flow};

#[path = "common/driver.rs"]
mod driver;

const C: f64 = 0.25;

fn init(n: usize, [i, j]: [usize; 2]) -> f64 {
    let (x, y) = (i as f64 / n as f64 - 0.5, j as f64 / n as f64 - 0.5);
    (-(x * x + y * y) * 200.0).exp()
}

fn interior(n: usize, i: usize, j: usize) -> bool {
    i > 0 && j > 0 && i + 1 < n && j + 1 < n
}

/// One cell of one step, from the current value `c`, its four neighbours and the previous
/// value: the same expression in the flow and in the sequential run.
fn cell(first: bool, c: f64, up: f64, down: f64, left: f64, right: f64, prev: f64) -> f64 {
    let lap = up + down + left + right - 4.0 * c;
    if first {
        c + 0.5 * C * lap
    } else {
        2.0 * c - prev + C * lap
    }
}

fn sequential(n: usize, steps: usize) -> Vec<f64> {
    let mut u: Vec<f64> = (0..n * n).map(|k| init(n, [k / n, k % n])).collect();
    let mut up = vec![0.0; n * n];
    for s in 0..=steps {
        let next: Vec<f64> = (0..n * n)
            .map(|k| {
                let (i, j) = (k / n, k % n);
                if !interior(n, i, j) {
                    u[k]
                } else {
                    cell(s == 0, u[k], u[k - n], u[k + n], u[k - 1], u[k + 1], up[k])
                }
            })
            .collect();
        up = std::mem::replace(&mut u, next);
    }
    u
}

/// Submits the whole simulation; returns the buffer that holds the final state.
fn simulate(flow: &Flow, n: usize, steps: usize) -> Buffer<f64, 2> {
    let bufs = [
        Buffer::new(flow, [n, n], |p| init(n, p)),
        Buffer::new(flow, [n, n], |_| 0.0),
    ];
    for s in 0..=steps {
        let (cur, prev) = (&bufs[s % 2], &bufs[(s + 1) % 2]);
        flow.submit(|cg| {
            let cur = cur.read(cg, map::neighbourhood([1, 1]));
            let prev = if s == 0 {
                prev.write(cg, map::one_to_one())
            } else {
                prev.read_write(cg, map::one_to_one())
            };
            cg.label(if s == 0 { "initial step" } else { "step" })
                .parallel_for([n, n], move |chunk| {
                    let (u, mut up) = (chunk.read(&cur), chunk.write(&prev));
                    for [i, j] in chunk.items() {
                        up[[i, j]] = if !interior(n, i, j) {
                            u[[i, j]]
                        } else {
                            let old = if s == 0 { 0.0 } else { up[[i, j]] };
                            cell(
                                s == 0,
                                u[[i, j]],
                                u[[i - 1, j]],
                                u[[i + 1, j]],
                                u[[i, j - 1]],
                                u[[i, j + 1]],
                                old,
                            )
                        };
                    }
                });
        })
        .expect("submitting a step");
    }
    bufs[(steps + 1) % 2].clone()
}

fn main() -> ExitCode {
    driver::run(driver::Example {
        name: "wave_sim",
        defaults: (256, 100),
        simulate,
        sequential,
    })
}
