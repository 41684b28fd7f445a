//! One run of `chained-decode`: the reader thread, and the decode pipeline of each row
//! (ember's dependent tasks, rayon's hand-made readiness counts, a channel of decoder
//! threads), all over one [`Shared`] state that checks the output.

use super::*;

/// A token for the calling OS thread, unique in the process (never 0).
fn thread_token() -> u64 {
    static NEXT: AtomicU64 = AtomicU64::new(1);
    thread_local! {
        static TOKEN: u64 = NEXT.fetch_add(1, Ordering::Relaxed);
    }
    TOKEN.with(|t| *t)
}

/// The state of one run, shared by the reader and the decoders.
pub(super) struct Shared {
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
pub(super) struct Outcome {
    pub(super) same_thread_share: Option<f64>,
    useful_s: f64,
}

impl Shared {
    pub(super) fn new(prep: Arc<Prepared>) -> Shared {
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
    pub(super) fn finish(&self) -> Outcome {
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
pub(super) fn run(
    pipeline: Pipeline,
    prep: &Arc<Prepared>,
    rate: Option<f64>,
    threads: usize,
) -> Metrics {
    let shared = Arc::new(Shared::new(prep.clone()));
    let mut stats = None;
    let elapsed = match pipeline {
        Pipeline::Ember { policy, delay_kick } => {
            let pool = ember_pool(policy, delay_kick, false, threads);
            let (elapsed, s) = ember_pipeline(&shared, &pool, rate);
            drop(pool);
            stats = Some(s);
            elapsed
        }
        Pipeline::Rayon => rayon_pipeline(&shared, rate, threads),
        Pipeline::Channel => channel_pipeline(&shared, rate, threads),
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
pub(super) fn ember_pipeline(
    shared: &Arc<Shared>,
    pool: &Pool,
    rate: Option<f64>,
) -> (Duration, PoolStats) {
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
