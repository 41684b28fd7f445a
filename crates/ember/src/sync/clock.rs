//! The clock that deferred wake-ups are stamped and bounded with (`wake/deferred.rs`,
//! `alarm.rs`): [`now_ns`], and [`calibrate_clock`] to ready it off the spawners' path.

/// Nanoseconds since the clock was calibrated, the time base of debts and the alarm (never
/// 0).
///
/// A deferring spawn stamps its debt with this, once per link of a chain, so it must be
/// cheap. `clock_gettime` costs 32 ns on the virtual machine measured here (the vDSO fences
/// its read of the time-stamp counter), a third of a whole spawn-and-run; the counter read
/// alone costs 12 ns. So where the kernel itself keeps time with the counter (its clock
/// source is `tsc`: invariant, and in step across processors), this is the counter scaled
/// to nanoseconds; elsewhere it is the monotonic clock. Only differences of this clock are
/// trusted: the alarm (`alarm.rs`) moves a deadline onto the monotonic clock at each setting, so
/// the two clocks may drift apart (NTP slews the monotonic one by up to 500 ppm) without
/// moving a deadline by more than that rate of the bound.
///
/// Why not the `quanta` crate, which does this: its calibration spins until its error is
/// under 10 ns, for up to 200 ms; measured here it took 1 ms on an idle machine and 39 ms of
/// processor time beside a pool's spinning workers. The bound needs the rate only to a part
/// in a thousand, which two readings a millisecond apart give while the calibrating thread
/// sleeps ([`calibrate_clock`]).
#[cfg(all(not(loom), target_os = "linux"))]
#[inline]
pub(crate) fn now_ns() -> u64 {
    timebase().elapsed_ns() + 1
}

/// Calibrates [`now_ns`]'s clock, if nothing has yet: the alarm's thread calls it before
/// it lets wake-ups be deferred, so that no spawner waits for it.
#[cfg(all(not(loom), target_os = "linux"))]
pub(crate) fn calibrate_clock() {
    timebase();
}

#[cfg(all(not(loom), target_os = "linux"))]
#[inline]
fn timebase() -> &'static Timebase {
    static TIMEBASE: std::sync::OnceLock<Timebase> = std::sync::OnceLock::new();
    TIMEBASE.get_or_init(Timebase::calibrate)
}

/// How [`now_ns`] reads the time.
#[cfg(all(not(loom), target_os = "linux"))]
enum Timebase {
    /// The time-stamp counter: nanoseconds are `(counter - origin) * rate >> 32`.
    #[cfg(target_arch = "x86_64")]
    Counter { origin: u64, rate: u64 },
    /// The monotonic clock, from `origin` on.
    Monotonic { origin: u64 },
}

#[cfg(all(not(loom), target_os = "linux"))]
impl Timebase {
    #[inline]
    fn elapsed_ns(&self) -> u64 {
        match *self {
            #[cfg(target_arch = "x86_64")]
            Timebase::Counter { origin, rate } => {
                ((u128::from(counter().saturating_sub(origin)) * u128::from(rate)) >> 32) as u64
            }
            Timebase::Monotonic { origin } => monotonic_ns().saturating_sub(origin),
        }
    }

    /// The counter where the kernel keeps time with it, its rate measured over a
    /// millisecond's sleep; the monotonic clock otherwise.
    fn calibrate() -> Timebase {
        #[cfg(target_arch = "x86_64")]
        if kernel_clock_is_the_counter() {
            let (count0, ns0) = counter_and_monotonic();
            std::thread::sleep(std::time::Duration::from_millis(1));
            let (count1, ns1) = counter_and_monotonic();
            let (counts, ns) = (count1.wrapping_sub(count0), ns1.saturating_sub(ns0));
            // A counter between 10 MHz and 100 GHz; anything else is a reading gone wrong.
            if counts > 0 && ns > 0 && counts / 100 <= ns && ns / 100 <= counts {
                return Timebase::Counter {
                    origin: count0,
                    rate: ((u128::from(ns) << 32) / u128::from(counts)) as u64,
                };
            }
        }
        Timebase::Monotonic {
            origin: monotonic_ns(),
        }
    }
}

