//! What the lab writes: summaries of the measured runs and their three renderings.
//!
//! * [`json`]: `report.json`, the one shape that scripts read.
//! * [`markdown`]: the comparison tables, printed and written to `report.md`.
//! * [`summary`]: the claims table and the compact per-experiment tables shown first.
//! * [`html`]: `report.html`, `report.md` with every chart and timeline inline.
//! * [`chart`]: one SVG per experiment.
//! * [`scaling`]: speedup against workers, for tables run at several worker counts.
//! * [`timeline`]: per-thread timelines of a traced pool, for experiments that show them.

pub mod chart;
pub mod html;
pub mod json;
pub mod markdown;
pub mod scaling;
pub mod summary;
pub mod timeline;

use crate::experiment::{Artifact, Metrics, Params};
use crate::metrics::stats::{median_ci95, summarize};
use crate::runner::{is_paired, ExperimentRuns};
use crate::systems::Role;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::PathBuf;

/// One row: a system's median, min and max over its runs, and for paired ratios a 95 %
/// confidence interval of the median. It is also a row of `report.json`, field for field.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RowSummary {
    pub system: String,
    /// The system's role in the registry: `ember`, `peer` or `floor`.
    pub role: Role,
    pub params: Params,
    pub median: Metrics,
    pub min: Metrics,
    pub max: Metrics,
    pub repeats: usize,
    /// For each paired ratio ([`crate::runner::is_paired`]) with enough runs: the sign-test
    /// 95 % confidence interval of its median, `[low, high]`. Absent from `report.json` when
    /// empty.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub ci95: BTreeMap<String, [f64; 2]>,
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
    /// Wall time the experiment took.
    pub seconds: f64,
    /// The metrics the experiment is about (`Experiment::headline`).
    pub headline: &'static [&'static str],
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
                            let ci95 = median
                                .keys()
                                .filter(|k| is_paired(k))
                                .filter_map(|k| {
                                    let values: Vec<f64> =
                                        r.runs.iter().filter_map(|m| m.get(k).copied()).collect();
                                    let (lo, hi) = median_ci95(&values)?;
                                    Some((k.clone(), [lo, hi]))
                                })
                                .collect();
                            RowSummary {
                                system: r.system.clone(),
                                role: r.role,
                                params: r.params.clone(),
                                median,
                                min,
                                max,
                                repeats: r.runs.len(),
                                ci95,
                            }
                        })
                        .collect(),
                })
                .collect(),
            artifacts: Vec::new(),
            seconds: 0.0,
            headline: &[],
        }
    }
}

impl ExperimentSummary {
    /// Orders each table's rows best first by the first of `metrics` (medians) that every row
    /// of that table has; tables with none of them keep their order.
    pub fn rank_rows(&mut self, metrics: &[&str]) {
        for group in &mut self.groups {
            let Some(metric) = metrics
                .iter()
                .find(|m| group.rows.iter().all(|r| r.median.contains_key(**m)))
            else {
                continue;
            };
            let better_first = |a: &RowSummary, b: &RowSummary| {
                let (x, y) = (a.median[*metric], b.median[*metric]);
                let order = x.partial_cmp(&y).unwrap_or(std::cmp::Ordering::Equal);
                if higher_is_better(metric) {
                    order.reverse()
                } else {
                    order
                }
            };
            group.rows.sort_by(better_first);
        }
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    fn row(system: &str, metric: &str, value: f64) -> RowSummary {
        let metrics: Metrics = [(metric.to_owned(), value)].into_iter().collect();
        RowSummary {
            system: system.into(),
            role: Role::Peer,
            params: Params::new(),
            median: metrics.clone(),
            min: metrics.clone(),
            max: metrics,
            repeats: 1,
            ci95: BTreeMap::new(),
        }
    }

    #[test]
    fn rank_rows_orders_best_first_by_the_first_metric_every_row_has() {
        let mut summary = ExperimentSummary {
            name: "x".into(),
            groups: vec![
                GroupSummary {
                    title: "times".into(),
                    rows: vec![row("b", "frame_ms", 3.0), row("a", "frame_ms", 1.0)],
                },
                GroupSummary {
                    title: "rates".into(),
                    rows: vec![row("slow", "ops_per_s", 1.0), row("fast", "ops_per_s", 9.0)],
                },
                GroupSummary {
                    title: "unranked".into(),
                    rows: vec![row("z", "other", 2.0), row("y", "other", 1.0)],
                },
            ],
            artifacts: Vec::new(),
            seconds: 0.0,
            headline: &[],
        };
        summary.rank_rows(&["frame_ms", "ops_per_s"]);
        let order = |g: usize| -> Vec<String> {
            summary.groups[g]
                .rows
                .iter()
                .map(|r| r.system.clone())
                .collect()
        };
        assert_eq!(order(0), ["a", "b"]);
        assert_eq!(order(1), ["fast", "slow"]);
        assert_eq!(order(2), ["z", "y"]);
    }
}
