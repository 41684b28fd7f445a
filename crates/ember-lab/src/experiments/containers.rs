//! `containers`: which container should feed a pool's workers (after M. Sinilo, "Clash of the
//! Thread Pools").
//!
//! Every container is driven through [`ember_containers::WorkQueue`] (the adapters are in
//! [`queues`], the loops in [`driver`]); each row's `system` is the container.
//!
//! # Ray casting (`params.workload = "raycast"`)
//!
//! One frame is [`Scene::batches`] tasks of [`raycast::BATCH`] rays (10,000 rays against the
//! 69,696-triangle default mesh through its BVH, or `--mesh FILE.ply`). The threads doing work
//! number `cores`: `cores − 1` worker threads (at least one) spawned for the run plus the main
//! thread, which pushes every task index of the frame round-robin over the slots and then helps
//! (pops and traces) until every task is counted done. A run traces `frames` frames on the same
//! threads and container (20; 2 with `--quick`; `--cn-frames`) and reports `frame_ms`, the
//! median frame time, and `hits`, the rays that hit the mesh; every frame's hit count is
//! checked with `assert_eq!` against the single-threaded count computed before the runs, so a
//! lost or duplicated task aborts the run. Peers: `rayon` ([`Scene::trace_all_rayon`], a
//! `par_iter` on a pool of `cores` threads, run with `install`, so the caller blocks),
//! `ember` ([`Scene::trace_all_ember`], a `parallel_for` on a pool of `cores − 1` workers
//! with the calling thread helping, like the container rows) and
//! `single-threaded` ([`Scene::trace_all_single`]), the reference. Thread start-up and pool
//! construction happen before the frames and are not in `frame_ms` (they are in the harness's
//! `wall_s`).
//!
//! # Pop overhead (`params.workload = "pop"`)
//!
//! For `threads` ∈ {1, 2, 4, 8}, a container is filled with 2,000,000 items (20,000 with
//! `--quick`), round-robin over `threads` slots, then `threads` threads pop until each finds it
//! empty; `chase-lev` owners steal once their own deque is empty, `spsc` threads only drain
//! their own ring. `pop_ns` is the popping time of all threads summed (each thread's wall
//! time from its first pop to the one that found the container empty, so time spent
//! descheduled counts when threads outnumber cores), divided by the items popped.
//! `pop_cycles` is `pop_ns` times the time-stamp counter's rate, measured once against the
//! monotonic clock over 50 ms (x86-64; elsewhere the rate cpu0 reports in `/proc/cpuinfo`,
//! and the metric is left out when neither is known). Counts above the core count are
//! oversubscribed, and the group title says so.
//!
//! # Order of the rows
//!
//! Each table is ranked fastest first (`rank_by`), as the published one is; the `×ratio`
//! column compares each row with the best peer.

pub mod driver;
pub mod queues;

use std::path::PathBuf;
use std::sync::Arc;

use clap::Args;

use super::{oversubscription, params, trial};
use crate::experiment::{Experiment, Group, LabOpts, Metrics, Trial};
use crate::metrics::stats::median;
use crate::raycast::{self, Scene};
use crate::systems;
use queues::Kind;

/// Frames per run, default size.
const FRAMES: usize = 20;
/// Frames per run with `--quick`.
const FRAMES_QUICK: usize = 2;
/// Items per pop run, default size.
const POP_ITEMS: usize = 2_000_000;
/// Items per pop run with `--quick`.
const POP_ITEMS_QUICK: usize = 20_000;
/// Thread counts of the pop groups.
const POP_THREADS: [usize; 4] = [1, 2, 4, 8];

