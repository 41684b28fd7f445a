//! The adapters and consumers beyond `map`/`filter`/`sum` give what their sequential
//! `Iterator` counterparts give.
//!
//! Every property runs each pipeline on random inputs (lengths 0..5,000, a random
//! `with_min_len`) under every wake policy with 1, 2 and 4 workers (`Pool::install`), and
//! compares with the same pipeline written with `std::iter`. Where the parallel answer may
//! legitimately differ (`find_any`, the failure `try_for_each` reports), the property checks
//! what every answer must satisfy.

use std::ops::ControlFlow;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

use ember::prelude::*;
use proptest::collection::vec;
use proptest::prelude::*;

mod common;
use common::{check_on_every_pool, every_pool, on_every_pool};

fn min_len() -> impl Strategy<Value = usize> {
    prop_oneof![Just(0usize), 1usize..64, 64usize..6_000]
}

fn input() -> impl Strategy<Value = Vec<u32>> {
    prop_oneof![vec(any::<u32>(), 0..5_000), vec(0u32..8, 0..5_000)]
}

/// An associative, non-commutative combination: (first index, last index) of a run.
fn ends(
    a: (Option<usize>, Option<usize>),
    b: (Option<usize>, Option<usize>),
) -> (Option<usize>, Option<usize>) {
    (a.0.or(b.0), b.1.or(a.1))
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 12, ..ProptestConfig::default() })]

    #[test]
    fn folds_match_sequential(v in input(), min in min_len(), k in 1u32..50) {
        let small: Vec<u64> = v.iter().take(40).map(|&x| u64::from(x % 3 + 1)).collect();
        let expected = (
            v.iter().map(|&x| u64::from(x)).sum::<u64>(),
            v.clone(),
            v.iter().map(|&x| x % 1000).try_fold(0u32, |a, x| a.checked_add(x)),
            v.iter().try_fold(0u32, |a, &x| a.checked_add(x)),
            v.iter().enumerate().filter(|(_, &x)| x % k == 0).map(|(i, _)| (Some(i), Some(i))).reduce(ends),
            small.iter().product::<u64>(),
            v.iter().copied().enumerate().min_by(|a, b| (a.1 % k).cmp(&(b.1 % k))),
            v.iter().copied().enumerate().max_by(|a, b| (a.1 % k).cmp(&(b.1 % k))),
        );
        on_every_pool(&expected, || (
            v.par_iter().with_min_len(min).fold(|| 0u64, |a, &x| a + u64::from(x)).sum::<u64>(),
            v.par_iter().with_min_len(min).fold_with(Vec::new(), |mut a, &x| { a.push(x); a })
                .reduce(Vec::new, |mut a, mut b| { a.append(&mut b); a }),
            v.par_iter().with_min_len(min).map(|&x| x % 1000)
                .try_fold(|| 0u32, |a, x| a.checked_add(x)).try_reduce(|| 0, |a, b| a.checked_add(b)),
            v.par_iter().with_min_len(min)
                .try_fold_with(0u32, |a, &x| a.checked_add(x)).try_reduce(|| 0, |a, b| a.checked_add(b)),
            v.par_iter().enumerate().with_min_len(min).filter(|(_, &x)| x % k == 0).map(|(i, _)| (Some(i), Some(i))).reduce_with(ends),
            small.par_iter().with_min_len(min).copied().product::<u64>(),
            v.par_iter().copied().enumerate().with_min_len(min).min_by(|a, b| (a.1 % k).cmp(&(b.1 % k))),
            v.par_iter().copied().enumerate().with_min_len(min).max_by(|a, b| (a.1 % k).cmp(&(b.1 % k))),
        ));
    }

    #[test]
    fn fallible_consumers_stop_at_a_failure(v in input(), min in min_len(), k in 1u32..5_000) {
        let fails = |x: u32| x % k == k - 1;
        let expected_failure = v.iter().any(|&x| fails(x));
        check_on_every_pool(|name| {
            let r = v.par_iter().with_min_len(min).try_for_each(|&x| if fails(x) { Err(x) } else { Ok(()) });
            match r {
                Ok(()) => assert!(!expected_failure, "{name}: a failure was missed"),
                Err(x) => assert!(fails(x), "{name}: not a failure: {x}"),
            }
            let flow = v.par_iter().with_min_len(min).try_for_each(|&x| if fails(x) { ControlFlow::Break(x) } else { ControlFlow::Continue(()) });
            assert_eq!(flow.is_break(), expected_failure, "{name}");
            let r = v.par_iter().with_min_len(min).map(|&x| if fails(x) { None } else { Some(u64::from(x)) }).try_reduce(|| 0, |a, b| Some(a + b));
            let expected = if expected_failure { None } else { Some(v.iter().map(|&x| u64::from(x)).sum()) };
            assert_eq!(r, expected, "{name}");
            let r = v
                .par_iter()
                .with_min_len(min)
                .map(|&x| if fails(x) { None } else { Some(u64::from(x)) })
                .try_reduce_with(|a, b| Some(a + b));
            let expected = match (v.is_empty(), expected) {
                (true, _) => None,
                (false, sum) => Some(sum),
            };
            assert_eq!(r, expected, "{name}: try_reduce_with");
            let r = v.par_iter().with_min_len(min).try_for_each_with(k, |k, &x| {
                if x % *k == *k - 1 { Err(x) } else { Ok(()) }
            });
            assert_eq!(r.is_err(), expected_failure, "{name}: try_for_each_with");
            let r = v.par_iter().with_min_len(min).try_for_each_init(
                || k,
                |k, &x| if x % *k == *k - 1 { Err(x) } else { Ok(()) },
            );
            let right = match r {
                Ok(()) => !expected_failure,
                Err(x) => fails(x),
            };
            assert!(right, "{name}: try_for_each_init");
        });
    }

    #[test]
    fn searches_match_sequential(v in input(), min in min_len(), k in 1u32..5_000) {
        let hit = |x: &u32| x % k == k - 1;
        let expected = (
            v.iter().copied().enumerate().find(|(_, x)| hit(x)),
            v.iter().copied().enumerate().rfind(|(_, x)| hit(x)),
            v.iter().position(hit),
            v.iter().rposition(hit),
            v.iter().find_map(|x| hit(x).then_some(x / 2)),
            v.iter().rev().find_map(|x| hit(x).then_some(x / 2)),
            v.iter().filter(|x| *x % 3 == 0).find(|x| hit(x)).copied(),
        );
        on_every_pool(&expected, || (
            v.par_iter().copied().enumerate().with_min_len(min).find_first(|(_, x)| hit(x)),
            v.par_iter().copied().enumerate().with_min_len(min).find_last(|(_, x)| hit(x)),
            v.par_iter().with_min_len(min).position_first(hit),
            v.par_iter().with_min_len(min).position_last(hit),
            v.par_iter().with_min_len(min).find_map_first(|x| hit(x).then_some(x / 2)),
            v.par_iter().with_min_len(min).find_map_last(|x| hit(x).then_some(x / 2)),
            v.par_iter().with_min_len(min).filter(|x| *x % 3 == 0).find_first(|x| hit(x)).copied(),
        ));
        check_on_every_pool(|name| {
            let any = v.par_iter().with_min_len(min).find_any(|x| hit(x));
            assert_eq!(any.is_some(), expected.0.is_some(), "{name}");
            assert!(any.is_none_or(hit), "{name}");
            let at = v.par_iter().with_min_len(min).position_any(hit);
            assert!(at.is_none_or(|i| hit(&v[i])), "{name}");
            assert_eq!(at.is_some(), expected.0.is_some(), "{name}");
            let mapped = v.par_iter().with_min_len(min).find_map_any(|x| hit(x).then_some(*x));
            assert_eq!(mapped.is_some(), expected.0.is_some(), "{name}");
        });
    }

    #[test]
    fn expansions_match_sequential(v in input(), min in min_len(), k in 1u32..8) {
        let short: Vec<u32> = v.iter().take(600).copied().collect();
        let nested: Vec<Vec<u32>> = short.iter().map(|&x| (0..x % k).collect()).collect();
        let expected = (
            short.iter().flat_map(|&x| 0..x % k).collect::<Vec<_>>(),
            short.iter().flat_map(|&x| 0..x % k).map(u64::from).sum::<u64>(),
            short.iter().flat_map(|&x| 0..x % k).enumerate().find(|(_, y)| *y == k - 1).map(|(i, _)| i),
            short.iter().flat_map(|&x| vec![x; (x % k) as usize]).collect::<Vec<_>>(),
            nested.iter().flatten().copied().collect::<Vec<_>>(),
            nested.iter().flatten().count(),
        );
        on_every_pool(&expected, || (
            short.par_iter().with_min_len(min).flat_map(|&x| 0..x % k).collect::<Vec<_>>(),
            short.par_iter().with_min_len(min).flat_map(|&x| (0..x % k).into_par_iter().map(u64::from)).sum::<u64>(),
            // `find_first` pulls the items one by one; `position` of the flattened items is
            // their order, found through a fold of indices.
            short.par_iter().with_min_len(min).flat_map(|&x| 0..x % k).find_first(|y| *y == k - 1)
                .map(|_| short.iter().flat_map(|&x| 0..x % k).position(|y| y == k - 1).unwrap()),
            short.par_iter().with_min_len(min).flat_map_iter(|&x| vec![x; (x % k) as usize]).collect::<Vec<_>>(),
            nested.clone().into_par_iter().with_min_len(min).flatten().collect::<Vec<_>>(),
            nested.par_iter().with_min_len(min).flatten_iter().count(),
        ));
    }

    #[test]
    fn reshapes_match_sequential(v in input(), w in vec(any::<u32>(), 0..3_000), min in min_len(), n in 0usize..6_000, step in 1usize..40) {
        let expected = (
            v.iter().chain(&w).copied().collect::<Vec<_>>(),
            v.iter().filter(|x| *x % 2 == 0).chain(w.iter()).copied().collect::<Vec<_>>(),
            v.iter().chain(&w).enumerate().map(|(i, x)| i as u64 * u64::from(*x)).collect::<Vec<_>>(),
            v.iter().take(n).copied().collect::<Vec<_>>(),
            v.iter().skip(n).copied().collect::<Vec<_>>(),
            v.iter().step_by(step).copied().collect::<Vec<_>>(),
            v.iter().rev().copied().collect::<Vec<_>>(),
            v.iter().rev().skip(n / 2).step_by(step).zip(w.iter().rev()).map(|(a, b)| a ^ b).collect::<Vec<_>>(),
            v.iter().skip(n).map(|&x| u64::from(x)).sum::<u64>(),
        );
        on_every_pool(&expected, || (
            v.par_iter().chain(&w).with_min_len(min).copied().collect::<Vec<_>>(),
            v.par_iter().filter(|x| *x % 2 == 0).chain(w.par_iter()).with_min_len(min).copied().collect::<Vec<_>>(),
            v.par_iter().chain(&w).enumerate().with_min_len(min).map(|(i, x)| i as u64 * u64::from(*x)).collect::<Vec<_>>(),
            v.clone().into_par_iter().with_min_len(min).take(n).collect::<Vec<_>>(),
            v.clone().into_par_iter().skip(n).with_min_len(min).collect::<Vec<_>>(),
            v.par_iter().step_by(step).with_min_len(min).copied().collect::<Vec<_>>(),
            v.clone().into_par_iter().rev().with_min_len(min).collect::<Vec<_>>(),
            v.par_iter().rev().skip(n / 2).step_by(step).zip(w.par_iter().rev()).with_min_len(min).map(|(a, b)| a ^ b).collect::<Vec<_>>(),
            v.par_iter().skip(n).with_min_len(min).map(|&x| u64::from(x)).sum::<u64>(),
        ));
    }

    #[test]
    fn per_item_adapters_match_sequential(v in input(), min in min_len(), k in 1u32..50) {
        let words: Vec<String> = v.iter().take(1_000).map(|x| x.to_string()).collect();
        let expected = (
            v.iter().map(|&x| x.wrapping_add(k)).collect::<Vec<_>>(),
            v.iter().enumerate().map(|(i, &x)| x ^ i as u32).collect::<Vec<_>>(),
            v.iter().map(|&x| x / 2).collect::<Vec<_>>(),
            v.iter().filter_map(|&x| (x % k == 0).then_some(x / k)).collect::<Vec<_>>(),
            words.clone(),
            (v.iter().map(|&x| u64::from(x)).sum::<u64>(), v.len() as u64),
            v.iter().map(|&x| x.wrapping_mul(3)).collect::<Vec<_>>(),
        );
        on_every_pool(&expected, || {
            let seen = AtomicU64::new(0);
            let inspected: u64 = v.par_iter().with_min_len(min)
                .inspect(|_| { seen.fetch_add(1, Ordering::Relaxed); })
                .map(|&x| u64::from(x)).sum();
            (
                v.par_iter().with_min_len(min).map_with(k, |k, &x| x.wrapping_add(*k)).collect::<Vec<_>>(),
                v.par_iter().enumerate().with_min_len(min)
                    .map_init(|| 0u32, |scratch, (i, &x)| { *scratch += 1; x ^ i as u32 }).collect::<Vec<_>>(),
                v.par_iter().copied().with_min_len(min).map(|x| x / 2).collect::<Vec<_>>(),
                v.par_iter().with_min_len(min).filter_map(|&x| (x % k == 0).then_some(x / k)).collect::<Vec<_>>(),
                words.par_iter().cloned().with_min_len(min).collect::<Vec<_>>(),
                (inspected, seen.into_inner()),
                v.clone().into_par_iter().with_min_len(min).panic_fuse().update(|x| *x = x.wrapping_mul(3)).collect::<Vec<_>>(),
            )
        });
    }

    #[test]
    fn collections_match_sequential(v in input(), start in vec(any::<u32>(), 0..100), min in min_len(), k in 1u32..50) {
        let mut extended = start.clone();
        extended.extend(v.iter().filter(|x| *x % k == 0));
        let mut extended_indexed = start.clone();
        extended_indexed.extend(v.iter().map(|x| x / 3));
        let expected = (
            v.iter().map(|&x| (x, x % k)).unzip::<u32, u32, Vec<_>, Vec<_>>(),
            v.iter().partition::<Vec<u32>, _>(|x| *x % k == 0),
            extended,
            extended_indexed,
            v.iter().map(|x| x ^ 5).collect::<Vec<_>>(),
        );
        on_every_pool(&expected, || {
            let mut extended = start.clone();
            extended.par_extend(v.par_iter().with_min_len(min).filter(|x| *x % k == 0));
            let mut extended_indexed = start.clone();
            extended_indexed.par_extend(v.par_iter().with_min_len(min).map(|x| x / 3));
            let mut into = start.clone();
            v.par_iter().with_min_len(min).map(|x| x ^ 5).collect_into_vec(&mut into);
            (
                v.par_iter().with_min_len(min).map(|&x| (x, x % k)).unzip(),
                v.par_iter().copied().with_min_len(min).partition(|x| *x % k == 0),
                extended,
                extended_indexed,
                into,
            )
        });
    }

    #[test]
    fn for_each_with_state_sees_every_item(v in input(), min in min_len()) {
        let expected: u64 = v.iter().map(|&x| u64::from(x)).sum();
        check_on_every_pool(|name| {
            let total = AtomicU64::new(0);
            v.par_iter().with_min_len(min).for_each_with(&total, |t, &x| { t.fetch_add(u64::from(x), Ordering::Relaxed); });
            assert_eq!(total.load(Ordering::Relaxed), expected, "{name}");
            let sums = Mutex::new(Vec::new());
            v.par_iter().with_min_len(min).for_each_init(
                || SumOnDrop(0, &sums),
                |s, &x| s.0 += u64::from(x),
            );
            assert_eq!(sums.into_inner().unwrap().iter().sum::<u64>(), expected, "{name}");
        });
    }

    #[test]
    fn max_len_bounds_every_piece(len in 0usize..20_000, max in 1usize..3_000, min in min_len()) {
        check_on_every_pool(|name| {
            let pieces: Vec<usize> = (0..len).into_par_iter().with_max_len(max).with_min_len(min)
                .fold(|| 0usize, |n, _| n + 1).collect();
            assert_eq!(pieces.iter().sum::<usize>(), len, "{name}");
            // A piece longer than `max` is one whose halves would go below `min`.
            let bound = max.max(2 * min.max(1) - 1);
            assert!(pieces.iter().all(|&n| n <= bound), "{name}: a piece over {bound}: {pieces:?}");
        });
    }
}

