//! The synchronisation primitives the containers are written against.
//!
//! Under `--cfg loom` they are loom's model-checked stand-ins, so the very code that runs in
//! production is what the model tests explore; otherwise they are `std`'s. [`UnsafeCell`] follows
//! loom's closure-based API in both builds, so loom can check every access to a slot against the
//! happens-before order the atomics establish.

#[cfg(loom)]
pub(crate) use loom::sync::{atomic, Mutex, MutexGuard};
#[cfg(not(loom))]
pub(crate) use std::sync::{atomic, Mutex, MutexGuard};

#[cfg(loom)]
pub(crate) use loom::cell::UnsafeCell;

/// Locks `mutex`, ignoring poisoning: no critical section in this crate can panic while the
/// protected state is inconsistent.
pub(crate) fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Spins politely: yields the thread (a loom yield point under `--cfg loom`, so spin loops
/// stay finite in the model).
pub(crate) fn spin() {
    #[cfg(loom)]
    loom::thread::yield_now();
    #[cfg(not(loom))]
    std::thread::yield_now();
}

/// `std`'s `UnsafeCell` behind loom's closure-based access API.
#[cfg(not(loom))]
#[derive(Debug)]
pub(crate) struct UnsafeCell<T>(core::cell::UnsafeCell<T>);

#[cfg(not(loom))]
impl<T> UnsafeCell<T> {
    /// Wraps `value`.
    pub(crate) const fn new(value: T) -> Self {
        Self(core::cell::UnsafeCell::new(value))
    }

    /// Runs `f` with a shared pointer to the contents.
    pub(crate) fn with<R>(&self, f: impl FnOnce(*const T) -> R) -> R {
        f(self.0.get())
    }

    /// Runs `f` with a mutable pointer to the contents.
    pub(crate) fn with_mut<R>(&self, f: impl FnOnce(*mut T) -> R) -> R {
        f(self.0.get())
    }
}
