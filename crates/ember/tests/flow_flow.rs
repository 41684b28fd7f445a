//! End-to-end tests of `ember::flow`: a stencil through every mode, and bad input.
#![allow(clippy::single_range_in_vec_init)]

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use ember::flow::{Flow, FlowError, FlowOptions, Mode, Region};

const MODES: [Mode; 3] = [Mode::Inline, Mode::Lockstep, Mode::DoubleBuffered];

fn pool() -> ember::Pool {
    ember::Pool::builder().threads(3).build().unwrap()
}

fn step_value(src: &[f64], i: usize) -> f64 {
    let l = if i == 0 { src[i] } else { src[i - 1] };
    let r = if i + 1 == src.len() {
        src[i]
    } else {
        src[i + 1]
    };
    0.25 * l + 0.5 * src[i] + 0.25 * r
}

fn sequential(n: usize, steps: usize) -> Vec<f64> {
    let mut a: Vec<f64> = (0..n).map(|i| (i * i % 17) as f64).collect();
    for _ in 0..steps {
        a = (0..n).map(|i| step_value(&a, i)).collect();
    }
    a
}

/// A 1-D three-point stencil on alternating buffers, chunked, every chunk its own task.
fn stencil(mode: Mode, horizon_every: usize) -> (Vec<f64>, ember::flow::FlowStats) {
    const N: usize = 96;
    const CHUNK: usize = 16;
    const STEPS: usize = 12;
    let pool = pool();
    let flow = Flow::new(
        &pool,
        FlowOptions {
            mode,
            horizon_every,
        },
    );
    let bufs = [flow.buffer([N]), flow.buffer([N])];
    let data = [
        Arc::new(Mutex::new(vec![0.0f64; N])),
        Arc::new(Mutex::new(vec![0.0f64; N])),
    ];
    let init = data[0].clone();
    flow.submit(|cg| {
        cg.write(&bufs[0], Region::all());
        cg.run(move || {
            let mut a = init.lock().unwrap();
            for (i, x) in a.iter_mut().enumerate() {
                *x = (i * i % 17) as f64;
            }
        })
    })
    .unwrap();
    for step in 0..STEPS {
        let (src, dst) = (step % 2, 1 - step % 2);
        for c in (0..N).step_by(CHUNK) {
            let chunk = c..c + CHUNK;
            let (s, d) = (data[src].clone(), data[dst].clone());
            flow.submit(|cg| {
                cg.read(&bufs[src], Region::neighbourhood([chunk.clone()], [1]));
                cg.write(&bufs[dst], Region::one_to_one([chunk.clone()]));
                cg.label("stencil");
                cg.run(move || {
                    // Copy the input first: the two locks are never held together.
                    let input = s.lock().unwrap().clone();
                    let out: Vec<f64> = chunk.clone().map(|i| step_value(&input, i)).collect();
                    d.lock().unwrap()[chunk].copy_from_slice(&out);
                })
            })
            .unwrap();
        }
    }
    flow.wait().unwrap();
    let stats = flow.stats();
    let result = data[STEPS % 2].lock().unwrap().clone();
    (result, stats)
}

#[test]
fn stencil_matches_sequential_in_every_mode() {
    let expected = sequential(96, 12);
    for mode in MODES {
        for horizon_every in [0, 7, 256] {
            let (got, stats) = stencil(mode, horizon_every);
            assert_eq!(got, expected, "{mode:?}, horizon every {horizon_every}");
            assert_eq!(stats.tasks, 1 + 12 * 6);
            assert_eq!(stats.mode, mode);
            assert!(stats.edges > 0);
            if horizon_every == 7 {
                assert_eq!(stats.horizons, 73 / 7);
            }
        }
    }
}

/// A flow on `pool` in `mode`, with the default horizons.
fn flow_in(pool: &ember::Pool, mode: Mode) -> Flow {
    Flow::new(
        pool,
        FlowOptions {
            mode,
            ..Default::default()
        },
    )
}

