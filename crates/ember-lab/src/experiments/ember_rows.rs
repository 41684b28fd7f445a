//! The ember `Pool` rows every experiment shows: the default policy (`ember`) and each
//! `WakePolicy` by name, built the same way everywhere.

use ember::{Pool, WakePolicy};

/// Which wake policy an ember row uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EmberPolicy {
    /// Whatever `Pool::builder()` picks with no `.wake(..)`.
    Default,
    Biased,
    Searching,
    Eager,
}

impl EmberPolicy {
    pub const ALL: [EmberPolicy; 4] = [
        EmberPolicy::Default,
        EmberPolicy::Biased,
        EmberPolicy::Searching,
        EmberPolicy::Eager,
    ];

    /// The row's `system` name (DESIGN §4).
    pub fn system(self) -> &'static str {
        match self {
            EmberPolicy::Default => "ember",
            EmberPolicy::Biased => "ember-biased",
            EmberPolicy::Searching => "ember-searching",
            EmberPolicy::Eager => "ember-eager",
        }
    }

    /// A pool of `threads` workers with this policy; `batch` is the biased policy's batch.
    pub fn build(self, threads: usize, batch: usize, name: &str) -> Pool {
        let b = Pool::builder().threads(threads).name(name);
        let b = match self {
            EmberPolicy::Default => b,
            EmberPolicy::Biased => b.wake(WakePolicy::Biased { batch }),
            EmberPolicy::Searching => b.wake(WakePolicy::Searching),
            EmberPolicy::Eager => b.wake(WakePolicy::Eager),
        };
        b.build().expect("ember pool")
    }
}
