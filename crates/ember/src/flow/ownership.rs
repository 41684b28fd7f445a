//! Ownership planning for a distributed flow: which rank last wrote each region of every
//! buffer, and what must move before each command group runs.
//!
//! Every rank keeps the same [`Ownership`] map (the same program plans the same groups in
//! the same order), so every rank computes the same list of [`Transfer`]s and numbers them
//! alike per (sender, receiver) pair without talking. [`rank_part`] says which part of a
//! range each rank executes, [`rank_accesses`] what each rank's part touches; the
//! exchange itself and the collective checks are in [`dist`](super::dist).

use std::collections::HashMap;

use super::command_group::Typed;
use super::graph::Mode;
use super::{Box3, FlowError};

/// One box of a buffer in the ownership map.
#[derive(Clone, Debug)]
struct Frag {
    area: Box3,
    /// The rank that last wrote it; `None` while it holds the initial data.
    owner: Option<usize>,
    /// The ranks whose copy is current (ignored while `owner` is `None`).
    valid: Vec<bool>,
}

/// An accessor of one command group as every rank sees it: the boxes each rank's part of the
/// range maps to.
#[derive(Clone, Debug)]
pub(crate) struct RankAccess {
    pub buffer: u32,
    pub extent: [usize; 3],
    pub mode: Mode,
    /// Per rank, its boxes (none for a rank without a part).
    pub per_rank: Vec<Vec<Box3>>,
}

/// One message of buffer data: box `area` of the buffer of accessor `access`, from `from` to
/// `to`, under `tag`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(crate) struct Transfer {
    pub access: usize,
    pub from: usize,
    pub to: usize,
    pub area: Box3,
    pub tag: u64,
}

/// The ownership map of every buffer and the message counters: the same on every rank.
#[derive(Debug)]
pub(crate) struct Ownership {
    ranks: usize,
    buffers: HashMap<u32, Vec<Frag>>,
    /// Messages so far per (from, to): the next data tag is twice the count.
    sent: Vec<u64>,
}

impl Ownership {
    pub(crate) fn new(ranks: usize) -> Self {
        Ownership {
            ranks,
            buffers: HashMap::new(),
            sent: vec![0; ranks * ranks],
        }
    }

    /// Plans one command group: the messages it needs, in the order every rank lists them,
    /// and the map after its writes. Refuses (changing nothing) a group whose parts write
    /// the same elements on different ranks.
    pub(crate) fn plan(&mut self, accesses: &[RankAccess]) -> Result<Vec<Transfer>, String> {
        for a in accesses.iter().filter(|a| a.mode.writes()) {
            for r1 in 0..self.ranks {
                for r2 in r1 + 1..self.ranks {
                    for b1 in &a.per_rank[r1] {
                        if let Some(b2) = a.per_rank[r2].iter().find(|b2| b1.intersects(b2)) {
                            return Err(format!(
                                "the parts of ranks {r1} and {r2} both write elements \
                                 {:?}..{:?} of a buffer; a distributed range kernel's chunks \
                                 must write disjoint regions",
                                b1.intersection(b2).lo,
                                b1.intersection(b2).hi
                            ));
                        }
                    }
                }
            }
        }
        let mut transfers = Vec::new();
        for (index, a) in accesses.iter().enumerate() {
            if !a.mode.reads() {
                continue;
            }
            let frags = self
                .buffers
                .entry(a.buffer)
                .or_insert_with(|| fresh(a.extent));
            for (to, boxes) in a.per_rank.iter().enumerate() {
                for b in boxes {
                    for f in frags.iter().filter(|f| f.area.intersects(b)) {
                        if let Some(from) = f.owner {
                            if !f.valid[to] {
                                let count = &mut self.sent[from * self.ranks + to];
                                transfers.push(Transfer {
                                    access: index,
                                    from,
                                    to,
                                    area: f.area.intersection(b),
                                    tag: 2 * *count,
                                });
                                *count += 1;
                            }
                        }
                    }
                    update(frags, b, |f| {
                        if f.owner.is_some() {
                            f.valid[to] = true;
                        }
                    });
                }
            }
        }
        let ranks = self.ranks;
        for a in accesses.iter().filter(|a| a.mode.writes()) {
            let frags = self
                .buffers
                .entry(a.buffer)
                .or_insert_with(|| fresh(a.extent));
            for (rank, boxes) in a.per_rank.iter().enumerate() {
                for b in boxes {
                    update(frags, b, |f| {
                        f.owner = Some(rank);
                        f.valid = vec![false; ranks];
                        f.valid[rank] = true;
                    });
                }
            }
            coalesce(frags);
        }
        Ok(transfers)
    }

