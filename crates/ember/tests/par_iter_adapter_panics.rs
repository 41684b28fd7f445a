//! A panic in a closure of the adapters and consumers beyond `map`/`filter`/`sum` is
//! re-raised to the caller, the pool survives, and every item is dropped exactly once: one
//! test per consumer kind, on owned [`Tracked`] items, under every wake policy with 2 and 7
//! workers (see `common/tracked.rs`).

use std::cmp::Ordering as CmpOrdering;
use std::ops::ControlFlow;
use std::sync::atomic::{AtomicIsize, Ordering};
use std::sync::Arc;

use ember::prelude::*;

mod common;
use common::tracked::{check, panics_cleanly, pools, Tracked, ITEMS};

/// The item itself, after [`check`].
fn checked(t: Tracked) -> Tracked {
    check(t.value);
    t
}

#[test]
fn fold_and_fold_with() {
    panics_cleanly("fold", |items| {
        items
            .into_par_iter()
            .fold(Vec::new, |mut acc, t| {
                acc.push(checked(t));
                acc
            })
            .map(|v| v.len())
            .sum::<usize>()
    });
    panics_cleanly("fold_with", |items| {
        items
            .into_par_iter()
            .fold_with(0, |n, t| n + checked(t).value)
            .reduce_with(|a, b| a + b)
    });
}

#[test]
fn try_fold_try_for_each_try_reduce() {
    panics_cleanly("try_fold", |items| {
        items
            .into_par_iter()
            .try_fold(Vec::new, |mut acc, t| {
                acc.push(checked(t));
                Some(acc)
            })
            .map(|v| v.map(|v| v.len()))
            .try_reduce(|| 0, |a, b| Some(a + b))
    });
    panics_cleanly("try_for_each", |items| {
        items.into_par_iter().try_for_each(|t| -> Result<(), u64> {
            check(t.value);
            Ok(())
        })
    });
    panics_cleanly("try_for_each_init", |items| {
        items
            .into_par_iter()
            .try_for_each_init(Vec::<u8>::new, |_, t| -> Option<()> {
                check(t.value);
                Some(())
            })
    });
    panics_cleanly("try_reduce_with", |items| {
        items
            .into_par_iter()
            .map(|t| Ok::<_, ()>(checked(t)))
            .try_reduce_with(|a, b| Ok(if a.value > b.value { a } else { b }))
    });
    panics_cleanly("try_reduce", |items| {
        items
            .into_par_iter()
            .map(ControlFlow::<(), Tracked>::Continue)
            .try_reduce(
                || Tracked::new(0, &Arc::new(AtomicIsize::new(0))),
                |a, b| {
                    check(b.value);
                    ControlFlow::Continue(if a.value > b.value { a } else { b })
                },
            )
    });
}

#[test]
fn with_state() {
    panics_cleanly("map_with", |items| {
        items
            .into_par_iter()
            .map_with(Vec::<u64>::new(), |seen, t| {
                seen.push(t.value);
                checked(t)
            })
            .collect::<Vec<_>>()
    });
    panics_cleanly("map_init", |items| {
        items
            .into_par_iter()
            .map_init(
                || 0u64,
                |n, t| {
                    *n += 1;
                    checked(t)
                },
            )
            .count()
    });
    panics_cleanly("for_each_with", |items| {
        items
            .into_par_iter()
            .for_each_with(1u8, |_, t| check(t.value))
    });
    panics_cleanly("for_each_init", |items| {
        items
            .into_par_iter()
            .for_each_init(Vec::<u8>::new, |_, t| check(t.value))
    });
}

#[test]
fn searches() {
    let hit = |t: &Tracked| {
        check(t.value);
        false
    };
    panics_cleanly("find_any", |items| items.into_par_iter().find_any(hit));
    panics_cleanly("find_first", |items| items.into_par_iter().find_first(hit));
    panics_cleanly("find_last", |items| items.into_par_iter().find_last(hit));
    panics_cleanly("position_first", |items| {
        items.into_par_iter().position_first(|t| hit(&t))
    });
    panics_cleanly("find_map_last", |items| {
        items
            .into_par_iter()
            .find_map_last(|t| hit(&t).then_some(t))
    });
}

#[test]
fn expansions() {
    panics_cleanly("flat_map collect", |items| {
        items
            .into_par_iter()
            .flat_map(|t| vec![checked(t)])
            .collect::<Vec<_>>()
    });
    panics_cleanly("flat_map find_first", |items| {
        items
            .into_par_iter()
            .flat_map(|t| vec![checked(t)])
            .find_first(|t| t.value == u64::MAX)
    });
    panics_cleanly("flat_map_iter", |items| {
        items
            .into_par_iter()
            .flat_map_iter(|t| Some(checked(t)))
            .count()
    });
    panics_cleanly("flatten", |items| {
        items
            .into_par_iter()
            .map(|t| vec![t])
            .flatten()
            .map(checked)
            .collect::<Vec<_>>()
    });
}

