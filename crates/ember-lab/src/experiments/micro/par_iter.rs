//! The `par-iter` tables: parallel iterators on ember (default policy) and rayon, the same
//! pipeline code compiled against each crate's prelude, each inside its pool's `install`.
//!
//! - **sum of squares**: `v.par_iter().map(|x| (x >> 44)²).sum::<u64>()` over 10^7 random
//!   u64 (the shift keeps the sum in range), 40 evaluations per run (~4 ms each on 2 cores).
//! - **sort**: `par_sort_unstable` of a copy of the same 10^7 random u64, one per run (the
//!   copy is made inside the run, before the timed part, on both systems).
//! - **map-filter-collect**: `v.par_iter().map(hash).filter(|h| h % 3 == 0).collect::<Vec<_>>()`
//!   over the same input, 5 evaluations per run.
//!
//! `ns_per_op` is the timed evaluations' time per item. Every result is checked against a
//! sequential reference computed once, outside the runs: the sum, the sortedness, and an
//! order-sensitive fingerprint of the collected vector. `--quick`: 10^5 items, one
//! evaluation each.

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
}

const EMBER: Pipelines = Pipelines {
    sum_of_squares: on_ember::sum_of_squares,
    sort: on_ember::sort,
    map_filter_collect: on_ember::map_filter_collect,
};

const RAYON: Pipelines = Pipelines {
    sum_of_squares: on_rayon::sum_of_squares,
    sort: on_rayon::sort,
    map_filter_collect: on_rayon::map_filter_collect,
};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Workload {
    SumOfSquares,
    Sort,
    MapFilterCollect,
}

/// One table's workload, its shared input and the expected result.
struct Case {
    workload: Workload,
    input: Arc<Vec<u64>>,
    evaluations: usize,
    threads: usize,
    /// The sum, or the collected vector's fingerprint (the sort checks sortedness).
    expected: u64,
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

/// The three `par-iter` tables at each of `widths` workers, ember against rayon, on one
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
    let workloads = [
        (
            Workload::SumOfSquares,
            "sum-of-squares",
            s.par_sum_evals,
            sum,
        ),
        (Workload::Sort, "sort", 1, 0),
        (
            Workload::MapFilterCollect,
            "map-filter-collect",
            s.par_collect_evals,
            collected,
        ),
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
            });
            let rayon_case = case.clone();
            groups.push(Group {
                title: format!(
                    "par-iter {name}: {} u64 x {evaluations}, {threads} thread{}",
                    thousands(s.par_items as u64),
                    plural(threads)
                ),
                params: params([
                    ("benchmark", "par-iter".into()),
                    ("workload", name.into()),
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
