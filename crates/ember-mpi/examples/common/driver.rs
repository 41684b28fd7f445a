//! What the grid examples (`wave_sim`, `jacobi`) share: their flags, the world and the
//! flow, the run, the check against the sequential run and the line every rank prints.
//! Each example holds only its own kernels and includes this file with
//! `#[path = "common/driver.rs"] mod driver;`.
//!
//! Flags: `--local` (a one-process flow even under MPI, for comparisons), `--n N` and
//! `--steps S` (defaults per example). Every rank prints one line:
//! `NAME rank=R ranks=P n=N steps=S time_s=T bytes_sent=B messages_sent=M result=HASH`;
//! rank 0 adds `matches_sequential=true` (or `false`, and the example exits non-zero).
//! `time_s` runs from the first submission until the result is back on every rank;
//! `bytes_sent` counts the steps only (not the final read-back).

use std::process::ExitCode;
use std::time::Instant;

use ember::flow::{Buffer, Flow, FlowOptions};

/// One grid example.
pub struct Example {
    /// The first word of its line.
    pub name: &'static str,
    /// `--n` and `--steps` when not given.
    pub defaults: (usize, usize),
    /// Submits the whole run on an `n`×`n` grid; returns the buffer of the final grid.
    pub simulate: fn(&Flow, usize, usize) -> Buffer<f64, 2>,
    /// The same run without the flow: the final grid, row-major.
    pub sequential: fn(usize, usize) -> Vec<f64>,
}

/// Runs `example` on this rank of the job (see the module doc).
pub fn run(example: Example) -> ExitCode {
    let (n, steps) = (
        flag("--n", example.defaults.0),
        flag("--steps", example.defaults.1),
    );
    let world = ember_mpi::World::init().expect("starting MPI");
    // `--local`: a plain one-process flow, whatever the build (what the lab compares with).
    let local = std::env::args().any(|a| a == "--local");
    let pool = ember_mpi::rank_pool(if local { 1 } else { world.ranks() });
    let flow = if local {
        Flow::new(&pool, FlowOptions::default())
    } else {
        world.flow(&pool, FlowOptions::default())
    };
    let start = Instant::now();
    let last = (example.simulate)(&flow, n, steps);
    if let Err(e) = flow.wait() {
        eprintln!("rank {}: {e}", world.rank());
        return ExitCode::FAILURE;
    }
    let stats = flow.transfer_stats();
    let result = match flow.read_back(&last) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("rank {}: {e}", world.rank());
            return ExitCode::FAILURE;
        }
    };
    let time = start.elapsed().as_secs_f64();
    let mut line = format!(
        "{} rank={} ranks={} n={n} steps={steps} time_s={time:.6} bytes_sent={} \
         messages_sent={} result={:016x}",
        example.name,
        world.rank(),
        world.ranks(),
        stats.bytes_sent,
        stats.messages_sent,
        hash(&result)
    );
    let mut ok = true;
    if world.rank() == 0 {
        ok = result
            .iter()
            .map(|v| v.to_bits())
            .eq((example.sequential)(n, steps).iter().map(|v| v.to_bits()));
        line += &format!(" matches_sequential={ok}");
    }
    println!("{line}");
    drop(flow);
    if ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

/// The number after flag `name`, or `default`.
fn flag(name: &str, default: usize) -> usize {
    let args: Vec<String> = std::env::args().collect();
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1))
        .map(|v| {
            v.parse()
                .unwrap_or_else(|_| panic!("{name} takes a number"))
        })
        .unwrap_or(default)
}

/// FNV-1a over the bits of every value: one number to compare runs by.
fn hash(values: &[f64]) -> u64 {
    values.iter().fold(0xcbf2_9ce4_8422_2325, |h, v| {
        v.to_bits()
            .to_le_bytes()
            .iter()
            .fold(h, |h, b| (h ^ *b as u64).wrapping_mul(0x100_0000_01b3))
    })
}
