//! A panic in a closure run through the adapters that complete rayon's surface (and through
//! `flat_map`'s nested pipelines) is re-raised to the caller, the pool survives, and every
//! item is dropped exactly once: on owned [`Tracked`] items, under every wake policy with 2
//! and 7 workers (see `common/tracked.rs`).

use std::sync::Arc;

use ember::prelude::*;

mod common;
use common::tracked::{check, panics_cleanly, Tracked};

/// The item itself, after [`check`].
fn checked(t: Tracked) -> Tracked {
    check(t.value);
    t
}

/// Splits the items in two owned halves.
fn halves(mut items: Vec<Tracked>) -> (Vec<Tracked>, Vec<Tracked>) {
    let right = items.split_off(items.len() / 2);
    (items, right)
}

#[test]
fn runs() {
    panics_cleanly("chunks", |items| {
        items
            .into_par_iter()
            .chunks(7)
            .map(|c| c.into_iter().map(checked).count())
            .sum::<usize>()
    });
    panics_cleanly("fold_chunks", |items| {
        items
            .into_par_iter()
            .fold_chunks(7, Vec::new, |mut acc, t| {
                acc.push(checked(t));
                acc
            })
            .count()
    });
    panics_cleanly("fold_chunks_with", |items| {
        items
            .into_par_iter()
            .fold_chunks_with(7, 0u64, |n, t| n + checked(t).value)
            .sum::<u64>()
    });
}

#[test]
fn pairs() {
    panics_cleanly("interleave", |items| {
        let (a, b) = halves(items);
        a.into_par_iter()
            .interleave(b)
            .map(checked)
            .collect::<Vec<_>>()
    });
    panics_cleanly("interleave_shortest", |items| {
        let (a, b) = halves(items);
        a.into_par_iter()
            .interleave_shortest(b)
            .map(checked)
            .count()
    });
    panics_cleanly("zip_eq", |items| {
        let (mut a, b) = halves(items);
        a.truncate(b.len());
        a.into_par_iter()
            .zip_eq(b)
            .map(|(x, y)| (checked(x), y))
            .collect::<Vec<_>>()
    });
    panics_cleanly("multizip", |items| {
        let (mut a, b) = halves(items);
        a.truncate(b.len());
        (a, b)
            .into_par_iter()
            .map(|(x, y)| (checked(x), y))
            .collect::<Vec<_>>()
    });
    panics_cleanly("intersperse", |items| {
        let separator = Arc::new(Tracked::new(u64::MAX, &items[0].live));
        items
            .into_par_iter()
            .map(|t| Arc::new(checked(t)))
            .intersperse(separator)
            .collect::<Vec<_>>()
    });
    panics_cleanly("positions", |items| {
        items
            .into_par_iter()
            .positions(|t| checked(t).value % 3 == 0)
            .collect::<Vec<_>>()
    });
}

#[test]
fn any_order_limits() {
    panics_cleanly("take_any", |items| {
        items.into_par_iter().take_any(15_000).map(checked).count()
    });
    panics_cleanly("skip_any", |items| {
        items.into_par_iter().skip_any(10).map(checked).count()
    });
    panics_cleanly("take_any_while", |items| {
        items
            .into_par_iter()
            .take_any_while(|t| {
                check(t.value);
                true
            })
            .count()
    });
    panics_cleanly("skip_any_while", |items| {
        items
            .into_par_iter()
            .skip_any_while(|t| {
                check(t.value);
                true
            })
            .collect::<Vec<_>>()
    });
    panics_cleanly("while_some", |items| {
        items
            .into_par_iter()
            .map(|t| Some(checked(t)))
            .while_some()
            .collect::<Vec<_>>()
    });
}

#[test]
fn blocks_and_nesting() {
    panics_cleanly("by_uniform_blocks", |items| {
        items
            .into_par_iter()
            .by_uniform_blocks(1_000)
            .map(checked)
            .collect::<Vec<_>>()
    });
    panics_cleanly("by_exponential_blocks", |items| {
        items
            .into_par_iter()
            .by_exponential_blocks()
            .map(checked)
            .count()
    });
    panics_cleanly("flat_map", |items| {
        let chunks: Vec<Vec<Tracked>> = {
            let mut items = items;
            let mut chunks = Vec::new();
            while !items.is_empty() {
                let rest = items.split_off(items.len().min(97));
                chunks.push(items);
                items = rest;
            }
            chunks
        };
        chunks
            .into_par_iter()
            .flat_map(|c| c.into_par_iter().map(checked))
            .collect::<Vec<_>>()
    });
    panics_cleanly("flatten find_last", |items| {
        let (a, b) = halves(items);
        vec![a, b].into_par_iter().flatten().find_last(|t| {
            check(t.value);
            false
        })
    });
}
