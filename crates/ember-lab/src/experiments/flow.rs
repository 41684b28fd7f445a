//! `flow`: task-graph generation in the three scheduler modes of [`ember::flow`] (after
//! Celerity runtime PR #111, "Improve scheduler performance by reducing lock contention").
//!
//! A flow infers the task graph from declared accesses. Where that analysis runs decides how
//! much it costs the submitting thread and how soon tasks can start: inline on the submitter,
//! on a scheduler thread that holds the submission lock while it analyses (`lockstep`, the
//! baseline), or on a scheduler thread that swaps two submission buffers and analyses without
//! the lock (`double-buffered`). This experiment measures that cost on the published
//! task-graph topologies, and runs two of them end to end with real kernels.
//!
//! # Topologies
//!
//! - `soup`: 100 independent tasks, task `i` writing column `i` of a 100×100 buffer.
//! - `chain`: 30 tasks on one 64×64 buffer, each reading it transposed and writing it
//!   one-to-one (every task depends on the previous one).
//! - `expanding_tree`: 31 tasks, a binary tree of breadth 16: one buffer of 1024 per level, the
//!   root writes level 0, node `j` of level `l` reads its parent's chunk of level `l - 1` and
//!   writes its own chunk of level `l`.
//! - `contracting_tree`: the same tree upside down: 16 leaves write their chunks of the
//!   deepest level, node `j` of level `l` reads its two children's chunks of level `l + 1`.
//! - `wave_sim`: a 512×512 grid (`u`, `up`): 2 fills, 1 initial step, then 200 stencil steps
//!   on alternating buffers (step reads a neighbourhood of the current buffer, reads and
//!   writes the previous one, which becomes the next).
//! - `jacobi`: an `N`×`N` grid, `N` = 1024, 1 init and 50 steps on alternating buffers; a step
//!   reads the source by columns (with a halo) and writes the destination by rows: the
//!   destination is the transposed 4-point average of the source, so rows of one step depend
//!   on every row band of the step before (an all-to-all pattern).
//!
//! For graph generation every topology has exactly the task counts above (one task per step
//! for `wave_sim` and `jacobi`). With `--quick`: `wave_sim` 128×128 and 20 steps, `jacobi`
//! `N` = 128 and 10 steps; the other topologies keep their size.
//!
//! # Graph generation (`params.workload` = `"generation"`)
//!
//! One group per topology × submission; its rows are the three modes (`system` = `inline`,
//! `lockstep`, `double-buffered`). Kernels are empty. One run of a row builds a pool of
//! `cores` threads and then, at least `reps` times (50; `--quick` 5) and until 60 ms have
//! passed (so that a run measures something however small the topology), creates a fresh [`Flow`]
//! (`horizon_every` at its default), submits the whole topology and calls [`Flow::wait`].
//! **Timed**: from just before the first `submit` until `wait` returns, i.e. until the
//! scheduler has analysed and spawned every task and the (empty) tasks have run. Creating the
//! flow (and its scheduler thread) and dropping it are not timed. The run reports the median
//! over its `reps` as `generation_s`, and the median [`FlowStats::analysis_ns`](ember::flow::FlowStats::analysis_ns) as
//! `analysis_s` (time inside the analysis itself, wherever it ran).
//!
//! Submission: `immediate` submits back to back; `throttled` submits one task per 10 µs,
//! task `i` no earlier than `10 µs × i` after the first, by busy-waiting on the clock (a
//! sleep of 10 µs overshoots by far more than 10 µs on most kernels).
//!
//! # End to end (`params.workload` = `"end-to-end"`)
//!
//! `wave_sim` and `jacobi` with real kernels on `f64` grids that the experiment owns
//! (`Arc<[AtomicU64]>` holding `f64` bits; the flow's dependencies order every access, so
//! relaxed loads and stores suffice). Every step is split into `2 × cores` row bands, one task
//! each, so the modes also differ in how soon the pool gets work. Submission is immediate.
//! Each run reports, all measured from the first submit:
//!
//! - `run_s`: until `wait` returns;
//! - `submit_s`: until the last `submit` returns, i.e. how long the submitting thread is
//!   held (building the tasks, and in `inline` mode analysing them);
//! - `first_task_s`: until the first kernel starts.
//!
//! The two grids and a pool of `cores` threads are made once per group and shared by every
//! run of every mode, as an application keeps them: each run works on the same, already
//! faulted-in memory, and on workers that have all run before (a pool built just before a
//! run has threads the operating system has not scheduled yet, and where those land shifted
//! the first kernel by up to 2 ms, for one mode or another). The pool is built by the group's
//! first run, outside its `run_s` but inside the harness's `wall_s` and `cpu_s` for that one
//! run; the medians over the rounds do not see it. Each run overwrites the grids
//! before reading them, and its result is compared with a sequential reference computed once
//! per group, with `assert!` and exact equality: every cell is computed by the same expression
//! in the same order in both. A run lasts 0.1–0.3 s and on a shared machine its time wanders
//! by more than the modes differ, so without an explicit `--repeat` the experiment runs
//! [`DEFAULT_ROUNDS`] rounds instead of the lab's default 9; `--flow-workload end-to-end`
//! runs this half alone, for long series.
//!
//! # Reading the tables
//!
//! The target is `double-buffered` faster than `lockstep` on every topology, and not slower
//! than `inline` end to end. Besides each mode's median, every row has the *paired* ratios
//! `generation_vs_lockstep` and `run_vs_inline`: per round, its time over the reference
//! mode's time in the same round (the rounds run the three modes back to back, in an order
//! shuffled each round), so drift of the machine between rounds cancels; their median, with
//! its 95 % confidence interval, is the comparison the target is read from.

