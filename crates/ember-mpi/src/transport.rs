//! The flow's transport over MPI: one progress thread makes every MPI call.
//!
//! The flow hands it sends (bytes it owns) and receives (a length and a callback) without
//! waiting; the progress thread posts a send as `MPI_Isend` on `MPI_COMM_WORLD` and drops
//! its bytes once `MPI_Test` says it completed. A receive is matched with `MPI_Improbe`
//! (sender and tag) and then received with `MPI_Imrecv` into a buffer of the size that
//! arrived, so a message of another size than expected — ranks that submitted different
//! graphs — is delivered as it is (the flow ignores it and its check reports the
//! divergence) instead of being an MPI truncation error that kills the job first. It polls while requests
//! are outstanding (yielding, then sleeping in short waits for new commands) and sleeps
//! while none are. `MPI_Init_thread`/`MPI_Finalize` run on the world's thread and
//! `MPI_Abort` on whichever thread ends the job; a lock keeps every MPI call apart, so
//! `MPI_THREAD_SERIALIZED` suffices.

use std::ffi::c_int;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::{JoinHandle, ThreadId};
use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, RecvTimeoutError, Sender};
use ember::flow::dist::Transport;
use mpi::ffi;
use mpi::Threading;

use super::InitError;

type Done = Box<dyn FnOnce(Vec<u8>) + Send>;

enum Command {
    Send {
        to: usize,
        tag: u64,
        bytes: Vec<u8>,
    },
    /// Its length is not needed: the message is received at the size it has.
    Receive {
        from: usize,
        tag: u64,
        done: Done,
    },
}

/// The tags MPI guarantees (`MPI_TAG_UB` is at least 32767): the flow's 64-bit tags are
/// taken modulo this, so two messages of one pair share an MPI tag 16,384 messages apart.
/// The hazard: receives are posted when their group is submitted and sends run in
/// dependency order, so a program that submits 16,384 or more messages between two ranks
/// ahead of their execution can have a later message matched to an earlier receive. Keep
/// fewer than that in flight per pair (`wait` between batches) until tags are routed by
/// their full value.
const TAGS: u64 = 32768;

/// Every MPI call is made holding this lock.
static MPI_CALLS: Mutex<()> = Mutex::new(());

fn mpi_lock() -> MutexGuard<'static, ()> {
    MPI_CALLS.lock().unwrap_or_else(|p| p.into_inner())
}

/// The transport a distributed flow uses.
pub(crate) struct MpiTransport {
    rank: usize,
    ranks: usize,
    commands: Sender<Command>,
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
    /// aborts regardless.
    pub(crate) fn abort_job(&self) -> ! {
        abort_job()
    }
}

fn abort_job() -> ! {
    let deadline = Instant::now() + Duration::from_secs(1);
    let _guard = loop {
        match MPI_CALLS.try_lock() {
            Ok(g) => break Some(g),
            Err(std::sync::TryLockError::Poisoned(p)) => break Some(p.into_inner()),
            Err(std::sync::TryLockError::WouldBlock) if Instant::now() < deadline => {
                std::thread::sleep(Duration::from_millis(1))
            }
            Err(std::sync::TryLockError::WouldBlock) => break None,
        }
    };
    // SAFETY: MPI is initialised (a transport exists only between init and finalize);
    // MPI_Abort takes a communicator handle and an error code and does not return.
    unsafe {
        ffi::MPI_Abort(ffi::RSMPI_COMM_WORLD, 1);
    }
    std::process::exit(1)
}

impl Transport for MpiTransport {
    fn rank(&self) -> usize {
        self.rank
    }

    fn ranks(&self) -> usize {
        self.ranks
    }

    fn send(&self, to: usize, tag: u64, bytes: Vec<u8>) {
        if self
            .commands
            .send(Command::Send { to, tag, bytes })
            .is_err()
        {
            // The progress thread is gone: the world was dropped before this flow.
            eprintln!("ember-mpi: a send after the World was dropped");
            abort_job();
        }
    }

    fn receive(&self, from: usize, tag: u64, _len: usize, done: Done) {
        let command = Command::Receive { from, tag, done };
        if self.commands.send(command).is_err() {
            eprintln!("ember-mpi: a receive after the World was dropped");
            abort_job();
        }
    }

    fn abort(&self, message: &str) {
        eprintln!("rank {}: {message}; ending the job", self.rank);
        abort_job();
    }
}

/// MPI, initialised, with its progress thread: finalised on drop.
pub(crate) struct MpiWorld {
    pub(crate) transport: Arc<MpiTransport>,
    progress: Option<JoinHandle<bool>>,
    stop: Arc<AtomicBool>,
    universe: Option<mpi::environment::Universe>,
}

/// The thread that made the world: a panic there ends the job.
static WORLD_THREAD: Mutex<Option<ThreadId>> = Mutex::new(None);

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
        *WORLD_THREAD.lock().unwrap_or_else(|p| p.into_inner()) = Some(std::thread::current().id());
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            previous(info);
            let on_world_thread = *WORLD_THREAD.lock().unwrap_or_else(|p| p.into_inner())
                == Some(std::thread::current().id());
            if on_world_thread {
                eprintln!("rank {rank}: the main thread panicked; ending the job");
                abort_job();
            }
        }));
        let (commands, rx) = crossbeam_channel::unbounded();
        let stop = Arc::new(AtomicBool::new(false));
        let progress = {
            let stop = stop.clone();
            std::thread::Builder::new()
                .name(format!("ember-mpi-{rank}"))
                .spawn(move || progress(rx, &stop))
                .expect("the MPI progress thread")
        };
        Ok(MpiWorld {
            transport: Arc::new(MpiTransport {
                rank,
                ranks,
                commands,
            }),
            progress: Some(progress),
            stop,
            universe: Some(universe),
        })
    }
}

