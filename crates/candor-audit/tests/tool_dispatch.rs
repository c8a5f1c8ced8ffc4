//! `claims::read` finds the parser of each tool by its name, or by its output when a launcher
//! (mpirun, a script) runs it: the same figures either way.

use candor_audit::claims;

fn data(name: &str) -> String {
    let p = format!("{}/tests/data/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{p}: {e}"))
}

fn argv(s: &str) -> Vec<String> {
    s.split_whitespace().map(str::to_string).collect()
}

#[test]
fn each_tool_by_name_and_by_its_output() {
    let cases: [(&str, &str, &str, usize); 6] = [
        (
            "ior/4.1.0dev-np2-F-noC.txt",
            "/opt/ior/bin/ior -w -r -F",
            "ior",
            4,
        ),
        (
            "mdtest/4.1.0dev-np2-n1000-i2.txt",
            "mdtest -n 1000",
            "mdtest",
            10,
        ),
        ("sysbench/rndrw.txt", "sysbench fileio run", "sysbench", 2),
        ("bonnie/s4G-n4-f.txt", "bonnie++ -d /x", "bonnie++", 4),
        (
            "unixbench/run-i1-c1-fs.stdout.txt",
            "./Run fstime",
            "unixbench",
            3,
        ),
        (
            "unixbench/fstime-c-b256-m500-t5.stdout",
            "fstime -c -b 256 -m 500",
            "fstime",
            3,
        ),
    ];
    for (file, cmd, program, n) in cases {
        let out = data(file);
        let err = if program == "fstime" {
            data(&file.replace(".stdout", ".stderr"))
        } else {
            String::new()
        };
        let by_name = claims::read(&argv(cmd), &out, &err);
        assert_eq!(by_name.claims.len(), n, "{file}");
        assert!(
            by_name.claims.iter().all(|c| c.program == program),
            "{file}"
        );
        // Behind a launcher whose name says nothing: recognised by the output.
        let launched = format!("mpirun -np 2 {cmd}");
        let mut a = argv(&launched);
        a[0] = "/usr/bin/mpirun".into();
        let by_output = claims::read(&a, &out, &err);
        assert_eq!(by_output.claims.len(), n, "{file} behind mpirun");
        assert_eq!(
            by_output
                .claims
                .iter()
                .map(|c| c.claimed_bps.to_bits() ^ c.iops.unwrap_or(0.0).to_bits())
                .collect::<Vec<_>>(),
            by_name
                .claims
                .iter()
                .map(|c| c.claimed_bps.to_bits() ^ c.iops.unwrap_or(0.0).to_bits())
                .collect::<Vec<_>>(),
            "{file}"
        );
    }
}

#[test]
fn other_programs_are_not_taken_for_these_tools() {
    // fio's and dd's outputs still go to their own parsers.
    let fio = data("fio/fio-buffered-write.txt");
    let c = claims::read(&argv("fio --name=bwrite"), &fio, "");
    assert!(
        c.claims.iter().all(|c| c.program == "fio"),
        "{:?}",
        c.claims
    );
    let dd = data("dd/dd-direct-1M.txt");
    let c = claims::read(&argv("dd if=/dev/zero of=/x bs=1M"), "", &dd);
    assert_eq!(c.claims.len(), 1);
    assert_eq!(c.claims[0].program, "dd");
    // A program none of the parsers knows: no figures, nothing unread.
    let c = claims::read(&argv("sh -c true"), "hello 123\n", "");
    assert!(c.claims.is_empty() && c.unread.is_empty());
}
