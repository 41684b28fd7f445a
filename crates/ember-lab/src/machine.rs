//! The machine a report was measured on: core count, kernel, and whether the kernel lets
//! this process count scheduler events.

use serde::{Deserialize, Serialize};

/// `report.json`'s `machine` object.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Machine {
    /// `available_parallelism` of this process.
    pub cores: usize,
    /// Kernel release (`/proc/sys/kernel/osrelease`).
    pub kernel: String,
    /// Whether `perf_ctx_switches` and `migrations` were measured.
    pub perf_counters: bool,
}

/// Where a report's numbers come from: `report.json`'s `provenance` object.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Provenance {
    /// `git rev-parse HEAD` of the lab's source tree, `-dirty` when it has changes.
    pub commit: String,
    /// The compiler the lab was built with.
    pub rustc: String,
    /// Peer crates and their versions, from `Cargo.lock`.
    pub peer_versions: std::collections::BTreeMap<String, String>,
    /// `go version` of the Go peer's toolchain, if its rows ran.
    pub go: Option<String>,
    /// `/proc/cpuinfo`'s model name.
    pub cpu_model: String,
    /// `/proc/loadavg`'s 1/5/15-minute averages when the lab started.
    pub load_average: Option<String>,
}

impl Provenance {
    pub fn detect(info: &MachineInfo) -> Provenance {
        let git = |args: &[&str]| {
            std::process::Command::new("git")
                .args(args)
                .current_dir(env!("CARGO_MANIFEST_DIR"))
                .output()
                .ok()
                .filter(|o| o.status.success())
                .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        };
        let commit = match git(&["rev-parse", "HEAD"]) {
            Some(c) => match git(&["status", "--porcelain", "--untracked-files=no"]) {
                Some(s) if !s.is_empty() => format!("{c}-dirty"),
                _ => c,
            },
            None => "unknown (not a git checkout)".into(),
        };
        let cpu_model = std::fs::read_to_string("/proc/cpuinfo")
            .ok()
            .and_then(|t| {
                t.lines()
                    .find(|l| l.starts_with("model name"))
                    .and_then(|l| l.split_once(':'))
                    .map(|(_, m)| m.trim().to_string())
            })
            .unwrap_or_else(|| "unknown".into());
        Provenance {
            commit,
            rustc: env!("EMBER_LAB_RUSTC").to_string(),
            peer_versions: env!("EMBER_LAB_PEERS")
                .split(',')
                .filter_map(|p| p.split_once('='))
                .map(|(n, v)| (n.to_string(), v.to_string()))
                .collect(),
            go: crate::go_peer::version(),
            cpu_model,
            load_average: info.load_average.clone(),
        }
    }
}

/// [`Machine`] plus the reason perf counters are missing, shown in tables and `report.md`.
#[derive(Clone, Debug)]
pub struct MachineInfo {
    pub machine: Machine,
    pub perf_unavailable: Option<String>,
    /// `/proc/loadavg`'s 1/5/15-minute averages when the lab started: other processes on
    /// these cores make wall times noisier, and the report says so.
    pub load_average: Option<String>,
}

pub fn cores() -> usize {
    std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1)
}

impl MachineInfo {
    /// Describes this machine, probing the perf counters once.
    pub fn detect() -> MachineInfo {
        let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease")
            .map(|s| s.trim().to_string())
            .unwrap_or_else(|_| "unknown".into());
        let perf = crate::metrics::perf::probe();
        MachineInfo {
            machine: Machine {
                cores: cores(),
                kernel,
                perf_counters: perf.is_ok(),
            },
            perf_unavailable: perf.err(),
            load_average: std::fs::read_to_string("/proc/loadavg")
                .ok()
                .map(|l| l.split_whitespace().take(3).collect::<Vec<_>>().join(" ")),
        }
    }

    /// One line naming the machine and what oversubscription means on it.
    pub fn describe(&self) -> String {
        let m = &self.machine;
        let perf = match &self.perf_unavailable {
            None => "perf software counters: available".to_string(),
            Some(r) => format!("perf software counters: n/a ({r})"),
        };
        let load = match &self.load_average {
            Some(l) => format!("; load average at start {l}"),
            None => String::new(),
        };
        format!(
            "Machine: {} cores, Linux {}; {}{}.\nWorker counts above {} are oversubscription on {} cores, not real scaling.",
            m.cores, m.kernel, perf, load, m.cores, m.cores
        )
    }
}