mod end_to_end;
mod kernels;

use std::time::{Duration, Instant};

use clap::{Args, ValueEnum};
use ember::flow::{BufferId, Flow, FlowOptions, Mode, Region};
use ember::Pool;

use super::{params, trial};
use crate::experiment::{Experiment, Group, LabOpts, Metrics};
use crate::metrics::stats::median;
use crate::systems::{self, System};

/// The two halves of the experiment.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Workload {
    /// Graph generation: empty kernels, every topology, immediate and throttled.
    Generation,
    /// wave_sim and jacobi with real kernels.
    EndToEnd,
}

/// The `flow` experiment's flags.
#[derive(Args, Clone, Debug, Default)]
pub struct FlowArgs {
    /// flow: which workloads to run [default: generation,end-to-end]
    #[arg(
        long = "flow-workload",
        value_name = "W,..",
        value_enum,
        value_delimiter = ','
    )]
    pub workloads: Vec<Workload>,
}

/// The `flow` experiment.
pub struct FlowExp {
    pub args: FlowArgs,
    /// Whether `--repeat` was given; if not, the experiment runs [`DEFAULT_ROUNDS`] rounds.
    pub repeat_given: bool,
}

impl FlowExp {
    fn runs(&self, workload: Workload) -> bool {
        self.args.workloads.is_empty() || self.args.workloads.contains(&workload)
    }
}

/// Rounds of every group when `--repeat` is not given (and not `--quick`).
pub const DEFAULT_ROUNDS: usize = 15;

/// Repetitions inside one run of a generation row, at least (the run reports their median).
const REPS: usize = 50;
/// A generation run repeats until it has lasted this long (and made `REPS` repetitions).
const RUN_AT_LEAST: Duration = Duration::from_millis(60);
/// The same with `--quick`.
const REPS_QUICK: usize = 5;
/// Gap between submissions when throttled.
const THROTTLE: Duration = Duration::from_micros(10);

