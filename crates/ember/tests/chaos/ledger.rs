//! The chaos test's books: one slot per job and per injected panic, and the values whose
//! `Drop` the test watches (job tokens, panic payloads, charges that panic when dropped).
//!
//! Kept apart from `chaos.rs` so that file reads as the plan of operations, and this one as
//! the accounting every operation feeds.
//!
//! A *job* slot is opened when its closure is made, with the outcome the plan expects (run,
//! panic, cancelled, never run). The closure captures a [`Token`]: the body marks it started,
//! and the token's `Drop` marks the closure ended, whether it ran, unwound or was dropped
//! unrun. A *boom* slot is opened for every injected panic: receipts (by the test's own
//! `catch_unwind`, a `join` result or a pool's panic handler) count as starts, and the
//! payload's `Drop` ends it. At the end every slot must have ended exactly once, and started
//! exactly as the plan said.

use std::any::Any;
use std::cell::RefCell;
use std::fmt::Write as _;
use std::panic::{self, AssertUnwindSafe};
use std::sync::atomic::{AtomicI64, AtomicU16, AtomicU64, AtomicU8, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

const CHUNK: usize = 1 << 14;
const CHUNKS: usize = 1 << 12;

/// What a slot stands for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Spawn,
    JoinSide,
    ScopeBody,
    ScopeJob,
    Task,
    ParFor,
    ChainLevel,
    Transient,
    Boom,
}
const KINDS: [Kind; 9] = [
    Kind::Spawn,
    Kind::JoinSide,
    Kind::ScopeBody,
    Kind::ScopeJob,
    Kind::Task,
    Kind::ParFor,
    Kind::ChainLevel,
    Kind::Transient,
    Kind::Boom,
];

/// What the plan expects of a slot. For booms: whether a receipt is required.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Expect {
    Run,
    Panic,
    Cancel,
    /// A task with an input of another pool (`TaskError::ForeignPool`).
    Never,
    MustReceive,
    MayReceive,
}
const EXPECTS: [Expect; 6] = [
    Expect::Run,
    Expect::Panic,
    Expect::Cancel,
    Expect::Never,
    Expect::MustReceive,
    Expect::MayReceive,
];

/// Where an injected panic is raised.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Site {
    /// The body of a spawned job or a task: a panic the pool counts as the job's own.
    Body,
    /// `Drop` of a task's result.
    ResultDrop,
    /// `Drop` of a value captured by a task closure that never ran (cancelled).
    ClosureDrop,
    /// `Drop` of a panic payload.
    PayloadDrop,
    /// The body of a job somebody waits for (join side, scope body or job, loop chunk, chain
    /// level): its panic is re-raised to the waiter, or, when another panic of the same call
    /// is re-raised instead, reported to the pool (counted in `stats().panics`).
    WaitedBody,
}
const SITES: [Site; 5] = [
    Site::Body,
    Site::ResultDrop,
    Site::ClosureDrop,
    Site::PayloadDrop,
    Site::WaitedBody,
];

/// Operations and events counted for the report.
#[derive(Clone, Copy, Debug)]
pub enum Count {
    Operation,
    Spawn,
    Join,
    Scope,
    Task,
    ForeignTask,
    TaskJoined,
    TaskJoinedElsewhere,
    TaskDropped,
    EventCompleted,
    EventDropped,
    EventElsewhere,
    ParallelFor,
    Chain,
    CrossPoolWait,
    TransientPool,
    SharedWithJobs,
    LastHandleInOwnJob,
    LastHandleInOtherPool,
}
const COUNT_NAMES: [&str; 19] = [
    "operations",
    "spawn",
    "join",
    "scope",
    "task",
    "foreign task",
    "task joined",
    "task joined in a job",
    "task handle dropped",
    "event completed",
    "event dropped",
    "event ended in a job",
    "parallel_for",
    "chain",
    "cross-pool wait",
    "transient pool",
    "transient pool shared with its jobs",
    "last handle dropped in its own job",
    "last handle dropped in another pool",
];

#[derive(Default)]
struct Slot {
    meta: AtomicU16,
    started: AtomicU8,
    ended: AtomicU8,
}

/// Slot `aux` for jobs of a pool made for one operation and dropped (not one of the three).
pub const TRANSIENT: usize = 3;

