//! The collective part of a distributed flow's drop: its check, its last round (`settle`)
//! and the end of its scheduler thread; run on the dropping thread, or handed to a thread of
//! its own when the dropping thread is a pool's worker (see `flow/README.md`, "A drop on a
//! worker").

use std::panic::{self, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use super::dist::{self, Dist, Transport};
use super::lock;
use super::queue::SubmissionQueue;
use super::scheduler::{Shared, Submission};
use crate::pool::jobs::unwind::drop_payload;
use crate::pool::{WaitList, WorkerThread};

/// What a distributed flow's drop still has to do once the `Flow` itself is gone: everything
/// it needs, owned, so that another thread can do it.
pub(super) struct Closing {
    pub(super) dist: Arc<Dist>,
    pub(super) shared: Arc<Shared>,
    /// The scheduler thread's queue and handle, in a threaded mode: closed and joined last,
    /// once the flow's last submissions were analysed (the last round waits for their tasks).
    pub(super) scheduler: Option<SchedulerThread>,
}

/// A threaded flow's submission queue and its scheduler thread (taken once).
pub(super) type SchedulerThread = (Arc<SubmissionQueue<Submission>>, Option<JoinHandle<()>>);

/// Whether the calling thread is a worker of any pool. A wait there runs that pool's jobs,
/// and one of them may make a collective call of another flow: a drop's collective part
/// does not run there.
pub(super) fn on_a_worker() -> bool {
    WorkerThread::with_any_current(|worker| worker.is_some())
}

impl Closing {
    /// Runs the drop's collective part on a thread of its own, which no pool's job runs on
    /// and which may wait for the flow's tasks. It counts itself in the transport's
    /// [`BackgroundDrops`] from before the thread starts until it has ended, so that the
    /// owner of the transport can wait for it before ending. If the operating system refuses
    /// the thread, the part runs here without waiting for the flow's tasks: the transport is
    /// then left what is in flight, as after a failed check.
    pub(super) fn hand_off(self) {
        let guard = Background::begin(self.dist.transport.clone());
        let flow = self.dist.flow_number();
        let cell = Arc::new(Mutex::new(Some((self, guard))));
        let taken = cell.clone();
        let spawned = std::thread::Builder::new()
            .name(format!("ember-flow-drop-{flow}"))
            .spawn(move || {
                if let Some((closing, _guard)) = lock(&taken).take() {
                    closing.run(true);
                }
            });
        if spawned.is_err() {
            if let Some((closing, _guard)) = lock(&cell).take() {
                closing.run(false);
            }
        }
    }

    /// The drop's check, then (if it passed with no rank troubled) its last round, then the
    /// end of the scheduler thread. With `can_wait` the last round waits for the flow's tasks
    /// and for every other rank's outcome.
    ///
    /// A panic on the way (a transport's method, say) is caught: the other ranks may wait
    /// for what this rank no longer sends, so it ends the job through
    /// [`Transport::abort`], as a kernel's panic does (a panic of that abort, or of a
    /// payload's `Drop`, is caught too, and leaves the job to the transport). The scheduler
    /// thread is closed and joined whatever happens, by a guard.
    pub(super) fn run(self, can_wait: bool) {
        let Closing {
            dist,
            shared,
            scheduler,
        } = self;
        // Dropped last, also while unwinding: the scheduler thread holds a handle of the
        // pool, which would otherwise live for ever.
        let _scheduler = EndScheduler(scheduler);
        let collective = panic::catch_unwind(AssertUnwindSafe(|| {
            // Dropping the flow is collective too: its check tells the other ranks, whose
            // calls at the same check fail unless they drop theirs, and whether this rank
            // had a task that panicked or was cancelled.
            let troubled = lock(&shared.outcomes).troubled;
            let quiet = matches!(dist.check_reporting(dist::Call::Drop, troubled), Ok(false));
            // Once every rank agreed on every group, and no rank lost a task, every receive
            // of this flow has its send on another rank, which waits here for its own: the
            // flow's messages all arrive, and none is left in flight for the transport after
            // the flow. After a failed check, or once a task panicked or was cancelled on
            // some rank (its sends are never made), some may never come: every rank then
            // leaves them to the transport; so does a task lost during the wait, which
            // `settle` tells every rank.
            if quiet {
                settle(&dist, &shared, can_wait);
            }
        }));
        if let Err(payload) = collective {
            abort_for_panic(&*dist.transport, "dropping a flow", payload);
        }
    }
}

/// Closes the scheduler thread's queue and joins the thread when dropped.
pub(super) struct EndScheduler(pub(super) Option<SchedulerThread>);

impl Drop for EndScheduler {
    fn drop(&mut self) {
        if let Some((queue, thread)) = self.0.take() {
            queue.close();
            if let Some(thread) = thread {
                // A panic that ended the thread: its payload's `Drop` may panic too.
                if let Err(payload) = thread.join() {
                    drop_payload(payload);
                }
            }
        }
    }
}

/// [`Transport::abort`], which may panic (a transport's bug): its panic is caught and its
/// payload dropped, and the job is left to the transport, as when its abort returns.
fn abort_containing(transport: &dyn Transport, message: &str) {
    if let Err(payload) = panic::catch_unwind(AssertUnwindSafe(|| transport.abort(message))) {
        drop_payload(payload);
    }
}

/// Ends the job through the transport for a panic of `what`, naming its message; the
/// payload is dropped first (its `Drop` may panic too, and is contained).
fn abort_for_panic(transport: &dyn Transport, what: &str, payload: crate::pool::jobs::job::Panic) {
    let text = crate::task::panic_message(&*payload)
        .unwrap_or("(no message)")
        .to_owned();
    drop_payload(payload);
    abort_containing(transport, &format!("{what} panicked: {text}"));
}

/// [`Transport::background_drops`], which may panic (a transport's bug): a panic ends the
/// job through the transport, as any panic of a drop's collective part does, and counts as
/// a transport that keeps no count.
fn drops_of(transport: &dyn Transport) -> Option<&BackgroundDrops> {
    match panic::catch_unwind(AssertUnwindSafe(|| transport.background_drops())) {
        Ok(drops) => drops,
        Err(payload) => {
            abort_for_panic(transport, "counting a flow's background drop", payload);
            None
        }
    }
}

/// A drop's collective part running on its own thread, counted in its transport's
/// [`BackgroundDrops`] (if it keeps one) from when it is made until it is dropped (also while
/// unwinding). `counted` says whether it was counted: only then does it end its count.
struct Background {
    transport: Arc<dyn Transport>,
    counted: bool,
}

impl Background {
    fn begin(transport: Arc<dyn Transport>) -> Background {
        let drops = drops_of(&*transport);
        if let Some(drops) = drops {
            drops.begin();
        }
        let counted = drops.is_some();
        Background { transport, counted }
    }
}

impl Drop for Background {
    fn drop(&mut self) {
        if self.counted {
            if let Some(drops) = drops_of(&*self.transport) {
                drops.end();
            }
        }
    }
}

/// What a drop's last round heard from the other ranks.
#[derive(Default)]
struct Heard {
    /// Outcomes arrived, or that the transport said will never arrive.
    count: AtomicUsize,
    /// Whether one said its rank lost a task.
    lost: AtomicBool,
    /// Whether the transport dropped a receive's callback uncalled: that outcome will never
    /// come, nor, likely, the flow's other messages.
    gone: AtomicBool,
}

/// One peer's outcome, when the transport delivers it, or word that it never will (the
/// callback dropped uncalled, as the transport does once its progress has ended): either
/// counts, so that the last round's wait ends.
struct Outcome {
    heard: Arc<Heard>,
    shared: Arc<Shared>,
    called: bool,
}

impl Outcome {
    fn deliver(&mut self, bytes: Vec<u8>) {
        if bytes.first() != Some(&0) {
            self.heard.lost.store(true, Ordering::SeqCst);
        }
        self.heard.count.fetch_add(1, Ordering::SeqCst);
        self.called = true;
        self.shared.settle.notify_changed(|| true);
    }
}

impl Drop for Outcome {
    fn drop(&mut self) {
        if !self.called {
            self.heard.gone.store(true, Ordering::SeqCst);
            self.heard.count.fetch_add(1, Ordering::SeqCst);
            self.shared.settle.notify_changed(|| true);
        }
    }
}

/// The drop's wait, after a check that passed with no rank reporting a lost task: every
/// rank waits until its tasks have ended or a task is lost (here, or on a rank that says so),
/// then sends every other rank its outcome (whether it lost a task) and waits for theirs. A
/// task lost after the check (a kernel that panics late, with an abort that returns) so stops
/// every rank's wait instead of leaving a rank waiting for a message its send will never
/// bring. A receive of an outcome that the transport drops uncalled (its progress ended)
/// ends both waits too. Without `can_wait` the rank sends its outcome at once and waits for
/// nothing.
fn settle(dist: &Dist, shared: &Arc<Shared>, can_wait: bool) {
    let (tag, peers) = dist.last_round();
    let heard = Arc::new(Heard::default());
    for &peer in &peers {
        let mut outcome = Outcome {
            heard: heard.clone(),
            shared: shared.clone(),
            called: false,
        };
        let done = move |bytes: Vec<u8>| outcome.deliver(bytes);
        dist.transport.receive(peer, tag, 8, Box::new(done));
    }
    // A transport that lost a message ends the wait as a lost task does: what it lost may be
    // what a task here waits for.
    let lost = || {
        lock(&shared.outcomes).troubled
            || heard.lost.load(Ordering::SeqCst)
            || heard.gone.load(Ordering::SeqCst)
    };
    if can_wait {
        let ended = || lock(&shared.outcomes).pending == 0 || lost();
        while !ended() {
            shared.settle.wait(&ended, None);
        }
    }
    let mine = u8::from(lock(&shared.outcomes).troubled);
    for &peer in &peers {
        dist.transport.send(peer, tag, vec![mine; 8]);
    }
    if can_wait {
        let all = || heard.count.load(Ordering::SeqCst) == peers.len();
        while !all() {
            shared.settle.wait(&all, None);
        }
    }
}

/// The flow drops of one transport whose collective part runs on a thread of its own (see
/// [`Transport::background_drops`]), for the owner of the transport, which must not end
/// before they have: it [`wait`](Self::wait)s for them (over MPI, before `MPI_Finalize`).
///
/// Such a drop waits for what a drop made on the program's own thread waits for: its flow's
/// tasks and the other ranks' check and last round of the same flow, which a slower rank
/// makes later. The owner waits for it without a limit, as it would for a drop on its own
/// thread: a rank that never answers leaves either waiting.
pub struct BackgroundDrops {
    running: AtomicUsize,
    /// Waiters for the count to fall to zero: a thread parks, a pool's worker runs its
    /// pool's jobs (the drops may wait for tasks queued there).
    ended: WaitList,
}

impl Default for BackgroundDrops {
    fn default() -> Self {
        BackgroundDrops {
            running: AtomicUsize::new(0),
            ended: WaitList::new(),
        }
    }
}

impl std::fmt::Debug for BackgroundDrops {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BackgroundDrops")
            .field("running", &self.running())
            .finish_non_exhaustive()
    }
}

