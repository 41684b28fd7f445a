//! The end-to-end half of the `flow` experiment: wave_sim and jacobi with real kernels (in
//! `kernels.rs`), each run checked against a sequential reference. See the parent module for
//! what is measured and why the grids and the pool are shared.

use std::cell::OnceCell;
use std::rc::Rc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use ember::flow::{Flow, Mode};
use ember::Pool;

use super::kernels::{bits, fill, grid, jacobi_init, jacobi_kernel, wave_init, wave_kernel, Grid};
use super::{band, flow_options, jacobi_accesses, wave_accesses, Sizes, Topology, MODES};
use crate::experiment::{Group, Metrics};
use crate::experiments::{params, trial};

/// The final grid of a sequential run.
fn reference(topology: Topology, sizes: Sizes) -> Vec<u64> {
    let n = sizes.grid_n(topology);
    let bufs = [grid(n), grid(n)];
    let last = match topology {
        Topology::WaveSim => {
            fill(&bufs[0], n, 0..n, wave_init);
            for s in 0..=sizes.wave_steps {
                wave_kernel(&bufs[s % 2], &bufs[(s + 1) % 2], n, 0..n, s == 0);
            }
            (sizes.wave_steps + 1) % 2
        }
        _ => {
            fill(&bufs[0], n, 0..n, jacobi_init);
            for s in 0..sizes.jacobi_steps {
                jacobi_kernel(&bufs[s % 2], &bufs[(s + 1) % 2], n, 0..n);
            }
            sizes.jacobi_steps % 2
        }
    };
    bits(&bufs[last])
}

/// What one end-to-end run measured.
struct StencilRun {
    /// The final grid, as bits.
    result: Vec<u64>,
    /// From the first `submit` until `wait` returned.
    run: Duration,
    /// From the first `submit` until the last `submit` returned: the submitting thread's share.
    submit: Duration,
    /// From the first `submit` until the first kernel started.
    first_task: Duration,
}

/// Runs `topology` end to end on `pool` in `mode` with `bands` tasks per step, on the two
/// grids `data` (of the topology's size; whatever they hold is overwritten before it is read).
fn run_stencil(
    pool: &Pool,
    topology: Topology,
    sizes: Sizes,
    mode: Mode,
    bands: usize,
    data: &[Grid; 2],
) -> StencilRun {
    let flow = Flow::new(pool, flow_options(mode));
    let n = sizes.grid_n(topology);
    let (tasks, last) = match topology {
        Topology::WaveSim => (
            wave_accesses(&flow, n, sizes.wave_steps, bands),
            (sizes.wave_steps + 1) % 2,
        ),
        _ => (
            jacobi_accesses(&flow, n, sizes.jacobi_steps, bands),
            sizes.jacobi_steps % 2,
        ),
    };
    debug_assert!(data.iter().all(|g| g.len() == n * n));
    let fills = if topology == Topology::WaveSim { 2 } else { 1 } * bands;
    // Nanoseconds from `start` to the first kernel's start, plus one (0: none started yet).
    let first_start = Arc::new(AtomicU64::new(0));
    let start = Instant::now();
    for (t, task) in tasks.iter().enumerate() {
        let rows = band(n, bands, t % bands);
        let kernel: Box<dyn FnOnce() + Send> = if t < fills {
            // Fill tasks: buffer `t / bands`; wave_sim's `up` starts at zero.
            let g = data[t / bands].clone();
            let f: Option<fn(usize, usize, usize) -> f64> = match (topology, t / bands) {
                (Topology::WaveSim, 0) => Some(wave_init),
                (Topology::WaveSim, _) => None,
                _ => Some(jacobi_init),
            };
            Box::new(move || match f {
                Some(f) => fill(&g, n, rows, f),
                None => fill(&g, n, rows, |_, _, _| 0.0),
            })
        } else {
            let s = (t - fills) / bands;
            let (src, dst) = (data[s % 2].clone(), data[(s + 1) % 2].clone());
            if topology == Topology::WaveSim {
                Box::new(move || wave_kernel(&src, &dst, n, rows, s == 0))
            } else {
                Box::new(move || jacobi_kernel(&src, &dst, n, rows))
            }
        };
        let first_start = first_start.clone();
        flow.submit(|cg| {
            task.declare(cg);
            cg.run(move || {
                if first_start.load(Ordering::Relaxed) == 0 {
                    let at = start.elapsed().as_nanos() as u64 + 1;
                    let _ =
                        first_start.compare_exchange(0, at, Ordering::Relaxed, Ordering::Relaxed);
                }
                kernel()
            });
        })
        .expect("flow: submitting a stencil task");
    }
    let submit = start.elapsed();
    flow.wait().expect("flow: a stencil kernel failed");
    let run = start.elapsed();
    StencilRun {
        result: bits(&data[last]),
        run,
        submit,
        first_task: Duration::from_nanos(first_start.load(Ordering::Relaxed).saturating_sub(1)),
    }
}

