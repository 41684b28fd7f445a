//! Distributed flow: every rank runs the same program; each command group's range is split
//! over the ranks, and each rank receives exactly the regions it reads that another rank
//! last wrote.
//!
//! A [`Flow::distributed`](super::Flow::distributed) flow talks to the other ranks through a
//! [`Transport`] (the `ember-mpi` crate implements one over MPI). The design, what each rank
//! executes, what moves when and why nothing waits forever, is in `flow/README.md`; in
//! short:
//!
//! - **What a rank executes.** A `parallel_for` range is cut along its first dimension into
//!   `ranks` parts as even as can be (sizes differ by at most one; ranks past the end of a
//!   short range get none). Rank `r` runs part `r`, itself cut into chunks over its workers.
//!   A `run` kernel runs on every rank.
//! - **Who holds what.** Every rank holds a whole copy of every [`Buffer`](super::Buffer),
//!   initialised identically. Every rank keeps the same *ownership map* per buffer: disjoint
//!   boxes, each with the rank that last wrote it (none: still the initial data, valid
//!   everywhere) and the ranks whose copy is current.
//! - **What moves.** For each command group, every rank computes, for every rank and every
//!   accessor that reads, the region that rank's part maps to, and from the map the boxes of
//!   it whose current copy is elsewhere: each is one message from the box's last writer.
//!   Then it applies the group's writes to the map. Every rank computes the same list in
//!   the same order (the same program, the same map), keeps the messages it sends and those
//!   it receives, and numbers them per (sender, receiver) pair: that number, under the
//!   flow's own number ([`Transport::open_flow`], in the high bits), is the tag, so both
//!   sides agree on it without talking and two flows of one transport never share one.
//! - **When.** A receive is posted to the transport when the group is submitted, into a
//!   staging buffer; a local task that writes the box waits for the arrival and copies it
//!   in. A send is a local task that reads the box (so it runs after the box's local writer)
//!   and hands a copy to the transport, which sends it without blocking. Both are ordinary
//!   tasks of the local flow, before the group's chunks: the chunks that read a received box
//!   wait for its copy-in, and computation the message does not feed runs meanwhile.
//! - **Checks.** [`Flow::wait`](super::Flow::wait),
//!   [`Flow::read_back`](super::Flow::read_back) and dropping the flow are collective: each
//!   first compares, over the transport, the call every rank makes, how many command groups
//!   it submitted and a hash of their declarations. Ranks whose calls differ get
//!   [`FlowError::NotCollective`] naming each rank's call; ranks whose groups differ get
//!   [`FlowError::Diverged`] naming the first group that differs; neither waits for
//!   messages that will not come. Dropping the flow, once its check passed and no rank
//!   reported in it a task that panicked or was cancelled, waits for the flow's tasks, its
//!   sends and receives included, so that nothing of it is left in flight for the transport;
//!   every rank then tells the others whether it lost a task meanwhile, and a lost task on
//!   any rank stops every rank's wait. Dropped on a pool's worker, the flow makes that part
//!   on a thread of its own, counted in [`Transport::background_drops`]. A kernel that
//!   panics on a distributed flow ends the job through [`Transport::abort`].

use crate::pool::workers::wait::{block_until, Sleeper};
use std::collections::hash_map::DefaultHasher;
use std::hash::{Hash, Hasher};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use super::graph::Access;
use super::ownership::{Ownership, RankAccess};
use super::{Box3, FlowError};

