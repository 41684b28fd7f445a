//! The names that pick a table out of an experiment's: experiment names, the parameter keys
//! a claim selects on, and the values experiments give those keys.
//!
//! Experiments build their tables' parameters from these constants, and claims
//! (`claims.rs`) select tables by them. So renaming a table is one edit here, and a claim
//! cannot name a table under a spelling no experiment builds. The values a claim picks that
//! depend on sizes (`workers`, `nodes`) are checked against the plan the lab would run, at the
//! default size and at `--quick` (`claims::tests`).

/// Experiment names, as given on the command line and in `report.json`.
pub mod experiment {
    pub const PRODUCER_CONSUMER: &str = "producer-consumer";
    pub const LIGHT_LOAD: &str = "light-load";
    pub const CYCLE: &str = "cycle";
    pub const CONTAINERS: &str = "containers";
    pub const FLOW: &str = "flow";
    pub const CHAINED_DECODE: &str = "chained-decode";
    pub const MICRO: &str = "micro";
}

/// Parameter keys a claim selects tables by.
pub mod key {
    pub const BENCHMARK: &str = "benchmark";
    pub const WORKERS: &str = "workers";
    pub const FULL_WIDTH: &str = "full_width";
    pub const NODES: &str = "nodes";
    pub const WORKLOAD: &str = "workload";
    pub const SHAPE: &str = "shape";
    pub const BOUND: &str = "bound";
    pub const RESET_EVERY: &str = "reset_every";
    pub const RINGS: &str = "rings";
    pub const THREADS: &str = "threads";
    pub const TOPOLOGY: &str = "topology";
    pub const SUBMISSION: &str = "submission";
    pub const INTERVAL_US: &str = "interval_us";
}

/// `micro`'s tables: the values of [`key::BENCHMARK`], and `--micro-bench` names.
pub mod benchmark {
    pub const SPAWN_OUTSIDE: &str = "spawn-outside";
    pub const SPAWN_INSIDE: &str = "spawn-inside";
    pub const FORK_JOIN: &str = "fork-join";
    pub const PING_PONG: &str = "ping-pong";
    pub const CHAINED_SPAWN: &str = "chained-spawn";
    pub const SUCCESSOR_HOLD: &str = "successor-hold";
    pub const TREE_SUM: &str = "tree-sum";
    pub const PAR_ITER: &str = "par-iter";
    pub const RAMP: &str = "ramp";
    /// Every one, in the order `--help` lists them.
    pub const ALL: &[&str] = &[
        SPAWN_OUTSIDE,
        SPAWN_INSIDE,
        FORK_JOIN,
        PING_PONG,
        CHAINED_SPAWN,
        SUCCESSOR_HOLD,
        TREE_SUM,
        PAR_ITER,
        RAMP,
    ];
}

/// Values of [`key::WORKLOAD`]: `micro`'s par-iter tables, `containers`' and `flow`'s.
pub mod workload {
    pub const SUM_OF_SQUARES: &str = "sum-of-squares";
    pub const SORT: &str = "sort";
    pub const MAP_FILTER_COLLECT: &str = "map-filter-collect";
    pub const FOLD: &str = "fold";
    pub const FIND_FIRST: &str = "find-first";
    pub const FLAT_MAP: &str = "flat-map";
    pub const HASH_MAP_COLLECT: &str = "hash-map-collect";
    pub const POP: &str = "pop";
    pub const RAYCAST: &str = "raycast";
    pub const GENERATION: &str = "generation";
}

/// Values of the other keys that claims select on.
pub mod value {
    /// [`super::key::SHAPE`]: `producer-consumer`'s published shape.
    pub const PUBLISHED: &str = "published";
    /// [`super::key::BOUND`]: `chained-decode`'s CPU-bound tables.
    pub const CPU: &str = "cpu";
    /// [`super::key::RESET_EVERY`]: matches a table's own `chunks` (one chain, no reset).
    pub const CHUNKS: &str = "chunks";
    /// [`super::key::SUBMISSION`]: `flow`'s tasks submitted at once.
    pub const IMMEDIATE: &str = "immediate";
    /// [`super::key::TOPOLOGY`]: `flow`'s wave_sim graph.
    pub const WAVE_SIM: &str = "wave_sim";
    /// [`super::key::FULL_WIDTH`]: the table at the machine's full width.
    pub const TRUE: &str = "true";
}
