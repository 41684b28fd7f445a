//! From a checked command group to its tasks: one per chunk of its range, and on a
//! distributed flow this rank's part with the sends and receives of its messages.

use std::panic::{self, AssertUnwindSafe};
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};

use super::graph::{self, Access};
use super::{
    command_group, dist, kernel, lock, ownership, region, Box3, CommandGroup, Flow, FlowError,
};

/// A task before the flow wraps its kernel.
pub(super) struct Lowered {
    pub(super) accesses: Vec<Access>,
    pub(super) kernel: Option<Box<dyn FnOnce() + Send + 'static>>,
    pub(super) label: Option<String>,
    pub(super) events: Vec<crate::Event>,
}

impl Flow {
    /// A command group on a distributed flow: this rank's part of the range, and the
    /// messages it sends and receives for the group (see [`dist`]).
    pub(super) fn lower_distributed(
        &self,
        cg: CommandGroup,
        dist: &Arc<dist::Dist>,
        state: &mut dist::DistState,
    ) -> Result<Vec<Lowered>, FlowError> {
        let Some(range) = &cg.range else {
            let hash = dist::declaration_hash(cg.label.as_deref(), None, &cg.accesses, &[]);
            let label = cg.label.clone();
            let tasks = self.lower(cg)?;
            dist::Dist::record(state, hash, label.as_deref());
            return Ok(tasks);
        };
        let transport = &dist.transport;
        let (me, ranks) = (transport.rank(), transport.ranks());
        let per_rank = ownership::rank_accesses(&cg.typed, &range.range, range.dims, ranks)?;
        let mine = ownership::rank_part(&range.range, ranks, me);
        let parts = cg.chunks.unwrap_or_else(|| self.pool.threads()).max(1);
        for chunk in split(&mine, parts) {
            let regions = chunk_regions(&cg.typed, &chunk, range.dims)?;
            for (k, boxes) in regions.iter().enumerate() {
                if !ownership::covered(boxes, &per_rank[k].per_rank[me]) {
                    return Err(FlowError::Declaration(format!(
                        "the range mapper of accessor {k} maps a part of rank {me}'s chunk \
                         outside the region it maps the whole chunk to; a mapper must be \
                         monotone"
                    )));
                }
            }
        }
        let transfers = ownership::Ownership::plan(&mut state.ownership, &per_rank)
            .map_err(FlowError::Declaration)?;
        let hash = dist::declaration_hash(
            cg.label.as_deref(),
            Some((range.dims, &range.range)),
            &cg.accesses,
            &per_rank,
        );
        dist::Dist::record(state, hash, cg.label.as_deref());
        let mut tasks = Vec::new();
        for t in transfers.iter().filter(|t| t.from == me) {
            let typed = &cg.typed[t.access];
            let (storage, area, to, tag) = (typed.storage.clone(), t.area, t.to, dist.tag(t.tag));
            let dist = dist.clone();
            tasks.push(Lowered {
                accesses: vec![Access {
                    buffer: typed.buffer.index,
                    extent: typed.buffer.extent,
                    mode: graph::Mode::Read,
                    boxes: vec![area],
                }],
                kernel: Some(Box::new(move || {
                    // SAFETY: this task declared a read of `area`, so no task writes it
                    // while it runs.
                    let bytes = unsafe { storage.pack(&area) };
                    dist.stats.messages_sent.fetch_add(1, Ordering::Relaxed);
                    dist.stats
                        .bytes_sent
                        .fetch_add(bytes.len() as u64, Ordering::Relaxed);
                    dist.transport.send(to, tag, bytes);
                })),
                label: Some("send".into()),
                events: Vec::new(),
            });
        }
        for t in transfers.iter().filter(|t| t.to == me) {
            let typed = &cg.typed[t.access];
            let (storage, area) = (typed.storage.clone(), t.area);
            let arrived = self.pool.event();
            let slot: Arc<Mutex<Option<Vec<u8>>>> = Arc::default();
            let (into, done) = (slot.clone(), arrived.clone());
            let len = area.volume() * storage.element_size();
            transport.receive(
                t.from,
                dist.tag(t.tag),
                len,
                Box::new(move |bytes| {
                    *lock(&into) = Some(bytes);
                    done.complete();
                }),
            );
            let dist = dist.clone();
            tasks.push(Lowered {
                accesses: vec![Access {
                    buffer: typed.buffer.index,
                    extent: typed.buffer.extent,
                    mode: graph::Mode::Write,
                    boxes: vec![area],
                }],
                kernel: Some(Box::new(move || {
                    // Another length: the ranks diverged, which the next check reports.
                    if let Some(bytes) = lock(&slot).take().filter(|b| b.len() == len) {
                        dist.stats.messages_received.fetch_add(1, Ordering::Relaxed);
                        dist.stats
                            .bytes_received
                            .fetch_add(bytes.len() as u64, Ordering::Relaxed);
                        // SAFETY: this task declared a write of `area`, so no other task
                        // touches it while it runs.
                        unsafe { storage.unpack(&area, &bytes) };
                    }
                })),
                label: Some("receive".into()),
                events: vec![arrived],
            });
        }
        let mut cg = cg;
        let range = cg.range.take().expect("checked above");
        let mut local = range;
        local.range = mine;
        cg.range = Some(local);
        tasks.extend(self.lower(cg)?);
        Ok(tasks)
    }

