//! The adapters and slice views that complete rayon's surface (`chunks`, `fold_chunks`,
//! `interleave`, `intersperse`, `positions`, `zip_eq`, `take_any`/`skip_any` and their
//! `_while` forms, `while_some`, `by_*_blocks`, the slice windows, chunks and splits,
//! tuples, `repeat_n`), and `flat_map`'s nested driving, give what their sequential
//! `Iterator` (or slice) counterparts give.
//!
//! Every property runs on random inputs (lengths 0..3,000, a random `with_max_len` that
//! forces many pieces) under every wake policy with 1, 2 and 4 workers, as the other
//! property files do. Where the parallel answer may legitimately differ (`take_any`,
//! `*_any_while`, `while_some`), the property checks what every answer must satisfy.

use ember::prelude::*;
use proptest::collection::vec;
use proptest::prelude::*;

mod common;
use common::{check_on_every_pool, on_every_pool};

fn max_len() -> impl Strategy<Value = usize> {
    prop_oneof![Just(usize::MAX), 1usize..8, 8usize..4_000]
}

fn input() -> impl Strategy<Value = Vec<u32>> {
    prop_oneof![vec(any::<u32>(), 0..3_000), vec(0u32..8, 0..3_000)]
}

/// Sorted, to compare results whose order is not fixed.
fn sorted(mut v: Vec<u32>) -> Vec<u32> {
    v.sort_unstable();
    v
}

