//! Whether an idle worker spins before it sleeps.
//!
//! Spinning pays when work arrives within the spin (a busy producer). The worker takes it
//! without a sleep and a wake-up, each a system call and a context switch. Under light load
//! (a job every millisecond) it is pure waste: every spin ends in a sleep anyway. So a worker
//! counts its consecutive spins that found nothing. After two, it stops spinning, except for
//! one probe every sixteenth idle period. Any spin that finds work turns spinning back on.
//! For a worker waiting on something (its `join`'s stolen half), seeing the wait end during
//! the spin counts as finding work: the spin spared it a sleep.
//!
//! How long a spin lasts depends on whether the pool is in a wide stretch. A worker that runs
//! out of work while at least two other workers, and half the pool, are still awake spins
//! [`WIDE_SPIN`] times as long. The next round of that work usually comes within that: the
//! next evaluation of a loop over parallel iterators, the next `install`, the next level of
//! a fork. A worker kept awake takes it without being woken. A wide pool that let its workers
//! sleep between rounds would wake them all again for each, one wake-up latency per level of
//! the wake-up tree; on many cores that takes longer than a round of a data-parallel loop.
//!
//! A worker with one other awake at most spins the short spin: a pool under light load, a job
//! at a time, a token passed from worker to worker. Spinning longer there would keep a core
//! busy between jobs that come every few tens of microseconds. A pool of two workers never
//! spins the long spin. Nor does a pool of more workers than the process has processors:
//! there a spinning worker holds a processor that a runnable worker is waiting for.

use std::cell::Cell;

/// How many times the builder's spin a worker spins while another worker is awake.
pub(crate) const WIDE_SPIN: u32 = 10;

/// Consecutive fruitless spins after which a worker sleeps at once.
const MAX_MISSES: u32 = 2;
/// While spinning is off, one idle period in this many still spins, to notice a busier load.
const PROBE_EVERY: u32 = 16;

/// One worker's spin decision; owned by its thread.
#[derive(Debug, Default)]
pub(crate) struct SpinGovernor {
    /// Consecutive spins that found nothing.
    misses: Cell<u32>,
    /// Idle periods passed without spinning, while spinning is off.
    skipped: Cell<u32>,
}

impl SpinGovernor {
    /// Whether to spin in this idle period.
    pub(crate) fn should_spin(&self) -> bool {
        if self.misses.get() < MAX_MISSES {
            return true;
        }
        let skipped = self.skipped.get().wrapping_add(1);
        self.skipped.set(skipped);
        skipped % PROBE_EVERY == 0
    }

    /// Records how a spin ended: with work found during it, or not.
    pub(crate) fn record(&self, found_work: bool) {
        self.misses.set(if found_work {
            0
        } else {
            self.misses.get().saturating_add(1)
        });
    }
}

#[cfg(test)]
mod tests {
    use super::SpinGovernor;

    #[test]
    fn stops_after_fruitless_spins_and_probes_now_and_then() {
        let governor = SpinGovernor::default();
        let mut spun = 0;
        for _ in 0..64 {
            if governor.should_spin() {
                spun += 1;
                governor.record(false);
            }
        }
        // The first two idle periods spin; of the 62 after them, one in sixteen probes.
        assert_eq!(spun, 2 + 62 / 16);
    }

    #[test]
    fn success_turns_spinning_back_on() {
        let governor = SpinGovernor::default();
        governor.record(false);
        governor.record(false);
        assert!(!governor.should_spin());
        governor.record(true);
        assert!(governor.should_spin());
    }
}
