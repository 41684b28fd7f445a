//! The sources and the `collect` targets give what their sequential counterparts give.
//!
//! Every check runs inside `Pool::install` on pools of 1, 2 and 4 workers under every wake
//! policy, and compares with the standard library: ranges of every integer type (inclusive,
//! 128-bit, longer than `usize::MAX`), `char` ranges, the collections by value, reference
//! and mutable reference, `Option` and `Result`, arrays, `par_drain`, the string sources,
//! `par_bridge`, `split`, `repeat`, and `collect` into every collection (sorted where the
//! source has no order).

use std::borrow::Cow;
use std::collections::{BTreeMap, BTreeSet, BinaryHeap, HashMap, HashSet, LinkedList, VecDeque};
use std::panic::{self, AssertUnwindSafe};

use ember::prelude::*;
use proptest::collection::vec;
use proptest::prelude::*;

mod common;
use common::{every_pool, on_every_pool};

fn sorted<T: Ord>(mut v: Vec<T>) -> Vec<T> {
    v.sort();
    v
}

/// `with_min_len` values: none, small, and often larger than half the input.
fn min_len() -> impl Strategy<Value = usize> {
    prop_oneof![Just(0usize), 1usize..16, 16usize..3_000]
}

/// Strings of separators, multi-byte chars and whitespace, so that every split has work.
fn text() -> impl Strategy<Value = String> {
    let alphabet = prop_oneof![
        Just('a'),
        Just('b'),
        Just(','),
        Just(';'),
        Just('\n'),
        Just('\r'),
        Just(' '),
        Just('\t'),
        Just('é'),
        Just('😀'),
        Just('\u{3000}'),
    ];
    prop_oneof![
        vec(alphabet.clone(), 0..12).prop_map(String::from_iter),
        vec(alphabet, 0..3_000).prop_map(String::from_iter),
    ]
}

