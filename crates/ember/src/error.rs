//! Errors of pool construction.

use std::fmt;

/// Why a [`Pool`](crate::Pool) could not be built. The message says what to change.
///
/// ```
/// let err = ember::Pool::builder()
///     .wake(ember::WakePolicy::Biased { batch: 0 })
///     .build()
///     .unwrap_err();
/// assert!(matches!(err, ember::BuildError::ZeroBatch));
/// println!("{err}"); // names `batch` and the smallest valid value
/// ```
///
/// `{:?}` prints the variant's name and the same message, so that `.unwrap()`, `.expect()`
/// and a `?` out of `main` say what to change too:
///
/// ```
/// let err = ember::Pool::builder().threads(0).build().unwrap_err();
/// assert_eq!(format!("{err:?}"), format!("ZeroThreads: {err}"));
/// ```
#[non_exhaustive]
pub enum BuildError {
    /// `threads(0)`: a pool needs at least one worker.
    ZeroThreads,
    /// `WakePolicy::Biased { batch: 0 }`: a worker must take at least one job before it
    /// counts as overloaded.
    ZeroBatch,
    /// More worker threads than [`PoolBuilder::MAX_THREADS`](crate::PoolBuilder::MAX_THREADS)
    /// (from [`threads`](crate::PoolBuilder::threads) or `EMBER_NUM_THREADS`).
    TooManyThreads {
        /// The number asked for.
        requested: usize,
        /// The most a pool may have.
        max: usize,
    },
    /// `EMBER_NUM_THREADS` is set to something that is not a number of threads.
    NumThreadsVar {
        /// What it is set to.
        value: String,
    },
    /// [`PoolBuilder::build_global`](crate::PoolBuilder::build_global) after the global pool
    /// was built (explicitly, or by a free function that needed it).
    GlobalPoolExists,
    /// [`thread_name`](crate::PoolBuilder::thread_name) (or the pool's
    /// [`name`](crate::PoolBuilder::name)) gave worker `index` a name with a NUL byte, which
    /// the operating system cannot take.
    ThreadName {
        /// The first worker whose name is refused.
        index: usize,
        /// The name it was given.
        name: String,
    },
    /// `EMBER_MACHINE_BUDGET` is set to something other than `1`, `0` or nothing
    /// ([`Tuning::machine_budget`](crate::Tuning::machine_budget)).
    MachineBudgetVar {
        /// What it is set to.
        value: String,
    },
    /// [`Tuning::machine_budget(true)`](crate::Tuning::machine_budget) (or
    /// `EMBER_MACHINE_BUDGET=1`) where the machine-wide budget does not exist: off Linux.
    MachineBudgetUnsupported,
    /// The operating system refused to start worker `index`.
    Spawn {
        /// The worker that could not be started (those before it were stopped again).
        index: usize,
        /// The operating system's reason.
        source: std::io::Error,
    },
}

impl BuildError {
    /// The variant's name, for `{:?}`.
    fn variant(&self) -> &'static str {
        match self {
            BuildError::ZeroThreads => "ZeroThreads",
            BuildError::ZeroBatch => "ZeroBatch",
            BuildError::TooManyThreads { .. } => "TooManyThreads",
            BuildError::NumThreadsVar { .. } => "NumThreadsVar",
            BuildError::GlobalPoolExists => "GlobalPoolExists",
            BuildError::ThreadName { .. } => "ThreadName",
            BuildError::MachineBudgetVar { .. } => "MachineBudgetVar",
            BuildError::MachineBudgetUnsupported => "MachineBudgetUnsupported",
            BuildError::Spawn { .. } => "Spawn",
        }
    }
}

/// The variant and the message (which holds every field's value): a derived `Debug` would
/// print only the fields, and `unwrap` or `main` would lose what to change.
impl fmt::Debug for BuildError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {self}", self.variant())
    }
}