/// The time-stamp counter, unfenced: a stamp a few instructions early or late is as good.
#[cfg(all(not(loom), target_os = "linux", target_arch = "x86_64"))]
#[inline]
fn counter() -> u64 {
    // SAFETY: RDTSC exists on every x86_64 processor; user mode may run it unless the kernel
    // forbids it, which it does not where its own clock source is the counter (checked
    // before the counter is used).
    unsafe { core::arch::x86_64::_rdtsc() }
}

/// Whether the kernel's clock source is the time-stamp counter, which it uses only while
/// the counter is invariant and in step across processors.
#[cfg(all(not(loom), target_os = "linux", target_arch = "x86_64"))]
fn kernel_clock_is_the_counter() -> bool {
    std::fs::read_to_string("/sys/devices/system/clocksource/clocksource0/current_clocksource")
        .is_ok_and(|source| source.trim() == "tsc")
}

/// A counter reading and the monotonic time at it, from a pair of clock readings close
/// around it (a preemption between them would skew the rate).
#[cfg(all(not(loom), target_os = "linux", target_arch = "x86_64"))]
fn counter_and_monotonic() -> (u64, u64) {
    let mut best = (0, 0, u64::MAX);
    for _ in 0..16 {
        let before = monotonic_ns();
        let count = counter();
        let after = monotonic_ns();
        if after - before < best.2 {
            best = (count, before + (after - before) / 2, after - before);
        }
        if best.2 < 1_000 {
            break;
        }
    }
    (best.0, best.1)
}

/// The monotonic clock, in nanoseconds: the `timerfd`'s own time base.
#[cfg(all(not(loom), target_os = "linux"))]
pub(crate) fn monotonic_ns() -> u64 {
    let mut now = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `now` is a valid, writable timespec; CLOCK_MONOTONIC exists on every system
    // libc supports, so the call cannot fail.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut now) };
    now.tv_sec as u64 * 1_000_000_000 + now.tv_nsec as u64
}

/// Where there is no alarm nothing is deferred and this is only called on a debt's way to
/// being paid, which never happens: a clock that counts from first use, never 0.
#[cfg(all(not(loom), not(target_os = "linux")))]
pub(crate) fn now_ns() -> u64 {
    static START: std::sync::OnceLock<std::time::Instant> = std::sync::OnceLock::new();
    START
        .get_or_init(std::time::Instant::now)
        .elapsed()
        .as_nanos() as u64
        + 1
}

/// Nothing to calibrate where the clock is `Instant`'s or a model's.
#[cfg(any(loom, not(target_os = "linux")))]
pub(crate) fn calibrate_clock() {}

/// Under loom time stands still at 1: models pass their own "now" where it matters.
#[cfg(loom)]
pub(crate) fn now_ns() -> u64 {
    1
}

#[cfg(all(test, not(loom), target_os = "linux"))]
mod tests {
    use super::{monotonic_ns, now_ns};

    /// The counter's rate is right: over a sleep, `now_ns` advances as the monotonic clock
    /// does, bracketed by readings of it on either side, to within a part in a hundred (the
    /// calibration aims at a part in ten thousand) and the few microseconds the brackets'
    /// own readings may be preempted for. A wrong rate would stretch or shrink every bound.
    #[test]
    fn the_clock_keeps_the_monotonic_clocks_time() {
        now_ns();
        for _ in 0..3 {
            let outer_start = monotonic_ns();
            let start = now_ns();
            let inner_start = monotonic_ns();
            std::thread::sleep(std::time::Duration::from_millis(20));
            let inner_end = monotonic_ns();
            let end = now_ns();
            let outer_end = monotonic_ns();
            let (elapsed, inner, outer) = (
                end - start,
                inner_end - inner_start,
                outer_end - outer_start,
            );
            assert!(
                elapsed >= inner - inner / 100 && elapsed <= outer + outer / 100,
                "now_ns advanced {elapsed} ns over a span the monotonic clock puts between \
                 {inner} and {outer} ns"
            );
        }
    }

    /// Never 0: 0 means "no debt" and "alarm clear".
    #[test]
    fn the_clock_never_reads_zero() {
        assert_ne!(now_ns(), 0);
    }
}
