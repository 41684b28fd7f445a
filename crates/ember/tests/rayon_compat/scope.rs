//! `scope`, `scope_fifo` and `in_place_scope` (rayon-core `scope/test.rs`, and the scope tests
//! of `thread_pool/test.rs`).

use std::panic::{self, AssertUnwindSafe};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use ember::{Scope, ScopeFifo};

use super::{assert_nested_orders, pool, random_u32s, AnyScope};

#[test]
fn an_empty_scope_returns() {
    ember::scope(|_| {});
}

#[test]
fn a_scope_returns_its_body_s_value() {
    assert_eq!(ember::scope(|_| 22), 22);
}

#[test]
fn a_scope_waits_for_its_jobs() {
    let counter = AtomicUsize::new(0);
    ember::scope(|s| {
        s.spawn(|_| {
            counter.fetch_add(1, Ordering::SeqCst);
        });
        s.spawn(|_| {
            counter.fetch_add(10, Ordering::SeqCst);
        });
    });
    assert_eq!(counter.into_inner(), 11);
}

/// Jobs spawn jobs into the same scope, 1,024 leaves deep in halves.
#[test]
fn jobs_spawn_into_their_scope_recursively() {
    fn split<'s>(s: &Scope<'s>, leaves: &'s AtomicUsize, size: usize) {
        if size > 1 {
            s.spawn(move |s| split(s, leaves, size / 2));
            s.spawn(move |s| split(s, leaves, size / 2));
        } else {
            leaves.fetch_add(1, Ordering::SeqCst);
        }
    }
    let leaves = AtomicUsize::new(0);
    ember::scope(|s| s.spawn(|s| split(s, &leaves, 1024)));
    assert_eq!(leaves.into_inner(), 1024);
}

struct Tree {
    value: u32,
    children: Vec<Tree>,
}

impl Tree {
    /// A tree `depth` levels deep with 0 to 3 children per node.
    fn random(depth: usize, numbers: &mut impl Iterator<Item = u32>) -> Tree {
        let value = numbers.next().unwrap();
        let children = if depth == 0 { 0 } else { value % 4 };
        Tree {
            value,
            children: (0..children)
                .map(|_| Tree::random(depth - 1, numbers))
                .collect(),
        }
    }

    fn values(&self, out: &mut Vec<u32>) {
        out.push(self.value);
        self.children.iter().for_each(|child| child.values(out));
    }

    /// Adds one to every value, each node in its own scope job, borrowing `&mut self`.
    fn increment_in<'s>(&'s mut self, s: &Scope<'s>) {
        let Tree { value, children } = self;
        s.spawn(move |s| children.iter_mut().for_each(|child| child.increment_in(s)));
        *value += 1;
    }
}

#[test]
fn scope_jobs_update_a_borrowed_tree() {
    let mut numbers = random_u32s(100_000, 3).into_iter().map(|x| x % 1_000_000);
    let mut tree = Tree::random(10, &mut numbers);
    let mut before = Vec::new();
    tree.values(&mut before);
    ember::scope(|s| tree.increment_in(s));
    let mut after = Vec::new();
    tree.values(&mut after);
    assert_eq!(after, before.iter().map(|v| v + 1).collect::<Vec<_>>());
}

/// A chain of jobs, each spawning the next, runs at constant stack depth: each job returns
/// before the worker takes the next. The deepest stack address seen is the same for chains
/// of 5 and of 500.
#[test]
fn a_chain_of_scope_jobs_does_not_grow_the_stack() {
    fn countdown<'s>(s: &Scope<'s>, bottom: &'s usize, deepest: &'s Mutex<usize>, n: usize) {
        let here = 0u8;
        let depth = (bottom as *const usize as usize).abs_diff(&here as *const u8 as usize);
        let mut deepest_seen = deepest.lock().unwrap();
        *deepest_seen = (*deepest_seen).max(depth);
        if n > 0 {
            s.spawn(move |s| countdown(s, bottom, deepest, n - 1));
        }
    }
    pool(1).install(|| {
        let bottom = 0usize;
        let deepest = Mutex::new(0);
        ember::scope(|s| countdown(s, &bottom, &deepest, 5));
        let after_5 = *deepest.lock().unwrap() as f64;
        ember::scope(|s| countdown(s, &bottom, &deepest, 500));
        let after_500 = *deepest.lock().unwrap() as f64;
        let ratio = after_5 / after_500;
        assert!(
            ratio > 0.9 && ratio < 1.1,
            "stack grew: {after_5} vs {after_500}"
        );
    });
}

#[test]
#[should_panic(expected = "Hello, world!")]
fn a_panic_of_the_body_propagates() {
    ember::scope(|_| panic!("Hello, world!"));
}

