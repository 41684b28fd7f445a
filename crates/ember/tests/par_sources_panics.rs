//! A panic in a pipeline over an owning source (`par_drain`, arrays and collections by
//! value, `par_bridge`, `collect` into a `Result`) is re-raised to the caller, drops every
//! item exactly once, leaves a drained collection as the sequential drain leaves it, and
//! leaves the pool working. The items count themselves alive, as in `par_iter_panics.rs`.

use std::collections::{HashMap, VecDeque};
use std::panic::{self, AssertUnwindSafe};
use std::sync::atomic::{AtomicIsize, Ordering};
use std::sync::Arc;

use ember::prelude::*;
use ember::Pool;

mod common;
use common::pools_of;
use common::tracked::{quiet_planned_panics, Tracked, MESSAGE};

const ITEMS: u64 = 10_000;

/// Panics on a few chosen values, in several pieces.
fn check(value: u64) {
    if value == ITEMS / 2 + 1 || (value % 3_001 == 0 && value > 0) {
        panic!("{MESSAGE}");
    }
}

/// Every policy with 1, 2 and 4 workers.
fn pools() -> Vec<(String, Pool)> {
    pools_of(&[1, 2, 4])
}

/// Runs `pipeline` on every pool over a source of items counted in a fresh `live`: it must
/// panic with [`MESSAGE`]; then `after` checks what is left of the source and drops it,
/// and no item may be left alive (nor dropped twice).
fn panics_cleanly<S>(
    what: &str,
    make: impl Fn(&Arc<AtomicIsize>) -> S,
    pipeline: impl Fn(&mut S) + Sync,
    after: impl Fn(S),
) where
    S: Send,
{
    quiet_planned_panics();
    for (name, pool) in pools() {
        let live = Arc::new(AtomicIsize::new(0));
        let mut source = make(&live);
        let outcome =
            panic::catch_unwind(AssertUnwindSafe(|| pool.install(|| pipeline(&mut source))));
        let payload = outcome.expect_err("the panic was not re-raised");
        let message = payload
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| payload.downcast_ref::<&str>().map(|s| s.to_string()));
        assert_eq!(message.as_deref(), Some(MESSAGE), "{what} on {name}");
        after(source);
        assert_eq!(
            live.load(Ordering::SeqCst),
            0,
            "{what} on {name}: items leaked or dropped twice"
        );
        let check: u64 = pool.install(|| (0..1_000u64).into_par_iter().sum());
        assert_eq!(check, 499_500, "{what} on {name}: the pool broke");
    }
}

fn tracked(live: &Arc<AtomicIsize>) -> Vec<Tracked> {
    (0..ITEMS).map(|v| Tracked::new(v, live)).collect()
}

#[test]
fn vec_par_drain_leaves_the_head_and_the_tail() {
    let (start, end) = (1_000usize, 9_000usize);
    panics_cleanly(
        "Vec::par_drain",
        tracked,
        |v: &mut Vec<Tracked>| v.par_drain(start..end).for_each(|t| check(t.value)),
        |v| {
            let values: Vec<u64> = v.iter().map(|t| t.value).collect();
            let expected: Vec<u64> = (0..start as u64).chain(end as u64..ITEMS).collect();
            assert_eq!(
                values, expected,
                "the vector is left as Vec::drain leaves it"
            );
        },
    );
}

#[test]
fn vec_par_drain_into_a_collect() {
    panics_cleanly(
        "Vec::par_drain collect",
        tracked,
        |v: &mut Vec<Tracked>| {
            let _: Vec<Tracked> = v
                .par_drain(10..)
                .map(|t| {
                    check(t.value);
                    t
                })
                .collect();
        },
        |v| {
            assert_eq!(v.len(), 10);
        },
    );
}

#[test]
fn vec_deque_par_drain() {
    panics_cleanly(
        "VecDeque::par_drain",
        |live| tracked(live).into_iter().collect::<VecDeque<_>>(),
        |d: &mut VecDeque<Tracked>| d.par_drain(..5_000).for_each(|t| check(t.value)),
        |d| {
            assert_eq!(d.front().map(|t| t.value), Some(5_000));
        },
    );
}

#[test]
fn arrays_and_collections_by_value() {
    panics_cleanly(
        "array into_par_iter",
        |live| -> [Tracked; 64] {
            std::array::from_fn(|i| Tracked::new(i as u64 * 1_000 + 1, live))
        },
        |a: &mut [Tracked; 64]| {
            let fresh: [Tracked; 64] = std::array::from_fn(|_| a[0].clone_tracked());
            let array = std::mem::replace(a, fresh);
            array.into_par_iter().for_each(|t| check(t.value));
        },
        drop,
    );
    panics_cleanly(
        "HashMap into_par_iter",
        |live| {
            tracked(live)
                .into_iter()
                .map(|t| (t.value, t))
                .collect::<HashMap<_, _>>()
        },
        |m: &mut HashMap<u64, Tracked>| {
            std::mem::take(m)
                .into_par_iter()
                .for_each(|(_, t)| check(t.value))
        },
        drop,
    );
}

impl Tracked {
    fn clone_tracked(&self) -> Tracked {
        Tracked::new(self.value, &self.live)
    }
}

#[test]
fn par_bridge_panics_in_the_closure_and_in_the_iterator() {
    panics_cleanly(
        "par_bridge, closure",
        tracked,
        |v: &mut Vec<Tracked>| {
            std::mem::take(v)
                .into_iter()
                .par_bridge()
                .for_each(|t| check(t.value))
        },
        drop,
    );
    panics_cleanly(
        "par_bridge, next",
        tracked,
        |v: &mut Vec<Tracked>| {
            let items = std::mem::take(v).into_iter().inspect(|t| check(t.value));
            let kept: Vec<Tracked> = items.par_bridge().collect();
            drop(kept);
        },
        drop,
    );
}

#[test]
fn collect_into_a_result() {
    panics_cleanly(
        "collect into Result",
        tracked,
        |v: &mut Vec<Tracked>| {
            let _: Result<Vec<Tracked>, u64> = std::mem::take(v)
                .into_par_iter()
                .map(|t| {
                    check(t.value);
                    Ok(t)
                })
                .collect();
        },
        drop,
    );
}
