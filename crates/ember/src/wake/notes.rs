//! Who woke a worker, and when: the `woken_by` and `woken_at_ns` of a trace's `Wake` events.
//!
//! On a pool that traces, a worker clears its note as it lists itself asleep, each waker
//! leaves its note in the wakee's slot before it unparks it, and the wakee reads its slot when
//! its park returns. A sleep that ended at its deadline, or by a token left before it began,
//! finds no note. Several wake-ups racing for one worker leave the last note, and the waker
//! and the time are two stores, so such a note may pair one waker with another's time: a
//! note is a diagnostic, never part of the protocol, so every access is `Relaxed` and nothing
//! waits on one. A pool that does not trace writes no notes.
//!
//! A waker finds out who it is from a thread-local that each worker sets for its pool's
//! `Sleep` when it starts ([`Sleep::enter`]) and clears when it exits ([`Sleep::exit`]): a
//! wake-up made from any other thread (outside the pool, the alarm's thread, a worker of
//! another pool) is noted as `None`.

use std::cell::Cell;
use std::time::Instant;

use super::Sleep;
use crate::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

#[cfg(not(loom))]
std::thread_local! {
    /// The `Sleep` of the pool this thread works for, by address (0: none), and the worker's
    /// index. An address, not a pool id: it is cleared before the worker's pool can be freed
    /// (the worker holds the pool until it exits), so no other `Sleep` can share it meanwhile.
    static CURRENT: Cell<(usize, usize)> = const { Cell::new((0, 0)) };
}
#[cfg(loom)]
loom::thread_local! {
    static CURRENT: Cell<(usize, usize)> = Cell::new((0, 0));
}

/// No wake-up noted since the worker last listed itself asleep.
const CLEAR: usize = usize::MAX;
/// A wake-up made by a thread that is not a worker of the pool.
const OUTSIDE: usize = usize::MAX - 1;

/// The note of one worker.
pub(super) struct WakeNote {
    by: AtomicUsize,
    at_ns: AtomicU64,
}

impl WakeNote {
    pub(super) fn new() -> Self {
        WakeNote {
            by: AtomicUsize::new(CLEAR),
            at_ns: AtomicU64::new(0),
        }
    }
}

/// What a woken worker learns from its note.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Woken {
    /// The worker of the same pool that made the wake-up, if one did.
    pub(crate) by: Option<usize>,
    /// When, in nanoseconds since the pool's trace epoch (tracing pools only).
    pub(crate) at_ns: Option<u64>,
}

impl Sleep {
    /// This thread is worker `index` of this pool until [`exit`](Self::exit): wake-ups it
    /// makes are noted as its own.
    pub(crate) fn enter(&self, index: usize) {
        let me = self as *const Sleep as usize;
        CURRENT.with(|current| current.set((me, index)));
    }

    /// This thread no longer works for any pool.
    pub(crate) fn exit() {
        CURRENT.with(|current| current.set((0, 0)));
    }

    /// The calling thread's index, if it is one of this pool's workers.
    pub(crate) fn current_worker(&self) -> Option<usize> {
        let me = self as *const Sleep as usize;
        let (sleep, index) = CURRENT.with(|current| current.get());
        (sleep == me).then_some(index)
    }

    /// Leaves the caller's note for worker `index`, before the caller unparks it (a pool that
    /// traces; others keep no notes).
    #[inline]
    pub(super) fn note_wake(&self, index: usize) {
        if let Some(epoch) = self.trace_epoch {
            self.note_wake_at(index, epoch);
        }
    }

    #[cold]
    fn note_wake_at(&self, index: usize, epoch: Instant) {
        let note = &self.notes[index];
        let at = Instant::now().saturating_duration_since(epoch).as_nanos() as u64;
        note.at_ns.store(at, Ordering::Relaxed);
        note.by
            .store(self.current_worker().unwrap_or(OUTSIDE), Ordering::Relaxed);
    }

    /// Worker `index` is about to list itself asleep: the note it finds when it wakes was
    /// left for this sleep.
    #[inline]
    pub(super) fn clear_note(&self, index: usize) {
        if self.trace_epoch.is_some() {
            self.notes[index].by.store(CLEAR, Ordering::Relaxed);
        }
    }

    /// The note left for worker `index` by whoever woke it last in its latest sleep: nothing
    /// if no wake-up was noted there (it ended at its deadline, or by an earlier token).
    pub(crate) fn woken(&self, index: usize) -> Woken {
        let note = &self.notes[index];
        match note.by.load(Ordering::Relaxed) {
            CLEAR => Woken::default(),
            by => Woken {
                by: (by != OUTSIDE).then_some(by),
                at_ns: Some(note.at_ns.load(Ordering::Relaxed)),
            },
        }
    }
}
