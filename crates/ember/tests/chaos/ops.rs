//! The chaos test's operations: what a driver thread or a job body does next, on which pool,
//! and how each call's result is checked against the plan (see `chaos.rs` for the whole).
//!
//! Every operation plans its jobs before it creates them: a slot in the ledger with the
//! outcome it must have, and a `Plan` for the body (its random seed, whether it panics). The
//! plan never lets a job wait for something only a frame below it on the same thread could
//! produce: a task's body does not block (a worker that waits runs other queued jobs, and
//! one of them could be waiting for that very task), events are ended before anything
//! joins, and a blocking call from a worker goes to its own pool unless `cross_pool` is on.

use std::cell::Cell;
use std::panic::{self, AssertUnwindSafe};
use std::sync::atomic::{AtomicU32, AtomicU8, AtomicUsize, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::thread;

use ember::{Pool, TaskError, WakePolicy};
use proptest::prelude::RngExt;
use proptest::test_runner::{RngAlgorithm, TestRng};

use crate::graph::graph_op;
use crate::ledger::{self, fire, Count, Expect, Kind, Ledger, Site, Token, TRANSIENT};
use crate::{Config, SIZES};

/// A job panics with this probability (when `panics` is on).
const PANIC_P: f64 = 0.08;
/// A job body starts another operation with this probability, again after each one.
const NEST_P: f64 = 0.45;

/// What every job can reach: the books, the configuration and the long-lived pools.
pub struct World {
    pub ledger: Arc<Ledger>,
    pub cfg: Config,
    pub pools: Vec<Pool>,
    /// Which long-lived pools have a panic handler.
    pub handler: [bool; 3],
    pub transients: AtomicUsize,
}

/// What a job body does: where its random choices come from, whether its nested operations
/// may block (not in a task), and whether it panics at the end (`Some(armed)`: with a
/// payload whose `Drop` panics too).
#[derive(Clone, Copy)]
pub struct Plan {
    pub seed: u64,
    pub depth: u32,
    pub wait: bool,
    pub panic: Option<bool>,
    pub must_receive: bool,
}

/// Which pool, if any, the current thread is a worker of (read from its name).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Here {
    Outside,
    Pool(usize),
    Transient,
}

fn here() -> Here {
    thread_local!(static HERE: Cell<Option<Here>> = const { Cell::new(None) });
    HERE.with(|cell| {
        if let Some(here) = cell.get() {
            return here;
        }
        let name = thread::current().name().unwrap_or_default().to_owned();
        let here = if let Some(rest) = name.strip_prefix("chaos-p") {
            Here::Pool(rest[..1].parse().expect("a long-lived pool's worker name"))
        } else if name.starts_with("chaos-t") {
            Here::Transient
        } else {
            Here::Outside
        };
        cell.set(Some(here));
        here
    })
}

pub fn seeded(seed: u64) -> TestRng {
    let mut bytes = [0u8; 32];
    bytes[..8].copy_from_slice(&seed.to_le_bytes());
    TestRng::from_seed(RngAlgorithm::ChaCha, &bytes)
}

impl World {
    /// Opens the slot of a job of pool `aux` and plans its body.
    pub fn plan(
        &self,
        rng: &mut TestRng,
        kind: Kind,
        aux: usize,
        depth: u32,
        cancelled: bool,
    ) -> (Token, Plan) {
        let panics = !cancelled && self.cfg.hazards.panics && rng.random_bool(PANIC_P);
        let armed = panics && self.cfg.hazards.payload_drop_panics && rng.random_bool(0.3);
        let expect = match (cancelled, panics) {
            (true, _) => Expect::Cancel,
            (false, true) => Expect::Panic,
            (false, false) => Expect::Run,
        };
        let plan = Plan {
            seed: rng.random(),
            depth,
            wait: true,
            panic: panics.then_some(armed),
            must_receive: false,
        };
        (self.ledger.token(kind, expect, aux), plan)
    }

