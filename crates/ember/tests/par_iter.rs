//! Parallel iterators give what their sequential `Iterator` counterparts give.
//!
//! Every property runs each pipeline on random inputs (lengths 0..10,000, a random
//! `with_min_len`) under every wake policy with 1, 2 and 7 workers (`Pool::install`), and
//! compares with the same pipeline written with `std::iter`: the same items in the same
//! order for `collect`, the same item for `min`/`max` and their `_by_key` forms (the first
//! of equal minima, the last of equal maxima, as `Iterator`'s), the same permutation for the
//! sorts (the same order of equal keys for the stable ones).

use std::sync::OnceLock;

use ember::prelude::*;
use ember::Pool;
use proptest::collection::vec;
use proptest::prelude::*;

mod common;
use common::{on_pools, pools_of};

/// Every policy with 1, 2 and 7 workers, built once for all the properties.
fn pools() -> &'static [(String, Pool)] {
    static POOLS: OnceLock<Vec<(String, Pool)>> = OnceLock::new();
    POOLS.get_or_init(|| pools_of(&[1, 2, 7]))
}

/// Runs `parallel` on every pool and checks it gives `expected`.
fn on_every_pool<R: PartialEq + std::fmt::Debug + Send>(
    expected: &R,
    parallel: impl Fn() -> R + Sync,
) {
    on_pools(pools(), expected, parallel);
}

/// `with_min_len` values: none, small, and often larger than half the input.
fn min_len() -> impl Strategy<Value = usize> {
    prop_oneof![Just(0usize), 1usize..64, 64usize..12_000]
}

fn input() -> impl Strategy<Value = Vec<u32>> {
    prop_oneof![vec(any::<u32>(), 0..10_000), vec(0u32..8, 0..10_000)]
}

/// An associative, non-commutative combination: (first index, last index) of a run.
fn ends(
    a: (Option<usize>, Option<usize>),
    b: (Option<usize>, Option<usize>),
) -> (Option<usize>, Option<usize>) {
    (a.0.or(b.0), b.1.or(a.1))
}

