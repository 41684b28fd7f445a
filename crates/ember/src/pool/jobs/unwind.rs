//! Panics of user code: where they are caught, and the guard for where they must never reach.
//!
//! Users run code ember did not write inside its workers, and any of it may panic. The rule is
//! that such a panic never unwinds through ember's own frames and never kills a worker: it is
//! caught where the user code is called, and then either handed back to the caller who asked
//! for the result (`join`, `scope`, `parallel_for`, `Task::join`, `install`, `broadcast`), or,
//! when nobody asked, *reported*: counted in [`PoolStats::panics`](crate::PoolStats::panics)
//! and passed to the pool's [`panic_handler`](crate::PoolBuilder::panic_handler) (with no
//! handler, std's panic hook has already printed it and the payload is dropped).
//!
//! | user code | runs on | caught by | then |
//! | --- | --- | --- | --- |
//! | a `spawn`ed closure, and the drop of what it captured | a worker | its job | reported |
//! | a `join` half | the joining worker or a thief | `join` | the first re-raised by `join`; a second one reported |
//! | the value of one `join` half, dropped because the other panicked | the joining worker | `join` | reported |
//! | a scope job, a scope body | a worker | `scope` | the first re-raised by `scope`, later ones reported |
//! | a `broadcast` closure, and the drop of its result when another panicked | every worker | `broadcast` | the lowest-numbered worker's re-raised, the others reported |
//! | a `parallel_for` chunk | a worker or the caller | `parallel_for` | the first re-raised, later ones reported |
//! | a task's closure | a worker | the task | [`TaskError::Panicked`](crate::TaskError) from `join`, and counted |
//! | the drop of a cancelled task's closure | whoever ends it (a worker, or a thread dropping an event) | the task | reported |
//! | the drop of a task's result or panic payload nobody joined | whoever drops the last reference | the task | reported |
//! | the drop of any panic payload ember drops | wherever it drops it | [`drop_payload`] | counted |
//! | a start or exit handler | its worker | `Registry::run_worker_handler` | reported |
//! | the naming closure of `thread_name` | the thread calling `build` | `build` | re-raised by `build` before any thread starts |
//! | the panic handler | the thread that caught the panic | [`Registry::report_panic`] | counted, its payload dropped |
//! | the drop of the panic, start or exit handler | whoever drops the pool last | [`Contained`] | ignored |
//!
//! Where an unwind would break an invariant of ember's own — a `join` whose second half is a
//! job in its stack frame that a thief may still run — the frame holds an [`AbortOnUnwind`]
//! guard. With every user call site above caught, an unwind there is a bug in ember; the guard
//! turns it into an abort with a message (a bug report), never into a use-after-free.
//!
//! [`Registry::report_panic`]: crate::pool::Registry::report_panic

use std::mem::ManuallyDrop;
use std::panic::{self, AssertUnwindSafe};

use crate::pool::jobs::job::Panic;
use crate::pool::workers::registry::Registry;
use crate::sync::{lock, Mutex};

/// A frame an unwind must never leave: names it in the abort message. One zero-sized type per
/// frame, so that arming a guard costs nothing on the hot path (`join`).
pub(crate) trait GuardedFrame {
    /// The frame, as the abort message names it.
    const WHAT: &'static str;
}

/// Aborts the process if dropped, which only happens while unwinding: the normal path calls
/// [`disarm`](Self::disarm).
pub(crate) struct AbortOnUnwind<F: GuardedFrame>(std::marker::PhantomData<F>);

impl<F: GuardedFrame> AbortOnUnwind<F> {
    /// A guard for a frame in which an unwind would leave a job referring to freed memory.
    #[inline]
    pub(crate) fn new() -> Self {
        AbortOnUnwind(std::marker::PhantomData)
    }

    /// The frame is past the danger: the guard goes without a trace.
    #[inline]
    pub(crate) fn disarm(self) {
        std::mem::forget(self);
    }
}

impl<F: GuardedFrame> Drop for AbortOnUnwind<F> {
    #[cold]
    fn drop(&mut self) {
        eprintln!(
            "ember: a panic unwound through {}, where a job may still refer to this stack frame \
             or a worker would be lost; aborting instead of risking memory corruption. This is \
             a bug in ember: please report it with the panic message above.",
            F::WHAT
        );
        std::process::abort();
    }
}

/// Declares a zero-sized [`GuardedFrame`] named `$name` described as `$what`.
macro_rules! guarded_frame {
    ($name:ident, $what:literal) => {
        pub(crate) struct $name;
        impl $crate::pool::jobs::unwind::GuardedFrame for $name {
            const WHAT: &'static str = $what;
        }
    };
}
pub(crate) use guarded_frame;

/// How many panics in a row the drops of nested payloads may raise before the rest is leaked.
const NESTED_PAYLOADS: u32 = 8;

