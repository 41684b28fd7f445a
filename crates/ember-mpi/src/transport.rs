//! The flow's transport over MPI: one progress thread makes every MPI call.
//!
//! The flow hands it sends (bytes it owns) and receives (a length and a callback) without
//! waiting. Every message travels under one MPI tag, [`MPI_TAG`], with the flow's 64-bit
//! tag in its last eight bytes: the progress thread posts a send as `MPI_Isend` on
//! `MPI_COMM_WORLD` and drops its bytes once `MPI_Test` says it completed. While any
//! receive is posted it takes every message that has arrived, from any rank
//! (`MPI_Improbe`, then `MPI_Imrecv` into a buffer of the size that arrived), reads its
//! flow tag and hands it to the receive posted for that sender and tag, or keeps it until
//! that receive is posted. So a message reaches the receive of its own full tag and no
//! other, however many of a pair are in flight; and a message of another size than expected
//! (ranks that submitted different graphs) is delivered as it is (the flow ignores it and
//! its check reports the divergence) instead of being an MPI truncation error that kills
//! the job first. It polls while requests or receives are outstanding (yielding, then
//! sleeping in short waits for new commands) and sleeps while none are. Dropping the world
//! first waits for the drops of its flows that went on on threads of their own (flows
//! dropped on a pool's worker: [`BackgroundDrops`]), which still send and receive; then it
//! closes the command channel (the transport's only sender, taken under its lock, so a
//! command is either in the channel before it closes or refused, ending the job: never
//! lost); the thread ends once the channel is closed and drained and nothing is
//! outstanding, taking whatever arrives meanwhile. If nothing completes or arrives for
//! [`give_up`] (10 s, or `EMBER_MPI_GIVE_UP_MS` milliseconds) — receives or sends that no
//! rank will match: ranks that diverged — it gives up and the world ends the job, naming
//! what was left, rather than wait in `MPI_Finalize` for ever, here or on the other rank.
//! `MPI_Init_thread`/`MPI_Finalize` run on the world's thread and `MPI_Abort` on whichever
//! thread ends the job; a lock keeps every MPI call apart, so `MPI_THREAD_SERIALIZED`
//! suffices.

use std::collections::HashMap;
use std::ffi::c_int;
use std::io::Write;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, RecvTimeoutError, Sender, TryRecvError};
use ember::flow::dist::{BackgroundDrops, Transport};
use mpi::ffi;
use mpi::Threading;

use super::InitError;

type Done = Box<dyn FnOnce(Vec<u8>) + Send>;

enum Command {
    /// `bytes` ends with the flow's tag (see [`MPI_TAG`]).
    Send { to: usize, bytes: Vec<u8> },
    /// Its length is not needed: the message is received at the size it has.
    Receive { from: usize, tag: u64, done: Done },
}

/// The MPI tag of every message of the flow. MPI tags are few (`MPI_TAG_UB` may be as
/// small as 32767) and the flow's tags are 64-bit numbers that never repeat on a pair, so
/// they do not travel as MPI tags: each message carries its flow tag in its last
/// [`TRAILER`] bytes (little-endian), and the receiving progress thread routes it by that
/// full value, sender and tag, to its receive. Two messages of one pair are never
/// confused, however many are in flight or in what order their sends run.
const MPI_TAG: c_int = 0;

/// The bytes of the flow tag at the end of every message.
const TRAILER: usize = 8;

/// Every MPI call is made holding this lock.
static MPI_CALLS: Mutex<()> = Mutex::new(());

/// Set, holding [`MPI_CALLS`], just before the world's thread calls `MPI_Finalize`: from
/// then on `MPI_Abort` may no longer be called, and ending the job ends this process only.
static FINALISING: AtomicBool = AtomicBool::new(false);

/// How long the progress thread goes on, once the world is dropped, without any message
/// completing or arriving, before it gives up on what is still outstanding, unless
/// [`GIVE_UP_VAR`] says otherwise.
const GIVE_UP: Duration = Duration::from_secs(10);

/// The environment variable that sets [`give_up`] in milliseconds.
const GIVE_UP_VAR: &str = "EMBER_MPI_GIVE_UP_MS";

