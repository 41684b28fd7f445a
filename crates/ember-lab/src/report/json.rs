//! `report.json`: `{machine, provenance, claims: [...], experiments: [{name, seconds, rows:
//! [{system, role, params, median, min, max, repeats}]}]}`, the same shape for every
//! experiment. A row with per-round comparisons (`_vs_` ratios, `avoidable_` differences)
//! also has `ci95`: `{metric: [low, high]}`, the 95 % confidence interval of each one's median.
//! Groups are not a level of their own: a row's `params` (the group's merged with the row's)
//! tell them apart. `claims` is the claims table ([`crate::claims::ClaimResult`]).

use super::{ExperimentSummary, RowSummary};
use crate::claims::ClaimResult;
use crate::machine::{Machine, Provenance};
use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Report {
    pub machine: Machine,
    pub provenance: Provenance,
    pub claims: Vec<ClaimResult>,
    pub experiments: Vec<ExperimentReport>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExperimentReport {
    pub name: String,
    /// Wall time the experiment took, measured runs and artifacts included.
    pub seconds: f64,
    pub rows: Vec<Row>,
}

/// A row of `report.json`: the summary row itself, serialised as it is.
pub type Row = RowSummary;

impl Report {
    pub fn new(
        machine: &Machine,
        provenance: &Provenance,
        claims: &[ClaimResult],
        experiments: &[ExperimentSummary],
    ) -> Report {
        Report {
            machine: machine.clone(),
            provenance: provenance.clone(),
            claims: claims.to_vec(),
            experiments: experiments
                .iter()
                .map(|e| ExperimentReport {
                    name: e.name.clone(),
                    seconds: e.seconds,
                    rows: e
                        .groups
                        .iter()
                        .flat_map(|g| g.rows.iter().cloned())
                        .collect(),
                })
                .collect(),
        }
    }

    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).expect("a report always serializes")
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::experiment::{Metrics, Params};
    use crate::report::GroupSummary;
    use crate::systems::Role;

    pub(crate) fn provenance() -> Provenance {
        Provenance {
            commit: "abc".into(),
            rustc: "rustc 1.0".into(),
            peer_versions: [("rayon".to_string(), "1.10.0".to_string())].into(),
            go: None,
            cpu_model: "test cpu".into(),
            load_average: Some("0.1 0.2 0.3".into()),
        }
    }

    pub(crate) fn claims() -> Vec<ClaimResult> {
        vec![ClaimResult {
            id: "c".into(),
            source_title: "t".into(),
            source_url: "u".into(),
            claim: "x".into(),
            published: "p".into(),
            experiment: "fake".into(),
            test: "ember / rayon wall_s: median ≤ 1, CI high ≤ 1.05".into(),
            ratio: Some(crate::claims::Ratio {
                subject: "ember".into(),
                baseline: "rayon".into(),
                metric: "wall_s".into(),
                subject_median: 0.5,
                baseline_median: 0.6,
                median: 0.83,
                ci95: Some([0.8, 0.9]),
                rounds: 9,
            }),
            ember_vs_best_peer: None,
            verdict: "reproduced".into(),
            reason: "ratio 0.83".into(),
        }]
    }

    pub(crate) fn report() -> Report {
        let (machine, exps) = fake();
        Report::new(&machine, &provenance(), &claims(), &exps)
    }

    pub(crate) fn fake() -> (Machine, Vec<ExperimentSummary>) {
        let metrics = |w: f64, c: f64| {
            let mut m = Metrics::new();
            m.insert("wall_s".into(), w);
            m.insert("cpu_s".into(), 2.0 * w);
            m.insert("ctx_switches".into(), c);
            m
        };
        let row = |system: &str, pools: u64, w: f64| {
            let mut params = Params::new();
            params.insert("pools".into(), pools.into());
            params.insert("threads".into(), 2.into());
            RowSummary {
                system: system.into(),
                role: if system == "ember" {
                    Role::Ember
                } else {
                    Role::Peer
                },
                params,
                median: metrics(w, 100.0),
                min: metrics(w * 0.9, 90.0),
                max: metrics(w * 1.1, 120.0),
                repeats: 5,
                ci95: Default::default(),
            }
        };
        let group = |pools: u64| GroupSummary {
            title: format!("pools = {pools}"),
            rows: vec![
                row("ember", pools, 0.5),
                row("rayon", pools, 0.6),
                row("crossbeam", pools, 0.7),
            ],
        };
        (
            Machine {
                cores: 2,
                kernel: "6.0.0-test".into(),
                perf_counters: false,
                last_level_cache_bytes: Some(32 << 20),
            },
            vec![ExperimentSummary {
                name: "fake".into(),
                groups: vec![group(1), group(3)],
                artifacts: Vec::new(),
                seconds: 1.5,
                headline: &["wall_s"],
            }],
        )
    }

    #[test]
    fn round_trips() {
        let report = report();
        let back: Report = serde_json::from_str(&report.to_json()).unwrap();
        assert_eq!(back, report);
        assert_eq!(back.experiments[0].rows.len(), 6);
    }

    /// Exactly the documented keys at every level, nothing more.
    #[test]
    fn has_the_documented_shape() {
        use serde_json::Value;
        let v: Value = serde_json::from_str(&report().to_json()).unwrap();
        let keys = |v: &Value| -> Vec<String> {
            let mut k: Vec<String> = v.as_object().unwrap().keys().cloned().collect();
            k.sort();
            k
        };
        assert_eq!(keys(&v), ["claims", "experiments", "machine", "provenance"]);
        assert_eq!(
            keys(&v["provenance"]),
            [
                "commit",
                "cpu_model",
                "go",
                "load_average",
                "peer_versions",
                "rustc"
            ]
        );
        assert_eq!(v["provenance"]["peer_versions"]["rayon"], "1.10.0");
        let claim = &v["claims"][0];
        assert_eq!(
            keys(claim),
            [
                "claim",
                "ember_vs_best_peer",
                "experiment",
                "id",
                "published",
                "ratio",
                "reason",
                "source_title",
                "source_url",
                "test",
                "verdict"
            ]
        );
        assert_eq!(
            keys(&claim["ratio"]),
            [
                "baseline",
                "baseline_median",
                "ci95",
                "median",
                "metric",
                "rounds",
                "subject",
                "subject_median"
            ]
        );
        assert_eq!(claim["ratio"]["ci95"], serde_json::json!([0.8, 0.9]));
        assert!(claim["ember_vs_best_peer"].is_null());
        assert_eq!(
            keys(&v["machine"]),
            ["cores", "kernel", "last_level_cache_bytes", "perf_counters"]
        );
        assert!(v["machine"]["cores"].is_u64());
        assert!(v["machine"]["kernel"].is_string());
        assert!(v["machine"]["perf_counters"].is_boolean());
        assert!(v["machine"]["last_level_cache_bytes"].is_u64());
        let e = &v["experiments"][0];
        assert_eq!(keys(e), ["name", "rows", "seconds"]);
        assert_eq!(e["name"], "fake");
        let row = &e["rows"][0];
        assert_eq!(
            keys(row),
            ["max", "median", "min", "params", "repeats", "role", "system"]
        );
        assert_eq!(row["system"], "ember");
        assert_eq!(row["role"], "ember");
        assert_eq!(e["rows"][1]["role"], "peer");
        assert_eq!(row["params"]["pools"], 1);
        assert_eq!(row["repeats"], 5);
        for part in ["median", "min", "max"] {
            assert_eq!(keys(&row[part]), ["cpu_s", "ctx_switches", "wall_s"]);
            assert!(row[part]["wall_s"].is_f64());
        }
    }

    #[test]
    fn paired_rows_carry_their_intervals_and_read_back() {
        let (machine, mut exps) = fake();
        let row = &mut exps[0].groups[0].rows[0];
        row.median.insert("run_vs_inline".into(), 0.99);
        row.ci95.insert("run_vs_inline".into(), [0.97, 1.01]);
        let report = Report::new(&machine, &provenance(), &[], &exps);
        let json = report.to_json();
        let v: serde_json::Value = serde_json::from_str(&json).unwrap();
        assert_eq!(
            v["experiments"][0]["rows"][0]["ci95"]["run_vs_inline"],
            serde_json::json!([0.97, 1.01])
        );
        assert!(v["experiments"][0]["rows"][1].get("ci95").is_none());
        let back: Report = serde_json::from_str(&json).unwrap();
        assert_eq!(back, report);
    }
}