#[test]
fn reshapes() {
    panics_cleanly("chain", |items| {
        let live = Arc::new(AtomicIsize::new(0));
        let more: Vec<Tracked> = (0..100).map(|v| Tracked::new(v, &live)).collect();
        items
            .into_par_iter()
            .chain(more)
            .map(checked)
            .collect::<Vec<_>>()
    });
    panics_cleanly("take", |items| {
        items
            .into_par_iter()
            .take(ITEMS as usize - 10)
            .map(checked)
            .collect::<Vec<_>>()
    });
    panics_cleanly("skip, panicking in the skipped part", |items| {
        items
            .into_par_iter()
            .map(checked)
            .skip(ITEMS as usize - 10)
            .collect::<Vec<_>>()
    });
    panics_cleanly("step_by", |items| {
        items.into_par_iter().step_by(1).map(checked).count()
    });
    panics_cleanly("rev", |items| {
        items.into_par_iter().rev().map(checked).collect::<Vec<_>>()
    });
    panics_cleanly("panic_fuse", |items| {
        items.into_par_iter().panic_fuse().map(checked).count()
    });
}

#[test]
fn per_item_and_collections() {
    panics_cleanly("filter_map", |items| {
        items
            .into_par_iter()
            .filter_map(|t| Some(checked(t)))
            .collect::<Vec<_>>()
    });
    panics_cleanly("inspect", |items| {
        items.into_par_iter().inspect(|t| check(t.value)).count()
    });
    panics_cleanly("update", |items| {
        items
            .into_par_iter()
            .update(|t| check(t.value))
            .collect::<Vec<_>>()
    });
    panics_cleanly("unzip", |items| {
        items
            .into_par_iter()
            .map(|t| (checked(t), 0u8))
            .unzip::<_, _, Vec<_>, Vec<_>>()
    });
    panics_cleanly("partition", |items| {
        items.into_par_iter().partition::<Vec<_>, Vec<_>, _>(|t| {
            check(t.value);
            t.value % 2 == 0
        })
    });
    panics_cleanly("par_extend", |items| {
        let mut v = Vec::new();
        v.par_extend(items.into_par_iter().map(checked));
        v
    });
    panics_cleanly("collect_into_vec", |items| {
        let mut v = Vec::new();
        items.into_par_iter().map(checked).collect_into_vec(&mut v);
        v
    });
    panics_cleanly("min_by", |items| {
        items.into_par_iter().min_by(|a, b| {
            check(a.value);
            check(b.value);
            a.value.cmp(&b.value)
        })
    });
    panics_cleanly("product", |items| {
        items
            .into_par_iter()
            .map(|t| {
                check(t.value);
                1u64
            })
            .product::<u64>()
    });
}

/// Without panics too: `take` and `skip` drop the items they cut off, and the searches the
/// items they never looked at.
#[test]
fn cut_items_are_dropped() {
    for (name, pool) in pools() {
        let live = Arc::new(AtomicIsize::new(0));
        let make = || {
            (0..ITEMS)
                .map(|v| Tracked::new(v, &live))
                .collect::<Vec<_>>()
        };
        pool.install(|| {
            assert_eq!(make().into_par_iter().take(10).count(), 10);
            assert_eq!(make().into_par_iter().skip(10).count(), ITEMS as usize - 10);
            let first = make().into_par_iter().find_first(|t| t.value == 7);
            assert_eq!(first.map(|t| t.value), Some(7));
            let last = make().into_par_iter().rev().find_last(|t| t.value == 7);
            assert_eq!(last.map(|t| t.value), Some(7));
            let flat = make()
                .into_par_iter()
                .flat_map(|t| vec![t])
                .find_any(|t| t.value == 3);
            assert_eq!(flat.map(|t| t.value), Some(3));
            let r =
                make()
                    .into_par_iter()
                    .try_for_each(|t| if t.value == 5 { Err(()) } else { Ok(()) });
            assert_eq!(r, Err(()));
            let min = make().into_par_iter().min_by(|a, b| b.value.cmp(&a.value));
            assert_eq!(
                min.map(|t| t.value).map(|v| v.cmp(&(ITEMS - 1))),
                Some(CmpOrdering::Equal)
            );
        });
        assert_eq!(
            live.load(Ordering::SeqCst),
            0,
            "{name}: items leaked or dropped twice"
        );
    }
}
