//! The examples as one process (with or without the `mpi` feature: a process not started by
//! mpirun is a job of one rank): they compute real grids that match a sequential run.

mod common;

use std::process::Command;
use std::time::Duration;

use common::{example, field, run};

#[test]
fn each_example_matches_its_sequential_run() {
    for (name, n, steps) in [("wave_sim", 33, 9), ("jacobi", 29, 7), ("wave_sim", 3, 2)] {
        let mut c = Command::new(example(name));
        c.args(["--n", &n.to_string(), "--steps", &steps.to_string()]);
        let out = run(c, Duration::from_secs(120));
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "{name}: {stdout}");
        let line = stdout.lines().next().expect("one line");
        assert_eq!(field(line, "matches_sequential"), Some("true"), "{line}");
        assert_eq!(field(line, "ranks"), Some("1"));
        assert_eq!(
            field(line, "bytes_sent"),
            Some("0"),
            "one rank sends nothing"
        );
    }
}

#[test]
fn a_panicking_kernel_fails_the_run_with_its_message() {
    let mut c = Command::new(example("mpi_faults"));
    c.args(["--case", "panic"]);
    let out = run(c, Duration::from_secs(120));
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("deliberate failure in step 1"), "{stderr}");
}

#[test]
fn the_fault_example_without_a_fault_succeeds() {
    let mut c = Command::new(example("mpi_faults"));
    c.args(["--case", "fine"]);
    let out = run(c, Duration::from_secs(120));
    assert!(out.status.success(), "{out:?}");
}