/// How long the progress thread waits for progress once the world is dropped: [`GIVE_UP`],
/// or [`GIVE_UP_VAR`] if set (read once; a value that is not a number of milliseconds is
/// reported on stderr and the default used).
fn give_up() -> Duration {
    static CHOSEN: OnceLock<Duration> = OnceLock::new();
    *CHOSEN.get_or_init(|| {
        let (chosen, complaint) = parse_give_up(std::env::var(GIVE_UP_VAR).ok().as_deref());
        if let Some(complaint) = complaint {
            say(&complaint);
        }
        chosen
    })
}

/// The give-up time `value` (of [`GIVE_UP_VAR`]) asks for, and what is wrong with it if it
/// is not a number of milliseconds (then the default).
fn parse_give_up(value: Option<&str>) -> (Duration, Option<String>) {
    match value.map(str::trim) {
        None => (GIVE_UP, None),
        Some(text) => match text.parse::<u64>() {
            Ok(ms) => (Duration::from_millis(ms), None),
            Err(_) => (
                GIVE_UP,
                Some(format!(
                    "ember-mpi: {GIVE_UP_VAR}={text:?} is not a number of milliseconds; \
                     using {} ms",
                    GIVE_UP.as_millis()
                )),
            ),
        },
    }
}

/// Writes `line` and a newline to stderr in one write, so that the lines of ranks sharing
/// a terminal or a log do not interleave within a line.
fn say(line: &str) {
    let whole = format!("{line}\n");
    let _ = std::io::stderr().lock().write_all(whole.as_bytes());
}

fn mpi_lock() -> MutexGuard<'static, ()> {
    MPI_CALLS.lock().unwrap_or_else(|p| p.into_inner())
}

/// The transport a distributed flow uses.
pub(crate) struct MpiTransport {
    rank: usize,
    ranks: usize,
    /// The progress thread's commands: `None` once the world is dropped, which closes the
    /// channel. Sent under this lock, so that a command is in the channel before it closes
    /// or is refused.
    commands: Mutex<Option<Sender<Command>>>,
    /// Flows made so far on this world: the next one's number.
    flows: AtomicU64,
    /// Drops of this world's flows that go on on threads of their own: the world's drop
    /// waits for them before it closes the channel.
    drops: BackgroundDrops,
}

impl MpiTransport {
    pub(crate) fn rank_index(&self) -> usize {
        self.rank
    }

    pub(crate) fn size(&self) -> usize {
        self.ranks
    }

    /// `MPI_Abort(MPI_COMM_WORLD, 1)`: ends every rank. Waits up to a second for the
    /// progress thread's current call (calls are short: it never blocks inside MPI), then
    /// aborts regardless. Once the world's thread has begun `MPI_Finalize`, it ends this
    /// process only ([`std::process::abort`]).
    pub(crate) fn abort_job(&self) -> ! {
        abort_job()
    }

    /// Hands `command` to the progress thread; after the world was dropped, ends the job
    /// (`what` names the command) instead of losing it.
    fn command(&self, command: Command, what: &str) {
        let commands = self.commands.lock().unwrap_or_else(|p| p.into_inner());
        let sent = match &*commands {
            Some(commands) => commands.send(command).is_ok(),
            None => false,
        };
        drop(commands);
        if !sent {
            // The world was dropped before this flow: its progress thread is gone or going.
            say(&format!("ember-mpi: a {what} after the World was dropped"));
            abort_job();
        }
    }
}

fn abort_job() -> ! {
    let deadline = Instant::now() + Duration::from_secs(1);
    let _guard = loop {
        if FINALISING.load(Ordering::Acquire) {
            // MPI_Finalize runs, holding the lock, or has returned.
            abort_finalised();
        }
        match MPI_CALLS.try_lock() {
            Ok(g) => break Some(g),
            Err(std::sync::TryLockError::Poisoned(p)) => break Some(p.into_inner()),
            Err(std::sync::TryLockError::WouldBlock) if Instant::now() < deadline => {
                std::thread::sleep(Duration::from_millis(1))
            }
            Err(std::sync::TryLockError::WouldBlock) => break None,
        }
    };
    if FINALISING.load(Ordering::Acquire) {
        abort_finalised();
    }
    // SAFETY: MPI is initialised and not finalising (checked above, holding the lock if we
    // got it; `FINALISING` is set under that lock before MPI_Finalize); MPI_Abort takes a
    // communicator handle and an error code and does not return.
    unsafe {
        ffi::MPI_Abort(ffi::RSMPI_COMM_WORLD, 1);
    }
    std::process::exit(1)
}