    /// Turns a checked command group into its tasks: itself, or one per chunk of its range.
    pub(super) fn lower(&self, cg: CommandGroup) -> Result<Vec<Lowered>, FlowError> {
        let Some(range) = cg.range else {
            if !cg.typed.is_empty() {
                return Err(FlowError::Declaration(
                    "accessors of a Buffer need a parallel_for kernel".into(),
                ));
            }
            return Ok(vec![Lowered {
                accesses: cg.accesses,
                kernel: cg.kernel,
                label: cg.label,
                events: Vec::new(),
            }]);
        };
        let parts = cg.chunks.unwrap_or_else(|| self.pool.threads()).max(1);
        let mut out = Vec::new();
        for chunk in split(&range.range, parts) {
            let regions = chunk_regions(&cg.typed, &chunk, range.dims)?;
            let mut accesses = cg.accesses.clone();
            for (t, boxes) in cg.typed.iter().zip(&regions) {
                accesses.push(Access {
                    buffer: t.buffer.index,
                    extent: t.buffer.extent,
                    mode: t.mode,
                    boxes: boxes.clone(),
                });
            }
            let kernel = range.kernel.clone();
            let ctx = kernel::ChunkCtx {
                group: cg.group,
                range: chunk,
                regions,
            };
            out.push(Lowered {
                accesses,
                kernel: Some(Box::new(move || kernel(ctx))),
                label: cg.label.clone(),
                events: Vec::new(),
            });
        }
        Ok(out)
    }
}

/// `range` cut along its first dimension into at most `parts` non-empty boxes, as even as
/// can be (sizes differ by at most one).
pub(crate) fn split(range: &Box3, parts: usize) -> Vec<Box3> {
    if range.is_empty() {
        return Vec::new();
    }
    let n = range.hi[0] - range.lo[0];
    (0..parts)
        .map(|k| {
            let mut b = *range;
            b.lo[0] = range.lo[0] + n * k / parts;
            b.hi[0] = range.lo[0] + n * (k + 1) / parts;
            b
        })
        .filter(|b| !b.is_empty())
        .collect()
}

/// The boxes every accessor's mapper gives `chunk`, checked against its buffer.
pub(super) fn chunk_regions(
    typed: &[command_group::Typed],
    chunk: &Box3,
    dims: usize,
) -> Result<Vec<Vec<Box3>>, FlowError> {
    typed
        .iter()
        .map(|t| {
            // A mapper is user code: its panic becomes this submission's error.
            let region = panic::catch_unwind(AssertUnwindSafe(|| t.mapper.map(chunk, dims)))
                .map_err(|payload| {
                    let message = crate::task::panic_message(&*payload).unwrap_or("(no message)");
                    FlowError::Declaration(format!("a range mapper panicked: {message}"))
                })?;
            region
                .resolve(t.buffer.dims(), t.buffer.extent)
                .map_err(|misfit| match misfit {
                    region::Misfit::Dimensions { region } => FlowError::Dimensions {
                        buffer: t.buffer,
                        region,
                    },
                    region::Misfit::OutOfBounds { region } => FlowError::OutOfBounds {
                        buffer: t.buffer,
                        region,
                    },
                })
        })
        .collect()
}