impl Drop for MpiWorld {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Release);
        // Wakes the progress thread if it sleeps on an empty channel.
        let wake = self.transport.commands.send(Command::Send {
            to: usize::MAX,
            tag: 0,
            bytes: Vec::new(),
        });
        drop(wake);
        let clean = match self.progress.take().map(JoinHandle::join) {
            Some(Ok(clean)) => clean,
            _ => false,
        };
        *WORLD_THREAD.lock().unwrap_or_else(|p| p.into_inner()) = None;
        if !clean {
            // Receives that will never be matched (ranks that diverged): finalising would
            // wait for them.
            eprintln!(
                "rank {}: messages still expected at the end; ending the job",
                self.transport.rank
            );
            abort_job();
        }
        let _calls = mpi_lock();
        drop(self.universe.take());
    }
}

/// One outstanding request and what it owns.
struct Pending {
    request: ffi::MPI_Request,
    /// The bytes sent, or the buffer received into; MPI reads or writes them until the
    /// request completes, so they stay here (their heap block never moves) until then.
    bytes: Vec<u8>,
    done: Option<Done>,
}

/// A receive whose message has not been matched yet.
struct Probe {
    from: usize,
    tag: u64,
    done: Done,
}

/// The progress thread: posts commands, polls requests. Returns whether it ended with
/// nothing outstanding.
fn progress(commands: Receiver<Command>, stop: &AtomicBool) -> bool {
    let mut pending: Vec<Pending> = Vec::new();
    let mut probes: Vec<Probe> = Vec::new();
    let mut idle_rounds = 0u32;
    loop {
        // Take what the flow handed over: wait for it when nothing is outstanding.
        let first = if pending.is_empty() && probes.is_empty() {
            if stop.load(Ordering::Acquire) && commands.is_empty() {
                return true;
            }
            commands.recv().ok()
        } else if idle_rounds < 64 {
            std::thread::yield_now();
            commands.try_recv().ok()
        } else {
            match commands.recv_timeout(Duration::from_micros(50)) {
                Ok(c) => Some(c),
                Err(RecvTimeoutError::Timeout) => None,
                Err(RecvTimeoutError::Disconnected) => None,
            }
        };
        let mut batch: Vec<Command> = first.into_iter().collect();
        batch.extend(commands.try_iter());
        if !batch.is_empty() {
            let _calls = mpi_lock();
            for command in batch {
                match command {
                    Command::Receive { from, tag, done } => probes.push(Probe { from, tag, done }),
                    send => pending.extend(post(send)),
                }
            }
        }
        let mut finished = Vec::new();
        let mut matched = false;
        {
            let _calls = mpi_lock();
            let mut i = 0;
            while i < probes.len() {
                if let Some(p) = matched_receive(&probes[i]) {
                    let probe = probes.remove(i);
                    pending.push(Pending {
                        done: Some(probe.done),
                        ..p
                    });
                    matched = true;
                } else {
                    i += 1;
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
        idle_rounds = if finished.is_empty() && !matched {
            idle_rounds.saturating_add(1)
        } else {
            0
        };
        for p in finished {
            if let Some(done) = p.done {
                done(p.bytes);
            }
        }
        if stop.load(Ordering::Acquire) && commands.is_empty() {
            // Sends complete on their own; receives left now will never be matched.
            if probes.is_empty() && pending.iter().all(|p| p.done.is_none()) {
                if pending.is_empty() {
                    return true;
                }
            } else if idle_rounds > 20_000 {
                return false;
            }
        }
    }
}

/// Posts a send; `None` for the wake-up the world's drop sends (and for receives, which
/// are probed instead).
fn post(command: Command) -> Option<Pending> {
    let Command::Send { to, tag, bytes } = command else {
        return None;
    };
    if to == usize::MAX {
        return None;
    }
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
            (tag % TAGS) as c_int,
            ffi::RSMPI_COMM_WORLD,
            &mut request,
        );
    }
    Some(Pending {
        request,
        bytes,
        done: None,
    })
}

/// If the message `probe` waits for has arrived (its envelope, at least), starts receiving
/// it into a buffer of its size.
fn matched_receive(probe: &Probe) -> Option<Pending> {
    let mut flag: c_int = 0;
    // SAFETY: reads an MPI constant (an extern static set by the C shim).
    let mut message = unsafe { ffi::RSMPI_MESSAGE_NULL };
    // SAFETY: `MPI_Status` is a plain C struct, valid zeroed.
    let mut status: ffi::MPI_Status = unsafe { std::mem::zeroed() };
    // SAFETY: MPI is initialised and the caller holds the MPI lock; every out-pointer is
    // valid for its type.
    unsafe {
        ffi::MPI_Improbe(
            probe.from as c_int,
            (probe.tag % TAGS) as c_int,
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
        done: None,
    })
}

fn count(len: usize) -> c_int {
    c_int::try_from(len).unwrap_or_else(|_| {
        eprintln!("ember-mpi: a message of {len} bytes is larger than MPI's int count");
        abort_job()
    })
}