/// Drops a panic payload, catching panics of its `Drop` (and of theirs, and so on, up to a
/// bound past which the remaining payload is leaked: leaking is safe, unwinding is not).
/// Returns how many panics were caught.
pub(crate) fn drop_payload(payload: Panic) -> u64 {
    let mut payload = payload;
    let mut caught = 0;
    loop {
        match panic::catch_unwind(AssertUnwindSafe(move || drop(payload))) {
            Ok(()) => return caught,
            Err(next) => {
                caught += 1;
                if caught >= u64::from(NESTED_PAYLOADS) {
                    std::mem::forget(next);
                    return caught;
                }
                payload = next;
            }
        }
    }
}

/// Drops `value`, catching a panic of its `Drop`; returns that panic's payload.
pub(crate) fn drop_catching<T>(value: T) -> Option<Panic> {
    panic::catch_unwind(AssertUnwindSafe(move || drop(value))).err()
}

/// Drops `value` where no pool can take a report (no registry yet, or a handler's own
/// captures): a panic of its `Drop` is caught and dropped.
pub(crate) fn drop_silently<T>(value: T) {
    if let Some(payload) = drop_catching(value) {
        drop_payload(payload);
    }
}

/// A user value held by one of ember's frames while more user code runs: if that code
/// panics, the value is dropped on the way out with a panic of its `Drop` contained and
/// reported, not left to abort the process (a panic while unwinding); otherwise
/// [`into_inner`](Self::into_inner) hands it back without a trace.
pub(crate) struct DropContainedOnUnwind<'r, T> {
    value: ManuallyDrop<T>,
    registry: &'r crate::pool::Registry,
}

impl<'r, T> DropContainedOnUnwind<'r, T> {
    #[inline]
    pub(crate) fn new(value: T, registry: &'r crate::pool::Registry) -> Self {
        DropContainedOnUnwind {
            value: ManuallyDrop::new(value),
            registry,
        }
    }

    #[inline]
    pub(crate) fn into_inner(self) -> T {
        let mut this = ManuallyDrop::new(self);
        // SAFETY: `this` is never dropped, so the value is taken exactly once, here.
        unsafe { ManuallyDrop::take(&mut this.value) }
    }
}

impl<T> Drop for DropContainedOnUnwind<'_, T> {
    #[cold]
    fn drop(&mut self) {
        // SAFETY: `drop` runs once and nothing touches `value` afterwards.
        let value = unsafe { ManuallyDrop::take(&mut self.value) };
        self.registry.drop_reporting(value);
    }
}

/// The first of the panics of several jobs (a scope's, a parallel loop's chunks), kept to be
/// re-raised by whoever waits for them all; every later one is reported to the pool.
pub(crate) struct FirstPanic(Mutex<Option<Panic>>);

impl FirstPanic {
    pub(crate) fn new() -> Self {
        FirstPanic(Mutex::new(None))
    }

    /// Keeps `payload` if it is the first panic; reports it to `registry` otherwise.
    pub(crate) fn keep(&self, registry: &Registry, payload: Panic) {
        let later = {
            let mut first = lock(&self.0);
            match *first {
                None => first.replace(payload),
                Some(_) => Some(payload),
            }
        };
        if let Some(later) = later {
            registry.report_panic(later);
        }
    }

    /// The first panic, if any.
    pub(crate) fn take(&self) -> Option<Panic> {
        lock(&self.0).take()
    }
}

/// A value whose drop may run user code (a handler's captured values) that is dropped by
/// ember's own frames: a panic of that drop is caught and dropped.
pub(crate) struct Contained<T>(ManuallyDrop<T>);

impl<T> Contained<T> {
    pub(crate) fn new(value: T) -> Self {
        Contained(ManuallyDrop::new(value))
    }
}

impl<T> std::ops::Deref for Contained<T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.0
    }
}

impl<T> Drop for Contained<T> {
    fn drop(&mut self) {
        // SAFETY: `self.0` is taken exactly once, here, and never touched again.
        drop_silently(unsafe { ManuallyDrop::take(&mut self.0) });
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    /// Panics when dropped, with a payload of the same kind `depth` times over.
    struct Bomb(u32);

    impl Drop for Bomb {
        fn drop(&mut self) {
            if self.0 > 0 {
                std::panic::panic_any(Bomb(self.0 - 1));
            }
        }
    }

    #[test]
    fn payload_drops_that_panic_are_caught_and_counted() {
        assert_eq!(drop_payload(Box::new(Bomb(0))), 0);
        assert_eq!(drop_payload(Box::new(Bomb(3))), 3);
    }

    #[test]
    fn an_endless_chain_of_panicking_payloads_is_cut_off() {
        assert_eq!(
            drop_payload(Box::new(Bomb(u32::MAX))),
            u64::from(NESTED_PAYLOADS)
        );
    }

    #[test]
    fn a_contained_value_whose_drop_panics_does_not_unwind() {
        drop(Contained::new(Bomb(2)));
        assert!(drop_catching(Bomb(1)).is_some());
        assert!(drop_catching(Bomb(0)).is_none());
    }
}
