//! A panic in a parallel iterator's closure is re-raised to the caller, the pool survives,
//! and every item is dropped exactly once: one test per consumer, and the sorts.
//!
//! The items are [`Tracked`] values that count themselves alive; every test ends with the
//! count back at zero (no leak, and no double drop, which would take it below zero). Each
//! runs under every wake policy with 2 and 7 workers, on owned items (`Vec::into_par_iter`),
//! so that the items not yet reached when the panic struck must be dropped by the pipeline.

use std::panic::{self, AssertUnwindSafe};
use std::sync::atomic::{AtomicIsize, AtomicUsize, Ordering};
use std::sync::Arc;

use ember::prelude::*;

mod common;
use common::tracked::{
    check, panics_cleanly, pools, quiet_planned_panics, Tracked, ITEMS, MESSAGE,
};

#[test]
fn for_each() {
    panics_cleanly("for_each", |items| {
        items.into_par_iter().for_each(|t| check(t.value))
    });
}

#[test]
fn sum() {
    panics_cleanly("sum", |items| {
        items
            .into_par_iter()
            .map(|t| {
                check(t.value);
                t.value
            })
            .sum::<u64>()
    });
}

#[test]
fn count() {
    panics_cleanly("count", |items| {
        items
            .into_par_iter()
            .filter(|t| {
                check(t.value);
                true
            })
            .count()
    });
}

/// The item itself, after [`check`].
fn checked(t: Tracked) -> Tracked {
    check(t.value);
    t
}

#[test]
fn min_and_max() {
    panics_cleanly("min", |items| items.into_par_iter().map(checked).min());
    panics_cleanly("max", |items| items.into_par_iter().map(checked).max());
}

#[test]
fn min_by_key_and_max_by_key() {
    let key = |t: &Tracked| {
        check(t.value);
        t.value % 10
    };
    panics_cleanly("min_by_key", |items| items.into_par_iter().min_by_key(key));
    panics_cleanly("max_by_key", |items| items.into_par_iter().max_by_key(key));
}

#[test]
fn reduce() {
    panics_cleanly("reduce", |items| {
        let live = Arc::new(AtomicIsize::new(0));
        items
            .into_par_iter()
            .reduce(
                || Tracked::new(0, &live),
                |a, b| {
                    check(b.value);
                    if a.value >= b.value {
                        a
                    } else {
                        b
                    }
                },
            )
            .value
    });
}

#[test]
fn any_and_all() {
    panics_cleanly("any", |items| {
        items.into_par_iter().any(|t| {
            check(t.value);
            false
        })
    });
    panics_cleanly("all", |items| {
        items.into_par_iter().all(|t| {
            check(t.value);
            true
        })
    });
}

#[test]
fn collect_indexed_and_filtered() {
    panics_cleanly("collect", |items| {
        items.into_par_iter().map(checked).collect::<Vec<_>>()
    });
    panics_cleanly("collect after filter", |items| {
        items
            .into_par_iter()
            .filter(|t| {
                check(t.value);
                t.value % 3 != 0
            })
            .collect::<Vec<_>>()
    });
    panics_cleanly("collect after enumerate and zip", |items| {
        let live = Arc::new(AtomicIsize::new(0));
        let others: Vec<Tracked> = (0..ITEMS / 2).map(|v| Tracked::new(v, &live)).collect();
        items
            .into_par_iter()
            .zip(others)
            .enumerate()
            .map(|(i, (a, b))| {
                check(i as u64 * 2 + 1);
                (a, b)
            })
            .collect::<Vec<_>>()
    });
}