    /// How many boxes the map holds (for tests of its growth).
    #[cfg(all(test, not(loom)))]
    fn fragments(&self) -> usize {
        self.buffers.values().map(Vec::len).sum()
    }
}

fn fresh(extent: [usize; 3]) -> Vec<Frag> {
    vec![Frag {
        area: Box3::from_extent(extent),
        owner: None,
        valid: Vec::new(),
    }]
}

/// Splits the fragments that `b` cuts and applies `f` to the parts inside `b`.
fn update(frags: &mut Vec<Frag>, b: &Box3, mut f: impl FnMut(&mut Frag)) {
    let mut out = Vec::with_capacity(frags.len() + 4);
    for frag in frags.drain(..) {
        if !frag.area.intersects(b) {
            out.push(frag);
            continue;
        }
        for piece in frag.area.subtract(b) {
            out.push(Frag {
                area: piece,
                ..frag.clone()
            });
        }
        let mut inside = Frag {
            area: frag.area.intersection(b),
            ..frag
        };
        f(&mut inside);
        out.push(inside);
    }
    *frags = out;
}

/// Merges neighbouring fragments with the same state whose union is a box, so that the map
/// of a buffer rewritten by the same parts every step stays the size of one step's parts.
fn coalesce(frags: &mut Vec<Frag>) {
    let mut merged = true;
    while merged {
        merged = false;
        'outer: for i in 0..frags.len() {
            for j in i + 1..frags.len() {
                let (a, b) = (&frags[i], &frags[j]);
                if a.owner != b.owner || a.valid != b.valid {
                    continue;
                }
                if let Some(u) = box_union(&a.area, &b.area) {
                    frags[i].area = u;
                    frags.swap_remove(j);
                    merged = true;
                    break 'outer;
                }
            }
        }
    }
}

/// The union of two disjoint boxes if it is a box: equal in all dimensions but one, where
/// they touch.
fn box_union(a: &Box3, b: &Box3) -> Option<Box3> {
    let differ: Vec<usize> = (0..3)
        .filter(|&d| a.lo[d] != b.lo[d] || a.hi[d] != b.hi[d])
        .collect();
    match differ[..] {
        [d] if a.hi[d] == b.lo[d] || b.hi[d] == a.lo[d] => {
            let mut u = *a;
            u.lo[d] = a.lo[d].min(b.lo[d]);
            u.hi[d] = a.hi[d].max(b.hi[d]);
            Some(u)
        }
        _ => None,
    }
}

/// Rank `rank`'s part of `range`: its first dimension cut into `ranks` parts as even as can
/// be; empty for ranks past the end of a short range.
pub(crate) fn rank_part(range: &Box3, ranks: usize, rank: usize) -> Box3 {
    let n = range.hi[0].saturating_sub(range.lo[0]);
    let mut b = *range;
    b.lo[0] = range.lo[0] + n * rank / ranks;
    b.hi[0] = range.lo[0] + n * (rank + 1) / ranks;
    b
}

/// Whether every box of `inner` lies in the union of `outer`.
pub(crate) fn covered(inner: &[Box3], outer: &[Box3]) -> bool {
    inner.iter().all(|b| {
        let mut rest = vec![*b];
        for o in outer {
            rest = rest.into_iter().flat_map(|r| r.subtract(o)).collect();
        }
        rest.iter().all(Box3::is_empty)
    })
}

