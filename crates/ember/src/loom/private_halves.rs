//! loom models of private steals (`wake/README.md`, "Private steals"): the stack of private
//! `join` halves (`private_halves.rs`, the very code the pool runs), its owner behind light
//! barriers, and a worker about to sleep stealing behind a heavy one. The barrier pair is the
//! loom model of `sync::asymmetric`, no stronger than the kernel's: the owner fences only
//! where it reaches a light barrier while a heavy one waits for it.
//!
//! Each model's comment names the step it guards; the `mutant_*` models remove that step and
//! fail. They are `#[ignore]`d; run one with
//! `RUSTFLAGS="--cfg loom" cargo test -p ember --release --lib mutant_NAME -- --ignored`.

use loom::sync::atomic::{AtomicUsize, Ordering};
use loom::sync::Arc;
use loom::thread;

use crossbeam_deque::Steal;

use super::support::model_bounded;
use crate::pool::jobs::job::{JobRef, Runner};
use crate::pool::workers::private_halves::PrivateHalves;
use crate::sync::asymmetric::Barrier;

/// Never run: the models only move refs around.
unsafe fn never_run(_: *const (), _: Runner<'_>) {
    unreachable!("a model's job is never run");
}

/// A ref to job `n` (1-based), told apart by its data word.
fn job(n: usize) -> JobRef {
    // SAFETY: the two words of a `JobRef` as `into_raw` gives them (a data pointer and a
    // function pointer of the right type); the ref is compared, never executed.
    unsafe { JobRef::from_raw(n as *mut (), never_run as *mut ()) }
}

fn number(job: JobRef) -> usize {
    job.into_raw().0 as usize
}

/// The stack, the pool's barrier pair, and how many times each job was taken.
struct World {
    halves: PrivateHalves,
    barrier: Barrier,
    taken: [AtomicUsize; 3],
    /// `Registry::wanting_work`.
    wanting: AtomicUsize,
}

impl World {
    fn new() -> Arc<World> {
        Arc::new(World {
            halves: PrivateHalves::new(),
            barrier: Barrier::default(),
            taken: Default::default(),
            wanting: AtomicUsize::new(0),
        })
    }

    fn take(&self, job: JobRef) {
        self.taken[number(job)].fetch_add(1, Ordering::Relaxed);
    }

    /// Asserts that jobs `1..=jobs` were each taken (popped, offered or stolen) exactly once.
    fn assert_taken_once(&self, jobs: usize) {
        for n in 1..=jobs {
            assert_eq!(
                self.taken[n].load(Ordering::Relaxed),
                1,
                "half {n} taken once"
            );
        }
    }

    /// A worker about to sleep (`WorkerThread::idle`): reads `top`, issues the heavy barrier
    /// (unless `heavy` is off), and steals.
    fn steal(&self, heavy: bool) {
        let top = self.halves.top();
        if heavy {
            self.barrier.heavy();
        }
        if let Steal::Success(job) = self.halves.steal(top) {
            self.take(job);
        }
    }

    /// A worker on its way to sleep until it takes a half (and then blocks in it) or finds
    /// none: `WorkerThread::idle` looked at through `steal_private`. With `retry` off, a lost
    /// race counts as finding none.
    fn steal_one_or_sleep(&self, retry: bool) {
        loop {
            let top = self.halves.top();
            self.barrier.heavy();
            match self.halves.steal(top) {
                Steal::Success(job) => return self.take(job),
                Steal::Retry if retry => {}
                Steal::Retry | Steal::Empty => return,
            }
        }
    }
}

/// The owner pushes two halves and pops both back, as two nested `join`s do; a thief makes
/// two steals meanwhile. Every half is taken exactly once.
///
/// Guards the thief's heavy barrier between its reads of `top` and `bottom`: without it
/// (`mutant_private_steal_without_heavy_barrier`), the thief can read an old `bottom` after
/// its first steal moved `top` to the owner's newest half, while the owner's read of `top`
/// after lowering `bottom` is still the old one, and both take that half.
fn taken_once(heavy: bool) {
    model_bounded(3, move || {
        let world = World::new();
        world.barrier.model().participate(0);
        let thief = {
            let world = world.clone();
            thread::spawn(move || {
                world.steal(heavy);
                world.steal(heavy);
            })
        };
        let (first, second) = (job(1), job(2));
        assert!(world.halves.push(first));
        assert!(world.halves.push(second));
        for half in [second, first] {
            if world.halves.pop_if_newest(half, &world.barrier) {
                world.take(half);
            }
        }
        // Back to user code, which the kernel's barrier does not wait for.
        world.barrier.model().quiesce();
        thief.join().unwrap();
        world.assert_taken_once(2);
    });
}