#[test]
fn out_of_bounds_wrong_dimensions_and_foreign_buffers_are_refused() {
    let pool = pool();
    for mode in MODES {
        let flow = flow_in(&pool, mode);
        let other = flow_in(&pool, mode);
        let a = flow.buffer([10, 4]);
        let b = other.buffer([10, 4]);
        let ran = Arc::new(AtomicUsize::new(0));
        let r = ran.clone();
        let err = flow
            .submit(|cg| {
                cg.read(&a, [0..10, 0..5]);
                cg.run(move || {
                    r.fetch_add(1, Ordering::SeqCst);
                })
            })
            .unwrap_err();
        assert!(matches!(err, FlowError::OutOfBounds { .. }), "{err}");
        let err = flow.submit(|cg| {
            cg.write(&a, [0..3]);
        });
        assert!(matches!(err, Err(FlowError::Dimensions { region: 1, .. })));
        let err = flow.submit(|cg| {
            cg.read(&a, Region::all()).write(&b, Region::all());
        });
        assert!(matches!(err, Err(FlowError::ForeignBuffer { .. })));
        // Clamped helpers never fail; a transposed chunk is checked like any box.
        flow.submit(|cg| {
            cg.read(&a, Region::neighbourhood([8..10, 0..4], [3, 3]));
            cg.write(&a, Region::transposed([0..4, 2..10]));
        })
        .unwrap();
        flow.wait().unwrap();
        assert_eq!(ran.load(Ordering::SeqCst), 0);
        assert_eq!(flow.stats().tasks, 1);
        println!("{err:?}");
    }
}

/// Across horizons a panic cancels the later tasks on the buffers the failed task touched,
/// and only those.
#[test]
fn across_horizons_a_panic_cancels_later_tasks_on_its_buffers_only() {
    let pool = pool();
    for mode in MODES {
        let flow = Flow::new(
            &pool,
            FlowOptions {
                mode,
                horizon_every: 2,
            },
        );
        let a = flow.buffer([8]);
        let b = flow.buffer([8]);
        let ran = Arc::new(AtomicUsize::new(0));
        let count = |cg: &mut ember::flow::CommandGroup, n: usize| {
            let r = ran.clone();
            cg.run(move || {
                r.fetch_add(n, Ordering::SeqCst);
            });
        };
        flow.submit(|cg| {
            cg.write(&a, [0..4]);
            cg.run(|| panic!("kernel failed"));
        })
        .unwrap();
        // Six horizons follow, each with a node for `b`; none of them waits for the panic.
        for _ in 0..12 {
            flow.submit(|cg| {
                cg.read_write(&b, Region::all());
                count(cg, 1);
            })
            .unwrap();
        }
        // The half of `a` the failed task did not write: cancelled all the same, through the
        // horizon node of `a`.
        flow.submit(|cg| {
            cg.read(&a, [4..8]);
            count(cg, 100);
        })
        .unwrap();
        match flow.wait() {
            Err(FlowError::Failed {
                panicked,
                cancelled,
                ..
            }) => assert_eq!((panicked, cancelled), (1, 1), "{mode:?}"),
            other => panic!("{mode:?}: expected Failed, got {other:?}"),
        }
        assert_eq!(ran.load(Ordering::SeqCst), 12, "{mode:?}");
        assert!(flow.stats().horizons >= 6, "{:?}", flow.stats());
    }
}

