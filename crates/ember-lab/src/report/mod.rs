//! What the lab writes: summaries of the measured runs and their three renderings.
//!
//! * [`json`]: `report.json`, the one shape of DESIGN §4 that scripts read.
//! * [`markdown`]: the comparison tables, printed and written to `report.md`.
//! * [`chart`]: one SVG per experiment.
//! * [`timeline`]: per-thread timelines of a traced pool, for experiments that show them.

pub mod chart;
pub mod json;
pub mod markdown;
pub mod timeline;

use crate::experiment::{Artifact, Metrics, Params};
use crate::metrics::stats::summarize;
use crate::runner::ExperimentRuns;
use std::path::PathBuf;

/// One row: a system's median, min and max over its runs.
#[derive(Clone, Debug)]
pub struct RowSummary {
    pub system: String,
    pub params: Params,
    pub median: Metrics,
    pub min: Metrics,
    pub max: Metrics,
    pub repeats: usize,
}

/// One table.
#[derive(Clone, Debug)]
pub struct GroupSummary {
    pub title: String,
    pub rows: Vec<RowSummary>,
}

/// One experiment.
#[derive(Clone, Debug)]
pub struct ExperimentSummary {
    pub name: String,
    pub groups: Vec<GroupSummary>,
    /// Extra files the experiment wrote beside the report (`Experiment::artifacts`).
    pub artifacts: Vec<Artifact>,
}

impl ExperimentSummary {
    pub fn from_runs(runs: &ExperimentRuns) -> ExperimentSummary {
        ExperimentSummary {
            name: runs.name.clone(),
            groups: runs
                .groups
                .iter()
                .map(|g| GroupSummary {
                    title: g.title.clone(),
                    rows: g
                        .rows
                        .iter()
                        .map(|r| {
                            let (median, min, max) = summarize(&r.runs);
                            RowSummary {
                                system: r.system.clone(),
                                params: r.params.clone(),
                                median,
                                min,
                                max,
                                repeats: r.runs.len(),
                            }
                        })
                        .collect(),
                })
                .collect(),
            artifacts: Vec::new(),
        }
    }
}

/// A peer is any system that is not ember; ratios are taken against the best of them.
pub fn is_peer(system: &str) -> bool {
    !system.starts_with("ember")
}

/// Whether a larger value of `metric` is better (throughputs, shares); otherwise smaller is.
pub fn higher_is_better(metric: &str) -> bool {
    metric.ends_with("_per_s") || metric.ends_with("_share")
}

/// Where reports go by default: `<target dir>/ember-lab`, the target dir being
/// `CARGO_TARGET_DIR` when set (now or at build time), else the workspace's `target/`.
pub fn default_out_dir() -> PathBuf {
    let workspace = PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."));
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .or_else(|| option_env!("CARGO_TARGET_DIR").map(PathBuf::from))
        .map(|t| {
            if t.is_relative() {
                workspace.join(t)
            } else {
                t
            }
        })
        .unwrap_or_else(|| workspace.join("target"));
    target.join("ember-lab")
}
