//! `flow-mpi`: ember's flow with data-owning buffers and range kernels, on one process and
//! on several MPI ranks.
//!
//! # One process: range kernels against `run` closures (`params.workload` = `"range-kernels"`)
//!
//! wave_sim (a `n`×`n` grid, an initial step and `steps` steps; each reads a one-cell
//! neighbourhood of the current buffer and reads and writes the previous one) and jacobi
//! (`steps` steps, each writing rows of one buffer from columns, with a halo, of the
//! other) computed two ways on one pool of `cores` workers:
//!
//! - `range-kernels`: [`Buffer`]s that own the grids, one `parallel_for` per step with
//!   range-mapped accessors; the flow cuts each step into one chunk per worker.
//! - `run-closures`: the same work by hand: grids of `f64` bits the experiment owns
//!   (`Arc<[AtomicU64]>`), one `run` task per row band (one band per worker) declaring the
//!   same regions on `BufferId`s.
//!
//! Both compute every cell with the same expression; each run's result is compared, bit for
//! bit, with a sequential run made once per group. **Timed** (`run_s`): from the first
//! submission until the final grid is back on the host (`read_back`, or `wait` and a copy).
//! The grids are made and initialised before the clock starts. Each row gets
//! `run_vs_run_closures`, its time over `run-closures`' in the same round, with a 95 %
//! confidence interval: the target is a ratio whose interval includes 1 or lies below it.
//!
//! # Several ranks (`params.workload` = `"mpi"`, only when `mpirun` is on `PATH`)
//!
//! The examples of `ember-mpi` (`wave_sim`, `jacobi`), built with its `mpi` feature by the
//! experiment itself (`cargo build --release -p ember-mpi --features mpi --examples` in the
//! lab's target folder, before anything is measured), run end to end:
//!
//! - `one-process`: the example with `--local`, started directly: a plain one-process flow
//!   on a pool of `cores` workers;
//! - `mpi-1`, `mpi-2`, `mpi-4`: under `mpirun --oversubscribe --bind-to none -n P`, each
//!   rank with `max(1, cores / P)` workers. Unbound like the one-process row: by default
//!   mpirun binds each rank to one core, which on a machine shared with other work changed
//!   the time more than the flow does (a rank of 2 workers bound to one core ran wave_sim
//!   2.3× faster than the same process unbound, on a loaded machine).
//!
//! `time_s` is the example's own time, from its first submission until the result is back
//! on every rank, as rank 0 reports it (MPI's start-up is not in it; the harness's `wall_s`
//! has it). Rank 0 checks the result against a sequential run, bit for bit; a run that
//! differs fails the experiment. Each row also gets `time_vs_one_process`, paired per
//! round.
//!
//! **Bytes moved per step** (`bytes_per_step`): what all ranks sent, over the steps that
//! exchange data (the final read-back is not counted). `min_bytes_per_step` is what the
//! declared accesses imply at the least, with `P` ranks whose parts are row bands `R_r`
//! (sizes `⌊n/P⌋` or `⌈n/P⌉`), 8-byte cells:
//!
//! - wave_sim: every step after the initial one reads one row beyond each side of its band,
//!   written by the neighbour in the step before: `2 (P − 1) n × 8` bytes per step, over
//!   `steps` steps.
//! - jacobi: step `s` reads columns `C_r = R_r` widened by one and clamped, of every row,
//!   of the grid the step before wrote: the rows other ranks wrote must come in,
//!   `Σ_r (n − |R_r|) |C_r| × 8` bytes per step, over `steps − 1` steps (the first reads
//!   the initial grid every rank has).
//!
//! `bytes_vs_min` is their ratio (1: nothing moved that the accesses did not need).
//!
//! With `--quick` the grids are 64×64 with 8 steps; otherwise wave_sim has 100 steps and
//! jacobi 30, on 512×512 grids in one process and 256×256 grids in the MPI groups (whose
//! runs also start processes).

use std::cell::OnceCell;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::rc::Rc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

use ember::flow::{map, Buffer, BufferId, Flow, FlowOptions, Region};
use ember::Pool;

use super::{params, trial};
use crate::experiment::{Experiment, Group, LabOpts, Metrics};
use crate::systems::{Role, System};

