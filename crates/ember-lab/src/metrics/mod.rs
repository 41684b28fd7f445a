//! How a run is measured from the outside.
//!
//! * [`rusage`]: CPU time and context switches of the whole process (`getrusage`).
//! * [`perf`]: the kernel's software counters for context switches and CPU migrations,
//!   inherited by every thread the run creates.
//! * [`cputime`]: the calling thread's CPU clock, which experiments use to account the CPU
//!   spent inside their work closures ("useful" CPU).
//! * [`stats`]: the one place for medians, percentiles, spreads and confidence intervals.

pub mod cputime;
pub mod perf;
pub mod rusage;
pub mod stats;
pub mod threads;
