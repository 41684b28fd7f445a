//! The examples on 1, 2 and 4 ranks under mpirun (feature `mpi`): results equal to one
//! rank's, uneven parts, more ranks than rows, a panicking rank, divergent graphs, calls
//! that not every rank makes, panics on the thread that owns the world, more messages
//! between two ranks than MPI has tags, flows dropped with messages in flight (on workers
//! too, with one rank slower than the give-up time), a world dropped on a worker, a send
//! that no rank receives, and a flow that outlives its world.
#![cfg(feature = "mpi")]

mod common;

use std::process::{Command, Output};
use std::time::Duration;

use common::{example, field, run};

fn mpirun(ranks: usize, name: &str, args: &[&str]) -> Output {
    mpirun_within(ranks, name, args, 300)
}

/// [`mpirun`] under `timeout`, which stops the job (mpirun passes the signal on to every
/// rank) once it has run `limit_s` seconds: a hang ends as a failure with exit code 124.
fn mpirun_within(ranks: usize, name: &str, args: &[&str], limit_s: u64) -> Output {
    mpirun_with(ranks, name, args, limit_s, &[])
}

/// [`mpirun_within`] with the variables `env` set for every rank.
fn mpirun_with(
    ranks: usize,
    name: &str,
    args: &[&str],
    limit_s: u64,
    env: &[(&str, &str)],
) -> Output {
    let mut c = Command::new("timeout");
    c.args(["--kill-after=10", &limit_s.to_string(), "mpirun"]);
    c.args([
        "--allow-run-as-root",
        "--oversubscribe",
        "-n",
        &ranks.to_string(),
    ])
    .arg(example(name))
    .args(args)
    // One worker per rank: up to 4 ranks share this machine's cores.
    .env("EMBER_NUM_THREADS", "1")
    // A dropped world gives up on unmatched messages after a second, not the default ten.
    .env("EMBER_MPI_GIVE_UP_MS", "1000")
    .envs(env.iter().copied());
    run(c, Duration::from_secs(limit_s + 60))
}

/// The fault example's `case` on `ranks` ranks, stopped after a minute if it hangs: its
/// exit status and everything it printed.
fn fault(ranks: usize, case: &str) -> (std::process::ExitStatus, String) {
    fault_with(ranks, case, &[])
}

/// [`fault`] with the variables `env` set for every rank.
fn fault_with(
    ranks: usize,
    case: &str,
    env: &[(&str, &str)],
) -> (std::process::ExitStatus, String) {
    let out = mpirun_with(ranks, "mpi_faults", &["--case", case], 60, env);
    let all = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status, all)
}

