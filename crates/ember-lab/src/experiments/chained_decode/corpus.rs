//! The corpus: structured log lines generated deterministically from a seed, or a file.
//!
//! Each line has a timestamp that advances, a level, a component, a message made of words
//! drawn from a fixed vocabulary with a skewed (roughly Zipf) distribution, and a few
//! key=value fields with numbers. That compresses with LZ4 about as well as real service logs
//! (2.5–4×), and a chunk's best matches are often in the chunk before it — which is what makes
//! the linked (dictionary) mode worth its dependency.

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

/// splitmix64: small, fast, and the same on every machine.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
    /// Skewed towards small indices: the minimum of two uniform draws, squared-ish.
    fn skewed(&mut self, n: usize) -> usize {
        let a = self.below(n);
        let b = self.below(n);
        a.min(b) * a.min(b) / n.max(1)
    }
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
            out.push_str(WORDS[rng.skewed(WORDS.len())]);
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
