//! The ember `Pool` rows every experiment shows: the default policy (`ember`) and each
//! `WakePolicy` by name, built the same way everywhere; and five variants of the default that
//! some tables add, `ember-offered` (`lazy_joins(false)`), `ember-seq-joins`
//! (`sequential_joins(true)`), `ember-no-defer`
//! (`defer_wakeups(false)`), `ember-deferred-1ms` (`defer_wakeups_for(1 ms)`) and
//! `ember-pinned` (`pin_workers(true)`).

use super::trial;
use crate::experiment::{Metrics, Trial};
use crate::systems::{self, System};
use ember::{Pool, PoolBuilder, Tuning, WakePolicy};

/// `batch` of the `ember-biased` rows (the published value).
pub const BIASED_BATCH: usize = 20;

/// Which wake policy (or variant of the default) an ember row uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EmberPolicy {
    /// Whatever `Pool::builder()` picks with no `.wake(..)`.
    Default,
    Biased,
    Searching,
    Eager,
    /// The default policy with `lazy_joins(false)`: every `join` offers its second half at
    /// once (fork-join rows only).
    Offered,
    /// The default policy with `sequential_joins(true)`: most `join`s made while every
    /// worker is busy run as two calls (fork-join rows only).
    SequentialJoins,
    /// The default policy with `defer_wakeups(false)`: spawned jobs wake sleepers at once
    /// (the tables of chains of spawns).
    NoDefer,
    /// The same with a bound of 1 ms (`defer_wakeups_for`).
    Deferred1ms,
    /// The default policy with `pin_workers(true)` (the successor-hold table).
    Pinned,
    /// The default policy with `awake_budget(true)`: the pool shares the process's
    /// awake-core budget with the others (producer-consumer).
    Budget,
}

impl EmberPolicy {
    pub const ALL: [EmberPolicy; 4] = [
        EmberPolicy::Default,
        EmberPolicy::Biased,
        EmberPolicy::Searching,
        EmberPolicy::Eager,
    ];

    /// [`ALL`](Self::ALL) and the rows that vary deferred wake-ups, for the tables where jobs spawn
    /// jobs on the pool's workers (chains, rings, a parent's successor).
    pub const SPAWNING: [EmberPolicy; 6] = [
        EmberPolicy::Default,
        EmberPolicy::NoDefer,
        EmberPolicy::Deferred1ms,
        EmberPolicy::Biased,
        EmberPolicy::Searching,
        EmberPolicy::Eager,
    ];

    /// The row's registry entry.
    pub fn system(self) -> &'static System {
        match self {
            EmberPolicy::Default => systems::EMBER,
            EmberPolicy::Biased => systems::EMBER_BIASED,
            EmberPolicy::Searching => systems::EMBER_SEARCHING,
            EmberPolicy::Eager => systems::EMBER_EAGER,
            EmberPolicy::Offered => systems::EMBER_OFFERED,
            EmberPolicy::SequentialJoins => systems::EMBER_SEQ_JOINS,
            EmberPolicy::NoDefer => systems::EMBER_NO_DEFER,
            EmberPolicy::Deferred1ms => systems::EMBER_DEFERRED_1MS,
            EmberPolicy::Pinned => systems::EMBER_PINNED,
            EmberPolicy::Budget => systems::EMBER_BUDGET,
        }
    }

    /// The protocol switches of this policy's rows: the defaults, but for the rows that
    /// vary one; a row that sets more (delay-kick) starts from these.
    pub fn tuning(self) -> Tuning {
        let t = Tuning::new();
        match self {
            EmberPolicy::Offered => t.lazy_joins(false),
            EmberPolicy::SequentialJoins => t.sequential_joins_unchecked(true),
            EmberPolicy::NoDefer => t.defer_wakeups(false),
            EmberPolicy::Deferred1ms => t.defer_wakeups_for(std::time::Duration::from_millis(1)),
            EmberPolicy::Budget => t.awake_budget(true),
            EmberPolicy::Default
            | EmberPolicy::Biased
            | EmberPolicy::Searching
            | EmberPolicy::Eager
            | EmberPolicy::Pinned => t,
        }
    }

    /// A builder for a pool of `threads` workers named `name` with this policy (biased with
    /// [`BIASED_BATCH`]) and its [`tuning`](Self::tuning), for rows that set more (tracing;
    /// a row that changes the tuning starts from `tuning`).
    pub fn builder(self, threads: usize, name: &str) -> PoolBuilder {
        let b = Pool::builder()
            .threads(threads)
            .name(name)
            .tuning(self.tuning());
        match self {
            EmberPolicy::Default => b,
            EmberPolicy::Biased => b.wake(WakePolicy::Biased {
                batch: BIASED_BATCH,
            }),
            EmberPolicy::Searching => b.wake(WakePolicy::Searching),
            EmberPolicy::Eager => b.wake(WakePolicy::Eager),
            EmberPolicy::Offered
            | EmberPolicy::SequentialJoins
            | EmberPolicy::NoDefer
            | EmberPolicy::Deferred1ms
            | EmberPolicy::Budget => b,
            EmberPolicy::Pinned => b.pin_workers(true),
        }
    }

    /// One trial per policy of `policies`, each running `run` with it.
    pub fn trials(
        policies: &[EmberPolicy],
        run: impl Fn(EmberPolicy) -> Metrics + Copy + 'static,
    ) -> Vec<Trial> {
        policies
            .iter()
            .map(|&policy| trial(policy.system(), move || run(policy)))
            .collect()
    }

    /// A pool of `threads` workers with this policy.
    pub fn build(self, threads: usize, name: &str) -> Pool {
        self.builder(threads, name).build().expect("ember pool")
    }
}