impl Experiment for FlowExp {
    fn name(&self) -> &'static str {
        crate::tables::experiment::FLOW
    }

    fn headline(&self) -> &'static [&'static str] {
        &["generation_s", "run_s", "first_task_s", "submit_s"]
    }

    fn groups(&self, opts: &LabOpts) -> Result<Vec<Group>, String> {
        let sizes = Sizes::new(opts.quick);
        let reps = if opts.quick { REPS_QUICK } else { REPS };
        let threads = opts.cores.max(1);
        let mut groups = Vec::new();
        if self.runs(Workload::Generation) {
            for topology in Topology::ALL {
                for throttled in [false, true] {
                    groups.push(generation_group(topology, sizes, throttled, reps, threads));
                }
            }
        }
        if self.runs(Workload::EndToEnd) {
            for topology in [Topology::WaveSim, Topology::Jacobi] {
                groups.push(end_to_end::group(topology, sizes, threads));
            }
        }
        Ok(groups)
    }

    fn repeat(&self, opts: &LabOpts) -> usize {
        if self.repeat_given || opts.quick {
            opts.repeat
        } else {
            DEFAULT_ROUNDS
        }
    }

    fn paired(&self) -> &'static [(&'static str, &'static str)] {
        &[("lockstep", "generation_s"), ("inline", "run_s")]
    }

    fn rank_by(&self) -> &'static [&'static str] {
        &["generation_s", "run_s"]
    }
}

/// The modes compared, with their `system` names.
const MODES: [(Mode, &System); 3] = [
    (Mode::Inline, systems::FLOW_INLINE),
    (Mode::Lockstep, systems::FLOW_LOCKSTEP),
    (Mode::DoubleBuffered, systems::FLOW_DOUBLE_BUFFERED),
];

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Topology {
    Soup,
    Chain,
    ExpandingTree,
    ContractingTree,
    WaveSim,
    Jacobi,
}

impl Topology {
    const ALL: [Topology; 6] = [
        Topology::Soup,
        Topology::Chain,
        Topology::ExpandingTree,
        Topology::ContractingTree,
        Topology::WaveSim,
        Topology::Jacobi,
    ];

    fn name(self) -> &'static str {
        match self {
            Topology::Soup => "soup",
            Topology::Chain => "chain",
            Topology::ExpandingTree => "expanding_tree",
            Topology::ContractingTree => "contracting_tree",
            Topology::WaveSim => crate::tables::value::WAVE_SIM,
            Topology::Jacobi => "jacobi",
        }
    }
}

/// Sizes of the topologies that `--quick` shrinks.
#[derive(Clone, Copy, Debug)]
struct Sizes {
    wave_n: usize,
    wave_steps: usize,
    jacobi_n: usize,
    jacobi_steps: usize,
}

impl Sizes {
    /// The side of the end-to-end grids of `topology` (`wave_sim` or `jacobi`).
    fn grid_n(&self, topology: Topology) -> usize {
        match topology {
            Topology::WaveSim => self.wave_n,
            _ => self.jacobi_n,
        }
    }

    fn new(quick: bool) -> Sizes {
        if quick {
            Sizes {
                wave_n: 128,
                wave_steps: 20,
                jacobi_n: 128,
                jacobi_steps: 10,
            }
        } else {
            Sizes {
                wave_n: 512,
                wave_steps: 200,
                jacobi_n: 1024,
                jacobi_steps: 50,
            }
        }
    }
}

const SOUP_TASKS: usize = 100;
const CHAIN_TASKS: usize = 30;
const CHAIN_N: usize = 64;
/// Leaves of the trees (31 tasks in all).
const TREE_BREADTH: usize = 16;
const TREE_EXTENT: usize = 1024;

/// One task of a topology: its accesses, without a kernel.
type Decl = Box<dyn Fn(&mut ember::flow::CommandGroup)>;

