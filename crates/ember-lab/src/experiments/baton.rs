//! The baton that chains of tasks hand along, in `cycle` (a ring's token) and in `micro`
//! (ping-pong and chained spawn): every task passes it to the task it spawns, and the chain's
//! last task reports how many tasks the chain ran, for the experiment to check.

use std::fmt::Arguments;
use std::time::Duration;

use super::mailbox::{Mailbox, Post};

/// What a chain's last task reports: the chain, and how many tasks it ran.
pub type Report = (usize, u64);

/// What one task of a chain holds.
#[derive(Clone, Copy, Debug)]
pub struct Baton {
    /// Which chain (ring, relay) it belongs to.
    pub chain: usize,
    /// Tasks of the chain that ran before this one.
    pub hop: u64,
    /// `hop` of the chain's last task.
    pub last: u64,
}

impl Baton {
    /// The baton of the first task of `chain`, a chain of `tasks` tasks (at least one).
    pub fn first(chain: usize, tasks: u64) -> Baton {
        Baton {
            chain,
            hop: 0,
            last: tasks - 1,
        }
    }

    /// The baton for the next task, or `None` when this task is the chain's last.
    pub fn pass(self) -> Option<Baton> {
        (self.hop < self.last).then_some(Baton {
            hop: self.hop + 1,
            ..self
        })
    }

    /// Reports the chain done (the run's own checks count every chain's report).
    pub fn report(self, tx: &Post<Report>) {
        tx.send((self.chain, self.hop + 1));
    }
}

/// Waits for the `count` chains of a wave, numbered `0..count`, to report once each, chain
/// `k` after exactly `tasks(k)` tasks, and panics otherwise, naming `context` (the experiment
/// and system) and the chain as a `noun` (`ring`, `relay`). The reports that came are all
/// checked before a shortfall (after `timeout`, or once every sender is gone) is called a
/// loss, so that a wave short of two reports or more, one of them a chain that reported
/// twice, says so.
pub fn collect_wave(
    rx: &Mailbox<Report>,
    count: usize,
    tasks: impl Fn(usize) -> u64,
    timeout: Duration,
    context: Arguments<'_>,
    noun: &str,
) {
    let (reports, shortfall) = match rx.recv_many(count, timeout) {
        Ok(reports) => (reports, None),
        Err(shortfall) => {
            let when = shortfall.when(timeout);
            (shortfall.arrived, Some(when))
        }
    };
    let mut seen = vec![false; count];
    for (chain, ran) in reports {
        assert!(!seen[chain], "{context}: {noun} {chain} finished twice");
        seen[chain] = true;
        assert_eq!(
            ran,
            tasks(chain),
            "{context}: {noun} {chain} ran the wrong number of tasks"
        );
    }
    if let Some(when) = shortfall {
        panic!(
            "{context}: only {} of {count} {noun}s finished {when}; a task was lost",
            seen.iter().filter(|&&s| s).count()
        );
    }
}

/// Once the system has shut down (every task has run and let go of its sender), no report
/// may be left over: one would mean a chain's last task ran twice.
pub fn assert_no_more_reports(rx: &Mailbox<Report>, context: Arguments<'_>, noun: &str) {
    if let Some((chain, ran)) = rx.try_recv() {
        panic!("{context}: {noun} {chain} reported again after {ran} tasks");
    }
}

/// One task of a chain on an ember pool: spawns the next on the pool it runs on
/// ([`ember::spawn`], the counterpart of the `rayon::spawn` and `tokio::spawn` the peers'
/// tasks call), or reports the chain done.
pub fn hop_ember(baton: Baton, tx: Post<Report>) {
    match baton.pass() {
        Some(next) => ember::spawn(move || hop_ember(next, tx)),
        None => baton.report(&tx),
    }
}

/// One task of a chain on tokio (runs inside a task, so `tokio::spawn` finds the runtime).
pub fn hop_tokio(baton: Baton, tx: Post<Report>) {
    match baton.pass() {
        Some(next) => {
            tokio::spawn(async move { hop_tokio(next, tx) });
        }
        None => baton.report(&tx),
    }
}

#[cfg(test)]
mod tests {
    use super::{Baton, Report};

    /// A wave of `reports` from chains that each should run 5 tasks, checked.
    fn check(reports: &[Report], count: usize) {
        let (tx, rx) = crate::experiments::mailbox::mailbox();
        reports.iter().for_each(|&report| tx.send(report));
        drop(tx);
        let wait = std::time::Duration::from_secs(60);
        super::collect_wave(&rx, count, |_| 5, wait, format_args!("test"), "ring");
    }

    #[test]
    fn a_whole_wave_passes() {
        check(&[(1, 5), (0, 5)], 2);
    }

    #[test]
    #[should_panic(expected = "ring 0 finished twice")]
    fn a_chain_that_reports_twice_fails_even_in_a_short_wave() {
        check(&[(0, 5), (0, 5)], 3);
    }

    #[test]
    #[should_panic(expected = "ring 1 ran the wrong number of tasks")]
    fn a_chain_that_ran_too_few_tasks_fails() {
        check(&[(0, 5), (1, 4)], 2);
    }

    #[test]
    #[should_panic(expected = "only 1 of 2 rings finished before every sender was gone")]
    fn a_lost_report_fails() {
        check(&[(1, 5)], 2);
    }

    #[test]
    fn a_chain_of_three_passes_twice_and_reports_three() {
        let (tx, rx) = crate::experiments::mailbox::mailbox();
        let mut baton = Baton::first(7, 3);
        let mut passes = 0;
        while let Some(next) = baton.pass() {
            baton = next;
            passes += 1;
        }
        baton.report(&tx);
        assert_eq!(passes, 2);
        assert_eq!(rx.try_recv(), Some((7, 3)));
    }
}
