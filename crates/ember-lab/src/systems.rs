//! Every system the lab measures, in one registry: its `system` name in the tables and in
//! `report.json`, its [`Role`], and one line saying what it is.
//!
//! Experiments build their rows from these entries ([`crate::experiments::trial`]), so a
//! row's role travels with it: ratios "against the best peer" use the rows whose role is
//! [`Role::Peer`], never a rule on names. To add a peer, add an entry here and a row that
//! runs it in the experiments where it belongs (`README.md` of this crate walks through it).

use serde::{Deserialize, Serialize};

/// What a row is there for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    /// ember itself: a wake policy, a delay-kick, lazy-join or deferral setting, a flow
    /// mode, the biased consumer.
    Ember,
    /// A pool or technique people use today, or a published one re-implemented.
    Peer,
    /// A bound measured for reference (no queue at all, one thread): not a pool anyone runs.
    Floor,
}

/// One entry of the registry.
#[derive(Debug, PartialEq, Eq)]
pub struct System {
    /// The `system` name (a row may add a suffix, e.g. its batch: `crossbeam-batch20`).
    pub name: &'static str,
    pub role: Role,
    /// What it is, one line (shown in `README.md` and `report.html`).
    pub about: &'static str,
}

macro_rules! registry {
    ($($id:ident = $name:literal, $role:ident, $about:literal;)*) => {
        $(pub const $id: &System = &System { name: $name, role: Role::$role, about: $about };)*
        /// Every system, in the order the README lists them.
        pub const ALL: &[&System] = &[$($id),*];
    };
}

registry! {
    EMBER = "ember", Ember, "ember::Pool with its default wake policy";
    EMBER_BIASED = "ember-biased", Ember, "ember::Pool, WakePolicy::Biased { batch: 20 }";
    EMBER_SEARCHING = "ember-searching", Ember, "ember::Pool, WakePolicy::Searching";
    EMBER_EAGER = "ember-eager", Ember, "ember::Pool, WakePolicy::Eager (wakes a sleeper per push)";
    EMBER_NO_DELAY_KICK = "ember-no-delay-kick", Ember, "ember::Pool, default policy, delay_kick(false)";
    EMBER_NO_DEFER = "ember-no-defer", Ember, "ember::Pool, default policy, defer_wakeups(false): a job spawned onto its worker's empty deque wakes a sleeper at once if nobody is searching (the default owes that wake-up until the spawner's next push or look for work, or 100 µs)";
    EMBER_DEFERRED_1MS = "ember-deferred-1ms", Ember, "ember::Pool, default policy, defer_wakeups_for(1 ms): as the default, the alarm 1 ms after the spawn instead of 100 µs";
    EMBER_PINNED = "ember-pinned", Ember, "ember::Pool, default policy, pin_workers(true): worker i pinned to the i-th allowed processor";
    EMBER_SEQ_JOINS = "ember-seq-joins", Ember, "ember::Pool, default policy, sequential_joins(true): a join made while no worker wants work, below three kept halves, runs its closures as two calls (opt-in: the halves must not wait for each other)";
    EMBER_OFFERED = "ember-offered", Ember, "ember::Pool, default policy, lazy_joins(false): every join offers its second half on the deque at once (the default keeps it private while no worker wants work)";
    EMBER_BUDGET = "ember-budget", Ember, "ember::Pool, default policy, awake_budget(true): the pool's wake-ups count against the process's (and the machine's) other pools";
    EMBER_BIASED_CONSUMERS = "ember-biased-consumers", Ember, "ember::biased::spawn_consumers over a crossbeam channel";
    FLOW_INLINE = "inline", Ember, "ember::flow, dependencies inferred on the submitting thread";
    FLOW_LOCKSTEP = "lockstep", Ember, "ember::flow, scheduler thread holding the submission lock while it analyses";
    FLOW_DOUBLE_BUFFERED = "double-buffered", Ember, "ember::flow, scheduler thread swapping two submission buffers";
    CROSSBEAM = "crossbeam", Peer, "threads blocking on one crossbeam-channel";
    CROSSBEAM_BATCH = "crossbeam-batch", Peer, "crossbeam-channel, the producer sending items in batches";
    RAYON = "rayon", Peer, "rayon::ThreadPool (spawn, join, install)";
    RAYON_BATCH = "rayon-batch", Peer, "rayon spawn, the producer spawning one job per batch of items";
    BIASED_WORK_QUEUE = "biased-work-queue", Peer, "the published biased work queue, re-implemented from its description";
    TOKIO = "tokio", Peer, "tokio multi-thread runtime, tokio::spawn";
    TOKIO_MPSC = "tokio-mpsc", Peer, "tokio tasks passing messages over tokio::sync::mpsc";
    STD_THREADS = "std-threads", Peer, "one OS thread per worker, crossbeam channels between them";
    GO = "go", Peer, "Go's runtime (goroutines, channels), a program built from go/ beside this crate";
    CHILI = "chili", Peer, "chili::Scope::join (heartbeat scheduling), closures swapped so that it walks the tree in the same order as every other row";
    CHANNEL_PIPELINE = "channel-pipeline", Peer, "decoder threads on one crossbeam channel";
    MUTEX_VECDEQUE = "mutex-vecdeque", Peer, "Mutex<VecDeque>";
    SPSC = "spsc", Peer, "one rtrb SPSC ring per worker";
    MPMC_QUEUE = "mpmc-queue", Peer, "crossbeam SegQueue (unbounded lock-free MPMC)";
    TREIBER_STACK = "treiber-stack", Peer, "ember-containers' Treiber stack";
    BOUNDED_MPMC = "bounded-mpmc", Peer, "crossbeam ArrayQueue (Vyukov bounded MPMC)";
    CHASE_LEV = "chase-lev", Peer, "one crossbeam-deque per worker, stealing when empty";
    SPMC = "spmc", Peer, "ember-containers' SPMC batch queue";
    FLOOR = "floor", Floor, "the same threads doing the same work with no queue (each consumer its share of the items): what time slicing alone costs";
    SINGLE_THREADED = "single-threaded", Floor, "the work on one thread, no pool";
    SERIAL = "serial", Floor, "the recursion called directly, no join";
    SERIAL_RIGHT_FIRST = "serial-right-first", Floor, "the tree-sum recursion called directly, right subtree first: what the tree's memory layout alone is worth";
}

/// The registry entry named `name`, if any.
pub fn find(name: &str) -> Option<&'static System> {
    ALL.iter().copied().find(|s| s.name == name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_and_roles_fit_the_names() {
        for (i, a) in ALL.iter().enumerate() {
            assert!(ALL[i + 1..].iter().all(|b| b.name != a.name), "{}", a.name);
        }
        assert_eq!(find("rayon").unwrap().role, Role::Peer);
        assert_eq!(find("ember-eager").unwrap().role, Role::Ember);
        assert_eq!(find("floor").unwrap().role, Role::Floor);
        assert!(find("nonesuch").is_none());
    }

    /// The crate's README lists every system, so a reader can look any row up.
    #[test]
    fn the_readme_lists_every_system() {
        let readme = include_str!("../README.md");
        for s in ALL {
            assert!(
                readme.contains(&format!("`{}`", s.name)),
                "README.md does not list `{}`",
                s.name
            );
        }
    }
}