#[test]
#[should_panic(expected = "Hello, world!")]
fn a_panic_of_a_job_propagates() {
    ember::scope(|s| s.spawn(|_| panic!("Hello, world!")));
}

#[test]
#[should_panic(expected = "Hello, world!")]
fn a_panic_of_a_nested_job_propagates() {
    ember::scope(|s| s.spawn(|s| s.spawn(|s| s.spawn(|_| panic!("Hello, world!")))));
}

#[test]
#[should_panic(expected = "Hello, world!")]
fn a_panic_in_a_nested_scope_propagates() {
    ember::scope(|s| s.spawn(|_| ember::scope(|s| s.spawn(|_| panic!("Hello, world!")))));
}

/// Whatever panics — a job spawned before or after the other, or the body after spawning —
/// every other job still runs, and the body runs to its end after a job's panic.
#[test]
fn the_other_jobs_and_the_body_run_despite_a_panic() {
    type Body = for<'a, 's> fn(&'a Scope<'s>, &'s AtomicUsize);
    let cases: [(&str, Body); 4] = [
        ("a job panics, then another is spawned", |s, ran| {
            s.spawn(|_| panic!("Hello, world!"));
            s.spawn(move |_| {
                ran.fetch_add(1, Ordering::SeqCst);
            });
        }),
        ("a job is spawned, then another panics", |s, ran| {
            s.spawn(move |_| {
                ran.fetch_add(1, Ordering::SeqCst);
            });
            s.spawn(|_| panic!("Hello, world!"));
        }),
        ("the body panics after spawning", |s, ran| {
            s.spawn(move |_| {
                ran.fetch_add(1, Ordering::SeqCst);
            });
            panic!("Hello, world!");
        }),
        ("the body goes on after a job panics", |s, ran| {
            s.spawn(|_| panic!("Hello, world!"));
            ran.fetch_add(1, Ordering::SeqCst);
        }),
    ];
    for (what, body) in cases {
        let ran = AtomicUsize::new(0);
        let result = panic::catch_unwind(AssertUnwindSafe(|| ember::scope(|s| body(s, &ran))));
        assert!(result.is_err(), "{what}: the panic propagates");
        assert_eq!(ran.into_inner(), 1, "{what}: the rest still ran");
    }
}

/// `ember::scope`, or `ember::scope_fifo` if `fifo`.
fn in_scope<'s, R: Send>(fifo: bool, f: impl for<'b> FnOnce(AnyScope<'b, 's>) -> R + Send) -> R {
    AnyScope::open(None, fifo, f)
}

/// Runs `f` on a one-thread pool (no thief reorders anything) with a log to push to, and
/// returns the log.
fn log_on_one_thread(f: impl FnOnce(&Mutex<Vec<i32>>) + Send) -> Vec<i32> {
    pool(1).install(|| {
        let log = Mutex::new(Vec::new());
        f(&log);
        log.into_inner().unwrap()
    })
}

/// 10 jobs each spawn 10 more into the same scope.
fn same_scope_order(fifo: bool) -> Vec<i32> {
    log_on_one_thread(|log| {
        in_scope(fifo, |s| {
            for i in 0..10 {
                s.spawn(move |s| {
                    for j in 0..10 {
                        s.spawn(move |_| log.lock().unwrap().push(i * 10 + j));
                    }
                });
            }
        })
    })
}

/// 10 jobs of an outer scope each open an inner scope and spawn 10 jobs into it.
fn nested_scope_order(outer_fifo: bool, inner_fifo: bool) -> Vec<i32> {
    log_on_one_thread(|log| {
        in_scope(outer_fifo, |s| {
            for i in 0..10 {
                s.spawn(move |_| {
                    in_scope(inner_fifo, |s| {
                        for j in 0..10 {
                            s.spawn(move |_| log.lock().unwrap().push(i * 10 + j));
                        }
                    })
                });
            }
        })
    })
}

/// Spawns into an outer and an inner scope, interleaved (inner ones log negative numbers).
fn mixed_scope_order(outer_fifo: bool, inner_fifo: bool) -> Vec<i32> {
    fn push<'s>(s: AnyScope<'_, 's>, log: &'s Mutex<Vec<i32>>, i: i32) {
        s.spawn(move |_| log.lock().unwrap().push(i));
    }
    log_on_one_thread(|log| {
        in_scope(outer_fifo, |outer| {
            push(outer, log, 0);
            in_scope(inner_fifo, |inner| {
                push(inner, log, -1);
                push(outer, log, 1);
                push(inner, log, -2);
                push(outer, log, 2);
                push(inner, log, -3);
            });
            push(outer, log, 3);
        })
    })
}

#[test]
fn scope_jobs_run_newest_first_without_stealing() {
    assert_eq!(same_scope_order(false), (0..100).rev().collect::<Vec<_>>());
}

