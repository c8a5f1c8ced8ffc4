//! IOR and mdtest audited on one node with the eBPF source (they are not Debian packages, so
//! the audits were captured: the command's output and what the kernel showed, in
//! tests/data/{ior,mdtest}/audit-*). The output is parsed again and reconciled with the saved
//! phases and calls, as `candor audit` does.

use candor_audit::checks;
use candor_audit::claims;
use candor_audit::phase::{CallTick, Observed, Phase};
use candor_audit::reconcile::{reconcile, Row};
use serde::Deserialize;

#[derive(Deserialize)]
struct Saved {
    command: Vec<String>,
    cwd: String,
    source: String,
    phases: Vec<Phase>,
    #[serde(default)]
    calls: Vec<CallTick>,
}

fn data(name: &str) -> String {
    let p = format!("{}/tests/data/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{p}: {e}"))
}

/// The saved audit reconciled again: (claims, rows).
fn audit_again(base: &str) -> (Vec<claims::Claim>, Vec<Row>, Saved) {
    let saved: Saved =
        serde_json::from_str(&data(&format!("{base}.json"))).expect("the saved audit");
    let stdout = data(&format!("{base}.stdout.txt"));
    let parsed = claims::read(&saved.command, &stdout, "");
    assert!(parsed.unread.is_empty(), "{:?}", parsed.unread);
    let observed = Observed {
        source: saved.source.clone(),
        phases: saved.phases.clone(),
        calls: saved.calls.clone(),
        ..Default::default()
    };
    let no_device = |_: u64, _: f64, _: f64| None;
    let mut rows = reconcile(&parsed.claims, &observed.phases, &saved.cwd, &no_device);
    checks::apply(&parsed.claims, &mut rows, &observed);
    (parsed.claims, rows, saved)
}

#[test]
fn ior_without_reorder_on_one_node_reads_back_from_the_page_cache() {
    let (claims, rows, saved) = audit_again("ior/audit-4.1.0dev-np2-F-noC");
    assert_eq!(saved.source, "bpf");
    assert_eq!(claims.len(), 2);
    let (w, r) = (&rows[0], &rows[1]);
    assert_eq!((w.test.as_str(), r.test.as_str()), ("write", "read"));
    // One phase per task on its own file, each 256 MiB, for each access.
    assert_eq!(w.phases.len(), 2, "{w:#?}");
    assert_eq!(r.phases.len(), 2, "{r:#?}");
    assert_eq!(w.observed_bytes, Some(512 << 20));
    assert_eq!(r.observed_bytes, Some(512 << 20));
    // Each task read its own file, just written: from memory.
    for &i in &r.phases {
        let p = &saved.phases[i];
        let wrote = w.phases.iter().map(|&j| &saved.phases[j]);
        assert!(
            wrote
                .into_iter()
                .any(|q| q.pid == p.pid && q.path == p.path),
            "task {} read a file it did not write",
            p.pid
        );
    }
    let cache = r.cache_share.expect("the storage bytes of the reads");
    assert!(cache > 0.95, "{r:#?}");
    assert!(
        r.explanation.contains(
            "page-cache read-back: without -C each task read back the file it had itself just written"
        ),
        "{}",
        r.explanation
    );
    assert!(
        r.explanation
            .contains("came from this node's page cache, not from storage"),
        "{}",
        r.explanation
    );
    assert_ne!(r.verdict, "unverified");
}

#[test]
fn ior_with_reorder_on_one_node_still_reads_back_its_own_file() {
    // IOR's -C shifts the tasks by taskPerNodeOffset x tasks per node: with both tasks on
    // one node, each reads back its own file, and the audit says so from the phases.
    let (claims, rows, saved) = audit_again("ior/audit-4.1.0dev-np2-F-C");
    assert!(claims
        .iter()
        .all(|c| c.flags.iter().any(|f| f == "reorder")));
    let (w, r) = (&rows[0], &rows[1]);
    assert_eq!(r.phases.len(), 2, "{r:#?}");
    for &i in &r.phases {
        let p = &saved.phases[i];
        let own = w
            .phases
            .iter()
            .map(|&j| &saved.phases[j])
            .find(|q| q.pid == p.pid)
            .expect("the task wrote a file");
        assert_eq!(own.path, p.path, "on one node -C reads the task's own file");
    }
    assert!(r.cache_share.is_some_and(|c| c > 0.95), "{r:#?}");
    assert!(
        r.explanation
            .contains("with -C each task still read back the file it had itself written"),
        "{}",
        r.explanation
    );
}

#[test]
fn mdtest_file_creates_against_the_kernels_count() {
    let (claims, rows, saved) = audit_again("mdtest/audit-4.1.0dev-np2-F");
    assert_eq!(saved.source, "bpf");
    assert!(!saved.calls.is_empty());
    let i = claims
        .iter()
        .position(|c| c.test == "file creation")
        .expect("a file creation figure");
    let r = &rows[i];
    assert_eq!(r.operation.as_deref(), Some("create"));
    assert_eq!(r.claimed_ops, Some(4000));
    let seen = r.observed_calls.expect("creates counted");
    // 2 tasks x 2000 files; Open MPI's own files in /dev/shm are creates too.
    assert!((4000..4100).contains(&seen), "{r:#?}");
    assert!(
        r.explanation.contains("4000 create operations claimed"),
        "{}",
        r.explanation
    );
    let j = claims
        .iter()
        .position(|c| c.test == "file removal")
        .expect("a removal figure");
    let rm = &rows[j];
    assert!(
        rm.observed_calls.is_some_and(|n| (4000..4100).contains(&n)),
        "{rm:#?}"
    );
    // Stats serve several phases: counted, their rate not told apart.
    let k = claims
        .iter()
        .position(|c| c.test == "file stat")
        .expect("stat");
    assert_eq!(rows[k].verdict, "unverified");
    assert!(
        rows[k].explanation.contains("cannot be told apart"),
        "{}",
        rows[k].explanation
    );
    // The creates fell between two readings of the tracer (114 ms apart on a busy machine):
    // counted, and the rate only bounded below, under the claim.
    assert!(
        r.explanation.contains("at least 27107/s"),
        "{}",
        r.explanation
    );
    assert_eq!(r.verdict, "unverified", "{}", r.explanation);
    assert!(rows.iter().all(|r| !r.verdict.is_empty()));
}
