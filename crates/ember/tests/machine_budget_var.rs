//! `EMBER_MACHINE_BUDGET` (`Tuning::machine_budget`): alone in its binary, since it sets the
//! process's environment, which every pool built meanwhile would read.

use ember::{Pool, Tuning};

/// `EMBER_MACHINE_BUDGET` takes 1, 0 or nothing; anything else is refused at build.
#[test]
fn the_machine_budget_variable_is_checked_at_build() {
    // The variable is read at build; this test is the only one in this binary that sets it.
    std::env::set_var("EMBER_MACHINE_BUDGET", "yes");
    let err = Pool::builder().threads(1).build().unwrap_err();
    assert!(
        matches!(err, ember::BuildError::MachineBudgetVar { .. }),
        "{err}"
    );
    // A tuning that says what it wants does not read the variable.
    assert!(Pool::builder()
        .threads(1)
        .tuning(Tuning::new().machine_budget(false))
        .build()
        .is_ok());
    std::env::remove_var("EMBER_MACHINE_BUDGET");
    assert!(Pool::builder().threads(1).build().is_ok());
}

/// `Tuning::machine_budget(true)` is honoured where the segment exists and refused elsewhere.
#[test]
fn the_machine_budget_is_refused_off_linux() {
    let built = Pool::builder()
        .threads(1)
        .tuning(Tuning::new().machine_budget(true))
        .build();
    if cfg!(target_os = "linux") {
        assert_eq!(built.expect("pool").install(|| 2 + 2), 4);
    } else {
        assert!(matches!(
            built,
            Err(ember::BuildError::MachineBudgetUnsupported)
        ));
    }
}
