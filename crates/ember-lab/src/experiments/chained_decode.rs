//! `chained-decode`: delay-kick's measurement (DESIGN §1.4) — chunked decompression where
//! chunk i can only be decoded after chunk i-1.
//!
//! **Data.** A corpus of structured log lines generated from a fixed seed ([`corpus`]), or the
//! file given with `--input`, is split into chunks (256 KiB) and compressed with LZ4 in linked
//! mode ([`codec`]): chunk i uses the end of decoded chunk i-1 as its dictionary, except at a
//! reset point every K chunks (16). So the stream is a set of independent chains of K decodes.
//!
//! **A run.** A reader thread "reads" the compressed chunks in order — it copies each block
//! out of memory into the chunk's read buffer, which models a read into a fresh buffer — and
//! then signals the chunk readable. In the CPU-bound case it reads as fast as it can (far
//! faster than decoding); in the IO-bound case it is throttled to a fixed rate: a fraction
//! (`--cd-read-speed`, 0.5) of one thread's decode speed, measured once when the experiment is
//! prepared, so reading the stream takes longer than decoding it even on one thread. Every
//! decoded chunk is kept and the whole output is compared byte for byte with the corpus at the
//! end of every run (a mismatch panics). Pools have one worker per core; the reader is an
//! extra thread in every row.
//!
//! **Rows.** The decode of chunk i is ready once chunk i is read and, unless i is a reset
//! point, chunk i-1 is decoded.
//! * `ember…`: all decodes are created up front as dependent tasks,
//!   `pool.task(decode i).after(&[&read_i, &decode_{i-1}]).label("decode i")`, `read_i` being
//!   an `ember::Event` the reader completes. `ember` is the default wake policy with
//!   delay-kick on, `ember-no-delay-kick` the same with it off, and `ember-biased`,
//!   `ember-searching`, `ember-eager` each wake policy with delay-kick on.
//! * `rayon`: the same readiness done by hand — each chunk has an atomic count of unfinished
//!   inputs; whoever finishes the last one spawns the decode: the reader with
//!   `ThreadPool::spawn` (injected from outside), a decode that releases its successor with
//!   `rayon::spawn` from inside the pool (pushed on its worker's own deque, which that worker
//!   pops next unless another worker steals it first).
//! * `channel-pipeline`: the classic pool of decoder threads on one crossbeam channel. The
//!   same counts decide readiness; a ready chunk's index is sent on the channel (by the reader
//!   or by the decoder that finished its predecessor) and whichever decoder thread receives it
//!   decodes it. Chain order is enforced by the counts, not by pinning a chain to a thread.
//!
//! **Metrics** beyond the harness's: `same_thread_share` — of the decodes that have a
//! predecessor, the share that ran on the same OS thread as it (each decode records a token
//! of the thread that ran it); `mb_per_s` — corpus bytes (10⁶) decoded per second of the run's
//! pipeline (graph set-up to last decode); `useful_cpu_s` — thread CPU inside the decodes;
//! and for ember rows `wakeups` (wake-ups issued) and `kicks` (successors handed on by
//! delay-kick).
//!
//! **Timelines.** After the measured runs, one traced CPU-bound run of `ember` with delay-kick
//! on and one with it off are written next to the report as Chrome traces
//! (`chained-decode-delay-kick-{on,off}.trace.json`) and timeline SVGs
//! ([`crate::report::timeline`]).

pub mod codec;
pub mod corpus;
mod pipelines;

use super::ember_rows::EmberPolicy;
use super::peers::{rayon_pool, rayon_shutdown, Latch};
use super::{params, trial};
use crate::experiment::{Artifact, Experiment, Group, LabOpts, Metrics};
use crate::metrics::cputime::timed;
use crate::report::timeline;
use clap::{Args, ValueEnum};
use codec::Compressed;
use ember::{Dependency, Pool, PoolStats, Task, WakePolicy};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, AtomicU8, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};
use std::thread;
use std::time::{Duration, Instant};

use pipelines::{ember_pipeline, run, Shared};

/// Batch of the `ember-biased` row, as in the other experiments.
const BIASED_BATCH: usize = 20;
/// Seed of the generated corpus.
const SEED: u64 = 0x0e3b_e4de_c0de;