#[test]
fn sorts() {
    let comparisons = AtomicUsize::new(0);
    let limit = AtomicUsize::new(0);
    let compare = |a: &Tracked, b: &Tracked| {
        // Inside the first partition (5,000) or inside a leaf's sort (40,000), on some thread.
        if comparisons.fetch_add(1, Ordering::Relaxed) == limit.load(Ordering::Relaxed) {
            panic!("{MESSAGE}");
        }
        a.value.cmp(&b.value)
    };
    for (stable, at) in [
        (false, 5_000),
        (false, 40_000),
        (true, 5_000),
        (true, 40_000),
    ] {
        limit.store(at, Ordering::Relaxed);
        let what = if stable {
            "par_sort_by"
        } else {
            "par_sort_unstable_by"
        };
        panics_cleanly(what, |mut items| {
            comparisons.store(0, Ordering::Relaxed);
            let outcome = panic::catch_unwind(AssertUnwindSafe(|| {
                if stable {
                    items.par_sort_by(compare);
                } else {
                    items.par_sort_unstable_by(compare);
                }
            }));
            // The slice still holds every item exactly once.
            let mut values: Vec<u64> = items.iter().map(|t| t.value).collect();
            values.sort_unstable();
            assert!(values.iter().copied().eq(0..ITEMS), "{what}: items lost");
            if let Err(payload) = outcome {
                panic::resume_unwind(payload);
            }
        });
    }
}

/// Without panics too: a `zip` that cuts the longer side, and an `any` that stops early, drop
/// the items they never yield.
#[test]
fn unconsumed_items_are_dropped() {
    for (name, pool) in pools() {
        let live = Arc::new(AtomicIsize::new(0));
        let long: Vec<Tracked> = (0..ITEMS).map(|v| Tracked::new(v, &live)).collect();
        let short: Vec<Tracked> = (0..100).map(|v| Tracked::new(v, &live)).collect();
        let pairs = pool.install(|| long.into_par_iter().zip(short).count());
        assert_eq!(pairs, 100);
        let items: Vec<Tracked> = (0..ITEMS).map(|v| Tracked::new(v, &live)).collect();
        assert!(pool.install(|| items.into_par_iter().any(|t| t.value == 7)));
        assert_eq!(
            live.load(Ordering::SeqCst),
            0,
            "{name}: items leaked or dropped twice"
        );
    }
}

/// Zero-sized items alive (only [`collect_of_zero_sized_items`] makes them).
static UNITS_LIVE: AtomicIsize = AtomicIsize::new(0);

/// A zero-sized item that counts itself alive in [`UNITS_LIVE`]. A collect of zero-sized
/// items keeps no addresses apart (their pointers never move), so only its count of written
/// items decides what its guards drop.
struct Unit;

impl Unit {
    fn new() -> Unit {
        UNITS_LIVE.fetch_add(1, Ordering::SeqCst);
        Unit
    }
}

impl Drop for Unit {
    fn drop(&mut self) {
        UNITS_LIVE.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Collecting zero-sized items keeps every one exactly once, whole or after a panic.
#[test]
fn collect_of_zero_sized_items() {
    assert_eq!(std::mem::size_of::<Unit>(), 0);
    quiet_planned_panics();
    for (name, pool) in pools() {
        let units: Vec<Unit> =
            pool.install(|| (0..ITEMS).into_par_iter().map(|_| Unit::new()).collect());
        assert_eq!(units.len() as u64, ITEMS, "{name}");
        assert_eq!(UNITS_LIVE.load(Ordering::SeqCst) as u64, ITEMS, "{name}");
        drop(units);
        assert_eq!(UNITS_LIVE.load(Ordering::SeqCst), 0, "{name}");
        let outcome = panic::catch_unwind(AssertUnwindSafe(|| {
            pool.install(|| {
                (0..ITEMS)
                    .into_par_iter()
                    .map(|v| {
                        check(v);
                        Unit::new()
                    })
                    .collect::<Vec<_>>()
            })
        }));
        assert!(outcome.is_err(), "{name}: the panic was not re-raised");
        assert_eq!(
            UNITS_LIVE.load(Ordering::SeqCst),
            0,
            "{name}: items leaked (> 0) or dropped twice (< 0)"
        );
    }
}