#[test]
fn loom_private_half_is_taken_once() {
    taken_once(true);
}

#[test]
#[ignore = "fails by design: the model without the step it guards"]
fn mutant_private_steal_without_heavy_barrier() {
    taken_once(false);
}

/// The owner keeps a `join`'s half private, and its first half then blocks on it outside
/// ember: it never looks at its stack again. Another worker runs out of work (counts itself in
/// `wanting`) and, about to sleep, looks for a private half. Either the owner saw it wanting
/// and offered the half (drained it to its deque, where the wake-up protocol of pushes takes
/// over), or the sleeper steals it: the half is taken exactly once.
///
/// Guards two steps. The owner's look at `wanting` comes *after* its push, behind a light
/// barrier (`LazyJoins::keep`): looking first, it can see nobody wanting while the sleeper's
/// look misses the half (`mutant_private_push_after_its_look`). And the sleeper's heavy barrier: without it the
/// two reads can miss each other's writes (`mutant_private_look_without_heavy_barrier`).
fn blocked_owner(look_after_push: bool, heavy: bool) {
    model_bounded(3, move || {
        let world = World::new();
        world.barrier.model().participate(0);
        let sleeper = {
            let world = world.clone();
            thread::spawn(move || {
                world.wanting.fetch_add(1, Ordering::Relaxed);
                world.steal(heavy);
            })
        };
        let half = job(1);
        // The model's heavy barrier lands only at light barriers, the kernel's anywhere: the
        // mutant gets one where the kernel's may land, between its look and its push.
        let wanted = if look_after_push {
            assert!(world.halves.push(half));
            world.barrier.light();
            world.wanting.load(Ordering::Relaxed) != 0
        } else {
            let wanted = world.wanting.load(Ordering::Relaxed) != 0;
            world.barrier.light();
            assert!(world.halves.push(half));
            wanted
        };
        if wanted {
            world
                .halves
                .drain_oldest_first(|offered| world.take(offered));
        }
        // The first half blocks on the second: switched out.
        world.barrier.model().quiesce();
        sleeper.join().unwrap();
        // The blocked owner's half is offered or stolen, once.
        world.assert_taken_once(1);
    });
}

#[test]
fn loom_blocked_owners_private_half_reaches_a_sleeper() {
    blocked_owner(true, true);
}

#[test]
#[ignore = "fails by design: the model without the step it guards"]
fn mutant_private_push_after_its_look() {
    blocked_owner(false, true);
}

#[test]
#[ignore = "fails by design: the model without the step it guards"]
fn mutant_private_look_without_heavy_barrier() {
    blocked_owner(true, false);
}

/// The owner keeps two nested halves private (nobody wanted work when it made them) and
/// blocks: its inner first half waits for the inner second half. Two workers freed at once
/// then each steal on their way to sleep, and each blocks in the half it takes. Both halves
/// must be taken, once each.
///
/// Guards the thief's second look after losing a race (`WorkerThread::steal_private`): both
/// thieves can read the same `top`; the loser, treating its failed compare-and-swap as "no
/// half", would sleep while the inner half stays private
/// (`mutant_private_steal_lost_race_sleeps`). The owner is switched out before the thieves
/// start, so their heavy barriers need nothing from it: the race is the thieves' alone (the
/// owner's side is the other two models').
fn two_thieves(retry: bool) {
    model_bounded(3, move || {
        let world = World::new();
        world.barrier.model().participate(0);
        for n in [1, 2] {
            assert!(world.halves.push(job(n)));
            world.barrier.light();
        }
        world.barrier.model().quiesce();
        let thieves: Vec<_> = (0..2)
            .map(|_| {
                let world = world.clone();
                thread::spawn(move || world.steal_one_or_sleep(retry))
            })
            .collect();
        for thief in thieves {
            thief.join().unwrap();
        }
        world.assert_taken_once(2);
    });
}

#[test]
fn loom_private_steal_lost_race_looks_again() {
    two_thieves(true);
}

#[test]
#[ignore = "fails by design: the model without the step it guards"]
fn mutant_private_steal_lost_race_sleeps() {
    two_thieves(false);
}