pub struct Ledger {
    chunks: Box<[OnceLock<Box<[Slot]>>]>,
    next: AtomicUsize,
    outstanding: AtomicI64,
    progress: AtomicU64,
    counts: [AtomicU64; COUNT_NAMES.len()],
    fired: [AtomicU64; SITES.len()],
    /// Per persistent pool: payloads its panic handler received, planned spawn and task
    /// body panics.
    pub handled: [AtomicU64; 3],
    pub spawn_panics: [AtomicU64; 3],
    pub task_panics: [AtomicU64; 3],
    violations: Mutex<Vec<String>>,
    exits: Mutex<Vec<String>>,
    pub phase: Mutex<&'static str>,
}

impl Ledger {
    pub fn new() -> Arc<Self> {
        Arc::new(Ledger {
            chunks: (0..CHUNKS).map(|_| OnceLock::new()).collect(),
            next: AtomicUsize::new(0),
            outstanding: AtomicI64::new(0),
            progress: AtomicU64::new(0),
            counts: Default::default(),
            fired: Default::default(),
            handled: Default::default(),
            spawn_panics: Default::default(),
            task_panics: Default::default(),
            violations: Mutex::new(Vec::new()),
            exits: Mutex::new(Vec::new()),
            phase: Mutex::new("chaos"),
        })
    }

    fn slot(&self, id: u32) -> &Slot {
        let id = id as usize;
        let chunk = self.chunks[id / CHUNK].get_or_init(|| {
            (0..CHUNK)
                .map(|_| Slot::default())
                .collect::<Vec<_>>()
                .into()
        });
        &chunk[id % CHUNK]
    }

    /// Opens a slot; it must end exactly once before the run ends.
    pub fn open(&self, kind: Kind, expect: Expect, aux: usize) -> u32 {
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        if id >= CHUNK * CHUNKS {
            // Inside a job a panic would be mistaken for the job's own: stop at once.
            eprintln!("ember chaos: the ledger is full ({id} slots); run fewer operations");
            std::process::abort();
        }
        self.outstanding.fetch_add(1, Ordering::SeqCst);
        let meta = kind as u16 | (expect as u16) << 4 | (aux as u16) << 8;
        self.slot(id as u32).meta.store(meta, Ordering::Relaxed);
        id as u32
    }

    pub fn token(self: &Arc<Self>, kind: Kind, expect: Expect, aux: usize) -> Token {
        Token {
            id: self.open(kind, expect, aux),
            ledger: Arc::clone(self),
        }
    }

    fn start(&self, id: u32) {
        self.slot(id).started.fetch_add(1, Ordering::SeqCst);
    }

    fn end(&self, id: u32) {
        self.slot(id).ended.fetch_add(1, Ordering::SeqCst);
        self.outstanding.fetch_sub(1, Ordering::SeqCst);
        self.progress.fetch_add(1, Ordering::Relaxed);
    }

    /// Whether slot `id` has ended (its closure ran to the end or was dropped).
    pub fn ended(&self, id: u32) -> bool {
        self.slot(id).ended.load(Ordering::SeqCst) > 0
    }

    /// Slots opened and not yet ended.
    pub fn outstanding(&self) -> i64 {
        self.outstanding.load(Ordering::SeqCst)
    }

    /// Slots ended so far: what the watchdog watches.
    pub fn progress(&self) -> u64 {
        self.progress.load(Ordering::Relaxed)
    }

    pub fn count(&self, what: Count) {
        self.counts[what as usize].fetch_add(1, Ordering::Relaxed);
    }

    /// Records a broken expectation (never panics: it may run inside a job).
    pub fn violation(&self, what: String) {
        let mut all = self.violations.lock().unwrap_or_else(|p| p.into_inner());
        all.push(what);
    }

    /// Takes delivery of a caught panic payload: counts the receipt of an injected one (a
    /// foreign payload is a violation), then drops it, catching a panicking `Drop`. Returns
    /// the job the panic came from.
    pub fn receive(&self, payload: Box<dyn Any + Send>) -> Option<u32> {
        let origin = match payload.downcast_ref::<Boom>() {
            Some(boom) => {
                self.start(boom.id);
                Some(boom.origin)
            }
            None => {
                self.violation(format!(
                    "a panic that the test did not inject: {}",
                    message(&*payload)
                ));
                None
            }
        };
        self.drop_guarded(payload);
        origin
    }

    /// Drops `value` as user code would, catching (and receiving) a panic of its `Drop`.
    pub fn drop_guarded<T>(&self, value: T) {
        if let Err(payload) = panic::catch_unwind(AssertUnwindSafe(move || drop(value))) {
            self.receive(payload);
        }
    }

