//! A one-shot alarm, set in [`now_ns`](super::clock::now_ns) time: one thread waits for it,
//! any thread may set, move or clear it without waking that thread. It bounds deferred
//! wake-ups (`wake/deferred.rs`).
//!
//! Why not a condition variable with a timeout: its waiter chose its timeout when it blocked,
//! so moving the deadline later means waking it, a context switch each time — the very cost
//! deferred wake-ups exist to avoid. On Linux the alarm is a `timerfd` (timerfd_create(2),
//! <https://man7.org/linux/man-pages/man2/timerfd_create.2.html>): setting it is one system
//! call that wakes nobody, and its waiter wakes only when it expires. Three calls on `libc`,
//! already a dependency; `nix`'s wrapper would add a crate for them. Elsewhere [`Alarm::new`]
//! returns `None` and spawned jobs wake sleepers at once, as other pushes do.
//!
//! Under `--cfg loom` the alarm is a mutex and a condition variable, and time does not pass:
//! a set alarm fires as soon as its waiter is scheduled, and the models say what "due" means.

#[cfg(all(not(loom), target_os = "linux"))]
pub(crate) use timerfd::Alarm;

#[cfg(all(not(loom), not(target_os = "linux")))]
pub(crate) use unsupported::Alarm;

#[cfg(loom)]
pub(crate) use model::Alarm;

#[cfg(all(not(loom), target_os = "linux"))]
mod timerfd {
    use crate::sync::clock;
    use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

    /// A `timerfd` on `CLOCK_MONOTONIC`.
    pub(crate) struct Alarm {
        fd: OwnedFd,
    }

    impl Alarm {
        /// A cleared alarm, or `None` if the system refuses one (out of file descriptors).
        pub(crate) fn new() -> Option<Alarm> {
            // SAFETY: plain flags; the call returns a new descriptor or -1.
            let fd = unsafe { libc::timerfd_create(libc::CLOCK_MONOTONIC, libc::TFD_CLOEXEC) };
            if fd < 0 {
                return None;
            }
            // SAFETY: a non-negative result is a new descriptor that nobody else owns.
            let fd = unsafe { OwnedFd::from_raw_fd(fd) };
            Some(Alarm { fd })
        }

        /// Fires at `deadline` (an absolute [`now_ns`](clock::now_ns) time; a past one fires
        /// at once), replacing any earlier setting; `0` clears it.
        pub(crate) fn set(&self, deadline: u64) {
            // The timerfd counts on the monotonic clock: the deadline is moved onto it by
            // the distance to it now, so the two clocks' drift never accumulates.
            // 0 clears and 1 (the stop) fires at once, as on either clock.
            let deadline = match deadline {
                0 | 1 => deadline,
                _ => clock::monotonic_ns().saturating_add(deadline.saturating_sub(clock::now_ns())),
            };
            let spec = libc::itimerspec {
                it_interval: libc::timespec {
                    tv_sec: 0,
                    tv_nsec: 0,
                },
                it_value: libc::timespec {
                    tv_sec: (deadline / 1_000_000_000) as libc::time_t,
                    tv_nsec: (deadline % 1_000_000_000) as libc::c_long,
                },
            };
            // SAFETY: `spec` is a valid itimerspec and the old value is not asked for; with a
            // valid descriptor and a normalised time the call cannot fail.
            unsafe {
                libc::timerfd_settime(
                    self.fd.as_raw_fd(),
                    libc::TFD_TIMER_ABSTIME,
                    &spec,
                    std::ptr::null_mut(),
                )
            };
        }

        /// Blocks until the alarm fires (at once if it fired since the last call).
        pub(crate) fn wait(&self) {
            let mut expirations = 0u64;
            loop {
                // SAFETY: reads 8 bytes into `expirations`, which has room for them.
                let read = unsafe {
                    libc::read(
                        self.fd.as_raw_fd(),
                        (&mut expirations as *mut u64).cast(),
                        std::mem::size_of::<u64>(),
                    )
                };
                if read == std::mem::size_of::<u64>() as isize {
                    return;
                }
                if std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted {
                    continue;
                }
                // No other error can happen on this descriptor. Were one to, returning at
                // once would spin: return after a millisecond, as if the alarm had fired
                // (its caller then pays what is due and waits again), a poll that keeps
                // the bound loose rather than lost.
                std::thread::sleep(std::time::Duration::from_millis(1));
                return;
            }
        }
    }
}

#[cfg(all(not(loom), not(target_os = "linux")))]
mod unsupported {
    /// No alarm on this system: [`Alarm::new`] says so, and nothing else is ever called.
    pub(crate) struct Alarm(());

    impl Alarm {
        pub(crate) fn new() -> Option<Alarm> {
            None
        }

        pub(crate) fn set(&self, _deadline: u64) {}

        pub(crate) fn wait(&self) {}
    }
}

#[cfg(loom)]
mod model {
    use crate::sync::{lock, Condvar, Mutex};

    /// The alarm as loom can explore it: set means "will fire", and it fires as soon as its
    /// waiter runs (time does not pass in a model).
    pub(crate) struct Alarm {
        deadline: Mutex<u64>,
        changed: Condvar,
    }

    impl Alarm {
        pub(crate) fn new() -> Option<Alarm> {
            Some(Alarm {
                deadline: Mutex::new(0),
                changed: Condvar::new(),
            })
        }

        pub(crate) fn set(&self, deadline: u64) {
            *lock(&self.deadline) = deadline;
            self.changed.notify_all();
        }

        pub(crate) fn wait(&self) {
            let mut deadline = lock(&self.deadline);
            while *deadline == 0 {
                deadline = self
                    .changed
                    .wait(deadline)
                    .unwrap_or_else(|poisoned| poisoned.into_inner());
            }
            *deadline = 0;
        }

        /// Whether the alarm is set (a model's final check).
        #[cfg(test)]
        pub(crate) fn is_set(&self) -> bool {
            *lock(&self.deadline) != 0
        }
    }
}