/// The `containers` experiment's flags.
#[derive(Args, Clone, Debug, Default)]
pub struct CnArgs {
    /// containers: trace this ASCII PLY mesh instead of the generated sphere
    #[arg(long, value_name = "FILE.ply")]
    pub mesh: Option<PathBuf>,
    /// containers: frames per ray-casting run [default: 20; --quick: 2]
    #[arg(long = "cn-frames", value_name = "N")]
    pub frames: Option<usize>,
    /// containers: items per pop run [default: 2000000; --quick: 20000]
    #[arg(long = "cn-pop-items", value_name = "N")]
    pub pop_items: Option<usize>,
}

/// The `containers` experiment.
pub struct Containers {
    pub args: CnArgs,
}

impl Experiment for Containers {
    fn name(&self) -> &'static str {
        crate::tables::experiment::CONTAINERS
    }

    fn headline(&self) -> &'static [&'static str] {
        &["frame_ms", "pop_ns", "pop_cycles"]
    }

    /// The published comparison lists containers fastest first.
    fn rank_by(&self) -> &'static [&'static str] {
        &["frame_ms", "pop_cycles", "pop_ns"]
    }

    fn groups(&self, opts: &LabOpts) -> Result<Vec<Group>, String> {
        let scene = match &self.args.mesh {
            Some(path) => Scene::from_ply(path)
                .map_err(|e| format!("loading --mesh {}: {e}", path.display()))?,
            None => Scene::default_scene(),
        };
        let frames = self
            .args
            .frames
            .unwrap_or(if opts.quick { FRAMES_QUICK } else { FRAMES })
            .max(1);
        let items = self
            .args
            .pop_items
            .unwrap_or(if opts.quick {
                POP_ITEMS_QUICK
            } else {
                POP_ITEMS
            })
            .max(1);
        let mut groups = vec![raycast_group(Arc::new(scene), frames, opts.cores)];
        let mhz = cpu_mhz();
        groups.extend(
            POP_THREADS
                .iter()
                .map(|&threads| pop_group(threads, items, mhz, opts.cores)),
        );
        Ok(groups)
    }
}

/// The ray-casting table: every container, rayon, ember and the single-threaded reference.
pub fn raycast_group(scene: Arc<Scene>, frames: usize, cores: usize) -> Group {
    let cores = cores.max(1);
    let workers = cores.saturating_sub(1).max(1);
    let expect = scene.trace_all_single();
    let title = format!(
        "ray casting: {} rays in tasks of {}, {} triangles, threads = cores = {cores} \
         (main thread helping), median of {frames} frames",
        scene.rays(),
        raycast::BATCH,
        scene.bvh.triangles()
    );
    let group_params = params([
        (
            crate::tables::key::WORKLOAD,
            crate::tables::workload::RAYCAST.into(),
        ),
        ("threads", cores.into()),
        ("frames", frames.into()),
        ("rays", scene.rays().into()),
        ("batch", raycast::BATCH.into()),
        ("triangles", scene.bvh.triangles().into()),
        ("bvh_nodes", scene.bvh.nodes().into()),
    ]);
    let mut trials: Vec<Trial> = Kind::ALL
        .iter()
        .map(|&kind| {
            let scene = scene.clone();
            trial(kind.system(), move || {
                let queue = kind.build::<usize>(workers + 1, scene.batches());
                let trace = |b: usize| scene.trace_range(scene.batch(b));
                let out = driver::run_frames(&*queue, workers, frames, scene.batches(), &trace);
                frame_metrics(
                    out.times.iter().map(|d| d.as_secs_f64()),
                    &out.results,
                    expect,
                )
            })
        })
        .collect();
    let s = scene.clone();
    trials.push(trial(systems::RAYON, move || {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(cores)
            .thread_name(|i| format!("containers-rayon-{i}"))
            .build()
            .expect("containers: building the rayon pool");
        timed_frames(frames, expect, || s.trace_all_rayon(&pool))
    }));
    let s = scene.clone();
    trials.push(trial(systems::EMBER, move || {
        // Like the container rows: the calling thread helps, so the pool adds `cores - 1`.
        let pool = ember::Pool::builder()
            .threads(cores.saturating_sub(1).max(1))
            .build()
            .expect("containers: building the ember pool");
        timed_frames(frames, expect, || s.trace_all_ember(&pool))
    }));
    let s = scene;
    trials.push(trial(systems::SINGLE_THREADED, move || {
        timed_frames(frames, expect, || s.trace_all_single())
    }));
    Group {
        title,
        params: group_params,
        trials,
    }
}

