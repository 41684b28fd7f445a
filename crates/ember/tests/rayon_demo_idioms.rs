//! The constructs that rayon's own demo programs (`rayon-demo`: nbody, life, sieve,
//! pythagoras, find, fibonacci, join_microbench, vec_collect, str_split, mergesort,
//! quicksort, matmul, tsp) build on, each written small and checked against its sequential
//! result on every wake policy with 1, 2 and 7 workers. Those programs build against ember
//! with only their imports renamed and print rayon's results; these tests keep the shapes
//! they rely on from regressing. (`find` also calls `by_exponential_blocks`, which is not
//! here.)

use std::collections::LinkedList;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, OnceLock};

use ember::prelude::*;
use ember::Pool;

mod common;
use common::{on_pools, pools_of};

fn pools() -> &'static [(String, Pool)] {
    static POOLS: OnceLock<Vec<(String, Pool)>> = OnceLock::new();
    POOLS.get_or_init(|| pools_of(&[1, 2, 7]))
}

fn gcd(mut a: u32, mut b: u32) -> u32 {
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a
}

/// pythagoras: a generic function takes the range's type by name (`ember::range::Iter`) and
/// a knob on it (as is, `with_min_len(usize::MAX)`, `with_max_len(1)`), applied to an outer
/// range and to the inner ranges built inside its `map`.
#[test]
fn nested_ranges_through_a_knob_on_the_named_range_type() {
    fn count<K, I>(knob: K) -> u32
    where
        K: Fn(ember::range::Iter<u32>) -> I + Sync,
        I: ParallelIterator<Item = u32>,
    {
        knob((1u32..120).into_par_iter())
            .map(|m| {
                knob((1..m).into_par_iter())
                    .filter(|&n| (m - n) % 2 == 1 && gcd(m, n) == 1)
                    .map(|n| 100_000 / (m * m + n * n))
                    .sum::<u32>()
            })
            .sum()
    }
    let expected: u32 = (1u32..120)
        .map(|m| {
            (1..m)
                .filter(|&n| (m - n) % 2 == 1 && gcd(m, n) == 1)
                .map(|n| 100_000 / (m * m + n * n))
                .sum::<u32>()
        })
        .sum();
    on_pools(pools(), &expected, || count(|r| r));
    on_pools(pools(), &expected, || count(|r| r.with_min_len(usize::MAX)));
    on_pools(pools(), &expected, || count(|r| r.with_max_len(1)));
}

/// fibonacci and quicksort's splitter: `split` as a recursive source, over a number and
/// over a mutable slice partitioned in place.
#[test]
fn split_over_a_number_and_over_a_mutable_slice() {
    fn fib(n: u32) -> u32 {
        if n < 2 {
            n
        } else {
            fib(n - 1) + fib(n - 2)
        }
    }
    on_pools(pools(), &fib(20), || {
        ember::iter::split(20u32, |n| {
            if n < 2 {
                (n, None)
            } else {
                (n - 2, Some(n - 1))
            }
        })
        .map(fib)
        .sum::<u32>()
    });

    let input: Vec<u32> = (0..5_000u32)
        .map(|i| i.wrapping_mul(2_654_435_761) % 1000)
        .collect();
    let mut expected = input.clone();
    expected.sort();
    on_pools(pools(), &expected, || {
        let mut v = input.clone();
        ember::iter::split(&mut v[..], |s| {
            if s.len() > 64 {
                // Partition around the last item: everything before `at` is at most it.
                let pivot = s.len() - 1;
                let mut at = 0;
                for j in 0..pivot {
                    if s[j] <= s[pivot] {
                        s.swap(at, j);
                        at += 1;
                    }
                }
                s.swap(at, pivot);
                let (left, right) = s.split_at_mut(at);
                (left, Some(right))
            } else {
                (s, None)
            }
        })
        .for_each(|piece| piece.sort());
        v
    });
}

/// sieve: every chunk of a mutable slice its own job, told its index.
#[test]
fn enumerated_mutable_chunks_one_per_job() {
    let expected: Vec<usize> = (0..1_000).map(|i| i / 7 * 1000 + i % 7).collect();
    on_pools(pools(), &expected, || {
        let mut v = vec![0usize; 1_000];
        v.par_chunks_mut(7)
            .enumerate()
            .with_max_len(1)
            .for_each(|(chunk, items)| {
                for (k, x) in items.iter_mut().enumerate() {
                    *x = chunk * 1000 + k;
                }
            });
        v
    });
}

/// nbody: one slice written through `par_iter_mut().zip(&other[..])`, or through
/// `par_bridge` over the zipped sequential iterators, each item reading the whole input; and
/// a fold of pairs reduced with an identity.
#[test]
fn zipped_borrowed_slices_bridged_iterators_and_pair_reductions() {
    let input: Vec<u64> = (0..2_000).collect();
    let total: u64 = input.iter().sum();
    let expected: Vec<u64> = input.iter().map(|x| x * 3 + total).collect();
    on_pools(pools(), &expected, || {
        let mut out = vec![0u64; input.len()];
        out.par_iter_mut()
            .zip(&input[..])
            .for_each(|(o, x)| *o = x * 3 + input.iter().sum::<u64>());
        out
    });
    on_pools(pools(), &expected, || {
        let mut out = vec![0u64; input.len()];
        out.iter_mut()
            .zip(&input[..])
            .par_bridge()
            .for_each(|(o, x)| *o = x * 3 + input.iter().sum::<u64>());
        out
    });
    let pairs = (total, input.iter().map(|x| x * x).sum::<u64>());
    on_pools(pools(), &pairs, || {
        input
            .par_iter()
            .fold(|| (0, 0), |(a, b), x| (a + x, b + x * x))
            .reduce(|| (0, 0), |(a, b), (c, d)| (a + c, b + d))
    });
}

