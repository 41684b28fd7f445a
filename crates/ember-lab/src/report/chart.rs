//! One SVG per experiment: a panel per headline metric, each a horizontal bar chart with one
//! cluster per table, named by the table's title, and one bar per system: its median over the
//! best peer's median in that table (1 = the best peer; tables without peers: over the best
//! row). Ratios, not raw values, because whether ember leads or trails is the point, and a
//! row's bars stay comparable across tables of very different sizes.

use super::{higher_is_better, ExperimentSummary, GroupSummary};
use crate::machine::MachineInfo;
use crate::systems::Role;
use plotters::prelude::*;
use std::path::Path;

/// The value each row is divided by: the best peer's median, else the best row's.
fn reference(g: &GroupSummary, metric: &str) -> Option<f64> {
    let best = |role: Option<Role>| {
        let vals = g
            .rows
            .iter()
            .filter(|r| role.is_none_or(|role| r.role == role))
            .filter_map(|r| r.median.get(metric).copied());
        if higher_is_better(metric) {
            vals.reduce(f64::max)
        } else {
            vals.reduce(f64::min)
        }
    };
    best(Some(Role::Peer))
        .or_else(|| best(None))
        .filter(|v| *v > 0.0)
}

/// A table's title cut to fit the label column.
fn label(title: &str) -> String {
    const MAX: usize = 44;
    if title.chars().count() <= MAX {
        title.to_string()
    } else {
        format!("{}…", title.chars().take(MAX - 1).collect::<String>())
    }
}

/// Writes `e`'s chart to `path`.
pub fn write(path: &Path, e: &ExperimentSummary, info: &MachineInfo) -> Result<(), String> {
    let err = |x: &dyn std::fmt::Display| x.to_string();
    let metrics: Vec<&str> = e
        .headline
        .iter()
        .copied()
        .filter(|m| e.groups.iter().any(|g| reference(g, m).is_some()))
        .collect();
    let mut systems: Vec<&str> = Vec::new();
    for r in e.groups.iter().flat_map(|g| &g.rows) {
        if !systems.contains(&r.system.as_str()) {
            systems.push(&r.system);
        }
    }
    let n_groups = e.groups.len().max(1);
    let panel_h = 60 + (n_groups as u32) * (8 + 7 * systems.len() as u32).max(40);
    let height = 80 + panel_h * metrics.len().max(1) as u32;
    let root = SVGBackend::new(path, (1200, height)).into_drawing_area();
    root.fill(&WHITE).map_err(|x| err(&x))?;
    let root = root
        .titled(
            &format!(
                "{} — median / best peer's median per table ({} cores, Linux {})",
                e.name, info.machine.cores, info.machine.kernel
            ),
            ("sans-serif", 20),
        )
        .map_err(|x| err(&x))?;
    let width = 0.8 / systems.len().max(1) as f64;
    for (i, (panel, metric)) in root
        .split_evenly((metrics.len().max(1), 1))
        .iter()
        .zip(&metrics)
        .enumerate()
    {
        let ratios: Vec<Vec<(usize, f64)>> = e
            .groups
            .iter()
            .map(|g| {
                let Some(base) = reference(g, metric) else {
                    return Vec::new();
                };
                g.rows
                    .iter()
                    .filter_map(|r| {
                        let si = systems.iter().position(|s| *s == r.system)?;
                        Some((si, r.median.get(*metric)? / base))
                    })
                    .collect()
            })
            .collect();
        let top = ratios
            .iter()
            .flatten()
            .map(|(_, v)| *v)
            .fold(1.0f64, f64::max)
            .min(20.0)
            * 1.08;
        let names: Vec<String> = e.groups.iter().map(|g| label(&g.title)).collect();
        let mut chart = ChartBuilder::on(panel)
            .caption(
                format!(
                    "{metric} ({} is better)",
                    if higher_is_better(metric) {
                        "higher"
                    } else {
                        "lower"
                    }
                ),
                ("sans-serif", 16),
            )
            .margin(8)
            .x_label_area_size(22)
            .y_label_area_size(330)
            .build_cartesian_2d(0f64..top, -0.5f64..n_groups as f64 - 0.5)
            .map_err(|x| err(&x))?;
        chart
            .configure_mesh()
            .disable_y_mesh()
            .y_labels(n_groups)
            // Clusters are centred on integers; only those get a label, top table first.
            .y_label_formatter(&|y| {
                let k = y.round();
                if (y - k).abs() < 1e-9 && k >= 0.0 && (k as usize) < n_groups {
                    names[n_groups - 1 - k as usize].clone()
                } else {
                    String::new()
                }
            })
            .draw()
            .map_err(|x| err(&x))?;
        for (si, system) in systems.iter().enumerate() {
            let color = Palette99::pick(si).to_rgba();
            let bars = ratios.iter().enumerate().flat_map(|(gi, rs)| {
                let y0 = (n_groups - 1 - gi) as f64 + 0.4 - (si as f64 + 1.0) * width;
                rs.iter()
                    .filter(move |(s, _)| *s == si)
                    .map(move |&(_, v)| {
                        Rectangle::new([(0.0, y0), (v.min(top), y0 + width)], color.filled())
                    })
            });
            let series = chart.draw_series(bars).map_err(|x| err(&x))?;
            if i == 0 {
                series.label(*system).legend(move |(x, y)| {
                    Rectangle::new([(x, y - 5), (x + 10, y + 5)], color.filled())
                });
            }
        }
        // The best peer's mark.
        chart
            .draw_series(std::iter::once(PathElement::new(
                vec![(1.0, -0.5), (1.0, n_groups as f64 - 0.5)],
                BLACK.stroke_width(1),
            )))
            .map_err(|x| err(&x))?;
        if i == 0 {
            chart
                .configure_series_labels()
                .background_style(WHITE.mix(0.85))
                .border_style(BLACK)
                .position(SeriesLabelPosition::UpperRight)
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
        assert!(svg.contains("pools = 3"), "tables are named, not numbered");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
