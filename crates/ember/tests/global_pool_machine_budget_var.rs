//! A bad `EMBER_MACHINE_BUDGET` does not stop the global pool, as a bad `EMBER_NUM_THREADS`
//! does not: alone in its binary, since the global pool is built once, at first use.

/// The global pool, built under a value the variable does not take, says so and runs.
#[test]
fn the_global_pool_runs_under_a_bad_machine_budget_variable() {
    // The only test of this binary: nothing else reads the environment meanwhile.
    std::env::set_var("EMBER_MACHINE_BUDGET", "true");
    assert!(
        ember::Pool::builder().threads(1).build().is_err(),
        "a pool of one's own refuses the value"
    );
    assert_eq!(ember::join(|| 1, || 2), (1, 2));
    // A pool left out of the budget does not read the variable at all.
    assert!(ember::Pool::builder()
        .threads(1)
        .tuning(ember::Tuning::new().awake_budget(false))
        .build()
        .is_ok());
}