    pub fn note_exit(&self, thread: String) {
        self.exits.lock().unwrap().push(thread);
    }

    pub fn exits(&self) -> Vec<String> {
        self.exits.lock().unwrap().clone()
    }

    /// Checks every slot against the plan; returns the violations of the run.
    pub fn check(&self) -> Vec<String> {
        let mut found = std::mem::take(&mut *self.violations.lock().unwrap());
        let mut bad = 0usize;
        for id in 0..self.next.load(Ordering::SeqCst) as u32 {
            let (kind, expect, aux, started, ended) = self.read(id);
            let ok = match expect {
                Expect::Run | Expect::Panic => started == 1 && ended == 1,
                Expect::Cancel | Expect::Never => started == 0 && ended == 1,
                Expect::MustReceive => started == 1 && ended == 1,
                Expect::MayReceive => started <= 1 && ended == 1,
            };
            if !ok {
                bad += 1;
                if bad <= 20 {
                    found.push(format!(
                        "slot {id} ({kind:?}, pool {aux}, expected {expect:?}): started \
                         {started} time(s), ended {ended} time(s)"
                    ));
                }
            }
        }
        if bad > 20 {
            found.push(format!("… {} more slots like these", bad - 20));
        }
        found
    }

    fn read(&self, id: u32) -> (Kind, Expect, usize, u8, u8) {
        let slot = self.slot(id);
        let meta = slot.meta.load(Ordering::Relaxed);
        (
            KINDS[usize::from(meta & 0xf)],
            EXPECTS[usize::from((meta >> 4) & 0xf)],
            usize::from(meta >> 8),
            slot.started.load(Ordering::SeqCst),
            slot.ended.load(Ordering::SeqCst),
        )
    }

    /// Injected booms whose payload nobody received, other than the bodies of spawned jobs
    /// and tasks (counted apart): the panics a pool without a handler counts and drops.
    pub fn unreceived_drop_booms(&self) -> u64 {
        (0..self.next.load(Ordering::SeqCst) as u32)
            .map(|id| self.read(id))
            .filter(|&(kind, _, aux, started, _)| {
                kind == Kind::Boom && started == 0 && SITES[aux] != Site::Body
            })
            .count() as u64
    }

    /// The first `limit` slots that have not ended, for the watchdog.
    pub fn pending(&self, limit: usize) -> String {
        let mut out = String::new();
        let mut shown = 0;
        for id in 0..self.next.load(Ordering::SeqCst) as u32 {
            let (kind, expect, aux, started, ended) = self.read(id);
            if ended == 0 && shown < limit {
                shown += 1;
                let _ = write!(
                    out,
                    "\n  slot {id}: {kind:?} of pool {aux}, expected {expect:?}, started {started}"
                );
            }
        }
        out
    }

    /// Counts of the run: operations by kind, panics injected by site, job outcomes.
    pub fn tally(&self) -> Tally {
        let mut tally = Tally::default();
        for id in 0..self.next.load(Ordering::SeqCst) as u32 {
            let (kind, expect, _, started, _) = self.read(id);
            if kind != Kind::Boom {
                let outcome = match (expect, started) {
                    (Expect::Panic, 1) => 1,
                    (_, 1) => 0,
                    _ => 2,
                };
                tally.outcomes[outcome] += 1;
            }
        }
        for (sum, count) in tally.counts.iter_mut().zip(&self.counts) {
            *sum = count.load(Ordering::Relaxed);
        }
        for (sum, count) in tally.fired.iter_mut().zip(&self.fired) {
            *sum = count.load(Ordering::Relaxed);
        }
        tally
    }
}

/// What a run did, for the report; runs add up.
#[derive(Clone, Default)]
pub struct Tally {
    /// Jobs that ran, panicked, were cancelled (or never ran: a foreign input).
    outcomes: [u64; 3],
    counts: [u64; COUNT_NAMES.len()],
    fired: [u64; SITES.len()],
}

impl Tally {
    pub fn add(&mut self, other: &Tally) {
        let pairs = (self.outcomes.iter_mut().zip(&other.outcomes))
            .chain(self.counts.iter_mut().zip(&other.counts))
            .chain(self.fired.iter_mut().zip(&other.fired));
        for (sum, more) in pairs {
            *sum += more;
        }
    }

    pub fn operations(&self) -> u64 {
        self.counts[Count::Operation as usize]
    }
}

