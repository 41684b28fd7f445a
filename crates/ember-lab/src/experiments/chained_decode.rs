//! `chained-decode`: the delay-kick measurement of C. Bloom, "Worker Thread Forward Permit
//! Delay-Kicks" (cbloom rants, 2013-04-04) — chunked decompression where chunk i can only be
//! decoded after chunk i-1.
//!
//! **Data.** A corpus of structured log lines generated from a fixed seed ([`corpus`]), or the
//! file given with `--input`, is split into chunks (256 KiB) and compressed with LZ4 in linked
//! mode ([`codec`]): chunk i uses the end of decoded chunk i-1 as its dictionary, except at
//! reset points. The **published case** (the first table) has no reset point: one chain of
//! decodes, CPU-bound, where a pool that hands each released successor to the pool wakes a
//! sleeper for it while the worker that released it runs dry. The other tables reset every K
//! chunks (16), so K-chunk chains run side by side, CPU- and IO-bound.
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
use crate::systems::{self, System};
use clap::{Args, ValueEnum};
use codec::Compressed;
use ember::{Dependency, Pool, PoolStats, Task};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, AtomicU8, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};
use std::thread;
use std::time::{Duration, Instant};

use pipelines::{ember_pipeline, run, Shared};

/// Seed of the generated corpus.
const SEED: u64 = 0x0e3b_e4de_c0de;

/// Flags of `chained-decode`.
#[derive(Args, Debug, Clone, Default)]
#[command(next_help_heading = "chained-decode")]
pub struct CdArgs {
    /// Decode this file instead of the generated log corpus
    #[arg(long, value_name = "FILE")]
    pub input: Option<PathBuf>,
    /// Size of the generated corpus in MiB [default: 96; --quick: 2]
    #[arg(long = "cd-mib", value_name = "MIB")]
    pub mib: Option<f64>,
    /// Chunk size in KiB [default: 256; --quick: 64]
    #[arg(long = "cd-chunk-kib", value_name = "KIB")]
    pub chunk_kib: Option<usize>,
    /// In the tables after the published one-chain case: a reset point (a chunk compressed
    /// without dictionary) every K chunks [default: 16; --quick: 8]
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
            Bound::Cpu => crate::tables::value::CPU,
            Bound::Io => "io",
        }
    }
}

/// The experiment, sized by its flags. The corpus is generated and compressed once, the first
/// time it is needed, and shared by every run and the traced runs.
pub struct ChainedDecode {
    pub args: CdArgs,
    /// The corpus compressed as one chain (the published case) and in chains of K.
    prepared: OnceLock<Result<Streams, String>>,
}

/// The two compressions of the corpus.
#[derive(Clone)]
struct Streams {
    one_chain: Arc<Prepared>,
    chains: Arc<Prepared>,
}

/// The data every run decodes.
pub struct Prepared {
    /// Where the corpus came from, for titles.
    source: String,
    corpus: Arc<Vec<u8>>,
    compressed: Compressed,
    /// One thread's decode speed, decoded bytes per second (best of a few serial decodes).
    decode_bytes_per_s: f64,
}

impl Prepared {
    /// Reads `--input` or generates the corpus: where it came from, and its bytes.
    fn corpus(args: &CdArgs, quick: bool) -> Result<(String, Vec<u8>), String> {
        match &args.input {
            Some(path) => {
                let data = std::fs::read(path)
                    .map_err(|e| format!("reading --input {}: {e}", path.display()))?;
                if data.is_empty() {
                    return Err(format!("--input {} is empty", path.display()));
                }
                Ok((path.display().to_string(), data))
            }
            None => {
                let mib = args.mib.unwrap_or(if quick { 2.0 } else { 96.0 });
                if !(mib.is_finite() && mib > 0.0) {
                    return Err(format!("--cd-mib must be a positive size, not {mib}"));
                }
                let len = ((mib * 1024.0 * 1024.0) as usize).max(1024);
                Ok((
                    format!("{mib} MiB of log lines"),
                    corpus::generate(len, SEED),
                ))
            }
        }
    }

    fn from_corpus(source: String, corpus: Arc<Vec<u8>>, chunk: usize, reset: usize) -> Prepared {
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

    fn streams(&self, opts: &LabOpts) -> Result<Streams, String> {
        self.prepared
            .get_or_init(|| {
                let (source, corpus) = Prepared::corpus(&self.args, opts.quick)?;
                let corpus = Arc::new(corpus);
                let chunk = self
                    .args
                    .chunk_kib
                    .unwrap_or(if opts.quick { 64 } else { 256 })
                    .max(1)
                    * 1024;
                let reset = self
                    .args
                    .reset_every
                    .unwrap_or(if opts.quick { 8 } else { 16 })
                    .max(1);
                let one = Prepared::from_corpus(source.clone(), corpus.clone(), chunk, usize::MAX);
                Ok(Streams {
                    one_chain: Arc::new(one),
                    chains: Arc::new(Prepared::from_corpus(source, corpus, chunk, reset)),
                })
            })
            .clone()
    }

    fn read_speed(&self) -> f64 {
        self.args.read_speed.unwrap_or(0.5).max(1e-3)
    }
}

/// How a row decodes the stream.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Pipeline {
    /// Dependent ember tasks.
    Ember {
        policy: EmberPolicy,
        delay_kick: bool,
    },
    /// rayon spawns, readiness counted by hand.
    Rayon,
    /// Decoder threads on one channel.
    Channel,
}