const RANGE_KERNELS: &System = &System {
    name: "range-kernels",
    role: Role::Ember,
    about: "ember::flow Buffers and parallel_for range kernels, one chunk per worker",
};
const RUN_CLOSURES: &System = &System {
    name: "run-closures",
    role: Role::Ember,
    about: "ember::flow run tasks on BufferIds, one per row band, over grids the user owns",
};
const ONE_PROCESS: &System = &System {
    name: "one-process",
    role: Role::Ember,
    about: "an ember-mpi example with --local: a one-process flow",
};
const MPI_RANKS: [(usize, &System); 3] = [
    (
        1,
        &System {
            name: "mpi-1",
            role: Role::Ember,
            about: "an ember-mpi example under mpirun -n 1",
        },
    ),
    (
        2,
        &System {
            name: "mpi-2",
            role: Role::Ember,
            about: "an ember-mpi example under mpirun -n 2",
        },
    ),
    (
        4,
        &System {
            name: "mpi-4",
            role: Role::Ember,
            about: "an ember-mpi example under mpirun -n 4",
        },
    ),
];

/// The `flow-mpi` experiment.
pub struct FlowMpi {
    /// Whether to build and run the MPI groups when `mpirun` is on `PATH` (tests turn it off).
    pub mpi: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum App {
    WaveSim,
    Jacobi,
}

impl App {
    fn name(self) -> &'static str {
        match self {
            App::WaveSim => "wave_sim",
            App::Jacobi => "jacobi",
        }
    }

    /// `(n, steps)` at the lab's size: the MPI groups' grids are smaller, since each of
    /// their runs also starts processes.
    fn size(self, quick: bool, mpi: bool) -> (usize, usize) {
        let n = if mpi { 256 } else { 512 };
        match (self, quick) {
            (_, true) => (64, 8),
            (App::WaveSim, false) => (n, 100),
            (App::Jacobi, false) => (n, 30),
        }
    }

    /// Steps that move data, and the least bytes each of them needs on `ranks` ranks.
    fn min_bytes(self, n: usize, steps: usize, ranks: usize) -> (usize, u64) {
        let parts: Vec<(usize, usize)> = (0..ranks)
            .map(|r| (n * r / ranks, n * (r + 1) / ranks))
            .filter(|(lo, hi)| lo < hi)
            .collect();
        match self {
            App::WaveSim => (steps, (2 * parts.len().saturating_sub(1) * n * 8) as u64),
            App::Jacobi => {
                let per_step: usize = parts
                    .iter()
                    .map(|&(lo, hi)| (n - (hi - lo)) * ((hi + 1).min(n) - lo.saturating_sub(1)))
                    .sum();
                (steps.saturating_sub(1), (per_step * 8) as u64)
            }
        }
    }
}

impl Experiment for FlowMpi {
    fn name(&self) -> &'static str {
        "flow-mpi"
    }

    fn headline(&self) -> &'static [&'static str] {
        &["run_s", "time_s", "bytes_per_step", "bytes_vs_min"]
    }

    fn groups(&self, opts: &LabOpts) -> Result<Vec<Group>, String> {
        let mut groups: Vec<Group> = [App::WaveSim, App::Jacobi]
            .into_iter()
            .map(|app| range_group(app, opts))
            .collect();
        if self.mpi && on_path("mpirun") {
            match build_examples() {
                Ok(dir) => {
                    for app in [App::WaveSim, App::Jacobi] {
                        groups.push(mpi_group(app, opts, &dir));
                    }
                }
                // The one-process half still runs; say why the other does not.
                Err(e) => eprintln!("flow-mpi: the MPI groups are left out: {e}"),
            }
        }
        Ok(groups)
    }

    fn paired(&self) -> &'static [(&'static str, &'static str)] {
        &[("run-closures", "run_s"), ("one-process", "time_s")]
    }

    fn rank_by(&self) -> &'static [&'static str] {
        &["run_s", "time_s"]
    }
}

// ---- the kernels, one expression per cell, shared by both ways and the reference ----

const C: f64 = 0.25;

fn wave_init(n: usize, i: usize, j: usize) -> f64 {
    let (x, y) = (i as f64 / n as f64 - 0.5, j as f64 / n as f64 - 0.5);
    (-(x * x + y * y) * 200.0).exp()
}

fn jacobi_init(n: usize, i: usize, j: usize) -> f64 {
    if i == 0 {
        1.0
    } else {
        ((i * 31 + j * 17) % 97) as f64 / 97.0 * if j == n - 1 { 2.0 } else { 1.0 }
    }
}

#[inline(always)]
fn interior(n: usize, i: usize, j: usize) -> bool {
    i > 0 && j > 0 && i + 1 < n && j + 1 < n
}