/// Runs `name` on `ranks` ranks; checks every rank printed the same result and rank 0
/// matched the sequential run; returns the result and the bytes every rank sent.
fn result(ranks: usize, name: &str, n: usize, steps: usize) -> (String, Vec<u64>) {
    let (n, steps) = (n.to_string(), steps.to_string());
    let out = mpirun(ranks, name, &["--n", &n, "--steps", &steps]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{name} on {ranks} ranks: {stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let lines: Vec<&str> = stdout.lines().filter(|l| l.starts_with(name)).collect();
    assert_eq!(lines.len(), ranks, "{stdout}");
    let results: Vec<&str> = lines.iter().filter_map(|l| field(l, "result")).collect();
    assert!(results.iter().all(|r| *r == results[0]), "{stdout}");
    let rank0 = lines
        .iter()
        .find(|l| field(l, "rank") == Some("0"))
        .unwrap();
    assert_eq!(field(rank0, "matches_sequential"), Some("true"), "{rank0}");
    let sent = lines
        .iter()
        .map(|l| field(l, "bytes_sent").unwrap().parse().unwrap())
        .collect();
    (results[0].to_string(), sent)
}

#[test]
fn every_example_gives_one_ranks_result_on_2_and_4_ranks() {
    // 30 rows over 4 ranks: parts of 7 and 8 rows.
    for (name, n, steps) in [("wave_sim", 30, 8), ("jacobi", 30, 6)] {
        let (one, sent) = result(1, name, n, steps);
        assert_eq!(sent, [0]);
        for ranks in [2, 4] {
            let (many, sent) = result(ranks, name, n, steps);
            assert_eq!(many, one, "{name} on {ranks} ranks");
            assert!(
                sent.iter().sum::<u64>() > 0,
                "{name} moved nothing on {ranks} ranks"
            );
        }
    }
}

#[test]
fn wave_sim_moves_exactly_its_halo_rows() {
    // Steps 1..=steps read rows the neighbouring parts wrote in the step before: one row of
    // n doubles each way across each of the ranks - 1 boundaries.
    let (n, steps) = (24, 5);
    for ranks in [2, 4] {
        let (_, sent) = result(ranks, "wave_sim", n, steps);
        let expected = (steps * 2 * (ranks - 1) * n * 8) as u64;
        assert_eq!(sent.iter().sum::<u64>(), expected, "{ranks} ranks");
    }
}

#[test]
fn more_ranks_than_rows() {
    for name in ["wave_sim", "jacobi"] {
        let (one, _) = result(1, name, 3, 4);
        let (four, _) = result(4, name, 3, 4);
        assert_eq!(four, one, "{name}");
    }
}

#[test]
fn a_panicking_rank_ends_the_job_with_its_message() {
    let out = mpirun(2, "mpi_faults", &["--case", "panic"]);
    assert!(!out.status.success());
    let all = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(all.contains("deliberate failure in step 1"), "{all}");
    // ember's own line, not mpirun's MPI_ABORT banner: Open MPI builds differ in
    // whether (and how well) they print that help text.
    assert!(
        all.contains("a kernel panicked") && all.contains("ending the job"),
        "{all}"
    );
}

#[test]
fn divergent_graphs_are_an_error_not_a_hang() {
    for ranks in [2, 4] {
        let out = mpirun(ranks, "mpi_faults", &["--case", "diverge"]);
        assert!(!out.status.success());
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            stderr.contains("command group #1 differs") && stderr.contains("`step 1`"),
            "{stderr}"
        );
    }
}

#[test]
fn the_fault_example_without_a_fault_succeeds_on_4_ranks() {
    let out = mpirun(4, "mpi_faults", &["--case", "fine"]);
    assert!(out.status.success(), "{out:?}");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        stdout
            .lines()
            .filter(|l| l.contains(": ok, sum 1920"))
            .count(),
        4
    );
}

#[test]
fn messages_whose_tags_are_equal_modulo_the_mpi_tag_range_reach_their_own_receives() {
    // The case's check of the data fails if the first message's receive got the last one.
    let (status, all) = fault(2, "tag-wrap");
    assert!(status.success(), "{all}");
    assert_eq!(all.matches(": ok, ").count(), 2, "{all}");
}

#[test]
fn a_read_back_on_one_rank_is_an_error_on_every_rank_not_a_hang() {
    for ranks in [2, 3] {
        let (status, all) = fault(ranks, "read-back-on-one-rank");
        assert_ne!(status.code(), Some(124), "the job hung: {all}");
        assert!(!status.success(), "{all}");
        let calls = (1..ranks).fold(
            "rank 0: Flow::read_back of buffer #1".to_string(),
            |s, r| format!("{s}; rank {r}: Flow::wait"),
        );
        for rank in 0..ranks {
            let call = if rank == 0 {
                "Flow::read_back of buffer #1"
            } else {
                "Flow::wait"
            };
            let line = format!("rank {rank}: {call} is collective, but the ranks made different calls here ({calls})");
            assert!(all.contains(&line), "{line}\nnot in\n{all}");
        }
    }
}

#[test]
fn a_panic_caught_on_the_thread_that_owns_the_world_does_not_end_the_job() {
    let (status, all) = fault(2, "caught-panic");
    assert!(all.contains("a deliberate panic, caught"), "{all}");
    assert!(status.success(), "{all}");
    assert_eq!(all.matches(": ok, sum 1920").count(), 2, "{all}");
}

