//! Items that count themselves alive, closures that panic on chosen items, and a check that
//! a pipeline re-raises such a panic, drops every item exactly once and leaves the pool
//! working: shared by the parallel-iterator panic tests.

use std::cmp::Ordering as CmpOrdering;
use std::panic::{self, AssertUnwindSafe};
use std::sync::atomic::{AtomicIsize, Ordering};
use std::sync::{Arc, Once};

use ember::prelude::*;
use ember::Pool;

use super::{policies, pool};

pub const ITEMS: u64 = 20_000;
/// The item whose closure panics (and every `EVERY`-th one, so several pieces panic).
pub const PANICS_AT: u64 = ITEMS / 2 + 1;
pub const EVERY: u64 = 4_001;
pub const MESSAGE: &str = "planned panic";

/// An item that counts itself in `live` while it exists.
#[derive(Debug)]
pub struct Tracked {
    pub value: u64,
    pub live: Arc<AtomicIsize>,
}

impl Tracked {
    pub fn new(value: u64, live: &Arc<AtomicIsize>) -> Tracked {
        live.fetch_add(1, Ordering::SeqCst);
        Tracked {
            value,
            live: live.clone(),
        }
    }
}

impl Drop for Tracked {
    fn drop(&mut self) {
        self.live.fetch_sub(1, Ordering::SeqCst);
    }
}

impl PartialEq for Tracked {
    fn eq(&self, other: &Self) -> bool {
        self.value == other.value
    }
}
impl Eq for Tracked {}
impl PartialOrd for Tracked {
    fn partial_cmp(&self, other: &Self) -> Option<CmpOrdering> {
        Some(self.cmp(other))
    }
}
impl Ord for Tracked {
    fn cmp(&self, other: &Self) -> CmpOrdering {
        self.value.cmp(&other.value)
    }
}

/// Panics on the chosen items.
pub fn check(value: u64) {
    if value == PANICS_AT || (value % EVERY == 0 && value > 0) {
        panic!("{MESSAGE}");
    }
}

/// Keeps the planned panics off stderr; any other panic is printed as usual.
pub fn quiet_planned_panics() {
    static HOOK: Once = Once::new();
    HOOK.call_once(|| {
        let default = panic::take_hook();
        panic::set_hook(Box::new(move |info| {
            if info.payload().downcast_ref::<String>().map(String::as_str) != Some(MESSAGE) {
                default(info);
            }
        }));
    });
}

/// Every policy with 2 and 7 workers.
pub fn pools() -> Vec<(String, Pool)> {
    policies()
        .into_iter()
        .flat_map(|(name, policy)| {
            [2, 7].map(|threads| (format!("{name}, {threads} workers"), pool(policy, threads)))
        })
        .collect()
}

/// Runs `pipeline` on owned items on every pool: it must panic with [`MESSAGE`], drop every
/// item exactly once, and leave the pool working.
pub fn panics_cleanly<R>(consumer: &str, pipeline: impl Fn(Vec<Tracked>) -> R + Sync)
where
    R: Send,
{
    quiet_planned_panics();
    for (name, pool) in pools() {
        let live = Arc::new(AtomicIsize::new(0));
        let items: Vec<Tracked> = (0..ITEMS).map(|v| Tracked::new(v, &live)).collect();
        let outcome = panic::catch_unwind(AssertUnwindSafe(|| pool.install(|| pipeline(items))));
        let payload = match outcome {
            Ok(_) => panic!("{consumer} on {name}: the panic was not re-raised"),
            Err(payload) => payload,
        };
        assert_eq!(
            payload.downcast_ref::<String>().map(String::as_str),
            Some(MESSAGE),
            "{consumer} on {name}: not the closure's panic"
        );
        assert_eq!(
            live.load(Ordering::SeqCst),
            0,
            "{consumer} on {name}: items leaked (> 0) or dropped twice (< 0)"
        );
        let after: u64 = pool.install(|| (0..1_000u64).into_par_iter().sum());
        assert_eq!(after, 499_500, "{consumer} on {name}: the pool broke");
    }
}
