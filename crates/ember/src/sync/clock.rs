//! The clock that deferred wake-ups are stamped and bounded with (`wake/deferred.rs`,
//! `alarm.rs`): [`now_ns`], and [`calibrate_clock`] to ready it off the spawners' path.

/// Nanoseconds from an arbitrary origin, the time base of debts and the alarm (never 0).
///
/// A deferring spawn stamps its debt with this, once per link of a chain, so it must be
/// cheap. `clock_gettime` fences its read of the time-stamp counter, and costs several
/// times the counter read alone (`crates/ember-lab/MEASUREMENTS.md`, "Stamps and the
/// clock"). So where the kernel itself keeps time with the counter
/// (its clock source is `tsc`: invariant, and in step across processors), this is the
/// counter scaled to nanoseconds; elsewhere it is the monotonic clock. Only differences of
/// this clock are trusted: the alarm (`alarm.rs`) moves a deadline onto the monotonic
/// clock at each setting, so the two clocks may drift apart (NTP slews the monotonic one by
/// up to 500 ppm) without moving a deadline by more than that rate of the bound. A counter
/// that restarts (some machines reset it across a suspend) makes this clock jump back: the
/// alarm treats a debt stamped after its own "now" as due at once (`wake/deferred.rs`), so
/// such a jump costs early wake-ups, not held ones.
///
/// Why not the `quanta` crate, which does this: its calibration spins until its error is
/// under 10 ns, for up to 200 ms, and beside a pool's spinning workers it takes tens of
/// milliseconds of processor time. The bound needs the rate only to a part
/// in a thousand, which two readings a millisecond apart give while the calibrating thread
/// sleeps ([`calibrate_clock`]).
#[cfg(all(not(loom), target_os = "linux"))]
#[inline]
pub(crate) fn now_ns() -> u64 {
    timebase().now_ns()
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
    /// The time-stamp counter: nanoseconds are `counter * rate >> 32`.
    #[cfg(target_arch = "x86_64")]
    Counter { rate: u64 },
    /// The monotonic clock.
    Monotonic,
}

#[cfg(all(not(loom), target_os = "linux"))]
impl Timebase {
    /// The time, never 0. (The product fits: a counter below 2^64 times a rate below
    /// 2^39; the nanoseconds fit a `u64` for 584 years of counting.)
    #[inline]
    fn now_ns(&self) -> u64 {
        let ns = match *self {
            #[cfg(target_arch = "x86_64")]
            Timebase::Counter { rate } => {
                ((u128::from(counter()) * u128::from(rate)) >> 32).min(u128::from(u64::MAX)) as u64
            }
            Timebase::Monotonic => monotonic_ns(),
        };
        ns.saturating_add(1)
    }

    /// The counter where the kernel keeps time with it, its rate measured over a
    /// millisecond's sleep; the monotonic clock otherwise.
    fn calibrate() -> Timebase {
        #[cfg(target_arch = "x86_64")]
        if kernel_clock_is_the_counter() {
            if let Some(counter) = Timebase::counter() {
                return counter;
            }
        }
        Timebase::Monotonic
    }

    /// The counter, its rate measured over a millisecond's sleep between two readings each
    /// bracketed by the monotonic clock, if some try of three gives brackets narrow enough
    /// (a two-thousandth of the span each, so the rate is right to a part in two thousand)
    /// and a rate between 10 MHz and 100 GHz.
    #[cfg(target_arch = "x86_64")]
    fn counter() -> Option<Timebase> {
        for _ in 0..3 {
            let (count0, ns0, width0) = counter_and_monotonic();
            std::thread::sleep(std::time::Duration::from_millis(1));
            let (count1, ns1, width1) = counter_and_monotonic();
            if let Some(rate) = rate((count0, ns0, width0), (count1, ns1, width1)) {
                return Some(Timebase::Counter { rate });
            }
        }
        None
    }
}

/// The counter's rate (nanoseconds per count, times 2^32) between two readings from
/// `counter_and_monotonic`, if their brackets are narrow enough (a two-thousandth of the
/// span each) and it lies between 10 MHz and 100 GHz.
#[cfg(all(not(loom), target_os = "linux"))]
fn rate(
    (count0, ns0, width0): (u64, u64, u64),
    (count1, ns1, width1): (u64, u64, u64),
) -> Option<u64> {
    let (counts, ns) = (count1.wrapping_sub(count0), ns1.saturating_sub(ns0));
    let narrow = width0.max(width1).saturating_mul(2_000) <= ns;
    let plausible = counts > 0 && ns > 0 && counts / 100 <= ns && ns / 100 <= counts;
    (narrow && plausible).then(|| ((u128::from(ns) << 32) / u128::from(counts)) as u64)
}