impl std::fmt::Display for Tally {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let [ran, panicked, cancelled] = self.outcomes;
        write!(
            f,
            "jobs: {} ({ran} ran, {panicked} panicked, {cancelled} cancelled or never run)\n\
             operations by kind:",
            ran + panicked + cancelled
        )?;
        for (name, count) in COUNT_NAMES.iter().zip(&self.counts) {
            write!(f, " {name} {count};")?;
        }
        write!(f, "\npanics injected:")?;
        for (site, count) in SITES.iter().zip(&self.fired) {
            write!(f, " {site:?} {count};")?;
        }
        Ok(())
    }
}

/// Captured by every job closure: the body calls [`Token::start`]; the `Drop` marks the end.
pub struct Token {
    ledger: Arc<Ledger>,
    pub id: u32,
}

impl Token {
    pub fn start(&self) {
        self.ledger.start(self.id);
    }
}

impl Drop for Token {
    fn drop(&mut self) {
        self.ledger.end(self.id);
    }
}

/// The payload of every injected panic. An `armed` one panics again when dropped.
pub struct Boom {
    ledger: Arc<Ledger>,
    id: u32,
    pub origin: u32,
    armed: bool,
}

impl Drop for Boom {
    fn drop(&mut self) {
        self.ledger.end(self.id);
        if self.armed {
            fire(&self.ledger, Site::PayloadDrop, self.id, false, false);
        }
    }
}

/// Raises an injected panic from `site` for job `origin`. `must_receive`: a panic handler
/// or the test must get the payload (it may not vanish).
pub fn fire(ledger: &Arc<Ledger>, site: Site, origin: u32, armed: bool, must_receive: bool) -> ! {
    let expect = if must_receive {
        Expect::MustReceive
    } else {
        Expect::MayReceive
    };
    let site = match site {
        Site::Body if !matches!(ledger.read(origin).0, Kind::Spawn | Kind::Task) => {
            Site::WaitedBody
        }
        site => site,
    };
    let id = ledger.open(Kind::Boom, expect, site as usize);
    ledger.fired[site as usize].fetch_add(1, Ordering::Relaxed);
    panic::panic_any(Boom {
        ledger: Arc::clone(ledger),
        id,
        origin,
        armed,
    })
}

/// A value that panics when dropped unless defused (or made unarmed).
pub struct Charge {
    ledger: Option<Arc<Ledger>>,
    site: Site,
    origin: u32,
}

impl Charge {
    pub fn new(ledger: &Arc<Ledger>, armed: bool, site: Site, origin: u32) -> Self {
        Charge {
            ledger: armed.then(|| Arc::clone(ledger)),
            site,
            origin,
        }
    }

    /// A charge that never goes off.
    pub fn inert() -> Self {
        Charge {
            ledger: None,
            site: Site::Body,
            origin: 0,
        }
    }

    pub fn defuse(mut self) {
        self.ledger = None;
    }
}

impl Drop for Charge {
    fn drop(&mut self) {
        if let Some(ledger) = self.ledger.take() {
            fire(&ledger, self.site, self.origin, false, false);
        }
    }
}

/// The message of a non-injected panic payload.
pub fn message(payload: &(dyn Any + Send)) -> &str {
    payload
        .downcast_ref::<&str>()
        .copied()
        .or_else(|| payload.downcast_ref::<String>().map(String::as_str))
        .unwrap_or("a payload of another type")
}

/// Silences the panic hook for injected panics (there are thousands); others print as usual.
pub fn quiet_injected_panics() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let default = panic::take_hook();
        panic::set_hook(Box::new(move |info| {
            if info.payload().downcast_ref::<Boom>().is_none() {
                default(info);
            }
        }));
    });
}

/// Records the exit of this thread (a pool worker) in `ledger` when the thread ends, so a
/// worker that died while its pool lived can be named.
pub fn watch_thread_exit(ledger: &Arc<Ledger>) {
    struct OnExit(Arc<Ledger>, String);
    impl Drop for OnExit {
        fn drop(&mut self) {
            self.0.note_exit(std::mem::take(&mut self.1));
        }
    }
    thread_local!(static ON_EXIT: RefCell<Option<OnExit>> = const { RefCell::new(None) });
    ON_EXIT.with(|slot| {
        let mut slot = slot.borrow_mut();
        if slot.is_none() {
            let name = std::thread::current().name().unwrap_or("?").to_owned();
            *slot = Some(OnExit(Arc::clone(ledger), name));
        }
    });
}