/// Ends this process once the world's thread has begun `MPI_Finalize`: `MPI_Abort` is no
/// longer allowed then, and the other ranks finalise, or have finalised, too.
fn abort_finalised() -> ! {
    say(
        "ember-mpi: MPI is finalising or finalised, so MPI_Abort is not allowed; ending this \
         process",
    );
    std::process::abort()
}

impl Transport for MpiTransport {
    fn rank(&self) -> usize {
        self.rank
    }

    fn ranks(&self) -> usize {
        self.ranks
    }

    fn open_flow(&self) -> u64 {
        self.flows.fetch_add(1, Ordering::Relaxed)
    }

    fn send(&self, to: usize, tag: u64, mut bytes: Vec<u8>) {
        bytes.extend_from_slice(&tag.to_le_bytes());
        self.command(Command::Send { to, bytes }, "send");
    }

    fn receive(&self, from: usize, tag: u64, _len: usize, done: Done) {
        self.command(Command::Receive { from, tag, done }, "receive");
    }

    fn abort(&self, message: &str) {
        say(&format!("rank {}: {message}; ending the job", self.rank));
        abort_job();
    }

    fn background_drops(&self) -> Option<&BackgroundDrops> {
        Some(&self.drops)
    }
}

/// MPI, initialised, with its progress thread: finalised on drop.
pub(crate) struct MpiWorld {
    pub(crate) transport: Arc<MpiTransport>,
    progress: Option<JoinHandle<Result<(), String>>>,
    universe: Option<mpi::environment::Universe>,
}

impl MpiWorld {
    pub(crate) fn init() -> Result<MpiWorld, InitError> {
        let (universe, provided) = {
            let _calls = mpi_lock();
            mpi::initialize_with_threading(Threading::Serialized)
                .ok_or(InitError::AlreadyInitialized)?
        };
        if provided < Threading::Serialized {
            return Err(InitError::Threading {
                provided: format!("{provided:?}"),
            });
        }
        let (rank, ranks) = {
            let _calls = mpi_lock();
            let (mut rank, mut size): (c_int, c_int) = (0, 0);
            // SAFETY: MPI is initialised; both out-pointers are valid for one int.
            unsafe {
                ffi::MPI_Comm_rank(ffi::RSMPI_COMM_WORLD, &mut rank);
                ffi::MPI_Comm_size(ffi::RSMPI_COMM_WORLD, &mut size);
            }
            (rank as usize, size as usize)
        };
        let (commands, rx) = crossbeam_channel::unbounded();
        let progress = std::thread::Builder::new()
            .name(format!("ember-mpi-{rank}"))
            .spawn(move || progress(rx))
            .expect("the MPI progress thread");
        Ok(MpiWorld {
            transport: Arc::new(MpiTransport {
                rank,
                ranks,
                commands: Mutex::new(Some(commands)),
                flows: AtomicU64::new(0),
                drops: BackgroundDrops::new(),
            }),
            progress: Some(progress),
            universe: Some(universe),
        })
    }
}

impl MpiWorld {
    /// Waits until the drops of this world's flows that went on on threads of their own
    /// (flows dropped on a pool's worker) have ended: they still send and receive, and
    /// would otherwise meet a closed channel or a finalised MPI. It waits without limit, as
    /// a drop made on this thread would: such a drop waits for its flow's tasks and for the
    /// other ranks' checks and last rounds of the flow, which a slower rank makes later, and
    /// a rank that never makes them leaves a drop on this thread waiting too.
    fn wait_for_background_drops(&self) {
        self.transport.drops.wait(None);
    }
}