impl fmt::Display for BuildError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BuildError::ZeroThreads => write!(
                f,
                "threads(0): a pool needs at least 1 worker thread; pass threads(n) with n >= 1, \
                 or leave it unset for one per available CPU"
            ),
            BuildError::ZeroBatch => write!(
                f,
                "WakePolicy::Biased {{ batch: 0 }}: batch must be at least 1 (20 is a good start)"
            ),
            BuildError::TooManyThreads { requested, max } => write!(
                f,
                "{requested} worker threads asked for, more than the {max} threads a pool may \
                 have; lower threads(n) or EMBER_NUM_THREADS, or leave them unset for one per \
                 available CPU"
            ),
            BuildError::NumThreadsVar { value } => write!(
                f,
                "EMBER_NUM_THREADS={value:?} is not a number of threads; set it to a count, or \
                 to 0 (or unset it) for one thread per CPU"
            ),
            BuildError::GlobalPoolExists => write!(
                f,
                "the global pool exists already; call build_global once, before anything uses \
                 the global pool (ember::join, ember::spawn, ember::scope, … outside a pool)"
            ),
            BuildError::ThreadName { index, name } => write!(
                f,
                "worker {index}'s thread name {name:?} contains a NUL byte, which the \
                 operating system cannot take; name threads without '\\0'"
            ),
            BuildError::MachineBudgetVar { value } => write!(
                f,
                "EMBER_MACHINE_BUDGET={value:?} is neither 1 (join the machine-wide awake-worker \
                 budget) nor 0 (do not); set one of them, or unset it"
            ),
            BuildError::MachineBudgetUnsupported => write!(
                f,
                "the machine-wide awake-worker budget exists on Linux only; drop \
                 Tuning::machine_budget(true) or EMBER_MACHINE_BUDGET=1 here"
            ),
            BuildError::Spawn { index, source } => write!(
                f,
                "could not start worker thread {index}: {source}; lower threads(n) or the \
                 stack size, or raise the process's thread limit"
            ),
        }
    }
}

impl std::error::Error for BuildError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            BuildError::Spawn { source, .. } => Some(source),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::BuildError;

    /// One of every variant.
    fn every_variant() -> Vec<BuildError> {
        vec![
            BuildError::ZeroThreads,
            BuildError::ZeroBatch,
            BuildError::TooManyThreads {
                requested: 70_000,
                max: 65_535,
            },
            BuildError::NumThreadsVar {
                value: "many".into(),
            },
            BuildError::GlobalPoolExists,
            BuildError::ThreadName {
                index: 3,
                name: "a\0b".into(),
            },
            BuildError::Spawn {
                index: 2,
                source: std::io::Error::other("no more threads"),
            },
        ]
    }

    #[test]
    fn debug_carries_the_variant_and_the_message() {
        for err in every_variant() {
            let debug = format!("{err:?}");
            assert_eq!(debug, format!("{}: {err}", err.variant()));
            assert!(debug.starts_with(err.variant()), "{debug}");
        }
    }

    #[test]
    fn the_message_holds_every_field() {
        let expected: [&[&str]; 7] = [
            &["threads(0)", "n >= 1"],
            &["batch", "at least 1"],
            &["70000", "65535"],
            &["\"many\"", "EMBER_NUM_THREADS"],
            &["build_global once"],
            &["worker 3", "\"a\\0b\"", "NUL"],
            &["worker thread 2", "no more threads"],
        ];
        for (err, parts) in every_variant().iter().zip(expected) {
            let message = err.to_string();
            for part in parts {
                assert!(message.contains(part), "{part:?} missing from {message:?}");
            }
        }
    }

    /// What `.unwrap()` on a failed build prints: the message, not just a variant name.
    #[test]
    fn unwrap_shows_the_message() {
        let panic = std::panic::catch_unwind(|| {
            crate::Pool::builder().threads(0).build().unwrap();
        })
        .unwrap_err();
        let message = panic.downcast_ref::<String>().expect("a formatted panic");
        assert!(
            message.contains("ZeroThreads: threads(0): a pool needs at least 1 worker thread"),
            "{message}"
        );
    }
}
