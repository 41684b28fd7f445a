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

/// A token for the calling OS thread, unique in the process (never 0).
fn thread_token() -> u64 {
    static NEXT: AtomicU64 = AtomicU64::new(1);
    thread_local! {
        static TOKEN: u64 = NEXT.fetch_add(1, Ordering::Relaxed);
    }
    TOKEN.with(|t| *t)
}

/// The state of one run, shared by the reader and the decoders.
struct Shared {
    prep: Arc<Prepared>,
    /// Chunk i's compressed block, once read.
    read: Vec<OnceLock<Vec<u8>>>,
    /// Chunk i decoded.
    out: Vec<OnceLock<Vec<u8>>>,
    /// Token of the thread that decoded chunk i.
    thread: Vec<AtomicU64>,
    /// Inputs of chunk i's decode not yet finished (rows that track readiness by hand).
    pending: Vec<AtomicU8>,
    useful_ns: AtomicU64,
    started: Instant,
}

/// What a finished run found.
struct Outcome {
    same_thread_share: Option<f64>,
    useful_s: f64,
}

impl Shared {
    fn new(prep: Arc<Prepared>) -> Shared {
        let n = prep.chunks();
        Shared {
            read: (0..n).map(|_| OnceLock::new()).collect(),
            out: (0..n).map(|_| OnceLock::new()).collect(),
            thread: (0..n).map(|_| AtomicU64::new(0)).collect(),
            pending: prep
                .compressed
                .chunks
                .iter()
                .map(|c| AtomicU8::new(1 + c.linked as u8))
                .collect(),
            useful_ns: AtomicU64::new(0),
            started: Instant::now(),
            prep,
        }
    }

    fn chunks(&self) -> usize {
        self.out.len()
    }

    /// Reads chunk `i`: copies its block into the chunk's read buffer.
    fn read(&self, i: usize) {
        let block = self.prep.compressed.chunks[i].data.clone();
        assert!(self.read[i].set(block).is_ok(), "chunk {i} read twice");
    }

    /// Decodes chunk `i`; its block must be read and its predecessor (if linked) decoded.
    fn decode(&self, i: usize) {
        timed(&self.useful_ns, || {
            let chunk = &self.prep.compressed.chunks[i];
            let block = self.read[i]
                .get()
                .unwrap_or_else(|| panic!("decode {i} ran before its read"));
            let prev = chunk.linked.then(|| {
                self.out[i - 1]
                    .get()
                    .unwrap_or_else(|| panic!("decode {i} ran before decode {}", i - 1))
                    .as_slice()
            });
            let v = codec::decode(chunk, block, prev);
            assert!(self.out[i].set(v).is_ok(), "chunk {i} decoded twice");
        });
        self.thread[i].store(thread_token(), Ordering::Relaxed);
    }

    /// Counts one input of chunk `i` done; true if it was the last (the decode is ready).
    fn input_done(&self, i: usize) -> bool {
        self.pending[i].fetch_sub(1, Ordering::AcqRel) == 1
    }

    /// The chunk whose decode waits for decode `i`, if any.
    fn successor(&self, i: usize) -> Option<usize> {
        let next = i + 1;
        (next < self.chunks() && self.prep.compressed.chunks[next].linked).then_some(next)
    }

    /// Verifies the output byte for byte (panics on any difference) and computes the
    /// same-thread share.
    fn finish(&self) -> Outcome {
        let decoded: Vec<&[u8]> = self
            .out
            .iter()
            .enumerate()
            .map(|(i, o)| {
                o.get()
                    .unwrap_or_else(|| panic!("chunk {i} was never decoded"))
                    .as_slice()
            })
            .collect();
        codec::verify(&self.prep.corpus, &self.prep.compressed, &decoded);
        let (mut chained, mut same) = (0usize, 0usize);
        for (i, c) in self.prep.compressed.chunks.iter().enumerate() {
            if c.linked {
                chained += 1;
                let (a, b) = (
                    self.thread[i - 1].load(Ordering::Relaxed),
                    self.thread[i].load(Ordering::Relaxed),
                );
                same += (a == b && a != 0) as usize;
            }
        }
        Outcome {
            same_thread_share: (chained > 0).then(|| same as f64 / chained as f64),
            useful_s: self.useful_ns.load(Ordering::Relaxed) as f64 * 1e-9,
        }
    }
}

/// The reader: reads every chunk in order, at `rate` compressed bytes per second if given,
/// and calls `readable(i)` after chunk i is read.
fn reader(shared: &Shared, rate: Option<f64>, mut readable: impl FnMut(usize)) {
    let start = Instant::now();
    let mut bytes = 0usize;
    for i in 0..shared.chunks() {
        if let Some(rate) = rate {
            bytes += shared.prep.compressed.chunks[i].data.len();
            let due = start + Duration::from_secs_f64(bytes as f64 / rate);
            let now = Instant::now();
            if due > now {
                thread::sleep(due - now);
            }
        }
        shared.read(i);
        readable(i);
    }
}

fn spawn_reader(
    shared: Arc<Shared>,
    rate: Option<f64>,
    readable: impl FnMut(usize) + Send + 'static,
) -> thread::JoinHandle<()> {
    thread::Builder::new()
        .name("cd-reader".into())
        .spawn(move || reader(&shared, rate, readable))
        .expect("spawn reader")
}

