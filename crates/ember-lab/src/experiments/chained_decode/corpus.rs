//! The corpus: structured log lines generated deterministically from a seed, or a file.
//!
//! Each line has a timestamp that advances, a level, a component, a message made of words
//! drawn from a fixed vocabulary with a skewed (roughly Zipf) distribution, and a few
//! key=value fields with numbers. That compresses with LZ4 about as well as real service logs
//! (2.5–4×), and a chunk's best matches are often in the chunk before it — which is what makes
//! the linked (dictionary) mode worth its dependency.

use crate::rng::Rng;

/// Words of the messages, most frequent first.
const WORDS: &[&str] = &[
    "the",
    "request",
    "worker",
    "cache",
    "miss",
    "hit",
    "for",
    "key",
    "from",
    "to",
    "queue",
    "task",
    "started",
    "finished",
    "retry",
    "after",
    "timeout",
    "connection",
    "closed",
    "opened",
    "shard",
    "replica",
    "leader",
    "follower",
    "commit",
    "index",
    "segment",
    "flush",
    "compaction",
    "snapshot",
    "upload",
    "download",
    "user",
    "session",
    "token",
    "expired",
    "refreshed",
    "block",
    "page",
    "buffer",
    "pool",
    "thread",
    "scheduler",
    "decode",
    "encode",
    "chunk",
    "stream",
    "partition",
    "offset",
    "lag",
    "rebalance",
    "heartbeat",
    "missed",
    "slow",
    "fast",
    "disk",
    "network",
    "memory",
    "pressure",
    "limit",
    "reached",
    "backoff",
    "throttled",
    "accepted",
    "rejected",
    "invalid",
    "checksum",
    "mismatch",
    "recovered",
    "degraded",
];
const LEVELS: &[&str] = &["INFO", "INFO", "INFO", "DEBUG", "DEBUG", "WARN", "ERROR"];
const COMPONENTS: &[&str] = &[
    "api", "db", "cache", "auth", "ingest", "index", "storage", "net", "sched", "gc",
];
const PATHS: &[&str] = &[
    "/api/v1/items",
    "/api/v1/users",
    "/api/v2/search",
    "/health",
    "/metrics",
    "/api/v1/orders",
];

/// Skewed towards small indices: the minimum of two uniform draws, squared-ish.
fn skewed(rng: &mut Rng, n: usize) -> usize {
    let a = rng.below(n);
    let b = rng.below(n);
    a.min(b) * a.min(b) / n.max(1)
}

/// `len` bytes of log lines generated from `seed` (the last line is cut at `len`).
pub fn generate(len: usize, seed: u64) -> Vec<u8> {
    use std::fmt::Write;
    let mut rng = Rng(seed);
    let mut out = String::with_capacity(len + 256);
    let mut ms: u64 = 1_714_560_000_000;
    while out.len() < len {
        ms += rng.below(40) as u64;
        let (s, milli) = (ms / 1000, ms % 1000);
        let _ = write!(
            out,
            "2024-05-01T{:02}:{:02}:{:02}.{milli:03}Z {:5} {}-{} ",
            (s / 3600) % 24,
            (s / 60) % 60,
            s % 60,
            LEVELS[rng.below(LEVELS.len())],
            COMPONENTS[rng.below(COMPONENTS.len())],
            rng.below(16),
        );
        for w in 0..3 + rng.below(8) {
            if w > 0 {
                out.push(' ');
            }
            out.push_str(WORDS[skewed(&mut rng, WORDS.len())]);
        }
        let _ = writeln!(
            out,
            " path={}/{} status={} bytes={} dur_ms={} id={:08x}",
            PATHS[rng.below(PATHS.len())],
            rng.below(5000),
            [200, 200, 200, 204, 404, 500][rng.below(6)],
            rng.below(100_000),
            rng.below(250),
            rng.next() as u32 & 0x00ff_ffff,
        );
    }
    let mut bytes = out.into_bytes();
    bytes.truncate(len);
    bytes
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deterministic_and_sized() {
        let a = generate(10_000, 7);
        assert_eq!(a.len(), 10_000);
        assert_eq!(a, generate(10_000, 7));
        assert_ne!(a, generate(10_000, 8));
        assert!(a.starts_with(b"2024-05-01T"));
    }
}
