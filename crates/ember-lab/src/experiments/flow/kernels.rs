//! The end-to-end kernels of the `flow` experiment: wave_sim and jacobi on shared grids of
//! `f64` stored as bits, so that row-band tasks can write disjoint rows without locks and the
//! result can be compared bit for bit with a sequential run.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// An `n`×`n` grid of `f64` (stored as bits) that the kernels share.
pub(super) type Grid = Arc<[AtomicU64]>;

pub(super) fn grid(n: usize) -> Grid {
    (0..n * n).map(|_| AtomicU64::new(0)).collect()
}

pub(super) fn get(g: &[AtomicU64], n: usize, i: usize, j: usize) -> f64 {
    f64::from_bits(g[i * n + j].load(Ordering::Relaxed))
}

pub(super) fn set(g: &[AtomicU64], n: usize, i: usize, j: usize, v: f64) {
    g[i * n + j].store(v.to_bits(), Ordering::Relaxed);
}

/// wave_sim's initial `u`: a bump in the middle.
pub(super) fn wave_init(n: usize, i: usize, j: usize) -> f64 {
    let (x, y) = (i as f64 / n as f64 - 0.5, j as f64 / n as f64 - 0.5);
    (-(x * x + y * y) * 200.0).exp()
}

const WAVE_C: f64 = 0.25;

pub(super) fn lap(g: &[AtomicU64], n: usize, i: usize, j: usize) -> f64 {
    get(g, n, i - 1, j) + get(g, n, i + 1, j) + get(g, n, i, j - 1) + get(g, n, i, j + 1)
        - 4.0 * get(g, n, i, j)
}

pub(super) fn interior(n: usize, i: usize, j: usize) -> bool {
    i > 0 && j > 0 && i + 1 < n && j + 1 < n
}

/// One wave step over `rows`: `prev` becomes the next state (initial step: from `cur` alone).
pub(super) fn wave_kernel(
    cur: &[AtomicU64],
    prev: &[AtomicU64],
    n: usize,
    rows: std::ops::Range<usize>,
    first: bool,
) {
    for i in rows {
        for j in 0..n {
            let c = get(cur, n, i, j);
            let v = if !interior(n, i, j) {
                c
            } else if first {
                c + 0.5 * WAVE_C * lap(cur, n, i, j)
            } else {
                2.0 * c - get(prev, n, i, j) + WAVE_C * lap(cur, n, i, j)
            };
            set(prev, n, i, j, v);
        }
    }
}

pub(super) fn jacobi_init(n: usize, i: usize, j: usize) -> f64 {
    if i == 0 {
        1.0
    } else {
        ((i * 31 + j * 17) % 97) as f64 / 97.0 * if j == n - 1 { 2.0 } else { 1.0 }
    }
}

/// One jacobi step over rows `rows` of `dst`: the transposed 4-point average of `src`.
pub(super) fn jacobi_kernel(
    src: &[AtomicU64],
    dst: &[AtomicU64],
    n: usize,
    rows: std::ops::Range<usize>,
) {
    for i in rows {
        for j in 0..n {
            // dst[i][j] comes from src[j][i] (column i of src).
            let v = if interior(n, j, i) {
                0.25 * (get(src, n, j - 1, i)
                    + get(src, n, j + 1, i)
                    + get(src, n, j, i - 1)
                    + get(src, n, j, i + 1))
            } else {
                get(src, n, j, i)
            };
            set(dst, n, i, j, v);
        }
    }
}

pub(super) fn fill(
    g: &[AtomicU64],
    n: usize,
    rows: std::ops::Range<usize>,
    f: fn(usize, usize, usize) -> f64,
) {
    for i in rows {
        for j in 0..n {
            set(g, n, i, j, f(n, i, j));
        }
    }
}

pub(super) fn bits(g: &[AtomicU64]) -> Vec<u64> {
    g.iter().map(|x| x.load(Ordering::Relaxed)).collect()
}
