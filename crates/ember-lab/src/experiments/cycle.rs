//! `cycle`: rings of tasks passing a token (the thundering-herd case of the libfibre merge
//! request "Avoid atomic operations when the local queue is not empty", after Go and Tokio).
//!
//! # Workload
//!
//! `t` rings of `r` tasks each. Every ring carries one token. The task holding a token does
//! its (empty) work and, as the last thing it does, schedules the next task of its ring,
//! handing the token on; a *hop* is one such task run. The token of ring `k` makes
//! `hops / t` hops (the first `hops % t` rings one more), so the `hops` of a wave are split
//! over the rings. The task that makes a ring's last hop reports it; a wave ends when every
//! ring has reported (to a mailbox whose waiter is woken once a wave, `mailbox.rs`; the Go
//! peer signals once a wave too). A run makes waves until it has lasted 60 ms, so the
//! fastest and the slowest rows are both measured over a stretch of time long enough to
//! mean something
//! (`waves` says how many; per-run counts such as `ctx_switches` are per that stretch).
//!
//! The rings run on `p` workers. The sweep is `p = cores` and `p = 100` (on a machine with
//! fewer than 100 cores that is oversubscription, not scaling: it is the case where a
//! scheduler that wakes a sleeper for every new task wakes far too many), each with `t = p`
//! rings (every worker has a token to pass) and `t = 1` ring (one token, `p - 1` workers
//! with nothing to do: every wake-up is needless). Rings have `r = 4` positions. A wave makes
//! 100,000 hops (one wave of 2,000 with `--quick`); `--cycle-hops` and `--cycle-ms` set a
//! wave's hops and how long a run keeps starting waves (`--cycle-ms 0`: one wave).
//!
//! # Systems
//!
//! - `ember`, `ember-no-defer`, `ember-deferred-1ms`, `ember-biased`, `ember-searching`,
//!   `ember-eager`: an [`ember::Pool`] of `p` threads (default policy; the default with
//!   `defer_wakeups(false)`, then `defer_wakeups_for(1 ms)`; then each [`ember::WakePolicy`];
//!   biased with `batch` 20);
//!   the next task is `ember::spawn`ed from inside the current one, so it lands on that
//!   worker's local deque.
//! - `tokio`: a multi-thread runtime with `p` worker threads; the next task is
//!   `tokio::spawn`ed from inside the current one.
//! - `std-threads`: `p` OS threads, each blocking on its own crossbeam channel. Ring
//!   position `(k, i)` lives on thread `(k·r + i) mod p`, and a hop is a channel send to the
//!   thread of the next position. Thread count is `p`, as for the pools, so it stays bounded
//!   (at most 100) whatever `t·r` is.
//! - `single-threaded` (a floor row): the measuring thread makes every hop itself, ring
//!   after ring, with no pool, for as long as the other rows run. Its context switches are
//!   what the machine's time slicing and its other work take from one busy thread over that
//!   stretch, which no scheduler removes; `avoidable_ctx_switches` is each row's count less
//!   this one's in the same round.
//!
//! In a run-to-completion pool a ring position is a task that exists only while it holds
//! the token, so `r` changes nothing for the pools; it decides only which threads the
//! `std-threads` token visits (with `r ≥ 2` and `p ≥ 2`, every hop crosses threads).
//!
//! # Metrics (besides what the harness measures around the run)
//!
//! - `ops_per_s`, `ns_per_op`: hops per second and nanoseconds per hop, timed from the first
//!   token injected to the last ring reported of the last wave (pool start-up and shut-down
//!   excluded; the harness's wall and CPU time include them).
//! - `waves`: waves of `hops` hops the run made; `total_hops`: all the hops of the run.
//! - `ctx_switches_per_mhop`, `cpu_ns_per_op`: the run's context switches per million hops
//!   and its CPU time per hop. A run lasts as long whatever its speed, so a faster system
//!   makes more waves, and with them more of the switches that start a wave; per hop, the
//!   systems compare on the same work.
//! - `wakeups` (ember rows): `PoolStats::wakeups_issued` at the end of the run.
//!
//! # Checks
//!
//! The token carries its hop number, and each task schedules exactly one successor, so the
//! last hop number a ring reports proves how many hops its token made. Every ring must
//! report exactly once with exactly its share of hops; anything else (a lost, duplicated or
//! extra task) panics the run. A run that does not finish within `TIMEOUT` (120 s) panics
//! rather than hang.

use std::thread;
use std::time::{Duration, Instant};

use clap::Args;
use crossbeam_channel::{Receiver, Sender};

use super::baton::{self, collect_wave, hop_ember, hop_tokio, Baton, Report};
use super::ember_rows::EmberPolicy;
use super::mailbox::{mailbox, Mailbox};
use super::peers::tokio_runtime;
use super::{oversubscription, params, rate, trial};
use crate::experiment::{Experiment, Group, LabOpts, Metrics};
use crate::{go_peer, systems};

/// The `cycle` experiment.
pub struct Cycle {
    pub args: CycleArgs,
}

