//! loom models of deferred wake-ups (`deferred.rs`; README, "Deferred wake-ups"), on the
//! model deque (`loom/model_deque.rs`), which publishes as the real one does, and the alarm's
//! model (`sync/alarm.rs`), which fires whenever its thread runs: time does not pass in a
//! model, so the thread that watches the alarm treats every debt it finds as due.
//!
//! Each model's comment names the step it guards; the `mutant_*` models remove that step and
//! fail. Run one with `RUSTFLAGS="--cfg loom" cargo test -p ember --release --lib
//! mutant_NAME -- --ignored`.

use loom::thread;

use super::model_deque::ModelPool;
use super::support::model_bounded;
use crate::wake::stamp::Stamp;
use crate::wake::Sleep;

const JOB: usize = 1;

/// "Now" for the watching thread: every debt is due.
const ALARM_NOW: u64 = u64::MAX / 2;

/// Worker 0, inside a job, spawns `JOB` on its empty deque and then blocks until it has run
/// elsewhere (a channel's receive: the spawning job never reaches a scheduling point).
/// Worker 1 starts idle: it searches, finds nothing and sleeps, concurrently. If the spawn
/// owes the wake-up, only the alarm can make it; a debt that leaves the alarm clear is a
/// deadlock, which loom reports.
///
/// Guards the alarm a debt sets (`Debts::owe`): `mutant_debt_without_alarm` owes the
/// wake-up and leaves the alarm clear, and deadlocks. Guards too the spawn's fence
/// (`Sleep::notify_spawned`), which orders the push before its look at the sleepers and the
/// searchers: `mutant_deferred_spawn_unfenced` lets that look miss worker 1's listing, or see
/// it still searching, while worker 1's last look misses the job; nothing is owed then, so the
/// alarm cannot help, and it deadlocks.
fn spawn_blocked_on_its_successor(configure: fn(&mut Sleep)) {
    model_bounded(3, move || {
        let pool = ModelPool::with_deferred_spawns(2, configure);
        let helper = {
            let pool = pool.clone();
            thread::spawn(move || {
                pool.work(1, || pool.has_run(JOB));
            })
        };
        let watcher = {
            let pool = pool.clone();
            thread::spawn(move || {
                let watch = pool.sleep.watch().expect("an alarm");
                watch.run(|| {
                    pool.sleep.alarm_fired(ALARM_NOW);
                    true
                });
            })
        };
        pool.push_spawned(0, JOB);
        pool.block_until_run(JOB);
        helper.join().unwrap();
        pool.sleep.stop_watching();
        watcher.join().unwrap();
    });
}

#[test]
fn loom_owed_wake_of_a_blocked_spawner_is_made_by_the_alarm() {
    spawn_blocked_on_its_successor(|_| {});
}

#[test]
#[ignore = "fails by design: the model without the step it guards"]
fn mutant_debt_without_alarm() {
    spawn_blocked_on_its_successor(|sleep| sleep.debts_mut().steps.owe_sets_alarm = false);
}

#[test]
#[ignore = "fails by design: the model without the step it guards"]
fn mutant_deferred_spawn_unfenced() {
    spawn_blocked_on_its_successor(|sleep| sleep.debts_mut().steps.spawn_fence = false);
}

/// Worker 1 owed a wake-up at time 1, so the alarm is set for it; then `other` runs on its
/// own thread while worker 0 owes a wake-up at `now`. Afterwards a debt of worker 0 must find
/// the alarm set: whatever `other` did to the alarm, it saw this debt or worker 0 saw it.
///
/// Both models guard `owe`'s fence between the debt and its look at the alarm, the Dekker
/// pair of `rearm`'s fence between clearing the alarm and its look at the debts; their
/// mutants (`Steps::owe_fence` off) end with the debt owed and the alarm clear.
fn debt_against(configure: fn(&mut Sleep), now: u64, other: fn(&ModelPool)) {
    model_bounded(3, move || {
        let pool = ModelPool::with_deferred_spawns(2, configure);
        pool.sleep.debts().owe(1, Stamp::fresh(1), || 1);
        let other = {
            let pool = pool.clone();
            thread::spawn(move || other(&pool))
        };
        pool.sleep.debts().owe(0, Stamp::fresh(now), || now);
        other.join().unwrap();
        let debts = pool.sleep.debts();
        assert!(
            !debts.owed(0) || debts.alarm_is_set(),
            "a wake-up is owed and the alarm is clear"
        );
    });
}

