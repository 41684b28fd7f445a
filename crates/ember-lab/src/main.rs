//! `ember-lab`: runs the experiments, checks the published claims against them, prints the
//! claims table first and then one compact table per experiment (each experiment's verdicts
//! also go to stderr as it ends), and writes `report.md`, `report.json`,
//! `report.html` and one SVG chart per experiment.
//!
//! The pieces: [`cli`] parses flags, [`experiments`] registers the experiments and builds
//! their tables of rows from the [`systems`] registry, [`runner`] runs them interleaved and
//! measures each run ([`metrics`]), [`claims`] computes each claim's verdict, and [`report`]
//! renders the results.

mod claims;
mod cli;
mod experiment;
mod experiments;
mod go_peer;
mod machine;
mod metrics;
mod raycast;
mod report;
mod rng;
mod runner;
#[cfg(test)]
mod runtime_docs;
mod systems;
mod tables;
mod work;

use clap::Parser;
use cli::Cli;
use experiment::LabOpts;
use machine::{MachineInfo, Provenance};
use report::{json::Report, ExperimentSummary};
use std::io::IsTerminal;
use std::process::ExitCode;
use std::time::Instant;

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) if e.use_stderr() => {
            // One line: what was wrong, and where to look.
            let msg = e.kind().to_string();
            let detail = e.to_string();
            let first = detail
                .lines()
                .next()
                .unwrap_or(&msg)
                .trim_start_matches("error: ");
            eprintln!("ember-lab: {first} (see --help)");
            return ExitCode::from(2);
        }
        Err(e) => {
            // --help and --version.
            let _ = e.print();
            return ExitCode::SUCCESS;
        }
    };
    if let Some(spec) = &cli.pc.pc_child {
        return experiments::producer_consumer::child_main(spec);
    }
    let all = experiments::registry(&cli);
    if cli.list {
        for e in &all {
            println!("{}", e.name());
        }
        return ExitCode::SUCCESS;
    }
    let mut chosen = Vec::new();
    for name in &cli.experiments {
        match all.iter().find(|e| e.name() == name) {
            Some(e) => chosen.push(e.as_ref()),
            None => {
                let known: Vec<_> = all.iter().map(|e| e.name()).collect();
                eprintln!(
                    "ember-lab: unknown experiment `{name}`; known: {}",
                    known.join(", ")
                );
                return ExitCode::from(2);
            }
        }
    }
    if chosen.is_empty() {
        chosen = all.iter().map(|e| e.as_ref()).collect();
    }

    let info = MachineInfo::detect();
    let opts = LabOpts {
        quick: cli.quick,
        repeat: cli.repeat(),
        cores: info.machine.cores,
    };
    let plan = match runner::plan(&chosen, &opts) {
        Ok(plan) => plan,
        Err(e) => {
            eprintln!("ember-lab: {e}");
            return ExitCode::from(2);
        }
    };
    let provenance = Provenance::detect(&info);
    if !cli.json {
        println!("{}\n{}\n", info.describe(), go_peer::status());
    }
    let out = cli.out.clone().unwrap_or_else(report::default_out_dir);
    if let Err(e) = std::fs::create_dir_all(&out) {
        eprintln!("ember-lab: creating {}: {e}", out.display());
        return ExitCode::FAILURE;
    }
    let bar = runner::progress(
        plan.total_runs,
        cli.json || !std::io::stderr().is_terminal(),
    );
    let mut summaries = Vec::new();
    let mut all_runs = Vec::new();
    // The tables wait until the claims table has been printed: the output opens with the
    // verdicts. Meanwhile each experiment reports its own verdicts on stderr as it ends.
    let mut tables = Vec::new();
    for (e, groups, repeat) in plan.items {
        let started = Instant::now();
        let mut runs =
            runner::run_groups(e.name(), groups, repeat, info.machine.perf_counters, &bar);
        runner::add_paired(&mut runs, e.paired());
        runner::add_differences(&mut runs, e.differences());
        runner::add_quotients(&mut runs, e.quotients());
        let mut summary = ExperimentSummary::from_runs(&runs);
        summary.rank_rows(e.rank_by());
        summary.headline = e.headline();
        summary.artifacts = e.artifacts(&opts, &out);
        summary.seconds = started.elapsed().as_secs_f64();
        if !cli.json {
            let claims = claims::evaluate(std::slice::from_ref(&runs), info.machine.cores);
            let verdicts = report::summary::claim_lines(&claims, e.name());
            bar.suspend(|| {
                eprintln!(
                    "{} done in {:.0} s\n{verdicts}",
                    summary.name, summary.seconds
                )
            });
            tables.push(format!(
                "## {} ({:.0} s)\n\n{verdicts}\n{}",
                summary.name,
                summary.seconds,
                report::summary::compact_table(&summary)
            ));
        }
        summaries.push(summary);
        all_runs.push(runs);
    }
    bar.finish_and_clear();
    let claims = claims::evaluate(&all_runs, info.machine.cores);

    match write_reports(&out, &info, &provenance, &claims, &summaries) {
        Ok(json) => {
            if cli.json {
                println!("{json}");
            } else {
                println!("{}", report::summary::claims_table(&claims));
                for table in &tables {
                    println!("{table}");
                }
                let shown = out.canonicalize().unwrap_or_else(|_| out.clone());
                println!(
                    "Full tables: {0}/report.md, {0}/report.html (charts, timelines), {0}/report.json",
                    shown.display()
                );
            }
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("ember-lab: writing the report to {}: {e}", out.display());
            ExitCode::FAILURE
        }
    }
}

/// Writes `report.md`, `report.html`, `report.json` and the charts into `out`; returns the
/// JSON.
fn write_reports(
    out: &std::path::Path,
    info: &MachineInfo,
    provenance: &Provenance,
    claims: &[claims::ClaimResult],
    summaries: &[ExperimentSummary],
) -> Result<String, String> {
    std::fs::create_dir_all(out).map_err(|e| e.to_string())?;
    let mut charts = Vec::new();
    for s in summaries {
        let file = format!("{}.svg", s.name);
        report::chart::write(&out.join(&file), s, info)
            .map_err(|e| format!("chart {file}: {e}"))?;
        charts.push((s.name.clone(), file));
        let curves = report::scaling::curves(s);
        if !curves.is_empty() {
            let file = format!("{}-scaling.svg", s.name);
            let title = format!(
                "{} — speedup over each system's own narrowest time ({} cores)",
                s.name, info.machine.cores
            );
            report::scaling::write_chart(&out.join(&file), &title, &curves)
                .map_err(|e| format!("chart {file}: {e}"))?;
        }
    }
    let md = report::markdown::report(info, provenance, claims, summaries, &charts);
    std::fs::write(out.join("report.md"), &md).map_err(|e| e.to_string())?;
    std::fs::write(out.join("report.html"), report::html::render(&md, out))
        .map_err(|e| e.to_string())?;
    let json = Report::new(&info.machine, provenance, claims, summaries).to_json();
    std::fs::write(out.join("report.json"), &json).map_err(|e| e.to_string())?;
    Ok(json)
}
