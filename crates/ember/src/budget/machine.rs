//! The machine-wide budget: one shared-memory segment per user, in which every process that
//! joined publishes how many of its ember workers are awake (README, "Machine-wide").
//!
//! Layout (version 1). A header, then [`SLOTS`] slots of two `u64` words each:
//!
//! | offset | word | meaning |
//! | --- | --- | --- |
//! | 0 | `magic` | `EMBRBDGT`, stored last by the creator (`Release`) |
//! | 8 | `version` | [`VERSION`]; any other is ignored with a warning |
//! | 16 | `slots` | the number of slots |
//! | 64 + 16·i | `lease` | slot `i`: expiry (ms on `CLOCK_BOOTTIME`) · tag · awake workers |
//! | 72 + 16·i | `cpus` | slot `i`: the CPUs its process may use, folded onto 64 bits |
//!
//! A slot is one word so that claiming, renewing and giving it back are one compare-and-swap
//! each, and a reader never sees half of a lease. Whoever holds a lease knows its exact word;
//! a renewal that fails means the lease expired and somebody else took the slot. The tag,
//! random per process, keeps two holders apart even if their expiry and count match. No
//! process id is stored: ids mislead across PID namespaces. A process killed while it holds
//! a slot stops renewing it, and its count stops counting at the expiry.

use std::fs::File;
use std::io;
use std::os::fd::{FromRawFd, OwnedFd};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

use memmap2::MmapRaw;

/// `EMBRBDGT`, little-endian: the segment is initialised.
const MAGIC: u64 = u64::from_le_bytes(*b"EMBRBDGT");
/// The layout this file reads and writes.
pub(crate) const VERSION: u64 = 1;
/// Slots in a segment this process creates.
pub(crate) const SLOTS: usize = 256;
/// Bytes before the first slot.
const HEADER: usize = 64;
/// Bytes per slot.
const SLOT: usize = 16;
/// Names the segment instead of [`default_name`]'s, in the library's own tests.
#[cfg(test)]
pub(crate) const TEST_NAME_VAR: &str = "EMBER_TEST_SEGMENT_NAME";
/// How long a lease lasts unless renewed (milliseconds).
pub(crate) const LEASE_MS: u64 = 100;

const AWAKE_BITS: u32 = 12;
const TAG_BITS: u32 = 12;
const AWAKE_MAX: u64 = (1 << AWAKE_BITS) - 1;

/// A lease word: `expiry_ms` (40 bits), `tag` (12 bits), `awake` (12 bits, saturated).
pub(crate) fn lease_word(expiry_ms: u64, tag: u64, awake: usize) -> u64 {
    (expiry_ms << (AWAKE_BITS + TAG_BITS))
        | ((tag & ((1 << TAG_BITS) - 1)) << AWAKE_BITS)
        | (awake as u64).min(AWAKE_MAX)
}

/// The expiry of a lease word, in milliseconds on the boot clock.
pub(crate) fn expiry_ms(word: u64) -> u64 {
    word >> (AWAKE_BITS + TAG_BITS)
}

/// The awake workers a lease word counts.
pub(crate) fn awake_of(word: u64) -> usize {
    (word & AWAKE_MAX) as usize
}

/// Milliseconds on `CLOCK_BOOTTIME`: one clock for every process of the machine, PID
/// namespaces included, and it keeps counting across a suspend.
pub(crate) fn now_ms() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec; CLOCK_BOOTTIME exists on every Linux
    // ember supports, so the call cannot fail.
    unsafe { libc::clock_gettime(libc::CLOCK_BOOTTIME, &mut ts) };
    ts.tv_sec as u64 * 1000 + ts.tv_nsec as u64 / 1_000_000
}

/// The CPUs this process may use, folded onto 64 bits (CPU `c` sets bit `c % 64`); `!0` if
/// the mask cannot be read. Two processes count against each other when their folded masks
/// share a bit: exact up to 64 CPUs, and past that two disjoint masks may still count each
/// other (never the reverse).
pub(crate) fn folded_cpus() -> u64 {
    // SAFETY: a zeroed cpu_set_t is a valid empty set.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: `set` is writable and its size is passed; pid 0 is this thread.
    let rc =
        unsafe { libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) };
    if rc != 0 {
        return !0;
    }
    let mut folded = 0u64;
    for cpu in 0..libc::CPU_SETSIZE as usize {
        // SAFETY: `cpu` is below CPU_SETSIZE and `set` is initialised.
        if unsafe { libc::CPU_ISSET(cpu, &set) } {
            folded |= 1 << (cpu % 64);
        }
    }
    if folded == 0 {
        !0
    } else {
        folded
    }
}