/// The tasks of `topology` in submission order, declared on `flow`'s buffers (one task per
/// step for the stencils).
fn declarations(flow: &Flow, topology: Topology, sizes: Sizes) -> Vec<Decl> {
    let mut tasks: Vec<Decl> = Vec::new();
    match topology {
        Topology::Soup => {
            let b = flow.buffer([SOUP_TASKS, SOUP_TASKS]);
            for i in 0..SOUP_TASKS {
                tasks.push(Box::new(move |cg| {
                    cg.write(&b, [0..SOUP_TASKS, i..i + 1]);
                }));
            }
        }
        Topology::Chain => {
            let b = flow.buffer([CHAIN_N, CHAIN_N]);
            for _ in 0..CHAIN_TASKS {
                tasks.push(Box::new(move |cg| {
                    cg.read(&b, Region::transposed([0..CHAIN_N, 0..CHAIN_N]))
                        .write(&b, Region::one_to_one([0..CHAIN_N, 0..CHAIN_N]));
                }));
            }
        }
        Topology::ExpandingTree | Topology::ContractingTree => {
            let levels = TREE_BREADTH.trailing_zeros() as usize + 1;
            let bufs: Vec<BufferId> = (0..levels).map(|_| flow.buffer([TREE_EXTENT])).collect();
            let chunk = |level: usize, j: usize| {
                let w = TREE_EXTENT >> level;
                j * w..(j + 1) * w
            };
            let order: Vec<usize> = if topology == Topology::ExpandingTree {
                (0..levels).collect()
            } else {
                (0..levels).rev().collect()
            };
            for level in order {
                for j in 0..1usize << level {
                    let own = bufs[level];
                    let input = if topology == Topology::ExpandingTree {
                        level.checked_sub(1).map(|p| (bufs[p], chunk(p, j / 2)))
                    } else {
                        // Both children's chunks are this node's chunk of the level below.
                        bufs.get(level + 1).map(|&c| (c, chunk(level, j)))
                    };
                    let out = chunk(level, j);
                    tasks.push(Box::new(move |cg| {
                        if let Some((buf, range)) = &input {
                            cg.read(buf, range.clone());
                        }
                        cg.write(&own, out.clone());
                    }));
                }
            }
        }
        Topology::WaveSim => {
            for access in wave_accesses(flow, sizes.wave_n, sizes.wave_steps, 1) {
                tasks.push(Box::new(move |cg| access.declare(cg)));
            }
        }
        Topology::Jacobi => {
            for access in jacobi_accesses(flow, sizes.jacobi_n, sizes.jacobi_steps, 1) {
                tasks.push(Box::new(move |cg| access.declare(cg)));
            }
        }
    }
    tasks
}

/// The accesses of one stencil task.
#[derive(Clone, Debug)]
struct StencilTask {
    /// `(buffer, region)` read.
    read: Option<(BufferId, Region)>,
    /// `(buffer, region)` read and written (`rw`) or only written.
    write: (BufferId, Region),
    rw: bool,
}

impl StencilTask {
    fn declare(&self, cg: &mut ember::flow::CommandGroup) {
        if let Some((b, r)) = &self.read {
            cg.read(b, r.clone());
        }
        if self.rw {
            cg.read_write(&self.write.0, self.write.1.clone());
        } else {
            cg.write(&self.write.0, self.write.1.clone());
        }
    }
}

/// Row band `k` of `bands` over `0..n`.
fn band(n: usize, bands: usize, k: usize) -> std::ops::Range<usize> {
    n * k / bands..n * (k + 1) / bands
}