/// Runs `frames` frames of `frame`, timing each.
fn timed_frames(frames: usize, expect: u64, mut frame: impl FnMut() -> u64) -> Metrics {
    let mut secs = Vec::with_capacity(frames);
    let mut hits = Vec::with_capacity(frames);
    for _ in 0..frames {
        let t = std::time::Instant::now();
        hits.push(frame());
        secs.push(t.elapsed().as_secs_f64());
    }
    frame_metrics(secs.into_iter(), &hits, expect)
}

/// `frame_ms` (median) and `hits`, after checking every frame's hits against `expect`.
fn frame_metrics(secs: impl Iterator<Item = f64>, hits: &[u64], expect: u64) -> Metrics {
    for (i, &h) in hits.iter().enumerate() {
        assert_eq!(
            h, expect,
            "containers: frame {i} found {h} hits, the single-threaded frame {expect}"
        );
    }
    let ms: Vec<f64> = secs.map(|s| s * 1e3).collect();
    let mut metrics = Metrics::new();
    metrics.insert("frame_ms".into(), median(&ms));
    metrics.insert("hits".into(), expect as f64);
    metrics
}

/// The pop-overhead table for one thread count.
pub fn pop_group(threads: usize, items: usize, mhz: Option<f64>, cores: usize) -> Group {
    let cycles = match mhz {
        Some(m) => format!("cycles at a measured {m:.0} MHz"),
        None => "cpu MHz unknown, ns only".to_string(),
    };
    let title = format!(
        "pop/steal overhead: threads = {threads}{}, {items} items ({cycles})",
        oversubscription(threads, cores.max(1))
    );
    let group_params = params([
        (
            crate::tables::key::WORKLOAD,
            crate::tables::workload::POP.into(),
        ),
        ("threads", threads.into()),
        ("items", items.into()),
    ]);
    let trials = Kind::ALL
        .iter()
        .map(|&kind| {
            trial(kind.system(), move || {
                let queue = kind.build::<usize>(threads, items);
                let out = driver::run_pops(&*queue, threads, items);
                let ns = out.busy.as_secs_f64() * 1e9 / out.pops.max(1) as f64;
                let mut metrics = Metrics::new();
                metrics.insert("pop_ns".into(), ns);
                if let Some(m) = mhz {
                    metrics.insert("pop_cycles".into(), ns * m / 1e3);
                }
                metrics
            })
        })
        .collect();
    Group {
        title,
        params: group_params,
        trials,
    }
}

/// The clock rate to convert nanoseconds to cycles, in MHz: the time-stamp counter's rate
/// measured against the monotonic clock over 50 ms on x86-64 (the counter the published
/// comparison read), else the rate cpu0 reports in `/proc/cpuinfo`, if any.
fn cpu_mhz() -> Option<f64> {
    measured_tsc_mhz().or_else(|| {
        let text = std::fs::read_to_string("/proc/cpuinfo").ok()?;
        parse_cpu_mhz(&text)
    })
}

#[cfg(target_arch = "x86_64")]
fn measured_tsc_mhz() -> Option<f64> {
    use std::time::{Duration, Instant};
    // SAFETY: `rdtsc` exists on every x86-64 CPU and only reads the time-stamp counter.
    let read = || unsafe { std::arch::x86_64::_rdtsc() };
    let (t0, c0) = (Instant::now(), read());
    std::thread::sleep(Duration::from_millis(50));
    let (c1, elapsed) = (read(), t0.elapsed());
    let mhz = c1.wrapping_sub(c0) as f64 / elapsed.as_secs_f64() / 1e6;
    (mhz.is_finite() && mhz > 1.0).then_some(mhz)
}

