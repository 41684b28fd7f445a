//! Bad input, as a new user would type it: one clear line on stderr and a non-zero exit,
//! never a panic or a stack trace.

use std::process::Command;

fn lab(args: &[&str]) -> (i32, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_ember-lab"))
        .args(args)
        .env("RUST_BACKTRACE", "1")
        .output()
        .expect("run ember-lab");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn assert_one_line_error(args: &[&str], mentions: &str) {
    let (code, err) = lab(args);
    assert_ne!(code, 0, "{args:?} succeeded");
    assert!(!err.contains("panicked"), "{args:?} panicked: {err}");
    assert_eq!(err.trim_end().lines().count(), 1, "{args:?}: {err}");
    assert!(err.contains(mentions), "{args:?}: {err}");
}

#[test]
fn bad_flags_and_files_are_one_line_errors() {
    let dir = std::env::temp_dir().join(format!("ember-lab-bad-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let junk = dir.join("junk.ply");
    std::fs::write(&junk, b"ply\nformat binary_little_endian 1.0\nelement vertex 3\nproperty float x\nend_header\n\x01\x02").unwrap();

    assert_one_line_error(
        &["containers", "--mesh", "/nonexistent/bunny.ply"],
        "--mesh",
    );
    assert_one_line_error(
        &["containers", "--mesh", junk.to_str().unwrap()],
        "malformed PLY",
    );
    assert_one_line_error(
        &["chained-decode", "--input", "/nonexistent/file"],
        "--input",
    );
    assert_one_line_error(&["chained-decode", "--cd-mib=-3"], "--cd-mib");
    assert_one_line_error(&["producer-consumer", "--threads", "two"], "two");
    assert_one_line_error(&["producer-consumer", "--threads", "0"], "--threads");
    assert_one_line_error(&["light-load", "--ll-seconds", "0"], "--ll-seconds");
    assert_one_line_error(&["no-such-experiment"], "unknown experiment");
    assert_one_line_error(&["--no-such-flag"], "--no-such-flag");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn help_and_list_succeed() {
    let (code, _) = lab(&["--help"]);
    assert_eq!(code, 0);
    let out = Command::new(env!("CARGO_BIN_EXE_ember-lab"))
        .arg("--list")
        .output()
        .unwrap();
    assert!(out.status.success());
    let names = String::from_utf8_lossy(&out.stdout);
    for e in [
        "producer-consumer",
        "light-load",
        "cycle",
        "containers",
        "flow",
        "chained-decode",
        "micro",
    ] {
        assert!(names.lines().any(|l| l == e), "{e} missing from --list");
    }
}