    /// Whether this thread may block on pool `target` with the hazards on.
    pub fn may_block(&self, target: usize) -> bool {
        match here() {
            Here::Outside => true,
            Here::Pool(p) if p == target => true,
            _ => self.cfg.hazards.cross_pool,
        }
    }

    /// Counts a wait of a worker on another pool.
    pub fn note_wait(&self, target: usize) {
        if !matches!(here(), Here::Outside) && here() != Here::Pool(target) {
            self.ledger.count(Count::CrossPoolWait);
        }
    }

    pub fn expect_ended(&self, ids: &[u32], what: &str) {
        let pending: Vec<u32> = ids
            .iter()
            .copied()
            .filter(|&id| !self.ledger.ended(id))
            .collect();
        if !pending.is_empty() {
            self.ledger
                .violation(format!("{what}: jobs {pending:?} had not ended"));
        }
    }

    /// Checks what a `join`/`scope`/`parallel_for`/chain call gave: a re-raise exactly when
    /// one of `panicking` panicked, with that panic's payload.
    pub fn check_call(&self, what: &str, result: thread::Result<bool>, panicking: &[u32]) {
        match result {
            Ok(_) if !panicking.is_empty() => self.ledger.violation(format!(
                "{what} returned normally although jobs {panicking:?} panicked"
            )),
            Ok(false) => self
                .ledger
                .violation(format!("{what} returned wrong values")),
            Ok(true) => {}
            Err(payload) => {
                let origin = self.ledger.receive(payload);
                if !origin.is_some_and(|origin| panicking.contains(&origin)) {
                    self.ledger.violation(format!(
                        "{what} re-raised the panic of {origin:?}, not one of {panicking:?}"
                    ));
                }
            }
        }
    }
}

/// A job's body: marks the start, runs nested operations, panics if planned; returns its id.
pub fn body(w: &Arc<World>, token: Token, plan: Plan) -> u32 {
    token.start();
    if here() != Here::Outside {
        ledger::watch_thread_exit(&w.ledger);
    }
    if plan.depth < w.cfg.max_depth {
        let mut rng = seeded(plan.seed);
        for _ in 0..2 {
            if !rng.random_bool(NEST_P) {
                break;
            }
            op(w, &mut rng, plan.depth, plan.wait);
        }
    }
    if let Some(armed) = plan.panic {
        fire(&w.ledger, Site::Body, token.id, armed, plan.must_receive);
    }
    token.id
}

/// One random operation on a random long-lived pool, from whatever thread this is; one that
/// blocks this thread only if `wait`.
pub fn op(w: &Arc<World>, rng: &mut TestRng, depth: u32, wait: bool) {
    w.ledger.count(Count::Operation);
    let target = rng.random_range(0..SIZES.len());
    let blocking = wait && w.may_block(target);
    let hz = w.cfg.hazards;
    match rng.random_range(0..24) {
        0..=6 => spawn_op(w, rng, target, depth),
        7..=10 if blocking => join_op(w, rng, target, depth),
        11..=12 if blocking => scope_op(w, rng, target, depth),
        13..=18 => graph_op(w, rng, target, depth, blocking),
        19 if blocking => parallel_for_op(w, rng, target, depth),
        20 if wait && hz.cross_pool && depth <= 1 => chain_op(w, rng),
        21 if wait && hz.pool_drops && depth <= 1 && (here() == Here::Outside || hz.cross_pool) => {
            transient_op(w, rng, depth)
        }
        _ => spawn_op(w, rng, target, depth),
    }
}

fn spawn_op(w: &Arc<World>, rng: &mut TestRng, target: usize, depth: u32) {
    w.ledger.count(Count::Spawn);
    let (token, mut plan) = w.plan(rng, Kind::Spawn, target, depth + 1, false);
    plan.must_receive = w.handler[target];
    if plan.panic.is_some() {
        w.ledger.spawn_panics[target].fetch_add(1, Ordering::Relaxed);
    }
    let world = Arc::clone(w);
    w.pools[target].spawn(move || {
        body(&world, token, plan);
    });
}

