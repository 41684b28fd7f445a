//! How each system scales with workers: for the tables an experiment ran at several worker
//! counts (`micro`'s fork-join, tree-sum and par-iter tables), each system's speedup over its
//! own time with the fewest workers measured (one, unless `--workers` left it out), as a
//! Markdown table and an SVG chart with one line per system. Floor rows (a serial walk) are
//! left out: they use one thread whatever the table's width.

use super::ExperimentSummary;
use crate::experiment::Params;
use plotters::prelude::*;
use std::collections::BTreeMap;
use std::fmt::Write;
use std::path::Path;

/// The parameters that say how wide a table is, left out of a benchmark's identity.
const WIDTH_PARAMS: [&str; 3] = ["workers", "threads", "full_width"];

/// One benchmark measured at several worker counts.
#[derive(Debug, PartialEq)]
pub struct Curve {
    /// The benchmark's parameters, width left out (`benchmark=tree-sum nodes=1023`).
    pub name: String,
    /// The worker counts measured, ascending.
    pub workers: Vec<usize>,
    /// Per system: its `ns_per_op` median at each count of `workers` (None: not measured).
    pub times: BTreeMap<String, Vec<Option<f64>>>,
}

impl Curve {
    /// `system`'s speedup at each worker count over its time at the fewest workers.
    pub fn speedups(&self, system: &str) -> Vec<Option<f64>> {
        let times = &self.times[system];
        let base = times[0];
        times
            .iter()
            .map(|t| Some(base? / (*t)?).filter(|s| s.is_finite()))
            .collect()
    }
}