/// Dropped while its owner unwinds from a panic that nothing caught on the way (the world
/// is dropped by that unwinding), it ends the job: the other ranks would wait for what this
/// one no longer sends. A panic caught below the frame that owns the world drops no world
/// and ends nothing.
impl Drop for MpiWorld {
    fn drop(&mut self) {
        if std::thread::panicking() {
            // The panic's message was printed by the panic hook before the unwinding began.
            say(&format!(
                "rank {}: the thread that owns the World panicked; ending the job",
                self.transport.rank
            ));
            abort_job();
        }
        self.wait_for_background_drops();
        // Closes the channel, which wakes the progress thread if it sleeps on it; a command
        // from now on is refused and ends the job.
        let sender = self
            .transport
            .commands
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take();
        drop(sender);
        let ended = match self.progress.take().map(JoinHandle::join) {
            Some(Ok(ended)) => ended,
            _ => Err("the MPI progress thread panicked".into()),
        };
        if let Err(cause) = ended {
            // Messages that will never be matched (ranks that diverged): finalising would
            // wait for them, here or on the rank they are for.
            say(&format!(
                "rank {}: {cause}; ending the job",
                self.transport.rank
            ));
            abort_job();
        }
        let _calls = mpi_lock();
        FINALISING.store(true, Ordering::Release);
        drop(self.universe.take());
    }
}

/// One outstanding request and what it owns.
struct Pending {
    request: ffi::MPI_Request,
    /// The bytes sent, or the buffer received into; MPI reads or writes them until the
    /// request completes, so they stay here (their heap block never moves) until then.
    bytes: Vec<u8>,
    /// The sender, for a receive.
    from: Option<usize>,
    /// The receiver, for a send.
    to: Option<usize>,
}

/// The receives the flow posted and the messages that came before theirs, by sender and
/// full flow tag.
#[derive(Default)]
struct Routes {
    waiting: HashMap<(usize, u64), Done>,
    early: HashMap<(usize, u64), Vec<u8>>,
}

impl Routes {
    /// A receive the flow posts: its message if it came already.
    fn post(&mut self, from: usize, tag: u64, done: Done) -> Option<(Done, Vec<u8>)> {
        match self.early.remove(&(from, tag)) {
            Some(bytes) => Some((done, bytes)),
            None => {
                if self.waiting.insert((from, tag), done).is_some() {
                    twice("receive", from, tag);
                }
                None
            }
        }
    }

    /// A message that arrived from `from`: its receive, if posted already.
    fn arrived(&mut self, from: usize, mut bytes: Vec<u8>) -> Option<(Done, Vec<u8>)> {
        let Some(at) = bytes.len().checked_sub(TRAILER) else {
            say(&format!(
                "ember-mpi: a message of {} bytes without its tag",
                bytes.len()
            ));
            abort_job();
        };
        let mut tag = [0; TRAILER];
        tag.copy_from_slice(&bytes[at..]);
        let tag = u64::from_le_bytes(tag);
        bytes.truncate(at);
        match self.waiting.remove(&(from, tag)) {
            Some(done) => Some((done, bytes)),
            None => {
                if self.early.insert((from, tag), bytes).is_some() {
                    twice("message", from, tag);
                }
                None
            }
        }
    }
}

/// A flow never uses a tag twice on a pair, and two flows of one world have different
/// numbers in their tags' high bits; ranks that made their flows in different orders could
/// still reuse one, and one of the two receives would never be answered: the job ends
/// instead.
fn twice(what: &str, from: usize, tag: u64) -> ! {
    say(&format!(
        "ember-mpi: a second {what} of tag {tag:#x} from rank {from} (ranks that made their \
         flows of one World in different orders?)"
    ));
    abort_job()
}

/// What the progress thread gave up on: receives no rank answered, sends no rank received.
fn unfinished(routes: &Routes, pending: &[Pending]) -> String {
    let expected = routes.waiting.len() + pending.iter().filter(|p| p.from.is_some()).count();
    let mut to: Vec<usize> = pending.iter().filter_map(|p| p.to).collect();
    let sent = to.len();
    to.sort_unstable();
    to.dedup();
    let ranks = to
        .iter()
        .map(|r| r.to_string())
        .collect::<Vec<_>>()
        .join(", ");
    let sends = match (sent, to.len()) {
        (0, _) => None,
        (1, _) => Some(format!("a message sent to rank {ranks} was never received")),
        (n, 1) => Some(format!(
            "{n} messages sent to rank {ranks} were never received"
        )),
        (n, _) => Some(format!(
            "{n} messages sent to ranks {ranks} were never received"
        )),
    };
    let receives = (expected > 0).then(|| "messages still expected at the end".to_string());
    receives
        .into_iter()
        .chain(sends)
        .collect::<Vec<_>>()
        .join("; ")
}