fn join_op(w: &Arc<World>, rng: &mut TestRng, target: usize, depth: u32) {
    w.ledger.count(Count::Join);
    w.note_wait(target);
    let (a, plan_a) = w.plan(rng, Kind::JoinSide, target, depth + 1, false);
    let (b, plan_b) = w.plan(rng, Kind::JoinSide, target, depth + 1, false);
    let ids = [a.id, b.id];
    let panicking = panicking(&[(a.id, plan_a), (b.id, plan_b)]);
    let result = panic::catch_unwind(AssertUnwindSafe(|| {
        w.pools[target].join(|| body(w, a, plan_a), || body(w, b, plan_b))
    }));
    w.expect_ended(&ids, "join returned before both sides ended");
    w.check_call("join", result.map(|r| r == (ids[0], ids[1])), &panicking);
}

fn panicking(jobs: &[(u32, Plan)]) -> Vec<u32> {
    jobs.iter()
        .filter(|(_, plan)| plan.panic.is_some())
        .map(|&(id, _)| id)
        .collect()
}

fn scope_op(w: &Arc<World>, rng: &mut TestRng, target: usize, depth: u32) {
    w.ledger.count(Count::Scope);
    w.note_wait(target);
    let mut planned = Vec::new();
    let jobs: Vec<_> = (0..rng.random_range(1..=4))
        .map(|_| {
            let job = w.plan(rng, Kind::ScopeJob, target, depth + 1, false);
            let nested = rng
                .random_bool(0.3)
                .then(|| w.plan(rng, Kind::ScopeJob, target, depth + 1, false));
            planned.extend(nested.iter().chain([&job]).map(|(t, p)| (t.id, *p)));
            (job, nested)
        })
        .collect();
    let (main, main_plan) = w.plan(rng, Kind::ScopeBody, target, depth + 1, false);
    let main_id = main.id;
    planned.push((main_id, main_plan));
    let result = panic::catch_unwind(AssertUnwindSafe(|| {
        w.pools[target].scope(|s| {
            for ((token, plan), nested) in jobs {
                s.spawn(move |s| {
                    if let Some((token, plan)) = nested {
                        s.spawn(move |_| {
                            body(w, token, plan);
                        });
                    }
                    body(w, token, plan);
                });
            }
            body(w, main, main_plan)
        })
    }));
    let ids: Vec<u32> = planned.iter().map(|&(id, _)| id).collect();
    w.expect_ended(&ids, "scope returned before all its jobs ended");
    w.check_call("scope", result.map(|r| r == main_id), &panicking(&planned));
}

/// Spawns `f` as a (never panicking) job of pool `q`.
pub fn job_on(w: &Arc<World>, q: usize, f: impl FnOnce(&Arc<World>) + Send + 'static) {
    let token = w.ledger.token(Kind::Spawn, Expect::Run, q);
    let world = Arc::clone(w);
    w.pools[q].spawn(move || {
        token.start();
        f(&world);
        drop(token);
    });
}

