//! `ember-lab`: runs the experiments, prints one comparison table per group, and writes
//! `report.md`, `report.json` and one SVG chart per experiment.
//!
//! The pieces: [`cli`] parses flags, [`experiments`] build the groups of trials, [`runner`]
//! runs them interleaved and measures each run ([`metrics`]), and [`report`] renders the
//! results.

mod cli;
mod experiment;
mod experiments;
mod machine;
mod metrics;
mod raycast;
mod report;
mod runner;
mod work;

use clap::Parser;
use cli::Cli;
use experiment::{Experiment, LabOpts};
use experiments::chained_decode::ChainedDecode;
use experiments::containers::Containers;
use experiments::flow::FlowExp;
use experiments::producer_consumer::ProducerConsumer;
use experiments::{cycle::Cycle, light_load::LightLoad, micro::Micro};
use machine::MachineInfo;
use report::{json::Report, ExperimentSummary};
use std::io::IsTerminal;
use std::process::ExitCode;

fn main() -> ExitCode {
    let cli = Cli::parse();
    if let Some(spec) = &cli.pc.pc_child {
        return experiments::producer_consumer::child_main(spec);
    }
    let pc = ProducerConsumer {
        args: cli.pc.clone(),
    };
    let ll = LightLoad {
        args: cli.ll.clone(),
        repeat_given: cli.repeat.is_some(),
    };
    let cd = ChainedDecode::new(cli.cd.clone());
    let flow = FlowExp {
        args: cli.flow.clone(),
        repeat_given: cli.repeat.is_some(),
    };
    let cn = Containers {
        args: cli.cn.clone(),
    };
    let all: [&dyn Experiment; 7] = [&pc, &ll, &Cycle, &cn, &flow, &cd, &Micro];
    if cli.list {
        for e in all {
            println!("{}", e.name());
        }
        return ExitCode::SUCCESS;
    }
    let chosen: Vec<&dyn Experiment> = if cli.experiments.is_empty() {
        all.to_vec()
    } else {
        let mut chosen = Vec::new();
        for name in &cli.experiments {
            match all.iter().find(|e| e.name() == name) {
                Some(e) => chosen.push(*e),
                None => {
                    let known: Vec<_> = all.iter().map(|e| e.name()).collect();
                    eprintln!("unknown experiment `{name}`; known: {}", known.join(", "));
                    return ExitCode::from(2);
                }
            }
        }
        chosen
    };

    let info = MachineInfo::detect();
    let opts = LabOpts {
        quick: cli.quick,
        repeat: cli.repeat(),
        cores: info.machine.cores,
    };
    if !cli.json {
        println!("{}\n", info.describe());
    }
    let out = cli.out.clone().unwrap_or_else(report::default_out_dir);
    let plan = runner::plan(&chosen, &opts);
    let bar = runner::progress(
        plan.total_runs,
        cli.json || !std::io::stderr().is_terminal(),
    );
    let mut summaries = Vec::new();
    for (e, groups, repeat) in plan.items {
        let mut runs =
            runner::run_groups(e.name(), groups, repeat, info.machine.perf_counters, &bar);
        runner::add_paired(&mut runs, e.paired());
        let mut summary = ExperimentSummary::from_runs(&runs);
        summary.rank_rows(e.rank_by());
        if let Err(e) = std::fs::create_dir_all(&out) {
            eprintln!("creating {}: {e}", out.display());
            return ExitCode::FAILURE;
        }
        summary.artifacts = e.artifacts(&opts, &out);
        if !cli.json {
            bar.suspend(|| println!("{}", report::markdown::experiment_tables(&summary, &info)));
        }
        summaries.push(summary);
    }
    bar.finish_and_clear();

    match write_reports(&out, &info, &summaries) {
        Ok(json) => {
            if cli.json {
                println!("{json}");
            } else {
                println!("{}", info.describe());
                let shown = out.canonicalize().unwrap_or_else(|_| out.clone());
                println!("Report written to {}", shown.display());
            }
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("writing the report to {}: {e}", out.display());
            ExitCode::FAILURE
        }
    }
}

/// Writes `report.md`, `report.json` and the charts into `out`; returns the JSON.
fn write_reports(
    out: &std::path::Path,
    info: &MachineInfo,
    summaries: &[ExperimentSummary],
) -> Result<String, String> {
    std::fs::create_dir_all(out).map_err(|e| e.to_string())?;
    let mut charts = Vec::new();
    for s in summaries {
        let file = format!("{}.svg", s.name);
        report::chart::write(&out.join(&file), s, info)
            .map_err(|e| format!("chart {file}: {e}"))?;
        charts.push((s.name.clone(), file));
    }
    let md = report::markdown::report(info, summaries, &charts);
    std::fs::write(out.join("report.md"), md).map_err(|e| e.to_string())?;
    let json = Report::new(&info.machine, summaries).to_json();
    std::fs::write(out.join("report.json"), &json).map_err(|e| e.to_string())?;
    Ok(json)
}