/// Why a segment is not used.
#[derive(Debug)]
pub(crate) enum Refused {
    /// The system refused it (no `/dev/shm`, out of memory, …).
    Io(io::Error),
    /// It exists but is not this user's alone (owner or mode).
    NotPrivate,
    /// Its layout is not this one (another version, a partial file that never completed).
    Incompatible(String),
}

impl std::fmt::Display for Refused {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Refused::Io(e) => write!(f, "the system refused the segment: {e}"),
            Refused::NotPrivate => {
                f.write_str("the segment is not private to this user (owner or mode)")
            }
            Refused::Incompatible(why) => write!(f, "the segment has another layout: {why}"),
        }
    }
}

/// The lease this process holds: its slot and the exact word it last wrote.
#[derive(Clone, Copy)]
struct Held {
    slot: usize,
    word: u64,
}

/// An open segment.
pub(crate) struct Segment {
    map: MmapRaw,
    slots: usize,
    tag: u64,
    cpus: u64,
    held: Mutex<Option<Held>>,
}

/// The segment's name for the user running this process: one per user. The library's own
/// tests may name another, so as never to touch the user's.
pub(crate) fn default_name() -> String {
    #[cfg(test)]
    if let Ok(name) = std::env::var(TEST_NAME_VAR) {
        return name;
    }
    // SAFETY: geteuid cannot fail.
    let uid = unsafe { libc::geteuid() };
    format!("/ember-budget-{uid}")
}

fn shm_open(name: &str, flags: libc::c_int) -> io::Result<File> {
    let cname =
        std::ffi::CString::new(name).map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))?;
    // SAFETY: `cname` is a valid NUL-terminated string; the call returns a new descriptor or -1.
    let fd = unsafe {
        libc::shm_open(
            cname.as_ptr(),
            flags | libc::O_RDWR | libc::O_CLOEXEC,
            0o600,
        )
    };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: a non-negative result is a new descriptor nobody else owns.
    Ok(File::from(unsafe { OwnedFd::from_raw_fd(fd) }))
}

/// Removes the segment called `name` (tests).
#[cfg(test)]
pub(crate) fn unlink(name: &str) {
    let cname = std::ffi::CString::new(name).expect("no NUL");
    // SAFETY: a valid NUL-terminated name; a missing segment is an ignored error.
    unsafe { libc::shm_unlink(cname.as_ptr()) };
}

impl Segment {
    /// Opens the segment called `name`, creating it (mode 0600) if there is none.
    pub(crate) fn open(name: &str) -> Result<Segment, Refused> {
        use std::os::unix::fs::{MetadataExt, PermissionsExt};
        let size = (HEADER + SLOTS * SLOT) as u64;
        let (file, created) = match shm_open(name, libc::O_CREAT | libc::O_EXCL) {
            Ok(file) => (file, true),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
                (shm_open(name, 0).map_err(Refused::Io)?, false)
            }
            Err(e) => return Err(Refused::Io(e)),
        };
        if created {
            // The umask may have narrowed the mode; it may not have widened it.
            file.set_permissions(std::fs::Permissions::from_mode(0o600))
                .map_err(Refused::Io)?;
            file.set_len(size).map_err(Refused::Io)?;
        }
        let meta = file.metadata().map_err(Refused::Io)?;
        // SAFETY: geteuid cannot fail.
        if meta.uid() != unsafe { libc::geteuid() } || meta.mode() & 0o077 != 0 {
            return Err(Refused::NotPrivate);
        }
        // A creator in another process may be between its creation and its `set_len`, or
        // between `set_len` and its magic: wait for it a little, then give up.
        let mut tries = 0;
        let len = loop {
            let len = file.metadata().map_err(Refused::Io)?.len();
            if len >= HEADER as u64 {
                break len;
            }
            tries += 1;
            if tries > 100 {
                return Err(Refused::Incompatible(format!(
                    "{len} bytes, too short for a header"
                )));
            }
            std::thread::sleep(std::time::Duration::from_millis(1));
        };
        let map = MmapRaw::map_raw(&file).map_err(Refused::Io)?;
        if (map.len() as u64) < len.min(HEADER as u64) {
            return Err(Refused::Incompatible(
                "mapping shorter than the header".into(),
            ));
        }
        let word = |offset: usize| -> &AtomicU64 {
            // SAFETY: `offset + 8 <= map.len()` at every call below (the header is mapped,
            // and slot words are checked against `slots`, which is checked against the
            // length); the mapping is page-aligned, so the word is 8-aligned; an AtomicU64
            // is valid for any bit pattern, and other processes touch the words only
            // through atomic instructions; the reference lives no longer than `map`.
            unsafe { &*(map.as_ptr().add(offset) as *const AtomicU64) }
        };
        if created {
            word(8).store(VERSION, Ordering::Relaxed);
            word(16).store(SLOTS as u64, Ordering::Relaxed);
            word(0).store(MAGIC, Ordering::Release);
        }
        let mut tries = 0;
        while word(0).load(Ordering::Acquire) != MAGIC {
            tries += 1;
            if tries > 100 {
                return Err(Refused::Incompatible("no magic number".into()));
            }
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        let version = word(8).load(Ordering::Relaxed);
        if version != VERSION {
            return Err(Refused::Incompatible(format!(
                "version {version}, this build reads {VERSION}"
            )));
        }
        let slots = word(16).load(Ordering::Relaxed);
        let needed = HEADER as u64 + slots.saturating_mul(SLOT as u64);
        if slots == 0 || needed > map.len() as u64 {
            return Err(Refused::Incompatible(format!(
                "{slots} slots in {} bytes",
                map.len()
            )));
        }
        Ok(Segment {
            map,
            slots: slots as usize,
            tag: random_tag(),
            cpus: folded_cpus(),
            held: Mutex::new(None),
        })
    }

