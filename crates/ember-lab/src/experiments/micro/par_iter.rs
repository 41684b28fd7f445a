//! The `par-iter` tables: parallel iterators on ember (default policy) and rayon, the same
//! pipeline code compiled against each crate's prelude, each inside its pool's `install`.
//!
//! - **sum of squares**: `v.par_iter().map(|x| (x >> 44)²).sum::<u64>()` over 10^7 random
//!   u64 (the shift keeps the sum in range), 40 evaluations per run (~4 ms each on 2 cores).
//! - **sort**: `par_sort_unstable` of a copy of the same 10^7 random u64, one per run (the
//!   copy is made inside the run, before the timed part, on both systems).
//! - **map-filter-collect**: `v.par_iter().map(hash).filter(|h| h % 3 == 0).collect::<Vec<_>>()`
//!   over the same input, 5 evaluations per run.
//! - **fold**: the least, the greatest and the sum of `hash(x) >> 30`, one `[u64; 3]` per
//!   piece, `v.par_iter().fold(|| NO_STATS, …).reduce(|| NO_STATS, add)`, 5 evaluations per
//!   run.
//! - **find-first**: `v.par_iter().find_first(|x| hash(x) == target)`, the target's first
//!   occurrence in the last tenth of the input, 5 evaluations per run: the pieces to its
//!   right stop once it is found.
//! - **flat-map**: `v.par_iter().flat_map(|x| (0..x % 4).into_par_iter().map(…)).sum()`,
//!   about 1.5 inner items per item, one evaluation per run. Each inner range is an inner
//!   parallel iterator that both crates drive in parallel, split over the pool like any
//!   other (nested parallelism).
//! - **hash-map-collect**: `v.par_iter().map(|x| (x >> 48, hash(x >> 48))).collect::<HashMap<_, _>>()`,
//!   2^16 distinct keys (a map of 65,536 entries, each value a function of its key so that
//!   which of equal keys is kept does not matter), one evaluation per run: the slowest of
//!   these tables, as both crates collect the pairs in order in parallel, then build the
//!   map on the calling thread (timings in `MEASUREMENTS.md`).
//!
//! `ns_per_op` is the timed evaluations' time per item. Every result is checked against a
//! sequential reference computed once, outside the runs: the sums, the sortedness, an
//! order-sensitive fingerprint of the collected vector and of the statistics, the index
//! found, and the map's length and an order-free digest of its entries. `--quick`: 10^5 items, one evaluation each.

use std::collections::HashMap;

use super::*;

/// The pipelines, written once and compiled against either crate's prelude.
macro_rules! pipelines {
    ($module:ident, $($prelude:tt)*) => {
        mod $module {
            use $($prelude)*;

            pub fn sum_of_squares(v: &[u64]) -> u64 {
                v.par_iter().map(|&x| super::square(x)).sum()
            }

            pub fn sort(v: &mut [u64]) {
                v.par_sort_unstable();
            }

            pub fn map_filter_collect(v: &[u64]) -> Vec<u64> {
                v.par_iter().map(|&x| super::hash(x)).filter(|h| h % 3 == 0).collect()
            }

            pub fn fold(v: &[u64]) -> [u64; 3] {
                v.par_iter()
                    .fold(|| super::NO_STATS, |stats, &x| super::add(stats, super::stats(x)))
                    .reduce(|| super::NO_STATS, super::add)
            }

            pub fn find_first(v: &[u64], target: u64) -> Option<&u64> {
                v.par_iter().find_first(|&&x| super::hash(x) == target)
            }

            pub fn flat_map(v: &[u64]) -> u64 {
                v.par_iter()
                    .flat_map(|&x| (0..x % 4).into_par_iter().map(move |i| (x >> 44) + i))
                    .sum()
            }

            pub fn hash_map_collect(v: &[u64]) -> std::collections::HashMap<u64, u64> {
                v.par_iter().map(|&x| super::entry(x)).collect()
            }
        }
    };
}

pipelines!(on_ember, ember::prelude::*);
pipelines!(on_rayon, rayon::prelude::*);

/// The square of the top 20 bits: 10^7 of them sum to less than 2^64.
#[inline]
fn square(x: u64) -> u64 {
    let y = x >> 44;
    y * y
}

#[inline]
fn hash(x: u64) -> u64 {
    (x ^ (x >> 29)).wrapping_mul(0xBF58_476D_1CE4_E5B9) >> 7
}

/// The least, the greatest and the sum of some 34-bit hashes (10^7 of them sum to less
/// than 2^64): the accumulator of `fold`.
const NO_STATS: [u64; 3] = [u64::MAX, 0, 0];

/// The statistics of one item.
#[inline]
fn stats(x: u64) -> [u64; 3] {
    let h = hash(x) >> 30;
    [h, h, h]
}