/// Flags of `chained-decode`.
#[derive(Args, Debug, Clone, Default)]
#[command(next_help_heading = "chained-decode")]
pub struct CdArgs {
    /// Decode this file instead of the generated log corpus
    #[arg(long, value_name = "FILE")]
    pub input: Option<PathBuf>,
    /// Size of the generated corpus in MiB [default: 32; --quick: 2]
    #[arg(long = "cd-mib", value_name = "MIB")]
    pub mib: Option<f64>,
    /// Chunk size in KiB [default: 256; --quick: 64]
    #[arg(long = "cd-chunk-kib", value_name = "KIB")]
    pub chunk_kib: Option<usize>,
    /// A reset point (a chunk compressed without dictionary) every K chunks [default: 16; --quick: 8]
    #[arg(long = "cd-reset-every", value_name = "K")]
    pub reset_every: Option<usize>,
    /// Cases to run, one table each [default: cpu,io]
    #[arg(long = "cd-bound", value_delimiter = ',', value_name = "cpu|io,..")]
    pub bound: Vec<Bound>,
    /// IO-bound read rate as a fraction of one thread's decode speed [default: 0.5]
    #[arg(long = "cd-read-speed", value_name = "X")]
    pub read_speed: Option<f64>,
}

/// What limits the pipeline.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Bound {
    /// The reader is far ahead of the decoders.
    Cpu,
    /// The reader is throttled below the decode speed.
    Io,
}

impl Bound {
    fn name(self) -> &'static str {
        match self {
            Bound::Cpu => "cpu",
            Bound::Io => "io",
        }
    }
}

/// The experiment, sized by its flags. The corpus is generated and compressed once, the first
/// time it is needed, and shared by every run and the traced runs.
pub struct ChainedDecode {
    pub args: CdArgs,
    prepared: OnceLock<Arc<Prepared>>,
}

/// The data every run decodes.
pub struct Prepared {
    /// Where the corpus came from, for titles.
    source: String,
    corpus: Vec<u8>,
    compressed: Compressed,
    /// One thread's decode speed, decoded bytes per second (best of a few serial decodes).
    decode_bytes_per_s: f64,
}

impl Prepared {
    /// Generates (or reads) the corpus, compresses it and measures serial decode speed.
    fn new(args: &CdArgs, quick: bool) -> Prepared {
        let (source, corpus) = match &args.input {
            Some(path) => {
                let data = std::fs::read(path)
                    .unwrap_or_else(|e| panic!("reading --input {}: {e}", path.display()));
                assert!(!data.is_empty(), "--input {} is empty", path.display());
                (path.display().to_string(), data)
            }
            None => {
                let mib = args.mib.unwrap_or(if quick { 2.0 } else { 32.0 });
                let len = ((mib * 1024.0 * 1024.0) as usize).max(1024);
                (
                    format!("{mib} MiB of log lines"),
                    corpus::generate(len, SEED),
                )
            }
        };
        let chunk = args
            .chunk_kib
            .unwrap_or(if quick { 64 } else { 256 })
            .max(1)
            * 1024;
        let reset = args
            .reset_every
            .unwrap_or(if quick { 8 } else { 16 })
            .max(1);
        Prepared::from_corpus(source, corpus, chunk, reset)
    }

    fn from_corpus(source: String, corpus: Vec<u8>, chunk: usize, reset: usize) -> Prepared {
        let compressed = codec::compress(&corpus, chunk, reset);
        let mut best = f64::INFINITY;
        for _ in 0..3 {
            let t = Instant::now();
            let mut out: Vec<Vec<u8>> = Vec::with_capacity(compressed.chunks.len());
            for (i, c) in compressed.chunks.iter().enumerate() {
                let prev = c.linked.then(|| out[i - 1].as_slice());
                out.push(codec::decode(c, &c.data, prev));
            }
            best = best.min(t.elapsed().as_secs_f64());
            let refs: Vec<&[u8]> = out.iter().map(|v| v.as_slice()).collect();
            codec::verify(&corpus, &compressed, &refs);
        }
        Prepared {
            source,
            decode_bytes_per_s: corpus.len() as f64 / best.max(1e-9),
            corpus,
            compressed,
        }
    }

    fn chunks(&self) -> usize {
        self.compressed.chunks.len()
    }