/// wave_sim's cell `(i, j)` from `u` (current) and `up` (previous), through `get`. Always
/// inlined, into both ways alike: the compiler otherwise inlines it into one and not the other.
#[inline(always)]
fn wave_cell(
    n: usize,
    first: bool,
    i: usize,
    j: usize,
    u: impl Fn(usize, usize) -> f64,
    up: f64,
) -> f64 {
    let c = u(i, j);
    if !interior(n, i, j) {
        return c;
    }
    let lap = u(i - 1, j) + u(i + 1, j) + u(i, j - 1) + u(i, j + 1) - 4.0 * c;
    if first {
        c + 0.5 * C * lap
    } else {
        2.0 * c - up + C * lap
    }
}

/// jacobi's cell `(i, j)` of the destination from the source, through `src` (always
/// inlined, as `wave_cell`).
#[inline(always)]
fn jacobi_cell(n: usize, i: usize, j: usize, src: impl Fn(usize, usize) -> f64) -> f64 {
    if interior(n, j, i) {
        0.25 * (src(j - 1, i) + src(j + 1, i) + src(j, i - 1) + src(j, i + 1))
    } else {
        src(j, i)
    }
}

fn init(app: App, n: usize, i: usize, j: usize) -> f64 {
    match app {
        App::WaveSim => wave_init(n, i, j),
        App::Jacobi => jacobi_init(n, i, j),
    }
}

/// The final grid of a sequential run, as bits.
fn reference(app: App, n: usize, steps: usize) -> Vec<u64> {
    let mut a: Vec<f64> = (0..n * n).map(|k| init(app, n, k / n, k % n)).collect();
    let mut b = vec![0.0; n * n];
    match app {
        App::WaveSim => {
            for s in 0..=steps {
                let next: Vec<f64> = (0..n * n)
                    .map(|k| wave_cell(n, s == 0, k / n, k % n, |i, j| a[i * n + j], b[k]))
                    .collect();
                b = std::mem::replace(&mut a, next);
            }
        }
        App::Jacobi => {
            for _ in 0..steps {
                a = (0..n * n)
                    .map(|k| jacobi_cell(n, k / n, k % n, |i, j| a[i * n + j]))
                    .collect();
            }
        }
    }
    a.iter().map(|v| v.to_bits()).collect()
}

/// The index of the buffer that holds the final grid.
fn last(app: App, steps: usize) -> usize {
    match app {
        App::WaveSim => (steps + 1) % 2,
        App::Jacobi => steps % 2,
    }
}

/// Range kernels: returns the final grid as bits and the time from the first submission.
fn run_range(pool: &Pool, app: App, n: usize, steps: usize) -> (Vec<u64>, f64) {
    let flow = Flow::new(pool, FlowOptions::default());
    let bufs = [
        Buffer::new(&flow, [n, n], |[i, j]| init(app, n, i, j)),
        Buffer::new(&flow, [n, n], |_| 0.0),
    ];
    let start = Instant::now();
    let groups = if app == App::WaveSim {
        steps + 1
    } else {
        steps
    };
    for s in 0..groups {
        let (src, dst) = (&bufs[s % 2], &bufs[(s + 1) % 2]);
        flow.submit(|cg| match app {
            App::WaveSim => {
                let u = src.read(cg, map::neighbourhood([1, 1]));
                let up = if s == 0 {
                    dst.write(cg, map::one_to_one())
                } else {
                    dst.read_write(cg, map::one_to_one())
                };
                cg.parallel_for([n, n], move |chunk| {
                    let (u, mut up) = (chunk.read(&u), chunk.write(&up));
                    let [rows, _] = chunk.range();
                    for i in rows {
                        // Rows as slices: one region check per row, not per element.
                        let here = u.slice([i, 0], n);
                        let (above, below) = if i > 0 && i + 1 < n {
                            (u.slice([i - 1, 0], n), u.slice([i + 1, 0], n))
                        } else {
                            (here, here)
                        };
                        let near = [above, here, below];
                        let out = up.slice_mut([i, 0], n);
                        for (j, cell) in out.iter_mut().enumerate() {
                            let old = if s == 0 { 0.0 } else { *cell };
                            *cell = wave_cell(n, s == 0, i, j, |a, b| near[a + 1 - i][b], old);
                        }
                    }
                });
            }
            App::Jacobi => {
                let columns = map::from_fn(move |[rows, _]: [std::ops::Range<usize>; 2]| {
                    Region::neighbourhood([0..n, rows], [1, 1])
                });
                let src = src.read(cg, columns);
                let dst = dst.write(cg, map::one_to_one());
                cg.parallel_for([n, n], move |chunk| {
                    let (src, mut dst) = (chunk.read(&src), chunk.write(&dst));
                    let [rows, _] = chunk.range();
                    for i in rows {
                        let out = dst.slice_mut([i, 0], n);
                        if i == 0 || i + 1 == n {
                            // Edge columns of the source are copied.
                            for (j, cell) in out.iter_mut().enumerate() {
                                *cell = jacobi_cell(n, i, j, |a, b| src[[a, b]]);
                            }
                            continue;
                        }
                        // The source is read down column i: a window of three rows of
                        // columns i - 1 ..= i + 1, one checked slice per row as it slides.
                        let around = |j: usize| src.slice([j, i - 1], 3);
                        let mut win = [around(0), around(0), around(1.min(n - 1))];
                        for (j, cell) in out.iter_mut().enumerate() {
                            *cell = jacobi_cell(n, i, j, |a, b| win[a + 1 - j][b + 1 - i]);
                            win = [win[1], win[2], around((j + 2).min(n - 1))];
                        }
                    }
                });
            }
        })
        .expect("flow-mpi: submitting a step");
    }
    let out = flow
        .read_back(&bufs[last(app, steps)])
        .expect("flow-mpi: a range kernel failed");
    let time = start.elapsed().as_secs_f64();
    (out.iter().map(|v| v.to_bits()).collect(), time)
}