/// How the ranks of a distributed flow reach each other: point-to-point messages of bytes,
/// matched by sender and tag. `ember-mpi` implements it over MPI; any transport works that
/// delivers every message sent to the posted receive with the same sender and the same whole
/// 64-bit tag, and to no other.
///
/// Every method returns at once; messages are delivered later, from any thread.
pub trait Transport: Send + Sync + 'static {
    /// This process's rank, `0..ranks()`.
    fn rank(&self) -> usize;
    /// How many ranks run the program.
    fn ranks(&self) -> usize;
    /// The number of a new flow on this transport: `0` for the first, then `1`, `2`, and so
    /// on (a counter the transport keeps). [`Flow::distributed`](super::Flow::distributed)
    /// calls it once; every rank makes the same flows in the same order, so a flow has the
    /// same number on every rank. The flow puts it in the high bits of every tag it uses
    /// (see [`FLOW_TAG_SHIFT`]), so the messages of two flows of one transport never meet
    /// each other's receives.
    fn open_flow(&self) -> u64;
    /// Sends `bytes` to rank `to` under `tag`. The transport owns the bytes until sent.
    fn send(&self, to: usize, tag: u64, bytes: Vec<u8>);
    /// Asks for the message of `len` bytes that rank `from` sends under `tag`; `done` gets
    /// it when it has arrived. A flow never uses a tag twice on a (sender, receiver) pair,
    /// nor two flows of one transport the same tag (their numbers differ), and a message may
    /// arrive before its receive is posted.
    ///
    /// A message of another length (ranks that submitted different graphs) should be
    /// delivered as it is: the flow ignores it and its next check reports the divergence. A
    /// check's header of another length fails that check with [`FlowError::TransportLost`],
    /// as an undelivered one does.
    /// Dropping `done` uncalled says the message will never come: a collective check then
    /// fails with [`FlowError::TransportLost`]. (A `done` forgotten without being dropped
    /// cannot be told from a message still on its way.)
    fn receive(&self, from: usize, tag: u64, len: usize, done: Box<dyn FnOnce(Vec<u8>) + Send>);
    /// Ends the whole job because a kernel panicked on this rank with `message`. Over MPI:
    /// print the message and `MPI_Abort` with a non-zero code. Returning (a transport that
    /// cannot end the job) leaves the failure to the flow's ordinary reporting; the flow's
    /// drop then tells every rank, in its check or its last round, that this rank lost
    /// tasks, and no rank's drop waits for the messages they would have sent.
    fn abort(&self, message: &str);
    /// The count of this transport's flow drops that go on on threads of their own, if it
    /// keeps one. A flow dropped on a pool's worker makes its drop's collective part (its
    /// check, the wait for its tasks, its last round) on a thread of its own, which still
    /// uses the transport after the `Flow` is gone; it counts itself here while it runs. A
    /// transport whose end (`MPI_Finalize`) must come after every message of its flows keeps
    /// a [`BackgroundDrops`] and [waits](BackgroundDrops::wait) on it before it ends. The
    /// default keeps none.
    fn background_drops(&self) -> Option<&BackgroundDrops> {
        None
    }
}

pub use super::settle::BackgroundDrops;

/// A flow's tags are its number (modulo 2^16) shifted left by this many bits, plus the
/// message's number on the flow: below 2^48, so at most 2^47 data messages per (sender,
/// receiver) pair on one flow.
pub const FLOW_TAG_SHIFT: u32 = 48;

/// The counters of a distributed flow, from
/// [`Flow::transfer_stats`](super::Flow::transfer_stats).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TransferStats {
    /// Messages of buffer data this rank sent.
    pub messages_sent: u64,
    /// Bytes of buffer data this rank sent.
    pub bytes_sent: u64,
    /// Messages of buffer data this rank received.
    pub messages_received: u64,
    /// Bytes of buffer data this rank received.
    pub bytes_received: u64,
}

/// A command group's declaration as a number: equal on every rank that declared the same.
pub(crate) fn declaration_hash(
    label: Option<&str>,
    range: Option<(usize, &Box3)>,
    plain: &[Access],
    typed: &[RankAccess],
) -> u64 {
    let mut h = DefaultHasher::new();
    label.hash(&mut h);
    if let Some((dims, b)) = range {
        (dims, b).hash(&mut h);
    }
    for a in plain {
        (a.buffer, a.extent, a.mode as u8, &a.boxes).hash(&mut h);
    }
    for a in typed {
        (a.buffer, a.extent, a.mode as u8, &a.per_rank).hash(&mut h);
    }
    h.finish()
}

