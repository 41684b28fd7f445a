//! What an experiment hands the harness.
//!
//! An experiment is a list of [`Group`]s. A group is one table: every [`Trial`] in it is a
//! system (ember with some policy, or a peer) run on the same workload with the same
//! parameters. The harness runs the trials of a group interleaved (A B C, B C A, …), `repeat`
//! times each, measures each run from the outside (wall time, CPU time, context switches,
//! migrations) and adds the metrics the run reports itself (wake-ups issued, useful CPU,
//! latency percentiles, …). Ratios in a table are taken against the best peer of the group.

use std::collections::BTreeMap;
use std::path::Path;

/// Parameters of a group or row, as they appear in `report.json` (`"params"`).
pub type Params = BTreeMap<String, serde_json::Value>;

/// Metrics one run reports about itself: snake_case name with unit suffix -> value.
pub type Metrics = BTreeMap<String, f64>;

/// Lab-wide options every experiment sees.
#[derive(Clone, Debug)]
pub struct LabOpts {
    /// `--quick`: the smallest sizes that still exercise every code path (what CI runs).
    pub quick: bool,
    /// `--repeat N`: how many times each trial runs.
    pub repeat: usize,
    /// Cores of this machine (`available_parallelism`).
    pub cores: usize,
}

/// One system on one workload.
pub struct Trial {
    /// The `system` name (`ember`, `ember-biased`, `rayon`, `crossbeam`, …): a
    /// [`crate::systems`] entry's, possibly with a suffix.
    pub system: String,
    /// The registry entry's role.
    pub role: crate::systems::Role,
    /// Row parameters beyond the group's (usually empty).
    pub params: Params,
    /// Runs the workload once. Everything it does between entry and return is measured;
    /// set-up that should not be measured belongs in the closure's captured state.
    pub run: Box<dyn FnMut() -> Metrics>,
}

/// One comparison table.
pub struct Group {
    /// Human title of the table, e.g. `"3 pools, threads = 8 (oversubscribed 4x)"`.
    pub title: String,
    /// Parameters shared by every row (copied into each row's `params` in the report).
    pub params: Params,
    /// The systems compared.
    pub trials: Vec<Trial>,
}

/// An experiment the lab can run.
pub trait Experiment {
    /// Its name on the command line and in `report.json` (`producer-consumer`, `cycle`, …).
    fn name(&self) -> &'static str;
    /// Builds the groups to run, sized by the experiment's own flags and `opts`; an input it
    /// cannot use (a file that does not load, a flag out of range) is an error, one line.
    fn groups(&self, opts: &LabOpts) -> Result<Vec<Group>, String>;
    /// How many times each trial runs: `opts.repeat` unless the experiment's runs have a fixed
    /// length and it lowers the count when the user did not ask for one.
    fn repeat(&self, opts: &LabOpts) -> usize {
        opts.repeat
    }
    /// Runs after the measured runs, unmeasured: writes extra files (timelines, traces) into
    /// the report directory `out` and returns them, to be listed under the experiment in
    /// `report.md`. None by default.
    fn artifacts(&self, _opts: &LabOpts, _out: &Path) -> Vec<Artifact> {
        Vec::new()
    }
    /// Paired comparisons to add, as `(reference system, metric)`: every row gets the
    /// per-round ratio of its `metric` to the reference row's (see `runner::add_paired`).
    /// None by default.
    fn paired(&self) -> &'static [(&'static str, &'static str)] {
        &[]
    }
    /// Paired differences to add, as `(reference system, metric, name)`: every row gets
    /// `name` = its `metric` minus the reference row's in the same round (see
    /// `runner::add_differences`). None by default.
    fn differences(&self) -> &'static [(&'static str, &'static str, &'static str)] {
        &[]
    }
    /// Per-run quotients to add, as `(metric, per, name, scale)`: every run that has both
    /// `metric` and `per` gets `name` = `metric / per × scale` (see `runner::add_quotients`).
    /// A run of fixed length makes more operations the faster it goes, so a count over the
    /// whole run (context switches) compares systems fairly only per operation. None by
    /// default.
    fn quotients(&self) -> &'static [(&'static str, &'static str, &'static str, f64)] {
        &[]
    }
    /// The 3–5 metrics the experiment is about: the columns of its compact table and the
    /// panels of its chart.
    fn headline(&self) -> &'static [&'static str];
    /// Metrics by which each table's rows are ordered best first, in order of preference:
    /// a table is sorted by the first of them that every one of its rows has. None (the
    /// order the trials were given in) by default.
    fn rank_by(&self) -> &'static [&'static str] {
        &[]
    }
}

/// A file an experiment wrote beside the report; `report.md` embeds it if it is an image
/// (`.svg`, `.png`) and links it otherwise.
#[derive(Clone, Debug)]
pub struct Artifact {
    /// What it shows, one line.
    pub caption: String,
    /// Its file name, relative to the report directory.
    pub file: String,
}
