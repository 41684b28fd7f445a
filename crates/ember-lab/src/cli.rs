//! The command line: which experiments to run, how often, where the report goes, and each
//! experiment's own sizing flags.

use crate::experiments::chained_decode::CdArgs;
use crate::experiments::containers::CnArgs;
use crate::experiments::cycle::CycleArgs;
use crate::experiments::flow::FlowArgs;
use crate::experiments::light_load::LlArgs;
use crate::experiments::micro::MicroArgs;
use crate::experiments::producer_consumer::PcArgs;
use clap::Parser;
use std::path::PathBuf;

/// ember's lab: the published scheduling experiments, with ember and the pools people use
/// side by side. With no arguments, runs every experiment at its default size.
#[derive(Parser, Debug)]
#[command(name = "ember-lab", version)]
pub struct Cli {
    /// Experiments to run, by name [default: all]; `--list` shows them
    #[arg(value_name = "EXPERIMENT")]
    pub experiments: Vec<String>,
    /// Rounds per table (every row once a round) [default: 9, the fewest a claim's verdict
    /// rests on; --quick: 2]
    #[arg(long, value_name = "N")]
    pub repeat: Option<usize>,
    /// The smallest sizes that exercise every code path (what CI runs)
    #[arg(long)]
    pub quick: bool,
    /// Directory for report.md, report.json, report.html and charts [default: target/ember-lab]
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Print report.json to stdout instead of the tables
    #[arg(long)]
    pub json: bool,
    /// List the experiments and exit
    #[arg(long)]
    pub list: bool,
    #[command(flatten)]
    pub pc: PcArgs,
    #[command(flatten)]
    pub ll: LlArgs,
    #[command(flatten)]
    pub cycle: CycleArgs,
    #[command(flatten)]
    pub cd: CdArgs,
    #[command(flatten)]
    pub cn: CnArgs,
    #[command(flatten)]
    pub flow: FlowArgs,
    #[command(flatten)]
    pub micro: MicroArgs,
}

impl Cli {
    /// `--repeat`, or the default for the chosen size.
    pub fn repeat(&self) -> usize {
        self.repeat.unwrap_or(if self.quick { 2 } else { 9 }).max(1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn parses() {
        Cli::command().debug_assert();
        let c = Cli::parse_from([
            "ember-lab",
            "producer-consumer",
            "--quick",
            "--threads",
            "2,8",
            "--pools",
            "3",
            "--ll-interval-us",
            "500",
            "--cycle-hops",
            "300000",
            "--cycle-ms",
            "0",
        ]);
        assert_eq!(c.experiments, ["producer-consumer"]);
        assert_eq!(c.pc.threads, [2, 8]);
        assert_eq!(c.pc.pools, [3]);
        assert_eq!(c.ll.interval_us, [500]);
        assert_eq!((c.cycle.hops, c.cycle.ms), (Some(300_000), Some(0)));
        assert_eq!(c.repeat(), 2);
    }
}