type Grid = Arc<[AtomicU64]>;

fn get(g: &[AtomicU64], n: usize, i: usize, j: usize) -> f64 {
    f64::from_bits(g[i * n + j].load(Ordering::Relaxed))
}

fn set(g: &[AtomicU64], n: usize, i: usize, j: usize, v: f64) {
    g[i * n + j].store(v.to_bits(), Ordering::Relaxed);
}

/// The same by hand: `run` tasks per row band over grids the caller owns.
fn run_closures(
    pool: &Pool,
    app: App,
    n: usize,
    steps: usize,
    grids: &[Grid; 2],
) -> (Vec<u64>, f64) {
    let flow = Flow::new(pool, FlowOptions::default());
    let ids: [BufferId; 2] = [flow.buffer([n, n]), flow.buffer([n, n])];
    for i in 0..n {
        for j in 0..n {
            set(&grids[0], n, i, j, init(app, n, i, j));
            set(&grids[1], n, i, j, 0.0);
        }
    }
    let bands = pool.threads().max(1).min(n.max(1));
    let start = Instant::now();
    let groups = if app == App::WaveSim {
        steps + 1
    } else {
        steps
    };
    for s in 0..groups {
        let (src, dst) = (s % 2, (s + 1) % 2);
        for k in 0..bands {
            let rows = n * k / bands..n * (k + 1) / bands;
            if rows.is_empty() {
                continue;
            }
            let (a, b) = (grids[src].clone(), grids[dst].clone());
            flow.submit(|cg| {
                match app {
                    App::WaveSim => {
                        cg.read(
                            &ids[src],
                            Region::neighbourhood([rows.clone(), 0..n], [1, 1]),
                        );
                        if s == 0 {
                            cg.write(&ids[dst], [rows.clone(), 0..n]);
                        } else {
                            cg.read_write(&ids[dst], [rows.clone(), 0..n]);
                        }
                    }
                    App::Jacobi => {
                        cg.read(
                            &ids[src],
                            Region::neighbourhood([0..n, rows.clone()], [1, 1]),
                        );
                        cg.write(&ids[dst], [rows.clone(), 0..n]);
                    }
                }
                cg.run(move || {
                    for i in rows {
                        for j in 0..n {
                            let v = match app {
                                App::WaveSim => {
                                    let old = if s == 0 { 0.0 } else { get(&b, n, i, j) };
                                    wave_cell(n, s == 0, i, j, |x, y| get(&a, n, x, y), old)
                                }
                                App::Jacobi => jacobi_cell(n, i, j, |x, y| get(&a, n, x, y)),
                            };
                            set(&b, n, i, j, v);
                        }
                    }
                });
            })
            .expect("flow-mpi: submitting a band");
        }
    }
    flow.wait().expect("flow-mpi: a run closure failed");
    let out: Vec<u64> = grids[last(app, steps)]
        .iter()
        .map(|x| x.load(Ordering::Relaxed))
        .collect();
    (out, start.elapsed().as_secs_f64())
}