/// A `for_each_init` state that reports its sum when its piece ends.
struct SumOnDrop<'a>(u64, &'a Mutex<Vec<u64>>);

impl Drop for SumOnDrop<'_> {
    fn drop(&mut self) {
        self.1.lock().unwrap().push(self.0);
    }
}

#[test]
fn find_first_stops_the_pieces_to_the_right_of_a_match() {
    // A match near the start: pieces to its right stop (or never start), so far fewer
    // items than the whole are looked at. Counting, not timing.
    for (name, pool) in every_pool() {
        let looked = AtomicU64::new(0);
        let found = pool.install(|| {
            (0..1_000_000u32)
                .into_par_iter()
                .with_max_len(1_000)
                .find_first(|&x| {
                    looked.fetch_add(1, Ordering::Relaxed);
                    x == 10
                })
        });
        assert_eq!(found, Some(10), "{name}");
        assert!(
            looked.into_inner() < 1_000_000,
            "{name}: every item was looked at"
        );
    }
}

#[test]
fn adapters_run_outside_every_pool() {
    let v: Vec<u32> = (0..10_000).collect();
    assert_eq!(
        v.par_iter()
            .fold(|| 0u64, |a, &x| a + u64::from(x))
            .sum::<u64>(),
        49_995_000
    );
    assert_eq!(v.par_iter().position_first(|&x| x == 9_999), Some(9_999));
    assert_eq!(v.par_iter().flat_map(|&x| 0..x % 3).count(), 9_999);
    assert_eq!(
        v.par_iter().rev().take(2).copied().collect::<Vec<_>>(),
        [9_999, 9_998]
    );
}

/// A chain of two sources whose positions add up to more than `usize::MAX` (a whole `usize`
/// range and two more) is unindexed; its length saturates rather than overflows.
#[test]
fn a_chain_longer_than_usize_max_runs() {
    let found = (0..usize::MAX)
        .into_par_iter()
        .chain(0..2usize)
        .find_first(|&x| x == 3);
    assert_eq!(found, Some(3));
}
