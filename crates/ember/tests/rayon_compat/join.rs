//! `join` (rayon-core `join/test.rs`, `tests/simple_panic.rs`, `tests/scope_join.rs`).

use std::panic::{self, AssertUnwindSafe};

use super::{pool, random_u32s};

fn quick_sort<T: PartialOrd + Send>(v: &mut [T], join: &(impl Fn(&mut [T], &mut [T]) + Sync)) {
    if v.len() <= 1 {
        return;
    }
    let mid = partition(v);
    let (lo, hi) = v.split_at_mut(mid);
    join(lo, hi);
}

/// Lomuto partition around the last element; returns the pivot's final place.
fn partition<T: PartialOrd>(v: &mut [T]) -> usize {
    let pivot = v.len() - 1;
    let mut store = 0;
    for i in 0..pivot {
        if v[i] <= v[pivot] {
            v.swap(store, i);
            store += 1;
        }
    }
    v.swap(store, pivot);
    store
}

/// Quicksort with `ember::join` on both halves.
fn join_sort(v: &mut [u32]) {
    quick_sort(v, &|lo, hi| {
        ember::join(|| join_sort(lo), || join_sort(hi));
    });
}

fn sorted(v: &[u32]) -> Vec<u32> {
    let mut v = v.to_vec();
    v.sort_unstable();
    v
}

#[test]
fn join_sorts_on_the_global_pool() {
    let mut data = random_u32s(6 * 1024, 1);
    let expected = sorted(&data);
    join_sort(&mut data);
    assert_eq!(data, expected);
}

#[test]
fn join_sorts_inside_install() {
    let mut data = random_u32s(12 * 1024, 2);
    let expected = sorted(&data);
    pool(2).install(|| join_sort(&mut data));
    assert_eq!(data, expected);
}

/// `scope` with one spawn and the body doing the other half behaves as `join`.
#[test]
fn scope_emulates_join() {
    fn scope_sort(v: &mut [u32]) {
        quick_sort(v, &|lo, hi| {
            ember::scope(|s| {
                s.spawn(|_| scope_sort(hi));
                scope_sort(lo);
            })
        });
    }
    let mut data: Vec<u32> = (0..256).rev().collect();
    scope_sort(&mut data);
    assert_eq!(data, (0..256).collect::<Vec<_>>());
}

#[test]
#[should_panic(expected = "Hello, world!")]
fn a_panic_of_the_first_closure_propagates() {
    ember::join(|| panic!("Hello, world!"), || ());
}

#[test]
#[should_panic(expected = "Hello, world!")]
fn a_panic_of_the_second_closure_propagates() {
    ember::join(|| (), || panic!("Hello, world!"));
}

/// Both panic: the first closure's panic is the one re-raised (the other is reported).
#[test]
#[should_panic(expected = "Hello, world!")]
fn when_both_panic_the_first_propagates() {
    ember::join(|| panic!("Hello, world!"), || panic!("Goodbye, world!"));
}

#[test]
fn the_second_closure_runs_even_if_the_first_panics() {
    let mut ran = false;
    let result = panic::catch_unwind(AssertUnwindSafe(|| {
        ember::join(|| panic!("Hello, world!"), || ran = true)
    }));
    assert!(result.is_err(), "the panic of the first closure propagates");
    assert!(ran, "the second closure still ran");
}

/// Many joins from outside the pool in a row (rayon once overflowed a counter here).
#[test]
fn many_joins_from_outside_the_pool() {
    const JOINS: u32 = 20_000;
    let pool = pool(2);
    let (mut i, mut j) = (0, 0);
    for _ in 0..JOINS {
        pool.join(|| i += 1, || j += 1);
    }
    assert_eq!((i, j), (JOINS, JOINS));
}