    fn lease(&self, slot: usize) -> &AtomicU64 {
        assert!(slot < self.slots);
        // SAFETY: `slot < self.slots`, and `open` checked that every slot lies inside the
        // mapping; alignment, validity and sharing as in `open`.
        unsafe { &*(self.map.as_ptr().add(HEADER + slot * SLOT) as *const AtomicU64) }
    }

    fn cpus_word(&self, slot: usize) -> &AtomicU64 {
        assert!(slot < self.slots);
        // SAFETY: as in `lease`, eight bytes further inside the same slot.
        unsafe { &*(self.map.as_ptr().add(HEADER + slot * SLOT + 8) as *const AtomicU64) }
    }

    /// Publishes `awake` as this process's count until `now + LEASE_MS`, and returns the
    /// awake workers of the others: live leases on CPUs that overlap this process's. One
    /// hold of the lease's lock for both: no other thread of the process can move its lease
    /// to another slot between the two, which the count would then take for another
    /// holder's.
    pub(crate) fn publish_and_count(&self, awake: usize, now: u64) -> usize {
        let mut held = crate::sync::lock(&self.held);
        self.publish_held(&mut held, awake, now);
        self.others_than(held.map(|h| h.slot), now)
    }

    /// Publishes `awake` as this process's count until `now + LEASE_MS` (tests).
    #[cfg(test)]
    pub(crate) fn publish(&self, awake: usize, now: u64) -> bool {
        self.publish_held(&mut crate::sync::lock(&self.held), awake, now)
    }

    /// Renews the lease `held` or claims a free or expired slot. Returns `false` if every
    /// slot is held (the process then counts as nothing, and counts the others).
    fn publish_held(&self, held: &mut Option<Held>, awake: usize, now: u64) -> bool {
        let word = lease_word(now + LEASE_MS, self.tag, awake);
        if let Some(h) = *held {
            if self
                .lease(h.slot)
                .compare_exchange(h.word, word, Ordering::SeqCst, Ordering::Relaxed)
                .is_ok()
            {
                *held = Some(Held { slot: h.slot, word });
                return true;
            }
            // The lease expired and somebody took the slot.
            *held = None;
        }
        for slot in 0..self.slots {
            let lease = self.lease(slot);
            let old = lease.load(Ordering::Relaxed);
            if expiry_ms(old) > now {
                continue;
            }
            if lease
                .compare_exchange(old, word, Ordering::SeqCst, Ordering::Relaxed)
                .is_ok()
            {
                self.cpus_word(slot).store(self.cpus, Ordering::Relaxed);
                *held = Some(Held { slot, word });
                return true;
            }
        }
        false
    }