#[test]
fn a_panicking_kernel_cancels_its_dependents_and_wait_reports_it() {
    let pool = pool();
    for mode in MODES {
        for horizon_every in [0, 2] {
            let flow = Flow::new(
                &pool,
                FlowOptions {
                    mode,
                    horizon_every,
                },
            );
            let a = flow.buffer([8]);
            let b = flow.buffer([8]);
            let ran = Arc::new(AtomicUsize::new(0));
            flow.submit(|cg| {
                cg.write(&a, [0..4]);
                cg.run(|| panic!("kernel failed"));
            })
            .unwrap();
            // Independent of the failed task (and submitted before any horizon): runs.
            let r = ran.clone();
            flow.submit(|cg| {
                cg.write(&b, Region::all());
                cg.run(move || {
                    r.fetch_add(1, Ordering::SeqCst);
                });
            })
            .unwrap();
            // Reads what the failed task wrote: cancelled, and so is its reader.
            for _ in 0..2 {
                let r = ran.clone();
                flow.submit(|cg| {
                    cg.read_write(&a, [2..6]);
                    cg.run(move || {
                        r.fetch_add(100, Ordering::SeqCst);
                    });
                })
                .unwrap();
            }
            match flow.wait() {
                Err(FlowError::Failed {
                    panicked,
                    cancelled,
                    first_panic,
                }) => {
                    assert_eq!((panicked, cancelled), (1, 2), "{mode:?}");
                    assert_eq!(first_panic.as_deref(), Some("kernel failed"));
                }
                other => panic!("{mode:?}: expected Failed, got {other:?}"),
            }
            assert_eq!(ran.load(Ordering::SeqCst), 1, "{mode:?}");
            // The counts start again; a task on untouched data is fine.
            let c = flow.buffer([1]);
            flow.submit(|cg| {
                cg.write(&c, Region::all());
                cg.run(|| {});
            })
            .unwrap();
            flow.wait().unwrap();
        }
    }
}

#[test]
fn dropping_a_flow_runs_everything_submitted() {
    let pool = pool();
    let count = Arc::new(AtomicUsize::new(0));
    for mode in MODES {
        let flow = flow_in(&pool, mode);
        let a = flow.buffer([4, 4, 4]);
        for i in 0..50 {
            let count = count.clone();
            flow.submit(|cg| {
                cg.read_write(&a, [i % 4..i % 4 + 1, 0..4, 0..4]);
                cg.run(move || {
                    count.fetch_add(1, Ordering::SeqCst);
                });
            })
            .unwrap();
        }
        drop(flow);
    }
    pool.wait_idle();
    assert_eq!(count.load(Ordering::SeqCst), 150);
}

/// Four threads submit at once in every mode: every task runs exactly once, and since all
/// of them read and write the same buffer, they run one at a time in submission order, so
/// each thread's tasks run in the order that thread submitted them.
#[test]
fn many_submitters_share_one_flow() {
    const THREADS: usize = 4;
    const PER_THREAD: usize = 500;
    let pool = pool();
    for mode in MODES {
        let flow = Arc::new(flow_in(&pool, mode));
        let a = flow.buffer([1]);
        let ran: Arc<Mutex<Vec<(usize, usize)>>> = Arc::new(Mutex::new(Vec::new()));
        let threads: Vec<_> = (0..THREADS)
            .map(|t| {
                let (flow, ran) = (flow.clone(), ran.clone());
                std::thread::spawn(move || {
                    for i in 0..PER_THREAD {
                        let ran = ran.clone();
                        flow.submit(|cg| {
                            cg.read_write(&a, Region::all());
                            cg.run(move || ran.lock().unwrap().push((t, i)));
                        })
                        .unwrap();
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        flow.wait().unwrap();
        let ran = ran.lock().unwrap();
        assert_eq!(ran.len(), THREADS * PER_THREAD, "{mode:?}");
        for t in 0..THREADS {
            let mine: Vec<usize> = ran.iter().filter(|r| r.0 == t).map(|r| r.1).collect();
            assert_eq!(
                mine,
                (0..PER_THREAD).collect::<Vec<_>>(),
                "{mode:?}, thread {t}"
            );
        }
        // Every task after the first depends on its predecessor (or a horizon).
        assert!(flow.stats().edges >= (THREADS * PER_THREAD - 1) as u64);
    }
}