#[cfg(not(target_arch = "x86_64"))]
fn measured_tsc_mhz() -> Option<f64> {
    None
}

fn parse_cpu_mhz(cpuinfo: &str) -> Option<f64> {
    cpuinfo
        .lines()
        .find(|l| l.starts_with("cpu MHz"))
        .and_then(|l| l.split(':').nth(1))
        .and_then(|v| v.trim().parse::<f64>().ok())
        .filter(|m| m.is_finite() && *m > 0.0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::raycast::mesh::Mesh;
    use std::sync::atomic::{AtomicU64, Ordering};

    #[test]
    fn every_container_delivers_every_item_once() {
        for kind in Kind::ALL {
            for workers in [1, 3] {
                let tasks = 257;
                let queue = kind.build::<usize>(workers + 1, tasks);
                let seen: Vec<AtomicU64> = (0..tasks).map(|_| AtomicU64::new(0)).collect();
                let task = |i: usize| {
                    seen[i].fetch_add(1, Ordering::Relaxed);
                    i as u64
                };
                let out = driver::run_frames(&*queue, workers, 3, tasks, &task);
                let sum = (0..tasks as u64).sum::<u64>();
                assert_eq!(out.results, [sum; 3], "{}", kind.system().name);
                for (i, s) in seen.iter().enumerate() {
                    assert_eq!(
                        s.load(Ordering::Relaxed),
                        3,
                        "{} item {i}",
                        kind.system().name
                    );
                }
            }
        }
    }

    #[test]
    fn pop_runs_drain_every_container() {
        for kind in Kind::ALL {
            for threads in [1, 2, 4] {
                let queue = kind.build::<usize>(threads, 1_000);
                let out = driver::run_pops(&*queue, threads, 1_000);
                assert_eq!(out.pops, 1_000, "{}", kind.system().name);
                assert!(queue.pop(0).is_none());
            }
        }
    }

    #[test]
    fn quick_groups_build_and_run() {
        let opts = LabOpts {
            quick: true,
            repeat: 1,
            cores: 2,
        };
        let scene = Arc::new(Scene::new(&Mesh::displaced_sphere(16, 9), 12, 10));
        let mut groups = vec![raycast_group(scene, FRAMES_QUICK, opts.cores)];
        groups.extend(
            POP_THREADS
                .iter()
                .map(|&t| pop_group(t, 500, Some(1000.0), opts.cores)),
        );
        let systems: Vec<&str> = groups[0].trials.iter().map(|t| t.system.as_str()).collect();
        assert_eq!(
            systems,
            [
                "mutex-vecdeque",
                "spsc",
                "mpmc-queue",
                "treiber-stack",
                "bounded-mpmc",
                "chase-lev",
                "spmc",
                "rayon",
                "ember",
                "single-threaded"
            ]
        );
        assert!(groups[4].title.contains("oversubscribed"));
        for g in &mut groups {
            let workload = g.params["workload"].as_str().unwrap().to_string();
            for t in &mut g.trials {
                let m = (t.run)();
                if workload == "raycast" {
                    assert!(m["frame_ms"] >= 0.0 && m["hits"] > 0.0, "{}", t.system);
                } else {
                    assert_eq!(m["pop_cycles"], m["pop_ns"], "{}", t.system);
                }
            }
        }
    }

    #[test]
    fn parses_cpu_mhz() {
        let text = "processor\t: 0\nmodel name\t: X\ncpu MHz\t\t: 2400.123\n\ncpu MHz : 1.0\n";
        assert_eq!(parse_cpu_mhz(text), Some(2400.123));
        assert_eq!(parse_cpu_mhz("processor : 0\n"), None);
    }
}
