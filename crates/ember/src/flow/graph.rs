//! Dependency inference: from declared accesses to the edges of a task graph.
//!
//! Pure and single-threaded: the scheduler (inline or on its own thread) owns one
//! [`Graph`] and feeds it tasks in submission order.
//!
//! # The region map
//!
//! Per buffer, a list of *fragments*: disjoint boxes that together cover the buffer's index
//! space, each with the task that last wrote it (if any) and the tasks that read it since that
//! write. A new access is compared with the fragments it overlaps:
//!
//! - a **read** depends on the fragment's last writer (read-after-write);
//! - a **write** depends on the fragment's readers (write-after-read) if there are any, and
//!   otherwise on its last writer (write-after-write);
//! - a **read-write** does both: the last writer and the readers.
//!
//! Then the overlapped part of each fragment is split off and updated: a read adds the task to
//! its readers, a write makes the task its last writer with no readers. All of a task's
//! dependencies are computed against the state *before* the task, then its reads and then its
//! writes are applied, so a task that reads and writes the same part ends as its writer.
//!
//! # Which edges are avoided
//!
//! Edges are deduplicated per task, and a task never depends on itself. The one transitive edge
//! the rule avoids: a write to a fragment that has readers does not also depend on the
//! fragment's last writer, since every reader in the list read *after* that writer and so
//! already depends on it. Every other edge joins two tasks whose accesses directly conflict
//! (they overlap on a buffer and at least one writes); the graph is not transitively reduced
//! beyond that.
//!
//! # Horizons
//!
//! With `horizon_every = n > 0`, after every `n` tasks the graph inserts a *horizon*: for each
//! buffer that any task touched since the previous horizon, a node that depends on every task
//! that buffer's fragments still name, after which the buffer collapses to one fragment whose
//! last writer is that node. Every earlier task that touched the buffer reaches its horizon
//! node (a task leaves a buffer's map only when a later task on the same buffer that depends
//! on it, or on a reader that depends on it, replaces it), and two tasks conflict only on a
//! buffer they share, so a later task that depends on the buffer's horizon node is ordered
//! after everything it could conflict with there. A buffer nobody touched since keeps the node
//! it had. The map then never holds more than what `n` tasks can create, however long the run.
//! (Without horizons the map stays exact but can grow: a buffer that is only ever read collects
//! every reader.) The price: the failure of a task propagates through the horizon nodes of the
//! buffers it touched, to every later task on those buffers (see [`Flow`](super::Flow)); one
//! node per buffer keeps it from reaching the others.

use std::collections::HashMap;

use super::region::Box3;

/// A node of the inferred graph: a task or a horizon, numbered in submission order.
pub(crate) type NodeId = u64;

/// How a task touches a buffer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Mode {
    Read,
    Write,
    ReadWrite,
}

impl Mode {
    pub(crate) fn reads(self) -> bool {
        matches!(self, Mode::Read | Mode::ReadWrite)
    }
    pub(crate) fn writes(self) -> bool {
        matches!(self, Mode::Write | Mode::ReadWrite)
    }
}

/// One declared access, already checked against the buffer.
#[derive(Clone, Debug)]
pub(crate) struct Access {
    /// The buffer's index within its flow.
    pub buffer: u32,
    /// The buffer's full extent (its region map covers exactly this box).
    pub extent: [usize; 3],
    pub mode: Mode,
    pub boxes: Vec<Box3>,
}

#[derive(Clone, Debug)]
struct Fragment {
    area: Box3,
    writer: Option<NodeId>,
    readers: Vec<NodeId>,
}

/// What adding a task produced.
#[derive(Debug, Default)]
pub(crate) struct Added {
    /// The new task's id.
    pub id: NodeId,
    /// What it depends on, sorted, without duplicates.
    pub deps: Vec<NodeId>,
    /// The nodes of a horizon inserted right after the task, if one was due: one per buffer
    /// touched since the previous horizon, each with its id and dependencies.
    pub horizon: Vec<(NodeId, Vec<NodeId>)>,
}

/// The dependency-inference state of one flow.
#[derive(Debug)]
pub(crate) struct Graph {
    buffers: HashMap<u32, Vec<Fragment>>,
    /// Buffers touched since the last horizon, without repetitions.
    touched: Vec<u32>,
    next: NodeId,
    horizon_every: usize,
    since_horizon: usize,
}

impl Graph {
    pub(crate) fn new(horizon_every: usize) -> Self {
        Graph {
            buffers: HashMap::new(),
            touched: Vec::new(),
            next: 0,
            horizon_every,
            since_horizon: 0,
        }
    }

