//! The comparison tables: one Markdown table per group, printed to the terminal and collected
//! into `report.md`.
//!
//! A cell reads `median [min–max] ×ratio`; the ratio is against the best peer of the group
//! (lowest value, or highest for a `_per_s` throughput), so `×1.00` marks that peer and
//! `×0.30` means 30 % of it. A paired ratio (a `_vs_` column) reads `median (CI low–high)`,
//! with the 95 % confidence interval of its median and no further ratio.

use super::{higher_is_better, ExperimentSummary, GroupSummary};
use crate::claims::ClaimResult;
use crate::machine::{MachineInfo, Provenance};
use crate::runner::is_paired;
use crate::systems::Role;
use std::fmt::Write;

/// Metrics shown first, in this order; any others follow alphabetically.
const ORDER: &[&str] = &[
    "wall_s",
    "cpu_s",
    "useful_cpu_s",
    "overhead_cpu_s",
    "ctx_switches",
    "voluntary_ctx_switches",
    "involuntary_ctx_switches",
    "perf_ctx_switches",
    "migrations",
    "wakeups",
];

/// In `report.json` but not in the tables: `cpu_s` already holds their sum.
const JSON_ONLY: &[&str] = &["user_s", "sys_s"];

/// Metrics that come from perf and are shown as `n/a` when it is unavailable.
const PERF: &[&str] = &["perf_ctx_switches", "migrations"];

/// Formats a number compactly: counts as integers, anything else with 3 significant digits
/// (at most 3 decimals above 1), in plain notation.
pub fn num(v: f64) -> String {
    let a = v.abs();
    if v.fract() == 0.0 && a < 1e15 {
        format!("{v:.0}")
    } else if a >= 100.0 {
        format!("{v:.1}")
    } else if a >= 1.0 {
        format!("{v:.3}")
    } else {
        // Decimals so that three significant digits show: 0.0123, 0.000456.
        let decimals = (2 - a.log10().floor() as i32).clamp(3, 9) as usize;
        format!("{v:.decimals$}")
    }
}

fn columns(g: &GroupSummary, info: &MachineInfo) -> Vec<String> {
    let mut present: Vec<String> = g
        .rows
        .iter()
        .flat_map(|r| r.median.keys().cloned())
        .filter(|k| !JSON_ONLY.contains(&k.as_str()))
        .collect();
    if info.perf_unavailable.is_some() {
        present.extend(PERF.iter().map(|s| s.to_string()));
    }
    present.sort_by_key(|k| {
        (
            ORDER.iter().position(|o| o == k).unwrap_or(ORDER.len()),
            k.clone(),
        )
    });
    present.dedup();
    present
}

/// One group's table, with its title and parameters above it.
pub fn group_table(g: &GroupSummary, info: &MachineInfo) -> String {
    let cols = columns(g, info);
    let mut s = String::new();
    let _ = writeln!(s, "#### {}\n", g.title);
    let _ = write!(s, "| system |");
    for c in &cols {
        let _ = write!(s, " {c} |");
    }
    let _ = write!(s, "\n|---|");
    for _ in &cols {
        let _ = write!(s, "---|");
    }
    s.push('\n');
    for r in &g.rows {
        let _ = write!(s, "| {} |", r.system);
        for c in &cols {
            let cell = match r.median.get(c) {
                Some(&m) => {
                    let mut cell = match r.ci95.get(c) {
                        Some([lo, hi]) => format!("{} (CI {}–{})", num(m), num(*lo), num(*hi)),
                        None => format!("{} [{}–{}]", num(m), num(r.min[c]), num(r.max[c])),
                    };
                    // A paired ratio is a comparison already.
                    if let Some(ratio) = ratio(g, c, m).filter(|_| !is_paired(c)) {
                        let _ = write!(cell, " ×{ratio:.2}");
                    }
                    cell
                }
                None if PERF.contains(&c.as_str()) => match &info.perf_unavailable {
                    Some(reason) => format!("n/a ({reason})"),
                    None => "n/a".into(),
                },
                None => "—".into(),
            };
            let _ = write!(s, " {cell} |");
        }
        s.push('\n');
    }
    let repeats = g.rows.first().map_or(0, |r| r.repeats);
    let _ = writeln!(
        s,
        "\nmedian [min–max] of {repeats} runs; ×ratio against the best peer (neither ember nor a floor row)."
    );
    if g.rows.iter().any(|r| !r.ci95.is_empty()) {
        let _ = writeln!(
            s,
            "`_vs_` columns are paired ratios (each run over the reference row's run in the same \
             round): median (CI low–high), the 95 % confidence interval of the median (sign test)."
        );
    }
    s
}