    /// The reader's rate in compressed bytes per second, for `bound`.
    fn read_rate(&self, bound: Bound, read_speed: f64) -> Option<f64> {
        (bound == Bound::Io).then(|| {
            let ratio = self.compressed.compressed_len() as f64 / self.corpus.len() as f64;
            read_speed * self.decode_bytes_per_s * ratio
        })
    }
}

impl ChainedDecode {
    pub fn new(args: CdArgs) -> ChainedDecode {
        ChainedDecode {
            args,
            prepared: OnceLock::new(),
        }
    }

    fn prepared(&self, opts: &LabOpts) -> Arc<Prepared> {
        self.prepared
            .get_or_init(|| Arc::new(Prepared::new(&self.args, opts.quick)))
            .clone()
    }

    fn read_speed(&self) -> f64 {
        self.args.read_speed.unwrap_or(0.5).max(1e-3)
    }
}

/// A system compared.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum System {
    Ember {
        policy: EmberPolicy,
        delay_kick: bool,
    },
    Rayon,
    Channel,
}

impl System {
    fn all() -> Vec<System> {
        let mut v = vec![
            System::Ember {
                policy: EmberPolicy::Default,
                delay_kick: true,
            },
            System::Ember {
                policy: EmberPolicy::Default,
                delay_kick: false,
            },
        ];
        for policy in [
            EmberPolicy::Biased,
            EmberPolicy::Searching,
            EmberPolicy::Eager,
        ] {
            v.push(System::Ember {
                policy,
                delay_kick: true,
            });
        }
        v.push(System::Rayon);
        v.push(System::Channel);
        v
    }

    fn name(self) -> String {
        match self {
            System::Ember {
                policy,
                delay_kick: true,
            } => policy.system().into(),
            System::Ember {
                policy,
                delay_kick: false,
            } => format!("{}-no-delay-kick", policy.system()),
            System::Rayon => "rayon".into(),
            System::Channel => "channel-pipeline".into(),
        }
    }
}

/// An ember pool for a row: `policy` as in [`EmberPolicy::build`], plus delay-kick and tracing.
fn ember_pool(policy: EmberPolicy, delay_kick: bool, trace: bool, threads: usize) -> Pool {
    let b = Pool::builder()
        .threads(threads)
        .name("cd")
        .delay_kick(delay_kick)
        .trace(trace);
    let b = match policy {
        EmberPolicy::Default => b,
        EmberPolicy::Biased => b.wake(WakePolicy::Biased {
            batch: BIASED_BATCH,
        }),
        EmberPolicy::Searching => b.wake(WakePolicy::Searching),
        EmberPolicy::Eager => b.wake(WakePolicy::Eager),
    };
    b.build().expect("ember pool")
}