fn range_group(app: App, opts: &LabOpts) -> Group {
    let (n, steps) = app.size(opts.quick, false);
    let threads = opts.cores.max(1);
    let expected = Arc::new(reference(app, n, steps));
    // One pool for every run of both rows, built on the first run, as an application keeps
    // one (see the `flow` experiment for why).
    let pool: Rc<OnceCell<Pool>> = Rc::new(OnceCell::new());
    let grids: Arc<[Grid; 2]> = Arc::new([
        (0..n * n).map(|_| AtomicU64::new(0)).collect(),
        (0..n * n).map(|_| AtomicU64::new(0)).collect(),
    ]);
    let mut trials = Vec::new();
    for system in [RANGE_KERNELS, RUN_CLOSURES] {
        let (expected, pool, grids) = (expected.clone(), pool.clone(), grids.clone());
        trials.push(trial(system, move || {
            let pool = pool.get_or_init(|| {
                Pool::builder()
                    .threads(threads)
                    .name("flow-mpi")
                    .build()
                    .expect("ember pool")
            });
            let (got, time) = if system.name == RANGE_KERNELS.name {
                run_range(pool, app, n, steps)
            } else {
                run_closures(pool, app, n, steps, &grids)
            };
            assert!(
                got == *expected,
                "flow-mpi: {} by {} differs from the sequential run",
                app.name(),
                system.name
            );
            let mut m = Metrics::new();
            m.insert("run_s".into(), time);
            m
        }));
    }
    Group {
        title: format!(
            "one process: {} {n}×{n}, {steps} steps, range kernels vs run closures ({threads} workers)",
            app.name()
        ),
        params: params([
            ("workload", "range-kernels".into()),
            ("app", app.name().into()),
            ("n", n.into()),
            ("steps", steps.into()),
        ]),
        trials,
    }
}

fn on_path(program: &str) -> bool {
    std::env::var_os("PATH")
        .is_some_and(|paths| std::env::split_paths(&paths).any(|dir| dir.join(program).is_file()))
}

/// Builds the examples with MPI in the lab's own target folder (ember and its dependencies
/// are built there already, so only MPI's bindings and the examples are new); returns the
/// folder holding them.
fn build_examples() -> Result<PathBuf, String> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    // This binary is `<target>/release/ember-lab`.
    let target = std::env::current_exe()
        .ok()
        .and_then(|exe| Some(exe.parent()?.parent()?.to_path_buf()))
        .unwrap_or_else(|| root.join("target"));
    let out = Command::new(&cargo)
        .current_dir(&root)
        .args([
            "build",
            "--release",
            "-p",
            "ember-mpi",
            "--features",
            "mpi",
            "--examples",
        ])
        .env("CARGO_TARGET_DIR", &target)
        .output()
        .map_err(|e| format!("running {cargo}: {e}"))?;
    if !out.status.success() {
        let stderr = String::from_utf8_lossy(&out.stderr);
        let last = stderr
            .lines()
            .rev()
            .find(|l| !l.trim().is_empty())
            .unwrap_or("");
        return Err(format!("building ember-mpi with MPI failed: {last}"));
    }
    Ok(target.join("release/examples"))
}

/// One line of an example's output, as `key=value` pairs.
fn field(line: &str, key: &str) -> Option<f64> {
    line.split_whitespace()
        .find_map(|w| w.strip_prefix(key)?.strip_prefix('='))
        .and_then(|v| v.parse().ok())
}

