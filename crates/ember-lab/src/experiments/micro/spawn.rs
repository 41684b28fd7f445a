//! Spawn-many: `spawns` empty jobs spawned from outside the pool or from inside one of its
//! tasks, then waited for; every job counted in, and checked out, on each system.

use super::*;

#[derive(Clone, Copy, Debug)]
pub(super) enum Origin {
    Outside,
    Inside,
}

pub(super) fn spawn_group(s: Sizes, origin: Origin) -> Group {
    let (word, name) = match origin {
        Origin::Outside => ("outside", "spawn-outside"),
        Origin::Inside => ("inside a task", "spawn-inside"),
    };
    Group {
        title: format!(
            "spawn-many from {word}: {} tasks x {} rounds, {} threads",
            thousands(s.spawn_tasks as u64),
            s.spawn_rounds,
            s.threads
        ),
        params: params([
            (crate::tables::key::BENCHMARK, name.into()),
            ("threads", s.threads.into()),
            ("tasks", s.spawn_tasks.into()),
            ("rounds", s.spawn_rounds.into()),
        ]),
        // No row that varies deferral: spawns from outside go to the global queue, and those
        // from inside are a burst, not a chain.
        trials: EmberPolicy::trials(&EmberPolicy::ALL, move |policy| {
            spawn_ember(s, origin, policy)
        })
        .into_iter()
        .chain([
            trial(systems::RAYON, move || spawn_rayon(s, origin)),
            trial(systems::TOKIO, move || spawn_tokio(s, origin)),
        ])
        .collect(),
    }
}

fn spawn_ops(s: Sizes) -> u64 {
    (s.spawn_tasks * s.spawn_rounds) as u64
}

/// `s.spawn_rounds` timed runs of `round`, which spawns `s.spawn_tasks` tasks that each
/// count themselves once on the counter it is given, and returns once they all ran; each
/// round's count is checked after its timing.
fn counted_rounds(s: Sizes, system: &str, mut round: impl FnMut(&Arc<AtomicUsize>)) -> Metrics {
    let mut elapsed = Duration::ZERO;
    for _ in 0..s.spawn_rounds {
        let counter = Arc::new(AtomicUsize::new(0));
        let start = Instant::now();
        round(&counter);
        elapsed += start.elapsed();
        assert_eq!(
            counter.load(Ordering::SeqCst),
            s.spawn_tasks,
            "micro: spawn-many on {system}: not every task ran exactly once"
        );
    }
    rate(spawn_ops(s), elapsed)
}

fn spawn_ember(s: Sizes, origin: Origin, policy: EmberPolicy) -> Metrics {
    let pool = policy.build(s.threads, "micro");
    let metrics = counted_rounds(s, policy.system().name, |counter| {
        match origin {
            Origin::Outside => {
                for _ in 0..s.spawn_tasks {
                    let counter = counter.clone();
                    pool.spawn(move || {
                        counter.fetch_add(1, Ordering::Relaxed);
                    });
                }
            }
            Origin::Inside => {
                let handle = pool.clone();
                let counter = counter.clone();
                pool.spawn(move || {
                    for _ in 0..s.spawn_tasks {
                        let counter = counter.clone();
                        handle.spawn(move || {
                            counter.fetch_add(1, Ordering::Relaxed);
                        });
                    }
                    // Let go of the pool before the run can end, so that the run's own handle
                    // is the last one and dropping it joins the workers from the measuring
                    // thread.
                    drop(handle);
                });
            }
        }
        pool.wait_idle();
    });
    finish_ember(pool, metrics)
}

fn spawn_rayon(s: Sizes, origin: Origin) -> Metrics {
    with_rayon(s.threads, |pool| {
        let mut elapsed = Duration::ZERO;
        for _ in 0..s.spawn_rounds {
            // The latch is the counter: each task counts itself down once.
            let latch = Arc::new(Latch::new(s.spawn_tasks));
            let start = Instant::now();
            match origin {
                Origin::Outside => {
                    for _ in 0..s.spawn_tasks {
                        let latch = latch.clone();
                        pool.spawn(move || latch.count_down(1));
                    }
                }
                Origin::Inside => {
                    let latch = latch.clone();
                    pool.spawn(move || {
                        for _ in 0..s.spawn_tasks {
                            let latch = latch.clone();
                            rayon::spawn(move || latch.count_down(1));
                        }
                    });
                }
            }
            assert!(
                latch.wait_at_most(TIMEOUT),
                "micro: spawn-many on rayon: no result after {TIMEOUT:?}; a task was lost"
            );
            assert_eq!(
                latch.remaining(),
                0,
                "micro: spawn-many on rayon: counted down more times than there are tasks"
            );
            elapsed += start.elapsed();
        }
        rate(spawn_ops(s), elapsed)
    })
}

fn spawn_tokio(s: Sizes, origin: Origin) -> Metrics {
    let rt = tokio_runtime(s.threads, "micro-tokio");
    let metrics = counted_rounds(s, "tokio", |counter| match origin {
        Origin::Outside => {
            let handles: Vec<_> = (0..s.spawn_tasks)
                .map(|_| {
                    let counter = counter.clone();
                    rt.spawn(async move {
                        counter.fetch_add(1, Ordering::Relaxed);
                    })
                })
                .collect();
            rt.block_on(async {
                for handle in handles {
                    handle.await.expect("micro: a tokio spawn-many task failed");
                }
            });
        }
        Origin::Inside => {
            let counter = counter.clone();
            let outer = rt.spawn(async move {
                let handles: Vec<_> = (0..s.spawn_tasks)
                    .map(|_| {
                        let counter = counter.clone();
                        tokio::spawn(async move {
                            counter.fetch_add(1, Ordering::Relaxed);
                        })
                    })
                    .collect();
                for handle in handles {
                    handle.await.expect("micro: a tokio spawn-many task failed");
                }
            });
            rt.block_on(outer)
                .expect("micro: the tokio spawning task failed");
        }
    });
    drop(rt);
    metrics
}