#[derive(Debug, PartialEq)]
struct Folds {
    sum: u64,
    count: usize,
    min: Option<u32>,
    max: Option<u32>,
    min_by_key: Option<(usize, u32)>,
    max_by_key: Option<(usize, u32)>,
    ends: (Option<usize>, Option<usize>),
    any: bool,
    all: bool,
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 16, ..ProptestConfig::default() })]

    #[test]
    fn folds_match_sequential(v in input(), min in min_len(), k in 1u32..50, probe in any::<u32>()) {
        let target = v.get(probe as usize % v.len().max(1)).copied().unwrap_or(probe);
        let expected = Folds {
            sum: v.iter().map(|&x| u64::from(x)).sum(),
            count: v.iter().filter(|&&x| x % k == 0).count(),
            min: v.iter().copied().min(),
            max: v.iter().copied().max(),
            min_by_key: v.iter().copied().enumerate().min_by_key(|(_, x)| x % k),
            max_by_key: v.iter().copied().enumerate().max_by_key(|(_, x)| x % k),
            ends: v.iter().enumerate().filter(|(_, &x)| x % k == 0).map(|(i, _)| (Some(i), Some(i))).fold((None, None), ends),
            any: v.contains(&target),
            all: v.iter().all(|&x| x != target),
        };
        on_every_pool(&expected, || Folds {
            sum: v.par_iter().with_min_len(min).map(|&x| u64::from(x)).sum(),
            count: v.par_iter().with_min_len(min).filter(|&&x| x % k == 0).count(),
            min: v.par_iter().with_min_len(min).map(|&x| x).min(),
            max: v.par_iter().map(|&x| x).with_min_len(min).max(),
            min_by_key: v.par_iter().map(|&x| x).enumerate().with_min_len(min).min_by_key(|(_, x)| x % k),
            max_by_key: v.par_iter().with_min_len(min).map(|&x| x).enumerate().max_by_key(|(_, x)| x % k),
            ends: v.par_iter().enumerate().with_min_len(min).filter(|(_, &x)| x % k == 0).map(|(i, _)| (Some(i), Some(i))).reduce(|| (None, None), ends),
            any: v.par_iter().with_min_len(min).any(|&x| x == target),
            all: v.par_iter().with_min_len(min).all(|&x| x != target),
        });
    }

    #[test]
    fn collects_keep_order(v in input(), w in vec(any::<u32>(), 0..10_000), min in min_len(), k in 1u32..50) {
        let owned: Vec<String> = v.iter().take(2_000).map(|x| x.to_string()).collect();
        let expected = (
            v.iter().map(|x| x ^ 1).collect::<Vec<_>>(),
            v.iter().filter(|&&x| x % k == 0).copied().collect::<Vec<_>>(),
            v.iter().copied().enumerate().filter(|(_, x)| x % k == 1).map(|(i, x)| (i, x / 2)).collect::<Vec<_>>(),
            v.iter().zip(&w).map(|(a, b)| a ^ b).collect::<Vec<_>>(),
            owned.iter().filter(|s| s.len() % 2 == 0).cloned().collect::<Vec<_>>(),
            owned.iter().zip(&v).map(|(s, x)| format!("{s}{x}")).collect::<Vec<_>>(),
        );
        on_every_pool(&expected, || (
            v.par_iter().with_min_len(min).map(|x| x ^ 1).collect::<Vec<_>>(),
            v.par_iter().filter(|&&x| x % k == 0).map(|&x| x).with_min_len(min).collect::<Vec<_>>(),
            v.clone().into_par_iter().enumerate().with_min_len(min).filter(|(_, x)| x % k == 1).map(|(i, x)| (i, x / 2)).collect::<Vec<_>>(),
            v.par_iter().zip(w.par_iter().with_min_len(min)).map(|(a, b)| a ^ b).collect::<Vec<_>>(),
            owned.clone().into_par_iter().with_min_len(min).filter(|s| s.len() % 2 == 0).collect::<Vec<_>>(),
            owned.clone().into_par_iter().zip(&v).with_min_len(min).map(|(s, x)| format!("{s}{x}")).collect::<Vec<_>>(),
        ));
    }

    #[test]
    fn chunks_and_mutation_match_sequential(v in input(), size in 1usize..300, min in min_len()) {
        let sums: Vec<u64> = v.chunks(size).map(|c| c.iter().map(|&x| u64::from(x)).sum()).collect();
        let mut mutated = v.clone();
        mutated.chunks_mut(size).enumerate().for_each(|(i, c)| c.iter_mut().for_each(|x| *x = x.wrapping_add(i as u32)));
        mutated.iter_mut().for_each(|x| *x = x.wrapping_mul(3));
        let expected = (sums, mutated);
        on_every_pool(&expected, || {
            let sums = v.par_chunks(size).with_min_len(min).map(|c| c.iter().map(|&x| u64::from(x)).sum()).collect();
            let mut mutated = v.clone();
            mutated.par_chunks_mut(size).enumerate().with_min_len(min).for_each(|(i, c)| c.iter_mut().for_each(|x| *x = x.wrapping_add(i as u32)));
            mutated.par_iter_mut().with_min_len(min).for_each(|x| *x = x.wrapping_mul(3));
            (sums, mutated)
        });
    }

    #[test]
    fn ranges_match_sequential(start in -6_000i64..6_000, len in 0i64..10_000, min in min_len()) {
        let end = start + len;
        let (s32, e32) = (start as i32, end as i32);
        let (su, eu) = (start.unsigned_abs() as usize, start.unsigned_abs() as usize + len as usize);
        let expected = (
            (start..end).sum::<i64>(),
            (s32..e32).filter(|x| x % 3 == 0).collect::<Vec<_>>(),
            (su..eu).map(|x| x * 2).collect::<Vec<_>>(),
            (0..u8::MAX).filter(|x| x % 5 == 0).map(u32::from).sum::<u32>(),
            (su as u64..eu as u64).max(),
        );
        on_every_pool(&expected, || (
            (start..end).into_par_iter().with_min_len(min).sum::<i64>(),
            (s32..e32).into_par_iter().filter(|x| x % 3 == 0).with_min_len(min).collect::<Vec<_>>(),
            (su..eu).into_par_iter().with_min_len(min).map(|x| x * 2).collect::<Vec<_>>(),
            (0..u8::MAX).into_par_iter().filter(|x| x % 5 == 0).map(u32::from).sum::<u32>(),
            (su as u64..eu as u64).into_par_iter().with_min_len(min).max(),
        ));
    }

}