/// The time-stamp counter, unfenced: a stamp a few instructions early or late is as good.
#[cfg(all(not(loom), target_os = "linux", target_arch = "x86_64"))]
#[inline]
fn counter() -> u64 {
    // SAFETY: `_rdtsc` has no preconditions on x86_64, where every processor has RDTSC.
    // Were it forbidden to this thread (prctl PR_SET_TSC), it would fault with SIGSEGV,
    // not behave undefinedly; the kernel does not forbid it by itself.
    unsafe { core::arch::x86_64::_rdtsc() }
}

/// Whether the kernel's clock source is the time-stamp counter, which it uses only while
/// the counter is invariant and in step across processors.
#[cfg(all(not(loom), target_os = "linux", target_arch = "x86_64"))]
fn kernel_clock_is_the_counter() -> bool {
    std::fs::read_to_string("/sys/devices/system/clocksource/clocksource0/current_clocksource")
        .is_ok_and(|source| source.trim() == "tsc")
}

/// A counter reading, the monotonic time at it and the width of the bracket of monotonic
/// readings around it: the narrowest of up to 16 tries (a preemption inside a bracket
/// widens it).
#[cfg(all(not(loom), target_os = "linux", target_arch = "x86_64"))]
fn counter_and_monotonic() -> (u64, u64, u64) {
    let mut best = (0, 0, u64::MAX);
    for _ in 0..16 {
        let before = monotonic_ns();
        let count = counter();
        let after = monotonic_ns();
        let width = after - before;
        if width < best.2 {
            best = (count, before + width / 2, width);
        }
        if best.2 < 200 {
            break;
        }
    }
    best
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
    use super::{monotonic_ns, now_ns, Timebase};

    /// `clock`'s rate is right: over a sleep it advances as the monotonic clock does,
    /// bracketed by readings of that clock on either side, to within two parts in a
    /// thousand (the calibration's own error is at most one in two thousand). A wrong rate
    /// would stretch or shrink every bound.
    fn keeps_the_monotonic_clocks_time(clock: impl Fn() -> u64) {
        clock();
        for _ in 0..3 {
            let outer_start = monotonic_ns();
            let start = clock();
            let inner_start = monotonic_ns();
            std::thread::sleep(std::time::Duration::from_millis(20));
            let inner_end = monotonic_ns();
            let end = clock();
            let outer_end = monotonic_ns();
            let (elapsed, inner, outer) = (
                end - start,
                inner_end - inner_start,
                outer_end - outer_start,
            );
            assert!(
                elapsed >= inner - inner / 500 && elapsed <= outer + outer / 500,
                "the clock advanced {elapsed} ns over a span the monotonic clock puts between \
                 {inner} and {outer} ns"
            );
        }
    }

    #[test]
    fn the_clock_keeps_the_monotonic_clocks_time() {
        keeps_the_monotonic_clocks_time(now_ns);
    }

    /// The counter's calibration, whatever the kernel's clock source.
    #[cfg(target_arch = "x86_64")]
    #[test]
    fn the_counter_keeps_the_monotonic_clocks_time() {
        if !super::kernel_clock_is_the_counter() {
            // Where the kernel distrusts the counter (out of step across processors), so
            // does `now_ns`, and a rate measured across a migration means nothing.
            eprintln!("skipped: the kernel's clock source is not the counter");
            return;
        }
        let counter = Timebase::counter().expect("a calibration on an idle enough machine");
        keeps_the_monotonic_clocks_time(|| counter.now_ns());
    }

    /// A calibration whose brackets were stretched by a preemption, or whose rate is
    /// implausible, is refused; a clean one is taken.
    #[test]
    fn a_loose_or_implausible_calibration_is_refused() {
        let ms = 1_000_000;
        let clean = super::rate((1_000, 5 * ms, 60), (2_401_000, 6 * ms, 60));
        assert_eq!(clean, Some(((ms as u128) << 32) as u64 / 2_400_000));
        assert_eq!(
            super::rate((1_000, 5 * ms, 60), (2_401_000, 6 * ms, 600)),
            None
        );
        assert_eq!(super::rate((1_000, 5 * ms, 60), (1_010, 6 * ms, 60)), None);
        assert_eq!(super::rate((1_000, 5 * ms, 60), (1_000, 6 * ms, 60)), None);
    }

    /// Never 0 (0 means "no debt" and "alarm clear"), even where the scaled count is.
    #[cfg(target_arch = "x86_64")]
    #[test]
    fn the_clock_never_reads_zero() {
        assert_ne!(Timebase::Counter { rate: 0 }.now_ns(), 0);
    }
}