    /// Adds a task with the given accesses; returns its id, its dependencies and a horizon if
    /// one was due.
    pub(crate) fn add(&mut self, accesses: &[Access]) -> Added {
        let id = self.next;
        self.next += 1;
        let mut deps = Vec::new();
        for access in accesses {
            if !self.touched.contains(&access.buffer) {
                self.touched.push(access.buffer);
            }
            let frags = self
                .buffers
                .entry(access.buffer)
                .or_insert_with(|| fresh(access.extent));
            for b in &access.boxes {
                for f in frags.iter().filter(|f| f.area.intersects(b)) {
                    let readers_cover = access.mode.writes() && !f.readers.is_empty();
                    if access.mode.reads() || !readers_cover {
                        deps.extend(f.writer);
                    }
                    if access.mode.writes() {
                        deps.extend(f.readers.iter().copied());
                    }
                }
            }
        }
        // Reads first, then writes: a part both read and written ends written.
        for pass_writes in [false, true] {
            for access in accesses.iter().filter(|a| a.mode.writes() == pass_writes) {
                let frags = self.buffers.get_mut(&access.buffer).expect("entered above");
                for b in &access.boxes {
                    apply(frags, b, id, pass_writes);
                }
            }
        }
        deps.sort_unstable();
        deps.dedup();
        let mut added = Added {
            id,
            deps,
            horizon: Vec::new(),
        };
        self.since_horizon += 1;
        if self.horizon_every > 0 && self.since_horizon >= self.horizon_every {
            added.horizon = self.horizon();
        }
        added
    }

    /// Inserts a horizon now: for each buffer touched since the last one, in the order they
    /// were first touched, a node after every task the buffer's map still names.
    pub(crate) fn horizon(&mut self) -> Vec<(NodeId, Vec<NodeId>)> {
        self.since_horizon = 0;
        let mut nodes = Vec::with_capacity(self.touched.len());
        for buffer in self.touched.drain(..) {
            let frags = self
                .buffers
                .get_mut(&buffer)
                .expect("touched buffers are mapped");
            let id = self.next;
            self.next += 1;
            let mut deps: Vec<NodeId> = frags
                .iter()
                .flat_map(|f| f.writer.iter().chain(&f.readers).copied())
                .collect();
            deps.sort_unstable();
            deps.dedup();
            let whole = frags
                .iter()
                .fold(frags[0].area, |acc, f| hull(&acc, &f.area));
            *frags = vec![Fragment {
                area: whole,
                writer: Some(id),
                readers: Vec::new(),
            }];
            nodes.push((id, deps));
        }
        nodes
    }

    /// Every node the map still names (with repetitions).
    pub(crate) fn live(&self) -> Vec<NodeId> {
        let mut out = Vec::new();
        for f in self.buffers.values().flatten() {
            out.extend(f.writer);
            out.extend(f.readers.iter().copied());
        }
        out
    }

    /// The size of the tracking state: fragments plus reader entries.
    #[cfg(test)]
    pub(crate) fn tracked(&self) -> usize {
        self.buffers
            .values()
            .flatten()
            .map(|f| 1 + f.readers.len())
            .sum()
    }
}

fn fresh(extent: [usize; 3]) -> Vec<Fragment> {
    vec![Fragment {
        area: Box3::from_extent(extent),
        writer: None,
        readers: Vec::new(),
    }]
}

fn hull(a: &Box3, b: &Box3) -> Box3 {
    let mut out = *a;
    for d in 0..3 {
        out.lo[d] = a.lo[d].min(b.lo[d]);
        out.hi[d] = a.hi[d].max(b.hi[d]);
    }
    out
}

/// Records that `id` reads (or writes) `b`: splits the fragments `b` overlaps and updates the
/// overlapped parts.
fn apply(frags: &mut Vec<Fragment>, b: &Box3, id: NodeId, write: bool) {
    let mut split = Vec::new();
    let mut i = 0;
    while i < frags.len() {
        if !frags[i].area.intersects(b) {
            i += 1;
            continue;
        }
        // The untouched fragments keep their places; the element swapped in is looked at next.
        let f = frags.swap_remove(i);
        for piece in f.area.subtract(b) {
            split.push(Fragment {
                area: piece,
                writer: f.writer,
                readers: f.readers.clone(),
            });
        }
        let area = f.area.intersection(b);
        if write {
            split.push(Fragment {
                area,
                writer: Some(id),
                readers: Vec::new(),
            });
        } else {
            let mut readers = f.readers;
            if readers.last() != Some(&id) {
                readers.push(id);
            }
            split.push(Fragment {
                area,
                writer: f.writer,
                readers,
            });
        }
    }
    frags.append(&mut split);
}