/// wave_sim's tasks, `bands` per step: buffers `u` (0) and `up` (1).
fn wave_accesses(flow: &Flow, n: usize, steps: usize, bands: usize) -> Vec<StencilTask> {
    let bufs = [flow.buffer([n, n]), flow.buffer([n, n])];
    let mut out = Vec::new();
    for b in bufs {
        for k in 0..bands {
            out.push(StencilTask {
                read: None,
                write: (b, Region::one_to_one([band(n, bands, k), 0..n])),
                rw: false,
            });
        }
    }
    // Step `s` (0 is the initial step) writes buffer `(s + 1) % 2` from buffer `s % 2`.
    for s in 0..=steps {
        let (cur, prev) = (bufs[s % 2], bufs[(s + 1) % 2]);
        for k in 0..bands {
            let rows = band(n, bands, k);
            out.push(StencilTask {
                read: Some((cur, Region::neighbourhood([rows.clone(), 0..n], [1, 1]))),
                write: (prev, Region::one_to_one([rows, 0..n])),
                rw: s > 0,
            });
        }
    }
    out
}

/// jacobi's tasks, `bands` per step: step `s` writes buffer `(s + 1) % 2` from `s % 2`.
fn jacobi_accesses(flow: &Flow, n: usize, steps: usize, bands: usize) -> Vec<StencilTask> {
    let bufs = [flow.buffer([n, n]), flow.buffer([n, n])];
    let mut out = Vec::new();
    for k in 0..bands {
        out.push(StencilTask {
            read: None,
            write: (bufs[0], Region::one_to_one([band(n, bands, k), 0..n])),
            rw: false,
        });
    }
    for s in 0..steps {
        let (src, dst) = (bufs[s % 2], bufs[(s + 1) % 2]);
        for k in 0..bands {
            let rows = band(n, bands, k);
            // Rows `rows` of dst are columns `rows` (with a halo) of src, transposed.
            out.push(StencilTask {
                read: Some((src, Region::neighbourhood([0..n, rows.clone()], [1, 1]))),
                write: (dst, Region::one_to_one([rows, 0..n])),
                rw: false,
            });
        }
    }
    out
}

fn flow_options(mode: Mode) -> FlowOptions {
    FlowOptions {
        mode,
        ..FlowOptions::default()
    }
}

fn generation_group(
    topology: Topology,
    sizes: Sizes,
    throttled: bool,
    reps: usize,
    threads: usize,
) -> Group {
    let submission = if throttled {
        "throttled"
    } else {
        crate::tables::value::IMMEDIATE
    };
    let tasks = {
        let pool = Pool::builder().threads(1).build().expect("ember pool");
        let flow = Flow::new(&pool, flow_options(Mode::Inline));
        declarations(&flow, topology, sizes).len()
    };
    let trials = MODES
        .iter()
        .map(|&(mode, system)| {
            trial(system, move || {
                run_generation(topology, sizes, mode, throttled, reps, threads)
            })
        })
        .collect();
    Group {
        title: format!(
            "graph generation: {} ({tasks} tasks), {submission} submission, median of ≥ {reps}",
            topology.name()
        ),
        params: params([
            (crate::tables::key::TOPOLOGY, topology.name().into()),
            (crate::tables::key::SUBMISSION, submission.into()),
            (
                crate::tables::key::WORKLOAD,
                crate::tables::workload::GENERATION.into(),
            ),
            ("tasks", tasks.into()),
        ]),
        trials,
    }
}