/// Runs `f`, which must panic with a message containing `needle`.
fn panics_with(needle: &str, f: impl FnOnce()) {
    let payload = panic::catch_unwind(AssertUnwindSafe(f)).expect_err("no panic");
    let message = payload
        .downcast_ref::<String>()
        .cloned()
        .or_else(|| payload.downcast_ref::<&str>().map(|s| s.to_string()))
        .unwrap_or_default();
    assert!(message.contains(needle), "panicked with {message:?}");
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 12, ..ProptestConfig::default() })]

    #[test]
    fn ranges_of_every_type_match_sequential(start in -3_000i64..3_000, len in 0i64..6_000, min in min_len()) {
        let end = start + len;
        let (s8, e8) = (start as i8, (start as i8).saturating_add(len.min(127) as i8));
        let (s16, e16) = (start as i16, end as i16);
        let (su, eu) = (start.unsigned_abs() as u128, start.unsigned_abs() as u128 + len as u128);
        let expected = (
            (s8..e8).collect::<Vec<_>>(),
            (s8..=e8).collect::<Vec<_>>(),
            (s16..=e16).filter(|x| x % 3 == 0).collect::<Vec<_>>(),
            (start as i128..end as i128).map(|x| x * 3).collect::<Vec<_>>(),
            (su..=eu).enumerate().map(|(i, x)| x + i as u128).collect::<Vec<_>>(),
            (start..=end).sum::<i64>(),
            (su as u64..=eu as u64).rev().zip(su as usize..eu as usize).map(|(a, b)| a + b as u64).collect::<Vec<_>>(),
            ((su as u32)..=(eu as u32)).count(),
        );
        on_every_pool(&expected, || (
            (s8..e8).into_par_iter().with_min_len(min).collect::<Vec<_>>(),
            (s8..=e8).into_par_iter().with_min_len(min).collect::<Vec<_>>(),
            (s16..=e16).into_par_iter().with_min_len(min).filter(|x| x % 3 == 0).collect::<Vec<_>>(),
            (start as i128..end as i128).into_par_iter().with_min_len(min).map(|x| x * 3).collect::<Vec<_>>(),
            (su..=eu).into_par_iter().enumerate().with_min_len(min).map(|(i, x)| x + i as u128).collect::<Vec<_>>(),
            (start..=end).into_par_iter().with_min_len(min).sum::<i64>(),
            (su as u64..=eu as u64).collect::<Vec<_>>().into_iter().rev().collect::<Vec<_>>()
                .into_par_iter().zip(su as usize..eu as usize).map(|(a, b)| a + b as u64).collect::<Vec<_>>(),
            ((su as u32)..=(eu as u32)).into_par_iter().len(),
        ));
    }

    #[test]
    fn char_ranges_match_sequential(a in any::<char>(), b in any::<char>(), min in min_len()) {
        let (lo, hi) = (a.min(b), a.max(b));
        // Keep the sequences short: a range across the surrogate gap is enough.
        let hi = char::from_u32((lo as u32 + 5_000).min(hi as u32)).unwrap_or(hi);
        let expected = ((lo..hi).collect::<String>(), (lo..=hi).count(), ('\u{D000}'..='\u{E100}').collect::<Vec<_>>());
        on_every_pool(&expected, || (
            (lo..hi).into_par_iter().with_min_len(min).collect::<String>(),
            (lo..=hi).into_par_iter().with_min_len(min).count(),
            ('\u{D000}'..='\u{E100}').into_par_iter().with_min_len(min).collect::<Vec<_>>(),
        ));
    }

    #[test]
    fn collections_match_sequential(v in vec(0u32..500, 0..3_000), min in min_len()) {
        let deque: VecDeque<u32> = {
            // Wrapped around: two slices.
            let mut d: VecDeque<u32> = v.iter().copied().skip(v.len() / 3).collect();
            v.iter().take(v.len() / 3).rev().for_each(|&x| d.push_front(x));
            d
        };
        let hash_map: HashMap<u32, u32> = v.iter().map(|&x| (x, x * 2)).collect();
        let btree_map: BTreeMap<u32, u32> = hash_map.iter().map(|(&k, &x)| (k, x)).collect();
        let hash_set: HashSet<u32> = v.iter().copied().collect();
        let btree_set: BTreeSet<u32> = v.iter().copied().collect();
        let list: LinkedList<u32> = v.iter().copied().collect();
        let heap: BinaryHeap<u32> = v.iter().copied().collect();
        let expected = (
            (deque.iter().copied().collect::<Vec<_>>(), deque.iter().map(|x| x + 1).collect::<Vec<_>>(), deque.clone().into_iter().collect::<Vec<_>>()),
            (sorted(hash_map.iter().map(|(&k, &x)| (k, x)).collect()), sorted(hash_map.clone().into_iter().collect()), sorted(hash_map.iter().map(|(&k, &x)| (k, x + k)).collect())),
            (btree_map.iter().map(|(&k, &x)| (k, x)).collect::<Vec<_>>(), btree_map.clone().into_iter().collect::<Vec<_>>(), btree_map.iter().map(|(&k, &x)| (k, x + k)).collect::<Vec<_>>()),
            (sorted(hash_set.iter().copied().collect()), sorted(hash_set.clone().into_iter().collect())),
            (btree_set.iter().copied().collect::<Vec<_>>(), btree_set.clone().into_iter().collect::<Vec<_>>()),
            (list.iter().copied().collect::<Vec<_>>(), list.clone().into_iter().collect::<Vec<_>>(), list.iter().map(|x| x * 3).collect::<Vec<_>>()),
            (sorted(heap.iter().copied().collect()), sorted(heap.clone().into_vec())),
        );
        on_every_pool(&expected, || {
            let mut deque_mut = deque.clone();
            deque_mut.par_iter_mut().with_min_len(min).for_each(|x| *x += 1);
            let mut hash_mut = hash_map.clone();
            hash_mut.par_iter_mut().for_each(|(k, x)| *x += k);
            let mut btree_mut = btree_map.clone();
            btree_mut.par_iter_mut().with_min_len(min).for_each(|(k, x)| *x += k);
            let mut list_mut = list.clone();
            list_mut.par_iter_mut().for_each(|x| *x *= 3);
            (
                (deque.par_iter().with_min_len(min).map(|&x| x).collect::<Vec<_>>(), deque_mut.into_iter().collect(), deque.clone().into_par_iter().with_min_len(min).collect()),
                (sorted(hash_map.par_iter().map(|(&k, &x)| (k, x)).collect()), sorted(hash_map.clone().into_par_iter().collect()), sorted(hash_mut.into_iter().collect())),
                (btree_map.par_iter().map(|(&k, &x)| (k, x)).collect(), btree_map.clone().into_par_iter().with_min_len(min).collect(), btree_mut.into_iter().collect()),
                (sorted(hash_set.par_iter().map(|&x| x).collect()), sorted(hash_set.clone().into_par_iter().collect())),
                (btree_set.par_iter().map(|&x| x).collect(), btree_set.clone().into_par_iter().collect()),
                (list.par_iter().map(|&x| x).collect(), list.clone().into_par_iter().collect(), list_mut.into_iter().collect()),
                (sorted(heap.par_iter().map(|&x| x).collect()), sorted(heap.clone().into_par_iter().collect())),
            )
        });
    }

    #[test]
    fn collect_targets_match_sequential(v in vec(0u32..300, 0..3_000), k in 1u32..20) {
        let keep = |x: &u32| x % k != 0;
        let pairs = |x: u32| (x, x.wrapping_mul(7));
        let expected = (
            v.iter().copied().filter(keep).collect::<VecDeque<_>>(),
            v.iter().copied().collect::<LinkedList<_>>(),
            v.iter().copied().filter(keep).collect::<BinaryHeap<_>>().into_sorted_vec(),
            v.iter().copied().map(pairs).collect::<HashMap<_, _>>(),
            v.iter().copied().filter(keep).collect::<HashSet<_>>(),
            // Equal keys: the last one wins, as sequentially.
            v.iter().enumerate().map(|(i, &x)| (x, i)).collect::<BTreeMap<_, _>>(),
            v.iter().copied().collect::<BTreeSet<_>>(),
            v.iter().copied().filter(keep).collect::<Box<[_]>>(),
            v.iter().map(|&x| char::from(b'a' + (x % 26) as u8)).collect::<String>(),
            v.iter().map(|x| x.to_string()).collect::<String>(),
            v.iter().filter(|x| keep(x)).map(|x| format!("{x},")).collect::<String>(),
            v.iter().map(|x| if x % 2 == 0 { "ab" } else { "é" }).collect::<Cow<'_, str>>(),
        );
        on_every_pool(&expected, || (
            v.par_iter().map(|&x| x).filter(keep).collect::<VecDeque<_>>(),
            v.par_iter().map(|&x| x).collect::<LinkedList<_>>(),
            v.par_iter().map(|&x| x).filter(keep).collect::<BinaryHeap<_>>().into_sorted_vec(),
            v.par_iter().map(|&x| x).map(pairs).collect::<HashMap<_, _>>(),
            v.par_iter().map(|&x| x).filter(keep).collect::<HashSet<_>>(),
            v.par_iter().enumerate().map(|(i, &x)| (x, i)).collect::<BTreeMap<_, _>>(),
            v.par_iter().map(|&x| x).collect::<BTreeSet<_>>(),
            v.par_iter().map(|&x| x).filter(keep).collect::<Box<[_]>>(),
            v.par_iter().map(|&x| char::from(b'a' + (x % 26) as u8)).collect::<String>(),
            v.par_iter().map(|x| x.to_string()).collect::<String>(),
            v.par_iter().filter(|x| keep(x)).map(|x| format!("{x},")).collect::<String>(),
            v.par_iter().map(|x| if x % 2 == 0 { "ab" } else { "é" }).collect::<Cow<'_, str>>(),
        ));
    }

    #[test]
    fn results_and_options_collect_like_sequential(v in vec(0u32..1_000, 0..3_000), bad in 0u32..1_200) {
        let expected = (
            v.iter().map(|&x| if x == bad { Err(x) } else { Ok(x) }).collect::<Result<Vec<_>, u32>>(),
            v.iter().map(|&x| (x != bad).then_some(x)).collect::<Option<Vec<_>>>(),
            v.iter().map(|&x| (x != bad).then_some(x)).collect::<Option<HashSet<_>>>(),
        );
        on_every_pool(&expected, || (
            v.par_iter().map(|&x| if x == bad { Err(x) } else { Ok(x) }).collect::<Result<Vec<_>, u32>>(),
            v.par_iter().map(|&x| (x != bad).then_some(x)).collect::<Option<Vec<_>>>(),
            v.par_iter().map(|&x| (x != bad).then_some(x)).collect::<Option<HashSet<_>>>(),
        ));
    }

    #[test]
    fn strings_match_sequential(s in text(), min in min_len()) {
        let is_sep = |c: char| c == ',' || c == 'é';
        let expected = (
            s.chars().collect::<Vec<_>>(),
            s.char_indices().collect::<Vec<_>>(),
            s.bytes().collect::<Vec<_>>(),
            s.split(',').collect::<Vec<_>>(),
            s.split(is_sep).collect::<Vec<_>>(),
            s.split(&[';', '😀'][..]).collect::<Vec<_>>(),
            s.split_inclusive('\n').collect::<Vec<_>>(),
            s.split_terminator(';').collect::<Vec<_>>(),
            s.lines().collect::<Vec<_>>(),
            s.split_whitespace().collect::<Vec<_>>(),
            s.split_ascii_whitespace().collect::<Vec<_>>(),
            {
                let mut left = s.clone();
                let cut = s.char_indices().nth(s.chars().count() / 3).map_or(0, |(i, _)| i);
                (left.drain(cut..).collect::<Vec<char>>(), left)
            },
        );
        on_every_pool(&expected, || (
            s.par_chars().with_min_len(min).collect::<Vec<_>>(),
            s.par_char_indices().with_min_len(min).collect::<Vec<_>>(),
            s.par_bytes().with_min_len(min).collect::<Vec<_>>(),
            s.par_split(',').with_min_len(min).collect::<Vec<_>>(),
            s.par_split(is_sep).collect::<Vec<_>>(),
            s.par_split([';', '😀']).with_min_len(min).collect::<Vec<_>>(),
            s.par_split_inclusive('\n').collect::<Vec<_>>(),
            s.par_split_terminator(';').with_min_len(min).collect::<Vec<_>>(),
            s.par_lines().collect::<Vec<_>>(),
            s.par_split_whitespace().with_min_len(min).collect::<Vec<_>>(),
            s.par_split_ascii_whitespace().collect::<Vec<_>>(),
            {
                let mut left = s.clone();
                let cut = s.char_indices().nth(s.chars().count() / 3).map_or(0, |(i, _)| i);
                (left.par_drain(cut..).with_min_len(min).collect::<Vec<char>>(), left)
            },
        ));
    }

    #[test]
    fn drains_match_sequential(v in vec(any::<u16>(), 0..2_000), a in any::<usize>(), b in any::<usize>(), min in min_len()) {
        let (start, end) = {
            let (x, y) = (a % (v.len() + 1), b % (v.len() + 1));
            (x.min(y), x.max(y))
        };
        let mut vec_left = v.clone();
        let vec_drained: Vec<u16> = vec_left.drain(start..end).collect();
        // The deque drains an inclusive range, which needs an element at `start`; where there
        // is none (`start` is the length, the empty vector included) it drains `start..start`.
        let last = end.saturating_sub(1).max(start);
        let inclusive = start < v.len();
        let mut deque_left: VecDeque<u16> = v.iter().copied().collect();
        let deque_drained: Vec<u16> = if inclusive {
            deque_left.drain(start..=last).collect()
        } else {
            deque_left.drain(start..start).collect()
        };
        let expected = (vec_drained.clone(), vec_left, deque_drained.clone(), deque_left);
        on_every_pool(&expected, || {
            let mut vec_left = v.clone();
            let drained = vec_left.par_drain(start..end).with_min_len(min).collect();
            let mut deque_left: VecDeque<u16> = v.iter().copied().collect();
            let deque_drained = if inclusive {
                deque_left.par_drain(start..=last).collect()
            } else {
                deque_left.par_drain(start..start).collect()
            };
            (drained, vec_left, deque_drained, deque_left)
        });
    }

    #[test]
    fn bridge_split_and_repeat_match_sequential(v in vec(any::<u32>(), 0..3_000), cut in 1usize..200) {
        let expected = (
            sorted(v.iter().map(|x| x / 2).collect::<Vec<_>>()),
            v.iter().map(|&x| u64::from(x)).sum::<u64>(),
            v.chunks(cut).map(<[u32]>::to_vec).collect::<Vec<_>>().concat(),
            vec![v.len(); v.len().min(50)],
        );
        on_every_pool(&expected, || {
            let bridged = sorted(v.iter().par_bridge().map(|x| x / 2).collect());
            let halves = |s: &[u32]| -> u64 {
                ember::iter::split(s, |s| {
                    if s.len() <= cut {
                        return (s, None);
                    }
                    let (a, b) = s.split_at(s.len() / 2);
                    (a, Some(b))
                })
                .map(|s| s.iter().map(|&x| u64::from(x)).sum::<u64>())
                .sum()
            };
            let pieces: Vec<&[u32]> = ember::iter::split(&v[..], |s| {
                if s.len() <= cut {
                    return (s, None);
                }
                let (a, b) = s.split_at(s.len() / 2);
                (a, Some(b))
            })
            .collect();
            (
                bridged,
                halves(&v),
                pieces.concat(),
                ember::iter::repeat(v.len()).take(v.len().min(50)).collect(),
            )
        });
    }
}