impl BackgroundDrops {
    /// A count of none.
    pub fn new() -> Self {
        Self::default()
    }

    /// How many run now.
    pub fn running(&self) -> usize {
        self.running.load(Ordering::SeqCst)
    }

    /// Waits until none runs, for at most `timeout` if one is given, and returns how many
    /// still run (`0`: all ended).
    ///
    /// On a pool's worker (a World dropped inside a job, say) it runs that pool's jobs while
    /// it waits, as every wait in ember does: the drops may wait for their flows' tasks,
    /// queued on this very worker.
    pub fn wait(&self, timeout: Option<Duration>) -> usize {
        let deadline = timeout.and_then(|t| Instant::now().checked_add(t));
        let none = || self.running() == 0;
        // A wake-up says the count fell to zero; a drop that began since may have raised it
        // again.
        while !none() {
            if !self.ended.wait(&none, deadline) {
                break;
            }
        }
        self.running()
    }

    fn begin(&self) {
        self.running.fetch_add(1, Ordering::SeqCst);
    }

    /// One drop ended (each [`begin`](Self::begin) is followed by one `end`); wakes the
    /// waiters if none runs any more.
    fn end(&self) {
        // Saturating: a transport whose `background_drops` gave another count at the
        // beginning must not wrap this one.
        let _ = self
            .running
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1));
        self.ended.notify_changed(|| self.running() == 0);
    }
}
