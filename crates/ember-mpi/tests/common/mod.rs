//! Running the examples from tests: where cargo put them, and a run with a deadline.

use std::path::PathBuf;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

/// The example binary `name`, built by `cargo test` beside this test's own binary.
pub fn example(name: &str) -> PathBuf {
    let exe = std::env::current_exe().expect("the test binary");
    let dir = exe
        .parent()
        .and_then(|deps| deps.parent())
        .expect("target/<profile>/deps");
    let path = dir.join("examples").join(name);
    assert!(
        path.exists(),
        "{} is missing: run the whole package's tests (cargo test -p ember-mpi), which build \
         the examples",
        path.display()
    );
    path
}

/// Runs `command`, killing it (and failing the test) after `limit`: a hang is a failure.
pub fn run(mut command: Command, limit: Duration) -> Output {
    let shown = format!("{command:?}");
    let mut child = command
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("{shown}: {e}"));
    let start = Instant::now();
    loop {
        if child.try_wait().expect("waiting for the child").is_some() {
            return child.wait_with_output().expect("the child's output");
        }
        if start.elapsed() > limit {
            let _ = child.kill();
            let out = child.wait_with_output().expect("the child's output");
            panic!(
                "{shown} still ran after {limit:?} (a hang)\nstdout:\n{}\nstderr:\n{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The value of `key=` on a line of the examples' output.
pub fn field<'a>(line: &'a str, key: &str) -> Option<&'a str> {
    line.split_whitespace()
        .find_map(|w| w.strip_prefix(key).and_then(|v| v.strip_prefix('=')))
}