proptest! {
    // Fewer cases: sorting in a debug build is slow, and the long inputs below split more.
    #![proptest_config(ProptestConfig { cases: 8, ..ProptestConfig::default() })]

    #[test]
    fn sorts_match_sequential(v in input(), keys in 1u32..1_000) {
        let pairs: Vec<(u32, usize)> = v.iter().enumerate().map(|(i, &x)| (x % keys, i)).collect();
        let mut unstable = v.clone();
        unstable.sort_unstable();
        let mut stable_by_key = pairs.clone();
        stable_by_key.sort_by_key(|p| p.0);
        let mut reversed = v.clone();
        reversed.sort_unstable_by(|a, b| b.cmp(a));
        let expected = (unstable.clone(), unstable, stable_by_key.clone(), stable_by_key, reversed);
        on_every_pool(&expected, || {
            let mut a = v.clone();
            a.par_sort_unstable();
            let mut b = v.clone();
            b.par_sort();
            let mut c = pairs.clone();
            c.par_sort_by_key(|p| p.0);
            let mut d = pairs.clone();
            d.par_sort_by(|x, y| x.0.cmp(&y.0));
            let mut e = v.clone();
            e.par_sort_unstable_by_key(|&x| std::cmp::Reverse(x));
            (a, b, c, d, e)
        });
    }
}

/// Inputs long enough for the sorts to split twice (never below 4,096 items), in the
/// shapes that defeat naive quicksorts: random, sorted, reversed, all equal, few distinct.
#[test]
fn long_sorts_of_every_shape_match_sequential() {
    let n = 20_000u64;
    let mut x = 0x9E37_79B9_7F4A_7C15u64;
    let random: Vec<u64> = (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        })
        .collect();
    let shapes = [
        random.clone(),
        (0..n).collect(),
        (0..n).rev().collect(),
        vec![42; n as usize],
        random.iter().map(|x| x % 4).collect(),
    ];
    for v in shapes {
        let mut expected = v.clone();
        expected.sort_unstable();
        let pairs: Vec<(u64, usize)> = v.iter().enumerate().map(|(i, &x)| (x % 1000, i)).collect();
        let mut expected_pairs = pairs.clone();
        expected_pairs.sort_by_key(|p| p.0);
        on_every_pool(&(expected.clone(), expected_pairs), || {
            let mut a = v.clone();
            a.par_sort_unstable();
            let mut b = pairs.clone();
            b.par_sort_by_key(|p| p.0);
            (a, b)
        });
    }
}

/// The pipelines run on the pool they are called in, and outside every pool on the global one.
#[test]
fn pipelines_run_on_the_current_pool() {
    for (name, pool) in pools() {
        let threads = pool.threads();
        let seen = pool.install(|| {
            (0..10_000u32)
                .into_par_iter()
                .map(|_| ember::current_thread_index().expect("on a worker"))
                .max()
        });
        assert!(seen.unwrap() < threads, "{name}: ran on worker {seen:?}");
    }
    let outside: u64 = (0..100_000u64).into_par_iter().map(|x| x % 7).sum();
    assert_eq!(outside, (0..100_000u64).map(|x| x % 7).sum());
}
