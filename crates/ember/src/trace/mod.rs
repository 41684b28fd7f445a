//! Per-thread event recording, and export to the Chrome trace format (Perfetto,
//! chrome://tracing).
//!
//! With [`PoolBuilder::trace`](crate::PoolBuilder::trace) on, each worker records task spans
//! (with their labels), the time it spent asleep, the wake-ups that ended a sleep, steals and
//! kicks. Recording takes no lock: each worker appends to its own lock-free queue
//! (crossbeam's `SegQueue`), which [`Pool::trace`](crate::Pool::trace) drains. With tracing
//! off (the default) every recording point is one predictable branch on a flag that never
//! changes.
//!
//! ```
//! let pool = ember::Pool::builder().threads(2).trace(true).build().unwrap();
//! let a = pool.task(|| 1).label("decode 0").spawn();
//! let b = pool.task(|| 2).after(&[&a]).label("decode 1").spawn();
//! b.join().unwrap();
//! let trace = pool.trace();
//! assert!(trace.events().iter().any(|e| e.label.as_deref() == Some("decode 1")));
//! let path = std::env::temp_dir().join("ember-doc-trace.json");
//! trace.write_chrome_json(&path).unwrap();
//! ```

mod chrome;

use std::sync::Arc;
use std::time::Instant;

use crossbeam_queue::SegQueue;

/// A task's label, shared between the task and its trace events.
#[derive(Clone, Debug)]
pub(crate) struct Label(Arc<str>);

impl Label {
    pub(crate) fn new(text: String) -> Self {
        Label(text.into())
    }
}

/// What a [`TraceEvent`] records.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum TraceKind {
    /// A task or spawned closure ran from `start_ns` for `duration_ns`.
    Task,
    /// The worker slept from `start_ns` for `duration_ns`.
    Sleep,
    /// The worker was woken from a sleep (at `start_ns`).
    Wake,
    /// The worker stole a job from worker `other`.
    Steal,
    /// The worker kicked `count` held successors to its deque (delay-kick).
    Kick,
}

/// One recorded event.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct TraceEvent {
    /// What happened.
    pub kind: TraceKind,
    /// The worker it happened on.
    pub worker: usize,
    /// Nanoseconds since the pool was built.
    pub start_ns: u64,
    /// Length of a span (`Task`, `Sleep`); zero for instants.
    pub duration_ns: u64,
    /// The task's label, for labelled tasks.
    pub label: Option<String>,
    /// Victim of a `Steal`, number of jobs of a `Kick`.
    pub count: usize,
    /// On a `Wake`: the worker of the same pool that made the wake-up; `None` when a thread
    /// outside the pool made it (a caller, the pool's alarm thread, another pool's worker),
    /// or when no wake-up was noted (the sleep ran out its deadline). Of several wake-ups
    /// racing for one sleep, about the last one made.
    pub woken_by: Option<usize>,
    /// On a `Wake`: when the wake-up was made, on the clock of `start_ns`; `None` when none
    /// was noted. The Chrome export draws an arrow from the waker at this time to the woken
    /// worker at `start_ns`.
    pub woken_at_ns: Option<u64>,
}

impl TraceEvent {
    /// The label's *kind*: its text up to the first space or digit (`"decode 7"` → `"decode"`),
    /// what timelines colour by.
    pub fn label_kind(&self) -> Option<&str> {
        self.label.as_deref().map(|label| {
            let end = label
                .find(|c: char| c == ' ' || c.is_ascii_digit())
                .unwrap_or(label.len());
            &label[..end]
        })
    }
}

/// The events of one pool, drained by [`Pool::trace`](crate::Pool::trace).
#[derive(Clone, Debug, Default)]
pub struct Trace {
    name: String,
    threads: usize,
    events: Vec<TraceEvent>,
}

impl Trace {
    /// Every event, ordered by start time.
    pub fn events(&self) -> &[TraceEvent] {
        &self.events
    }

    /// Number of workers (rows of a timeline).
    pub fn threads(&self) -> usize {
        self.threads
    }

    /// Writes the Chrome trace event format (JSON) that Perfetto and chrome://tracing open:
    /// one row per worker, tasks and sleeps as spans, wake-ups, steals and kicks as instants.
    pub fn write_chrome_json(&self, path: impl AsRef<std::path::Path>) -> std::io::Result<()> {
        let file = std::io::BufWriter::new(std::fs::File::create(path)?);
        chrome::write(self, &self.name, file)
    }
}

