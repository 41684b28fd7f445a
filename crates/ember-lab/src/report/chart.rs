//! One SVG per experiment: a panel per key metric, each a grouped bar chart with one cluster
//! per group (G1, G2, … as listed under the chart in `report.md`) and one bar per system, at
//! the median of its runs.

use super::ExperimentSummary;
use crate::machine::MachineInfo;
use plotters::prelude::*;
use std::path::Path;

/// Panels in order of preference; the first [`PANELS`] present are drawn.
const PREFERRED: &[&str] = &[
    "wall_s",
    "cpu_s",
    "overhead_cpu_s",
    "ctx_switches",
    "migrations",
    "latency_p99_us",
    "latency_p50_us",
    "wakeups",
    "ops_per_s",
    "ns_per_op",
];
const PANELS: usize = 6;

fn metrics(e: &ExperimentSummary) -> Vec<String> {
    let present = |k: &str| {
        e.groups
            .iter()
            .any(|g| g.rows.iter().any(|r| r.median.contains_key(k)))
    };
    let mut m: Vec<String> = PREFERRED
        .iter()
        .filter(|k| present(k))
        .map(|k| k.to_string())
        .collect();
    if m.len() < PANELS {
        let mut rest: Vec<String> = e
            .groups
            .iter()
            .flat_map(|g| g.rows.iter().flat_map(|r| r.median.keys().cloned()))
            .filter(|k| !m.contains(k) && k != "user_s" && k != "sys_s")
            .collect();
        rest.sort();
        rest.dedup();
        m.extend(rest);
    }
    m.truncate(PANELS);
    m
}

/// Writes `e`'s chart to `path`.
pub fn write(path: &Path, e: &ExperimentSummary, info: &MachineInfo) -> Result<(), String> {
    let err = |x: &dyn std::fmt::Display| x.to_string();
    let metrics = metrics(e);
    let mut systems: Vec<&str> = Vec::new();
    for r in e.groups.iter().flat_map(|g| &g.rows) {
        if !systems.contains(&r.system.as_str()) {
            systems.push(&r.system);
        }
    }
    let cols = 2;
    let rows = metrics.len().div_ceil(cols).max(1);
    let root = SVGBackend::new(path, (1200, 80 + 340 * rows as u32)).into_drawing_area();
    root.fill(&WHITE).map_err(|x| err(&x))?;
    let root = root
        .titled(
            &format!(
                "{} — {} cores, Linux {} (workers > {} = oversubscription)",
                e.name, info.machine.cores, info.machine.kernel, info.machine.cores
            ),
            ("sans-serif", 22),
        )
        .map_err(|x| err(&x))?;
    let n_groups = e.groups.len().max(1);
    let width = 0.8 / systems.len().max(1) as f64;
    for (i, (panel, metric)) in root
        .split_evenly((rows, cols))
        .iter()
        .zip(&metrics)
        .enumerate()
    {
        let top = e
            .groups
            .iter()
            .flat_map(|g| g.rows.iter().filter_map(|r| r.median.get(metric)))
            .fold(0.0f64, |a, &b| a.max(b));
        let top = if top > 0.0 { top * 1.1 } else { 1.0 };
        let mut chart = ChartBuilder::on(panel)
            .caption(metric, ("sans-serif", 18))
            .margin(10)
            .x_label_area_size(25)
            .y_label_area_size(70)
            .build_cartesian_2d(-0.5f64..n_groups as f64 - 0.5, 0f64..top)
            .map_err(|x| err(&x))?;
        chart
            .configure_mesh()
            .disable_x_mesh()
            .x_labels(n_groups)
            // Clusters are centred on integers; only those get a label.
            .x_label_formatter(&|x| {
                if x.fract() == 0.0 && *x >= 0.0 {
                    format!("G{}", *x as usize + 1)
                } else {
                    String::new()
                }
            })
            .draw()
            .map_err(|x| err(&x))?;
        for (si, system) in systems.iter().enumerate() {
            let color = Palette99::pick(si).to_rgba();
            let bars = e.groups.iter().enumerate().filter_map(|(gi, g)| {
                let r = g.rows.iter().find(|r| r.system == *system)?;
                let v = *r.median.get(metric)?;
                let x0 = gi as f64 - 0.4 + si as f64 * width;
                Some(Rectangle::new([(x0, 0.0), (x0 + width, v)], color.filled()))
            });
            let series = chart.draw_series(bars).map_err(|x| err(&x))?;
            if i == 0 {
                series.label(*system).legend(move |(x, y)| {
                    Rectangle::new([(x, y - 5), (x + 10, y + 5)], color.filled())
                });
            }
        }
        if i == 0 {
            chart
                .configure_series_labels()
                .background_style(WHITE.mix(0.8))
                .border_style(BLACK)
                .position(SeriesLabelPosition::UpperLeft)
                .draw()
                .map_err(|x| err(&x))?;
        }
    }
    root.present().map_err(|x| err(&x))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::json::tests::fake;

    #[test]
    fn writes_an_svg() {
        let (machine, exps) = fake();
        let info = MachineInfo {
            machine,
            perf_unavailable: None,
            load_average: None,
        };
        let dir = std::env::temp_dir().join(format!("ember-lab-chart-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("fake.svg");
        write(&path, &exps[0], &info).unwrap();
        let svg = std::fs::read_to_string(&path).unwrap();
        assert!(svg.starts_with("<svg") || svg.contains("<svg"));
        assert!(svg.contains("rayon"));
        let _ = std::fs::remove_dir_all(&dir);
    }
}