/// The per-rank regions of the group's accessors, for the plan and the hash.
pub(crate) fn rank_accesses(
    typed: &[Typed],
    range: &Box3,
    dims: usize,
    ranks: usize,
) -> Result<Vec<RankAccess>, FlowError> {
    let parts: Vec<Box3> = (0..ranks).map(|r| rank_part(range, ranks, r)).collect();
    let mut out: Vec<RankAccess> = typed
        .iter()
        .map(|t| RankAccess {
            buffer: t.buffer.index,
            extent: t.buffer.extent,
            mode: t.mode,
            per_rank: Vec::with_capacity(ranks),
        })
        .collect();
    for part in &parts {
        let regions = if part.is_empty() {
            vec![Vec::new(); typed.len()]
        } else {
            super::lower::chunk_regions(typed, part, dims)?
        };
        for (a, boxes) in out.iter_mut().zip(regions) {
            a.per_rank.push(boxes);
        }
    }
    Ok(out)
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    fn b1(lo: usize, hi: usize) -> Box3 {
        Box3 {
            lo: [lo, 0, 0],
            hi: [hi, 1, 1],
        }
    }

    /// The access patterns of the exhaustive test: what a part `lo..hi` of a range over a
    /// buffer of `n` touches.
    #[derive(Clone, Copy, Debug)]
    enum Pattern {
        OneToOne,
        Halo,
        All,
        Reversed,
    }

    fn pattern(p: Pattern, part: &Box3, n: usize) -> Vec<Box3> {
        if part.is_empty() {
            return Vec::new();
        }
        let (lo, hi) = (part.lo[0], part.hi[0]);
        let b = match p {
            Pattern::OneToOne => b1(lo, hi),
            Pattern::Halo => b1(lo.saturating_sub(1), (hi + 1).min(n)),
            Pattern::All => b1(0, n),
            Pattern::Reversed => b1(n - hi, n - lo),
        };
        vec![b]
    }

    /// One group: reads `read` of buffer `src` and writes one-to-one (or by `write`) buffer
    /// `dst`.
    type Group = (Option<(u32, Pattern)>, (u32, Pattern));

    /// Runs `groups` on `ranks` simulated ranks over buffers of `n` elements. Every rank
    /// plans with its own map; every element carries the number of the group that wrote it
    /// last. Checks that every receive a rank plans is a send its sender plans (same
    /// box, same tag), that every element a rank reads is current when its part runs, that
    /// nothing moves that the reader had current or does not read, and that tags never repeat
    /// on a pair.
    fn simulate(ranks: usize, n: usize, groups: &[Group]) {
        let mut maps: Vec<Ownership> = (0..ranks).map(|_| Ownership::new(ranks)).collect();
        // copies[rank][buffer][i] = the version that rank holds; truth[buffer][i].
        let mut copies = vec![vec![vec![0u64; n]; 2]; ranks];
        let mut truth = vec![vec![0u64; n]; 2];
        let mut seen_tags = std::collections::HashSet::new();
        for (g, (read, (dst, wpat))) in groups.iter().enumerate() {
            let version = g as u64 + 1;
            let range = b1(0, n);
            let parts: Vec<Box3> = (0..ranks).map(|r| rank_part(&range, ranks, r)).collect();
            let mut accesses = Vec::new();
            if let Some((src, rpat)) = read {
                accesses.push(RankAccess {
                    buffer: *src,
                    extent: [n, 1, 1],
                    mode: Mode::Read,
                    per_rank: parts.iter().map(|p| pattern(*rpat, p, n)).collect(),
                });
            }
            accesses.push(RankAccess {
                buffer: *dst,
                extent: [n, 1, 1],
                mode: Mode::Write,
                per_rank: parts.iter().map(|p| pattern(*wpat, p, n)).collect(),
            });
            let plans: Vec<Result<Vec<Transfer>, String>> =
                maps.iter_mut().map(|m| m.plan(&accesses)).collect();
            // Every rank decides alike.
            let ok = plans[0].is_ok();
            assert!(plans.iter().all(|p| p.is_ok() == ok));
            let Ok(plan0) = &plans[0] else {
                // Refused: parts that write the same elements. Check that they do.
                let w = &accesses.last().unwrap().per_rank;
                assert!((0..ranks).any(|a| (a + 1..ranks)
                    .any(|b| w[a].iter().any(|x| w[b].iter().any(|y| x.intersects(y))))));
                continue;
            };
            for (me, plan) in plans.iter().enumerate() {
                let plan = plan.as_ref().unwrap();
                let sends: Vec<&Transfer> = plan.iter().filter(|t| t.from == me).collect();
                let receives: Vec<&Transfer> = plan.iter().filter(|t| t.to == me).collect();
                // Each receive is among its sender's own sends.
                for r in &receives {
                    let theirs = plans[r.from].as_ref().unwrap();
                    assert!(theirs.iter().any(|s| s == *r), "unmatched receive {r:?}");
                }
                for s in &sends {
                    let theirs = plans[s.to].as_ref().unwrap();
                    assert!(theirs.iter().any(|r| r == *s), "unmatched send {s:?}");
                    assert!(seen_tags.insert((s.from, s.to, s.tag)), "tag reused");
                    assert_eq!(s.tag % 2, 0);
                }
            }
            // Deliver: the sender's copy must be current.
            let mut moved = vec![vec![vec![false; n]; 2]; ranks];
            for t in plan0 {
                let buf = accesses[t.access].buffer as usize;
                for i in t.area.lo[0]..t.area.hi[0] {
                    assert_eq!(copies[t.from][buf][i], truth[buf][i], "stale send");
                    assert_ne!(copies[t.to][buf][i], truth[buf][i], "needless message");
                    assert!(!moved[t.to][buf][i], "sent twice");
                    moved[t.to][buf][i] = true;
                    copies[t.to][buf][i] = copies[t.from][buf][i];
                }
            }
            // Every element a part reads is now current, and only those moved.
            if let Some(a) = accesses.iter().find(|a| a.mode == Mode::Read) {
                let buf = a.buffer as usize;
                for (rank, boxes) in a.per_rank.iter().enumerate() {
                    let mut read = vec![false; n];
                    for b in boxes {
                        for i in b.lo[0]..b.hi[0] {
                            read[i] = true;
                            assert_eq!(copies[rank][buf][i], truth[buf][i], "stale read");
                        }
                    }
                    for i in 0..n {
                        assert!(read[i] || !moved[rank][buf][i], "moved but not read");
                    }
                }
            }
            let w = accesses.last().unwrap();
            for (rank, boxes) in w.per_rank.iter().enumerate() {
                for b in boxes {
                    for i in b.lo[0]..b.hi[0] {
                        copies[rank][w.buffer as usize][i] = version;
                        truth[w.buffer as usize][i] = version;
                    }
                }
            }
        }
    }

    /// Every sequence of three groups over two buffers, with every read and write pattern,
    /// on 1 to 4 ranks and ranges of 0 to 5 elements (so uneven parts and ranks without one).
    #[test]
    fn sends_and_receives_match_in_every_small_case() {
        let reads = [
            None,
            Some((0, Pattern::OneToOne)),
            Some((0, Pattern::Halo)),
            Some((0, Pattern::All)),
            Some((0, Pattern::Reversed)),
            Some((1, Pattern::Halo)),
        ];
        let writes = [
            (1, Pattern::OneToOne),
            (0, Pattern::Reversed),
            (1, Pattern::All),
        ];
        let mut one: Vec<Group> = Vec::new();
        for r in reads {
            for w in writes {
                // One accessor per buffer: a group does not read and write one buffer.
                if r.is_none_or(|(b, _)| b != w.0) {
                    one.push((r, w));
                }
            }
        }
        let mut cases = 0;
        for ranks in 1..=4 {
            for n in 0..=5 {
                for a in &one {
                    for b in &one {
                        for c in &one {
                            simulate(ranks, n, &[*a, *b, *c]);
                            cases += 1;
                        }
                    }
                }
            }
        }
        assert_eq!(cases, 4 * 6 * one.len().pow(3));
    }

    #[test]
    fn the_map_of_a_stencil_stays_small() {
        // A halo exchange, step after step: the map keeps one box per part and halo.
        let (ranks, n) = (4, 64);
        let mut map = Ownership::new(ranks);
        let range = b1(0, n);
        let parts: Vec<Box3> = (0..ranks).map(|r| rank_part(&range, ranks, r)).collect();
        let mut most = 0;
        for step in 0..100u32 {
            let (src, dst) = (step % 2, 1 - step % 2);
            let accesses = [
                RankAccess {
                    buffer: src,
                    extent: [n, 1, 1],
                    mode: Mode::Read,
                    per_rank: parts.iter().map(|p| pattern(Pattern::Halo, p, n)).collect(),
                },
                RankAccess {
                    buffer: dst,
                    extent: [n, 1, 1],
                    mode: Mode::Write,
                    per_rank: parts
                        .iter()
                        .map(|p| pattern(Pattern::OneToOne, p, n))
                        .collect(),
                },
            ];
            let plan = map.plan(&accesses).unwrap();
            if step >= 2 {
                assert_eq!(plan.len(), 2 * (ranks - 1), "one message per halo");
            }
            most = most.max(map.fragments());
        }
        assert!(most <= 4 * ranks, "{most} fragments");
    }

    #[test]
    fn rank_parts_cover_the_range_once() {
        for n in 0..10 {
            for ranks in 1..6 {
                let parts: Vec<Box3> = (0..ranks).map(|r| rank_part(&b1(0, n), ranks, r)).collect();
                let total: usize = parts.iter().map(Box3::volume).sum();
                assert_eq!(total, n);
                let sizes: Vec<usize> = parts.iter().map(Box3::volume).collect();
                assert!(sizes.iter().max().unwrap() - sizes.iter().min().unwrap() <= 1);
            }
        }
    }
}