#[test]
fn ranges_longer_than_usize_run_unindexed() {
    const OCTILLION: u128 = 1_000_000_000_000_000_000_000_000_000;
    for (name, pool) in every_pool() {
        pool.install(|| {
            // Every piece runs its integers in order, so only a hit near the start of the
            // first piece ends on a pool of one worker.
            assert!((0..OCTILLION).into_par_iter().any(|x| x == 77), "{name}");
            assert!((0..u128::MAX).into_par_iter().any(|x| x == 1000), "{name}");
            assert!((5..=u128::MAX).into_par_iter().any(|x| x == 9), "{name}");
            let low = i128::MIN + 5;
            assert!(
                (i128::MIN..=i128::MAX).into_par_iter().any(|x| x == low),
                "{name}"
            );
            assert!((0..=u64::MAX).into_par_iter().any(|x| x == 5), "{name}");
            let evens = (OCTILLION..OCTILLION + 10)
                .into_par_iter()
                .filter(|x| x % 2 == 0);
            assert_eq!(evens.count(), 5, "{name}");
            let top: Vec<u128> = (u128::MAX - 3..=u128::MAX).into_par_iter().collect();
            assert_eq!(
                top,
                [u128::MAX - 3, u128::MAX - 2, u128::MAX - 1, u128::MAX]
            );
            let top: Vec<u8> = (250..=u8::MAX).into_par_iter().collect();
            assert_eq!(top, [250, 251, 252, 253, 254, 255]);
            assert_eq!((i8::MIN..=i8::MAX).into_par_iter().count(), 256);
            assert_eq!(
                (u64::MAX - 9..=u64::MAX).into_par_iter().len(),
                10,
                "a range that fits is indexed"
            );
        });
    }
    panics_with("longer than usize::MAX", || {
        let _ = (0..=u64::MAX).into_par_iter().len();
    });
    panics_with("longer than usize::MAX", || {
        let _ = (0..OCTILLION).into_par_iter().enumerate().count();
    });
}

