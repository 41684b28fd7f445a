//! Records what the lab was built with, for `report.json`'s provenance: the compiler's version
//! and the versions of the peer crates in the workspace's `Cargo.lock`.

use std::process::Command;

/// The crates whose rows the lab compares ember with.
const PEERS: &[&str] = &[
    "rayon",
    "rayon-core",
    "tokio",
    "crossbeam-channel",
    "crossbeam-deque",
    "crossbeam-queue",
    "crossbeam-utils",
    "rtrb",
    "chili",
    "lz4_flex",
];

fn main() {
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    let version = Command::new(rustc)
        .arg("--version")
        .output()
        .ok()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_else(|| "unknown".into());
    println!("cargo:rustc-env=EMBER_LAB_RUSTC={version}");

    let lock = concat!(env!("CARGO_MANIFEST_DIR"), "/../../Cargo.lock");
    println!("cargo:rerun-if-changed={lock}");
    println!("cargo:rerun-if-changed=build.rs");
    let text = std::fs::read_to_string(lock).unwrap_or_default();
    // `[[package]]` blocks: `name = "x"` then `version = "y"`.
    let mut found = Vec::new();
    let mut name = None;
    for line in text.lines() {
        if let Some(n) = line.strip_prefix("name = ") {
            name = Some(n.trim_matches('"').to_string());
        } else if let (Some(v), Some(n)) = (line.strip_prefix("version = "), name.take()) {
            if PEERS.contains(&n.as_str()) {
                found.push(format!("{n}={}", v.trim_matches('"')));
            }
        }
    }
    println!("cargo:rustc-env=EMBER_LAB_PEERS={}", found.join(","));
}