/// The progress thread: posts commands, polls requests. Once the world's drop closed the
/// channel and every command in it is taken (no command can come after), it ends when
/// nothing is outstanding, taking every message that arrives meanwhile (a late message of
/// another rank completes that rank's send); if nothing completes or arrives for
/// [`give_up`], it gives up on what is outstanding and says what: the world then ends the
/// job, which would otherwise wait, here or on another rank, in `MPI_Finalize`.
fn progress(commands: Receiver<Command>) -> Result<(), String> {
    let mut pending: Vec<Pending> = Vec::new();
    let mut routes = Routes::default();
    let mut idle_rounds = 0u32;
    let mut last_progress = Instant::now();
    // Set once the channel is seen closed and empty: the world was dropped.
    let mut stopping = false;
    let mut stopped = false;
    loop {
        // Take what the flow handed over: wait for it when nothing is outstanding.
        let first = if stopping {
            // Nothing more can come: back off as below, so that an idle wait neither burns
            // a core nor keeps the lock from a thread that must end the job.
            if idle_rounds < 64 {
                std::thread::yield_now();
            } else {
                std::thread::sleep(Duration::from_micros(50));
            }
            None
        } else if pending.is_empty() && routes.waiting.is_empty() {
            match commands.recv() {
                Ok(c) => Some(c),
                // Closed and drained, nothing outstanding: done.
                Err(_) => return Ok(()),
            }
        } else if idle_rounds < 64 {
            std::thread::yield_now();
            match commands.try_recv() {
                Ok(c) => Some(c),
                Err(TryRecvError::Empty) => None,
                Err(TryRecvError::Disconnected) => {
                    stopping = true;
                    None
                }
            }
        } else {
            match commands.recv_timeout(Duration::from_micros(50)) {
                Ok(c) => Some(c),
                Err(RecvTimeoutError::Timeout) => None,
                Err(RecvTimeoutError::Disconnected) => {
                    stopping = true;
                    None
                }
            }
        };
        let mut batch: Vec<Command> = first.into_iter().collect();
        batch.extend(commands.try_iter());
        let mut delivered = Vec::new();
        if !batch.is_empty() {
            let _calls = mpi_lock();
            for command in batch {
                match command {
                    Command::Receive { from, tag, done } => {
                        delivered.extend(routes.post(from, tag, done));
                    }
                    Command::Send { to, bytes } => pending.push(post(to, bytes)),
                }
            }
        }
        let mut finished = Vec::new();
        let mut matched = false;
        if stopping && !stopped {
            // The time to give up counts from the drop at the earliest.
            stopped = true;
            last_progress = Instant::now();
        }
        {
            let _calls = mpi_lock();
            // Messages are taken only while a receive waits, or once the world is dropped:
            // until then they wait in MPI.
            if !routes.waiting.is_empty() || stopping {
                while let Some(p) = arrival() {
                    pending.push(p);
                    matched = true;
                }
            }
            let mut i = 0;
            while i < pending.len() {
                let mut flag: c_int = 0;
                // SAFETY: the request is live (not yet seen complete) and its buffer is
                // still owned by `pending[i]`.
                unsafe {
                    ffi::MPI_Test(&mut pending[i].request, &mut flag, ffi::RSMPI_STATUS_IGNORE);
                }
                if flag != 0 {
                    finished.push(pending.swap_remove(i));
                } else {
                    i += 1;
                }
            }
        }
        idle_rounds = if finished.is_empty() && !matched && delivered.is_empty() {
            idle_rounds.saturating_add(1)
        } else {
            last_progress = Instant::now();
            0
        };
        for p in finished {
            if let Some(from) = p.from {
                delivered.extend(routes.arrived(from, p.bytes));
            }
        }
        for (done, bytes) in delivered {
            done(bytes);
        }
        if stopping {
            // Messages that arrived for no receive (ranks that diverged) are dropped.
            if routes.waiting.is_empty() && pending.is_empty() {
                return Ok(());
            }
            if last_progress.elapsed() >= give_up() {
                let cause = unfinished(&routes, &pending);
                // MPI may still read or write these buffers until the job ends: they must
                // outlive the thread.
                std::mem::forget(pending);
                return Err(cause);
            }
        }
    }
}