/// One run of a generation row: `reps` fresh flows, each given the whole topology.
fn run_generation(
    topology: Topology,
    sizes: Sizes,
    mode: Mode,
    throttled: bool,
    reps: usize,
    threads: usize,
) -> Metrics {
    let pool = Pool::builder()
        .threads(threads)
        .name("flow")
        .build()
        .expect("ember pool");
    let mut generation = Vec::with_capacity(reps);
    let mut analysis = Vec::with_capacity(reps);
    let mut edges = 0;
    let started = Instant::now();
    let min_time = if reps >= REPS {
        RUN_AT_LEAST
    } else {
        Duration::ZERO
    };
    while generation.len() < reps || started.elapsed() < min_time {
        let flow = Flow::new(&pool, flow_options(mode));
        let tasks = declarations(&flow, topology, sizes);
        let start = Instant::now();
        for (i, decl) in tasks.iter().enumerate() {
            if throttled {
                let due = start + THROTTLE * i as u32;
                while Instant::now() < due {
                    std::hint::spin_loop();
                }
            }
            flow.submit(|cg| {
                decl(cg);
                cg.run(|| {});
            })
            .expect("flow: submitting a generation task");
        }
        flow.wait().expect("flow: an empty task failed");
        generation.push(start.elapsed().as_secs_f64());
        drop(tasks);
        let stats = flow.stats();
        assert_eq!(stats.tasks as usize, tasks_len(topology, sizes));
        edges = stats.edges;
        drop(flow);
        analysis.push(stats.analysis_ns as f64 * 1e-9);
    }
    let mut m = Metrics::new();
    m.insert("generation_s".into(), median(&generation));
    m.insert("analysis_s".into(), median(&analysis));
    m.insert("edges".into(), edges as f64);
    m
}

/// Tasks of a topology at generation size.
fn tasks_len(topology: Topology, sizes: Sizes) -> usize {
    match topology {
        Topology::Soup => SOUP_TASKS,
        Topology::Chain => CHAIN_TASKS,
        Topology::ExpandingTree | Topology::ContractingTree => 2 * TREE_BREADTH - 1,
        Topology::WaveSim => 3 + sizes.wave_steps,
        Topology::Jacobi => 1 + sizes.jacobi_steps,
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

    fn exp(workloads: &[Workload]) -> FlowExp {
        FlowExp {
            args: FlowArgs {
                workloads: workloads.to_vec(),
            },
            repeat_given: false,
        }
    }

    #[test]
    fn quick_groups_build_and_run_once() {
        let groups = exp(&[]).groups(&quick()).unwrap();
        assert_eq!(groups.len(), Topology::ALL.len() * 2 + 2);
        for mut g in groups {
            assert!(g.params.contains_key("topology"));
            assert!(g.params.contains_key("submission"));
            assert_eq!(g.trials.len(), 3);
            for t in &mut g.trials {
                let m = (t.run)();
                assert!(m.contains_key("generation_s") || m.contains_key("run_s"));
                if m.contains_key("run_s") {
                    // The first kernel starts after the first submit, and everything ends
                    // after the last submit returned.
                    assert!(m["first_task_s"] > 0.0, "{m:?}");
                    assert!(m["first_task_s"] < m["run_s"], "{m:?}");
                    assert!(m["submit_s"] <= m["run_s"], "{m:?}");
                }
            }
        }
    }

    #[test]
    fn workload_flag_selects_groups() {
        let workload = |g: &Group| g.params["workload"].as_str().unwrap().to_string();
        let generation = exp(&[Workload::Generation]).groups(&quick()).unwrap();
        assert_eq!(generation.len(), Topology::ALL.len() * 2);
        assert!(generation.iter().all(|g| workload(g) == "generation"));
        let end_to_end = exp(&[Workload::EndToEnd]).groups(&quick()).unwrap();
        assert_eq!(end_to_end.len(), 2);
        assert!(end_to_end.iter().all(|g| workload(g) == "end-to-end"));
        let both = exp(&[Workload::EndToEnd, Workload::Generation])
            .groups(&quick())
            .unwrap();
        assert_eq!(both.len(), generation.len() + end_to_end.len());
    }

    #[test]
    fn topologies_have_the_published_task_counts() {
        let pool = Pool::builder().threads(1).build().unwrap();
        let flow = Flow::new(&pool, FlowOptions::default());
        let sizes = Sizes::new(false);
        let counts: Vec<usize> = Topology::ALL
            .iter()
            .map(|&t| declarations(&flow, t, sizes).len())
            .collect();
        assert_eq!(counts, [100, 30, 31, 31, 203, 51]);
        for t in Topology::ALL {
            assert_eq!(declarations(&flow, t, sizes).len(), tasks_len(t, sizes));
        }
    }
}
