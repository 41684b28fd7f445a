//! Data-owning buffers and range kernels: results against sequential runs, the chunking of
//! ranges, what accessors allow, and the errors a command group can make.
#![allow(clippy::single_range_in_vec_init)]

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use ember::flow::{map, Buffer, Flow, FlowError, FlowOptions, Mode, Region};

mod common;

const MODES: [Mode; 3] = [Mode::Inline, Mode::Lockstep, Mode::DoubleBuffered];

fn pool(threads: usize) -> ember::Pool {
    ember::Pool::builder().threads(threads).build().unwrap()
}

fn flow(pool: &ember::Pool, mode: Mode) -> Flow {
    Flow::new(
        pool,
        FlowOptions {
            mode,
            horizon_every: 16,
        },
    )
}

fn init(n: usize, [i, j]: [usize; 2]) -> f64 {
    ((i * 7 + j * 13) % 23) as f64 / 23.0 + if i == 0 { 1.0 } else { 0.0 } * n as f64
}

fn cell(src: &[f64], n: usize, i: usize, j: usize) -> f64 {
    if i == 0 || j == 0 || i + 1 == n || j + 1 == n {
        src[i * n + j]
    } else {
        0.25 * (src[(i - 1) * n + j]
            + src[(i + 1) * n + j]
            + src[i * n + j - 1]
            + src[i * n + j + 1])
    }
}

fn sequential(n: usize, steps: usize) -> Vec<f64> {
    let mut a: Vec<f64> = (0..n * n).map(|k| init(n, [k / n, k % n])).collect();
    for _ in 0..steps {
        a = (0..n * n).map(|k| cell(&a, n, k / n, k % n)).collect();
    }
    a
}

/// A 2-D 5-point Jacobi step on alternating buffers, as range kernels.
fn jacobi(flow: &Flow, n: usize, steps: usize, chunks: Option<usize>) -> Vec<f64> {
    let bufs = [
        Buffer::new(flow, [n, n], |p| init(n, p)),
        Buffer::new(flow, [n, n], |_| 0.0),
    ];
    for s in 0..steps {
        let (src, dst) = (&bufs[s % 2], &bufs[(s + 1) % 2]);
        common::jacobi::submit_step(flow, src, dst, n, "jacobi".into(), chunks);
    }
    flow.read_back(&bufs[steps % 2]).unwrap()
}

#[test]
fn range_kernels_match_a_sequential_run_bit_for_bit() {
    let pool = pool(3);
    for mode in MODES {
        for (n, steps) in [(9, 5), (17, 12)] {
            let expected = sequential(n, steps);
            for chunks in [None, Some(1), Some(4), Some(100)] {
                let got = jacobi(&flow(&pool, mode), n, steps, chunks);
                assert!(got == expected, "{mode:?} n={n} chunks={chunks:?}");
            }
        }
    }
}

#[test]
fn every_item_of_an_uneven_range_runs_once() {
    let pool = pool(3);
    for (len, chunks) in [(7, 3), (2, 5), (1, 4), (10, 10), (0, 2)] {
        let flow = Flow::new(&pool, FlowOptions::default());
        let seen = Arc::new((0..len).map(|_| AtomicUsize::new(0)).collect::<Vec<_>>());
        let calls = Arc::new(AtomicUsize::new(0));
        let (s, c) = (seen.clone(), calls.clone());
        flow.submit(|cg| {
            cg.chunks(chunks).parallel_for([len], move |chunk| {
                assert!(!chunk.is_empty());
                c.fetch_add(1, Ordering::Relaxed);
                for [i] in chunk.items() {
                    s[i].fetch_add(1, Ordering::Relaxed);
                }
            });
        })
        .unwrap();
        flow.wait().unwrap();
        assert!(seen.iter().all(|x| x.load(Ordering::Relaxed) == 1));
        assert_eq!(calls.load(Ordering::Relaxed), chunks.min(len));
    }
}