/// life: `par_bridge` over a range, mapped and collected: every item once, in some order.
#[test]
fn bridged_range_collects_every_item_once() {
    let expected: Vec<usize> = (0..10_000).map(|i| i * 7 % 10_007).collect();
    let mut sorted = expected.clone();
    sorted.sort();
    on_pools(pools(), &sorted, || {
        let mut got: Vec<usize> = (0..10_000usize)
            .par_bridge()
            .map(|i| i * 7 % 10_007)
            .collect();
        got.sort();
        got
    });
}

/// vec_collect: a `Vec` built through a fold into vectors collected into a `LinkedList`,
/// through fold-map-reduce, and by `collect_into_vec` reusing a vector; from an indexed
/// range and from a filtered one. Every way keeps the order.
#[test]
fn vectors_built_through_folds_lists_and_reductions_keep_order() {
    fn through_list<P: ParallelIterator<Item = u32>>(p: P) -> Vec<u32> {
        let list: LinkedList<Vec<u32>> = p
            .fold(Vec::new, |mut v, x| {
                v.push(x);
                v
            })
            .collect();
        list.into_iter().flatten().collect()
    }
    fn through_reduce<P: ParallelIterator<Item = u32>>(p: P) -> Vec<u32> {
        p.fold(Vec::new, |mut v, x| {
            v.push(x);
            v
        })
        .map(|v| vec![v])
        .reduce(Vec::new, |mut a, mut b| {
            a.append(&mut b);
            a
        })
        .concat()
    }
    let expected: Vec<u32> = (0..20_000).collect();
    on_pools(pools(), &expected, || {
        through_list((0..20_000u32).into_par_iter())
    });
    on_pools(pools(), &expected, || {
        through_list((0..20_000u32).into_par_iter().filter(|_| true))
    });
    on_pools(pools(), &expected, || {
        through_reduce((0..20_000u32).into_par_iter())
    });
    on_pools(pools(), &expected, || {
        through_reduce((0..20_000u32).into_par_iter().filter(|_| true))
    });
    on_pools(pools(), &expected, || {
        let mut v = vec![7; 3];
        (0..20_000u32).into_par_iter().collect_into_vec(&mut v);
        (0..20_000u32).into_par_iter().collect_into_vec(&mut v);
        v
    });
}

/// str_split: `par_split` by a char, a slice of chars and a closure.
#[test]
fn string_split_by_char_char_slice_and_closure() {
    let text: String = (0..5_000u32)
        .map(|i| {
            if i.wrapping_mul(2_654_435_761) % 8 == 0 {
                ' '
            } else {
                'a'
            }
        })
        .collect();
    const WHITESPACE: &[char] = &['\r', '\n', ' ', '\t'];
    let expected = text.split(' ').count();
    on_pools(pools(), &expected, || text.par_split(' ').count());
    on_pools(pools(), &expected, || text.par_split(WHITESPACE).count());
    on_pools(pools(), &expected, || text.par_split(|c| c == ' ').count());
}

/// find: `find_any`, `find_first` and a map-reduce search over a slice of arrays.
#[test]
fn searches_over_a_slice_of_arrays() {
    let hay: Vec<[u32; 1]> = (0..50_000u32)
        .map(|i| [i.wrapping_mul(2_654_435_761)])
        .collect();
    let needle = hay[hay.len() / 3][0];
    let expected = Some(needle);
    on_pools(pools(), &expected, || {
        hay.par_iter().find_any(|x| x[0] == needle).map(|x| x[0])
    });
    on_pools(pools(), &expected, || {
        hay.par_iter().find_first(|x| x[0] == needle).map(|x| x[0])
    });
    on_pools(pools(), &expected, || {
        hay.par_iter()
            .map(|x| (x[0] == needle).then_some(x[0]))
            .reduce(|| None, |a, b| a.or(b))
    });
}

/// tsp: a scope whose jobs take work from a shared queue and spawn more jobs, each borrowing
/// the context from outside the scope.
#[test]
fn scope_jobs_spawn_more_jobs_borrowing_the_outer_context() {
    struct Cx {
        queue: Mutex<Vec<u32>>,
        visited: AtomicUsize,
    }
    fn step<'s>(s: &ember::Scope<'s>, cx: &'s Cx) {
        let depth = cx.queue.lock().unwrap().pop().expect("one item per job");
        cx.visited.fetch_add(1, Ordering::Relaxed);
        if depth < 6 {
            for _ in 0..3 {
                cx.queue.lock().unwrap().push(depth + 1);
                s.spawn(move |s| step(s, cx));
            }
        }
    }
    // 3^0 + 3^1 + ... + 3^6 jobs.
    let expected = (0..=6).map(|d| 3usize.pow(d)).sum::<usize>();
    on_pools(pools(), &expected, || {
        let cx = Cx {
            queue: Mutex::new(vec![0]),
            visited: AtomicUsize::new(0),
        };
        ember::scope(|s| step(s, &cx));
        cx.visited.into_inner()
    });
}
