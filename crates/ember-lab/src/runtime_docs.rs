//! The runtime's sources hold no lab notebook.
//!
//! ember's docs say what an item does, its default and its hazard. Figures live in the lab's
//! output and in `MEASUREMENTS.md`, each with the command that regenerates it. This test
//! reads every file under `crates/ember/src` and fails on a dated measurement (`2026-11-23`),
//! an "A/B", a ratio (`1.23×`), or a name of the lab's rows and tables. The names come from
//! the lab's own registries ([`systems::ALL`], [`tables`]), so the list cannot go stale. An
//! item may point to `MEASUREMENTS.md` once: a doc comment block, or a section of a
//! Markdown file.

use crate::systems;
use crate::tables;
use std::path::{Path, PathBuf};

/// What flags a line, or `None`.
type Check = Box<dyn Fn(&str) -> Option<String>>;

fn files(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("reading {}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            files(&path, out);
        } else if matches!(path.extension().and_then(|e| e.to_str()), Some("rs" | "md")) {
            out.push(path);
        }
    }
}

/// Whether `c` may continue a name or a number.
fn word(c: char) -> bool {
    c.is_alphanumeric() || c == '_' || c == '-'
}

/// A date of a measurement: `20YY-MM`, or `20YY-MM-DD`.
fn date(line: &str) -> Option<String> {
    let b = line.as_bytes();
    (0..b.len().saturating_sub(6)).find_map(|i| {
        let before_ok = i == 0 || !b[i - 1].is_ascii_digit();
        let shape = b[i] == b'2'
            && b[i + 1] == b'0'
            && b[i + 2].is_ascii_digit()
            && b[i + 3].is_ascii_digit()
            && b[i + 4] == b'-'
            && b[i + 5].is_ascii_digit()
            && b[i + 6].is_ascii_digit();
        let after_ok = b.get(i + 7).is_none_or(|c| !c.is_ascii_digit());
        let month = || u32::from(b[i + 5] - b'0') * 10 + u32::from(b[i + 6] - b'0');
        (before_ok && shape && after_ok && (1..=12).contains(&month()))
            .then(|| format!("a date ({})", &line[i..i + 7]))
    })
}

/// A ratio: a number followed by `×` that no second number follows (`8 × 8` is a size), or
/// a decimal followed by `x`.
fn ratio(line: &str) -> Option<String> {
    let chars: Vec<char> = line.chars().collect();
    for (i, &c) in chars.iter().enumerate() {
        let mut j = i;
        if c == '×' {
            if j > 0 && chars[j - 1] == ' ' {
                j -= 1;
            }
        } else if c == 'x' && chars.get(i + 1).is_none_or(|&n| !word(n)) {
            // Only `1.5x`: a decimal point among the digits before.
            let digits: String = chars[..i]
                .iter()
                .rev()
                .take_while(|c| c.is_ascii_digit() || **c == '.')
                .collect();
            if !digits.contains('.') || digits.starts_with('.') {
                continue;
            }
        } else {
            continue;
        }
        let number_before = j > 0 && chars[j - 1].is_ascii_digit();
        let rest: String = chars[i + 1..].iter().collect();
        let number_after = rest.trim_start().starts_with(|c: char| c.is_ascii_digit());
        if number_before && !number_after {
            let from = j.saturating_sub(6);
            return Some(format!(
                "a ratio ({})",
                chars[from..=i].iter().collect::<String>().trim()
            ));
        }
    }
    None
}

/// `name` in `line` as a whole word.
fn has_word(line: &str, name: &str) -> bool {
    line.match_indices(name).any(|(at, _)| {
        let before = line[..at].chars().next_back();
        let after = line[at + name.len()..].chars().next();
        before.is_none_or(|c| !word(c)) && after.is_none_or(|c| !word(c))
    })
}