/// What a distributed flow keeps besides its local flow: under one lock, so that every
/// command group is planned and handed to the scheduler in one order.
pub(crate) struct Dist {
    pub transport: Arc<dyn Transport>,
    /// This flow's number on its transport, in the high bits of every tag it uses.
    flow_bits: u64,
    pub state: Mutex<DistState>,
    pub stats: DistCounters,
    /// The checks waiting for the other ranks, by number, and how to wake each: a check that
    /// fails wakes those numbered after it, which then fail alike (see
    /// [`check_reporting`](Dist::check_reporting)).
    in_flight: Mutex<Vec<(u64, Sleeper)>>,
}

#[derive(Default)]
pub(crate) struct DistCounters {
    pub messages_sent: AtomicU64,
    pub bytes_sent: AtomicU64,
    pub messages_received: AtomicU64,
    pub bytes_received: AtomicU64,
}

pub(crate) struct DistState {
    pub ownership: Ownership,
    /// Command groups submitted so far.
    pub groups: u64,
    /// Since the last check that found every rank agreeing: per group, its hash and label.
    pub history: Vec<(u64, String)>,
    /// A hash of every group's hash so far.
    pub rolling: u64,
    /// Checks made so far (their number picks their tags).
    pub checks: u64,
    /// Set once a check failed, with the number of the lowest-numbered check that failed so
    /// far: the checks no longer pair up, so every later one reports it again, and checks
    /// numbered after it that have not returned end with its error.
    pub failed: Option<(u64, Failed)>,
}

/// A failed check, kept to be reported again.
#[derive(Clone, Debug)]
pub(crate) enum Failed {
    Diverged { task: u64, detail: String },
    NotCollective { call: String, detail: String },
    TransportLost { call: String },
}

impl Failed {
    fn error(&self) -> FlowError {
        match self.clone() {
            Failed::Diverged { task, detail } => FlowError::Diverged { task, detail },
            Failed::NotCollective { call, detail } => FlowError::NotCollective { call, detail },
            Failed::TransportLost { call } => FlowError::TransportLost { call },
        }
    }
}

/// The call that makes a check: every rank must make the same ones in the same order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Call {
    /// [`Flow::wait`](super::Flow::wait).
    Wait,
    /// [`Flow::read_back`](super::Flow::read_back) of the buffer with this index.
    ReadBack(u32),
    /// Dropping the flow.
    Drop,
}

impl Call {
    fn code(self) -> u64 {
        match self {
            Call::Wait => 0,
            Call::Drop => 1,
            Call::ReadBack(buffer) => 2 + u64::from(buffer),
        }
    }

    fn from_code(code: u64) -> Call {
        match code {
            0 => Call::Wait,
            1 => Call::Drop,
            c => Call::ReadBack(u32::try_from(c - 2).unwrap_or(u32::MAX)),
        }
    }
}

impl std::fmt::Display for Call {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Call::Wait => write!(f, "Flow::wait"),
            Call::ReadBack(buffer) => write!(f, "Flow::read_back of buffer #{buffer}"),
            Call::Drop => write!(f, "dropping the flow"),
        }
    }
}

impl Dist {
    pub(crate) fn new(transport: Arc<dyn Transport>) -> Self {
        let ranks = transport.ranks();
        let flow = transport.open_flow() % (1 << (64 - FLOW_TAG_SHIFT));
        Dist {
            transport,
            flow_bits: flow << FLOW_TAG_SHIFT,
            state: Mutex::new(DistState {
                ownership: Ownership::new(ranks),
                groups: 0,
                history: Vec::new(),
                rolling: 0,
                checks: 0,
                failed: None,
            }),
            stats: DistCounters::default(),
            in_flight: Mutex::new(Vec::new()),
        }
    }

    pub(crate) fn record(state: &mut DistState, hash: u64, label: Option<&str>) {
        state.groups += 1;
        let mut h = DefaultHasher::new();
        (state.rolling, hash).hash(&mut h);
        state.rolling = h.finish();
        state
            .history
            .push((hash, label.unwrap_or("(no label)").to_string()));
    }