fn mpi_group(app: App, opts: &LabOpts, dir: &Path) -> Group {
    let (n, steps) = app.size(opts.quick, true);
    let binary = dir.join(app.name());
    let cores = opts.cores.max(1);
    let mut trials = Vec::new();
    let rows = std::iter::once((0, ONE_PROCESS)).chain(MPI_RANKS);
    for (ranks, system) in rows {
        let binary = binary.clone();
        trials.push(trial(system, move || {
            let args = [
                "--n".to_string(),
                n.to_string(),
                "--steps".into(),
                steps.to_string(),
            ];
            let mut command = if ranks == 0 {
                let mut c = Command::new(&binary);
                c.arg("--local").env("EMBER_NUM_THREADS", cores.to_string());
                c
            } else {
                let mut c = Command::new("mpirun");
                // Unbound, as the one-process row is: mpirun binds a rank to a core by
                // default, and a rank's workers would then share one core.
                c.args([
                    "--allow-run-as-root",
                    "--oversubscribe",
                    "--bind-to",
                    "none",
                ])
                .args(["-n", &ranks.to_string()])
                .arg(&binary)
                .env("EMBER_NUM_THREADS", (cores / ranks).max(1).to_string());
                c
            };
            let out = command
                .args(&args)
                .output()
                .expect("flow-mpi: running an example");
            let stdout = String::from_utf8_lossy(&out.stdout);
            assert!(
                out.status.success(),
                "flow-mpi: {} on {ranks} rank(s) failed: {stdout}{}",
                app.name(),
                String::from_utf8_lossy(&out.stderr)
            );
            let lines: Vec<&str> = stdout
                .lines()
                .filter(|l| l.starts_with(app.name()))
                .collect();
            let rank0 = lines
                .iter()
                .find(|l| l.contains(" rank=0 "))
                .expect("flow-mpi: rank 0's line");
            assert!(
                rank0.contains("matches_sequential=true"),
                "flow-mpi: {} on {ranks} rank(s) differs from the sequential run",
                app.name()
            );
            let sent: f64 = lines.iter().filter_map(|l| field(l, "bytes_sent")).sum();
            let mut m = Metrics::new();
            m.insert("time_s".into(), field(rank0, "time_s").unwrap_or(f64::NAN));
            let (exchanges, min) = app.min_bytes(n, steps, ranks.max(1));
            let per_step = if exchanges == 0 {
                0.0
            } else {
                sent / exchanges as f64
            };
            m.insert("bytes_per_step".into(), per_step);
            m.insert("min_bytes_per_step".into(), min as f64);
            if min > 0 {
                m.insert("bytes_vs_min".into(), per_step / min as f64);
            }
            m
        }));
    }
    Group {
        title: format!(
            "{} {n}×{n}, {steps} steps end to end: one process vs 1, 2, 4 MPI ranks ({cores} cores)",
            app.name()
        ),
        params: params([
            ("workload", "mpi".into()),
            ("app", app.name().into()),
            ("n", n.into()),
            ("steps", steps.into()),
        ]),
        trials,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn quick() -> LabOpts {
        LabOpts {
            quick: true,
            repeat: 1,
            cores: 2,
        }
    }

    #[test]
    fn both_ways_match_the_sequential_run_at_every_size() {
        let pool = Pool::builder().threads(3).build().unwrap();
        for app in [App::WaveSim, App::Jacobi] {
            for (n, steps) in [(1, 2), (7, 3), (20, 5)] {
                let expected = reference(app, n, steps);
                let grids: [Grid; 2] = [
                    (0..n * n).map(|_| AtomicU64::new(0)).collect(),
                    (0..n * n).map(|_| AtomicU64::new(0)).collect(),
                ];
                assert!(run_range(&pool, app, n, steps).0 == expected, "{app:?} {n}");
                assert!(
                    run_closures(&pool, app, n, steps, &grids).0 == expected,
                    "{app:?} {n}"
                );
            }
        }
    }

    #[test]
    fn quick_groups_run_once() {
        let exp = FlowMpi { mpi: false };
        let groups = exp.groups(&quick()).unwrap();
        assert_eq!(groups.len(), 2);
        for mut g in groups {
            assert_eq!(g.trials.len(), 2);
            for t in &mut g.trials {
                let m = (t.run)();
                assert!(m["run_s"] > 0.0);
            }
        }
    }

    #[test]
    fn the_least_bytes_follow_the_parts() {
        // wave_sim: two halo rows per boundary between parts.
        assert_eq!(App::WaveSim.min_bytes(10, 5, 1), (5, 0));
        assert_eq!(App::WaveSim.min_bytes(10, 5, 4), (5, 2 * 3 * 10 * 8));
        // More ranks than rows: only ranks with a part count.
        assert_eq!(App::WaveSim.min_bytes(3, 5, 4), (5, 2 * 2 * 3 * 8));
        // jacobi on 2 ranks of 5 rows: each needs the other's 5 rows of its 6 columns.
        assert_eq!(App::Jacobi.min_bytes(10, 4, 2), (3, 2 * 5 * 6 * 8));
        assert_eq!(App::Jacobi.min_bytes(10, 4, 1).1, 0);
    }

    #[test]
    fn fields_parse() {
        let line = "jacobi rank=0 ranks=2 time_s=0.5 bytes_sent=96 result=ab";
        assert_eq!(field(line, "time_s"), Some(0.5));
        assert_eq!(field(line, "bytes_sent"), Some(96.0));
        assert_eq!(field(line, "rank"), Some(0.0));
        assert_eq!(field(line, "missing"), None);
    }
}