    /// The awake workers of the other processes whose leases run past `now` and whose CPUs
    /// overlap this process's (tests).
    #[cfg(test)]
    pub(crate) fn others(&self, now: u64) -> usize {
        let held = crate::sync::lock(&self.held);
        self.others_than(held.map(|h| h.slot), now)
    }

    /// The awake workers of the holders other than that of slot `mine` whose leases run
    /// past `now` and whose CPUs overlap this process's.
    fn others_than(&self, mine: Option<usize>, now: u64) -> usize {
        (0..self.slots)
            .filter(|&slot| Some(slot) != mine)
            .map(|slot| {
                let word = self.lease(slot).load(Ordering::Relaxed);
                let cpus = self.cpus_word(slot).load(Ordering::Relaxed);
                if expiry_ms(word) > now && (cpus == 0 || cpus & self.cpus != 0) {
                    awake_of(word)
                } else {
                    0
                }
            })
            .sum()
    }

    /// Gives the lease back, if this process still holds it.
    pub(crate) fn release(&self) {
        if let Some(h) = crate::sync::lock(&self.held).take() {
            let _ =
                self.lease(h.slot)
                    .compare_exchange(h.word, 0, Ordering::SeqCst, Ordering::Relaxed);
        }
    }

    /// The expiry of the lease this process holds, if any (tests).
    #[cfg(test)]
    pub(crate) fn held_expiry(&self) -> Option<u64> {
        crate::sync::lock(&self.held).map(|h| expiry_ms(h.word))
    }
}

impl Drop for Segment {
    fn drop(&mut self) {
        self.release();
    }
}