impl Experiment for ChainedDecode {
    fn name(&self) -> &'static str {
        "chained-decode"
    }

    fn groups(&self, opts: &LabOpts) -> Vec<Group> {
        let prep = self.prepared(opts);
        let bounds = if self.args.bound.is_empty() {
            vec![Bound::Cpu, Bound::Io]
        } else {
            self.args.bound.clone()
        };
        let threads = opts.cores.max(1);
        let read_speed = self.read_speed();
        bounds
            .into_iter()
            .map(|bound| {
                let rate = prep.read_rate(bound, read_speed);
                let c = &prep.compressed;
                let mut title = format!(
                    "{}-bound: {}, {} chunks of {} KiB, reset every {}, {threads} threads",
                    bound.name().to_uppercase(),
                    prep.source,
                    prep.chunks(),
                    c.chunk_size / 1024,
                    c.reset_every,
                );
                let mut p = params([
                    ("bound", bound.name().into()),
                    ("threads", threads.into()),
                    ("chunks", prep.chunks().into()),
                    ("chunk_kib", (c.chunk_size / 1024).into()),
                    ("reset_every", c.reset_every.into()),
                    ("corpus_bytes", prep.corpus.len().into()),
                    ("compressed_bytes", c.compressed_len().into()),
                ]);
                if let Some(rate) = rate {
                    title.push_str(&format!(
                        ", reader at {:.0} MB/s compressed ({read_speed}× one thread's decode speed)",
                        rate / 1e6
                    ));
                    p.insert("read_mb_per_s".into(), (rate / 1e6).into());
                }
                let trials = System::all()
                    .into_iter()
                    .map(|sys| {
                        let prep = prep.clone();
                        trial(&sys.name(), move || run(sys, &prep, rate, threads))
                    })
                    .collect();
                Group {
                    title,
                    params: p,
                    trials,
                }
            })
            .collect()
    }

    fn artifacts(&self, opts: &LabOpts, out: &Path) -> Vec<Artifact> {
        let prep = self.prepared(opts);
        let threads = opts.cores.max(1);
        let mut artifacts = Vec::new();
        for on in [true, false] {
            let tag = if on { "on" } else { "off" };
            let pool = ember_pool(EmberPolicy::Default, on, true, threads);
            let shared = Arc::new(Shared::new(prep.clone()));
            ember_pipeline(&shared, &pool, None);
            let trace = pool.trace();
            drop(pool);
            let share = shared.finish().same_thread_share;
            let stem = format!("chained-decode-delay-kick-{tag}");
            let json = format!("{stem}.trace.json");
            let svg = format!("{stem}.svg");
            let caption = format!(
                "ember, delay-kick {tag}, CPU-bound, {threads} workers: {} of chained decodes on \
                 their predecessor's thread",
                share.map_or("n/a".into(), |s| format!("{:.0} %", s * 100.0)),
            );
            let tl = timeline::Timeline::from_trace(&trace);
            match timeline::write_svg(&tl, &format!("chained-decode — {caption}"), &out.join(&svg))
            {
                Ok(()) => artifacts.push(Artifact {
                    caption: caption.clone(),
                    file: svg,
                }),
                Err(e) => eprintln!("chained-decode: writing {svg}: {e}"),
            }
            match trace.write_chrome_json(out.join(&json)) {
                Ok(()) => artifacts.push(Artifact {
                    caption: format!("Chrome trace (Perfetto) of: {caption}"),
                    file: json,
                }),
                Err(e) => eprintln!("chained-decode: writing {json}: {e}"),
            }
        }
        artifacts
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn small() -> Arc<Prepared> {
        // 21 chunks of 8 KiB (the last one short), chains of 5.
        let data = corpus::generate(20 * 8192 + 100, 11);
        Arc::new(Prepared::from_corpus("test".into(), data, 8192, 5))
    }

    /// Every row decodes the exact corpus (`finish` asserts it) in both cases.
    #[test]
    fn every_row_decodes_the_corpus() {
        let prep = small();
        assert_eq!(prep.chunks(), 21);
        for rate in [None, prep.read_rate(Bound::Io, 4.0)] {
            for sys in System::all() {
                let m = run(sys, &prep, rate, 2);
                let share = m["same_thread_share"];
                assert!((0.0..=1.0).contains(&share), "{}: {share}", sys.name());
                assert!(m["mb_per_s"] > 0.0);
                assert_eq!(
                    m.contains_key("wakeups"),
                    matches!(sys, System::Ember { .. })
                );
            }
        }
    }

    /// The ember graph with tracing: labelled decodes, one per chunk.
    #[test]
    fn traced_ember_run_labels_every_decode() {
        let prep = small();
        let pool = ember_pool(EmberPolicy::Default, true, true, 2);
        let shared = Arc::new(Shared::new(prep.clone()));
        ember_pipeline(&shared, &pool, None);
        let trace = pool.trace();
        drop(pool);
        shared.finish();
        let decodes = trace
            .events()
            .iter()
            .filter(|e| e.label_kind() == Some("decode"))
            .count();
        assert_eq!(decodes, prep.chunks());
    }

    #[test]
    fn names_and_groups() {
        let names: Vec<String> = System::all().into_iter().map(System::name).collect();
        assert_eq!(
            names,
            [
                "ember",
                "ember-no-delay-kick",
                "ember-biased",
                "ember-searching",
                "ember-eager",
                "rayon",
                "channel-pipeline"
            ]
        );
        let e = ChainedDecode::new(CdArgs {
            mib: Some(0.25),
            chunk_kib: Some(16),
            reset_every: Some(4),
            ..CdArgs::default()
        });
        let opts = LabOpts {
            quick: true,
            repeat: 1,
            cores: 2,
        };
        let g = e.groups(&opts);
        assert_eq!(g.len(), 2);
        assert_eq!(g[0].params["bound"], "cpu");
        assert_eq!(g[1].params["bound"], "io");
        assert_eq!(g[0].params["chunks"], 16);
        assert!(g[1].params.contains_key("read_mb_per_s"));
    }
}
