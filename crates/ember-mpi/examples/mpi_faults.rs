//! What a distributed job does when it goes wrong; the MPI tests run it.
//!
//! `--case panic`: the last rank's kernel panics in the second step; the job ends with the
//! panic's message and a non-zero exit (`MPI_Abort`), and no rank hangs.
//! `--case diverge`: the last rank declares a wider halo in its second step; every rank's
//! `wait` reports the first divergent command group and the example exits non-zero.
//! `--case fine`: the same program without a fault (exits zero).
//!
//! Run as one process (`cargo run -p ember-mpi --example mpi_faults -- --case panic`) or
//! under `mpirun -n N` with the `mpi` feature.

use std::process::ExitCode;

use ember::flow::{map, Buffer, FlowOptions};

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().collect();
    let case = args
        .iter()
        .position(|a| a == "--case")
        .and_then(|i| args.get(i + 1))
        .cloned()
        .unwrap_or_else(|| "fine".into());
    let world = ember_mpi::World::init().expect("starting MPI");
    let pool = ember_mpi::rank_pool(world.ranks());
    let flow = world.flow(&pool, FlowOptions::default());
    let last = world.rank() + 1 == world.ranks();
    let n = 16;
    let bufs = [
        Buffer::new(&flow, [n], |[i]| i as u64),
        Buffer::new(&flow, [n], |_| 0u64),
    ];
    for step in 0..4 {
        let (src, dst) = (&bufs[step % 2], &bufs[(step + 1) % 2]);
        let halo = if case == "diverge" && last && step == 1 {
            2
        } else {
            1
        };
        let fail = case == "panic" && last && step == 1;
        let rank = world.rank();
        flow.submit(|cg| {
            let src = src.read(cg, map::neighbourhood([halo]));
            let dst = dst.write(cg, map::one_to_one());
            cg.label(format!("step {step}"))
                .parallel_for([n], move |chunk| {
                    assert!(!fail, "rank {rank}: deliberate failure in step {step}");
                    let (src, mut dst) = (chunk.read(&src), chunk.write(&dst));
                    for [i] in chunk.items() {
                        dst[[i]] = src[[i.saturating_sub(1)]] + src[[(i + 1).min(n - 1)]];
                    }
                });
        })
        .expect("submitting a step");
    }
    match flow.wait().and_then(|()| flow.read_back(&bufs[0])) {
        Ok(values) => {
            println!(
                "rank {}: ok, sum {}",
                world.rank(),
                values.iter().sum::<u64>()
            );
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("rank {}: {e}", world.rank());
            ExitCode::FAILURE
        }
    }
}