struct Pending {
    kind: TraceKind,
    start: Instant,
    end: Instant,
    label: Option<Label>,
    count: usize,
    woken: crate::wake::Woken,
}

/// The recorder of one pool.
pub(crate) struct Tracer {
    enabled: bool,
    name: String,
    epoch: Instant,
    buffers: Box<[SegQueue<Pending>]>,
}

impl Tracer {
    pub(crate) fn new(enabled: bool, name: String, workers: usize) -> Self {
        Tracer {
            enabled,
            name,
            epoch: Instant::now(),
            buffers: (0..if enabled { workers } else { 0 })
                .map(|_| SegQueue::new())
                .collect(),
        }
    }

    pub(crate) fn enabled(&self) -> bool {
        self.enabled
    }

    /// The instant events are timed from, if this tracer records.
    pub(crate) fn epoch(&self) -> Option<Instant> {
        self.enabled.then_some(self.epoch)
    }

    /// Records that `worker` woke now, from a sleep `woken` tells who ended, and when.
    pub(crate) fn record_wake(&self, worker: usize, woken: crate::wake::Woken) {
        if self.enabled {
            let now = Instant::now();
            self.buffers[worker].push(Pending {
                kind: TraceKind::Wake,
                start: now,
                end: now,
                label: None,
                count: 0,
                woken,
            });
        }
    }

    /// Runs `task` in a task span on `worker`, recorded when it ends. `task` must catch its
    /// own panics (the span is recorded on an unwind too, but nothing of ember's may unwind).
    /// Off, this is one branch: no clock read, no label clone, no guard; every spawned job and
    /// dependent task comes through here.
    #[inline]
    pub(crate) fn in_task_span<R>(
        &self,
        worker: usize,
        label: Option<&Label>,
        task: impl FnOnce() -> R,
    ) -> R {
        if self.enabled {
            self.traced_task(worker, label, task)
        } else {
            task()
        }
    }

    #[cold]
    #[inline(never)]
    fn traced_task<R>(&self, worker: usize, label: Option<&Label>, task: impl FnOnce() -> R) -> R {
        let _span = Span {
            tracer: self,
            worker,
            start: Instant::now(),
            label: label.cloned(),
        };
        task()
    }

    /// Records an instant event on `worker` now. The clock is read only when tracing is on:
    /// steals and kicks call this on paths where a clock read would be their largest cost.
    #[inline]
    pub(crate) fn mark(&self, worker: usize, kind: TraceKind, count: usize) {
        if self.enabled {
            self.record(worker, kind, Instant::now(), count);
        }
    }

    /// Records a finished span or an instant (`start == end`).
    pub(crate) fn record(&self, worker: usize, kind: TraceKind, start: Instant, count: usize) {
        if self.enabled {
            self.buffers[worker].push(Pending {
                kind,
                start,
                end: Instant::now(),
                label: None,
                count,
                woken: Default::default(),
            });
        }
    }

    pub(crate) fn drain(&self) -> Trace {
        let mut events = Vec::new();
        for (worker, buffer) in self.buffers.iter().enumerate() {
            while let Some(p) = buffer.pop() {
                let start_ns = p.start.saturating_duration_since(self.epoch).as_nanos() as u64;
                let duration_ns = match p.kind {
                    TraceKind::Task | TraceKind::Sleep => {
                        p.end.saturating_duration_since(p.start).as_nanos() as u64
                    }
                    _ => 0,
                };
                events.push(TraceEvent {
                    kind: p.kind,
                    worker,
                    start_ns,
                    duration_ns,
                    label: p.label.map(|l| l.0.to_string()),
                    count: p.count,
                    woken_by: p.woken.by,
                    woken_at_ns: p.woken.at_ns,
                });
            }
        }
        events.sort_by_key(|e| e.start_ns);
        Trace {
            name: self.name.clone(),
            threads: self.buffers.len(),
            events,
        }
    }
}

/// A task span being recorded; recorded when dropped (also when the task unwinds).
struct Span<'a> {
    tracer: &'a Tracer,
    worker: usize,
    start: Instant,
    label: Option<Label>,
}

impl Drop for Span<'_> {
    fn drop(&mut self) {
        self.tracer.buffers[self.worker].push(Pending {
            kind: TraceKind::Task,
            start: self.start,
            end: Instant::now(),
            label: self.label.take(),
            count: 0,
            woken: Default::default(),
        });
    }
}
