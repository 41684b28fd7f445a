//! A process forked while its pools share the awake-core budget (`wake/README.md`, "Budget"):
//! the child's pools share a budget of the child's own. Alone in its binary, since it forks:
//! no other test's threads may hold anything at the fork.
#![cfg(target_os = "linux")]

mod budget_fork;

use budget_fork::{bound_child, child, exit_code, reap, SpentParent, CHILD_ALARM_S, HANG};

/// The parent's pools have every worker but one blocked in a job and the budget spent, and
/// its timer thread runs, when it forks. The child, with none of those threads, builds
/// budgeted pools that need their wake-ups ([`child`]): it must not count the parent's
/// workers, nor wait for a timer thread it does not have.
#[test]
fn a_forked_child_starts_with_a_budget_of_its_own() {
    let parent = SpentParent::new();
    // SAFETY: getpid(2) has no preconditions.
    let me = unsafe { libc::getpid() };
    // SAFETY: fork(2) in a test binary running this one test. The child runs only its own
    // code and ember's, then `_exit`s without running the parent's destructors or exit
    // handlers; the allocator it uses is fork-safe.
    let pid = unsafe { libc::fork() };
    assert!(pid >= 0, "fork: {}", std::io::Error::last_os_error());
    if pid == 0 {
        bound_child(Some(me), CHILD_ALARM_S);
        let code = std::panic::catch_unwind(child).unwrap_or(1);
        // SAFETY: ends the child at once, as a child of fork(2) must.
        unsafe { libc::_exit(code) };
    }
    let status = reap(pid, HANG);
    drop(parent);
    let status = status.expect("the child hung");
    assert_eq!(exit_code(status), 0, "the child failed: status {status:#x}");
}
