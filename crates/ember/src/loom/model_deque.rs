//! A work-stealing deque for the loom models, with the orderings of the one the pool uses
//! (crossbeam-deque's `Worker`/`Stealer`, LIFO flavour), so that a model is no stronger than
//! the real queue: the owner publishes a push with a `Release` fence and a `Relaxed` store of
//! `back`, not with a read-modify-write, and its pop and the thieves' steal carry the `SeqCst`
//! fences crossbeam's do. Fixed capacity, no resizing (the models push a few jobs).
//!
//! Only what the models need: `push`/`pop`/`len` for the owner, `steal`/`is_empty` for
//! others. Jobs are numbers (`usize`). [`ModelPool`] puts deques around the real `Sleep`.

use std::collections::VecDeque;

use loom::sync::atomic::{fence, AtomicIsize, AtomicUsize, Ordering};
use loom::sync::Arc;

use crate::sync::{lock, Condvar, Mutex};
use crate::wake::{Sleep, WakePolicy, WakeState};

const CAP: usize = 8;

pub(crate) struct ModelDeque {
    front: AtomicIsize,
    back: AtomicIsize,
    slots: [AtomicUsize; CAP],
}

impl ModelDeque {
    pub(crate) fn new() -> Self {
        ModelDeque {
            front: AtomicIsize::new(0),
            back: AtomicIsize::new(0),
            slots: std::array::from_fn(|_| AtomicUsize::new(0)),
        }
    }

    fn slot(&self, index: isize) -> &AtomicUsize {
        &self.slots[index.rem_euclid(CAP as isize) as usize]
    }

    /// Owner: pushes `job` (crossbeam `Worker::push`).
    pub(crate) fn push(&self, job: usize) {
        let b = self.back.load(Ordering::Relaxed);
        let f = self.front.load(Ordering::Acquire);
        assert!(b - f < CAP as isize, "model deque full");
        self.slot(b).store(job, Ordering::Relaxed);
        fence(Ordering::Release);
        self.back.store(b + 1, Ordering::Relaxed);
    }

    /// Owner: how many jobs the deque holds, as the owner sees it (`Worker::len`).
    pub(crate) fn len(&self) -> usize {
        let b = self.back.load(Ordering::Relaxed);
        let f = self.front.load(Ordering::SeqCst);
        (b - f).max(0) as usize
    }

    /// Owner: pops the newest job (`Worker::pop`, LIFO).
    pub(crate) fn pop(&self) -> Option<usize> {
        let b = self.back.load(Ordering::Relaxed);
        let f = self.front.load(Ordering::Relaxed);
        if b - f <= 0 {
            return None;
        }
        let b = b - 1;
        self.back.store(b, Ordering::Relaxed);
        fence(Ordering::SeqCst);
        let f = self.front.load(Ordering::Relaxed);
        let len = b - f;
        if len < 0 {
            self.back.store(b + 1, Ordering::Relaxed);
            return None;
        }
        let job = self.slot(b).load(Ordering::Relaxed);
        if len == 0 {
            let won = self
                .front
                .compare_exchange(f, f + 1, Ordering::SeqCst, Ordering::Relaxed)
                .is_ok();
            self.back.store(b + 1, Ordering::Relaxed);
            return won.then_some(job);
        }
        Some(job)
    }

    /// Anybody: takes the oldest job (`Stealer::steal`), retrying a lost race.
    pub(crate) fn steal(&self) -> Option<usize> {
        loop {
            let f = self.front.load(Ordering::Acquire);
            fence(Ordering::SeqCst);
            let b = self.back.load(Ordering::Acquire);
            if b - f <= 0 {
                return None;
            }
            let job = self.slot(f).load(Ordering::Relaxed);
            if self
                .front
                .compare_exchange(f, f + 1, Ordering::SeqCst, Ordering::Relaxed)
                .is_ok()
            {
                return Some(job);
            }
            loom::thread::yield_now();
        }
    }

    /// Anybody: whether the deque looks empty (`Stealer::is_empty`).
    pub(crate) fn is_empty(&self) -> bool {
        let f = self.front.load(Ordering::Acquire);
        fence(Ordering::SeqCst);
        let b = self.back.load(Ordering::Acquire);
        b - f <= 0
    }
}

