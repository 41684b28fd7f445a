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
    /// Size of the last-level cache in bytes, where the kernel lists it
    /// ([`last_level_cache_bytes`]); absent from reports written before it was recorded.
    #[serde(default)]
    pub last_level_cache_bytes: Option<u64>,
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

/// The size in bytes of the largest cache the kernel lists for processor 0
/// (`/sys/devices/system/cpu/cpu0/cache/index*/size`): the last level, which every core here
/// shares, and on a virtual machine maybe other tenants too. A workload whose data is about
/// that size runs at a speed set by how much of the cache others leave it.
pub fn last_level_cache_bytes() -> Option<u64> {
    let dir = std::fs::read_dir("/sys/devices/system/cpu/cpu0/cache").ok()?;
    dir.filter_map(|entry| {
        let path = entry.ok()?.path();
        let kind = std::fs::read_to_string(path.join("type")).ok()?;
        if kind.trim() == "Instruction" {
            return None;
        }
        parse_cache_size(&std::fs::read_to_string(path.join("size")).ok()?)
    })
    .max()
}

/// `32768K` (sysfs' spelling) as bytes; `K`, `M` and `G` suffixes, or none.
fn parse_cache_size(text: &str) -> Option<u64> {
    let text = text.trim();
    let (digits, unit) = match text.char_indices().last()? {
        (i, 'K') => (&text[..i], 1 << 10),
        (i, 'M') => (&text[..i], 1 << 20),
        (i, 'G') => (&text[..i], 1 << 30),
        _ => (text, 1),
    };
    digits.parse::<u64>().ok()?.checked_mul(unit)
}

/// `32 MiB`, `512 KiB`: a byte count in the largest binary unit it fills, rounded to the
/// nearest.
pub fn binary_size(bytes: u64) -> String {
    match bytes {
        b if b >= 1 << 30 => format!("{} GiB", (b + (1 << 29)) >> 30),
        b if b >= 1 << 20 => format!("{} MiB", (b + (1 << 19)) >> 20),
        b if b >= 1 << 10 => format!("{} KiB", (b + (1 << 9)) >> 10),
        b => format!("{b} B"),
    }
}

/// Runs `f` with the calling thread restricted to the first `cpus` processors it may run on,
/// then restores its mask. Threads `f` starts inherit the restriction, so a pool built
/// inside `f` runs on `cpus` processors whatever the machine's width: a row at `w` workers
/// on a wider machine measures `w` workers on `w` cores, not `w` threads spread over all of
/// them. Where `cpus` covers every allowed processor, or the kernel refuses, `f` runs as is.
pub fn on_cpus<R>(cpus: usize, f: impl FnOnce() -> R) -> R {
    // SAFETY: `cpu_set_t` is plain bits; both calls get its true size, and pid 0 is the
    // calling thread.
    let mut allowed: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    let size = std::mem::size_of::<libc::cpu_set_t>();
    if unsafe { libc::sched_getaffinity(0, size, &mut allowed) } != 0 {
        return f();
    }
    let ids: Vec<usize> = (0..libc::CPU_SETSIZE as usize)
        .filter(|&c| unsafe { libc::CPU_ISSET(c, &allowed) })
        .collect();
    if cpus == 0 || cpus >= ids.len() {
        return f();
    }
    let mut narrow: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    for &c in &ids[..cpus] {
        unsafe { libc::CPU_SET(c, &mut narrow) };
    }
    if unsafe { libc::sched_setaffinity(0, size, &narrow) } != 0 {
        return f();
    }
    // Restored on unwind too: a panicking run must not leave the harness narrowed.
    struct Restore(libc::cpu_set_t);
    impl Drop for Restore {
        fn drop(&mut self) {
            let size = std::mem::size_of::<libc::cpu_set_t>();
            // SAFETY: as above.
            unsafe { libc::sched_setaffinity(0, size, &self.0) };
        }
    }
    let _restore = Restore(allowed);
    f()
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
                last_level_cache_bytes: last_level_cache_bytes(),
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
        let cache = match m.last_level_cache_bytes {
            Some(bytes) => format!(", last-level cache {}", binary_size(bytes)),
            None => String::new(),
        };
        format!(
            "Machine: {} cores{}, Linux {}; {}{}.\nWorker counts above {} are oversubscription on {} cores, not real scaling.",
            m.cores, cache, m.kernel, perf, load, m.cores, m.cores
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cache_sizes_parse_in_sysfs_spelling() {
        assert_eq!(parse_cache_size("32768K\n"), Some(32 << 20));
        assert_eq!(parse_cache_size("512K"), Some(512 << 10));
        assert_eq!(parse_cache_size("2M"), Some(2 << 20));
        assert_eq!(parse_cache_size("4096"), Some(4096));
        assert_eq!(parse_cache_size("K"), None);
        assert_eq!(parse_cache_size("lots"), None);
    }

    #[test]
    fn a_narrowed_run_sees_its_processors_and_the_mask_comes_back() {
        let before = cores();
        let inside = on_cpus(1, || {
            let inner = std::thread::spawn(cores).join().unwrap();
            (cores(), inner)
        });
        assert_eq!(inside, (1, 1));
        assert_eq!(cores(), before);
        assert_eq!(on_cpus(before, cores), before);
    }

    #[test]
    fn sizes_print_in_the_largest_unit_they_fill() {
        assert_eq!(binary_size(32 << 20), "32 MiB");
        assert_eq!(binary_size(24 << 10), "24 KiB");
        assert_eq!(binary_size(3 << 30), "3 GiB");
        assert_eq!(binary_size(100), "100 B");
    }
}