#[test]
fn scope_fifo_jobs_run_oldest_first_without_stealing() {
    assert_eq!(same_scope_order(true), (0..100).collect::<Vec<_>>());
}

#[test]
fn nested_scopes_keep_their_own_order() {
    assert_nested_orders(nested_scope_order);
}

/// The inner scope's end runs some outer jobs before the outer body has spawned them all,
/// so the orders are rayon's exactly, not a plain LIFO or FIFO.
#[test]
fn interleaved_scopes_run_in_rayon_s_order() {
    assert_eq!(mixed_scope_order(false, false), [-3, 2, -2, 1, -1, 3, 0]);
    assert_eq!(mixed_scope_order(true, true), [-1, 0, -2, 1, -3, 2, 3]);
    assert_eq!(mixed_scope_order(false, true), [-1, 2, -2, 1, -3, 3, 0]);
    assert_eq!(mixed_scope_order(true, false), [-3, 0, -2, 1, -1, 2, 3]);
}

/// `Pool::scope` and `Pool::scope_fifo` called on one of the pool's own workers.
#[test]
fn pool_scopes_from_inside_the_pool_keep_their_order() {
    fn order(pool: &ember::Pool, fifo: bool) -> Vec<i32> {
        let log = Mutex::new(Vec::new());
        let log = &log;
        pool.install(|| {
            if fifo {
                pool.scope_fifo(|s| {
                    (0..10).for_each(|i| s.spawn_fifo(move |_| log.lock().unwrap().push(i)))
                });
            } else {
                pool.scope(|s| (0..10).for_each(|i| s.spawn(move |_| log.lock().unwrap().push(i))));
            }
        });
        let order = log.lock().unwrap().clone();
        order
    }
    let pool = pool(1);
    assert_eq!(order(&pool, false), (0..10).rev().collect::<Vec<_>>());
    assert_eq!(order(&pool, true), (0..10).collect::<Vec<_>>());
}

/// A `Scope<'static>` may be made while the body borrows locally; its jobs are 'static.
#[test]
fn static_scopes_borrow_locally_in_the_body() {
    static SUM: AtomicUsize = AtomicUsize::new(0);
    let mut range = 0..100;
    let expected: usize = range.clone().sum();
    let numbers = &mut range;
    ember::scope(|s: &Scope<'static>| {
        for i in numbers {
            s.spawn(move |_| {
                SUM.fetch_add(i, Ordering::Relaxed);
            });
        }
    });
    let numbers = &mut (0..100);
    ember::scope_fifo(|s: &ScopeFifo<'static>| {
        for i in numbers {
            s.spawn_fifo(move |_| {
                SUM.fetch_add(i, Ordering::Relaxed);
            });
        }
    });
    assert_eq!(SUM.load(Ordering::Relaxed), 2 * expected);
}

/// The body may borrow a short-lived slice while the jobs borrow only longer-lived counters.
#[test]
fn scopes_mix_lifetimes() {
    fn increment<'counter>(counters: &[&'counter AtomicUsize]) {
        ember::scope(move |s: &Scope<'counter>| {
            for &c in counters {
                s.spawn(move |_| {
                    c.fetch_add(1, Ordering::Relaxed);
                });
            }
        });
        ember::scope_fifo(move |s: &ScopeFifo<'counter>| {
            for &c in counters {
                s.spawn_fifo(move |_| {
                    c.fetch_add(1, Ordering::Relaxed);
                });
            }
        });
    }
    let counter = AtomicUsize::new(0);
    increment(&[&counter; 100]);
    assert_eq!(counter.into_inner(), 200);
}

/// The body of an in-place scope does not take a worker: on a one-thread pool it may block
/// until its job has run.
#[test]
fn an_in_place_scope_body_may_wait_for_its_jobs() {
    let pool = pool(1);
    let (tx, rx) = std::sync::mpsc::channel();
    pool.in_place_scope(|s| {
        let tx = tx.clone();
        s.spawn(move |_| tx.send(1).unwrap());
        assert_eq!(rx.recv().unwrap(), 1);
    });
    pool.in_place_scope_fifo(|s| {
        s.spawn_fifo(move |_| tx.send(2).unwrap());
        assert_eq!(rx.recv().unwrap(), 2);
    });
}

/// The body runs on the calling thread itself (and may use what is not `Send`).
#[test]
fn an_in_place_scope_body_runs_on_the_calling_thread() {
    let caller = std::thread::current().id();
    let not_send = std::rc::Rc::new(5);
    let ran = AtomicUsize::new(0);
    let body_thread = pool(2).in_place_scope(|s| {
        s.spawn(|_| {
            ran.fetch_add(1, Ordering::SeqCst);
        });
        assert_eq!(*not_send, 5);
        std::thread::current().id()
    });
    assert_eq!(body_thread, caller);
    assert_eq!(ran.into_inner(), 1);
}