/// Two statistics combined.
#[inline]
fn add(a: [u64; 3], b: [u64; 3]) -> [u64; 3] {
    [a[0].min(b[0]), a[1].max(b[1]), a[2] + b[2]]
}

/// The sum of `flat_map`, sequentially.
fn flat_sum(v: &[u64]) -> u64 {
    v.iter()
        .flat_map(|&x| (0..x % 4).map(move |i| (x >> 44) + i))
        .sum()
}

/// The map entry of an item: its top 16 bits and their hash.
#[inline]
fn entry(x: u64) -> (u64, u64) {
    let key = x >> 48;
    (key, hash(key))
}

/// A digest of a map that does not depend on its iteration order.
fn map_digest(m: &HashMap<u64, u64>) -> u64 {
    m.iter().fold(m.len() as u64, |d, (&k, &v)| {
        d.wrapping_add(hash(k.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ v))
    })
}

/// An order-sensitive digest of a vector.
fn fingerprint(v: &[u64]) -> u64 {
    v.iter()
        .fold(v.len() as u64, |h, &x| h.wrapping_mul(0x100_0000_01B3) ^ x)
}

/// One crate's pipelines.
#[derive(Clone, Copy)]
struct Pipelines {
    sum_of_squares: fn(&[u64]) -> u64,
    sort: fn(&mut [u64]),
    map_filter_collect: fn(&[u64]) -> Vec<u64>,
    fold: fn(&[u64]) -> [u64; 3],
    find_first: fn(&[u64], u64) -> Option<&u64>,
    flat_map: fn(&[u64]) -> u64,
    hash_map_collect: fn(&[u64]) -> HashMap<u64, u64>,
}

const EMBER: Pipelines = Pipelines {
    sum_of_squares: on_ember::sum_of_squares,
    sort: on_ember::sort,
    map_filter_collect: on_ember::map_filter_collect,
    fold: on_ember::fold,
    find_first: on_ember::find_first,
    flat_map: on_ember::flat_map,
    hash_map_collect: on_ember::hash_map_collect,
};

const RAYON: Pipelines = Pipelines {
    sum_of_squares: on_rayon::sum_of_squares,
    sort: on_rayon::sort,
    map_filter_collect: on_rayon::map_filter_collect,
    fold: on_rayon::fold,
    find_first: on_rayon::find_first,
    flat_map: on_rayon::flat_map,
    hash_map_collect: on_rayon::hash_map_collect,
};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Workload {
    SumOfSquares,
    Sort,
    MapFilterCollect,
    Fold,
    FindFirst,
    FlatMap,
    HashMapCollect,
}

/// One table's workload, its shared input and the expected result.
struct Case {
    workload: Workload,
    input: Arc<Vec<u64>>,
    evaluations: usize,
    threads: usize,
    /// The sum, the collected vector's or the statistics' fingerprint, the index found, or
    /// the map's digest (the sort checks sortedness).
    expected: u64,
    /// What `find_first` looks for.
    target: u64,
}

impl Case {
    /// Runs the evaluations, each through `install`; their total time.
    fn evaluate(&self, p: Pipelines, install: &dyn Fn(&mut (dyn FnMut() + Send))) -> Duration {
        let mut total = Duration::ZERO;
        for _ in 0..self.evaluations {
            let v = self.input.as_slice();
            match self.workload {
                Workload::SumOfSquares => {
                    let mut sum = 0;
                    let start = Instant::now();
                    install(&mut || sum = (p.sum_of_squares)(v));
                    total += start.elapsed();
                    assert_eq!(sum, self.expected, "micro: par-iter sum of squares: wrong");
                }
                Workload::Sort => {
                    let mut copy = v.to_vec();
                    let start = Instant::now();
                    install(&mut || (p.sort)(&mut copy));
                    total += start.elapsed();
                    assert!(copy.is_sorted(), "micro: par-iter sort: not sorted");
                }
                Workload::MapFilterCollect => {
                    let mut out = Vec::new();
                    let start = Instant::now();
                    install(&mut || out = (p.map_filter_collect)(v));
                    total += start.elapsed();
                    assert_eq!(
                        fingerprint(&out),
                        self.expected,
                        "micro: par-iter map-filter-collect: wrong items or order"
                    );
                }
                Workload::Fold => {
                    let mut h = NO_STATS;
                    let start = Instant::now();
                    install(&mut || h = (p.fold)(v));
                    total += start.elapsed();
                    assert_eq!(
                        fingerprint(&h),
                        self.expected,
                        "micro: par-iter fold: wrong"
                    );
                }
                Workload::FindFirst => {
                    let mut at = None;
                    let start = Instant::now();
                    install(&mut || at = (p.find_first)(v, self.target).map(|x| index_of(v, x)));
                    total += start.elapsed();
                    assert_eq!(
                        at,
                        Some(self.expected as usize),
                        "micro: par-iter find-first: wrong"
                    );
                }
                Workload::FlatMap => {
                    let mut sum = 0;
                    let start = Instant::now();
                    install(&mut || sum = (p.flat_map)(v));
                    total += start.elapsed();
                    assert_eq!(sum, self.expected, "micro: par-iter flat-map: wrong");
                }
                Workload::HashMapCollect => {
                    let mut map = HashMap::new();
                    let start = Instant::now();
                    install(&mut || map = (p.hash_map_collect)(v));
                    total += start.elapsed();
                    assert_eq!(
                        map_digest(&map),
                        self.expected,
                        "micro: par-iter hash-map-collect: wrong entries"
                    );
                }
            }
        }
        total
    }