#[test]
fn an_uncaught_panic_on_the_thread_that_owns_the_world_ends_the_job_with_its_message() {
    let (status, all) = fault(2, "main-panic");
    assert_ne!(status.code(), Some(124), "the job hung: {all}");
    assert!(!status.success(), "{all}");
    assert!(
        all.contains("rank 1: a deliberate panic on the main thread"),
        "{all}"
    );
    assert!(
        all.contains("rank 1: the thread that owns the World panicked; ending the job"),
        "{all}"
    );
}

#[test]
fn dropping_a_flow_with_messages_in_flight_ends_the_job_cleanly() {
    // Without waiting for its messages, the dropped world of the reading rank would give up
    // on its open receive and end the job, and rank 0 would send after its world is gone.
    let (status, all) = fault(2, "drop-in-flight");
    assert!(status.success(), "{all}");
    assert_eq!(all.matches(": ok, sum ").count(), 2, "{all}");
}

#[test]
fn a_world_dropped_while_a_flow_dropped_on_a_worker_still_settles_waits_for_it() {
    // The flow's drop, made on a worker, goes on on a thread of its own while the halo is
    // still held back; the world, dropped meanwhile, must neither close its channel under
    // that drop's last messages nor give up on the halo's receive.
    let (status, all) = fault(2, "drop-on-worker");
    assert!(status.success(), "{all}");
    assert_eq!(all.matches(": ok, sum ").count(), 2, "{all}");
}

#[test]
fn a_rank_slower_than_the_give_up_time_at_the_end_does_not_end_a_correct_job() {
    // The drops made on workers wait, on threads of their own, for the slowest rank: in
    // their check, for their tasks (a halo that rank sends), or in their last round, for its
    // outcome. Nothing moves meanwhile for longer than the give-up time (a second here);
    // the worlds wait for those drops as for a drop on their own thread.
    for ranks in [3, 4] {
        for case in ["drop-on-worker", "uneven-drop-on-worker"] {
            let (status, all) = fault(ranks, case);
            assert!(status.success(), "{case} on {ranks} ranks: {all}");
            assert_eq!(all.matches(": ok, ").count(), ranks, "{case}: {all}");
        }
    }
}

#[test]
fn a_world_dropped_on_a_worker_runs_the_tasks_its_flows_drops_wait_for() {
    let (status, all) = fault(2, "world-on-worker");
    assert_ne!(status.code(), Some(124), "the job hung: {all}");
    assert!(status.success(), "{all}");
    assert_eq!(all.matches(": ok, ").count(), 2, "{all}");
}

#[test]
fn a_send_that_no_rank_receives_ends_the_job_not_a_hang() {
    let (status, all) = fault(2, "unreceived-send");
    assert_ne!(status.code(), Some(124), "the job hung: {all}");
    assert!(!status.success(), "{all}");
    assert!(all.contains("command group #1 differs"), "{all}");
    assert!(
        all.contains("rank 0: a message sent to rank 1 was never received; ending the job"),
        "{all}"
    );
}

#[test]
fn a_give_up_time_that_is_not_a_number_is_reported_and_the_default_used() {
    let (status, all) = fault_with(2, "unreceived-send", &[("EMBER_MPI_GIVE_UP_MS", "soon")]);
    assert_ne!(status.code(), Some(124), "the job hung: {all}");
    assert!(!status.success(), "{all}");
    assert!(
        all.contains("ember-mpi: EMBER_MPI_GIVE_UP_MS=\"soon\" is not a number of milliseconds; using 10000 ms"),
        "{all}"
    );
    assert!(
        all.contains("rank 0: a message sent to rank 1 was never received; ending the job"),
        "{all}"
    );
}

#[test]
fn a_flow_that_outlives_its_world_ends_its_process_without_calling_mpi_after_finalize() {
    let (status, all) = fault(2, "world-before-flow");
    assert_ne!(status.code(), Some(124), "the job hung: {all}");
    assert!(!status.success(), "{all}");
    assert!(all.contains("after the World was dropped"), "{all}");
    // Whichever rank ends first; mpirun may stop the other before it prints.
    assert!(
        all.contains("MPI is finalising or finalised, so MPI_Abort is not allowed"),
        "{all}"
    );
}