fn unfenced(sleep: &mut Sleep) {
    sleep.debts_mut().steps.owe_fence = false;
}

/// The alarm stays set while a debt is owed: worker 1 settles its debt and goes to sleep,
/// clearing the alarm if no debt needs it (`release_alarm`), while worker 0 owes at time 1
/// and, finding the alarm set in time for its debt, leaves it alone.
/// `mutant_owe_unfenced` lets worker 0 read the alarm as set while worker 1 misses the debt
/// and clears it.
fn debt_against_a_clearing(configure: fn(&mut Sleep)) {
    debt_against(configure, 1, |pool| {
        pool.sleep.void_debt(1);
        pool.sleep.release_alarm();
    });
}

#[test]
fn loom_alarm_stays_set_while_a_wake_is_owed() {
    debt_against_a_clearing(|_| {});
}

#[test]
#[ignore = "fails by design: the model without the step it guards"]
fn mutant_owe_unfenced() {
    debt_against_a_clearing(unfenced);
}

/// A debt that finds the alarm already due leaves it alone: the pass the alarm starts must
/// see it. Worker 0 owes when worker 1's deadline (1 + 100 µs) has passed — its clock reads
/// later than that, earlier than the pass's own "now" — while the alarm's pass runs,
/// paying worker 1's debt. `mutant_due_alarm_owe_unfenced` leaves worker 0's debt owed with
/// the alarm clear.
fn debt_against_a_due_alarm(configure: fn(&mut Sleep)) {
    debt_against(configure, 1_000_000, |pool| {
        pool.sleep.alarm_fired(ALARM_NOW)
    });
}

#[test]
fn loom_debt_finding_the_alarm_due_is_seen_by_its_pass() {
    debt_against_a_due_alarm(|_| {});
}

#[test]
#[ignore = "fails by design: the model without the step it guards"]
fn mutant_due_alarm_owe_unfenced() {
    debt_against_a_due_alarm(unfenced);
}

/// A stale stamp replaced while the alarm's pass pays the debt: worker 0 owes with a reading
/// far older than its clock (a long link since), so setting the alarm it stamps afresh,
/// while the pass pays every debt. Either the pass pays the debt, which then stays paid, or
/// it sees the fresh stamp; a debt is never owed again after the alarm paid it.
///
/// Guards the compare-and-swap of the re-stamp (`Debts::owe`):
/// `mutant_restamp_resurrects_a_paid_debt` stores the fresh stamp over the alarm's 0, and a
/// debt already paid is owed again (to be paid a second time).
fn restamp_against_a_paying_alarm(configure: fn(&mut Sleep)) {
    model_bounded(3, move || {
        let pool = ModelPool::with_deferred_spawns(2, configure);
        let alarm = {
            let pool = pool.clone();
            thread::spawn(move || pool.sleep.alarm_fired(ALARM_NOW))
        };
        let stale = 1;
        let fresh = stale + 1_000_000;
        pool.sleep.debts().owe(
            0,
            Stamp {
                at: stale,
                reused: true,
            },
            || fresh,
        );
        alarm.join().unwrap();
        let paid = pool
            .sleep
            .counters(0)
            .paid
            .load(std::sync::atomic::Ordering::Relaxed);
        let debts = pool.sleep.debts();
        assert!(
            !(paid == 1 && debts.owed(0)),
            "a debt the alarm paid is owed again"
        );
        assert!(
            !debts.owed(0) || debts.alarm_is_set(),
            "a wake-up is owed and the alarm is clear"
        );
    });
}

#[test]
fn loom_restamp_leaves_a_paid_debt_paid() {
    restamp_against_a_paying_alarm(|_| {});
}

#[test]
#[ignore = "fails by design: the model without the step it guards"]
fn mutant_restamp_resurrects_a_paid_debt() {
    restamp_against_a_paying_alarm(|sleep| sleep.debts_mut().steps.restamp_if_owed = false);
}
