//! Go's runtime as a peer: the program in `go/` beside this crate, built once per lab run
//! when `go` is on `PATH`, run as a child process per measured run. Where the program was
//! built beforehand (a machine with no Go toolchain: `scripts/wide.sh --pack`), the
//! environment variable `EMBER_LAB_GO_PEER` names it, and the lab runs that instead.
//!
//! The harness measures the child like any run (wall time; `getrusage` of waited-for
//! children; perf counters, which follow it through fork and exec), and the program prints
//! its own metrics as `name value` lines. Without `go`, or if the build fails, the rows are
//! left out and [`status`] says why, in one line.

use crate::experiment::Metrics;
use std::path::PathBuf;
use std::process::Command;
use std::sync::OnceLock;

/// The Go program's source directory.
const SOURCE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/go");

/// The built program, or why there is none.
fn built() -> &'static Result<(PathBuf, String), String> {
    static BUILT: OnceLock<Result<(PathBuf, String), String>> = OnceLock::new();
    BUILT.get_or_init(build)
}

/// The variable naming a prebuilt program.
const PREBUILT: &str = "EMBER_LAB_GO_PEER";

fn build() -> Result<(PathBuf, String), String> {
    if let Some(exe) = std::env::var_os(PREBUILT) {
        return prebuilt(PathBuf::from(exe));
    }
    let version = Command::new("go")
        .arg("version")
        .output()
        .map_err(|_| "`go` is not on PATH".to_string())?;
    let version = String::from_utf8_lossy(&version.stdout)
        .split_whitespace()
        .nth(2)
        .unwrap_or("go")
        .to_string();
    let dir = crate::report::default_out_dir().join("go-peer");
    std::fs::create_dir_all(&dir).map_err(|e| format!("creating {}: {e}", dir.display()))?;
    let exe = dir.join("ember-go-peer");
    let out = Command::new("go")
        .args(["build", "-o"])
        .arg(&exe)
        .arg(".")
        .current_dir(SOURCE)
        .output()
        .map_err(|e| format!("running `go build`: {e}"))?;
    if !out.status.success() {
        let why = String::from_utf8_lossy(&out.stderr);
        return Err(format!(
            "`go build` in {SOURCE} failed: {}",
            why.lines().next().unwrap_or("no message")
        ));
    }
    Ok((exe, version))
}

/// The program `EMBER_LAB_GO_PEER` names, and the Go release it reports it was built with.
fn prebuilt(exe: PathBuf) -> Result<(PathBuf, String), String> {
    let out = Command::new(&exe)
        .arg("version")
        .output()
        .map_err(|e| format!("{PREBUILT}={}: {e}", exe.display()))?;
    if !out.status.success() {
        return Err(format!(
            "{PREBUILT}={}: `version` failed ({})",
            exe.display(),
            out.status
        ));
    }
    let version = String::from_utf8_lossy(&out.stdout).trim().to_string();
    Ok((exe, version))
}

/// Whether the Go rows run (builds the program on the first call).
pub fn available() -> bool {
    built().is_ok()
}

/// One line for the terminal and the report: the Go version used, or why the rows are absent.
pub fn status() -> String {
    match built() {
        Ok((_, version)) => {
            format!("Go peer: {version} (rows `go` in cycle, light-load and producer-consumer)")
        }
        Err(why) => format!("Go peer: skipped, {why}"),
    }
}

/// The Go version the rows ran with, if they ran.
pub fn version() -> Option<String> {
    built().as_ref().ok().map(|(_, v)| v.clone())
}

/// Runs the program with `args` and returns the metrics it printed. A failing child panics
/// the run, as any row whose result is wrong does.
pub fn run(args: &[String]) -> Metrics {
    let (exe, _) = built()
        .as_ref()
        .expect("Go rows are only built when the program is");
    let out = Command::new(exe)
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("running {}: {e}", exe.display()));
    assert!(
        out.status.success(),
        "the Go peer failed ({}): {}",
        out.status,
        String::from_utf8_lossy(&out.stderr).trim()
    );
    parse(&String::from_utf8_lossy(&out.stdout))
}

/// `name value` lines to metrics; other lines are ignored.
fn parse(text: &str) -> Metrics {
    text.lines()
        .filter_map(|l| {
            let (name, value) = l.split_once(' ')?;
            Some((name.to_string(), value.trim().parse().ok()?))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_metric_lines() {
        let m = parse("ops_per_s 1.5e+06\nnoise\nns_per_op 666.7\n");
        assert_eq!(m["ops_per_s"], 1.5e6);
        assert_eq!(m["ns_per_op"], 666.7);
        assert_eq!(m.len(), 2);
    }

    /// Where `go` is installed, the program builds and each workload reports its metrics.
    #[test]
    fn runs_every_workload_when_go_is_here() {
        if !available() {
            eprintln!("{}", status());
            return;
        }
        let args = |a: &[&str]| a.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let m = run(&args(&["cycle", "4", "2", "4", "1000", "1"]));
        assert!(m["ops_per_s"] > 0.0);
        let m = run(&args(&["light-load", "2", "100", "50"]));
        assert!(m["latency_p50_us"] <= m["latency_p99_us"]);
        let m = run(&args(&["producer-consumer", "2", "3", "20", "100", "100"]));
        assert_eq!(m["items"], 60.0);
    }
}