/// A pool of `threads` workers each of which has run: it takes one job per worker and
/// holds them all at a barrier, so no worker is still waiting for its first time slice.
fn warmed_pool(threads: usize) -> Pool {
    let pool = Pool::builder()
        .threads(threads)
        .name("flow")
        .build()
        .expect("ember pool");
    let all_running = Barrier::new(threads);
    pool.scope(|s| {
        for _ in 0..threads {
            let all_running = &all_running;
            s.spawn(move |_| {
                all_running.wait();
            });
        }
    });
    pool
}

pub(super) fn group(topology: Topology, sizes: Sizes, threads: usize) -> Group {
    let bands = 2 * threads;
    let expected: Arc<Vec<u64>> = Arc::new(reference(topology, sizes));
    let n = sizes.grid_n(topology);
    // One pair of grids for every run of every mode: each run then works on the same memory,
    // already faulted in, so the page layout (and whether the kernel backs it with huge
    // pages, which matters to jacobi's column reads) is no longer a difference between runs.
    let data = Arc::new([grid(n), grid(n)]);
    // One pool for every run of every mode, built on the group's first run, as an
    // application keeps one. A pool built just before a run has workers the operating system
    // has not yet run, and where those land decided when the first kernel started: up to
    // 2 ms late, for whichever mode happened to hold both cores at that moment.
    let pool: Rc<OnceCell<Pool>> = Rc::new(OnceCell::new());
    let trials = MODES
        .iter()
        .map(|&(mode, system)| {
            let expected = expected.clone();
            let data = data.clone();
            let pool = pool.clone();
            trial(system, move || {
                let pool = pool.get_or_init(|| warmed_pool(threads));
                let run = run_stencil(pool, topology, sizes, mode, bands, &data);
                assert!(
                    run.result == *expected,
                    "flow: {} in {} mode differs from the sequential reference",
                    topology.name(),
                    system.name
                );
                let mut m = Metrics::new();
                m.insert("run_s".into(), run.run.as_secs_f64());
                m.insert("submit_s".into(), run.submit.as_secs_f64());
                m.insert("first_task_s".into(), run.first_task.as_secs_f64());
                m
            })
        })
        .collect();
    Group {
        title: format!(
            "end to end: {} ({n}×{n}, {bands} row bands per step), immediate submission",
            topology.name()
        ),
        params: params([
            ("topology", topology.name().into()),
            ("submission", "immediate".into()),
            ("workload", "end-to-end".into()),
            ("bands", bands.into()),
        ]),
        trials,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn end_to_end_matches_the_reference_in_every_mode() {
        let sizes = Sizes {
            wave_n: 40,
            wave_steps: 7,
            jacobi_n: 33,
            jacobi_steps: 5,
        };
        let pool = Pool::builder().threads(3).build().unwrap();
        for topology in [Topology::WaveSim, Topology::Jacobi] {
            let expected = reference(topology, sizes);
            let n = sizes.grid_n(topology);
            // Reused across runs, as the experiment does: a run must not depend on what the
            // previous one left in the grids.
            let data = [grid(n), grid(n)];
            for (mode, _) in MODES {
                for bands in [1, 3, 8] {
                    let got = run_stencil(&pool, topology, sizes, mode, bands, &data).result;
                    assert!(got == expected, "{topology:?} {mode:?} {bands}");
                }
            }
        }
    }
}