    /// Compares, with every other rank, the call that makes this check and the command
    /// groups submitted so far (see the module doc). It blocks only on the other ranks'
    /// checks of the same number, which every rank makes before anything of its call that
    /// could wait for another rank.
    pub(crate) fn check(&self, call: Call) -> Result<(), FlowError> {
        self.check_reporting(call, false).map(|_| ())
    }

    /// [`check`](Self::check), also telling every rank whether this one had a task that
    /// panicked or was cancelled (`troubled`): returns, once every rank agreed, whether any
    /// rank had one. Every rank decides alike from the same flags.
    ///
    /// Checks of one flow made at once on several threads of a rank (one of them a job run
    /// by a worker while another check waits, say) each take their number under the state's
    /// lock and pair, by number, with the checks of the other ranks; none waits for another.
    /// A check that fails records its number: every check numbered after it that has not
    /// returned fails too, also one that already waits for the other ranks, which it wakes.
    /// The lowest failure is kept; a check that returned before a lower one was recorded
    /// may have reported a higher one, or, where its own exchange had ended, agreement.
    ///
    /// The state's lock is not held while the check waits for the other ranks: a wait on a
    /// worker runs its pool's jobs, and one of them may submit to this flow. The check takes
    /// what it sends (its number, the groups so far and their history) under the lock, and
    /// records its outcome under it again: on agreement it forgets the history it sent (by
    /// the groups' numbers, whatever other checks forgot meanwhile), not the groups
    /// submitted meanwhile, which the next check covers.
    pub(crate) fn check_reporting(&self, call: Call, troubled: bool) -> Result<bool, FlowError> {
        let (me, ranks) = (self.transport.rank(), self.transport.ranks());
        let peers: Vec<usize> = (0..ranks).filter(|&r| r != me).collect();
        let (k, header, history, base) = {
            let mut st = super::lock(&self.state);
            if let Some((_, failed)) = &st.failed {
                return Err(failed.error());
            }
            let k = st.checks;
            st.checks += 1;
            let history = st.history.clone();
            let base = st.groups - st.history.len() as u64;
            let header = [
                st.groups,
                st.rolling,
                call.code(),
                0,
                u64::from(troubled),
                base,
            ];
            (k, header, history, base)
        };
        // Records `failed` (unless an earlier failure was) and returns the error every later
        // check reports; wakes the later checks still waiting.
        let fail = |failed: Failed| {
            // The lowest-numbered failure is the one kept: every rank ends up with it, whatever
            // order its failures came in, and so does every check that returns afterwards.
            // (A check numbered above it that returned before it was recorded may have
            // reported a higher one.)
            let (error, failed_at) = {
                let mut st = super::lock(&self.state);
                let kept = match st.failed.take() {
                    Some(earlier) if earlier.0 <= k => earlier,
                    _ => (k, failed),
                };
                let (at, kept) = st.failed.insert(kept);
                (kept.error(), *at)
            };
            for (number, sleeper) in super::lock(&self.in_flight).iter() {
                if *number > failed_at {
                    sleeper.wake();
                }
            }
            error
        };
        // An earlier check failed while this one waited: its error, which every rank reports
        // for this check too.
        let earlier_failure = || {
            let st = super::lock(&self.state);
            let (at, failed) = st.failed.as_ref()?;
            (*at < k).then(|| failed.error())
        };
        // The same question without building the error, for the wait's every look.
        let failed_earlier = || {
            let st = super::lock(&self.state);
            st.failed.as_ref().is_some_and(|(at, _)| *at < k)
        };
        let lost = || {
            fail(Failed::TransportLost {
                call: call.to_string(),
            })
        };
        // One exchange of this check, then its outcome: an earlier check that failed while
        // this one's messages came in, or instead of them, fails this one too, as every check
        // after a recorded failure does on this rank; else a message missing is lost.
        let ask = |peers: &[usize], round: u64, bytes: Vec<u8>, len: usize| {
            let got = self.exchange(k, peers, control_tag(k, round), bytes, len, &failed_earlier);
            if let Some(error) = earlier_failure() {
                return Err(error);
            }
            got.ok_or_else(lost)
        };
        // Forgets the history this check covered, by the groups' numbers: groups `base` up
        // to `base + history.len()`. Another check may have forgotten some of them already,
        // and the groups submitted meanwhile follow them.
        let forget = || {
            let mut st = super::lock(&self.state);
            let first_kept = st.groups - st.history.len() as u64;
            let covered = (base + history.len() as u64).saturating_sub(first_kept);
            let covered = (covered as usize).min(st.history.len());
            st.history.drain(..covered);
        };
        if peers.is_empty() {
            forget();
            return Ok(troubled);
        }
        let payload = encode_history(&history);
        let mut header = header;
        header[3] = payload.len() as u64;
        let headers = ask(&peers, 0, words(&header), 8 * HEADER)?;
        let mut all = vec![(me, header)];
        for (p, bytes) in peers.iter().zip(headers) {
            // A header of the wrong length (a foreign binary's control message, or a stray
            // message under this tag) is not the header this check asked for: the transport
            // failed to deliver it, as when it drops the receive. Its words cannot be read, so
            // the check cannot name that rank's call in a `NotCollective` report.
            let Some(h) = unwords::<HEADER>(&bytes) else {
                return Err(lost());
            };
            all.push((*p, h));
        }
        // Everyone saw the same headers, so everyone decides alike from here on.
        all.sort_by_key(|(r, _)| *r);
        if all.iter().any(|(_, h)| h[2] != header[2]) {
            let detail = all
                .iter()
                .map(|(r, h)| format!("rank {r}: {}", Call::from_code(h[2])))
                .collect::<Vec<_>>()
                .join("; ");
            return Err(fail(Failed::NotCollective {
                call: call.to_string(),
                detail,
            }));
        }
        let agree = all
            .iter()
            .all(|(_, h)| h[0] == header[0] && h[1] == header[1]);
        if agree {
            forget();
            return Ok(all.iter().any(|(_, h)| h[4] != 0));
        }
        // Each rank's history, from the group its `base` names: checks that ran at once may
        // have forgotten more on one rank than on another, but only groups that every rank
        // agreed on, so the comparison starts at the highest base.
        let mut histories = Vec::new();
        for (p, h) in &all {
            if *p == me {
                histories.push((me, base, history.clone()));
            } else {
                let bytes = ask(&[*p], 1, payload.clone(), h[3] as usize)?
                    .pop()
                    .unwrap_or_default();
                histories.push((*p, h[5], decode_history(&bytes)));
            }
        }
        let start = histories.iter().map(|(_, b, _)| *b).max().unwrap_or(base);
        let end = histories
            .iter()
            .map(|(_, b, h)| b.saturating_add(h.len() as u64))
            .max()
            .unwrap_or(start)
            .max(start);
        let task = (start..end)
            .find(|&g| {
                let (_, b0, h0) = &histories[0];
                let mine = entry(*b0, h0, g).map(|x| x.0);
                histories
                    .iter()
                    .any(|(_, b, h)| entry(*b, h, g).map(|x| x.0) != mine)
            })
            .unwrap_or(end);
        let detail = histories
            .iter()
            .map(|(r, b, h)| match entry(*b, h, task) {
                Some((hash, label)) => format!("rank {r}: `{label}` (declaration {hash:016x})"),
                None => format!("rank {r}: none ({call} came first)"),
            })
            .collect::<Vec<_>>()
            .join("; ");
        Err(fail(Failed::Diverged { task, detail }))
    }