/// The rows: delay-kick on and off, the biased policy, and the two peers.
const ROWS: [(&System, Pipeline); 5] = [
    (
        systems::EMBER,
        Pipeline::Ember {
            policy: EmberPolicy::Default,
            delay_kick: true,
        },
    ),
    (
        systems::EMBER_NO_DELAY_KICK,
        Pipeline::Ember {
            policy: EmberPolicy::Default,
            delay_kick: false,
        },
    ),
    (
        systems::EMBER_BIASED,
        Pipeline::Ember {
            policy: EmberPolicy::Biased,
            delay_kick: true,
        },
    ),
    (systems::RAYON, Pipeline::Rayon),
    (systems::CHANNEL_PIPELINE, Pipeline::Channel),
];

/// An ember pool for a row: `policy` as in [`EmberPolicy::build`], plus delay-kick and tracing.
fn ember_pool(policy: EmberPolicy, delay_kick: bool, trace: bool, threads: usize) -> Pool {
    policy
        .builder(threads, "cd")
        .tuning(policy.tuning().delay_kick(delay_kick))
        .trace(trace)
        .build()
        .expect("ember pool")
}

/// The table of one stream and bound.
fn group(prep: &Arc<Prepared>, bound: Bound, read_speed: f64, threads: usize) -> Group {
    let rate = prep.read_rate(bound, read_speed);
    let c = &prep.compressed;
    let chains = if c.reset_every >= prep.chunks() {
        "one chain (no reset), the published case".to_string()
    } else {
        format!("reset every {}", c.reset_every)
    };
    let mut title = format!(
        "{}-bound: {}, {} chunks of {} KiB, {chains}, {threads} threads",
        bound.name().to_uppercase(),
        prep.source,
        prep.chunks(),
        c.chunk_size / 1024,
    );
    let mut p = params([
        (crate::tables::key::BOUND, bound.name().into()),
        ("threads", threads.into()),
        ("chunks", prep.chunks().into()),
        ("chunk_kib", (c.chunk_size / 1024).into()),
        (
            crate::tables::key::RESET_EVERY,
            c.reset_every.min(prep.chunks()).into(),
        ),
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
    let trials = ROWS
        .iter()
        .map(|&(system, pipeline)| {
            let prep = prep.clone();
            trial(system, move || run(pipeline, &prep, rate, threads))
        })
        .collect();
    Group {
        title,
        params: p,
        trials,
    }
}

impl Experiment for ChainedDecode {
    fn name(&self) -> &'static str {
        crate::tables::experiment::CHAINED_DECODE
    }

    fn headline(&self) -> &'static [&'static str] {
        &["wall_s", "wakeups", "ctx_switches", "same_thread_share"]
    }

    fn groups(&self, opts: &LabOpts) -> Result<Vec<Group>, String> {
        let streams = self.streams(opts)?;
        let bounds = if self.args.bound.is_empty() {
            vec![Bound::Cpu, Bound::Io]
        } else {
            self.args.bound.clone()
        };
        let threads = opts.cores.max(1);
        let read_speed = self.read_speed();
        let mut groups = vec![group(&streams.one_chain, Bound::Cpu, read_speed, threads)];
        groups.extend(
            bounds
                .into_iter()
                .map(|bound| group(&streams.chains, bound, read_speed, threads)),
        );
        Ok(groups)
    }

    fn artifacts(&self, opts: &LabOpts, out: &Path) -> Vec<Artifact> {
        let Ok(streams) = self.streams(opts) else {
            return Vec::new();
        };
        let prep = streams.one_chain;
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
                "ember, delay-kick {tag}, one chain, CPU-bound, {threads} workers: {} of chained \
                 decodes on their predecessor's thread",
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
        Arc::new(Prepared::from_corpus(
            "test".into(),
            Arc::new(data),
            8192,
            5,
        ))
    }

    /// Every row decodes the exact corpus (`finish` asserts it) in both cases.
    #[test]
    fn every_row_decodes_the_corpus() {
        let prep = small();
        assert_eq!(prep.chunks(), 21);
        for rate in [None, prep.read_rate(Bound::Io, 4.0)] {
            for (system, pipeline) in ROWS {
                let m = run(pipeline, &prep, rate, 2);
                let share = m["same_thread_share"];
                assert!((0.0..=1.0).contains(&share), "{}: {share}", system.name);
                assert!(m["mb_per_s"] > 0.0);
                assert_eq!(
                    m.contains_key("wakeups"),
                    matches!(pipeline, Pipeline::Ember { .. })
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
    fn the_published_one_chain_case_comes_first() {
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
        let g = e.groups(&opts).unwrap();
        assert_eq!(g.len(), 3);
        assert_eq!(g[0].params["bound"], "cpu");
        assert_eq!(g[0].params["reset_every"], 16, "one chain of all 16 chunks");
        assert_eq!(g[1].params["reset_every"], 4);
        assert_eq!(g[2].params["bound"], "io");
        assert!(g[2].params.contains_key("read_mb_per_s"));
        let names: Vec<&str> = g[0].trials.iter().map(|t| t.system.as_str()).collect();
        assert_eq!(
            names,
            [
                "ember",
                "ember-no-delay-kick",
                "ember-biased",
                "rayon",
                "channel-pipeline"
            ]
        );
    }

    #[test]
    fn a_missing_input_is_an_error_not_a_panic() {
        let e = ChainedDecode::new(CdArgs {
            input: Some("/nonexistent/ember-lab-input".into()),
            ..CdArgs::default()
        });
        let opts = LabOpts {
            quick: true,
            repeat: 1,
            cores: 2,
        };
        let err = e.groups(&opts).err().expect("an error");
        assert!(err.contains("--input"), "{err}");
    }
}