/// Posts a send of `bytes` (which end with their flow tag) to rank `to`.
fn post(to: usize, bytes: Vec<u8>) -> Pending {
    // SAFETY: reads an MPI constant (an extern static set by the C shim).
    let mut request = unsafe { ffi::RSMPI_REQUEST_NULL };
    // SAFETY: MPI is initialised and the caller holds the MPI lock; the pointer and length
    // describe `bytes`, which the returned `Pending` owns, unmoved, until the request
    // completes; the count fits an int (checked).
    unsafe {
        ffi::MPI_Isend(
            bytes.as_ptr().cast(),
            count(bytes.len()),
            ffi::RSMPI_UINT8_T,
            to as c_int,
            MPI_TAG,
            ffi::RSMPI_COMM_WORLD,
            &mut request,
        );
    }
    Pending {
        request,
        bytes,
        from: None,
        to: Some(to),
    }
}

/// If a message of the flow has arrived (its envelope, at least) from any rank, starts
/// receiving it into a buffer of its size.
fn arrival() -> Option<Pending> {
    let mut flag: c_int = 0;
    // SAFETY: reads an MPI constant (an extern static set by the C shim).
    let mut message = unsafe { ffi::RSMPI_MESSAGE_NULL };
    // SAFETY: `MPI_Status` is a plain C struct, valid zeroed.
    let mut status: ffi::MPI_Status = unsafe { std::mem::zeroed() };
    // SAFETY: MPI is initialised and the caller holds the MPI lock; every out-pointer is
    // valid for its type; `RSMPI_ANY_SOURCE` is an MPI constant set by the C shim.
    unsafe {
        ffi::MPI_Improbe(
            ffi::RSMPI_ANY_SOURCE,
            MPI_TAG,
            ffi::RSMPI_COMM_WORLD,
            &mut flag,
            &mut message,
            &mut status,
        );
    }
    if flag == 0 {
        return None;
    }
    let mut len: c_int = 0;
    // SAFETY: `status` was filled by the matched probe above.
    unsafe { ffi::MPI_Get_count(&status, ffi::RSMPI_UINT8_T, &mut len) };
    let mut bytes = vec![0u8; len.max(0) as usize];
    // SAFETY: reads an MPI constant (an extern static set by the C shim).
    let mut request = unsafe { ffi::RSMPI_REQUEST_NULL };
    // SAFETY: `message` was matched above and is received exactly once; the buffer holds
    // the message's size and is owned, unmoved and untouched, by the returned `Pending`
    // until the request completes.
    unsafe {
        ffi::MPI_Imrecv(
            bytes.as_mut_ptr().cast(),
            len,
            ffi::RSMPI_UINT8_T,
            &mut message,
            &mut request,
        );
    }
    Some(Pending {
        request,
        bytes,
        from: Some(status.MPI_SOURCE as usize),
        to: None,
    })
}

fn count(len: usize) -> c_int {
    c_int::try_from(len).unwrap_or_else(|_| {
        say(&format!(
            "ember-mpi: a message of {len} bytes is larger than MPI's int count"
        ));
        abort_job()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_give_up_time_is_ten_seconds_unless_the_variable_names_milliseconds() {
        assert_eq!(parse_give_up(None), (Duration::from_secs(10), None));
        assert_eq!(
            parse_give_up(Some("250")),
            (Duration::from_millis(250), None)
        );
        assert_eq!(
            parse_give_up(Some(" 40 ")),
            (Duration::from_millis(40), None)
        );
        let (chosen, complaint) = parse_give_up(Some("1s"));
        assert_eq!(chosen, Duration::from_secs(10));
        let complaint = complaint.unwrap();
        assert!(
            complaint.contains("EMBER_MPI_GIVE_UP_MS=\"1s\""),
            "{complaint}"
        );
        assert!(complaint.contains("using 10000 ms"), "{complaint}");
    }
}
