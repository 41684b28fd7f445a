//! What the crate's loom models share: the model checker's settings and a registry to drive.

use std::sync::Arc;

use crossbeam_deque::Worker;

use crate::pool::{Handlers, Registry};
use crate::trace::Tracer;
use crate::wake::WakePolicy;

/// Explores every interleaving of `f` with at most three preemptions.
pub(crate) fn model(f: impl Fn() + Sync + Send + 'static) {
    model_bounded(3, f);
}

/// Explores every interleaving of `f` with at most `bound` preemptions.
pub(crate) fn model_bounded(bound: usize, f: impl Fn() + Sync + Send + 'static) {
    let mut builder = loom::model::Builder::new();
    builder.preemption_bound = Some(bound);
    builder.check(f);
}

/// A registry of `workers` workers whose deques stay empty: the models drive its sleep state
/// and its per-worker queues, and pass it to the jobs they run.
pub(crate) fn registry(policy: WakePolicy, workers: usize) -> Arc<Registry> {
    let stealers = (0..workers).map(|_| Worker::new_lifo().stealer()).collect();
    Arc::new(Registry::new(
        stealers,
        crate::config::PoolConfig::for_model(policy, workers),
        Handlers::default(),
        Tracer::new(false, "loom".to_owned(), 0),
        crate::pool::workers::alarm_thread::AlarmThread::new("loom", None, None),
    ))
}