/// A pool in miniature around the real [`Sleep`]: one [`ModelDeque`] per worker, a global
/// queue, and a record of the jobs that ran, so that a model can block "user code" until a
/// given job has run somewhere else.
///
/// The global queue is a locked `VecDeque`: stronger than crossbeam's `Injector`, which does
/// not matter for pushes on it, each followed by the `SeqCst` fence of
/// `Sleep::notify_injected`. Taking from it moves the whole batch into the taker's deque, as
/// `Injector::steal_batch_and_pop` does: the jobs leave the global queue before they appear in
/// the deque, which is the window `WorkerThread::took_batch` covers.
pub(crate) struct ModelPool {
    pub(crate) sleep: Sleep,
    pub(crate) deques: Vec<ModelDeque>,
    injector: Mutex<VecDeque<usize>>,
    ran: Mutex<Vec<usize>>,
    ran_changed: Condvar,
    /// Whether a batch taken from the global queue is announced like a fenced push
    /// (`WorkerThread::took_batch`); off only in a mutant model.
    announce_batches: bool,
}

impl ModelPool {
    pub(crate) fn new(policy: WakePolicy, workers: usize) -> Arc<Self> {
        Self::with_batch_announcements(policy, workers, true)
    }

    /// A pool of `workers` under `policy` whose wake state `configure` may change (a mutant
    /// switches a step off).
    pub(crate) fn configured(
        policy: WakePolicy,
        workers: usize,
        configure: impl FnOnce(&mut Sleep),
    ) -> Arc<Self> {
        let mut sleep = Sleep::new(policy, workers);
        configure(&mut sleep);
        Self::around(sleep, workers, true)
    }

    /// A pool of `workers` empty deques around `sleep`.
    fn around(sleep: Sleep, workers: usize, announce_batches: bool) -> Arc<Self> {
        Arc::new(ModelPool {
            sleep,
            deques: (0..workers).map(|_| ModelDeque::new()).collect(),
            injector: Mutex::new(VecDeque::new()),
            ran: Mutex::new(Vec::new()),
            ran_changed: Condvar::new(),
            announce_batches,
        })
    }

    /// A pool whose batches from the global queue are announced or not (the mutant).
    pub(crate) fn with_batch_announcements(
        policy: WakePolicy,
        workers: usize,
        announce_batches: bool,
    ) -> Arc<Self> {
        Self::around(Sleep::new(policy, workers), workers, announce_batches)
    }

    /// Worker `me` takes the first job of the global queue and moves the rest into its own
    /// deque (`Injector::steal_batch_and_pop`), then announces them (`took_batch`).
    fn take_injected(&self, me: usize) -> Option<usize> {
        let (first, rest) = {
            let mut injector = lock(&self.injector);
            let first = injector.pop_front()?;
            (first, injector.drain(..).collect::<Vec<_>>())
        };
        for &job in &rest {
            self.deques[me].push(job);
        }
        if self.announce_batches && !self.deques[me].is_empty() {
            self.sleep.notify_local(|| self.deques[me].len());
        }
        Some(first)
    }

    /// A pool of `workers` under Searching that defers spawned jobs' wake-ups, its alarm
    /// watched by a thread of the model's own; `configure` may switch a step off (a mutant).
    pub(crate) fn with_deferred_spawns(
        workers: usize,
        configure: impl FnOnce(&mut Sleep),
    ) -> Arc<Self> {
        let config = crate::config::PoolConfig {
            defer_ns: Some(crate::wake::DEFAULT_DEFER_NS),
            ..crate::config::PoolConfig::for_model(WakePolicy::Searching, workers)
        };
        let mut sleep = Sleep::for_pool(&config, None);
        configure(&mut sleep);
        sleep.debts().mark_watched();
        Self::around(sleep, workers, true)
    }

    /// Worker `me` pushes a job it spawned on its own deque (`WorkerThread::push_spawned`);
    /// returns whether it owes the wake-up.
    pub(crate) fn push_spawned(&self, me: usize, job: usize) -> bool {
        self.deques[me].push(job);
        self.sleep
            .notify_spawned(me, true, || self.deques[me].len())
            == crate::wake::SpawnWake::Owed
    }

    /// Worker `me` pushes `job` on its own deque (`WorkerThread::push`).
    pub(crate) fn push_local(&self, me: usize, job: usize, fenced: bool) {
        self.deques[me].push(job);
        if fenced {
            self.sleep.notify_local(|| self.deques[me].len());
        } else {
            self.sleep.notify_local_unfenced(|| self.deques[me].len());
        }
    }

