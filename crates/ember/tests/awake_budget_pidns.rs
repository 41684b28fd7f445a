//! A descendant with the pid its ancestor's budget was made in (`wake/README.md`, "Budget"):
//! pid 1 of a new pid namespace, forked by pid 1 of another. It must get a budget of its
//! own, as any child of fork does, though its pid is the same. Alone in its binary, since
//! it forks: no other test's threads may hold anything at the fork.
//!
//! Needs a pid namespace: where `unshare(2)` refuses one (no user namespaces, no
//! privilege), the test says so and passes without running.
#![cfg(target_os = "linux")]

mod budget_fork;

use budget_fork::{bound_child, child, exit_code, reap, SpentParent, HANG};

/// [`HANG`] in seconds.
const HANG_S: u32 = 60;

/// The outer child's exit code where no pid namespace could be made.
const REFUSED: i32 = 77;
/// The exit code where the grandchild's pid was not its parent's.
const OTHER_PID: i32 = 78;

/// In a new pid namespace, as its pid 1: spends the budget as [`SpentParent`] does, then
/// forks pid 1 of a nested namespace, which runs [`child`]. Returns the exit code.
fn namespace_init() -> i32 {
    let parent = SpentParent::new();
    // SAFETY: getpid(2) has no preconditions.
    let me = unsafe { libc::getpid() };
    // SAFETY: unshare(2) with CLONE_NEWPID reads no memory of ours; it only puts the
    // children forked from now on in a new pid namespace.
    if unsafe { libc::unshare(libc::CLONE_NEWPID) } != 0 {
        return REFUSED;
    }
    // SAFETY: fork(2) of a process that runs only this test's code and ember's; the child
    // `_exit`s without running this process's destructors or exit handlers; the allocator
    // it uses is fork-safe.
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        return REFUSED;
    }
    if pid == 0 {
        bound_child(None, 0);
        // SAFETY: getpid(2) has no preconditions.
        let code = if unsafe { libc::getpid() } == me {
            std::panic::catch_unwind(child).unwrap_or(1)
        } else {
            OTHER_PID
        };
        // SAFETY: ends the child at once, as a child of fork(2) must.
        unsafe { libc::_exit(code) };
    }
    let code = reap(pid, HANG).map_or(124, exit_code);
    drop(parent);
    code
}

#[test]
fn a_descendant_with_its_ancestors_pid_starts_with_a_budget_of_its_own() {
    // SAFETY: getpid(2) has no preconditions.
    let me = unsafe { libc::getpid() };
    // SAFETY: fork(2) in a test binary running this one test; the child runs only the
    // code below, then `_exit`s without running this process's destructors or exit
    // handlers.
    let outer = unsafe { libc::fork() };
    assert!(outer >= 0, "fork: {}", std::io::Error::last_os_error());
    if outer == 0 {
        // Past its own reap of the namespace's first process, which ends in 4 × HANG.
        bound_child(Some(me), 5 * HANG_S);
        // SAFETY: unshare(2) reads no memory of ours. A user namespace first, where one
        // may be made without privilege (this process has one thread, as it requires);
        // a pid namespace alone where that is refused.
        let unshared = unsafe {
            libc::unshare(libc::CLONE_NEWUSER | libc::CLONE_NEWPID) == 0
                || libc::unshare(libc::CLONE_NEWPID) == 0
        };
        let code = if unshared {
            // SAFETY: fork(2) of a process with one thread; the child runs only this
            // test's code and ember's, then `_exit`s.
            let init = unsafe { libc::fork() };
            if init == 0 {
                bound_child(None, 0);
                let code = std::panic::catch_unwind(namespace_init).unwrap_or(1);
                // SAFETY: ends the child at once, as a child of fork(2) must.
                unsafe { libc::_exit(code) };
            }
            if init < 0 {
                REFUSED
            } else {
                reap(init, 4 * HANG).map_or(124, exit_code)
            }
        } else {
            REFUSED
        };
        // SAFETY: ends the child at once, as a child of fork(2) must.
        unsafe { libc::_exit(code) };
    }
    let code = reap(outer, 6 * HANG).map_or(124, exit_code);
    if code == REFUSED {
        eprintln!("skipped: no pid namespace could be made here (unshare(2) refused)");
        return;
    }
    assert_ne!(code, OTHER_PID, "the grandchild's pid was not its parent's");
    assert_eq!(
        code, 0,
        "the descendant failed: exit code {code} (124: it hung and was killed)"
    );
}