    /// The tag of the drop's last round (see `settle.rs`), which takes the number of the
    /// check after the drop's (no check follows it), and the other ranks.
    pub(crate) fn last_round(&self) -> (u64, Vec<usize>) {
        let mut st = super::lock(&self.state);
        let k = st.checks;
        st.checks += 1;
        let (me, ranks) = (self.transport.rank(), self.transport.ranks());
        let peers = (0..ranks).filter(|&r| r != me).collect();
        (self.tag(control_tag(k, 0)), peers)
    }

    /// This flow's number on its transport (modulo 2^16).
    pub(crate) fn flow_number(&self) -> u64 {
        self.flow_bits >> FLOW_TAG_SHIFT
    }

    /// The tag that message `tag` of this flow (a data or control tag) travels under: the
    /// flow's number in the high bits.
    pub(crate) fn tag(&self, tag: u64) -> u64 {
        debug_assert!(
            tag < 1 << FLOW_TAG_SHIFT,
            "tag {tag} overflows into the flow bits"
        );
        self.flow_bits | tag
    }

    /// Sends `bytes` to every peer under `tag` (of this flow) and returns theirs (`len` bytes each), in the
    /// order of `peers`.
    ///
    /// A worker of a pool waits running its pool's jobs, as every wait in ember does: the
    /// tasks another rank waits for before it answers (a send of a flow it is dropping) may
    /// be queued on this very worker's pool.
    ///
    /// Check `k`'s wait also ends when an earlier check fails (`failed_earlier` says so): the
    /// other ranks may never answer this one. `None` unless every message came: the caller
    /// asks for an earlier failure first, then takes `None` as a lost message.
    fn exchange(
        &self,
        k: u64,
        peers: &[usize],
        tag: u64,
        bytes: Vec<u8>,
        len: usize,
        failed_earlier: &dyn Fn() -> bool,
    ) -> Option<Vec<Vec<u8>>> {
        let tag = self.tag(tag);
        let arrived: Arc<Mutex<Vec<Option<Vec<u8>>>>> =
            Arc::new(Mutex::new(vec![None; peers.len()]));
        let count = Arc::new(AtomicUsize::new(0));
        // Set by a callback the transport dropped without calling it (its progress ended):
        // the message will never come, and the wait must not last for ever.
        let lost = Arc::new(AtomicBool::new(false));
        let sleeper = Sleeper::current();
        // Listed before the first look at an earlier failure: a check that fails after that
        // look finds this one listed and wakes it.
        let listed = InFlight::list(&self.in_flight, k, sleeper.clone());
        for (i, &p) in peers.iter().enumerate() {
            let mut arrival = Arrival {
                arrived: arrived.clone(),
                count: count.clone(),
                lost: lost.clone(),
                sleeper: sleeper.clone(),
                index: i,
                called: false,
            };
            self.transport
                .receive(p, tag, len, Box::new(move |b| arrival.deliver(b)));
        }
        for &p in peers {
            self.transport.send(p, tag, bytes.clone());
        }
        block_until(
            &|| {
                count.load(Ordering::SeqCst) == peers.len()
                    || lost.load(Ordering::SeqCst)
                    || failed_earlier()
            },
            None,
        );
        drop(listed);
        if count.load(Ordering::SeqCst) != peers.len() {
            return None;
        }
        let arrived = std::mem::take(&mut *arrived.lock().unwrap_or_else(|p| p.into_inner()));
        Some(arrived.into_iter().map(Option::unwrap_or_default).collect())
    }