    /// Worker `me` pushes the second half of a `join` behind a light barrier
    /// (`WorkerThread::push_join_half_light` under Searching), announcing itself as a light
    /// pusher first unless `announce` is off (a mutant). The kernel's barrier may land on the
    /// pusher before the push, between the push and the check (the light barrier inside
    /// `notify_join_half`), or later, once the caller blocks (`block_until_run_switched_out`).
    /// Not between the check's two reads (the sleeper set, then the searcher count): there a
    /// landing is covered by the argument of the README's "Light pushes", hand-off side.
    pub(crate) fn push_join_half(&self, me: usize, job: usize, announce: bool) {
        if announce {
            self.sleep
                .announce_light_pushes(me, &mut WakeState::default());
        }
        self.sleep.barrier.model().light();
        self.deques[me].push(job);
        self.sleep.notify_join_half(|| self.deques[me].len());
    }

    /// User code of a light pusher blocking until `job` has run elsewhere (a channel's
    /// receive): switched out, it has passed a barrier, and a heavy one does not wait for it.
    pub(crate) fn block_until_run_switched_out(&self, job: usize) {
        let barrier = self.sleep.barrier.model();
        barrier.quiesce();
        self.block_until_run(job);
        barrier.resume();
    }

    /// Waits until worker `me` has parked once: past its last look, which found nothing (it
    /// counts a park only then).
    pub(crate) fn wait_until_parked(&self, me: usize) {
        while self.sleep.counters(me).parks.load(Ordering::Relaxed) == 0 {
            loom::thread::yield_now();
        }
    }

    /// Anybody pushes `job` on the global queue (`Registry::inject`).
    pub(crate) fn inject(&self, job: usize) {
        lock(&self.injector).push_back(job);
        self.sleep.notify_injected();
    }

    /// Whether any queue holds a job (`Registry::has_work`).
    pub(crate) fn has_work(&self) -> bool {
        !lock(&self.injector).is_empty() || self.deques.iter().any(|d| !d.is_empty())
    }

    /// Worker `me` looks for a job: its own deque, then (as the policy allows) the global
    /// queue and the other deques (`WorkerThread::find_work`, without the spin).
    pub(crate) fn find(&self, me: usize, state: &mut WakeState) -> Option<usize> {
        if let Some(job) = self.deques[me].pop() {
            self.sleep
                .found_work(state, |_| usize::from(self.has_work()));
            return Some(job);
        }
        self.sleep.start_searching(state);
        let stolen = self.take_injected(me).or_else(|| {
            (0..self.deques.len())
                .filter(|&victim| victim != me)
                .find_map(|victim| self.deques[victim].steal())
        });
        if stolen.is_some() {
            self.sleep
                .found_work(state, |_| usize::from(self.has_work()));
        }
        stolen
    }

    /// Worker `me` found nothing: sleeps unless work or `done` shows up (`WorkerThread::idle`).
    pub(crate) fn idle(&self, me: usize, state: &mut WakeState, done: impl Fn() -> bool) {
        self.sleep.sleep(me, state, |_| self.has_work(), done, None);
    }

    /// Records that `job` ran.
    pub(crate) fn ran(&self, job: usize) {
        lock(&self.ran).push(job);
        self.ran_changed.notify_all();
    }

    /// Whether each of `jobs` ran exactly once.
    pub(crate) fn ran_exactly_once(&self, jobs: &[usize]) -> bool {
        let ran = lock(&self.ran);
        jobs.iter()
            .all(|job| ran.iter().filter(|&&r| r == *job).count() == 1)
    }

    /// Whether `job` has run.
    pub(crate) fn has_run(&self, job: usize) -> bool {
        lock(&self.ran).contains(&job)
    }

    /// User code blocking until `job` has run elsewhere (a job waiting on a sibling).
    pub(crate) fn block_until_run(&self, job: usize) {
        self.block_until_any_run(&[job]);
    }

    /// User code blocking until one of `jobs` has run elsewhere.
    pub(crate) fn block_until_any_run(&self, jobs: &[usize]) {
        let mut ran = lock(&self.ran);
        while !jobs.iter().any(|job| ran.contains(job)) {
            ran = self.ran_changed.wait(ran).unwrap();
        }
    }

    /// Worker `me`'s loop: runs jobs (recording them) until `stop` holds.
    pub(crate) fn work(&self, me: usize, stop: impl Fn() -> bool) -> WakeState {
        self.work_with(me, stop, |job| self.ran(job))
    }

    /// Worker `me`'s loop with `run` for each job it finds, until `stop` holds.
    pub(crate) fn work_with(
        &self,
        me: usize,
        stop: impl Fn() -> bool,
        mut run: impl FnMut(usize),
    ) -> WakeState {
        let mut state = WakeState::default();
        while !stop() {
            match self.find(me, &mut state) {
                Some(job) => run(job),
                None if stop() => break,
                None => self.idle(me, &mut state, &stop),
            }
        }
        state
    }
}
