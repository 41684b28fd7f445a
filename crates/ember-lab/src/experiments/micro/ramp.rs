//! Ramp: how long a burst of work takes to reach every worker of a pool whose workers all
//! sleep. A pool of `n` = `cores` workers is left idle for `IDLE` (long enough for every
//! worker to spin out and park), then one of its workers opens a scope and spawns `n` jobs
//! that each spin for `JOB` (2 ms, so a job keeps its worker busy and a second job cannot
//! run on the same worker before the burst has spread). Each job notes the instant it
//! starts and its thread.
//!
//! A burst's ramp is the time from just before its first spawn to the start of its last job:
//! with every worker reached, the time until each runs one. A burst that leaves a worker out
//! runs two jobs on another, and its ramp then includes a whole job (2 ms): it was not spread
//! any sooner. A pool that wakes one sleeper at a time, each
//! woken worker waking the next, ramps in `n` wake-up latencies; one that wakes them all at
//! once, in about one. `ramp_us` is the median over a run's bursts, `ramp_max_us` their
//! longest, `workers_reached` the fewest distinct workers a burst ran on (`n` unless some
//! worker ran two jobs because another was never woken in time); `ns_per_op` is the median
//! ramp (an op is one burst). Rows: ember's default and `ember-eager` (a wake-up per push),
//! rayon (`install` then `rayon::scope`), tokio (a task spawning `n` tasks).

use super::*;
use std::sync::Mutex;
use std::thread::ThreadId;

/// How long each job of a burst spins.
const JOB: Duration = Duration::from_millis(2);

/// Where each job of a burst started: the instant and the thread.
type Starts = Mutex<Vec<(Instant, ThreadId)>>;

/// A job's body: notes its start, then keeps its worker busy for [`JOB`].
fn job(starts: &Starts) {
    let at = Instant::now();
    starts
        .lock()
        .expect("micro: ramp: a job panicked")
        .push((at, std::thread::current().id()));
    while at.elapsed() < JOB {
        std::hint::spin_loop();
    }
}

/// The ramp of one burst whose first spawn came at `t0` (module doc): until its last job
/// started. A burst that reached every worker has then one job running on each; one that
/// left a worker out ran two jobs on another, and its ramp includes the first job's whole
/// run, as it should: the burst was not spread until then. Also how many distinct workers
/// it reached.
fn ramp_of(t0: Instant, starts: Vec<(Instant, ThreadId)>) -> (Duration, usize) {
    let mut seen = Vec::new();
    let mut last = t0;
    for (at, thread) in starts {
        if !seen.contains(&thread) {
            seen.push(thread);
        }
        last = last.max(at);
    }
    (last.saturating_duration_since(t0), seen.len())
}

/// Runs one warm-up burst and then `s.ramp_bursts` measured ones through `burst`, each after
/// `s.ramp_idle` of idleness; `burst` spawns the jobs from a worker and returns the instant
/// just before its first spawn.
fn measure(s: Sizes, system: &str, burst: impl Fn(&Starts) -> Instant) -> Metrics {
    let n = s.threads;
    let mut ramps = Vec::with_capacity(s.ramp_bursts);
    let mut reached = usize::MAX;
    for i in 0..=s.ramp_bursts {
        std::thread::sleep(s.ramp_idle);
        let starts = Starts::new(Vec::with_capacity(n));
        let t0 = burst(&starts);
        let starts = starts.into_inner().expect("micro: ramp: a job panicked");
        assert_eq!(
            starts.len(),
            n,
            "micro: ramp on {system}: {} of {n} jobs ran",
            starts.len()
        );
        if i > 0 {
            let (ramp, workers) = ramp_of(t0, starts);
            ramps.push(ramp);
            reached = reached.min(workers);
        }
    }
    ramps.sort();
    let median = ramps[ramps.len() / 2];
    let micros = |d: Duration| d.as_secs_f64() * 1e6;
    let mut metrics = rate(1, median);
    metrics.insert("ramp_us".into(), micros(median));
    metrics.insert("ramp_max_us".into(), micros(ramps[ramps.len() - 1]));
    metrics.insert("workers_reached".into(), reached as f64);
    metrics
}