fn parallel_for_op(w: &Arc<World>, rng: &mut TestRng, target: usize, depth: u32) {
    w.ledger.count(Count::ParallelFor);
    w.note_wait(target);
    let (token, seed) = (
        w.ledger.token(Kind::ParFor, Expect::Run, target),
        rng.random::<u64>(),
    );
    token.start();
    let (n, grain) = (rng.random_range(1..=40usize), rng.random_range(1..=8usize));
    let panicking: Vec<usize> = if w.cfg.hazards.panics && rng.random_bool(0.3) {
        (0..rng.random_range(1..=2))
            .map(|_| rng.random_range(0..n))
            .collect()
    } else {
        Vec::new()
    };
    let armed = w.cfg.hazards.payload_drop_panics && rng.random_bool(0.3);
    let nest = if depth + 1 < w.cfg.max_depth {
        0.05
    } else {
        0.0
    };
    let hits: Vec<AtomicU8> = (0..n).map(|_| AtomicU8::new(0)).collect();
    let id = token.id;
    let result = panic::catch_unwind(AssertUnwindSafe(|| {
        w.pools[target].parallel_for(0..n, grain, |i| {
            hits[i].fetch_add(1, Ordering::SeqCst);
            let mut rng = seeded(seed ^ (i as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15));
            if rng.random_bool(nest) {
                op(w, &mut rng, depth + 1, true);
            }
            if panicking.contains(&i) {
                fire(&w.ledger, Site::Body, id, armed, false);
            }
        })
    }));
    let hits: Vec<u8> = hits.into_iter().map(AtomicU8::into_inner).collect();
    // After a panic, the rest of that index's chunk is skipped; nothing else is.
    let skipped_ok = |i: usize| {
        panicking
            .iter()
            .any(|&j| j < i && i - j < grain && hits[j] == 1)
    };
    if hits
        .iter()
        .enumerate()
        .any(|(i, &h)| h > 1 || (h == 0 && !skipped_ok(i)))
    {
        w.ledger.violation(format!(
            "parallel_for(0..{n}, {grain}) with panics at {panicking:?}: runs per index {hits:?}"
        ));
    }
    let origins = if panicking.is_empty() {
        vec![]
    } else {
        vec![id]
    };
    w.check_call("parallel_for", result.map(|()| true), &origins);
}

/// A level of a chain and the call that enters it: 0 join, 1 scope, 2 task, 3 parallel_for.
type Level = (Token, u8);

/// A -> B -> A -> …: each level is entered by a blocking call into the other pool.
fn chain_op(w: &Arc<World>, rng: &mut TestRng) {
    w.ledger.count(Count::Chain);
    let a = rng.random_range(0..SIZES.len());
    let pools = [a, (a + rng.random_range(1..SIZES.len())) % SIZES.len()];
    let len = rng.random_range(2..=w.cfg.max_chain);
    let panic = (w.cfg.hazards.panics && rng.random_bool(0.3))
        .then(|| w.cfg.hazards.payload_drop_panics && rng.random_bool(0.3));
    let mut levels: Vec<Level> = (0..len)
        .map(|i| {
            let expect = if i + 1 == len && panic.is_some() {
                Expect::Panic
            } else {
                Expect::Run
            };
            let how = rng.random_range(0..4u8);
            if how == 2 && panic.is_some() {
                w.ledger.task_panics[pools[i % 2]].fetch_add(1, Ordering::Relaxed);
            }
            (w.ledger.token(Kind::ChainLevel, expect, pools[i % 2]), how)
        })
        .collect();
    let ids: Vec<u32> = levels.iter().map(|(t, _)| t.id).collect();
    let innermost = ids[len - 1];
    levels.reverse();
    let result = panic::catch_unwind(AssertUnwindSafe(|| {
        chain(Arc::clone(w), levels, pools, 0, panic)
    }));
    w.expect_ended(&ids, "a chain returned before its levels ended");
    let panicking = if panic.is_some() {
        vec![innermost]
    } else {
        vec![]
    };
    w.check_call("chain", result.map(|r| r == innermost), &panicking);
}

fn chain(
    w: Arc<World>,
    mut levels: Vec<Level>,
    pools: [usize; 2],
    at: usize,
    panic: Option<bool>,
) -> u32 {
    let (token, how) = levels.pop().expect("a chain has levels");
    let pool = w.pools[pools[at % 2]].clone();
    w.note_wait(pools[at % 2]);
    let level = move || {
        token.start();
        ledger::watch_thread_exit(&w.ledger);
        match (levels.is_empty(), panic) {
            (true, Some(armed)) => fire(&w.ledger, Site::Body, token.id, armed, false),
            (true, None) => token.id,
            (false, _) => chain(Arc::clone(&w), levels, pools, at + 1, panic),
        }
    };
    match how {
        0 => pool.join(level, || 0).0,
        1 => pool.scope(|_| level()),
        2 => match pool.task(level).spawn().join() {
            Ok(id) => id,
            Err(TaskError::Panicked(payload)) => panic::resume_unwind(payload),
            Err(error) => panic!("a chain's task failed: {error:?}"),
        },
        _ => {
            let (level, out) = (Mutex::new(Some(level)), AtomicU32::new(0));
            pool.parallel_for(0..2, 1, |_| {
                let level = level.lock().unwrap().take();
                if let Some(level) = level {
                    out.store(level(), Ordering::SeqCst);
                }
            });
            out.into_inner()
        }
    }
}