/// Whether `part` is a sub-multiset of `whole`.
fn within(part: &[u32], whole: &[u32]) -> bool {
    let (part, whole) = (sorted(part.to_vec()), sorted(whole.to_vec()));
    let mut rest = whole.iter();
    part.iter().all(|x| rest.any(|y| y == x))
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 12, ..ProptestConfig::default() })]

    #[test]
    fn runs_match_sequential(v in input(), max in max_len(), size in 1usize..40) {
        let expected = (
            v.chunks(size).map(<[u32]>::to_vec).collect::<Vec<_>>(),
            v.chunks(size).map(|c| c.iter().map(|&x| u64::from(x)).sum::<u64>()).collect::<Vec<_>>(),
            v.chunks(size).map(|c| c.iter().fold(7u64, |a, &x| a ^ u64::from(x))).collect::<Vec<_>>(),
            v.chunks(size).len(),
        );
        on_every_pool(&expected, || (
            v.par_iter().copied().with_max_len(max).chunks(size).collect::<Vec<_>>(),
            v.par_iter().with_max_len(max).fold_chunks(size, || 0u64, |a, &x| a + u64::from(x)).collect::<Vec<_>>(),
            v.par_iter().with_max_len(max).fold_chunks_with(size, 7u64, |a, &x| a ^ u64::from(x)).collect::<Vec<_>>(),
            v.par_iter().chunks(size).len(),
        ));
    }

    #[test]
    fn interleaves_match_sequential(v in input(), w in input(), max in max_len()) {
        let mut both = Vec::new();
        let (mut a, mut b) = (v.iter().copied(), w.iter().copied());
        loop {
            match (a.next(), b.next()) {
                (None, None) => break,
                (x, y) => both.extend(x.into_iter().chain(y)),
            }
        }
        let mut shortest = Vec::new();
        let mut b = w.iter().copied();
        for x in v.iter().copied() {
            shortest.push(x);
            match b.next() {
                Some(y) => shortest.push(y),
                None => break,
            }
        }
        let separated: Vec<u32> = v.iter().flat_map(|&x| [u32::MAX, x]).skip(1).collect();
        let expected = (both, shortest, separated.clone(), separated.len());
        on_every_pool(&expected, || (
            v.par_iter().copied().interleave(w.par_iter().copied()).with_max_len(max).collect::<Vec<_>>(),
            v.par_iter().copied().interleave_shortest(w.par_iter().copied()).with_max_len(max).collect::<Vec<_>>(),
            v.par_iter().copied().with_max_len(max).intersperse(u32::MAX).collect::<Vec<_>>(),
            v.par_iter().copied().intersperse(u32::MAX).len(),
        ));
    }

    #[test]
    fn indexed_helpers_match_sequential(v in input(), max in max_len(), k in 1u32..10) {
        let expected = (
            v.iter().enumerate().filter(|(_, &x)| x % k == 0).map(|(i, _)| i).collect::<Vec<_>>(),
            v.iter().zip(v.iter().rev()).map(|(a, b)| (*a, *b)).collect::<Vec<_>>(),
            v.iter().zip(&v).zip(&v).map(|((a, b), c)| (*a, *b, *c)).collect::<Vec<_>>(),
            std::iter::repeat_n(k, v.len()).collect::<Vec<_>>(),
        );
        on_every_pool(&expected, || (
            v.par_iter().with_max_len(max).positions(|&x| x % k == 0).collect::<Vec<_>>(),
            v.par_iter().copied().zip_eq(v.par_iter().rev().copied()).with_max_len(max).collect::<Vec<_>>(),
            (&v, &v, &v).into_par_iter().with_max_len(max).map(|(a, b, c)| (*a, *b, *c)).collect::<Vec<_>>(),
            ember::iter::repeat_n(k, v.len()).with_max_len(max).collect::<Vec<_>>(),
        ));
    }

    #[test]
    fn blocks_match_sequential(v in input(), block in 1usize..500, k in 1u32..10) {
        let expected = (v.clone(), v.iter().copied().find(|x| x % k == k - 1), v.len());
        on_every_pool(&expected, || (
            v.par_iter().copied().by_uniform_blocks(block).collect::<Vec<_>>(),
            v.par_iter().copied().by_exponential_blocks().find_first(|x| x % k == k - 1),
            v.par_iter().by_exponential_blocks().count(),
        ));
    }

    #[test]
    fn slice_views_match_sequential(v in input(), size in 1usize..40, k in 1u32..10) {
        let expected = (
            v.chunks_exact(size).collect::<Vec<_>>(),
            v.rchunks(size).collect::<Vec<_>>(),
            v.rchunks_exact(size).collect::<Vec<_>>(),
            v.windows(size).collect::<Vec<_>>(),
            v.windows(3).map(|w| [w[0], w[1], w[2]]).collect::<Vec<_>>(),
        );
        on_every_pool(&expected, || (
            v.par_chunks_exact(size).collect::<Vec<_>>(),
            v.par_rchunks(size).collect::<Vec<_>>(),
            v.par_rchunks_exact(size).collect::<Vec<_>>(),
            v.par_windows(size).collect::<Vec<_>>(),
            v.par_array_windows::<3>().copied().collect::<Vec<_>>(),
        ));
        let cut = |x: &u32| x % k == 0;
        let expected = (
            v.split(cut).collect::<Vec<_>>(),
            v.split_inclusive(cut).collect::<Vec<_>>(),
            v.chunk_by(|a, b| a % k <= b % k).collect::<Vec<_>>(),
        );
        on_every_pool(&expected, || (
            v.par_split(cut).collect::<Vec<_>>(),
            v.par_split_inclusive(cut).collect::<Vec<_>>(),
            v.par_chunk_by(|a, b| a % k <= b % k).collect::<Vec<_>>(),
        ));
    }

    #[test]
    fn any_order_limits_keep_their_promises(v in input(), n in 0usize..4_000, k in 1u32..10) {
        check_on_every_pool(|name| {
            let taken: Vec<u32> = v.par_iter().copied().take_any(n).collect();
            assert_eq!(taken.len(), n.min(v.len()), "{name}: take_any");
            assert!(within(&taken, &v), "{name}: take_any made items up");
            let left: Vec<u32> = v.par_iter().copied().skip_any(n).collect();
            assert_eq!(left.len(), v.len() - n.min(v.len()), "{name}: skip_any");
            assert!(within(&left, &v), "{name}: skip_any made items up");
            let small = |x: &u32| x % k != 0;
            let kept: Vec<u32> = v.par_iter().copied().take_any_while(small).collect();
            assert!(kept.iter().all(small) && within(&kept, &v), "{name}: take_any_while");
            let all: Vec<u32> = v.par_iter().copied().take_any_while(|_| true).collect();
            assert_eq!(&all, &v, "{name}: take_any_while of always");
            let rest: Vec<u32> = v.par_iter().copied().skip_any_while(small).collect();
            assert!(within(&rest, &v), "{name}: skip_any_while made items up");
            let rejected = sorted(v.iter().copied().filter(|x| !small(x)).collect());
            assert!(within(&rejected, &rest), "{name}: skip_any_while dropped a rejected item");
            let somes: Vec<u32> = v.par_iter().map(|&x| small(&x).then_some(x)).while_some().collect();
            assert!(somes.iter().all(small) && within(&somes, &v), "{name}: while_some");
            let every: Vec<u32> = v.par_iter().map(|&x| Some(x)).while_some().collect();
            assert_eq!(&every, &v, "{name}: while_some of Somes");
        });
    }

    #[test]
    fn nested_flat_map_matches_sequential(v in vec(0u32..300, 0..300), k in 1u32..50) {
        let inner = |x: u32| (0..x).into_par_iter().with_max_len(7).map(move |y| x * 1000 + y);
        let seq = |x: u32| (0..x).map(move |y| x * 1000 + y);
        let hit = |x: &u32| x % 1000 % k == k - 1;
        let expected = (
            v.iter().flat_map(|&x| seq(x)).collect::<Vec<_>>(),
            v.iter().flat_map(|&x| seq(x)).find(hit),
            v.iter().flat_map(|&x| seq(x)).rfind(hit),
            v.iter().flat_map(|&x| seq(x)).any(|x| hit(&x)),
            v.iter().flat_map(|&x| seq(x)).map(u64::from).sum::<u64>(),
        );
        on_every_pool(&expected, || (
            v.par_iter().flat_map(|&x| inner(x)).collect::<Vec<_>>(),
            v.par_iter().flat_map(|&x| inner(x)).find_first(hit),
            v.par_iter().with_max_len(3).flat_map(|&x| inner(x)).filter(hit).find_last(|_| true),
            v.par_iter().flat_map(|&x| inner(x)).any(|x| hit(&x)),
            v.par_iter().map(|&x| inner(x)).flatten().map(u64::from).sum::<u64>(),
        ));
    }
}

#[test]
fn zip_eq_refuses_different_lengths() {
    let outcome = std::panic::catch_unwind(|| [1, 2].par_iter().zip_eq([1].par_iter()).count());
    assert!(outcome.is_err());
}

#[test]
fn searches_of_huge_ranges_end() {
    // 2^70 items (2^8 to a position): a leaf walked from its start would not end.
    let pool = common::pool(ember::WakePolicy::Searching, 2);
    let huge = 1u128 << 70;
    pool.install(|| {
        assert_eq!(
            (0..huge).into_par_iter().find_last(|_| true),
            Some(huge - 1)
        );
        assert_eq!(
            (0..=huge).into_par_iter().find_last(|x| x % 3 == 0),
            Some(huge - huge % 3)
        );
        assert!((0..huge)
            .into_par_iter()
            .filter(|x| *x > huge / 2)
            .find_any(|_| true)
            .is_some());
    });
}