/// Positions per ring (`r`).
const RING_LEN: usize = 4;
/// The oversubscribed worker count of the sweep.
const MANY_WORKERS: usize = 100;
/// Hops of one wave (all rings together), default size.
const HOPS: u64 = 100_000;
/// A run repeats waves until it has lasted this long, default size.
const TARGET: Duration = Duration::from_millis(60);
/// Total hops per run with `--quick`.
const HOPS_QUICK: u64 = 2_000;
/// A run that has not finished after this long has lost a task: it panics.
const TIMEOUT: Duration = Duration::from_secs(120);
/// Stack size of the `std-threads` threads (they keep almost nothing on the stack).
const STD_STACK: usize = 64 * 1024;

/// Flags of `cycle`.
#[derive(Args, Debug, Clone, Default)]
#[command(next_help_heading = "cycle")]
pub struct CycleArgs {
    /// Hops of one wave, all rings together [default: 100000; --quick: 2000]; at least
    /// 100, one for each ring of the 100-worker tables
    #[arg(long = "cycle-hops", value_name = "N")]
    pub hops: Option<u64>,
    /// How long a run keeps starting waves, ms; 0: one wave [default: 60; --quick: 0]
    #[arg(long = "cycle-ms", value_name = "MS")]
    pub ms: Option<u64>,
}

impl Experiment for Cycle {
    fn name(&self) -> &'static str {
        crate::tables::experiment::CYCLE
    }

    fn differences(&self) -> &'static [(&'static str, &'static str, &'static str)] {
        &[("single-threaded", "ctx_switches", "avoidable_ctx_switches")]
    }

    fn quotients(&self) -> &'static [(&'static str, &'static str, &'static str, f64)] {
        &[
            ("ctx_switches", "total_hops", "ctx_switches_per_mhop", 1e6),
            ("cpu_s", "total_hops", "cpu_ns_per_op", 1e9),
        ]
    }

    fn headline(&self) -> &'static [&'static str] {
        &[
            "ns_per_op",
            "ctx_switches_per_mhop",
            "cpu_ns_per_op",
            "migrations",
        ]
    }

    fn groups(&self, opts: &LabOpts) -> Result<Vec<Group>, String> {
        let hops = self
            .args
            .hops
            .unwrap_or(if opts.quick { HOPS_QUICK } else { HOPS });
        if hops < MANY_WORKERS as u64 {
            return Err(format!(
                "--cycle-hops must be at least {MANY_WORKERS} (a hop for each ring of the \
                 {MANY_WORKERS}-worker tables), not {hops}"
            ));
        }
        let target = match self.args.ms {
            Some(ms) => Duration::from_millis(ms),
            None if opts.quick => Duration::ZERO,
            None => TARGET,
        };
        let cores = opts.cores.max(1);
        let mut worker_counts = vec![cores, MANY_WORKERS];
        worker_counts.dedup();
        let mut groups = Vec::new();
        for &workers in &worker_counts {
            let ring_counts = if workers > 1 {
                vec![workers, 1]
            } else {
                vec![1]
            };
            for rings in ring_counts {
                let shape = Shape {
                    workers,
                    rings,
                    ring_len: RING_LEN,
                    hops,
                    target,
                };
                groups.push(group(shape, cores));
            }
        }
        Ok(groups)
    }
}

/// One point of the sweep.
#[derive(Clone, Copy, Debug)]
struct Shape {
    /// Worker threads `p`.
    workers: usize,
    /// Rings `t`.
    rings: usize,
    /// Positions per ring `r`.
    ring_len: usize,
    /// Hops of all rings together, per wave.
    hops: u64,
    /// How long a run keeps starting new waves.
    target: Duration,
}

impl Shape {
    /// Hops the token of ring `ring` makes.
    fn ring_hops(&self, ring: usize) -> u64 {
        let rings = self.rings as u64;
        self.hops / rings + u64::from((ring as u64) < self.hops % rings)
    }

    /// The first token of every ring.
    fn tokens(&self) -> impl Iterator<Item = Baton> + '_ {
        (0..self.rings).map(|ring| Baton::first(ring, self.ring_hops(ring)))
    }
}

fn group(shape: Shape, cores: usize) -> Group {
    assert!(
        shape.hops >= shape.rings as u64,
        "cycle: every ring needs at least one hop"
    );
    let Shape {
        workers,
        rings,
        ring_len,
        hops,
        target,
    } = shape;
    let ring_word = if rings == 1 { "ring" } else { "rings" };
    let title = format!(
        "p = {workers} workers{}, {rings} {ring_word} of {ring_len}, waves of {hops} hops",
        oversubscription(workers, cores)
    );
    let params = params([
        (crate::tables::key::WORKERS, workers.into()),
        (crate::tables::key::RINGS, rings.into()),
        ("ring_len", ring_len.into()),
        ("hops", hops.into()),
    ]);

    let mut trials = EmberPolicy::trials(&EmberPolicy::SPAWNING, move |policy| {
        run_ember(shape, policy)
    });
    trials.push(trial(systems::TOKIO, move || run_tokio(shape)));
    trials.push(trial(systems::STD_THREADS, move || run_std_threads(shape)));
    trials.push(trial(systems::SINGLE_THREADED, move || {
        run_single_threaded(shape)
    }));
    if go_peer::available() {
        trials.push(trial(systems::GO, move || {
            go_peer::run(&[
                "cycle".into(),
                workers.to_string(),
                rings.to_string(),
                ring_len.to_string(),
                hops.to_string(),
                target.as_millis().to_string(),
            ])
        }));
    }
    Group {
        title,
        params,
        trials,
    }
}

