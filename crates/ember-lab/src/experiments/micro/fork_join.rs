//! Fork-join: naive `fib(n)` and chili's tree-sum (the sum of a perfect binary tree, one
//! `join` per inner node), on ember, rayon, chili and serially.
//!
//! Workers are the threads running the work, a helping caller included, counted the same way
//! for every system: ember and rayon get a pool of `workers` threads and the work starts
//! inside it (`install`, then the free `join` of each) while the caller waits; chili's pool of `workers`
//! threads is `workers - 1` threads plus the calling thread, which runs the work (chili also
//! runs a heartbeat thread, which does no work); `serial` is one thread calling the recursion
//! directly, the floor.
//!
//! **Every system walks the tree in the same order.** ember, rayon and the serial recursion run
//! a `join`'s first closure (the left subtree) on the calling thread first and offer the
//! second; chili does the reverse, offering its first closure and running its second first.
//! The order matters far more than any scheduler here: the tree is built as chili's
//! benchmark builds it, each node boxed after its subtrees, so a right-first walk reads
//! memory almost sequentially and a left-first walk jumps. The tree-sum tables carry a floor
//! row, `serial-right-first`, that measures the difference in every run
//! (`MEASUREMENTS.md`, "The tree-sum and the last-level cache"). So chili is
//! called with its closures swapped, which gives it the same roles as the others (the left
//! subtree runs first on the calling thread, the right one is offered) and leaves its
//! scheduling untouched: its rows then measure its scheduler, not the walk.
//!
//! A run evaluates the workload again and again until it has run for at least its target
//! time (60 ms; `--quick` 5 ms), so that every row, from the serial floor to the slowest
//! pool, is measured over the same stretch of time; `ns_per_op` is that time over the joins
//! made, and `evaluations` says how many there were.

use super::*;

/// A node of the tree-sum's tree.
pub(super) struct Node {
    val: u64,
    left: Option<Box<Node>>,
    right: Option<Box<Node>>,
}

impl Node {
    /// A perfect binary tree of `layers` layers (`2^layers - 1` nodes), every value 1.
    pub(super) fn tree(layers: u32) -> Node {
        let child = || (layers > 1).then(|| Box::new(Node::tree(layers - 1)));
        Node {
            val: 1,
            left: child(),
            right: child(),
        }
    }
}

/// One fork-join workload.
#[derive(Clone)]
pub(super) enum Work {
    /// `fib(n)`, one join per call with `n >= 2`.
    Fib(u32),
    /// The sum of a tree of this many layers, one join per node.
    TreeSum(u32, Arc<Node>),
}

impl Work {
    fn expected(&self) -> u64 {
        match self {
            Work::Fib(n) => fib_expected(*n),
            Work::TreeSum(layers, _) => (1u64 << layers) - 1,
        }
    }

    /// Joins one evaluation makes.
    pub(super) fn joins(&self) -> u64 {
        match self {
            Work::Fib(n) => joins(*n),
            Work::TreeSum(layers, _) => (1u64 << layers) - 1,
        }
    }

    fn check(&self, value: u64, system: &str) {
        assert_eq!(
            value,
            self.expected(),
            "micro: fork-join on {system}: wrong result"
        );
    }
}

/// `fib(n)`, computed iteratively (the expected value).
fn fib_expected(n: u32) -> u64 {
    let (mut a, mut b) = (0u64, 1u64);
    for _ in 0..n {
        (a, b) = (b, a + b);
    }
    a
}

/// Joins made by the naive recursion for `fib(n)`: one per call with `n >= 2`, which is
/// `fib(n + 1) - 1`.
pub(super) fn joins(n: u32) -> u64 {
    fib_expected(n + 1) - 1
}

/// The recursions, one per system: `$join` runs its two closures, possibly in parallel.
macro_rules! recursions {
    ($fib:ident, $sum:ident, ($($ctx:ident: $ty:ty)?), $join:expr) => {
        fn $fib($($ctx: $ty,)? n: u32) -> u64 {
            if n < 2 {
                return u64::from(n);
            }
            let (a, b) = $join($($ctx,)? |$($ctx: $ty)?| $fib($($ctx,)? n - 1), |$($ctx: $ty)?| $fib($($ctx,)? n - 2));
            a + b
        }
        fn $sum($($ctx: $ty,)? node: &Node) -> u64 {
            let (a, b) = $join(
                $($ctx,)?
                |$($ctx: $ty)?| node.left.as_deref().map_or(0, |n| $sum($($ctx,)? n)),
                |$($ctx: $ty)?| node.right.as_deref().map_or(0, |n| $sum($($ctx,)? n)),
            );
            node.val + a + b
        }
    };
}

fn serial_join<A: FnOnce() -> u64, B: FnOnce() -> u64>(a: A, b: B) -> (u64, u64) {
    (a(), b())
}