#[test]
fn options_results_arrays_and_once_match_sequential() {
    let some = Some(String::from("x"));
    let ok: Result<u8, String> = Ok(3);
    let err: Result<u8, String> = Err("no".into());
    let expected = (
        vec!["x".to_string()],
        vec![3u8],
        0usize,
        vec![2u8],
        vec![6, 7, 8],
        vec![1, 2],
        0u32,
    );
    on_every_pool(&expected, || {
        let mut ok_mut = ok.clone();
        ok_mut.par_iter_mut().for_each(|x| *x -= 1);
        (
            some.clone().into_par_iter().collect(),
            ok.clone().into_par_iter().collect(),
            err.par_iter().count() + None::<u8>.into_par_iter().count(),
            ok_mut.into_par_iter().collect(),
            [5u8, 6, 7].into_par_iter().map(|x| x + 1).collect(),
            ember::iter::repeatn(1, 1)
                .zip(ember::iter::once(2))
                .map(|(a, b)| vec![a, b])
                .reduce(Vec::new, |mut a, b| {
                    a.extend(b);
                    a
                }),
            ember::iter::empty::<u32>().sum(),
        )
    });
}

#[test]
fn sources_clone() {
    let v = vec![1, 2, 3];
    let s = v.par_iter();
    assert_eq!(s.clone().sum::<i32>(), s.sum::<i32>());
    let r = (0..10u8).into_par_iter();
    assert_eq!(r.clone().count(), r.count());
    let w = "a b".par_split_whitespace();
    assert_eq!(w.clone().count(), w.count());
    let m: HashMap<u8, u8> = [(1, 2)].into_iter().collect();
    let it = m.par_iter();
    assert_eq!(it.clone().count(), it.count());
}

#[test]
fn drains_dropped_unconsumed_drain_their_range() {
    let mut v: Vec<String> = (0..10).map(|i| i.to_string()).collect();
    drop(v.par_drain(2..=4));
    assert_eq!(v, ["0", "1", "5", "6", "7", "8", "9"]);
    let mut v: Vec<u8> = (0..10).collect();
    assert!(v.par_drain(..).any(|x| x == 3));
    assert!(v.is_empty());
    panics_with("out of range", || {
        let _ = vec![1].par_drain(..3);
    });
    let mut heap: BinaryHeap<u8> = (0..5).collect();
    let mut set: HashSet<u8> = (0..5).collect();
    let mut map: HashMap<u8, u8> = (0..5).map(|i| (i, i)).collect();
    assert_eq!(
        heap.par_drain().count() + set.par_drain().count() + map.par_drain().count(),
        15
    );
    assert!(heap.is_empty() && set.is_empty() && map.is_empty());
}
