//! Ping-pong and chained spawn: relays of tasks, each spawning the next, on ember, rayon and
//! tokio (and, for ping-pong, tokio tasks passing the ball over channels).

use super::*;
use crate::experiments::baton::{
    assert_no_more_reports, collect_wave, hop_ember, hop_tokio, Baton, Report,
};
use crate::experiments::mailbox::{mailbox, Mailbox, Post};
use crate::systems;

/// A set of relays: `concurrent` relays run at once, `waves` times one after another, each
/// `length` task runs long. Ping-pong is one wave of `pairs` relays (the two tasks of a
/// pair alternate, so a pair is a relay); chained spawn is `chains` waves of one relay.
#[derive(Clone, Copy, Debug)]
pub(super) struct Relays {
    concurrent: usize,
    waves: usize,
    length: u64,
    what: &'static str,
}

impl Relays {
    pub(super) fn ping_pong(s: Sizes) -> Relays {
        Relays {
            concurrent: s.pairs,
            waves: 1,
            length: s.bounces,
            what: "ping-pong",
        }
    }

    pub(super) fn chains(s: Sizes) -> Relays {
        Relays {
            concurrent: 1,
            waves: s.chains,
            length: s.chain_depth,
            what: "chained spawn",
        }
    }

    fn ops(&self) -> u64 {
        (self.concurrent * self.waves) as u64 * self.length
    }

    /// The first baton of every relay of a wave.
    fn batons(&self) -> impl Iterator<Item = Baton> {
        let length = self.length;
        (0..self.concurrent).map(move |relay| Baton::first(relay, length))
    }

    /// Waits for every relay of a wave to report once, with exactly `length` runs.
    fn collect(&self, rx: &Mailbox<Report>, system: &str) {
        let context = format_args!("micro: {} on {system}", self.what);
        collect_wave(
            rx,
            self.concurrent,
            |_| self.length,
            TIMEOUT,
            context,
            "relay",
        );
    }

    /// Once the system has shut down, nothing may report any more.
    fn check_quiet(&self, rx: &Mailbox<Report>, system: &str) {
        let context = format_args!("micro: {} on {system}", self.what);
        assert_no_more_reports(rx, context, "relay");
    }
}

/// The rows of a relay benchmark: every ember policy and the rows that vary deferral, rayon and
/// tokio.
pub(super) fn relay_trials(s: Sizes, relays: Relays) -> Vec<Trial> {
    ember_trials(move |v| relays_ember(s, relays, v))
        .into_iter()
        .chain([
            trial(systems::RAYON, move || relays_rayon(s, relays)),
            trial(systems::TOKIO, move || relays_tokio(s, relays)),
        ])
        .collect()
}

fn relays_ember(s: Sizes, relays: Relays, policy: EmberPolicy) -> Metrics {
    let pool = policy.build(s.threads, "micro");
    let (tx, rx) = mailbox();
    let start = Instant::now();
    for _ in 0..relays.waves {
        for baton in relays.batons() {
            let tx = tx.clone();
            pool.spawn(move || hop_ember(baton, tx));
        }
        relays.collect(&rx, policy.system().name);
    }
    let elapsed = start.elapsed();
    drop(tx);
    let metrics = finish_ember(pool, rate(relays.ops(), elapsed));
    relays.check_quiet(&rx, policy.system().name);
    metrics
}

/// One task of a relay on rayon (runs on a pool thread, so `rayon::spawn` uses that pool).
fn hop_rayon(baton: Baton, tx: Post<Report>) {
    match baton.pass() {
        Some(next) => rayon::spawn(move || hop_rayon(next, tx)),
        None => baton.report(&tx),
    }
}

fn relays_rayon(s: Sizes, relays: Relays) -> Metrics {
    let (tx, rx) = mailbox();
    let metrics = with_rayon(s.threads, |pool| {
        let start = Instant::now();
        for _ in 0..relays.waves {
            for baton in relays.batons() {
                let tx = tx.clone();
                pool.spawn(move || hop_rayon(baton, tx));
            }
            relays.collect(&rx, "rayon");
        }
        rate(relays.ops(), start.elapsed())
    });
    relays.check_quiet(&rx, "rayon");
    metrics
}

fn relays_tokio(s: Sizes, relays: Relays) -> Metrics {
    let rt = tokio_runtime(s.threads, "micro-tokio");
    let (tx, rx) = mailbox();
    let start = Instant::now();
    for _ in 0..relays.waves {
        for baton in relays.batons() {
            let tx = tx.clone();
            rt.spawn(async move { hop_tokio(baton, tx) });
        }
        relays.collect(&rx, "tokio");
    }
    let elapsed = start.elapsed();
    drop(rt);
    relays.check_quiet(&rx, "tokio");
    rate(relays.ops(), elapsed)
}

/// Ping-pong the tokio way: per pair, two long-lived tasks and a channel each way. The
/// ball is the number of bounces so far; a bounce is one message received.
pub(super) fn ping_pong_tokio_mpsc(s: Sizes) -> Metrics {
    use tokio::sync::mpsc;

    /// One player: serves first if `serve`, then returns the ball until the pair has made
    /// `bounces` bounces (returning `Some(bounces)` from the player that made the last) or
    /// the partner has left.
    async fn player(
        serve: bool,
        mut inbox: mpsc::Receiver<u64>,
        outbox: mpsc::Sender<u64>,
        bounces: u64,
    ) -> Option<u64> {
        if serve {
            outbox.send(0).await.ok()?;
        }
        loop {
            let ball = inbox.recv().await? + 1;
            if ball == bounces {
                return Some(ball);
            }
            outbox.send(ball).await.ok()?;
        }
    }

    let rt = tokio_runtime(s.threads, "micro-tokio");
    let bounces = s.bounces;
    let start = Instant::now();
    let finals = rt.block_on(async move {
        let pairs: Vec<_> = (0..s.pairs)
            .map(|_| {
                let (to_pong, pong_inbox) = mpsc::channel(1);
                let (to_ping, ping_inbox) = mpsc::channel(1);
                let ping = tokio::spawn(player(true, ping_inbox, to_pong, bounces));
                let pong = tokio::spawn(player(false, pong_inbox, to_ping, bounces));
                (ping, pong)
            })
            .collect();
        let mut finals = Vec::with_capacity(pairs.len());
        for (ping, pong) in pairs {
            let a = ping.await.expect("micro: a tokio ping task failed");
            let b = pong.await.expect("micro: a tokio pong task failed");
            finals.push((a, b));
        }
        finals
    });
    let elapsed = start.elapsed();
    drop(rt);
    for (pair, finish) in finals.iter().enumerate() {
        let made = match *finish {
            (Some(n), None) | (None, Some(n)) => n,
            other => panic!("micro: ping-pong on tokio-mpsc: pair {pair} ended as {other:?}"),
        };
        assert_eq!(
            made, bounces,
            "micro: ping-pong on tokio-mpsc: pair {pair} made the wrong number of bounces"
        );
    }
    rate(s.pairs as u64 * bounces, elapsed)
}