/// Twelve bits that differ between processes started together: the clock's nanoseconds
/// mixed with the address of a stack variable (randomised per process).
fn random_tag() -> u64 {
    let local = 0u8;
    let seed = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64)
        ^ (&local as *const u8 as u64).rotate_left(17);
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15);
    x ^= x >> 29;
    x & ((1 << TAG_BITS) - 1)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{BufRead, BufReader};
    use std::process::{Command, Stdio};

    /// A segment name of this test process, removed when dropped (even by a failing test).
    struct TestName(String);

    impl Drop for TestName {
        fn drop(&mut self) {
            unlink(&self.0);
        }
    }

    impl std::ops::Deref for TestName {
        type Target = str;
        fn deref(&self) -> &str {
            &self.0
        }
    }

    fn test_name(what: &str) -> TestName {
        TestName(format!("/ember-budget-test-{what}-{}", std::process::id()))
    }

    #[test]
    fn lease_words_round_trip() {
        let w = lease_word(123_456_789, 0xabc, 7);
        assert_eq!((expiry_ms(w), awake_of(w)), (123_456_789, 7));
        assert_eq!(awake_of(lease_word(1, 0, 1 << 20)), AWAKE_MAX as usize);
    }

    #[test]
    fn two_openers_see_each_others_counts_and_not_their_own() {
        let name = test_name("counts");
        let a = Segment::open(&name).unwrap();
        let b = Segment::open(&name).unwrap();
        let now = now_ms();
        assert!(a.publish(3, now));
        assert!(b.publish(5, now));
        assert_eq!(a.others(now), 5);
        assert_eq!(b.others(now), 3);
        // A renewal replaces the count rather than adding to it.
        assert!(a.publish(1, now));
        assert_eq!(b.others(now), 1);
        a.release();
        assert_eq!(b.others(now), 0);
    }

    #[test]
    fn the_segment_is_private_to_its_user() {
        use std::os::unix::fs::PermissionsExt;
        let name = test_name("mode");
        let _s = Segment::open(&name).unwrap();
        let f = shm_open(&name, 0).unwrap();
        assert_eq!(f.metadata().unwrap().permissions().mode() & 0o777, 0o600);
        f.set_permissions(std::fs::Permissions::from_mode(0o644))
            .unwrap();
        assert!(matches!(Segment::open(&name), Err(Refused::NotPrivate)));
    }

    #[test]
    fn another_layout_is_refused_not_read() {
        let name = test_name("layout");
        let f = shm_open(&name, libc::O_CREAT).unwrap();
        f.set_len(HEADER as u64).unwrap();
        let map = MmapRaw::map_raw(&f).unwrap();
        let header = |i: usize| {
            // SAFETY: the file is HEADER bytes; `i < 3` keeps the word inside it, aligned.
            unsafe { &*(map.as_ptr().add(8 * i) as *const AtomicU64) }
        };
        header(1).store(VERSION + 1, Ordering::Relaxed);
        header(2).store(SLOTS as u64, Ordering::Relaxed);
        header(0).store(MAGIC, Ordering::Release);
        let err = Segment::open(&name).err().expect("refused");
        assert!(matches!(err, Refused::Incompatible(_)), "{err}");
        // The right version with more slots than the file holds is refused too.
        header(1).store(VERSION, Ordering::Relaxed);
        let err = Segment::open(&name).err().expect("refused");
        assert!(matches!(err, Refused::Incompatible(_)), "{err}");
    }

    /// The other holders' leases live at `now`, as `s` counts them, and its own.
    fn live_slots(s: &Segment, now: u64) -> usize {
        (0..s.slots)
            .filter(|&slot| expiry_ms(s.lease(slot).load(Ordering::Relaxed)) > now)
            .count()
    }

    /// A holder is counted once however it renews: a renewal rewrites its one slot, and a
    /// lease that expired and was taken is replaced by another slot, never kept beside it.
    #[test]
    fn renewals_and_a_lost_lease_count_a_holder_once() {
        let name = test_name("once");
        let (a, b) = (Segment::open(&name).unwrap(), Segment::open(&name).unwrap());
        let now = now_ms();
        for later in now..now + 10 {
            assert!(a.publish(2, later));
        }
        assert!(b.publish(1, now + 9));
        assert_eq!(live_slots(&a, now + 9), 2, "one slot each");
        assert_eq!((a.others(now + 9), b.others(now + 9)), (1, 2));
        // Both leases run out; a third holder takes the first expired slot, A's.
        let expired = now + 9 + LEASE_MS;
        let c = Segment::open(&name).unwrap();
        assert!(c.publish(5, expired));
        assert!(a.publish(2, expired));
        assert!(b.publish(1, expired));
        assert_eq!(live_slots(&a, expired), 3, "one slot each");
        assert_eq!(
            (a.others(expired), b.others(expired), c.others(expired)),
            (6, 7, 3)
        );
        // The same counts through the one call a decision makes.
        assert_eq!(a.publish_and_count(4, expired), 6);
        assert_eq!(b.others(expired), 9);
    }

    /// Run only as the child of `a_killed_holder_costs_nothing_after_its_lease`: holds a
    /// lease on the segment named by the variable, says so, and waits to be killed.
    #[test]
    #[ignore = "the child of a_killed_holder_costs_nothing_after_its_lease"]
    fn lease_holder_child() {
        let Ok(name) = std::env::var("EMBER_TEST_LEASE_SEGMENT") else {
            return;
        };
        let s = Segment::open(&name).unwrap();
        assert!(s.publish(4, now_ms()));
        println!("held {}", s.held_expiry().unwrap());
        loop {
            std::thread::park();
        }
    }

    #[test]
    fn a_killed_holder_costs_nothing_after_its_lease() {
        let name = test_name("kill");
        let me = Segment::open(&name).unwrap();
        let mut child = Command::new(std::env::current_exe().unwrap())
            .args([
                "--exact",
                "budget::machine::tests::lease_holder_child",
                "--ignored",
                "--nocapture",
                "--test-threads=1",
            ])
            .env("EMBER_TEST_LEASE_SEGMENT", &*name)
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let expiry: u64 = loop {
            let line = lines.next().expect("the child says it holds").unwrap();
            // The harness may print the test's name on the same line first.
            if let Some(at) = line.find("held ") {
                break line[at + 5..].trim().parse().unwrap();
            }
        };
        assert_eq!(
            // SAFETY: kill(2) on the child's id, which is not reaped yet.
            unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGKILL) },
            0
        );
        let status = child.wait().unwrap();
        assert!(!status.success());
        // Killed while holding: it counts until its lease expires, and not after.
        assert_eq!(me.others(expiry - 1), 4);
        assert_eq!(me.others(expiry), 0);
        while now_ms() <= expiry {
            std::thread::sleep(std::time::Duration::from_millis(LEASE_MS / 4));
        }
        assert_eq!(me.others(now_ms()), 0);
        // Its slot is free to claim again: every slot can be taken.
        let others: Vec<_> = (0..SLOTS - 1)
            .map(|_| Segment::open(&name).unwrap())
            .collect();
        let now = now_ms();
        assert!(me.publish(1, now));
        assert!(others.iter().all(|s| s.publish(1, now)));
        assert_eq!(me.others(now), SLOTS - 1);
        drop(others);
    }
}