/// The checks: dates, A/B, ratios, then the lab's names. A row of ember's own (`ember-…`) is
/// flagged anywhere; other rows, and tables and experiments, only in backticks (`rayon`
/// and `fork-join` are also plain words), and not where the name is one of the runtime's
/// own modules (`flow`).
fn checks(modules: &[String]) -> Vec<Check> {
    let mut checks: Vec<Check> = vec![
        Box::new(date),
        Box::new(|l| l.contains("A/B").then(|| "an A/B result".into())),
        Box::new(ratio),
    ];
    for s in systems::ALL {
        let name = s.name;
        if name.starts_with("ember-") {
            checks.push(Box::new(move |l| {
                has_word(l, name).then(|| format!("the lab's row `{name}`"))
            }));
        } else if name != "ember" {
            let quoted = format!("`{name}`");
            checks.push(Box::new(move |l| {
                l.contains(&quoted)
                    .then(|| format!("the lab's row {quoted}"))
            }));
        }
    }
    let experiments = [
        tables::experiment::PRODUCER_CONSUMER,
        tables::experiment::LIGHT_LOAD,
        tables::experiment::CYCLE,
        tables::experiment::CONTAINERS,
        tables::experiment::FLOW,
        tables::experiment::CHAINED_DECODE,
        tables::experiment::MICRO,
    ];
    for name in experiments
        .into_iter()
        .chain(tables::benchmark::ALL.iter().copied())
    {
        if modules.iter().any(|m| m == name) {
            continue;
        }
        let quoted = format!("`{name}`");
        checks.push(Box::new(move |l| {
            l.contains(&quoted)
                .then(|| format!("the lab's table {quoted}"))
        }));
    }
    checks
}

/// Whether `line` is a comment line of a Rust file.
fn comment(line: &str) -> bool {
    line.trim_start().starts_with("//")
}

/// Every finding under `root`, as `path:line: what`.
fn findings(root: &Path) -> Vec<String> {
    let mut paths = Vec::new();
    files(root, &mut paths);
    let modules: Vec<String> = paths
        .iter()
        .filter_map(|p| p.file_stem()?.to_str().map(String::from))
        .chain(
            paths
                .iter()
                .filter_map(|p| p.parent()?.file_name()?.to_str().map(String::from)),
        )
        .collect();
    let checks = checks(&modules);
    let mut found = Vec::new();
    for path in &paths {
        let text = std::fs::read_to_string(path).unwrap();
        let markdown = path.extension().is_some_and(|e| e == "md");
        let shown = path
            .strip_prefix(root)
            .unwrap_or(path)
            .display()
            .to_string();
        // Pointers to MEASUREMENTS.md in the current item: a comment block, or a section.
        let mut pointers = 0;
        let mut in_comment = false;
        for (n, line) in text.lines().enumerate() {
            let starts_item = if markdown {
                line.starts_with('#')
            } else {
                let c = comment(line);
                let starts = c && !in_comment;
                in_comment = c;
                starts || !c
            };
            if starts_item {
                pointers = 0;
            }
            pointers += line.matches("MEASUREMENTS.md").count();
            if pointers > 1 {
                found.push(format!(
                    "{shown}:{}: a second pointer to MEASUREMENTS.md",
                    n + 1
                ));
            }
            for check in &checks {
                if let Some(what) = check(line) {
                    found.push(format!("{shown}:{}: {what}", n + 1));
                }
            }
        }
    }
    found
}

fn runtime_src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../ember/src")
}

#[test]
fn the_runtime_holds_no_dated_measurements_ratios_or_lab_names() {
    let found = findings(&runtime_src());
    assert!(
        found.is_empty(),
        "the runtime's docs state behaviour; figures belong in crates/ember-lab/MEASUREMENTS.md \
         (one pointer per item):\n{}",
        found.join("\n")
    );
}

#[test]
fn the_checks_find_what_they_are_for() {
    let modules = vec!["flow".to_string()];
    let checks = checks(&modules);
    let flagged = |l: &str| checks.iter().any(|c| c(l).is_some());
    for bad in [
        "measured 2026-11-23 on two cores",
        "in November (2026-11) it ran",
        "paired A/B, 7 rounds",
        "ran 1.23× as long",
        "ran 0.7 × as long",
        "at 1.5x the time",
        "the lab's `ember-no-defer` rows",
        "as the ember-offered row shows",
        "`micro`'s chained spawn",
        "the `tree-sum` table",
        "the `rayon` row",
    ] {
        assert!(flagged(bad), "missed: {bad}");
    }
    for fine in [
        "at most 8 × 8 fragments",
        "a hex 0x20 byte",
        "fork-join code runs serially",
        "the `flow` module",
        "ember's pool",
        "a single-threaded pool",
        "100 µs by default",
        "the 2^20 − 1 nodes",
    ] {
        assert!(!flagged(fine), "flagged: {fine}");
    }
}