/// The benchmark's name: its parameters, the width ones left out.
fn identity(params: &Params) -> String {
    params
        .iter()
        .filter(|(k, _)| !WIDTH_PARAMS.contains(&k.as_str()))
        .map(|(k, v)| match v.as_str() {
            Some(s) => format!("{k}={s}"),
            None => format!("{k}={v}"),
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// The curves of `e`: every benchmark that ran at two worker counts or more.
pub fn curves(e: &ExperimentSummary) -> Vec<Curve> {
    // benchmark -> system -> workers -> ns_per_op
    let mut by_benchmark: BTreeMap<String, BTreeMap<String, BTreeMap<usize, f64>>> =
        BTreeMap::new();
    // A floor row (a serial walk) has no workers to scale with.
    let rows = e.groups.iter().flat_map(|g| &g.rows);
    for row in rows.filter(|r| r.role != crate::systems::Role::Floor) {
        let Some(workers) = row.params.get("workers").and_then(|w| w.as_u64()) else {
            continue;
        };
        let Some(&time) = row.median.get("ns_per_op") else {
            continue;
        };
        by_benchmark
            .entry(identity(&row.params))
            .or_default()
            .entry(row.system.clone())
            .or_default()
            .insert(workers as usize, time);
    }
    by_benchmark
        .into_iter()
        .filter_map(|(name, systems)| {
            let mut workers: Vec<usize> =
                systems.values().flat_map(|t| t.keys().copied()).collect();
            workers.sort_unstable();
            workers.dedup();
            if workers.len() < 2 {
                return None;
            }
            let times = systems
                .into_iter()
                .map(|(system, t)| {
                    let row = workers.iter().map(|w| t.get(w).copied()).collect();
                    (system, row)
                })
                .collect();
            Some(Curve {
                name,
                workers,
                times,
            })
        })
        .collect()
}

/// The scaling tables of `curves`, one per benchmark: a row per system, a column per worker
/// count, each cell the speedup over that system's own time at the fewest workers.
pub fn tables(curves: &[Curve]) -> String {
    let mut s = String::new();
    for c in curves {
        let _ = writeln!(
            s,
            "#### scaling: {} (speedup over the same system's {}-worker time)\n",
            c.name, c.workers[0]
        );
        let header: Vec<String> = c.workers.iter().map(|w| format!("{w} workers")).collect();
        let _ = writeln!(s, "| system | {} |", header.join(" | "));
        let _ = writeln!(s, "|---|{}", "---|".repeat(c.workers.len()));
        for system in c.times.keys() {
            let cells: Vec<String> = c
                .speedups(system)
                .into_iter()
                .map(|x| x.map_or("—".into(), |x| format!("{x:.2}×")))
                .collect();
            let _ = writeln!(s, "| {system} | {} |", cells.join(" | "));
        }
        s.push('\n');
    }
    s
}

/// Writes the chart of `curves` to `path`: one panel per benchmark, speedup against workers,
/// a line per system and the ideal (speedup = workers over the fewest) dashed.
pub fn write_chart(path: &Path, title: &str, curves: &[Curve]) -> Result<(), String> {
    let err = |x: &dyn std::fmt::Display| x.to_string();
    let panels = curves.len().max(1);
    let cols = panels.min(2);
    let rows = panels.div_ceil(cols);
    let root =
        SVGBackend::new(path, (600 * cols as u32, 40 + 340 * rows as u32)).into_drawing_area();
    root.fill(&WHITE).map_err(|x| err(&x))?;
    let root = root
        .titled(title, ("sans-serif", 20))
        .map_err(|x| err(&x))?;
    let mut systems: Vec<&str> = curves
        .iter()
        .flat_map(|c| c.times.keys().map(String::as_str))
        .collect();
    systems.sort_unstable();
    systems.dedup();
    for (panel, c) in root.split_evenly((rows, cols)).iter().zip(curves) {
        let max_w = *c.workers.last().unwrap_or(&1) as f64;
        let base_w = c.workers[0] as f64;
        let top = c
            .times
            .keys()
            .flat_map(|s| c.speedups(s))
            .flatten()
            .fold(max_w / base_w, f64::max)
            * 1.1;
        let mut chart = ChartBuilder::on(panel)
            .caption(&c.name, ("sans-serif", 14))
            .margin(8)
            .x_label_area_size(28)
            .y_label_area_size(40)
            .build_cartesian_2d(base_w..max_w, 0f64..top)
            .map_err(|x| err(&x))?;
        let workers = c.workers.clone();
        chart
            .configure_mesh()
            .x_labels(4 * c.workers.len())
            // Only the worker counts measured get a label.
            .x_label_formatter(&|x| {
                let w = x.round() as usize;
                if (x - x.round()).abs() < 1e-9 && workers.contains(&w) {
                    w.to_string()
                } else {
                    String::new()
                }
            })
            .x_desc("workers")
            .y_desc("speedup")
            .draw()
            .map_err(|x| err(&x))?;
        chart
            // The ideal line is thin and grey rather than dashed: plotters draws dashes with
            // f32 `hypot`, whose symbol needs glibc 2.35, and the packed lab (scripts/wide.sh)
            // must run on 2.34.
            .draw_series(LineSeries::new(
                c.workers.iter().map(|&w| (w as f64, w as f64 / base_w)),
                BLACK.mix(0.35).stroke_width(1),
            ))
            .map_err(|x| err(&x))?;
        for system in c.times.keys() {
            let si = systems.iter().position(|s| s == system).unwrap_or(0);
            let color = Palette99::pick(si).to_rgba();
            let points: Vec<(f64, f64)> = c
                .workers
                .iter()
                .zip(c.speedups(system))
                .filter_map(|(&w, s)| Some((w as f64, s?)))
                .collect();
            chart
                .draw_series(LineSeries::new(points.clone(), color.stroke_width(2)))
                .map_err(|x| err(&x))?
                .label(system.as_str())
                .legend(move |(x, y)| {
                    PathElement::new(vec![(x, y), (x + 12, y)], color.stroke_width(2))
                });
            chart
                .draw_series(
                    points
                        .into_iter()
                        .map(|p| Circle::new(p, 3, color.filled())),
                )
                .map_err(|x| err(&x))?;
        }
        chart
            .configure_series_labels()
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK)
            .position(SeriesLabelPosition::UpperLeft)
            .draw()
            .map_err(|x| err(&x))?;
    }
    root.present().map_err(|x| err(&x))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::{GroupSummary, RowSummary};
    use crate::systems::Role;

    fn row(system: &str, workers: u64, ns: f64) -> RowSummary {
        let params: Params = serde_json::from_value(serde_json::json!({
            "benchmark": "fork-join", "workers": workers, "threads": workers,
            "full_width": workers == 4,
        }))
        .unwrap();
        let median: crate::experiment::Metrics = [("ns_per_op".to_string(), ns)].into();
        RowSummary {
            system: system.into(),
            role: Role::Peer,
            params,
            median: median.clone(),
            min: median.clone(),
            max: median,
            repeats: 1,
            ci95: BTreeMap::new(),
        }
    }

    fn experiment(rows: Vec<RowSummary>) -> ExperimentSummary {
        ExperimentSummary {
            name: "micro".into(),
            groups: vec![GroupSummary {
                title: "t".into(),
                rows,
            }],
            artifacts: Vec::new(),
            seconds: 0.0,
            headline: &[],
        }
    }

    #[test]
    fn speedups_are_over_each_systems_own_narrowest_time() {
        let e = experiment(vec![
            row("ember", 1, 8.0),
            row("ember", 2, 4.0),
            row("ember", 4, 2.5),
            row("rayon", 1, 6.0),
            row("rayon", 4, 3.0),
            RowSummary {
                role: Role::Floor,
                ..row("serial", 1, 7.0)
            },
            RowSummary {
                role: Role::Floor,
                ..row("serial", 4, 7.0)
            },
        ]);
        let curves = curves(&e);
        assert_eq!(curves.len(), 1);
        let c = &curves[0];
        assert_eq!(c.name, "benchmark=fork-join");
        assert_eq!(c.workers, [1, 2, 4]);
        assert_eq!(c.speedups("ember"), [Some(1.0), Some(2.0), Some(3.2)]);
        assert_eq!(c.speedups("rayon"), [Some(1.0), None, Some(2.0)]);
        assert!(
            !c.times.contains_key("serial"),
            "a floor row has no workers to scale with"
        );
        let table = tables(&curves);
        assert!(
            table.contains("| ember | 1.00× | 2.00× | 3.20× |"),
            "{table}"
        );
        assert!(table.contains("| rayon | 1.00× | — | 2.00× |"), "{table}");
    }

    #[test]
    fn one_width_makes_no_curve() {
        let e = experiment(vec![row("ember", 2, 4.0), row("rayon", 2, 3.0)]);
        assert!(curves(&e).is_empty());
    }

    #[test]
    fn writes_a_chart() {
        let e = experiment(vec![row("ember", 1, 8.0), row("ember", 2, 4.0)]);
        let path = std::env::temp_dir().join("ember-lab-scaling-test.svg");
        write_chart(&path, "micro — scaling", &curves(&e)).unwrap();
        let svg = std::fs::read_to_string(&path).unwrap();
        assert!(svg.contains("<svg") && svg.contains("ember"));
    }
}