fn ratio(g: &GroupSummary, metric: &str, v: f64) -> Option<f64> {
    let peers = g
        .rows
        .iter()
        .filter(|r| r.role == Role::Peer)
        .filter_map(|r| r.median.get(metric).copied());
    let best = if higher_is_better(metric) {
        peers.reduce(f64::max)
    } else {
        peers.reduce(f64::min)
    }?;
    if best == 0.0 {
        (v == 0.0).then_some(1.0)
    } else {
        Some(v / best)
    }
}

/// Every table of one experiment under a heading that gives the time it took.
pub fn experiment_tables(e: &ExperimentSummary, info: &MachineInfo) -> String {
    let mut s = format!("## {} ({:.0} s)\n\n", e.name, e.seconds);
    for g in &e.groups {
        s.push_str(&group_table(g, info));
        s.push('\n');
    }
    s
}

/// The systems that appear in the report, with their role and what they are.
fn systems_glossary(experiments: &[ExperimentSummary]) -> String {
    let mut names: Vec<&str> = experiments
        .iter()
        .flat_map(|e| e.groups.iter().flat_map(|g| g.rows.iter()))
        .map(|r| r.system.as_str())
        .collect();
    names.sort_unstable();
    names.dedup();
    let mut s = String::from("## Systems\n\n| row | role | what it is |\n|---|---|---|\n");
    for name in names {
        // A row named with a suffix (`crossbeam-batch20`) is its registry entry's.
        let entry = crate::systems::find(name)
            .or_else(|| crate::systems::find(name.trim_end_matches(|c: char| c.is_ascii_digit())));
        if let Some(sys) = entry {
            let _ = writeln!(s, "| `{name}` | {:?} | {} |", sys.role, sys.about);
        }
    }
    s
}