/// chili's `join` with the closures swapped: chili runs its second closure first on the
/// calling thread and offers its first, so `a` goes second, as the module doc explains.
fn chili_join<A, B>(s: &mut chili::Scope<'_>, a: A, b: B) -> (u64, u64)
where
    A: FnOnce(&mut chili::Scope<'_>) -> u64 + Send,
    B: FnOnce(&mut chili::Scope<'_>) -> u64 + Send,
{
    let (value_b, value_a) = s.join(b, a);
    (value_a, value_b)
}

/// The serial tree-sum walking the right subtree first: what the tree's memory layout alone
/// is worth (module doc).
fn sum_serial_right_first(node: &Node) -> u64 {
    let right = node.right.as_deref().map_or(0, sum_serial_right_first);
    let left = node.left.as_deref().map_or(0, sum_serial_right_first);
    node.val + left + right
}

recursions!(fib_serial, sum_serial, (), serial_join);
recursions!(fib_rayon, sum_rayon, (), rayon::join);
recursions!(fib_chili, sum_chili, (s: &mut chili::Scope<'_>), chili_join);

recursions!(fib_ember, sum_ember, (), ember::join);

/// Evaluations of `work` by `eval`, each checked, until `target` has passed; their time
/// and count. `black_box` keeps the compiler from hoisting a pure evaluation out of the loop.
fn timed(
    work: &Work,
    target: Duration,
    system: &str,
    mut eval: impl FnMut(&Work) -> u64,
) -> (Duration, u64) {
    let start = Instant::now();
    let mut evaluations = 0;
    while evaluations == 0 || start.elapsed() < target {
        let value = eval(std::hint::black_box(work));
        work.check(value, system);
        evaluations += 1;
    }
    (start.elapsed(), evaluations)
}

fn metrics(work: &Work, (elapsed, evaluations): (Duration, u64)) -> Metrics {
    let mut m = rate(work.joins() * evaluations, elapsed);
    m.insert("evaluations".into(), evaluations as f64);
    m
}

/// The serial floor: the recursion called directly. With `right_first` it is the tree-sum's
/// `serial-right-first` row, walking the right subtree first (`fib` has no memory to walk:
/// it runs the plain recursion either way).
pub(super) fn on_serial(work: &Work, target: Duration, right_first: bool) -> Metrics {
    let system = if right_first {
        systems::SERIAL_RIGHT_FIRST
    } else {
        systems::SERIAL
    };
    let timing = timed(work, target, system.name, |w| match w {
        Work::Fib(n) => fib_serial(*n),
        Work::TreeSum(_, tree) if right_first => sum_serial_right_first(tree),
        Work::TreeSum(_, tree) => sum_serial(tree),
    });
    metrics(work, timing)
}

pub(super) fn on_rayon(work: &Work, target: Duration, workers: usize) -> Metrics {
    with_rayon(workers, |pool| {
        let timing = pool.install(|| {
            timed(work, target, "rayon", |w| match w {
                Work::Fib(n) => fib_rayon(*n),
                Work::TreeSum(_, tree) => sum_rayon(tree),
            })
        });
        metrics(work, timing)
    })
}

pub(super) fn on_chili(work: &Work, target: Duration, workers: usize) -> Metrics {
    let pool = chili::ThreadPool::with_config(chili::Config {
        thread_count: std::num::NonZeroUsize::new(workers.max(1)),
        ..chili::Config::default()
    });
    let mut scope = pool.scope();
    let timing = timed(work, target, "chili", |w| match w {
        Work::Fib(n) => fib_chili(&mut scope, *n),
        Work::TreeSum(_, tree) => sum_chili(&mut scope, tree),
    });
    drop(scope);
    // Dropping the pool joins its threads.
    drop(pool);
    metrics(work, timing)
}

pub(super) fn on_ember(
    work: &Work,
    target: Duration,
    workers: usize,
    policy: EmberPolicy,
) -> Metrics {
    let pool = policy.build(workers, "micro");
    let name = policy.system().name;
    // Inside the pool, with the free `ember::join`, as a rayon user writes `rayon::join`
    // inside `install`: only the pool's own threads do the work.
    let timing = pool.install(|| {
        timed(work, target, name, |w| match w {
            Work::Fib(n) => fib_ember(*n),
            Work::TreeSum(_, tree) => sum_ember(tree),
        })
    });
    finish_ember(pool, metrics(work, timing))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_system_computes_both_workloads() {
        let tree = Work::TreeSum(6, Arc::new(Node::tree(6)));
        assert_eq!(tree.joins(), 63);
        for work in [Work::Fib(12), tree] {
            for workers in [1, 2] {
                let t = Duration::from_millis(1);
                on_serial(&work, t, false);
                on_serial(&work, t, true);
                on_rayon(&work, t, workers);
                on_chili(&work, t, workers);
                let m = on_ember(&work, t, workers, EmberPolicy::Default);
                assert!(m["ops_per_s"] > 0.0 && m["evaluations"] >= 1.0);
            }
        }
    }
}
