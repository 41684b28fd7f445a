//! The loom models of ember's concurrent protocols, one file per protocol.
//!
//! Run them all with
//! `RUSTFLAGS="--cfg loom" CARGO_TARGET_DIR=target/loom cargo test -p ember --release --lib loom`
//! (every model's path starts with `loom::`, so the filter matches them all).
//!
//! Conventions. A model drives the real code (`Sleep`, `Registry`, the deques' publication
//! order through `loom/model_deque.rs`), written against `crate::sync`, which is loom's under
//! `cfg(loom)`; a lost wake-up shows as every thread blocked, which loom reports as a
//! deadlock. Beside a model, a `#[ignore]`d `mutant_*` removes the step the model guards
//! (through a switch of the real code that only loom builds have) and must fail: run
//! `... --lib loom -- --ignored` to see each one fail. `support.rs` holds the checker's
//! settings and a registry for models to drive.
//!
//! | file | protocol guarded (where it lives) | mutants that show a model failing |
//! | --- | --- | --- |
//! | `sleep.rs` | the wake policies' sleep and wake-up, the parker, a waiter's hand-off, fan-out (`wake/`, `park.rs`) | `mutant_waiter_counted_without_hand_off`, `mutant_woken_searcher_wakes_one` |
//! | `local_push.rs` | a push on the own deque and its fenced check; a pusher's backlog; kicked successors; injected batches (`wake/mod.rs`, "Pushing", "Backlog") | `mutant_unfenced_spawn_is_lost`, `mutant_backlog_waits_for_the_first_wakee`, `mutant_kick_without_notify`, `mutant_batch_not_announced` |
//! | `light_push.rs` | a `join` half pushed behind the light barrier, and the heavy-barrier hand-off (`sync/asymmetric.rs`) | `mutant_light_push_unannounced`, `mutant_hand_off_without_heavy_barrier` |
//! | `deferred.rs` | deferred wake-ups: the spawn's fence, the debt, its stamp and the alarm (`wake/deferred.rs`, `wake/stamp.rs`) | `mutant_debt_without_alarm`, `mutant_deferred_spawn_unfenced`, `mutant_owe_unfenced`, `mutant_due_alarm_owe_unfenced`, `mutant_restamp_resurrects_a_paid_debt` |
//! | `lifecycle.rs` | a worker leaving a wait, shutdown and exit (`pool/workers/worker.rs`) | `mutant_wait_ends_still_searching`, `mutant_eager_wait_ends_picked`, `mutant_exit_still_searching`, `mutant_exit_before_held`, `mutant_exit_at_first_empty_look`, `mutant_no_second_round` |
//! | `private_halves.rs` | lazy joins' private halves and the private steal (`pool/workers/private_halves.rs`) | `mutant_private_steal_without_heavy_barrier`, `mutant_private_push_after_its_look`, `mutant_private_look_without_heavy_barrier`, `mutant_private_steal_lost_race_sleeps` |
//! | `wait_list.rs` | waits on another pool, `WaitList`, the idle check of `wait_idle`, private halves offered in order (`pool/workers/wait.rs`, `pool/ops/wait_idle.rs`) | `mutant_cross_pool_wait_parks`, `mutant_idle_check_unfenced`, `mutant_stale_idle_notification`, `mutant_lazy_join_offers_only_the_oldest_half` |
//! | `delay_kick.rs` | a held successor kicked to a worker on its way to sleep (`pool/workers/held.rs`) | none: the kick goes through the push that `local_push.rs` guards |
//! | `fifo.rs` | `spawn_fifo`'s queue and indirections (`pool/workers/fifo.rs`) | none |
//! | `broadcast.rs` | broadcasts racing sleepers and leaving workers (`pool/ops/broadcast.rs`) | none |
//! | `task.rs` | forward permits, the successor list and events (`task/node.rs`, `task/successors.rs`, `task/event.rs`) | none |
//! | `flow_queue.rs` | the flow's submission queues (`flow/queue.rs`) | none |
//! | `biased.rs` | the standalone biased consumers' hand-off and close (`biased/`) | none |
//! | `budget.rs` | the awake-core budget's accounting and its rule for a pool with nobody awake (`budget/mod.rs`) | `mutant_idle_pool_refused` |
//!

mod biased;
mod broadcast;
mod budget;
mod deferred;
mod delay_kick;
mod fifo;
mod flow_queue;
mod lifecycle;
mod light_push;
mod local_push;
pub(crate) mod model_deque;
mod private_halves;
mod sleep;
pub(crate) mod support;
mod task;
mod wait_list;