/// A pool made for this operation, fed jobs and dropped while they are queued.
fn transient_op(w: &Arc<World>, rng: &mut TestRng, depth: u32) {
    w.ledger.count(Count::TransientPool);
    let policy = [
        WakePolicy::Eager,
        WakePolicy::Searching,
        WakePolicy::Biased {
            batch: rng.random_range(1..=20),
        },
    ];
    let pool = Pool::builder()
        .threads(rng.random_range(1..=3))
        .wake(policy[rng.random_range(0..3)])
        .name(format!(
            "chaos-t{}",
            w.transients.fetch_add(1, Ordering::Relaxed)
        ))
        .panic_handler(handler(&w.ledger, TRANSIENT))
        .build()
        .expect("a transient pool");
    // 0: only this handle, dropped here; 1: jobs hold clones too, and the last one to go may
    // be in a job; 2: the last handle goes to one of the pool's own jobs; 3: to a job of a
    // long-lived pool (which starts the shutdown and goes on).
    let variant = rng.random_range(0..if w.cfg.hazards.cross_pool { 4 } else { 3 });
    let mut ids = Vec::new();
    for _ in 0..rng.random_range(5..=40) {
        let (token, mut plan) = w.plan(rng, Kind::Transient, TRANSIENT, depth + 1, false);
        plan.must_receive = true;
        ids.push(token.id);
        let (world, own) = (Arc::clone(w), (variant == 1).then(|| pool.clone()));
        pool.spawn(move || {
            if let Some(own) = own {
                let (token, mut plan) = world.plan(
                    &mut seeded(plan.seed),
                    Kind::Transient,
                    TRANSIENT,
                    plan.depth,
                    false,
                );
                plan.must_receive = true;
                let inner = Arc::clone(&world);
                own.spawn(move || {
                    body(&inner, token, plan);
                });
            }
            body(&world, token, plan);
        });
    }
    // Dropped on a thread outside every pool, the last handle waits for the queued jobs; on a
    // worker it only starts the shutdown (the jobs still run: the ledger checks at the end).
    const EARLY: &str = "dropping a pool's last handle outside every pool returned before its \
                         queued jobs ran";
    match variant {
        0 => {
            drop(pool);
            if here() == Here::Outside {
                w.expect_ended(&ids, EARLY);
            }
        }
        1 => {
            w.ledger.count(Count::SharedWithJobs);
            drop(pool);
        }
        2 => {
            w.ledger.count(Count::LastHandleInOwnJob);
            // The job waits until this thread's clone is gone, so its handle is the last.
            let (clone, (gone, wait)) = (pool.clone(), mpsc::channel::<()>());
            let token = w.ledger.token(Kind::Transient, Expect::Run, TRANSIENT);
            clone.spawn(move || {
                token.start();
                let _ = wait.recv();
                drop(pool);
                drop(token);
            });
            drop(clone);
            drop(gone);
        }
        _ => {
            w.ledger.count(Count::LastHandleInOtherPool);
            let q = rng.random_range(0..SIZES.len());
            job_on(w, q, move |_| drop(pool));
        }
    }
}

/// A panic handler that takes delivery in the ledger.
pub fn handler(
    ledger: &Arc<Ledger>,
    pool: usize,
) -> impl Fn(Box<dyn std::any::Any + Send>) + Send + Sync + 'static {
    let ledger = Arc::clone(ledger);
    move |payload| {
        if let Some(handled) = ledger.handled.get(pool) {
            handled.fetch_add(1, Ordering::Relaxed);
        }
        ledger.receive(payload);
    }
}