#[test]
fn chunks_writing_the_same_elements_run_one_after_another() {
    // Every chunk reads and writes the whole counter: the flow orders them, so no update is
    // lost although the kernel does a plain read-modify-write.
    let pool = pool(4);
    for mode in MODES {
        let flow = flow(&pool, mode);
        let counter = Buffer::new(&flow, [1], |_| 0u64);
        for _ in 0..5 {
            flow.submit(|cg| {
                let c = counter.read_write(cg, map::all());
                cg.chunks(8).parallel_for([8], move |chunk| {
                    let mut c = chunk.write(&c);
                    c[[0]] += chunk.len() as u64;
                });
            })
            .unwrap();
        }
        assert_eq!(flow.read_back(&counter).unwrap(), [40]);
    }
}

#[test]
fn mappers_give_the_declared_regions() {
    let pool = pool(2);
    let flow = Flow::new(&pool, FlowOptions::default());
    let n = 5;
    let a = Buffer::new(&flow, [n, n], |[i, j]| (i * n + j) as u32);
    let t = Buffer::new(&flow, [n, n], |_| 0u32);
    let shifted = Buffer::new(&flow, [2 * n], |_| 0u32);
    flow.submit(|cg| {
        let a = a.read(cg, map::transposed());
        let t = t.write(cg, map::one_to_one());
        cg.parallel_for([n, n], move |chunk| {
            let (a, mut t) = (chunk.read(&a), chunk.write(&t));
            for [i, j] in chunk.items() {
                t[[i, j]] = a[[j, i]];
            }
        });
    })
    .unwrap();
    flow.submit(|cg| {
        let t = t.read(cg, map::fixed([0..1, 0..n]));
        let out = shifted.write(
            cg,
            map::from_fn(move |[r]: [std::ops::Range<usize>; 1]| {
                Region::from(r.start + n..r.end + n)
            }),
        );
        cg.parallel_for([n], move |chunk| {
            let (t, mut out) = (chunk.read(&t), chunk.write(&out));
            for [i] in chunk.items() {
                out[[i + n]] = t[[0, i]];
                assert!(t.get([1, i]).is_none(), "row 1 was not declared");
            }
        });
    })
    .unwrap();
    let t = flow.read_back(&t).unwrap();
    let expected: Vec<u32> = (0..n * n).map(|k| ((k % n) * n + k / n) as u32).collect();
    assert_eq!(t, expected);
    let s = flow.read_back(&shifted).unwrap();
    let row0: Vec<u32> = (0..n).map(|j| (j * n) as u32).collect();
    assert_eq!(&s[n..], &row0[..]);
    assert!(s[..n].iter().all(|&x| x == 0));
}

#[test]
fn an_index_outside_the_declared_region_fails_the_task_not_the_process() {
    let pool = pool(2);
    for mode in MODES {
        let flow = flow(&pool, mode);
        let a = Buffer::new(&flow, [8], |[i]| i as i64);
        flow.submit(|cg| {
            let a = a.read_write(cg, map::one_to_one());
            cg.chunks(2).parallel_for([8], move |chunk| {
                let mut a = chunk.write(&a);
                let [r] = chunk.range();
                a[[r.end % 8]] = -1; // the neighbouring chunk's first element
            });
        })
        .unwrap();
        // The read waits for the failed writers: it is cancelled, and says so.
        match flow.read_back(&a) {
            Err(FlowError::Failed {
                panicked,
                first_panic,
                ..
            }) => {
                assert_eq!(panicked, 2);
                assert!(first_panic.unwrap().contains("outside the region"));
            }
            other => panic!("{mode:?}: {other:?}"),
        }
        // The flow goes on: a fresh buffer works.
        let b = Buffer::new(&flow, [3], |[i]| i as i64);
        assert_eq!(flow.read_back(&b).unwrap(), [0, 1, 2]);
    }
}