/// The whole `report.md`: the claims table first, then every experiment's tables. `charts`
/// maps an experiment name to its chart's file name.
pub fn report(
    info: &MachineInfo,
    provenance: &Provenance,
    claims: &[ClaimResult],
    experiments: &[ExperimentSummary],
    charts: &[(String, String)],
) -> String {
    let mut s = String::from("# ember-lab report\n\n");
    let _ = writeln!(s, "{}\n", info.describe());
    let _ = writeln!(
        s,
        "Commit {}, {}, CPU {}; peers: {}; {}.\n",
        provenance.commit,
        provenance.rustc,
        provenance.cpu_model,
        provenance
            .peer_versions
            .iter()
            .map(|(n, v)| format!("{n} {v}"))
            .collect::<Vec<_>>()
            .join(", "),
        provenance
            .go
            .as_ref()
            .map_or("Go peer not run".to_string(), |g| format!("Go peer {g}"))
    );
    s.push_str(&super::summary::claims_table(claims));
    s.push('\n');
    for e in experiments {
        s.push_str(&experiment_tables(e, info));
        if let Some((_, file)) = charts.iter().find(|(n, _)| *n == e.name) {
            let _ = writeln!(
                s,
                "![{}: each row's median over the best peer's of its table]({file})\n",
                e.name
            );
        }
        let curves = super::scaling::curves(e);
        if !curves.is_empty() {
            let _ = writeln!(
                s,
                "### Scaling with workers
"
            );
            s.push_str(&super::scaling::tables(&curves));
            let _ = writeln!(
                s,
                "![{0}: speedup over each system's own narrowest time]({0}-scaling.svg)\n",
                e.name
            );
        }
        for a in &e.artifacts {
            if a.file.ends_with(".svg") || a.file.ends_with(".png") {
                let _ = writeln!(s, "{}\n\n![{}]({})\n", a.caption, a.file, a.file);
            } else {
                let _ = writeln!(s, "- [{}]({})\n", a.caption, a.file);
            }
        }
    }
    s.push_str(&systems_glossary(experiments));
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::json::tests::{claims, fake, provenance};

    fn info(perf: bool) -> MachineInfo {
        let (machine, _) = fake();
        MachineInfo {
            machine,
            perf_unavailable: (!perf).then(|| "refused for the test".to_string()),
            load_average: None,
        }
    }

    #[test]
    fn numbers() {
        assert_eq!(num(120.0), "120");
        assert_eq!(num(20.5), "20.500");
        assert_eq!(num(0.5), "0.500");
        assert_eq!(num(0.00472), "0.00472");
        assert_eq!(num(0.0), "0");
    }

    #[test]
    fn one_table_per_group() {
        let (_, exps) = fake();
        let md = report(&info(false), &provenance(), &claims(), &exps, &[]);
        assert!(md.find("## Claims").unwrap() < md.find("## fake").unwrap());
        assert_eq!(md.matches("| system |").count(), 2);
        assert_eq!(md.matches("#### pools = ").count(), 2);
        assert!(md.contains("2 cores"));
        assert!(md.contains("oversubscription"));
        // Each table: header and three rows (a separator starts `|---`); the claims: two; the
        // systems glossary: header and three.
        let rows = md.lines().filter(|l| l.starts_with("| ")).count();
        assert_eq!(rows, 2 * 4 + 2 + 4);
        assert!(md.contains("| `rayon` | Peer |"), "{md}");
    }

    #[test]
    fn ratios_against_best_peer_and_na_for_perf() {
        let (_, exps) = fake();
        let t = group_table(&exps[0].groups[0], &info(false));
        // ember 0.5 vs best peer rayon 0.6.
        assert!(t.contains("| ember | 0.500 [0.450–0.550] ×0.83 |"), "{t}");
        assert!(t.contains("| rayon | 0.600 [0.540–0.660] ×1.00 |"), "{t}");
        assert!(t.contains("n/a (refused for the test)"));
        let t = group_table(&exps[0].groups[0], &info(true));
        assert!(!t.contains("n/a"));
    }

    #[test]
    fn paired_ratios_show_their_interval_instead_of_the_range() {
        let (_, mut exps) = fake();
        let g = &mut exps[0].groups[0];
        for r in &mut g.rows {
            r.median.insert("wall_vs_rayon".into(), 1.0);
            r.min.insert("wall_vs_rayon".into(), 0.5);
            r.max.insert("wall_vs_rayon".into(), 2.0);
        }
        g.rows[0].ci95.insert("wall_vs_rayon".into(), [0.9, 1.1]);
        let t = group_table(g, &info(true));
        assert!(t.contains("| 1 (CI 0.900–1.100) |"), "{t}");
        assert!(
            t.contains("| 1 [0.500–2] |"),
            "a row without an interval: {t}"
        );
        assert!(t.contains("95 % confidence interval"));
    }

    #[test]
    fn embeds_image_artifacts_and_links_others() {
        use crate::experiment::Artifact;
        let (_, mut exps) = fake();
        exps[0].artifacts = vec![
            Artifact {
                caption: "timeline".into(),
                file: "t.svg".into(),
            },
            Artifact {
                caption: "trace".into(),
                file: "t.json".into(),
            },
        ];
        let md = report(&info(true), &provenance(), &[], &exps, &[]);
        assert!(md.contains("![t.svg](t.svg)"), "{md}");
        assert!(md.contains("- [trace](t.json)"), "{md}");
    }
}