#[cfg(test)]
#[allow(clippy::single_range_in_vec_init)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use proptest::test_runner::{RngAlgorithm, TestRng};
    use std::collections::HashSet;

    fn bx1(lo: usize, hi: usize) -> Box3 {
        Box3 {
            lo: [lo, 0, 0],
            hi: [hi, 1, 1],
        }
    }

    fn acc(buffer: u32, mode: Mode, b: Box3, extent: [usize; 3]) -> Access {
        Access {
            buffer,
            extent,
            mode,
            boxes: vec![b],
        }
    }

    #[test]
    fn writer_after_readers_skips_the_old_writer() {
        let ext = [10, 1, 1];
        let mut g = Graph::new(0);
        let w = g.add(&[acc(0, Mode::Write, bx1(0, 10), ext)]);
        let r1 = g.add(&[acc(0, Mode::Read, bx1(0, 5), ext)]);
        let r2 = g.add(&[acc(0, Mode::Read, bx1(3, 10), ext)]);
        assert_eq!(r1.deps, vec![w.id]);
        assert_eq!(r2.deps, vec![w.id]);
        let w2 = g.add(&[acc(0, Mode::Write, bx1(0, 10), ext)]);
        assert_eq!(w2.deps, vec![r1.id, r2.id]);
        let w3 = g.add(&[acc(0, Mode::Write, bx1(2, 4), ext)]);
        assert_eq!(w3.deps, vec![w2.id]);
        let rw = g.add(&[acc(0, Mode::ReadWrite, bx1(0, 3), ext)]);
        assert_eq!(rw.deps, vec![w2.id, w3.id]);
    }

    /// A horizon has one node per buffer touched since the last one, each after that buffer's
    /// tasks only; a buffer left alone keeps its node.
    #[test]
    fn horizon_nodes_are_per_buffer() {
        let ext = [10, 1, 1];
        let (a, b) = (0, 1);
        let mut g = Graph::new(2);
        let t0 = g.add(&[acc(a, Mode::Write, bx1(0, 10), ext)]);
        let t1 = g.add(&[acc(b, Mode::Write, bx1(0, 10), ext)]);
        assert!(t0.horizon.is_empty());
        let [(ha, ha_deps), (hb, hb_deps)] = &t1.horizon[..] else {
            panic!("two nodes: {:?}", t1.horizon);
        };
        assert_eq!((ha_deps, hb_deps), (&vec![t0.id], &vec![t1.id]));
        let t2 = g.add(&[acc(b, Mode::Read, bx1(0, 5), ext)]);
        let t3 = g.add(&[acc(b, Mode::Read, bx1(5, 10), ext)]);
        assert_eq!((&t2.deps, &t3.deps), (&vec![*hb], &vec![*hb]));
        // Only `b` was touched: one node, after its writer and both readers.
        let [(hb2, hb2_deps)] = &t3.horizon[..] else {
            panic!("one node: {:?}", t3.horizon);
        };
        assert_eq!(hb2_deps, &vec![*hb, t2.id, t3.id]);
        // `a` still names its first horizon node.
        let t4 = g.add(&[acc(a, Mode::Read, bx1(0, 10), ext)]);
        assert_eq!(t4.deps, vec![*ha]);
        let t5 = g.add(&[acc(b, Mode::Write, bx1(0, 1), ext)]);
        assert_eq!(t5.deps, vec![*hb2]);
    }

    #[test]
    fn horizons_bound_the_tracking_state_over_100k_tasks() {
        let ext = [64, 64, 1];
        let mut g = Graph::new(32);
        // Seeded, so every run checks the same 100k tasks.
        let mut rng = TestRng::from_seed(RngAlgorithm::ChaCha, &[7; 32]);
        let mut max = 0;
        let mut horizons = 0;
        for i in 0..100_000 {
            let accesses: Vec<Access> = (0..3)
                .map(|_| {
                    let mut b = Box3 {
                        lo: [0; 3],
                        hi: [1; 3],
                    };
                    // Corners on an 8-index grid keep the test fast in debug builds.
                    for d in 0..2 {
                        let x = rng.random_range(0..8) * 8;
                        let y = rng.random_range(0..8) * 8;
                        b.lo[d] = x.min(y);
                        b.hi[d] = x.max(y) + 8;
                    }
                    let mode = [Mode::Read, Mode::Write, Mode::ReadWrite][rng.random_range(0..3)];
                    acc(rng.random_range(0..4) as u32, mode, b, ext)
                })
                .collect();
            let added = g.add(&accesses);
            horizons += !added.horizon.is_empty() as usize;
            if i % 32 == 30 {
                // Just before the next horizon: the largest the state gets.
                max = max.max(g.tracked());
            }
        }
        assert_eq!(horizons, 100_000 / 32);
        max = max.max(g.tracked());
        // What 32 tasks of 3 boxes each can leave: 4 buffers of at most 8 × 8 fragments,
        // each naming its writer and at most 32 readers.
        assert!(max > 4, "the state was measured while populated");
        assert!(max <= 4 * 8 * 8 * 33, "tracked state grew to {max}");
    }

    const EXTENTS: [[usize; 3]; 2] = [[12, 1, 1], [6, 5, 1]];

    fn arb_access() -> impl Strategy<Value = Access> {
        (
            0u32..2,
            0usize..3,
            0usize..12,
            0usize..12,
            0usize..5,
            0usize..5,
        )
            .prop_map(|(buffer, mode, a, b, c, d)| {
                let extent = EXTENTS[buffer as usize];
                let mut bx = Box3 {
                    lo: [0; 3],
                    hi: [1; 3],
                };
                bx.lo[0] = a.min(b) % extent[0];
                bx.hi[0] = (a.max(b) % extent[0]).max(bx.lo[0]) + 1;
                if buffer == 1 {
                    bx.lo[1] = c.min(d);
                    bx.hi[1] = c.max(d) + 1;
                }
                let mode = [Mode::Read, Mode::Write, Mode::ReadWrite][mode];
                acc(buffer, mode, bx, extent)
            })
    }

    fn conflict(a: &[Access], b: &[Access]) -> bool {
        a.iter().any(|x| {
            b.iter().any(|y| {
                x.buffer == y.buffer
                    && (x.mode.writes() || y.mode.writes())
                    && x.boxes
                        .iter()
                        .any(|p| y.boxes.iter().any(|q| p.intersects(q)))
            })
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]

        /// Completeness: every conflicting pair is ordered (reachable in the inferred DAG,
        /// through horizons too). Soundness: every edge between two tasks joins a directly
        /// conflicting pair; the only other edges are to and from horizons. No duplicates.
        #[test]
        fn inferred_edges_match_brute_force(
            tasks in proptest::collection::vec(proptest::collection::vec(arb_access(), 1..4), 1..40),
            horizon_every in prop_oneof![Just(0usize), 1usize..8],
        ) {
            let mut g = Graph::new(horizon_every);
            let mut preds: HashMap<NodeId, Vec<NodeId>> = HashMap::new();
            let mut task_of: HashMap<NodeId, usize> = HashMap::new();
            let mut ids = Vec::new();
            for (i, accesses) in tasks.iter().enumerate() {
                let added = g.add(accesses);
                let unique: HashSet<_> = added.deps.iter().collect();
                prop_assert_eq!(unique.len(), added.deps.len());
                prop_assert!(!added.deps.contains(&added.id));
                for d in &added.deps {
                    if let Some(&j) = task_of.get(d) {
                        prop_assert!(conflict(&tasks[j], accesses), "edge {} -> {} without a conflict", j, i);
                    }
                }
                task_of.insert(added.id, i);
                ids.push(added.id);
                preds.insert(added.id, added.deps);
                for (h, deps) in added.horizon {
                    preds.insert(h, deps);
                }
            }
            // ancestors of each node, in id order (ids are topological).
            let mut order: Vec<NodeId> = preds.keys().copied().collect();
            order.sort_unstable();
            let mut anc: HashMap<NodeId, HashSet<NodeId>> = HashMap::new();
            for n in order {
                let mut set = HashSet::new();
                for p in &preds[&n] {
                    prop_assert!(*p < n);
                    set.insert(*p);
                    set.extend(anc[p].iter().copied());
                }
                anc.insert(n, set);
            }
            for j in 0..tasks.len() {
                for i in 0..j {
                    if conflict(&tasks[i], &tasks[j]) {
                        prop_assert!(anc[&ids[j]].contains(&ids[i]), "{} and {} conflict but are unordered", i, j);
                    }
                }
            }
        }
    }
}