    fn ops(&self) -> u64 {
        (self.input.len() * self.evaluations) as u64
    }
}

fn on_ember_pool(case: &Case) -> Metrics {
    let pool = EmberPolicy::Default.build(case.threads, "micro-par-iter");
    let elapsed = case.evaluate(EMBER, &|f| pool.install(f));
    finish_ember(pool, rate(case.ops(), elapsed))
}

fn on_rayon_pool(case: &Case) -> Metrics {
    with_rayon(case.threads, |pool| {
        rate(case.ops(), case.evaluate(RAYON, &|f| pool.install(f)))
    })
}

/// The index of `item`, a reference into `v`.
fn index_of(v: &[u64], item: &u64) -> usize {
    (item as *const u64 as usize - v.as_ptr() as usize) / std::mem::size_of::<u64>()
}

/// `n` random u64, the same every time.
fn random_input(n: usize) -> Vec<u64> {
    let mut state = 0x853C_49E6_748F_EA9Bu64;
    (0..n)
        .map(|_| {
            // splitmix64
            state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let mut z = state;
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            z ^ (z >> 31)
        })
        .collect()
}

/// The seven `par-iter` tables at each of `widths` workers, ember against rayon, on one
/// input built here (unmeasured).
pub(super) fn par_iter_groups(s: Sizes, widths: &[usize]) -> Vec<Group> {
    let input = Arc::new(random_input(s.par_items));
    let sum: u64 = input.iter().map(|&x| square(x)).sum();
    let collected: Vec<u64> = input
        .iter()
        .map(|&x| hash(x))
        .filter(|h| h % 3 == 0)
        .collect();
    let collected = fingerprint(&collected);
    let stats = fingerprint(&input.iter().fold(NO_STATS, |a, &x| add(a, stats(x))));
    // The first occurrence of a hash drawn from the last tenth.
    let n = input.len();
    let target = hash(input[n - 1 - n / 20]);
    let found = input.iter().position(|&x| hash(x) == target).unwrap_or(0);
    let flat = flat_sum(&input);
    let map = map_digest(&input.iter().map(|&x| entry(x)).collect());
    let workloads = [
        (
            Workload::SumOfSquares,
            workload::SUM_OF_SQUARES,
            s.par_sum_evals,
            sum,
        ),
        (Workload::Sort, workload::SORT, 1, 0),
        (
            Workload::MapFilterCollect,
            workload::MAP_FILTER_COLLECT,
            s.par_collect_evals,
            collected,
        ),
        (Workload::Fold, workload::FOLD, s.par_collect_evals, stats),
        (
            Workload::FindFirst,
            workload::FIND_FIRST,
            s.par_collect_evals,
            found as u64,
        ),
        (Workload::FlatMap, workload::FLAT_MAP, 1, flat),
        (Workload::HashMapCollect, workload::HASH_MAP_COLLECT, 1, map),
    ];
    let mut groups = Vec::new();
    for &threads in widths {
        for (workload, name, evaluations, expected) in workloads {
            let case = Arc::new(Case {
                workload,
                input: input.clone(),
                evaluations,
                threads,
                expected,
                target,
            });
            let rayon_case = case.clone();
            groups.push(Group {
                title: format!(
                    "par-iter {name}: {} u64 x {evaluations}, {threads} thread{}",
                    thousands(s.par_items as u64),
                    plural(threads)
                ),
                params: params([
                    (key::BENCHMARK, benchmark::PAR_ITER.into()),
                    (key::WORKLOAD, name.into()),
                    ("threads", threads.into()),
                    ("items", s.par_items.into()),
                    ("evaluations", evaluations.into()),
                ])
                .into_iter()
                .chain(params(width_params(threads, s.threads)))
                .collect(),
                trials: vec![
                    trial(systems::EMBER, move || {
                        on_cpus(threads, || on_ember_pool(&case))
                    }),
                    trial(systems::RAYON, move || {
                        on_cpus(threads, || on_rayon_pool(&rayon_case))
                    }),
                ],
            });
        }
    }
    groups
}
