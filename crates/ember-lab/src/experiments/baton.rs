//! The baton that chains of tasks hand along, in `cycle` (a ring's token) and in `micro`
//! (ping-pong and chained spawn): every task passes it to the task it spawns, and the chain's
//! last task reports how many tasks the chain ran, for the experiment to check.

use super::mailbox::Post;

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
    use super::Baton;

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