/// Runs waves of `shape.hops` hops (`wave` injects every ring's first token and waits for
/// every ring's report) until `shape.target` has passed; the rate over all of them.
fn waves(shape: Shape, mut wave: impl FnMut()) -> Metrics {
    let start = Instant::now();
    let mut waves = 0u64;
    while waves == 0 || start.elapsed() < shape.target {
        wave();
        waves += 1;
    }
    let total_hops = shape.hops * waves;
    let mut metrics = rate(total_hops, start.elapsed());
    metrics.insert("waves".into(), waves as f64);
    metrics.insert("total_hops".into(), total_hops as f64);
    metrics
}

fn run_ember(shape: Shape, policy: EmberPolicy) -> Metrics {
    let pool = policy.build(shape.workers, "cycle");
    let (tx, rx) = mailbox();
    let mut metrics = waves(shape, || {
        for token in shape.tokens() {
            let tx = tx.clone();
            pool.spawn(move || hop_ember(token, tx));
        }
        collect_reports(shape, &rx);
    });
    drop(tx);
    let stats = pool.stats();
    drop(pool);
    assert_no_more_reports(&rx);
    metrics.insert("wakeups".into(), stats.wakeups_issued as f64);
    metrics
}

fn run_tokio(shape: Shape) -> Metrics {
    let rt = tokio_runtime(shape.workers, "cycle-tokio");
    let (tx, rx) = mailbox();
    let metrics = waves(shape, || {
        for token in shape.tokens() {
            let tx = tx.clone();
            rt.spawn(async move { hop_tokio(token, tx) });
        }
        collect_reports(shape, &rx);
    });
    drop(tx);
    drop(rt);
    assert_no_more_reports(&rx);
    metrics
}

/// The floor: every hop made on the measuring thread, no pool, for as long as a pool's run.
fn run_single_threaded(shape: Shape) -> Metrics {
    let (tx, rx) = mailbox();
    let metrics = waves(shape, || {
        for token in shape.tokens() {
            let mut token = std::hint::black_box(token);
            while let Some(next) = token.pass() {
                token = std::hint::black_box(next);
            }
            token.report(&tx);
        }
        collect_reports(shape, &rx);
    });
    drop(tx);
    assert_no_more_reports(&rx);
    metrics
}

/// A message to a `std-threads` thread.
enum Msg {
    Token(Baton),
    Stop,
}

fn run_std_threads(shape: Shape) -> Metrics {
    let p = shape.workers;
    let r = shape.ring_len;
    // Ring `k`'s position `i` lives on thread `(k·r + i) mod p`.
    let owner = move |token: &Baton| (token.chain * r + (token.hop % r as u64) as usize) % p;
    let (senders, receivers): (Vec<Sender<Msg>>, Vec<Receiver<Msg>>) =
        (0..p).map(|_| crossbeam_channel::unbounded()).unzip();
    let (tx, rx) = mailbox();
    let threads: Vec<_> = receivers
        .into_iter()
        .enumerate()
        .map(|(i, inbox)| {
            let senders = senders.clone();
            let tx = tx.clone();
            thread::Builder::new()
                .name(format!("cycle-std-{i}"))
                .stack_size(STD_STACK)
                .spawn(move || {
                    while let Ok(Msg::Token(token)) = inbox.recv() {
                        match token.pass() {
                            Some(next) => senders[owner(&next)]
                                .send(Msg::Token(next))
                                .expect("cycle: std-threads peer hung up"),
                            None => token.report(&tx),
                        }
                    }
                })
                .expect("cycle: spawning a std thread")
        })
        .collect();
    drop(tx);
    let metrics = waves(shape, || {
        for token in shape.tokens() {
            senders[owner(&token)]
                .send(Msg::Token(token))
                .expect("cycle: std-threads thread hung up");
        }
        collect_reports(shape, &rx);
    });
    for sender in &senders {
        sender
            .send(Msg::Stop)
            .expect("cycle: std-threads thread hung up");
    }
    for handle in threads {
        handle.join().expect("cycle: a std-threads thread panicked");
    }
    assert_no_more_reports(&rx);
    metrics
}

/// Waits until every ring has reported and checks each made exactly its share of hops.
fn collect_reports(shape: Shape, rx: &Mailbox<Report>) {
    let hops = |ring| shape.ring_hops(ring);
    collect_wave(
        rx,
        shape.rings,
        hops,
        TIMEOUT,
        format_args!("cycle"),
        "ring",
    );
}

/// After the system has shut down, no report may be left over.
fn assert_no_more_reports(rx: &Mailbox<Report>) {
    baton::assert_no_more_reports(rx, format_args!("cycle"), "ring");
}
