//! `scripts/test`'s totals, from made-up logs in libtest's own format: one line per test,
//! a skip counted once as skipped (not passed), #[ignore]d tests listed with their reason,
//! the MPI tests counted once though they run twice, a binary that stops before its
//! summary and a "skipped:" line that names no test reported as failures of the suite.

use std::io::Write;
use std::path::Path;
use std::process::Command;

const TALLY: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../scripts/test-tally.awk");

/// Runs the tally over `names` (binary, source) and the two logs; its lines, sorted.
fn tally(names: &[(&str, &str)], main: &str, mpi: &str, mpi_ran: bool) -> Vec<String> {
    let dir = tempfile::tempdir().unwrap();
    let write = |name: &str, text: &str| {
        let p = dir.path().join(name);
        std::fs::File::create(&p)
            .unwrap()
            .write_all(text.as_bytes())
            .unwrap();
        p
    };
    let tsv: String = names
        .iter()
        .map(|(exe, src)| format!("{exe}\t{src}\n"))
        .collect();
    let tsv = write("names.tsv", &tsv);
    let main = write("main.log", main);
    let mpi = write("mpi.log", mpi);
    let out = Command::new("awk")
        .arg("-v")
        .arg(format!("mpi_ran={}", u8::from(mpi_ran)))
        .arg("-v")
        .arg(format!("mainlog={}", main.display()))
        .arg("-f")
        .arg(Path::new(TALLY))
        .args([&tsv, &main, &mpi])
        .output()
        .expect("awk runs");
    assert!(out.status.success(), "{out:?}");
    let mut lines: Vec<String> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect();
    lines.sort();
    lines
}

const NAMES: &[(&str, &str)] = &[
    ("/t/debug/deps/lib-1", "crates/x/src/lib.rs"),
    ("/t/debug/deps/mpi-2", "crates/candor/tests/mpi.rs"),
    ("/t/debug/deps/gone-3", "crates/x/tests/gone.rs"),
];

/// The first pass: a library whose tests pass, skip, are ignored and fail (with a stray
/// "skipped:" line printed without candor-testkit), the MPI tests ignored for want of the
/// feature, and a binary that died mid-way.
const MAIN: &str = "
     Running unittests src/lib.rs (/t/debug/deps/lib-1)

running 5 tests
test ran ... ok
test skips ... ok
test waits ... ignored, needs a second machine
test breaks ... FAILED
test panics_as_it_should - should panic ... ok

successes:

---- skips stdout ----
skipped: skips: needs root for loop devices
skipped (tmpfs case): no /dev/shm

test result: FAILED. 3 passed; 1 failed; 1 ignored; 0 measured; 0 filtered out; finished in 0.01s

     Running tests/mpi.rs (/t/debug/deps/mpi-2)

running 2 tests
test four_ranks ... ignored, needs the mpi feature (scripts/test runs this file again with it)
test outside_a_launcher ... ok

test result: ok. 1 passed; 0 failed; 1 ignored; 0 measured; 0 filtered out; finished in 0.01s

     Running tests/gone.rs (/t/debug/deps/gone-3)

running 1 test
test first ... ok
";

/// The second pass: the MPI file again, with the feature.
const MPI: &str = "
     Running tests/mpi.rs (/t/debug/deps/mpi-2)

running 2 tests
test four_ranks ... ok
test outside_a_launcher ... ok

test result: ok. 2 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out; finished in 3.01s
";

#[test]
fn every_test_counts_once_with_its_outcome() {
    let got = tally(NAMES, MAIN, MPI, true);
    let want = [
        "crates/candor/tests/mpi.rs\tfour_ranks\tpassed\t",
        "crates/candor/tests/mpi.rs\toutside_a_launcher\tpassed\t",
        "crates/x/src/lib.rs\t-\tstray\tskipped (tmpfs case): no /dev/shm",
        "crates/x/src/lib.rs\tbreaks\tfailed\t",
        "crates/x/src/lib.rs\tpanics_as_it_should\tpassed\t",
        "crates/x/src/lib.rs\tran\tpassed\t",
        "crates/x/src/lib.rs\tskips\tskipped\tneeds root for loop devices",
        "crates/x/src/lib.rs\twaits\tignored\tneeds a second machine",
        "crates/x/tests/gone.rs\t-\tcrashed\tthe binary stopped before its summary",
        "crates/x/tests/gone.rs\tfirst\tpassed\t",
    ];
    assert_eq!(got, want);
}

/// The tally of one library's test binary whose log, after its `Running` line, is `body`
/// (no MPI run).
fn tally_lib(body: &str) -> Vec<String> {
    let log = format!("\n     Running unittests src/lib.rs (/t/debug/deps/lib-1)\n\n{body}");
    tally(NAMES, &log, "", true)
}

#[test]
fn mpi_tests_without_their_second_run_are_skipped_not_passed() {
    let got = tally(NAMES, MAIN, "", false);
    let mpi: Vec<&String> = got.iter().filter(|l| l.contains("mpi.rs")).collect();
    assert_eq!(
        mpi,
        [
            "crates/candor/tests/mpi.rs\tfour_ranks\tskipped\tneeds mpicc and mpirun (libopenmpi-dev, openmpi-bin)",
            "crates/candor/tests/mpi.rs\toutside_a_launcher\tpassed\t",
        ]
    );
}

#[test]
fn a_second_skip_in_one_test_is_reported() {
    let log = "running 1 test
test twice ... ok
skipped: twice: no root
skipped: twice: no mkfs

test result: ok. 1 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.01s
";
    let got = tally_lib(log);
    assert_eq!(
        got,
        [
            "crates/x/src/lib.rs\t-\tstray\ttwice: no mkfs (a second skip in one test)",
            "crates/x/src/lib.rs\ttwice\tskipped\tno root",
        ]
    );
}

/// `cargo test -- --quiet` prints dots, not per-test lines: libtest's summary says 2 passed
/// and the tally, which counted none, says they disagree instead of counting 0 tests.
#[test]
fn a_log_without_per_test_lines_disagrees_with_its_summary() {
    let log = "running 2 tests
..
test result: ok. 2 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.01s
";
    let got = tally_lib(log);
    assert_eq!(
        got,
        ["crates/x/src/lib.rs\t-\tmismatch\tlibtest's summary says 2 passed, 0 failed, 0 ignored, 0 measured; its per-test lines say 0, 0, 0, 0"]
    );
}

/// A test line lost from the log (or one too many) is a mismatch as well, per binary.
#[test]
fn every_count_of_the_summary_is_compared() {
    let log = "running 3 tests
test a ... ok
test b ... FAILED
test c ... ignored

test result: FAILED. 1 passed; 2 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.01s
";
    let got = tally_lib(log);
    assert!(
        got.contains(&"crates/x/src/lib.rs\t-\tmismatch\tlibtest's summary says 1 passed, 2 failed, 0 ignored, 0 measured; its per-test lines say 1, 1, 1, 0".to_string()),
        "{got:?}"
    );
}

/// A filter leaves tests out: libtest's "filtered out" count is reported per binary.
#[test]
fn filtered_out_tests_are_counted() {
    let log = "running 1 test
test a ... ok

test result: ok. 1 passed; 0 failed; 0 ignored; 0 measured; 41 filtered out; finished in 0.01s
";
    let got = tally_lib(log);
    assert_eq!(
        got,
        [
            "crates/x/src/lib.rs\t-\tfiltered\t41",
            "crates/x/src/lib.rs\ta\tpassed\t",
        ]
    );
}
