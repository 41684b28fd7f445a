//! The global pool the free functions use outside every pool: sized by `EMBER_NUM_THREADS`
//! (0 meaning automatic), configured once by `build_global`.
//!
//! The global pool is per process, so each case runs in a child process: the parent reruns
//! this test binary on one `#[ignore]`d `child_*` test, with the environment it needs, and
//! checks what the child printed.

use std::process::Command;

/// Runs `child` (a `child_*` test of this file) in a fresh process with `EMBER_NUM_THREADS` set
/// to `var` (or unset); returns its stdout and stderr.
fn run_child(child: &str, var: Option<&str>) -> (String, String) {
    let mut command = Command::new(std::env::current_exe().unwrap());
    command.args([
        "--exact",
        child,
        "--ignored",
        "--nocapture",
        "--test-threads=1",
    ]);
    match var {
        Some(value) => command.env("EMBER_NUM_THREADS", value),
        None => command.env_remove("EMBER_NUM_THREADS"),
    };
    let output = command.output().expect("the test binary reruns");
    let (stdout, stderr) = (
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    );
    assert!(
        output.status.success(),
        "{child} failed:\n{stdout}\n{stderr}"
    );
    (stdout, stderr)
}

fn cpus() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

#[test]
fn ember_num_threads_sizes_the_global_pool() {
    let (out, _) = run_child("child_print_threads", Some("3"));
    assert!(out.contains("threads=3"), "{out}");
}

#[test]
fn zero_or_unset_means_one_thread_per_cpu() {
    for var in [Some("0"), None] {
        let (out, _) = run_child("child_print_threads", var);
        assert!(
            out.contains(&format!("threads={}", cpus())),
            "{var:?}: {out}"
        );
    }
}

#[test]
fn an_unparsable_value_warns_and_falls_back() {
    let (out, err) = run_child("child_print_threads", Some("many"));
    assert!(out.contains(&format!("threads={}", cpus())), "{out}");
    assert_eq!(
        err.matches("EMBER_NUM_THREADS").count(),
        1,
        "one line: {err}"
    );
}

#[test]
fn build_global_reports_an_unparsable_value() {
    let (out, _) = run_child("child_build_global_sized_by_the_variable", Some("many"));
    assert!(out.contains("error: EMBER_NUM_THREADS=\"many\""), "{out}");
    // An explicit `threads(n)` wins over the variable, as in rayon.
    let (out, _) = run_child("child_build_global", Some("many"));
    assert!(out.contains("first: ok"), "{out}");
}

#[test]
fn build_global_configures_the_pool_once() {
    let (out, _) = run_child("child_build_global", None);
    assert!(out.contains("first: ok"), "{out}");
    assert!(out.contains("threads=2"), "{out}");
    assert!(
        out.contains("second: the global pool exists already"),
        "{out}"
    );
}

#[test]
#[ignore = "run by the tests above, in a child process"]
fn child_print_threads() {
    println!("threads={}", ember::current_num_threads());
    assert_eq!(ember::join(|| 1, || 2), (1, 2));
}

#[test]
#[ignore = "run by the tests above, in a child process"]
fn child_build_global() {
    match ember::Pool::builder().threads(2).build_global() {
        Ok(()) => println!("first: ok"),
        Err(error) => {
            println!("error: {error}");
            return;
        }
    }
    println!("threads={}", ember::current_num_threads());
    match ember::Pool::builder().build_global() {
        Ok(()) => println!("second: ok"),
        Err(error) => println!("second: {error}"),
    }
}

#[test]
#[ignore = "run by the tests above, in a child process"]
fn child_build_global_sized_by_the_variable() {
    match ember::Pool::builder().build_global() {
        Ok(()) => println!("ok: threads={}", ember::current_num_threads()),
        Err(error) => println!("error: {error}"),
    }
}

#[test]
fn a_thread_count_too_large_is_an_error_or_a_fallback() {
    let absurd = "1000000000000";
    let (out, _) = run_child("child_build_global_sized_by_the_variable", Some(absurd));
    assert!(out.contains("error: "), "{out}");
    assert!(out.contains("threads"), "{out}");
    let (out, err) = run_child("child_print_threads", Some(absurd));
    assert!(out.contains(&format!("threads={}", cpus())), "{out}");
    assert!(
        err.contains("the global pool uses one thread per CPU"),
        "{err}"
    );
}