fn ramp_ember(s: Sizes, policy: EmberPolicy) -> Metrics {
    let pool = policy.build(s.threads, "micro-ramp");
    let metrics = measure(s, policy.system().name, |starts| {
        pool.install(|| {
            let t0 = Instant::now();
            ember::scope(|scope| {
                for _ in 0..s.threads {
                    scope.spawn(move |_| job(starts));
                }
            });
            t0
        })
    });
    finish_ember(pool, metrics)
}

fn ramp_rayon(s: Sizes) -> Metrics {
    with_rayon(s.threads, |pool| {
        measure(s, "rayon", |starts| {
            pool.install(|| {
                let t0 = Instant::now();
                rayon::scope(|scope| {
                    for _ in 0..s.threads {
                        scope.spawn(move |_| job(starts));
                    }
                });
                t0
            })
        })
    })
}

fn ramp_tokio(s: Sizes) -> Metrics {
    let rt = tokio_runtime(s.threads, "micro-ramp-tokio");
    let metrics = measure(s, "tokio", |starts| {
        // Tasks must own what they touch: the jobs note their starts in a shared vector,
        // copied out once every task has ended.
        let shared = Arc::new(Starts::new(Vec::with_capacity(s.threads)));
        let inner = shared.clone();
        let t0 = rt.block_on(async move {
            tokio::spawn(async move {
                let t0 = Instant::now();
                let tasks: Vec<_> = (0..s.threads)
                    .map(|_| {
                        let starts = inner.clone();
                        tokio::spawn(async move { job(&starts) })
                    })
                    .collect();
                for task in tasks {
                    task.await.expect("micro: ramp: a tokio job panicked");
                }
                t0
            })
            .await
            .expect("micro: ramp: the tokio burst panicked")
        });
        let noted = std::mem::take(&mut *shared.lock().expect("micro: ramp: a job panicked"));
        starts
            .lock()
            .expect("micro: ramp: a job panicked")
            .extend(noted);
        t0
    });
    drop(rt);
    metrics
}

/// The ramp table: `s.threads` workers, one row per system.
pub(super) fn ramp_group(s: Sizes) -> Group {
    Group {
        title: format!(
            "ramp: a burst of {n} jobs of {} ms from one worker of {n}, all asleep first \
             (time until every worker runs one)",
            JOB.as_millis(),
            n = s.threads
        ),
        params: params([
            (
                crate::tables::key::BENCHMARK,
                crate::tables::benchmark::RAMP.into(),
            ),
            ("threads", s.threads.into()),
            ("bursts", s.ramp_bursts.into()),
        ]),
        trials: EmberPolicy::trials(&[EmberPolicy::Default, EmberPolicy::Eager], move |p| {
            ramp_ember(s, p)
        })
        .into_iter()
        .chain([
            trial(systems::RAYON, move || ramp_rayon(s)),
            trial(systems::TOKIO, move || ramp_tokio(s)),
        ])
        .collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_ramp_ends_at_the_last_start() {
        let t0 = Instant::now();
        let a = std::thread::current().id();
        let b = std::thread::spawn(|| std::thread::current().id())
            .join()
            .unwrap();
        let at = |us| t0 + Duration::from_micros(us);
        // a's second job at 50 µs adds no worker, but the burst was not spread before it.
        let (ramp, workers) = ramp_of(t0, vec![(at(50), a), (at(10), a), (at(30), b)]);
        assert_eq!((ramp, workers), (Duration::from_micros(50), 2));
    }

    #[test]
    fn every_row_reaches_its_workers() {
        let mut s = Sizes::new(&LabOpts {
            quick: true,
            repeat: 1,
            cores: 2,
        });
        s.ramp_bursts = 2;
        for mut t in ramp_group(s).trials {
            let m = (t.run)();
            assert!(m["workers_reached"] >= 1.0, "{}: {m:?}", t.system);
            assert!(m["ramp_us"] <= m["ramp_max_us"], "{}: {m:?}", t.system);
        }
    }
}