#[test]
fn a_second_write_view_of_one_accessor_panics() {
    let pool = pool(2);
    let flow = Flow::new(&pool, FlowOptions::default());
    let a = Buffer::new(&flow, [4], |_| 0u8);
    flow.submit(|cg| {
        let a = a.write(cg, map::one_to_one());
        cg.chunks(1).parallel_for([4], move |chunk| {
            let _first = chunk.write(&a);
            let _second = chunk.write(&a);
        });
    })
    .unwrap();
    match flow.wait() {
        Err(FlowError::Failed { first_panic, .. }) => {
            assert!(first_panic.unwrap().contains("already gave a view"))
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn bad_command_groups_are_refused_before_anything_runs() {
    let pool = pool(2);
    let flow = Flow::new(&pool, FlowOptions::default());
    let other = Flow::new(&pool, FlowOptions::default());
    let a = Buffer::new(&flow, [4, 4], |_| 0f32);
    let foreign = Buffer::new(&other, [4], |_| 0f32);
    let ran = Arc::new(AtomicUsize::new(0));
    let r = ran.clone();
    let kernel = move |_: &ember::flow::Chunk<2>| {
        r.fetch_add(1, Ordering::Relaxed);
    };
    let declaration = |e: FlowError| matches!(e, FlowError::Declaration(_));
    let k = kernel.clone();
    let two_accessors = flow.submit(|cg| {
        a.read(cg, map::all());
        a.write(cg, map::one_to_one());
        cg.parallel_for([4, 4], k);
    });
    assert!(declaration(two_accessors.unwrap_err()));
    let no_range = flow.submit(|cg| {
        a.read(cg, map::all());
        cg.run(|| {});
    });
    assert!(declaration(no_range.unwrap_err()));
    let k = kernel.clone();
    let two_kernels = flow.submit(|cg| {
        cg.run(|| {});
        cg.parallel_for([4, 4], k);
    });
    assert!(declaration(two_kernels.unwrap_err()));
    let k = kernel.clone();
    let no_chunks = flow.submit(|cg| {
        cg.chunks(0).parallel_for([4, 4], k);
    });
    assert!(declaration(no_chunks.unwrap_err()));
    let k = kernel.clone();
    let out_of_bounds = flow.submit(|cg| {
        a.write(cg, map::one_to_one());
        cg.parallel_for([5, 4], k);
    });
    assert!(matches!(
        out_of_bounds.unwrap_err(),
        FlowError::OutOfBounds { .. }
    ));
    let k = kernel.clone();
    let wrong_dims = flow.submit(|cg| {
        a.read(cg, map::neighbourhood([1]));
        cg.parallel_for([4, 4], k);
    });
    assert!(matches!(
        wrong_dims.unwrap_err(),
        FlowError::Dimensions { .. }
    ));
    let k = kernel.clone();
    let foreign_buffer = flow.submit(|cg| {
        foreign.read(cg, map::all());
        cg.parallel_for([4, 4], k);
    });
    assert!(matches!(
        foreign_buffer.unwrap_err(),
        FlowError::ForeignBuffer { .. }
    ));
    let k = kernel.clone();
    let panicking_mapper = flow.submit(|cg| {
        a.read(
            cg,
            map::from_fn(|[rows, _]: [std::ops::Range<usize>; 2]| -> Region {
                panic!("no region for rows {rows:?}")
            }),
        );
        cg.parallel_for([4, 4], k);
    });
    match panicking_mapper.unwrap_err() {
        FlowError::Declaration(m) => assert!(m.contains("no region for rows"), "{m}"),
        other => panic!("{other:?}"),
    }
    flow.wait().unwrap();
    assert_eq!(ran.load(Ordering::Relaxed), 0);
    assert_eq!(flow.stats().tasks, 0);
}

#[test]
fn plain_accesses_order_range_kernels_against_run_tasks() {
    // A run task writes user data declared on a BufferId; a range kernel that declares a
    // read of it sees the write.
    let pool = pool(3);
    let flow = Flow::new(&pool, FlowOptions::default());
    let id = flow.buffer([1]);
    let value = Arc::new(AtomicUsize::new(0));
    let out = Buffer::new(&flow, [6], |_| 0usize);
    let v = value.clone();
    flow.submit(|cg| {
        cg.write(&id, Region::all());
        cg.run(move || {
            std::thread::sleep(std::time::Duration::from_millis(5));
            v.store(42, Ordering::Relaxed);
        });
    })
    .unwrap();
    let v = value.clone();
    flow.submit(|cg| {
        cg.read(&id, Region::all());
        let out = out.write(cg, map::one_to_one());
        cg.parallel_for([6], move |chunk| {
            let mut out = chunk.write(&out);
            for [i] in chunk.items() {
                out[[i]] = v.load(Ordering::Relaxed) + i;
            }
        });
    })
    .unwrap();
    assert_eq!(flow.read_back(&out).unwrap(), [42, 43, 44, 45, 46, 47]);
}
