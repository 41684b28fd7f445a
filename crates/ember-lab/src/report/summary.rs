//! What a reader sees first: the claims table, and per experiment one compact table of the
//! few metrics it is about (full tables are in `report.md`).

use super::markdown::num;
use super::{higher_is_better, ExperimentSummary, GroupSummary, RowSummary};
use crate::claims::{ClaimResult, Ratio};
use crate::systems::Role;
use std::fmt::Write;

/// `0.61 (CI 0.55–0.70)` for a ratio, `—` for none.
fn ratio_cell(r: Option<&Ratio>) -> String {
    match r {
        None => "—".into(),
        Some(r) => match r.ci95 {
            Some([lo, hi]) => format!("×{:.2} (CI {:.2}–{:.2})", r.median, lo, hi),
            None => format!("×{:.2} (no CI: {} rounds)", r.median, r.rounds),
        },
    }
}

/// The claims table, Markdown: one row per claim.
pub fn claims_table(claims: &[ClaimResult]) -> String {
    let mut s = String::from(
        "## Claims\n\n| claim | source | published | here | ember vs best peer | verdict |\n\
         |---|---|---|---|---|---|\n",
    );
    for c in claims {
        let here = match &c.ratio {
            Some(r) => format!(
                "{} {} vs {} {}: {}",
                r.subject,
                num(r.subject_median),
                r.baseline,
                num(r.baseline_median),
                ratio_cell(Some(r))
            ),
            None => "—".into(),
        };
        let ember = match &c.ember_vs_best_peer {
            Some(r) => format!("{} vs {}: {}", r.metric, r.baseline, ratio_cell(Some(r))),
            None => "—".into(),
        };
        let _ = writeln!(
            s,
            "| {} | [{}]({}) | {} | {here} | {ember} | **{}**: {} |",
            c.claim, c.source_title, c.source_url, c.published, c.verdict, c.reason
        );
    }
    s.push_str(
        "\nEach verdict is computed from paired rounds against the test the claim declares \
         before measuring (`report.json` → `claims[].test`); ratios are subject / baseline per \
         round, median and sign-test 95 % CI.\n",
    );
    s
}

/// The claims of one experiment, for the terminal: `verdict — claim (ratio)` lines.
pub fn claim_lines(claims: &[ClaimResult], experiment: &str) -> String {
    let mut s = String::new();
    for c in claims.iter().filter(|c| c.experiment == experiment) {
        let _ = writeln!(
            s,
            "  [{}] {} — {}{}",
            c.verdict,
            c.claim,
            c.reason,
            c.ember_vs_best_peer
                .as_ref()
                .map(|r| format!(
                    "; ember vs best peer ({}, {}): {}",
                    r.baseline,
                    r.metric,
                    ratio_cell(Some(r))
                ))
                .unwrap_or_default()
        );
    }
    s
}

/// The row a compact cell speaks for: `ember` if the table has it, else its best ember-role
/// row by `metric`.
fn subject<'a>(g: &'a GroupSummary, metric: &str) -> Option<&'a RowSummary> {
    g.rows
        .iter()
        .find(|r| r.system == "ember" && r.median.contains_key(metric))
        .or_else(|| best(g, metric, Role::Ember))
}

/// The best row of `role` by the median of `metric`.
fn best<'a>(g: &'a GroupSummary, metric: &str, role: Role) -> Option<&'a RowSummary> {
    let rows = g
        .rows
        .iter()
        .filter(|r| r.role == role && r.median.contains_key(metric));
    if higher_is_better(metric) {
        rows.max_by(|a, b| a.median[metric].total_cmp(&b.median[metric]))
    } else {
        rows.min_by(|a, b| a.median[metric].total_cmp(&b.median[metric]))
    }
}

/// One cell: `ember 0.61 ×0.82 rayon`, or the best row where the table has no ember row.
fn cell(g: &GroupSummary, metric: &str) -> String {
    let peer = best(g, metric, Role::Peer);
    match (subject(g, metric), peer) {
        (Some(s), Some(p)) => {
            let (v, b) = (s.median[metric], p.median[metric]);
            // A ratio only against a positive value: `avoidable_ctx_switches` can be negative.
            let ratio = if b > 0.0 && v >= 0.0 {
                format!(" ×{:.2} {}", v / b, p.system)
            } else {
                format!(" (best peer {} {})", p.system, num(b))
            };
            format!("{} {}{ratio}", s.system, num(v))
        }
        (Some(s), None) => format!("{} {}", s.system, num(s.median[metric])),
        (None, Some(p)) => format!("best: {} {}", p.system, num(p.median[metric])),
        (None, None) => "—".into(),
    }
}

/// One compact table for an experiment: a line per table of the full report, a column per
/// headline metric, each cell ember's median and its ratio to the best peer's.
pub fn compact_table(e: &ExperimentSummary) -> String {
    let metrics: Vec<&str> = e
        .headline
        .iter()
        .copied()
        .filter(|m| {
            e.groups
                .iter()
                .any(|g| g.rows.iter().any(|r| r.median.contains_key(*m)))
        })
        .collect();
    let mut s = String::from("| table |");
    for m in &metrics {
        let _ = write!(s, " {m} |");
    }
    s.push_str("\n|---|");
    for _ in &metrics {
        s.push_str("---|");
    }
    s.push('\n');
    for g in &e.groups {
        let _ = write!(s, "| {} |", g.title);
        for m in &metrics {
            let _ = write!(s, " {} |", cell(g, m));
        }
        s.push('\n');
    }
    s.push_str(
        "\nmedians; ×ratio = ember (or the best ember row) over the best peer of the table, \
         named after it. Full tables: report.md.\n",
    );
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::json::tests::{claims, fake};

    #[test]
    fn compact_cells_name_the_best_peer() {
        let (_, mut exps) = fake();
        exps[0].headline = &["wall_s", "ctx_switches"];
        let t = compact_table(&exps[0]);
        // ember 0.5 against the best peer rayon 0.6.
        assert!(t.contains("| ember 0.500 ×0.83 rayon |"), "{t}");
        assert_eq!(t.lines().filter(|l| l.starts_with("| pools = ")).count(), 2);
    }

    #[test]
    fn claims_table_shows_ratio_interval_and_verdict() {
        let t = claims_table(&claims());
        assert!(t.contains("×0.83 (CI 0.80–0.90)"), "{t}");
        assert!(t.contains("**reproduced**"), "{t}");
        assert!(t.contains("[t](u)"), "{t}");
        assert!(claim_lines(&claims(), "fake").contains("[reproduced]"));
        assert!(claim_lines(&claims(), "other").is_empty());
    }
}