    pub(crate) fn stats(&self) -> TransferStats {
        let s = &self.stats;
        TransferStats {
            messages_sent: s.messages_sent.load(Ordering::Relaxed),
            bytes_sent: s.bytes_sent.load(Ordering::Relaxed),
            messages_received: s.messages_received.load(Ordering::Relaxed),
            bytes_received: s.bytes_received.load(Ordering::Relaxed),
        }
    }
}

/// A check listed as waiting for the other ranks, unlisted when dropped (also while
/// unwinding).
struct InFlight<'a> {
    list: &'a Mutex<Vec<(u64, Sleeper)>>,
    k: u64,
}

impl<'a> InFlight<'a> {
    fn list(list: &'a Mutex<Vec<(u64, Sleeper)>>, k: u64, sleeper: Sleeper) -> Self {
        super::lock(list).push((k, sleeper));
        InFlight { list, k }
    }
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        let mut list = super::lock(self.list);
        if let Some(at) = list.iter().position(|(k, _)| *k == self.k) {
            list.swap_remove(at);
        }
    }
}

/// One peer's part of an exchange: its message, when the transport delivers it, or word that
/// it never will (the callback dropped uncalled).
struct Arrival {
    arrived: Arc<Mutex<Vec<Option<Vec<u8>>>>>,
    count: Arc<AtomicUsize>,
    lost: Arc<AtomicBool>,
    sleeper: Sleeper,
    index: usize,
    called: bool,
}