/// One measured run of `sys`: builds its pool or threads, decodes the whole stream, tears
/// everything down, verifies the output.
fn run(sys: System, prep: &Arc<Prepared>, rate: Option<f64>, threads: usize) -> Metrics {
    let shared = Arc::new(Shared::new(prep.clone()));
    let mut stats = None;
    let elapsed = match sys {
        System::Ember { policy, delay_kick } => {
            let pool = ember_pool(policy, delay_kick, false, threads);
            let (elapsed, s) = ember_pipeline(&shared, &pool, rate);
            drop(pool);
            stats = Some(s);
            elapsed
        }
        System::Rayon => rayon_pipeline(&shared, rate, threads),
        System::Channel => channel_pipeline(&shared, rate, threads),
    };
    let outcome = shared.finish();
    let mut m = Metrics::new();
    m.insert("useful_cpu_s".into(), outcome.useful_s);
    m.insert(
        "mb_per_s".into(),
        prep.corpus.len() as f64 / 1e6 / elapsed.as_secs_f64().max(1e-9),
    );
    if let Some(share) = outcome.same_thread_share {
        m.insert("same_thread_share".into(), share);
    }
    if let Some(s) = stats {
        m.insert("wakeups".into(), s.wakeups_issued as f64);
        m.insert("kicks".into(), s.kicks as f64);
    }
    m
}

/// The ember pipeline on `pool`: every decode a dependent task, the reader completing one
/// `Event` per chunk. Returns the pipeline's time and the pool's stats once every decode has
/// finished.
fn ember_pipeline(shared: &Arc<Shared>, pool: &Pool, rate: Option<f64>) -> (Duration, PoolStats) {
    let n = shared.chunks();
    let reads: Vec<ember::Event> = (0..n).map(|_| pool.event()).collect();
    let mut decodes: Vec<Task<()>> = Vec::with_capacity(n);
    for i in 0..n {
        let s = shared.clone();
        let mut inputs: Vec<&dyn Dependency> = vec![&reads[i]];
        if shared.prep.compressed.chunks[i].linked {
            inputs.push(&decodes[i - 1]);
        }
        let task = pool
            .task(move || s.decode(i))
            .after(&inputs)
            .label(format!("decode {i}"))
            .spawn();
        decodes.push(task);
    }
    // The last decode of every chain.
    let tails: Vec<&dyn Dependency> = (0..n)
        .filter(|&i| shared.successor(i).is_none())
        .map(|i| &decodes[i] as &dyn Dependency)
        .collect();
    let reader = spawn_reader(shared.clone(), rate, {
        let mut reads = reads.into_iter();
        move |_i| {
            let event = reads.next().expect("one event per chunk");
            event.complete();
        }
    });
    // One wait for the whole stream, like the other rows' latch: joining each decode in turn
    // would park and wake this thread once per chunk.
    let all = pool.task(|| ()).after(&tails).label("done").spawn();
    let all_ok = all.join().is_ok();
    let elapsed = shared.started.elapsed();
    for (i, t) in decodes.into_iter().enumerate() {
        if let Err(e) = t.join() {
            panic!("decode {i} failed: {e}");
        }
    }
    assert!(all_ok, "a decode failed");
    reader.join().expect("reader panicked");
    (elapsed, pool.stats())
}

/// Decodes chunk `i` on the rayon pool it runs on, then spawns its successor if that was the
/// successor's last input.
fn rayon_decode(shared: Arc<Shared>, i: usize, latch: Arc<Latch>) {
    shared.decode(i);
    if let Some(next) = shared.successor(i) {
        if shared.input_done(next) {
            let (s, l) = (shared.clone(), latch.clone());
            rayon::spawn(move || rayon_decode(s, next, l));
        }
    }
    latch.count_down(1);
}

fn rayon_pipeline(shared: &Arc<Shared>, rate: Option<f64>, threads: usize) -> Duration {
    let (pool, handles) = rayon_pool(threads, "cd-rayon");
    let pool = Arc::new(pool);
    let latch = Arc::new(Latch::new(shared.chunks()));
    let reader = spawn_reader(shared.clone(), rate, {
        let (s, pool, latch) = (shared.clone(), pool.clone(), latch.clone());
        move |i| {
            if s.input_done(i) {
                let (s, l) = (s.clone(), latch.clone());
                pool.spawn(move || rayon_decode(s, i, l));
            }
        }
    });
    latch.wait();
    let elapsed = shared.started.elapsed();
    reader.join().expect("reader panicked");
    let pool = Arc::try_unwrap(pool).unwrap_or_else(|_| panic!("rayon pool still shared"));
    rayon_shutdown(pool, handles);
    elapsed
}

/// Sent to a decoder thread to make it exit.
const STOP: usize = usize::MAX;

fn channel_pipeline(shared: &Arc<Shared>, rate: Option<f64>, threads: usize) -> Duration {
    let (tx, rx) = crossbeam_channel::unbounded::<usize>();
    let done = Arc::new(AtomicUsize::new(0));
    let decoders: Vec<_> = (0..threads)
        .map(|t| {
            let (s, tx, rx, done) = (shared.clone(), tx.clone(), rx.clone(), done.clone());
            thread::Builder::new()
                .name(format!("cd-decoder-{t}"))
                .spawn(move || {
                    for i in rx.iter() {
                        if i == STOP {
                            break;
                        }
                        s.decode(i);
                        if let Some(next) = s.successor(i) {
                            if s.input_done(next) {
                                tx.send(next).expect("decoders alive");
                            }
                        }
                        if done.fetch_add(1, Ordering::AcqRel) + 1 == s.chunks() {
                            for _ in 0..threads {
                                tx.send(STOP).expect("decoders alive");
                            }
                        }
                    }
                })
                .expect("spawn decoder")
        })
        .collect();
    let reader = spawn_reader(shared.clone(), rate, {
        let s = shared.clone();
        move |i| {
            if s.input_done(i) {
                tx.send(i).expect("decoders alive");
            }
        }
    });
    for d in decoders {
        d.join().expect("decoder panicked");
    }
    let elapsed = shared.started.elapsed();
    reader.join().expect("reader panicked");
    elapsed
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
