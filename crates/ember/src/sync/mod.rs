//! The synchronisation primitives the concurrent protocols are written against.
//!
//! Under `--cfg loom` they are loom's model-checked stand-ins, so the very code that runs in
//! production is what the model tests explore; otherwise they are `std`'s.

#[cfg(loom)]
pub(crate) use loom::sync::{atomic, Arc, Condvar, Mutex, MutexGuard};
#[cfg(not(loom))]
pub(crate) use std::sync::{atomic, Arc, Condvar, Mutex, MutexGuard};

/// Locks `mutex`, ignoring poisoning: every critical section in this crate leaves the protected
/// data consistent before any code that could panic runs, so a poisoned lock carries no
/// broken invariant.
pub(crate) fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Thread spawning, model-checked under `--cfg loom` like the primitives above.
#[cfg(loom)]
pub(crate) use loom::thread;
#[cfg(not(loom))]
pub(crate) use std::thread;

pub(crate) mod alarm;
pub(crate) mod asymmetric;
pub(crate) mod clock;