impl Arrival {
    fn deliver(&mut self, bytes: Vec<u8>) {
        self.arrived.lock().unwrap_or_else(|p| p.into_inner())[self.index] = Some(bytes);
        // The count after the store, then the wake-up: the waiter that sees the count finds
        // the message.
        self.count.fetch_add(1, Ordering::SeqCst);
        // Only now: had anything before panicked, the drop would report the message lost.
        self.called = true;
        self.sleeper.wake();
    }
}

impl Drop for Arrival {
    fn drop(&mut self) {
        if !self.called {
            self.lost.store(true, Ordering::SeqCst);
            self.sleeper.wake();
        }
    }
}

/// The entry of a history whose first group is `base` for group `g`, if it holds one.
fn entry(base: u64, history: &[(u64, String)], g: u64) -> Option<&(u64, String)> {
    g.checked_sub(base).and_then(|i| history.get(i as usize))
}

/// Words in a check's header: the groups submitted, the rolling hash of their declarations,
/// the call, the length of the history that follows if the headers differ, whether the rank
/// had a task that panicked or was cancelled, and the number of the history's first group.
const HEADER: usize = 6;

/// Tags of control messages are odd (data tags are even): check `k`, round `round`.
fn control_tag(k: u64, round: u64) -> u64 {
    (2 * k + round) * 2 + 1
}

fn words(w: &[u64]) -> Vec<u8> {
    w.iter().flat_map(|x| x.to_le_bytes()).collect()
}

/// The `N` little-endian words of `b`, if it is exactly `8 * N` bytes long.
fn unwords<const N: usize>(b: &[u8]) -> Option<[u64; N]> {
    if b.len() != 8 * N {
        return None;
    }
    Some(std::array::from_fn(|i| {
        let mut w = [0; 8];
        w.copy_from_slice(&b[8 * i..8 * i + 8]);
        u64::from_le_bytes(w)
    }))
}

fn encode_history(h: &[(u64, String)]) -> Vec<u8> {
    let mut out = Vec::new();
    for (hash, label) in h {
        out.extend(hash.to_le_bytes());
        out.extend((label.len() as u64).to_le_bytes());
        out.extend(label.as_bytes());
    }
    out
}

fn decode_history(mut b: &[u8]) -> Vec<(u64, String)> {
    let mut out = Vec::new();
    while let Some([hash, len]) = b.get(..16).and_then(unwords::<2>) {
        let len = (len as usize).min(b.len() - 16);
        out.push((hash, String::from_utf8_lossy(&b[16..16 + len]).into_owned()));
        b = &b[16 + len..];
    }
    out
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn history_round_trips() {
        let h = vec![(1, "a".to_string()), (u64::MAX, "step ünï".to_string())];
        assert_eq!(decode_history(&encode_history(&h)), h);
    }

    #[test]
    fn words_of_the_wrong_length_are_refused() {
        let w = [1, u64::MAX, 3, 4, 5, 6];
        assert_eq!(unwords::<HEADER>(&words(&w)), Some(w));
        let bytes = words(&w);
        assert_eq!(unwords::<HEADER>(&bytes[..8 * HEADER - 1]), None);
        assert_eq!(unwords::<HEADER>(&[]), None);
        assert_eq!(unwords::<HEADER>(&[bytes.clone(), vec![0]].concat()), None);
    }
}
